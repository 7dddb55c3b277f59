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
 * Programs are named by a name (unique on the device: 1 to 63 letters,
 * digits, '_', '.', '-', not only digits) or by their id; the functions
 * below that take `prog` accept either, a string of digits being an id.
 *
 * Errors: the usual negative errno, -ENOTCONN when the device went away.
 */
#ifndef CISC_PROGS_H
#define CISC_PROGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef CISC_API
#define CISC_API __attribute__((visibility("default")))
#endif

struct cisc_session;

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

#ifdef __cplusplus
}
#endif

#endif
