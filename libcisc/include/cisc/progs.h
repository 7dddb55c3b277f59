/*
 * cisc/progs.h - eBPF programs in the device: load, list, show, unload,
 * and streams (a program's state carried across fused operations).
 *
 * A program is C compiled with `clang -O2 -g -target bpf` against
 * <cisc_bpf.h> (docs/BPF.md). Loading sends the object to the device,
 * which verifies it and keeps it in its image, so it survives restarts;
 * the session's uid (from the kernel) becomes its owner. The owner and
 * root may use it, everyone may when it was loaded shared; only the owner
 * or root may unload it. A fused operation runs it as a step (see
 * cisc_vec_bpf in <cisc/fused.h>).
 *
 * Programs are named by a name (unique per owner: 1 to 63 letters,
 * digits, '_', '.', '-', not only digits) or by their id; the functions
 * below that take `prog` accept either, a string of digits being an id.
 * "OWNER/NAME" (a user name or uid) names anyone's program; a plain NAME
 * is the caller's own, else the one program of that name (-ENOENT when
 * several owners have one and the caller does not). Per-user quotas:
 * -EDQUOT (cisc up --max-progs-per-user, --max-prog-bytes-per-user).
 *
 * Errors: the usual negative errno, -ENOTCONN when the device went away.
 */
#ifndef CISC_PROGS_H
#define CISC_PROGS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef CISC_API
#define CISC_API __attribute__((visibility("default")))
#endif

struct cisc_session;
struct cisc_queue;

#define CISC_PROG_NAME_MAX 64      /* with the NUL */
#define CISC_PROG_SHARED   (1u << 0)
#define CISC_PROG_BROKEN   (1u << 1)   /* stored, but does not verify: never runs */

struct cisc_prog_info {
    uint32_t id;
    uint32_t owner;                /* uid that loaded it */
    uint32_t flags;                /* CISC_PROG_* */
    uint32_t insns;                /* instructions (0 when broken) */
    uint64_t load_time_ns;         /* ns since the epoch */
    uint64_t runs;                 /* steps that ran it */
    uint64_t invocations;          /* program invocations (one per block) */
    uint64_t insns_run;            /* instructions executed */
    uint64_t budget_hits;          /* invocations stopped by the budget */
    uint64_t errors;               /* steps failed by the program */
    uint64_t bytes_in, bytes_out;
    uint32_t obj_size;             /* bytes of the object */
    uint8_t sha256[32];            /* of the object */
    char name[CISC_PROG_NAME_MAX];
    char func[CISC_PROG_NAME_MAX]; /* the function taken from the object */
};

struct cisc_prog_load_opts {
    const char *name;              /* NULL: the function's name */
    const char *func;              /* function in the object; NULL: the only one */
    int shared;                    /* nonzero: anyone may run it */
};

/* Loads the object obj[0..size) (copied). On success fills *info (may be
 * NULL). On failure msg (may be NULL) gets the device's reason: for a
 * rejected program the verifier's full message (source line, reason,
 * instruction, registers). Returns 0 or -errno: -EACCES (rejected as
 * unsafe), -EINVAL (malformed object or program, bad name, several
 * programs and no func), -ENOENT (no such function), -EOPNOTSUPP (maps,
 * writable globals ...), -E2BIG (too large or too complex), -EEXIST (name
 * taken), -EDQUOT (the device's --max-progs or --max-prog-insns), -EFBIG
 * (object over 16 MiB). */
CISC_API int cisc_prog_load(struct cisc_session *s, const void *obj, size_t size,
                            const struct cisc_prog_load_opts *o, struct cisc_prog_info *info,
                            char *msg, size_t msglen);

/* Same, reading the object from a file of the host. */
CISC_API int cisc_prog_load_file(struct cisc_session *s, const char *path,
                                 const struct cisc_prog_load_opts *o,
                                 struct cisc_prog_info *info, char *msg, size_t msglen);

/* Calls fn for every program on the device, in id order, until fn
 * returns nonzero. Returns 0 or -errno. */
CISC_API int cisc_prog_list(struct cisc_session *s,
                            int (*fn)(void *arg, const struct cisc_prog_info *info),
                            void *arg);

/* Fills *info for prog (name or id). text (may be NULL) gets the
 * program's status lines: why it does not run, its last trace messages.
 * Returns 0 or -ENOENT. */
CISC_API int cisc_prog_show(struct cisc_session *s, const char *prog,
                            struct cisc_prog_info *info, char *text, size_t textlen);

/* The id of prog (name or id). Returns 0 or -ENOENT. */
CISC_API int cisc_prog_id(struct cisc_session *s, const char *prog, uint32_t *id);

/* Unloads prog (name or id). Returns 0, -ENOENT, or -EPERM (neither the
 * owner nor root). Steps already running it finish. */
CISC_API int cisc_prog_unload(struct cisc_session *s, const char *prog);

/* Opens a stream: a program's state area and block count, kept in the
 * device between fused operations of this session, so that bpf steps
 * naming it (cisc_vec_bpf with a stream) see one continuous input. It
 * belongs to the session (closed with it). Returns 0 and sets *stream, or
 * -ENOSPC (the device's limit of open streams). */
CISC_API int cisc_prog_stream_open(struct cisc_session *s, uint64_t *stream);

/* Closes a stream. Returns 0 or -ENOENT. */
CISC_API int cisc_prog_stream_close(struct cisc_session *s, uint64_t stream);

/* ---- a program as a step of a fused op (<cisc/fused.h>) ----------------- */

struct cisc_vec;
struct cisc_src;

struct cisc_bpf_opts {
    uint64_t arg[4];               /* ctx->arg[0..3] */
    uint32_t block_size;           /* bytes per invocation; 0 = 4096 (at most 64 MiB) */
    uint32_t block_out;            /* output buffer per invocation; 0 = 2 * block_size */
    uint64_t offset;               /* ctx->offset of the input's first byte (its file offset) */
    size_t out_cap;                /* the step's output capacity; 0 = every block's buffer */
    uint64_t stream;               /* from cisc_prog_stream_open: state carried across ops; 0 = none */
    int more;                      /* with a stream: the input goes on in a later op, so
                                      its last block is not CISC_F_LAST_BLOCK */
};

/* BPF step: runs program prog_id (cisc_prog_id) over `in` in blocks (one
 * invocation per block, docs/BPF.md "Blocks"); the blocks' outputs, in
 * order, are the step's output, an input for later steps. o may be NULL
 * (defaults). The step fails with the program's own negative return
 * value, -ETIME when an invocation exhausts the device's instruction
 * budget, -EOVERFLOW when the output exceeds out_cap; the op then
 * applies none of its changes. Returns the step index or -errno. */
CISC_API int cisc_vec_bpf(struct cisc_vec *v, uint32_t prog_id, struct cisc_src in,
                          const struct cisc_bpf_opts *o);

/* ---- running a program over a whole file ------------------------------ */

struct cisc_prog_run_opts {
    const char *prog;              /* name or id */
    uint64_t arg[4];               /* the program's ctx->arg[0..3] */
    uint32_t block_size;           /* bytes per invocation; 0 = 4096 */
    uint32_t block_out;            /* output buffer per invocation; 0 = 2 * block_size */
    uint64_t chunk;                /* input bytes per fused op; 0 = 4 MiB (whole blocks),
                                      less when the result comes back and the queue's
                                      arena is small */
    uint64_t out_cap;              /* output bytes one op may produce; 0 = chunk + 2 blocks' */
    const char *output;            /* file in the device for the result; NULL: sink */
    mode_t mode;                   /* output's mode when created; 0 = 0644 */
    /* With no output: receives the result, in order; nonzero stops the run
     * (its value is returned). */
    int (*sink)(void *arg, const void *buf, size_t len);
    void *sink_arg;
    /* NULL, or called after every fused op with the input bytes done so
     * far and the input's size (a progress display, e.g. `cisc run`'s). */
    void (*progress)(void *arg, uint64_t done, uint64_t total);
    void *progress_arg;
};

struct cisc_prog_run_stats {
    uint64_t in_bytes;             /* input bytes the device read */
    uint64_t out_bytes;            /* result bytes (written in the device, or sent to sink) */
    uint64_t ops;                  /* fused ops submitted */
    int failed_step;               /* on failure in an op: 0 read, 1 program, 2 write; else -1 */
    int failed_file;               /* on failure opening or replacing: 1 input, 2 output; else 0 */
};

/* Runs program o->prog over the file `input` (a path in the device) as
 * a read -> program -> write fused op per chunk, in the device: the data
 * never leaves it, only the result does when there is no output file. A
 * stream (cisc_prog_stream_open) carries the program's state from chunk
 * to chunk, so it sees one continuous input in blocks.
 * With o->output, the result goes to a new file beside it that replaces
 * o->output only when the whole run succeeded: a failing run leaves every
 * file as it was. st (may be NULL) gets what happened.
 * Returns 0 or -errno: the program's own negative return value, -ETIME
 * (an invocation exhausted its instruction budget), -EOVERFLOW (one op's
 * result exceeded out_cap: use a smaller chunk or a larger out_cap), the
 * errors of cisc_prog_id, cisc_open and the fused op, or sink's value. */
CISC_API int cisc_prog_run(struct cisc_queue *q, const char *input,
                           const struct cisc_prog_run_opts *o, struct cisc_prog_run_stats *st);

#ifdef __cplusplus
}
#endif

#endif
