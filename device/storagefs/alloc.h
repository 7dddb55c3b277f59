/*
 * device/storagefs/alloc.h - block and inode allocation.
 *
 * The on-image bitmaps are the truth after a crash; in memory the
 * allocator keeps its own "busy" maps (1 = in use or not yet reusable),
 * which it scans a 64-bit word at a time. All bitmap buffers stay pinned
 * in the cache while mounted, so allocation never does I/O.
 *
 * Invariants:
 *   1. A bit is set in the on-image bitmap (inside the caller's handle)
 *      before the block or inode is handed out.
 *   2. Freed blocks are cleared in the on-image bitmap at once but stay
 *      busy in memory until reuse is safe (see journal.h invariant 3):
 *      data blocks when the freeing transaction has committed, metadata
 *      blocks when it has been checkpointed. Freed inode numbers are
 *      reusable at once (inode slots are only ever written through the
 *      journal).
 *   3. Allocation prefers a run starting at `goal` (the block after the
 *      file's previous extent), so sequential writes get contiguous runs.
 *      A data allocation whose goal is taken (files growing at once)
 *      starts a free window of 64 blocks that the hint then skips, so
 *      concurrent appenders get runs rather than alternate blocks.
 *   4. One mutex; held only for bit operations (never across I/O).
 *   5. The counts are counts of bits: avail = clear bits of the busy map,
 *      the free counts = clear bits of the on-image bitmaps, in the
 *      allocatable range, whatever the image says (a block that an
 *      inconsistent image frees twice is counted once).
 *
 * Debug and sanitizer builds check 3 and 5 after every state change
 * (alloc_check in alloc.c).
 */
#ifndef CISC_SFS_ALLOC_H
#define CISC_SFS_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

struct sfs;
struct jnl_handle;

/* Reads and verifies both bitmaps, pins their buffers and builds the
 * in-memory maps. Returns 0 or -errno (-EUCLEAN for a corrupt bitmap). */
int alloc_load(struct sfs *fs);

/* Frees the allocator (unpins the bitmaps). */
void alloc_unload(struct sfs *fs);

/* Allocates a run of 1..want blocks, preferring one that starts at goal.
 * Sets *start and *got. Leaves the metadata reserve alone.
 * Returns 0 or -ENOSPC. */
int alloc_blocks(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t want,
                 uint64_t *start, uint64_t *got);

/* Allocates one block for structural metadata (extent-tree nodes), which
 * may use the reserve kept back from alloc_blocks, so that splitting or
 * converting an extent rarely fails on a full file system.
 * Returns 0 or -ENOSPC. */
int alloc_meta(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t *blk);

/* Allocates exactly n contiguous blocks (n <= 64). Returns 0 or -ENOSPC. */
int alloc_run(struct sfs *fs, struct jnl_handle *h, uint64_t n, uint64_t *start);

/* Frees n blocks from start (meta: they held metadata). */
void alloc_free_blocks(struct sfs *fs, struct jnl_handle *h, uint64_t start, uint64_t n,
                       bool meta);

/* Free blocks that file data may take: the free blocks less the reserve
 * kept for metadata (what statfs reports: a write never finds fewer). */
uint64_t alloc_usable_blocks(struct sfs *fs);

/* Allocates an inode number, preferring one near goal. Returns 0 or
 * -ENOSPC when every inode is in use. */
int alloc_inode(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t *ino);

/* Frees an inode number. */
void alloc_free_inode(struct sfs *fs, struct jnl_handle *h, uint64_t ino);

/* True when inode number ino is marked in use. */
bool alloc_inode_used(struct sfs *fs, uint64_t ino);

/* Journal callbacks: transaction seq is durable / checkpointed. */
void alloc_txn_committed(struct sfs *fs, uint64_t seq);
void alloc_txn_checkpointed(struct sfs *fs, uint64_t seq);

/* True when freed blocks wait to become reusable (an ENOSPC may go away
 * after a commit and checkpoint). */
bool alloc_has_pending(struct sfs *fs);

/* Free counts as the on-image bitmaps say. */
void alloc_counts(struct sfs *fs, uint64_t *free_blocks, uint64_t *free_inodes);

/* alloc_usable_blocks and the free inodes without taking the lock: the
 * counts as the last change left them (a statfs, not a reservation). */
void alloc_counts_now(struct sfs *fs, uint64_t *usable_blocks, uint64_t *free_inodes);

/* True when blocks [start, start+n) lie inside the data area. */
bool alloc_in_data(const struct sfs *fs, uint64_t start, uint64_t n);

/* Repair only (repair.c, the mount's only user): marks data-area block
 * blk used or free in the on-image bitmap and the in-memory map,
 * whatever they said before (blocks outside the data area are left). */
void alloc_repair_block(struct sfs *fs, struct jnl_handle *h, uint64_t blk, bool used);

/* Repair only: marks inode number ino used (its bitmap bit was lost). */
void alloc_repair_inode(struct sfs *fs, struct jnl_handle *h, uint64_t ino);

#endif
