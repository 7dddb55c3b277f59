/*
 * device/progs/progs.h - the device's eBPF program registry: programs users load
 * (verified once, stored in the image, reloaded and re-verified at every
 * start), their ownership and statistics, and running them as the `bpf`
 * step of CISC vectors (one invocation per block, bpf/blocks.h).
 *
 * Loading. A client sends an object (clang -target bpf) with a program
 * name, the function to take from the object and a shared flag. The
 * registry parses it (bpf/loader.h), verifies the function (bpf/verifier.h)
 * and, only if it verifies and the device's limits allow, stores the
 * object in the hidden system directory (device/engine/sysdir.h,
 * /.cisc-system/progs/<id>) and adds the program to the table. The
 * verifier's message comes back on rejection. Ids are never reused (the
 * next id is kept in the image).
 *
 * Ownership (DESIGN.md "Security model"). The owner is the uid that loaded
 * the program (SO_PEERCRED). The owner, root, and, when the program was
 * loaded shared, everyone may run it; only the owner or root may unload
 * it. Everyone may list and show a program's description (name, owner,
 * size, hash, counters), as ps shows other users' processes; only the
 * owner and root see its trace messages (they carry the runs' data), and
 * no door gives a stored object back (the system directory is hidden).
 * A program runs with the credentials of the client whose command
 * invoked it; it can touch only the buffers its step gives it.
 *
 * Names are per owner: alice and bob may each have a "grep". A client
 * names a program "OWNER/NAME" (OWNER a user name or uid), or just NAME:
 * its own program of that name, else the one program called so. Several
 * such, none of them the client's, is -ENOENT: name the owner.
 *
 * Persistence. Each program is one file, a 256-byte record header
 * followed by the object's bytes (docs/FORMAT.md, "Program records"); the
 * header has a CRC-32C and the object a SHA-256. At start-up every record
 * is read and its program re-verified with the running verifier; a record
 * that is damaged, or a program that no longer verifies (a stricter
 * verifier after an upgrade) or no longer fits the device's limits, stays
 * in the table marked PROGS_F_BROKEN with the reason, shown by list/show
 * and written to the device log, and is never run; its owner unloads it.
 *
 * Limits (set at `cisc up`): number of programs, total instructions of
 * all programs, instruction budget per invocation (per block); per user
 * (root has none): programs and bytes of objects. Users together may
 * fill seven eighths of the device's programs and instructions (an
 * eighth, at least one program, is root's), so none of them can lock root
 * out. Per-user quotas apply when loading: a
 * restart with lower ones keeps what users already hold.
 *
 * Streams. A fused op holds a bounded amount of data, so a whole large
 * file is processed as a sequence of ops (`cisc run`). A stream carries a
 * program's state area (cisc_state()) and its block count from one op to
 * the next inside the device, so the program sees one continuous input:
 * CISC_F_FIRST_BLOCK only on the stream's first block, CISC_F_LAST_BLOCK
 * only on the final block of the step that says it is the end. Streams
 * belong to the client connection that opened them (freed when it ends)
 * and to its uid.
 *
 * Invariants:
 *   1. Only verified programs run; a program is immutable once in the
 *      table, and is freed only when the table and every running step
 *      have dropped their references (unload while running is safe).
 *   2. Nothing is stored unless it verified and fit the limits; a stored
 *      record is complete (written to a temporary name, synced, renamed).
 *   3. Counters are per program, updated with relaxed atomics: reading
 *      them never blocks a device core.
 *   4. Lock order: store_lock (control-thread operations) -> lock (the
 *      table) -> a program's trace lock. Device cores take only lock and
 *      trace locks, briefly.
 */
#ifndef CISC_DEVICE_PROGS_H
#define CISC_DEVICE_PROGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/progs_wire.h"


#ifdef __cplusplus
extern "C" {
#endif

#define PROGS_DEFAULT_MAX       64u           /* --max-progs */
#define PROGS_DEFAULT_MAX_INSNS 1000000ull    /* --max-prog-insns (all programs) */
#define PROGS_DEFAULT_BUDGET    1000000ull    /* --prog-budget (per invocation) */
#define PROGS_DEFAULT_MAX_USER  16u           /* --max-progs-per-user */
#define PROGS_DEFAULT_BYTES_USER (16ull << 20) /* --max-prog-bytes-per-user */
#define PROGS_ANY_OWNER         UINT32_MAX    /* a name without "OWNER/" */
#define PROGS_STREAMS_MAX       1024u         /* open streams on a device */
#define PROGS_TRACE_KEEP        8u            /* last trace messages kept per program */


struct sfs;
struct progs;
struct progs_prog;     /* a reference to one program */
struct progs_stream;   /* state carried between the ops of one stream */

struct progs_limits {
    uint32_t max_progs;        /* 0 = PROGS_DEFAULT_MAX */
    uint64_t max_insns;        /* 0 = PROGS_DEFAULT_MAX_INSNS */
    uint64_t budget;           /* 0 = PROGS_DEFAULT_BUDGET */
    uint32_t max_progs_user;   /* programs one user (not root) may hold; 0 = default */
    uint64_t max_bytes_user;   /* their objects' bytes; 0 = PROGS_DEFAULT_BYTES_USER */
    bool interp;               /* --bpf-exec interp: no JIT, run the interpreter */
};

/* Device log lines (load, unload, broken programs, traces). */
typedef void (*progs_log_fn)(void *arg, const char *line);

struct progs_config {
    struct progs_limits lim;
    bool trace;                /* also log every program trace message */
    bool read_only;            /* a read-only device: the store is only read,
                                  load and unload fail with -EROFS */
    progs_log_fn log;          /* NULL: stderr */
    void *log_arg;
};

/* ---- the registry -------------------------------------------------- */

/* Opens the registry of fs (mounted; not owned): creates the system
 * directory if needed, reads and re-verifies every stored program.
 * Damaged records and programs that no longer verify are kept as broken
 * and logged; only an I/O error of the file system fails the open (then
 * err says why). Returns 0 and sets *out, or -errno. */
int progs_open(struct sfs *fs, const struct progs_config *cfg, struct progs **out,
               char *err, size_t errlen);

/* Reads fs's program store as progs_open will (directory, next id, every
 * record) and writes nothing, so that a device can refuse an image whose
 * store it could not open before its first write. A store not created
 * yet passes. Returns 0 or -errno (then err says why). */
int progs_check(struct sfs *fs, char *err, size_t errlen);

/* Frees the registry and the streams still open. Every step must have
 * finished (returned its references). NULL is a no-op. */
void progs_close(struct progs *p);

/* Logs again every program that is not run, with why (the device log
 * starts after the registry was opened). */
void progs_log_broken(struct progs *p);

/* The limits in force (defaults filled in). */
void progs_limits_get(const struct progs *p, struct progs_limits *out);

/* Totals for the device status: programs, broken ones, instructions. */
void progs_totals(struct progs *p, uint32_t *count, uint32_t *broken, uint64_t *insns);

struct progs_load_req {
    const void *obj;           /* the object's bytes (copied) */
    size_t size;
    const char *name;          /* program name; NULL or "" = the function's */
    const char *func;          /* function in the object; NULL = the only one */
    bool shared;
    uint32_t uid;              /* the loading client (owner) */
};

/* Loads, verifies, stores and registers a program; fills *info.
 * On failure writes a message into msg (the loader's or verifier's full
 * text, or which limit) and returns -errno: the loader's and verifier's
 * codes (docs/BPF.md "Error codes"), -EINVAL (bad name, several programs
 * and no func), -EEXIST (the owner has a program of that name), -EFBIG
 * (object over PROGS_OBJ_MAX), -EDQUOT (a device limit or the owner's
 * quota reached), -EROFS (a read-only
 * device), or a StorageFS error. */
int progs_load(struct progs *p, const struct progs_load_req *rq, struct progs_info *info,
               char *msg, size_t msglen);

/* Removes program `id` (or, when id is 0, the one uid names by name) for uid:
 * -ENOENT (no such program), -EPERM (uid is neither owner nor root),
 * -EROFS (a read-only device).
 * Steps running it finish first-come; new steps fail with -ENOENT. */
int progs_unload(struct progs *p, uint32_t uid, uint32_t id, const char *name);

/* Calls fn for each program whose id >= from, in id order, until fn
 * returns nonzero. Returns 0 or fn's value. */
int progs_list(struct progs *p, uint32_t from,
               int (*fn)(void *arg, const struct progs_info *info), void *arg);

/* Fills *info for program id (or, when id is 0, the one uid names by name:
 * see "Names") and writes its status text (why it is broken; for its
 * owner and root its recent trace messages) into text. Returns 0 or
 * -ENOENT. */
int progs_show(struct progs *p, uint32_t uid, uint32_t id, const char *name,
               struct progs_info *info, char *text, size_t textlen);

/* A program name as a client writes it, split: owner (a uid, or
 * PROGS_ANY_OWNER without "OWNER/") and the name proper (points into s). */
struct progs_name {
    uint32_t owner;
    const char *name;
};

/* Splits s ("OWNER/NAME" or "NAME"; OWNER a user name or uid). Returns 0,
 * or -ENOENT for an owner that is no user. */
int progs_name_parse(const char *s, struct progs_name *out);

/* ---- running (the bpf step) ----------------------------------------- */

/* Takes a reference to program id for a client with uid: -ENOENT (no such
 * program), -EACCES (not the owner, not shared, uid not 0), -ENOEXEC (the
 * program is broken). Release with progs_put(). */
int progs_get(struct progs *p, uint32_t uid, uint32_t id, struct progs_prog **out);

/* Drops a reference from progs_get(). NULL is a no-op. */
void progs_put(struct progs_prog *pp);

/* Output capacity a bpf step needs for an input of at most in_cap bytes:
 * blocks(in_cap) * block_out, defaults resolved. Returns it, or -EINVAL
 * for a block size or block output out of range. */
int64_t progs_out_cap(uint64_t in_cap, uint32_t block_size, uint32_t block_out);

/* One bpf step. */
struct progs_run {
    const uint8_t *in;         /* input (the program sees copies of its blocks ... */
    bool in_place;             /* ... or, when in is device memory (possibly a
                                  view of the media: bpf/blocks.h inv. 1), the
                                  input itself) */
    size_t in_len;
    uint8_t *out;              /* the step's output buffer */
    size_t out_cap;
    uint64_t arg[4];           /* ctx->arg */
    uint64_t offset;           /* ctx->offset of in[0] */
    uint32_t block_size;       /* 0 = 4096 */
    uint32_t block_out;        /* per-invocation output; 0 = 2 * block_size */
    bool more;                 /* stream: more input follows in a later op */
    uint32_t uid;              /* the invoking client (traces, accounting) */
    /* Bounds on the whole step, checked after every block (0 / NULL:
     * none); the engine's floor (engine.h, ENG_STEP_BUDGETS). */
    uint64_t insns_max;        /* instructions summed over its blocks */
    uint64_t deadline_ns;      /* now_ns() (common/clock.h) past which it stops */
    const uint32_t *cancel;    /* non-zero: stop (read relaxed, any thread sets it) */
    /* results */
    size_t out_len;            /* bytes of output produced */
    uint64_t blocks, insns;    /* invocations made, instructions executed */
    uint64_t fail_block;       /* on failure: the block that failed */
};

/* Runs program pp over run->in in blocks, appending each block's output
 * to run->out. s (may be NULL) is a stream claimed with progs_stream_get:
 * its state and block count continue. Returns 0, or: the program's own
 * negative return value as is (it failed a block); -ETIME (a block
 * exhausted the instruction budget, or the step its insns_max or
 * deadline_ns); -ECANCELED (*cancel was set: checked after every block,
 * so the step stops within one block); -ERANGE (a block returned more than
 * its output buffer); -EOVERFLOW (the outputs exceed out_cap); -EINVAL
 * (bad block options, or a stream bound to another program); -EFAULT
 * (call depth); -ENOMEM. Thread-safe: any number of cores at once. */
int progs_run(struct progs_prog *pp, struct progs_stream *s, struct progs_run *run);

/* ---- streams -------------------------------------------------------- */

/* Opens a stream for a client (owner: an opaque key of its connection,
 * uid its user). Sets *token (random, never 0). Returns 0, -ENOSPC
 * (PROGS_STREAMS_MAX open) or -ENOMEM. */
int progs_stream_open(struct progs *p, const void *owner, uint32_t uid, uint64_t *token);

/* Closes a stream of owner. Returns 0 or -ENOENT. A stream in use by a
 * step is freed when the step ends. */
int progs_stream_close(struct progs *p, const void *owner, uint64_t token);

/* Closes every stream of owner (its connection ended). */
void progs_owner_gone(struct progs *p, const void *owner);

/* Claims stream token for one step of a client with uid: -ENOENT (none,
 * or another uid's), -EBUSY (another step holds it). Release with
 * progs_stream_put(). */
int progs_stream_get(struct progs *p, uint32_t uid, uint64_t token, struct progs_stream **out);

/* Releases a claimed stream. NULL is a no-op. */
void progs_stream_put(struct progs_stream *s);

/* ---- control requests ------------------------------------------------ */

struct ctl_req;

/* Handles a CTL_PROG_* request (payloads: proto/progs_wire.h) on the
 * control thread and replies to it. owner identifies the client's
 * connection (its streams end with it); uid comes from req->peer.
 * Returns 0. */
int progs_ctl_handle(struct progs *p, struct ctl_req *req, const void *owner);

#ifdef __cplusplus
}
#endif

#endif
