/*
 * device/progs/progs_int.h - what the registry's files share (progs.c: the
 * table, ownership, limits; progs_store.c: records in the image;
 * progs_run.c: running, traces, streams). Not for use outside device/progs*.
 */
#ifndef CISC_DEVICE_PROGS_INT_H
#define CISC_DEVICE_PROGS_INT_H

#include "device/progs/progs.h"

#include <pthread.h>

#include "bpf/prog.h"
#include "device/storagefs/storagefs.h"

/* One program in the table. Immutable after insertion except the atomic
 * counters, the trace ring (under trace_lock) and `gone`. */
struct progs_prog {
    struct progs *reg;
    uint32_t refs;                 /* atomic; the table holds one */
    bool gone;                     /* unloaded (under reg->lock) */
    struct progs_info info;        /* counters in it are atomic */
    struct vm_prog *prog;          /* verified and prepared; NULL when broken */
    char *why;                     /* broken: the reason (malloc'd) */
    pthread_mutex_t trace_lock;
    char trace[PROGS_TRACE_KEEP][160];
    unsigned ntrace;               /* messages received (ring index) */
};

struct progs_stream {
    struct progs *reg;
    uint64_t token;
    const void *owner;
    uint32_t uid;
    uint32_t prog_id;              /* bound at first use; 0 = not yet */
    uint64_t next_block;           /* blocks run so far */
    bool busy;                     /* claimed by a step (under reg->lock) */
    bool closed;                   /* closed while busy: freed at put */
    struct progs_stream *next;
    uint8_t state[4096];           /* VM_STATE_SIZE, the program's cisc_state() */
};

struct progs {
    struct sfs *fs;
    uint64_t dir;                  /* /.cisc-system/progs */
    struct progs_limits lim;
    bool trace;
    bool read_only;                /* progs_config.read_only */
    progs_log_fn log;
    void *log_arg;
    pthread_mutex_t store_lock;    /* serialises load/unload (image writes) */
    pthread_mutex_t lock;          /* the table, streams, next_id */
    struct progs_prog **tab;       /* sorted by id */
    uint32_t n, cap;
    uint32_t next_id;
    uint64_t insns;                /* instructions of the programs that run */
    struct progs_stream *streams;
    uint32_t nstreams;
};

/* ---- progs.c -------------------------------------------------------- */

/* Logs one line (printf-style) through the registry's log. */
void progs_logf(struct progs *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses obj and verifies function func (NULL: the only program).
 * On success *out is a verified, prepared program, JIT-compiled when jit
 * and the host has a JIT; otherwise msg says why. Returns 0 or -errno
 * (see progs_load). */
int progs_build(const void *obj, size_t size, const char *func, bool jit,
                struct vm_prog **out, char *msg, size_t msglen);

/* Adds pp to the table (under lock; keeps the order by id). 0 or -ENOMEM. */
int progs_insert(struct progs *p, struct progs_prog *pp);

/* A new table entry (refs 1) for info; prog and why may be NULL. */
struct progs_prog *progs_entry_new(struct progs *p, const struct progs_info *info,
                                   struct vm_prog *prog, const char *why);

/* ---- progs_store.c ---------------------------------------------------- */

/* On-image record header (docs/FORMAT.md "Program records"). */
#define PROGS_REC_MAGIC   0x47525043u   /* "CPRG" */
#define PROGS_REC_VERSION 1u
#define PROGS_REC_HDR     256u

struct progs_rec {
    uint32_t id, owner, flags, obj_size;
    uint64_t load_time_ns;
    uint8_t sha256[32];
    char name[PROGS_NAME_MAX];
    char func[PROGS_NAME_MAX];
};

/* Encodes / decodes the header (PROGS_REC_HDR bytes). Decoding checks
 * magic, version, checksum, names and sizes: -EUCLEAN via CISC_CORRUPT. */
void progs_rec_encode(const struct progs_rec *r, uint8_t *buf);
int progs_rec_decode(const uint8_t *buf, struct progs_rec *r);

/* Reads the next id from the directory (1 when never set). */
int progs_store_next_id(struct progs *p, uint32_t *id);

/* Writes record r with obj durably as <id>, and the next id after it.
 * Returns 0 or -errno (nothing left behind on failure). */
int progs_store_save(struct progs *p, const struct progs_rec *r, const void *obj);

/* Removes record id durably. Returns 0 or -errno. */
int progs_store_remove(struct progs *p, uint32_t id);

/* Reads every record, calling fn for each (obj NULL and why set when the
 * record is damaged); removes leftover temporary files. fn owns nothing.
 * fn NULL: a check that writes nothing (temporary files stay). Returns 0
 * or an I/O -errno. */
int progs_store_scan(struct progs *p,
                     void (*fn)(struct progs *p, uint32_t id, const struct progs_rec *r,
                                const uint8_t *obj, const char *why));

/* SHA-256 of buf. */
void progs_sha256(const void *buf, size_t len, uint8_t out[32]);

/* ---- progs_run.c ------------------------------------------------------ */

/* Frees every stream (progs_close). */
void progs_streams_free(struct progs *p);

#endif
