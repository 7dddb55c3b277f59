/*
 * device/engine/fused/fused.h - fused CISC ops inside the device: a validated private
 * copy of a client's step vector (struct eng_cisc) and its execution as
 * ENG_OP_CISC on a device core (FusionFS §4.3, MacroTx of §4.4.1).
 *
 * Life of a vector:
 *
 *   1. decode   fop_decode(): the qp layer has copied the client's array
 *               of struct wire_step into private memory once; every field
 *               is checked (kind, flags, reserved bits, step references
 *               strictly backward and to a step of the right kind, arena
 *               ranges through fop_arena_at(), lengths and output
 *               capacities against the device's memory limits), paths are
 *               copied out of the arena, and each step's output capacity
 *               is computed. Nothing in shared memory is read again
 *               except data bytes (inputs, patches) and output ranges.
 *   2. check    (on the device core, before any step runs) every step's
 *               files are resolved and its permission checked against the
 *               client's credentials: OPEN resolves its path (search
 *               permission on every directory walked), checks the open
 *               mode or the right to create; UNLINK checks the right to
 *               delete; file steps check the access mode of the OPEN step
 *               or session handle they use; ENCRYPT/DECRYPT check that the
 *               key exists. A failure here runs no step at all.
 *   3. execute  steps run in order; outputs go to device buffers (one per
 *               step, capacity fixed at decode, charged to the device
 *               memory budget) and later steps take them as input with no
 *               copy. Mutations are *deferred* (see below). A run of
 *               consecutive INDEPENDENT compute steps none of which uses
 *               another's output is spread over free device cores.
 *   4. apply    the deferred mutations are applied in step order inside
 *               one StorageFS transaction (sfs_txn) with an undo log; on
 *               failure the undo log is applied in reverse inside the same
 *               transaction before it commits, so the journal commits the
 *               net (unchanged) state.
 *   5. report   per-step ret + out_len in v->res, overall status in
 *               v->status, number of steps that ran in v->ran.
 *
 * MacroTx design: deferred writes.
 *   WRITE, APPEND, TRUNCATE (and OPEN with O_TRUNC), file creation (OPEN
 *   with O_CREAT of a missing file) and UNLINK do not touch StorageFS
 *   while the vector executes: they are recorded as mutations of a
 *   per-op "virtual file" (base file + ordered list of writes and
 *   truncates). Later READ steps of the same op read through that list
 *   (read-your-writes: base bytes, then each pending write copied over
 *   and each truncate zeroing past its size, in order), APPEND uses the
 *   virtual size, and OPEN/UNLINK see the op's own pending creates and
 *   unlinks. Every failure-prone step that is not a mutation (reads,
 *   decompression of corrupt data, forged ciphertext, VERIFY mismatch,
 *   memory limits) therefore fails before anything changed. Only StorageFS
 *   errors of the mutations themselves (ENOSPC, EIO, a journal too full
 *   for the op) can fail during apply; those are rolled back with the
 *   undo log:
 *     write/append  old bytes of the overwritten range + old size
 *                   -> write them back, truncate to the old size
 *     truncate      old size + the cut tail bytes -> extend and rewrite
 *     create        -> unlink the new name
 *     unlink        the op holds a reference on the inode -> link back
 *   Unlinks are applied after every other mutation (StorageFS cannot link
 *   back an inode whose last name is gone, so only another unlink may
 *   fail after one; moving them is invisible, the op's own OPENs already
 *   saw the name removed and its handles keep the inode).
 *   Space: before the transaction, an upper bound of the blocks and
 *   inodes the mutations and their undo may need is checked against the
 *   free counts (-ENOSPC at the step that crosses it, nothing changed).
 *   An op that still hits ENOSPC (blocks freed by transactions not yet
 *   committed are not reusable) is undone, everything is committed once,
 *   and the op is applied again.
 *   FSYNC makes the op's transaction commit durably (or fsyncs the file
 *   when the op changed nothing).
 *
 * Crash consistency. StorageFS writes data in place (ordered mode) when a
 * write overwrites blocks that already exist, outside the journal. So
 * when an op has more than one mutation (or one overwrite spanning more
 * than one block), overwrites of bytes below a file's size at the start
 * of the op are done copy-on-write: the affected whole blocks are read,
 * merged with the new bytes, punched out (their blocks are freed in the
 * transaction, and StorageFS never reuses a block freed by an uncommitted
 * transaction) and written to newly allocated blocks, which ordered mode
 * makes reachable only by the op's own commit. A shrinking truncate to a
 * non-block boundary in such an op shadows the block holding the new end
 * the same way (a later extension would zero its tail in place). A crash
 * (SIGKILL of the device) before the commit therefore leaves the old
 * blocks and the old metadata; after it, the whole op. An op with a
 * single small overwrite writes in place (one block write is the unit the
 * media gives anyway).
 *
 * Transaction modes (FusionFS §4.4; wire.h enum wire_tx). An op runs in
 * the stronger of the device's default (`cisc up --tx`) and the mode it
 * asks for:
 *   macro    everything above: deferred mutations, one transaction.
 *   micro    (micro.c) steps run in order and every step that records
 *            mutations has them applied at once in a transaction of its
 *            own (apply.c fop_apply_step, the same undo and copy-on-write
 *            rules restricted to the step; a single in-place overwrite is
 *            data-journaled so that the step's commit carries it). A
 *            step's commit closes its handle: the step is whole in the
 *            journal's running transaction, ordered after the earlier
 *            steps. With an FSYNC step, the commit of the last step that
 *            may mutate is durable (it writes the running transaction and
 *            so every earlier step), as is a step that writes at least
 *            FOP_REDO_FLUSH_BYTES, and, in any op, a step that shrinks a
 *            file (apply.c shrinks()); when the last committed nothing, the
 *            op's end commits durably (apply.c flush_steps): one durable
 *            commit per op as in macro, not one per step (docs/FORMAT.md
 *            "MicroTx"). The journal commits transactions in order, so
 *            after a crash the op's committed steps are a prefix of its
 *            steps. A failing step is undone and
 *            reports its -errno (fop_fail_one); a later step whose input,
 *            second input or file is a failed or cancelled step reports
 *            -ECANCELED; the others run. After a step commits, its file's
 *            base size is the committed size (later copy-on-write and
 *            reads go by it; reads still overlay the op's mutations, which
 *            is idempotent over committed ones).
 *   autorec  micro, plus the operational log (oplog.h): the op is logged
 *            durably before it starts (its flush: the steps' commits are
 *            not flushed but for large ones, recovery redoes a lost one), each step's
 *            record commits with the step, the log goes when the op ends; fop_recover()
 *            finishes logged ops at start-up (v->replay: committed steps
 *            take their logged result and output instead of running).
 *            Steps it cannot replay are refused (-EOPNOTSUPP, nothing
 *            changed; never a silent downgrade): oplog.h says which.
 * Crash points (crash.h) fire around each step's commit: in macro every
 * step but the last mutating one fires its points after it executed, and
 * that one around the op's commit.
 *
 * Isolation. Before executing, the op takes the engine's striped inode
 * locks of every file it touches, in ascending stripe order: exclusive for
 * files it mutates, shared for files it only reads; RISC data ops (read,
 * write, truncate, fallocate) take the same stripes shared (appends and
 * truncates exclusive), so no other client observes an op's intermediate
 * state, and read-modify-write in one op is atomic.
 *
 * Limits (documented behaviour, not bugs):
 *   - A truncate that cuts more than the op's memory limit of bytes fails
 *     with -EFBIG before changing anything (its undo would not fit).
 *   - Undo needs journal room: if the journal fills up during apply so
 *     that the undo itself cannot run, the op fails with the status of the
 *     undo error and the file may keep part of the op (logged to stderr).
 *     StorageFS's sfs_txn_abort would remove this case.
 *   - A file created by the op is locked only by its name's absence: a
 *     concurrent creator of the same name makes the op fail with -EAGAIN.
 *   - On failure, OUT_ARENA ranges of steps that ran may hold their output.
 *
 * Invariants:
 *   1. No step runs before every step's permission and file check passed.
 *   2. Macro: an op either applies all of its mutations or none of them
 *      (the journal commits one transaction with all or with the net
 *      nothing). Micro: each step applies all of its mutations or none,
 *      in step order.
 *   3. res[i].ret is the step's result (>= 0) or -errno. Macro: steps
 *      after the failing one report -ECANCELED; exactly one step fails
 *      when the op fails after decode. Micro: a step reports -ECANCELED
 *      exactly when one of the steps it references failed or was
 *      cancelled; status is the first failure.
 *   4. Device memory used by an op never exceeds the capacity computed at
 *      decode, and is reserved from the device budget before execution.
 *   5. Lock order: device memory reservation (no lock held while waiting)
 *      -> inode stripes in ascending order -> StorageFS transaction.
 */
#ifndef CISC_DEVICE_FUSED_H
#define CISC_DEVICE_FUSED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/engine/engine.h"
#include "proto/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ckey_table;

/* The client's data arena as mapped in the device. */
struct eng_arena {
    uint8_t *base;
    uint64_t size;
};

/* Pointer to arena bytes [off, off + len), or NULL when any of it lies
 * outside the arena (overflow-safe). len 0 is valid at any off <= size. */
void *fop_arena_at(const struct eng_arena *a, uint64_t off, uint64_t len);

/* Per-op limits, from the device memory budget (eng_fop_limits). */
struct fop_limits {
    uint64_t step_bytes;       /* one step's output (and READ length) */
    uint64_t op_bytes;         /* all of one op's device buffers */
};

#define FOP_STEP_BYTES_MAX (64ull << 20)
#define FOP_OP_BYTES_MAX   (256ull << 20)

/* One validated step. Step references are indices < the step's own. */
struct fop_step {
    uint8_t kind, flags;
    uint16_t in, in2, file;    /* step indices or WIRE_NO_STEP */
    uint64_t fh;               /* F_FH: session handle */
    uint64_t off, len;
    const uint8_t *src;        /* arena operand: input, second input, patch */
    uint64_t src_len;
    char *path;                /* OPEN/UNLINK: private NUL-terminated copy */
    uint32_t key_id;
    uint32_t oflags, mode;     /* OPEN: O_* and create mode; FSYNC: datasync */
    uint8_t *dst;              /* F_OUT_ARENA destination (validated) */
    uint64_t dst_cap;
    uint64_t arg[4];
    uint64_t cap;              /* device buffer for the output */
    uint64_t stream;           /* BPF: stream token (device/engine/fused/bpfstep.h), 0 = none */
    uint32_t block_out;        /* BPF: output bytes per invocation, 0 = 2 * block size */
};

#define OPLOG_NAME_MAX 32   /* an operational log's file name, with its NUL */
#define FOP_REC_OUT_MAX 512u /* an F_OUT_ARENA output a recovery record keeps */

/* Recovery (oplog_recover.c): what an interrupted autorec op's log says. */
struct fop_replay {
    uint64_t oplog;                      /* the log file's inode and size */
    uint64_t oplog_size;
    char name[OPLOG_NAME_MAX];
    uint64_t done;                       /* bit i: step i's record committed */
    int64_t ret[WIRE_MAX_STEPS];         /* its result */
    const uint8_t *out[WIRE_MAX_STEPS];  /* its logged output, or NULL */
    uint64_t out_len[WIRE_MAX_STEPS];
    const uint8_t *prog_id[WIRE_MAX_STEPS]; /* BPF: the program's logged identity
                                               (sha256, name, func; oplog.h) */
    uint64_t opnd_off[WIRE_MAX_STEPS];   /* its operand in whole log blocks: where
                                            (0: inline, or none); oplog.h "Adoption" */
    uint32_t opnd_crc[WIRE_MAX_STEPS];   /* and that operand's CRC-32C */
};

struct eng_cisc {
    unsigned n;
    struct fop_step st[WIRE_MAX_STEPS];
    struct wire_step_res res[WIRE_MAX_STEPS];
    int64_t status;            /* 0 or the failing step's -errno */
    unsigned ran;              /* steps that completed (n on success) */
    unsigned bad_step;         /* the failing step when status < 0 */
    uint64_t mem;              /* device bytes the op's buffers need */
    struct ckey_table *keys;   /* the session's key registry, or NULL */
    uint8_t tx;                /* enum wire_tx the client asked for (WIRE_TX_DEFAULT) */
    const struct fop_replay *replay;   /* recovery of a logged op, else NULL */
};

/* Limits for vectors on engine e (from its device memory budget). */
void eng_fop_limits(struct engine *e, struct fop_limits *out);

/* Decodes and validates n steps (already in private memory) into v,
 * resolving arena operands against a. keys is the session's registry.
 * On failure v->status, v->bad_step and v->res (the bad step's errno,
 * -ECANCELED for the others) describe it. Call fop_release() in every
 * case. Returns 0 or -errno: -EINVAL (bad kind, flags, reserved field,
 * reference, path), -EFAULT (range outside the arena), -E2BIG (memory
 * limits). */
int fop_decode(struct eng_cisc *v, const struct wire_step *steps, unsigned n,
                const struct eng_arena *a, const struct fop_limits *lim,
                struct ckey_table *keys);

/* Frees what decode allocated (paths). v stays readable (results). */
void fop_release(struct eng_cisc *v);

/* In-process entry point (tests, the CLI): runs a decoded vector as
 * ENG_OP_CISC with credentials cred and waits. Returns v->status. */
int64_t fop_exec(struct engine *e, const struct eng_cred *cred, struct eng_cisc *v);

/* Gives back the device memory command c reserved (c->mem_held; eop_cisc
 * leaves it held for the rest of c's time on its core). */
void fop_mem_done(struct engine *e, struct eng_cmd *c);

/* Fills every result with ret (-ECANCELED) and out_len 0. */
void fop_res_fill(struct eng_cisc *v, int64_t ret);

/* Marks step i failed with err: res[i] = err, later steps -ECANCELED,
 * status = err. */
void fop_fail(struct eng_cisc *v, unsigned i, int64_t err);

/* Micro: marks step i failed with err and leaves later steps alone; the
 * op's status (and bad_step) is the first failure's. */
void fop_fail_one(struct eng_cisc *v, unsigned i, int64_t err);

#ifdef __cplusplus
}
#endif

#endif
