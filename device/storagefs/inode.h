/*
 * device/storagefs/inode.h - the inode cache, inode creation and the
 * orphan list.
 *
 * Invariants:
 *   1. At most one struct sfs_inode per live inode number; loads of the
 *      same number wait for each other. A freed inode is unhashed at once
 *      (its number may be reused while the old struct is still pinned).
 *   2. An inode with refs == 0 and opens == 0 is clean (not in a running
 *      transaction) and may be evicted (LRU). Inodes on the orphan list
 *      and inodes dirty in a transaction hold a ref.
 *   3. Inode slots are written only by inode_commit_encode, at commit,
 *      under the slot mutex; loads decode under the same mutex.
 *   4. The on-image orphan list (superblock orphan_head -> inode
 *      orphan_next -> ... -> 0) and the in-memory list (fs->orphans) hold
 *      the same inodes in the same order; both change under
 *      fs->orphan_mu inside a handle.
 */
#ifndef CISC_SFS_INODE_H
#define CISC_SFS_INODE_H

#include <stdbool.h>
#include <stdint.h>

struct sfs;
struct sfs_inode;
struct jnl_handle;

/* Creates / destroys the inode cache of fs. */
int icache_create(struct sfs *fs);
void icache_destroy(struct sfs *fs);

/* Returns inode ino with a ref. -ENOENT if the number is not in use (or
 * out of range), -EUCLEAN if its slot is corrupt, other -errno on I/O. */
int inode_get(struct sfs *fs, uint64_t ino, struct sfs_inode **out);

/* Takes / drops an in-memory ref. */
void inode_hold(struct sfs *fs, struct sfs_inode *ip);
void inode_put(struct sfs *fs, struct sfs_inode *ip);

/* Allocates and initialises a new inode (nlink 1, or 2 for a directory;
 * all times now; an empty tree in the data area) and adds it to h's
 * transaction. Returns 0 with a ref in *out, or -ENOSPC / -errno. */
int inode_create(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint32_t mode,
                 uint32_t uid, uint32_t gid, uint64_t rdev, struct sfs_inode **out);

/* Marks ip changed in h's transaction. Returns 0 or -errno. */
int inode_dirty(struct jnl_handle *h, struct sfs_inode *ip);

/* Journal callback at commit: writes ip into its slot (zeros if freed). */
void inode_commit_encode(struct sfs *fs, struct sfs_inode *ip);

/* Frees ip's number (its blocks must already be freed): clears the bitmap
 * bit, zeroes the slot at commit, unhashes it. Caller holds ip->rw. */
int inode_free_number(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);

/* Adds ip (nlink 0) to / removes it from the orphan list. */
int orphan_add(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);
int orphan_remove(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);

/* At mount: loads the on-image orphan list into memory (validating it).
 * Returns 0 or -EUCLEAN / -errno. */
int orphan_load(struct sfs *fs);

/* Takes the first orphan with no opens off the in-memory scan (with a
 * ref), or NULL. Used to reap orphans at mount and unmount. */
struct sfs_inode *orphan_next_unopened(struct sfs *fs, struct sfs_inode *after);

/* Counts an sfs_iget reference (the inode then stays in memory); the
 * inode in *out when out is not NULL. */
int inode_open(struct sfs *fs, uint64_t ino, struct sfs_inode **out);

/* Drops one; returns true when it was the last. */
bool inode_close(struct sfs *fs, struct sfs_inode *ip);

/* Drops one unless it is the last (one lock round, the inode untouched
 * otherwise); returns whether it did. */
bool inode_close_unless_last(struct sfs *fs, struct sfs_inode *ip);

/* True while ip has sfs_iget references and nobody reaps it (then an
 * unnamed file may still get a name: the caller holds ip->rw exclusive,
 * so a reaper that finds nlink 0 ran before, or finds the new link). */
bool inode_opened(struct sfs *fs, struct sfs_inode *ip);

/* Returns true exactly once per inode, and only while it has no opens:
 * the caller (holding ip->rw and having seen nlink == 0) must free it. */
bool inode_claim_reap(struct sfs *fs, struct sfs_inode *ip);

#endif
