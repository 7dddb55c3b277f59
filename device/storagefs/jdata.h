/*
 * device/storagefs/jdata.h - file data through the journal: overwrites made
 * inside a data-journaled transaction (sfs_txn_begin_flags with
 * SFS_TXN_DATA_JOURNAL) are logged as block images with the metadata, so
 * the whole transaction survives a crash entirely or not at all, instead
 * of going in place before the commit (ordered mode).
 *
 * A journaled data block lives in the block cache (kind SFS_MAGIC_DATA)
 * from the change until the checkpoint writes it in place; the file it
 * belongs to is "hot" meanwhile: ip->jdata_seq, the last transaction that
 * journaled one of its blocks, is not yet checkpointed.
 *
 * Invariants:
 *   1. While a file is hot, every change to its existing data blocks goes
 *      through the journal, never in place, whoever makes it: the newest
 *      journal image of a block is never older than the media, so neither
 *      the checkpoint nor a replay ever writes old data over new.
 *   2. While a file is hot, reads take each block from the cache when it
 *      is there (journaled, not yet in place), from the media otherwise.
 *   3. Blocks a hot file frees are freed as metadata (reusable once
 *      checkpointed), so an image left in the journal is never replayed
 *      over a block that another file has been given since.
 *   4. Newly allocated blocks are written in place even for hot files
 *      (ordered mode): nothing refers to them before the commit, and by
 *      3 no journal image of them is pending.
 *   5. Callers hold ip->rw (write for changes) and, for changes, a handle.
 *   6. An inode loaded into the inode cache starts as hot as the newest
 *      data-journaled transaction (fs->jdata_last): it may have journaled
 *      data from before it was evicted.
 */
#ifndef CISC_SFS_JDATA_H
#define CISC_SFS_JDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sfs;
struct sfs_inode;
struct jnl_handle;

/* Data blocks one handle journals at most (its credits are reserved). */
#define JDATA_CHUNK 16u

/* True while ip has journaled data not yet checkpointed (or, on a
 * read-only mount, while replayed journal images overlay the data area). */
bool jdata_hot(struct sfs *fs, const struct sfs_inode *ip);

/* True when changes to ip's existing data inside h must be journaled:
 * h belongs to a data-journaled transaction, or ip is hot. */
bool jdata_needed(struct sfs *fs, const struct jnl_handle *h, const struct sfs_inode *ip);

/* Journals n bytes of src (NULL: zeros) at byte boff of the existing
 * blocks starting at pblk, i.e. puts them into cached block images dirty
 * in h, and marks ip hot. The caller reserved a credit per block.
 * Returns 0 or -errno. */
int jdata_write(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t pblk,
                uint32_t boff, const uint8_t *src, size_t n);

/* Reads n bytes at byte boff of the blocks from pblk for a hot file:
 * cached images first, the media for the rest. Returns 0 or -errno. */
int jdata_read(struct sfs *fs, uint64_t pblk, uint32_t boff, uint8_t *dst, size_t n);

#endif
