/*
 * device/engine/path.h - path resolution inside the device, for requests that
 * name files by path (CISC OPEN/UNLINK steps, path-based RISC ops) rather
 * than by inode as the FUSE door does.
 *
 * Paths are interpreted from the device's root directory: "/a/b" and
 * "a/b" name the same file. Empty components and "." are skipped; ".."
 * goes to the parent (the root's parent is the root). Symbolic links in
 * intermediate components are followed (relative targets from the link's
 * directory, absolute ones from the root); the last component is
 * followed only when asked. The walk checks search (X_OK) permission on
 * every directory it passes through with the caller's credentials, as the
 * kernel does before a request reaches FUSE.
 *
 * Invariants:
 *   1. The walk only reads the file system.
 *   2. At most PATH_MAX_LINKS symbolic links are followed (-ELOOP).
 *   3. Results describe the moment of the walk; callers that act later
 *      re-check what they depend on (the name may change meanwhile).
 */
#ifndef CISC_DEVICE_PATH_H
#define CISC_DEVICE_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "device/engine/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PATH_MAX_LINKS 40

struct path_res {
    uint64_t parent;            /* directory holding the last component */
    char name[SFS_NAME_MAX + 1];/* last component ("" for the root itself) */
    bool exists;                /* the last component exists: attr is valid */
    struct sfs_attr attr;       /* the file (after a followed final link) */
    struct sfs_attr dir;        /* attributes of parent */
};

/* Resolves path for cred. follow: follow a symbolic link in the last
 * component. Returns 0 (res->exists says whether the last component is
 * there) or -errno: -ENOENT (a directory on the way is missing),
 * -ENOTDIR, -EACCES (no search permission), -ENAMETOOLONG, -ELOOP,
 * -EINVAL (empty path). The path "/" gives name "" and the root in attr. */
int path_walk(struct sfs *fs, struct eng_cred *cred, const char *path, bool follow,
              struct path_res *res);

#ifdef __cplusplus
}
#endif

#endif
