/*
 * device/engine/fused/oplog.h - AutoRec's operational log (FusionFS
 * §4.4.2): an autorec op's step vector, credentials and arena inputs are
 * written and committed durably before the op starts (that commit is the
 * client's receipt); each step appends its result, and the output a later
 * step takes, inside the transaction that commits the step; the log is
 * removed when the op ends (its completion mark). At the next start,
 * fop_recover() finishes every op still in the log before any client is
 * served: committed steps are not run again, their logged outputs feed
 * the steps that had not committed, which run with the logged credentials.
 * The log's removal is not made durable (no flush per op): a log whose
 * every mutating or output-feeding step has its record is an op that had
 * completed, and recovery just removes it.
 *
 * Where: one file per op in the device's system directory,
 * /.cisc-system/oplog/<16 hex digits of the op's number>, written through
 * StorageFS's journal like any file (so the log's atomicity is the
 * journal's: a record is present after a crash exactly when the
 * transaction that appended it committed). docs/FORMAT.md "Operational
 * log" draws the records.
 *
 * Not covered yet (refused at submission with -EOPNOTSUPP, nothing
 * changed): BPF steps (the program would have to be identified by content
 * hash), session handles (F_FH: they do not survive the device), UNLINK
 * steps; outputs copied to the arena (F_OUT_ARENA) are not logged and are
 * not delivered after a crash.
 *
 * Invariants:
 *   1. An op's log file exists from before its first step runs until after
 *      its last step's record committed.
 *   2. Step records appear in step order; a step's record commits in the
 *      same transaction as its mutations.
 *   3. Recovery never runs a step of a log whose header fails its checks.
 */
#ifndef CISC_DEVICE_FUSED_OPLOG_H
#define CISC_DEVICE_FUSED_OPLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct engine;
struct fop_run;
struct sfs;
struct sfs_txn;

/* Whether x's vector can run under autorec: 0 or -EOPNOTSUPP (step i in
 * *bad). */
int fop_oplog_supported(const struct fop_run *x, unsigned *bad);

/* Writes x's op record to a new log file and commits it durably; sets
 * x->oplog. Returns 0 or -errno (-ENOSPC: no room for the log). */
int fop_oplog_begin(struct fop_run *x);

/* Appends step i's record inside tx (NULL: a durable transaction of its
 * own). Returns 0 or -errno. */
int fop_oplog_step(struct fop_run *x, struct sfs_txn *tx, unsigned i);

/* Whether step i's output must be logged (a later step takes it). */
bool fop_oplog_needs_output(const struct fop_run *x, unsigned i);

/* Removes x's log file (the op is complete). */
void fop_oplog_end(struct fop_run *x);

/* Finishes every op left in the log of e's file system (at start-up,
 * before clients are served), each on a device core; reports each op to
 * out ("recovery op NAME uid U steps N committed C status S", then a
 * line per failed step; or "... unrecoverable (REASON)"). Returns the
 * number of ops found, or -errno. */
int fop_recover(struct engine *e, FILE *out);

/* The number of ops in fs's log that fop_recover would finish (0 when
 * there is no log), without writing: a read-only device refuses to start
 * while there are some. Returns it or -errno. */
int fop_oplog_pending(struct sfs *fs);

/* Recovery records: each recovered op's report is kept, owned by the
 * op's uid, in /.cisc-system/recovery/NAME until its owner acknowledges
 * it. fop_recovery_list copies the records uid may read (root: all) into
 * buf; returns their length or -errno (-ENOSPC: buf too small).
 * fop_recovery_ack removes record name; -ENOENT when uid has none of
 * that name (root may remove any). */
int fop_recovery_list(struct engine *e, uint32_t uid, char *buf, size_t size);
int fop_recovery_ack(struct engine *e, uint32_t uid, const char *name);

#endif
