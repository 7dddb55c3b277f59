/*
 * device/storagefs/journal.h - the redo journal: transactions, handles,
 * group commit and checkpoint (jbd2-like, in the ring described in
 * docs/FORMAT.md).
 *
 * Every change to metadata happens inside a handle. Handles join the one
 * running transaction; a background thread commits it every interval (or
 * when asked: space, size) and later checkpoints committed images in
 * place, which frees ring space. jnl_sync_here (a MicroTx op's durable
 * steps) writes the commit in the waiting thread itself when no commit
 * or checkpoint is under way: handing it to the commit thread and back
 * cost two thread switches per commit, most of a micro step's time.
 *
 * Transaction states: RUNNING (handles join) -> LOCKED (no new handles;
 * waiting for active ones to stop) -> snapshot taken, a new RUNNING
 * transaction opens -> written to the ring -> COMMITTED (durable) ->
 * checkpointed (images written in place, ring space freed).
 *
 * Invariants:
 *   1. A transaction is snapshotted only when no handle of it is active,
 *      so its images hold whole operations, never half of one.
 *   2. Ring order: descriptor(s) + images, media flush (which also makes
 *      ordered data written before it durable), commit record, flush. A
 *      transaction counts as committed only after the second flush.
 *   3. Checkpoint: images in place, flush, journal header moved past them,
 *      flush; only then are blocks freed by those transactions reusable
 *      as metadata (alloc_txn_checkpointed), and data blocks freed by a
 *      transaction become reusable once it is committed
 *      (alloc_txn_committed). So replay never overwrites a reused block.
 *   4. Lock order: handle (held across an operation) -> inode locks ->
 *      allocator / orphan locks -> journal mutex -> cache shard mutex.
 *      A thread holding a handle never waits for a commit; starting a
 *      handle waits only while holding no inode lock (callers start the
 *      handle first). A thread that already holds a handle on this
 *      journal joins it instead of starting another.
 *   5. Sequence numbers on the ring are consecutive: a transaction with
 *      nothing to log is never written and reopens under its number
 *      (replay stops at the first gap).
 *   6. An I/O error while committing or checkpointing is sticky: the
 *      journal refuses new handles (-EIO) and never checkpoints again, so
 *      the image keeps its last consistent state.
 *   7. Data journaling: a file data block dirtied in a transaction (kind
 *      SFS_MAGIC_DATA) is logged and checkpointed like metadata; after its
 *      checkpoint the cached copy is forgotten before jnl_checkpointed()
 *      moves past that transaction, so a file whose last data-journaled
 *      transaction is checkpointed has no data in the cache.
 *
 * Debug and sanitizer builds check 1, 3, 5 and 6 (the state they leave
 * behind) after every state change: jnl_check in journal.c.
 */
#ifndef CISC_SFS_JOURNAL_H
#define CISC_SFS_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "device/storagefs/bcache.h"

struct sfs;
struct sfs_inode;
struct jnl;
struct jnl_txn;

#define JNL_MAX_NEST 16

/* jnl_handle.flags */
#define JNL_DATA 0x1u            /* overwritten file data goes into the journal */

struct jnl_handle {
    struct jnl *j;
    struct jnl_txn *t;
    uint64_t seq;                /* sequence number of t */
    unsigned flags;              /* JNL_*: set by its starter, kept by joins */
    uint32_t credits;            /* blocks reserved for this handle */
    int nest;                    /* joins by nested starts */
    uint32_t nest_credits[JNL_MAX_NEST];  /* given back as each join stops */
    struct jnl_handle *saved;    /* the thread's previous handle */
};

/* Opens the journal of fs over an empty ring: the next transaction gets
 * sequence number seq and starts at ring position pos. Writes the journal
 * header accordingly (flushed) unless fs is read-only, then starts the
 * commit thread (interval_ms between background commits).
 * Returns 0 or -errno. */
int jnl_open(struct sfs *fs, uint64_t seq, uint32_t pos, uint32_t interval_ms,
             struct jnl **out);

/* Commits and checkpoints everything, stops the thread and frees the
 * journal. Returns 0 or the journal's sticky error. */
int jnl_close(struct jnl *j);

/* Starts a handle reserving `credits` blocks (an upper bound on the
 * metadata blocks and inodes the operation dirties). Waits for room in
 * the ring. Returns 0 or -errno (-EIO after an I/O error). */
int jnl_start(struct jnl *j, uint32_t credits, struct jnl_handle **out);

/* Joins an existing handle for one more operation (a call made inside a
 * multi-call transaction, or a nested start), reserving `credits` more
 * until the matching jnl_stop. Never waits for a commit (the running
 * transaction cannot commit while h is held); may wait for a checkpoint.
 * Returns 0 or -ENOSPC when the ring has no room. */
int jnl_join(struct jnl_handle *h, uint32_t credits);

/* Stops a handle, or ends the latest join (returning its credits). */
void jnl_stop(struct jnl_handle *h);

/* Adds a buffer to the running transaction (after the caller changed or
 * is about to change it under its owner's lock). */
void jnl_dirty_buf(struct jnl_handle *h, struct bbuf *b);

/* Adds an inode to the running transaction: its in-memory fields are
 * encoded into its inode-table block at commit. Returns 0 or -errno. */
int jnl_dirty_inode(struct jnl_handle *h, struct sfs_inode *ip);

/* Commits the running transaction (by the commit thread), waits until it
 * is durable, then flushes the media (so data written in place is
 * durable too).
 * Returns 0 or -errno (-EDEADLK if the caller holds a handle). */
int jnl_sync(struct jnl *j);

/* Like jnl_sync, but the calling thread writes the commit itself when no
 * commit or checkpoint is under way (busy flag in journal.c): for a
 * caller that commits durably many times in a row. Measured on the
 * latency bench, one such commit per op (macro) was slower this way on
 * a loaded 2-CPU host, ten in a row (micro) much faster. */
int jnl_sync_here(struct jnl *j);

/* Like jnl_sync, then checkpoints every committed transaction (used on
 * ENOSPC to release freed blocks); returns once the blocks those
 * transactions freed are reusable. Returns 0 or -errno. */
int jnl_sync_checkpoint(struct jnl *j);

/* Sequence number of the last checkpointed transaction (everything up to
 * it is in place on the media). Cheap, callable without locks. */
uint64_t jnl_checkpointed(struct jnl *j);

/* True when the calling thread holds a handle on j. */
bool jnl_held(struct jnl *j);

#endif
