/*
 * device/engine/fused/fused_int.h - one fused op's execution state, shared by the
 * phases in cisc_prep.c (check), cisc_exec.c (execute, fan-out, the
 * ENG_OP_CISC entry) and cisc_apply.c (apply with undo). Not for other
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
#ifndef CISC_DEVICE_CISC_INT_H
#define CISC_DEVICE_CISC_INT_H

#include "device/engine/fused/fused.h"
#include "device/engine/engine_int.h"

#define CISC_NOFILE 0xff
#define CISC_MAX_MUTS (2u * WIRE_MAX_STEPS)   /* OPEN may create and truncate */

struct cfile {
    uint64_t ino;               /* 0 until the op creates it */
    uint64_t parent;            /* create: directory */
    char name[SFS_NAME_MAX + 1];/* create: name */
    uint32_t cmode, cuid, cgid; /* create: mode and owner */
    bool create, excl;          /* created by this op; with O_EXCL */
    bool create_mut;            /* its MUT_CREATE is recorded */
    bool mutated;               /* a step changes its content */
    bool ref;                   /* holds an sfs_iget reference */
    bool fsync, datasync;       /* an FSYNC step names it */
    uint64_t base_size;         /* size when the op locked it */
    uint64_t vsize;             /* virtual size while executing */
};

enum cisc_mut_kind { MUT_CREATE, MUT_WRITE, MUT_TRUNC, MUT_UNLINK, MUT_CLOSE_FH };

struct cisc_mut {
    uint8_t kind;               /* enum cisc_mut_kind */
    uint8_t step;               /* the step it belongs to */
    uint8_t file;               /* index in files[] */
    uint64_t off;               /* WRITE: offset; TRUNC: new size */
    const uint8_t *data;        /* WRITE: bytes (device buffer or arena) */
    uint64_t len;               /* WRITE: bytes; TRUNC: virtual size before it */
    uint64_t parent;            /* UNLINK: directory and name */
    const char *name;
    uint64_t fh;                /* CLOSE_FH: session handle */
};

struct cisc_ns {
    uint64_t parent;
    const char *name;
    uint8_t file;               /* CISC_NOFILE: removed by the op */
};

struct cisc_run {
    struct engine *e;
    struct eng_cred *cred;
    struct hdl_table *hdl;              /* the session's handles (or the engine's) */
    struct eng_cmd *cmd;                /* the CISC command (change records) */
    struct eng_cisc *v;
    struct cisc_limits lim;
    struct cfile files[WIRE_MAX_STEPS];
    unsigned nfiles;
    uint8_t sfile[WIRE_MAX_STEPS];      /* step -> files[] index */
    uint32_t sacc[WIRE_MAX_STEPS];      /* step -> O_* of the handle it uses */
    bool closed[WIRE_MAX_STEPS];        /* OPEN step j closed by a CLOSE */
    uint64_t closed_fh[WIRE_MAX_STEPS]; /* session handles closed by the op */
    unsigned nclosed_fh;
    char uname[WIRE_MAX_STEPS][SFS_NAME_MAX + 1];   /* UNLINK names */
    uint64_t uparent[WIRE_MAX_STEPS];
    struct cisc_ns ns[WIRE_MAX_STEPS];
    unsigned nns;
    struct cisc_mut muts[CISC_MAX_MUTS];
    unsigned nmuts;
    uint8_t *buf[WIRE_MAX_STEPS];       /* output buffers (device memory) */
    uint64_t bufsize[WIRE_MAX_STEPS];   /* their real sizes (cisc_buf_get) */
    uint64_t olen[WIRE_MAX_STEPS];
    bool fsync;                         /* some step asked for durability */
    uint64_t dead[WIRE_MAX_STEPS];      /* references of undone creates, dropped at the end */
    unsigned ndead;
    struct progs_prog *prog[WIRE_MAX_STEPS];     /* BPF steps' programs (cisc_bpf.h) */
    struct progs_stream *stream[WIRE_MAX_STEPS]; /* and their claimed streams */
};

/* Phase 2: resolves files and checks every step's permission; on failure
 * marks the failing step (cisc_fail) and returns its -errno. */
int cisc_prepare(struct cisc_run *x);

/* Drops the references prepare took. */
void cisc_unprepare(struct cisc_run *x);

/* Reads [off, off + len) of file f as the op sees it now (base content
 * plus its pending mutations). Returns bytes read or -errno. */
int64_t cisc_vread(struct cisc_run *x, unsigned f, uint64_t off, uint8_t *out, uint64_t len);

/* ---- device memory (cisc_mem.c) ---- */

/* Reserves n bytes of the device memory budget for an op, waiting while
 * running ops hold too much (idle spare buffers are dropped first). */
void cisc_mem_reserve(struct engine *e, uint64_t n);

/* Returns what cisc_mem_reserve(e, n) took. */
void cisc_mem_release(struct engine *e, uint64_t n);

/* A step buffer of at least cap bytes (at least 1), contents undefined:
 * an idle one kept from an earlier op when one fits, else a new one.
 * *size gets its real size, for cisc_buf_put. Returns NULL when out of
 * memory. */
uint8_t *cisc_buf_get(struct engine *e, uint64_t cap, uint64_t *size);

/* Gives back a buffer of cisc_buf_get (NULL is fine): kept for reuse
 * when large and within the spare limits, else freed. */
void cisc_buf_put(struct engine *e, uint8_t *p, uint64_t size);

/* Phase 4: applies the deferred mutations; on failure undoes them and
 * marks the failing step. Returns 0 or -errno. */
int cisc_apply(struct cisc_run *x);

#endif
