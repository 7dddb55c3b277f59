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
 *      SFS_FEAT_INCOMPAT_XSECURITY (set in the handle that writes it).
 */
#ifndef CISC_SFS_XATTR_H
#define CISC_SFS_XATTR_H

struct sfs;
struct sfs_inode;
struct jnl_handle;

/* Frees ip's xattr block and value blocks (the inode is being freed).
 * Caller holds ip->rw for writing. Returns 0 or -errno. */
int xattr_free_all(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);

#endif
