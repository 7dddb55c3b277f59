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
 * A completed op's end is not flushed: a log whose end record was lost
 * but whose every mutating or output-feeding step has its record is an op
 * that had completed too, and recovery runs nothing of it.
 *
 * Where: files in the device's system directory, written through
 * StorageFS's journal like any file (so the log's atomicity is the
 * journal's: a record is present after a crash exactly when the
 * transaction that appended it committed). docs/FORMAT.md "Operational
 * log" draws the records.
 *
 * Slots: the log files are reused, /.cisc-system/oplog/slot-NNNN, one
 * per op running at once (an op takes a free one, a new one when all are
 * busy): creating and removing a file per op cost two directory changes,
 * an inode and a journal transaction of their own per op. An op's
 * receipt transaction writes its op record from offset 0 of its slot,
 * so that after a crash the slot holds either the previous op's log or
 * the new one, never a mix: a log of at most 64 KiB without block
 * operands is written over the slot's blocks in a data-journaled
 * transaction (the overwrite commits with the new size, which cuts the
 * previous log's tail; no block is freed or allocated, so a small op
 * costs the journal images of its record instead of a truncation, new
 * blocks, their bitmaps and extents); a larger log empties the slot
 * first (truncation, its size journaled) and takes new blocks (ordered
 * mode), which is what its block operands need to be adopted. The
 * previous op's log is complete then: all its step records committed
 * before it gave the slot back, and the journal commits in order, so the
 * receipt's durable commit makes them durable first ("done" is durable
 * before the slot is reused). A completed op appends an end record to its
 * slot (its completion mark, committed without a flush: recovery then
 * runs nothing of it; without it, a log whose every mutating or
 * output-feeding step has its record counts as complete too); a failed
 * op's slot is emptied durably. The op's name,
 * which names its recovery record, is in its op record (version 3);
 * logs of earlier versions are one file per op, named by the op, and
 * removed when recovery has finished them. A slot whose log recovery
 * kept (unrecoverable) is not given out again.
 *
 * What autorec covers, and how:
 *   - Files by path (OPEN, UNLINK): the path and the credentials checked
 *     when the op was accepted are logged; replay resolves the path again
 *     with them. A committed OPEN is reopened without O_EXCL/O_TRUNC, a
 *     committed UNLINK is not resolved again.
 *   - BPF steps: the program's identity is logged with the step (its id,
 *     and, in a trailer, the SHA-256 of its object as loaded - the
 *     registry's content hash, device/progs/progs.h - its name and its
 *     function). Programs are persistent: the registry reloads them from
 *     the image before recovery runs. Replay takes the program by id (by
 *     name when it was reloaded under a new id) and runs it only when
 *     hash, name and function match; otherwise that step fails with
 *     -ESTALE ("program NAME changed or unloaded" in the recovery record),
 *     the steps that depend on it are cancelled, the others run. A step
 *     with a stream (state in device memory only) is refused.
 *   - Keys: ENCRYPT/DECRYPT keys live only in the client's session
 *     (device/compute/keys.h) and are never written to the image, so a
 *     keyed step cannot run again after a crash. Autorec therefore runs
 *     every keyed step, with the compute steps it takes input from,
 *     *before* the op is logged, and logs their results with the op
 *     record (step records in the same transaction): the nonce an
 *     ENCRYPT draws is drawn once, is part of its logged output, and a
 *     replay takes that output instead of running the step again. A keyed
 *     step whose input depends on a file or a program is refused. A
 *     failing keyed step fails the op before anything changed.
 *   - Session handles (F_FH) are refused: a handle is a number in the
 *     client's session, which does not survive the device, and naming
 *     the file durably instead would let replay reach a file through a
 *     path the client never used.
 *   - F_OUT_ARENA outputs: the client that asked for them is gone after a
 *     crash. An output of at most FOP_REC_OUT_MAX bytes is logged with
 *     its step and kept, in hex, in the op's recovery record
 *     ("recovery op NAME step I output N bytes HEX"); a larger one is
 *     reported as not kept.
 *
 * Block operands and adoption: an arena input longer than the log entry
 * size (tx_log_entry) is logged in whole log blocks after the op record,
 * with a CRC-32C of its own in the record (summed from the copy written,
 * FORMAT.md "Block operands"); the record's CRC covers the record, not
 * those bytes, and recovery checks an operand's CRC only when a step
 * that will run reads it. Two uses of that: a CRC32C step with seed 0
 * over exactly such an operand takes the logged CRC as its result (at
 * run time and at replay: one pass over the bytes, not two), and an
 * APPEND or WRITE of exactly such an operand at a block-aligned file
 * offset, into a hole or past the end, *adopts* its whole blocks: they
 * move from the slot into the file (sfs_move_blocks) inside the step's
 * own transaction, with its step record, so that the step's commit
 * and the blocks' move are one; the tail (under a block) is written as
 * usual. Adoption needs that no other step still to run reads the
 * operand's bytes in the log (each other step using it has its result
 * known, its record logged, or ran before the log): a replay of any
 * step that had not committed still finds its input in the slot. A
 * write at an unaligned offset, or one the file system refuses to move
 * (fragmented, journaled data, preallocated destination), copies as
 * before. After the move the slot has a hole there; its size stays.
 *
 * Flushes: the receipt is the op's flush. A step's commit (with its
 * record) is not flushed, even when the op has an FSYNC step: after a
 * crash the receipt is there and recovery redoes whatever commit was
 * lost; the journal commits in order, so the commits that survive are a
 * prefix. Only in an op with an FSYNC step, a step that writes at least
 * FOP_REDO_FLUSH_BYTES is flushed (redoing it would cost more than the
 * flush; it also flushes the commits before it). A step record that
 * feeds a later step but commits nothing of its own is never flushed. The end of a
 * failed op's log is made durable (a replay must not redo a step
 * whose failure the client was told of).
 *
 * Modules (oplog_int.h): oplog.c writes logs, oplog_rec.c encodes and
 * decodes the records, oplog_recover.c recovers and checks offline.
 *
 * Invariants:
 *   1. An op's log exists from before its first step runs until after
 *      its last step's record committed; its slot is not given to another
 *      op before then.
 *   2. Step records appear in step order; a step's record commits in the
 *      same transaction as its mutations.
 *   3. Recovery never runs a step of a log whose header fails its checks.
 */
#ifndef CISC_DEVICE_FUSED_OPLOG_H
#define CISC_DEVICE_FUSED_OPLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FOP_REDO_FLUSH_BYTES (256u << 10)   /* see "Flushes" */

struct engine;
struct fop_run;
struct sfs;
struct sfs_txn;
struct fop_step;

/* Whether x's vector can run under autorec (see above): 0 or
 * -EOPNOTSUPP (step i in *bad). */
int fop_oplog_supported(const struct fop_run *x, unsigned *bad);

/* Runs x's keyed steps (see above), writes x's op record and their
 * records to a new log file and commits it durably; sets x->oplog and
 * x->pre. Returns 0 or -errno (-ENOSPC: no room for the log; a keyed
 * step's error, *bad its step). */
int fop_oplog_begin(struct fop_run *x, unsigned *bad);

/* Appends step i's record inside tx (NULL: a durable transaction of its
 * own). Returns 0 or -errno. */
int fop_oplog_step(struct fop_run *x, struct sfs_txn *tx, unsigned i);

/* Adoption: the block operand of step i (its arena input, over the log
 * entry size, logged in whole log blocks, oplog.h "Adoption") when
 * step i writes exactly it (data, len) at a block-aligned file offset
 * off and no step still to run reads those bytes in the log: the log
 * offset the append may take the operand's whole blocks from
 * (sfs_move_blocks) instead of writing them; else 0. */
uint64_t fop_oplog_adopt_from(const struct fop_run *x, unsigned i, uint64_t off,
                              const uint8_t *data, uint64_t len);

/* Whether step s, whose operand is the block operand at opnd_off (0:
 * none), is a CRC32C over exactly that operand with seed 0: its result
 * is the operand's logged CRC, the bytes are not read again. */
bool fop_oplog_crc_known(const struct fop_step *s, uint64_t opnd_off);

/* Whether step i's output must be logged (a later step takes it, or it
 * is an F_OUT_ARENA output the recovery record keeps). */
bool fop_oplog_needs_output(const struct fop_run *x, unsigned i);

/* Ends x's log (the op is complete): a slot is given back, emptied
 * durably when durable (the op failed); a file of before slots is
 * removed, durably when durable. */
void fop_oplog_end(struct fop_run *x, bool durable);

/* Frees e's slot table (engine teardown). */
void fop_oplog_free(struct engine *e);

/* Finishes every op left in the log of e's file system (at start-up,
 * before clients are served), on up to e's number of cores at once (the
 * logs of unfinished ops name disjoint files: each was written with its
 * op's stripes held); reports each op to out, in log order ("recovery
 * op NAME uid U steps N committed C status S", then a line per failed
 * step and per kept output; or "... unrecoverable (REASON at byte B,
 * log block K)"). Returns the number of ops found (a slot that is empty
 * or holds a completed op is none), or -errno. */
int fop_recover(struct engine *e, FILE *out);

/* The number of ops in fs's log that fop_recover would finish (0 when
 * there is no log), without writing: a read-only device refuses to start
 * while there are some. Returns it or -errno. */
int fop_oplog_pending(struct sfs *fs);

/* Offline check of fs's operational log (cisc fsck; fs may be mounted
 * read-only, nothing is written or run): one line per log to line(),
 * naming the log file, and for a log that does not check the reason and
 * the byte and block of the log where it failed. Returns the number of
 * such logs, or -errno. */
int fop_oplog_check(struct sfs *fs, void (*line)(void *arg, const char *msg), void *arg);

/* Space: the live logs of running ops together take at most the
 * engine's tx_log_max bytes (`cisc up --tx-log-max`). A new op reserves
 * an upper bound of its log (op record, and each step's record with the
 * output it may log) before anything runs; while the others hold too
 * much it waits up to 2 s, then fails with -ENOSPC at its first step,
 * having changed nothing (never a silent downgrade to a weaker mode).
 * fop_oplog_end gives the space back. A step's logged output up to
 * tx_log_entry bytes (`--tx-log-entry`) is inline in its record; a
 * larger one goes to whole log blocks after it (FORMAT.md "Step
 * record"). fop_oplog_space reports the three figures (cisc status). */
void fop_oplog_space(struct engine *e, uint64_t *max, uint64_t *entry, uint64_t *used);

/* Bytes appends have taken from logs so far without writing them
 * (oplog.h "Adoption"; cisc status "tx log adopted"). */
uint64_t fop_oplog_adopted(struct engine *e);

/* Recovery records: each recovered op's report is kept, owned by the
 * op's uid, in /.cisc-system/recovery/NAME until its owner acknowledges
 * it. fop_recovery_list copies the records uid may read (root: all) into
 * buf; returns their length or -errno (-ENOSPC: buf too small).
 * fop_recovery_ack removes record name; -ENOENT when uid has none of
 * that name (root may remove any). */
int fop_recovery_list(struct engine *e, uint32_t uid, char *buf, size_t size);
int fop_recovery_ack(struct engine *e, uint32_t uid, const char *name);

#endif
