/*
 * device/engine/perm.h - POSIX permission rules, applied by the engine with the
 * caller's credentials before any StorageFS call.
 *
 * The rules follow Linux (fs/namei.c, fs/attr.c, fs/xattr.c) for a caller
 * whose only capabilities are those of uid 0: root bypasses read/write
 * checks, needs one execute bit for non-directories, owns every inode for
 * chmod/chown/utimes. Search permission along the path is the kernel's job
 * (default_permissions); the device checks the directory it acts on.
 * POSIX ACLs (device/storagefs/acl.h) decide for callers who are neither
 * root nor the owner when the inode has one; their reads go through
 * cred->acl_fs, which the engine sets for each command it runs.
 *
 * Invariants:
 *   1. Functions only read attributes, credentials and (perm_check) an
 *      inode's access ACL; they never change the file system (perm_setattr
 *      may edit the request it is given).
 *   2. Denials are -EACCES for missing mode bits and -EPERM for ownership
 *      rules (sticky directories, chmod/chown/utimes by non-owners).
 *   3. Supplementary groups are fetched at most once per command, and only
 *      when the answer depends on them.
 */
#ifndef CISC_DEVICE_PERM_H
#define CISC_DEVICE_PERM_H

#include <stdbool.h>

#include "device/engine/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True if cred is in group gid (primary or supplementary). */
bool perm_in_group(struct eng_cred *c, uint32_t gid);

/* Checks mask (R_OK|W_OK|X_OK, 0 = existence) against inode a: its
 * access ACL when it has one and c is neither root nor the owner, else
 * the mode bits. Returns 0, -EACCES, or -errno reading the ACL. */
int perm_check(struct eng_cred *c, const struct sfs_attr *a, int mask);

/* May c add an entry to directory dir? -ENOTDIR, -EACCES or 0. */
int perm_may_create(struct eng_cred *c, const struct sfs_attr *dir);

/* May c remove (or rename away) victim from directory dir? Adds the
 * sticky-bit rule (-EPERM) to perm_may_create's. */
int perm_may_delete(struct eng_cred *c, const struct sfs_attr *dir,
                    const struct sfs_attr *victim);

/* Checks a setattr request against the current attributes cur and adjusts
 * it the way Linux does (drops S_ISGID on chmod by a non-member; a chown
 * request of a non-directory, by anyone, clears set-id bits as
 * perm_setid_kill describes, even when the owner stays the same).
 * wr_handle: the request came through a handle open for writing
 * (ftruncate). Returns 0, -EPERM or -EACCES. */
int perm_setattr(struct eng_cred *c, const struct sfs_attr *cur, struct sfs_attr *in,
                 unsigned *valid, bool wr_handle);

/* The set-id bits that c must clear before it changes the data of a
 * (write, append, truncate, fallocate, copy), as Linux's
 * file_remove_privs: none for root (CAP_FSETID) or a file that is not
 * regular; else S_ISUID, and S_ISGID when the group may execute (without
 * group execute, set-group-id marks mandatory locking and stays).
 * Returns the bits to clear, 0 for none. */
uint32_t perm_setid_kill(const struct eng_cred *c, const struct sfs_attr *a);

/* File capabilities (setcap). Linux's file_remove_privs drops them with
 * the set-id bits; the device does so for the same callers as
 * perm_setid_kill (a caller that is not root changing a regular file's
 * data), so a writer cannot keep a capable binary's privileges. */
#define PERM_XATTR_CAPS "security.capability"

/* Owner, group and final mode of a new inode created by c in dir
 * (set-group-id directories pass their group on). */
void perm_new_owner(struct eng_cred *c, const struct sfs_attr *dir, uint32_t *mode,
                    uint32_t *uid, uint32_t *gid);

/* Checks access to extended attribute `name` of inode a: mask W_OK to set
 * or remove, R_OK to read (system.posix_acl_*: anyone reads, the owner
 * or root sets; not on symlinks). Returns 0, -EPERM, -EACCES, -ENODATA
 * or -EOPNOTSUPP (unknown namespace). */
int perm_xattr(struct eng_cred *c, const struct sfs_attr *a, const char *name, int mask);

/* Setting an access ACL also clears S_ISGID (SFS_XATTR_KILL_SGID) when
 * c is neither root nor in a's group, as a chmod by c would. */
bool perm_acl_kills_sgid(struct eng_cred *c, const struct sfs_attr *a);

/* Checks removal of extended attribute `name` from a: perm_xattr's
 * W_OK rule, except that whoever may write a regular file may remove its
 * PERM_XATTR_CAPS (a write would drop them anyway): the kernel asks for
 * that removal, with the writer's credentials, before a write, truncate
 * or chown through the mount (its file_remove_privs). Returns as
 * perm_xattr. */
int perm_xattr_remove(struct eng_cred *c, const struct sfs_attr *a, const char *name);

/* Access mask needed to open with these O_* flags. */
int perm_open_mask(uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif
