/*
 * device/engine/sysdir.h - the device's hidden system directory: where the
 * device keeps its own data (loaded eBPF programs) inside StorageFS,
 * invisible and untouchable through every client door.
 *
 * StorageFS has no reserved area, and an inode not linked from the root
 * would be freed as an orphan at the next mount, so the device keeps its
 * data in an ordinary directory of the root named SYSDIR_NAME
 * (".cisc-system"), created at start-up. fsck, the journal and crash
 * recovery treat it like any directory. The engine hides it: every door
 * that names a directory entry (FUSE lookups and namespace changes, the
 * libcisc path walk, CISC OPEN/UNLINK steps) asks sysdir_check() first,
 * and READDIR of the root skips it. So the name looks absent through
 * every call: lookup, stat, open, unlink, rmdir and a rename from it say
 * -ENOENT, listings leave it out, and the root's link count leaves out
 * its ".." (sysdir_root_attr). Creating that name (mkdir, create, mknod,
 * symlink, link, a rename onto it) fails with SYSDIR_RESERVED, -EINVAL:
 * what file systems answer for a name they cannot hold (vfat's and
 * ntfs3's invalid names), where -EEXIST would reveal the entry and
 * -EPERM would say that someone else could; a rename exchanging with it
 * finds no target (-ENOENT), as the kernel's own lookup does. Its contents
 * are reached only through inode numbers the device itself holds; FUSE
 * never learns them (the kernel only uses inodes a lookup or readdirplus
 * gave it).
 *
 * Layout: /.cisc-system/<sub>/ per device module ("progs" for the program
 * registry, see device/progs/progs.h). Directories are mode 0700, owned by uid 0.
 *
 * Invariants:
 *   1. sysdir_check() is the one rule: (SFS_ROOT_INO, SYSDIR_NAME) is
 *      refused; every other (dir, name) passes.
 *   2. The system directory is never empty once created (it holds its
 *      subdirectories), so even a door that forgot the check could not
 *      rename an empty directory over it.
 */
#ifndef CISC_DEVICE_SYSDIR_H
#define CISC_DEVICE_SYSDIR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "device/storagefs/storagefs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYSDIR_NAME ".cisc-system"
#define SYSDIR_RESERVED (-EINVAL)   /* creating the name (see above) */

/* True when (dir, name[0..len)) is the system directory's entry. */
static inline bool sysdir_hidden(uint64_t dir, const char *name, size_t len)
{
    return dir == SFS_ROOT_INO && name && len == sizeof(SYSDIR_NAME) - 1 &&
           !memcmp(name, SYSDIR_NAME, len);
}

/* The check every door makes before using directory entry (dir, name):
 * 0 when allowed, else `err` (-ENOENT for lookups and removals, so the
 * entry looks absent; SYSDIR_RESERVED for creations and rename targets). */
static inline int sysdir_check(uint64_t dir, const char *name, int err)
{
    return name && sysdir_hidden(dir, name, strlen(name)) ? err : 0;
}

/* Finds, creating as needed, /SYSDIR_NAME/<sub> on fs (sub: one plain
 * component). Sets *ino. Returns 0 or -errno (-ENOTDIR when something
 * other than a directory holds one of the names). */
int sysdir_open(struct sfs *fs, const char *sub, uint64_t *ino);

/* Like sysdir_open, creating nothing: -ENOENT while a name is missing. */
int sysdir_find(struct sfs *fs, const char *sub, uint64_t *ino);

/* Leaves the system directory out of the root's link count when *a is
 * the root's attributes (what a door shows of the root). */
void sysdir_root_attr(struct sfs *fs, struct sfs_attr *a);

#ifdef __cplusplus
}
#endif

#endif
