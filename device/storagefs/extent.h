/*
 * device/storagefs/extent.h - a file's logical-to-physical block map: a
 * B+tree of extents keyed by logical block (see btree.h), each extent a
 * run of physical blocks, possibly "unwritten" (allocated, reads as
 * zeros: fallocate).
 *
 * Invariants:
 *   1. Extents never overlap logically; lengths are 1..SFS_EXT_MAX_LEN.
 *   2. ext_insert merges with logically and physically adjacent extents
 *      of the same kind, so sequential writes keep one extent.
 *   3. ip->d.blocks counts the data blocks of all extents plus the tree's
 *      node blocks; every function here keeps it exact.
 *   4. Callers hold ip->rw (write for changes) and, for changes, a handle.
 */
#ifndef CISC_SFS_EXTENT_H
#define CISC_SFS_EXTENT_H

#include <stdbool.h>
#include <stdint.h>

#include "device/storagefs/format.h"

struct sfs;
struct sfs_inode;
struct jnl_handle;

#define SFS_EXT_MAX_LEN (1u << 30)

/* Finds the extent holding lblk: returns 1 and fills *e, or returns 0 and
 * sets *hole to the number of unmapped blocks from lblk to the next
 * extent (UINT64_MAX when none follows). -errno on corruption. */
int ext_lookup(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, struct sfs_extent *e,
               uint64_t *hole);

/* First extent ending after lblk (holding lblk or later); 1 / 0 / -errno. */
int ext_next(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, struct sfs_extent *e);

/* Maps the unmapped range [e->lblk, +e->len) to e->pblk.. (merging).
 * Does not change ip->d.blocks (the caller accounts data blocks). */
int ext_insert(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
               const struct sfs_extent *e);

/* Unmaps [lblk, lblk+len), splitting extents at the edges. With
 * free_blocks the data blocks are freed and subtracted from d.blocks.
 * Processes at most max extents; returns 1 if more remain, 0 when the
 * range is unmapped, or -errno. */
int ext_remove(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t lblk,
               uint64_t len, bool free_blocks, unsigned max);

/* Maps the written blocks [lblk, lblk+n) of unwritten extent e (just
 * looked up, under the same lock and handle) as written: e is split
 * around them and they are mapped, merging as ext_insert does. When the
 * blocks lie strictly inside e they join neither neighbour (both are
 * e's unwritten remainders): one cut and one insert, no lookup. Returns
 * 0, or -errno: with *unmapped set when the blocks were unmapped but not
 * mapped again (the caller gives them back). */
int ext_convert(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                const struct sfs_extent *e, uint64_t lblk, uint64_t n, bool *unmapped);

/* How many extents end after logical block lblk (what ext_shift moves
 * from there), and in *end where the last of them ends (lblk if none);
 * -errno on corruption. */
int64_t ext_count_from(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, uint64_t *end);

/* Moves the mapping of every block at or after logical block `from` by
 * `delta` blocks, down (toward 0) or up, keeping physical blocks, kinds
 * and d.blocks; an extent holding both from - 1 and from is split there
 * first. The blocks it moves into must be unmapped: [from - delta, from)
 * going down; going up, everything past the last extent is. Changes
 * 2 * ext_count_from(from) + 1 extents at most, all in handle h (no
 * partial shift is ever committed on its own). Returns 0 or -errno. */
int ext_shift(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t from,
              uint64_t delta, bool down);

/* A good physical goal for logical block lblk: the continuation of the
 * extent before it, or 0 (no preference). */
uint64_t ext_goal(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk);

/* Journal credits for changing up to n extents of ip. */
uint32_t ext_credits(struct sfs_inode *ip, unsigned n);

#endif
