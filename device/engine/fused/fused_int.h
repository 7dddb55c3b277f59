/*
 * device/engine/fused/fused_int.h - one fused op's execution state, shared by the
 * phases in prep.c (check), exec.c (execute, fan-out, the
 * ENG_OP_CISC entry) and apply.c (apply with undo). Not for other
 * modules; cisc.h describes the design.
 *
 * Invariants:
 *   1. files[] holds one entry per inode the op touches (an OPEN, UNLINK
 *      or session handle naming the same inode shares it) and one per file
 *      the op creates; every entry with ino != 0 holds an sfs_iget
 *      reference until the op ends.
 *   2. muts[] lists the deferred mutations in step order; a file's
 *      virtual content is its base content with its muts applied in order.
 *   3. ns[] is the op's view of names it created or removed, consulted
 *      before StorageFS by OPEN and UNLINK.
 */
#ifndef CISC_DEVICE_FUSED_INT_H
#define CISC_DEVICE_FUSED_INT_H

#include "device/engine/fused/fused.h"
#include "device/engine/engine_int.h"

#define FOP_NOFILE 0xff
#define FOP_MAX_MUTS (2u * WIRE_MAX_STEPS)   /* OPEN may create and truncate */

struct cfile {
    uint64_t ino;               /* 0 until the op creates it */
    uint64_t parent;            /* create: directory */
    char name[SFS_NAME_MAX + 1];/* create: name */
    uint32_t cmode, cuid, cgid; /* create: mode and owner */
    bool create, excl;          /* created by this op; with O_EXCL */
    bool create_mut;            /* its MUT_CREATE is recorded */
    bool mutated;               /* a step changes its content */
    struct sfs_inode *ip;       /* its held inode (sfs_iget_ino), or NULL */
    bool fsync, datasync;       /* an FSYNC step names it */
    uint64_t base_size;         /* size when the op locked it */
    uint64_t vsize;             /* virtual size while executing */
};

enum fop_mut_kind { MUT_CREATE, MUT_WRITE, MUT_TRUNC, MUT_UNLINK, MUT_CLOSE_FH };

struct fop_mut {
    uint8_t kind;               /* enum fop_mut_kind */
    uint8_t step;               /* the step it belongs to */
    uint8_t file;               /* index in files[] */
    uint64_t off;               /* WRITE: offset; TRUNC: new size */
    const uint8_t *data;        /* WRITE: bytes (device buffer or arena) */
    uint64_t len;               /* WRITE: bytes; TRUNC: virtual size before it */
    uint64_t parent;            /* UNLINK: directory and name */
    const char *name;
    uint64_t fh;                /* CLOSE_FH: session handle */
};

struct fop_ns {
    uint64_t parent;
    const char *name;
    uint8_t file;               /* FOP_NOFILE: removed by the op */
};

struct fop_run {
    struct engine *e;
    struct eng_cred *cred;
    struct hdl_table *hdl;              /* the session's handles (or the engine's) */
    struct eng_cmd *cmd;                /* the CISC command (change records) */
    struct eng_cisc *v;
    struct fop_limits lim;
    struct cfile files[WIRE_MAX_STEPS];
    unsigned nfiles;
    uint8_t sfile[WIRE_MAX_STEPS];      /* step -> files[] index */
    uint32_t sacc[WIRE_MAX_STEPS];      /* step -> O_* of the handle it uses */
    bool closed[WIRE_MAX_STEPS];        /* OPEN step j closed by a CLOSE */
    uint64_t closed_fh[WIRE_MAX_STEPS]; /* session handles closed by the op */
    unsigned nclosed_fh;
    char uname[WIRE_MAX_STEPS][SFS_NAME_MAX + 1];   /* UNLINK names */
    uint64_t uparent[WIRE_MAX_STEPS];
    struct fop_ns ns[WIRE_MAX_STEPS];
    unsigned nns;
    struct fop_mut muts[FOP_MAX_MUTS];
    unsigned nmuts;
    uint8_t *buf[WIRE_MAX_STEPS];       /* output buffers (device memory) */
    uint64_t bufsize[WIRE_MAX_STEPS];   /* their real sizes (fop_buf_get) */
    bool view[WIRE_MAX_STEPS];          /* buf is a READ's view of the media, not ours
                                           (exec.c "Views") */
    uint64_t olen[WIRE_MAX_STEPS];
    bool fsync;                         /* some step asked for durability */
    struct sfs_inode *dead[WIRE_MAX_STEPS]; /* references of undone creates, dropped at the end */
    unsigned ndead;
    unsigned tx;                        /* the op's mode: enum wire_tx, >= MACRO */
    unsigned commit_step;               /* macro: the step whose commit is the op's */
    bool applied;                       /* micro: some step's mutations committed */
    bool unsynced;                      /* micro: a step committed since the last flush */
    bool failed[WIRE_MAX_STEPS];        /* micro: step failed or was cancelled */
    uint64_t oplog, oplog_size;         /* autorec: the op's log file (oplog.h), 0 = none */
    uint64_t pre;                       /* autorec: steps run before the log (bit i) */
    uint64_t oplog_reserved;            /* autorec: log space it holds (oplog.h "Space") */
    uint64_t recorded;                  /* autorec: steps whose record is in the log (bit i) */
    uint64_t opnd_off[WIRE_MAX_STEPS];  /* autorec: step i's operand in whole log blocks:
                                           its log offset (0: none; oplog.h "Adoption") */
    uint32_t opnd_crc[WIRE_MAX_STEPS];  /* and its CRC-32C */
    char oplog_name[OPLOG_NAME_MAX];
    struct progs_prog *prog[WIRE_MAX_STEPS];     /* BPF steps' programs (bpfstep.h) */
    struct progs_stream *stream[WIRE_MAX_STEPS]; /* and their claimed streams */
    /* The floor on the op's work (engine.h, ENG_OP_TIME_MS_DEFAULT). */
    uint64_t deadline_ns;               /* now_ns() past which it fails with -ETIME */
    uint64_t insns;                     /* its bpf steps' instructions so far (atomic) */
};

/* Phase 2: resolves files and checks every step's permission; on failure
 * marks the failing step (fop_fail) and returns its -errno. */
int fop_prepare(struct fop_run *x);

/* Drops the references prepare took. */
void fop_unprepare(struct fop_run *x);

/* Reads [off, off + len) of file f as the op sees it now (base content
 * plus its pending mutations). Returns bytes read or -errno. */
int64_t fop_vread(struct fop_run *x, unsigned f, uint64_t off, uint8_t *out, uint64_t len);

/* ---- device memory (mem.c) ---- */

/* Reserves n bytes of the device memory budget for an op, waiting while
 * running ops hold too much (idle spare buffers are dropped first). */
void fop_mem_reserve(struct engine *e, uint64_t n);

/* Returns what fop_mem_reserve(e, n) took. */
void fop_mem_release(struct engine *e, uint64_t n);

/* A step buffer of at least cap bytes (at least 1), contents undefined:
 * an idle one kept from an earlier op when one fits, else a new one.
 * *size gets the size to give fop_buf_put (a large one's real size).
 * Returns NULL when out of memory. */
uint8_t *fop_buf_get(struct engine *e, uint64_t cap, uint64_t *size);

/* Gives back a buffer of fop_buf_get (NULL is fine): kept for reuse
 * when large and within the spare limits, else freed. */
void fop_buf_put(struct engine *e, uint8_t *p, uint64_t size);

/* Phase 4: macro: applies the deferred mutations as one transaction; on
 * failure undoes them and marks the failing step. Micro (the steps
 * committed one by one, fop_apply_step): what is left after the last
 * step (durability of an op that changed nothing, session handles).
 * Returns 0 or -errno. */
int fop_apply(struct fop_run *x);

/* Micro: applies step i's mutations, muts[k0, nmuts), in a transaction
 * of their own and commits it (durably when the op has an FSYNC step);
 * *applied tells whether there was anything to commit. On failure the
 * step's changes are undone and the -errno is returned (the caller marks
 * the step). */
int fop_apply_step(struct fop_run *x, unsigned i, unsigned k0, bool *applied);

/* The engine's floor between steps (exec.c; engine.h): -ECANCELED once
 * the device is stopping, -ETIME past the op's device-time deadline,
 * else 0. Every execute loop (macro and micro) checks it before a step. */
int fop_op_bound(const struct fop_run *x);

/* ---- MicroTx and crash points (micro.c) ---- */

/* Runs step i as the execute phase does and records its result in
 * v->res[i] (exec.c). */
void fop_step_run(struct fop_run *x, unsigned i);

/* Phase 3 of a micro or autorec op: every step in order, each mutating
 * step committed on its own; returns 0 or the first failure's -errno
 * (every step's result is in v->res). */
int fop_execute_micro(struct fop_run *x);

/* Autorec, before the op's first step: a replayed op adopts its log;
 * a new one is checked (oplog.h: what autorec covers) and logged. On
 * failure the op is marked failed. Returns 0 or -errno. */
int fop_autorec_begin(struct fop_run *x);

/* Whether step s may change a file (OPEN with O_CREAT or O_TRUNC,
 * WRITE, APPEND, TRUNCATE, UNLINK). */
bool fop_step_may_mutate(const struct fop_step *s);

/* The step whose commit is a macro op's one commit: its last step that
 * may change a file (or its last step). */
unsigned fop_commit_step(const struct eng_cisc *v);

/* The crash points of step i when it commits nothing of its own (a step
 * that changes nothing, or any step of a macro op but its commit step). */
void fop_crash_step(const struct fop_run *x, unsigned i);

/* The "after-commit" crash point of step i (crash.h). Micro, armed there
 * and steps not flushed yet: the journal commits its running transaction
 * first (fused.h "Transaction modes": the state a power cut just after a
 * group commit that closed with step i leaves). */
void fop_crash_after(const struct fop_run *x, unsigned i);

#endif
