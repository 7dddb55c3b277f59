/*
 * device/storagefs/xattr.h - extended attributes: entries in the inode's
 * 112-byte inline area, then in one xattr block per inode; values larger
 * than a small threshold live in a run of xattr value blocks referenced
 * from the entry. (The public calls are in storagefs.h.)
 *
 * Invariants:
 *   1. A name appears at most once per inode (inline or block).
 *   2. A change is staged on private copies of both areas and applied
 *      only when it fits, so -ENOSPC leaves the attributes as they were.
 *   3. The xattr block exists only while it holds an entry.
 *   4. An image holds a security. entry only once its superblock has
 *      SFS_FEAT_INCOMPAT_XSECURITY, a system. entry (an ACL) only once it
 *      has SFS_FEAT_INCOMPAT_XACL (set in the handle that writes it).
 *   5. system. names are the two ACL names only, and their values go
 *      through acl.c (which keeps the mode in step, acl.h).
 */
#ifndef CISC_SFS_XATTR_H
#define CISC_SFS_XATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sfs;
struct sfs_inode;
struct jnl_handle;
struct sfs_txn;

/* Frees ip's xattr block and value blocks (the inode is being freed).
 * Caller holds ip->rw for writing. Returns 0 or -errno. */
int xattr_free_all(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);

/* Reads entry (ns, name) of ip (name without its prefix) as
 * sfs_getxattr does. Caller holds ip->rw. Returns the size or -errno. */
ssize_t xattr_get_locked(struct sfs *fs, struct sfs_inode *ip, uint8_t ns, const char *name,
                         void *buf, size_t size);

/* Sets (or with remove, removes: -ENODATA if absent) entry (ns, name) of
 * ip in handle h, no other rule applied. Caller holds ip->rw for writing.
 * Returns 0 or -errno. */
int xattr_put_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint8_t ns,
                     const char *name, const void *value, size_t size, bool remove);

/* ---- the ACL side (acl.c) ---- */

/* sfs_setxattr / sfs_removexattr (flags SFS_XATTR_REMOVE) of a system.
 * name: validates the value, keeps the mode in step (acl.h invariant 1, 2)
 * in one transaction. Returns 0 or -errno (-EINVAL for a malformed ACL). */
int acl_change(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name,
               const void *value, size_t size, unsigned flags);
#define SFS_XATTR_REMOVE (1u << 8)   /* acl_change only */

/* Journal credits one ACL write adds to an operation (the entry's inode
 * block, a new xattr block, a value run, their bitmap blocks). */
#define ACL_CHMOD_CREDITS 12u

/* After a chmod of ip in h: rewrites its access ACL from the new mode.
 * Caller holds ip->rw for writing. Returns 0 or -errno. */
int acl_chmod_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);

/* A new inode ip in directory dp (both locked for writing): inherits dp's
 * default ACL (acl.h invariant 3), adjusting ip's mode. Returns 0 or -errno. */
int acl_create_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp,
                      struct sfs_inode *ip);

#endif
