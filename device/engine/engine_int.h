/*
 * device/engine/engine_int.h - what engine.c (lifecycle, dispatch, completion)
 * and engine_ops.c (one function per opcode) share. Not for other modules.
 */
#ifndef CISC_DEVICE_ENGINE_INT_H
#define CISC_DEVICE_ENGINE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "device/engine/engine.h"
#include "device/engine/handle.h"
#include "device/engine/lease.h"
#include "device/engine/stats.h"
#include "device/sched/sched.h"

#define ENG_INO_STRIPES 256u
#define ENG_DEV_RAM_DEFAULT (2ull << 30)
#define ENG_SPARES 8u   /* idle step buffers kept for reuse (mem.c) */

struct eng_spare {
    void *p;
    uint64_t size;
};

struct engine {
    struct sfs *fs;               /* not owned */
    struct sched *sched;
    struct stats *stats;          /* one shard per core + one for other threads */
    struct hdl_table *hdl;
    unsigned cores;
    bool trace;
    bool tenant_pid;              /* tenants are pids, not uids */
    /* Striped inode locks, for O_APPEND (size read and write together)
     * and for isolation of fused ops (device/engine/fused/fused.h):
     * RISC data ops hold their inode's stripe shared (appends and size
     * changes exclusive); a CISC op holds the stripes of the files it
     * mutates exclusive and of those it reads shared, for its whole run.
     * Taken before any StorageFS call; several in ascending order. */
    pthread_rwlock_t ino_lock[ENG_INO_STRIPES];
    /* Device memory budget for CISC buffers (mem.c): mem_used and
     * mem_waiters are atomic (a reservation that fits takes no lock);
     * mem_mu protects the spares and waiting on mem_cv. */
    pthread_mutex_t mem_mu;
    pthread_cond_t mem_cv;
    uint64_t mem_budget, mem_used;
    unsigned mem_waiters;       /* reservations in the slow path (mem.c) */
    /* Idle large step buffers kept for the next op (mem.c; protected
     * by mem_mu, their bytes counted in mem_used). */
    struct eng_spare spare[ENG_SPARES];
    unsigned nspare;
    /* The watcher (eng_set_watch): calls into it hold watch_lock for
     * reading, so clearing it waits for them. */
    pthread_rwlock_t watch_lock;
    struct eng_watch watch;
    bool watching;            /* protected by watch_lock; also read relaxed as a hint */
    bool watch_wb;            /* watch.writeback set: same protection as watching */
    struct progs *progs;      /* bpf steps' programs (device/progs/progs.h); may be NULL */
    struct lease_table *lease;   /* append leases of mount write(2)s (lease.h) */
    /* The floor on fused ops' work (engine.h, ENG_OP_TIME_MS_DEFAULT). */
    uint64_t op_time_ns;      /* device-time ceiling of one op */
    uint32_t cancel;          /* eng_cancel: non-zero from then on (atomic) */
    unsigned tx;              /* default transaction mode of fused ops (enum wire_tx, >= MACRO) */
    bool read_only;           /* eng_cmd_mutates() commands fail with -EROFS */
    uint64_t oplog_dir;       /* the operational log's directory once known (atomic) */
    /* AutoRec's log space (fused/oplog.h "Space"). */
    uint64_t tx_log_max;      /* bytes the live logs may reserve */
    uint64_t tx_log_entry;    /* a logged output up to this is inline in its record */
    uint64_t oplog_used;      /* bytes reserved by live logs; protected by oplog_mu */
    uint64_t oplog_adopted;   /* bytes appends took from logs without writing (atomic) */
    pthread_mutex_t oplog_mu;
    pthread_cond_t oplog_cv;  /* space given back */
    struct oplog_pool *oplog_pool;   /* the log files (fused/oplog.h "Slots"); oplog_mu */
};

/* An op's result meaning "parked" (lease.h): the command is not complete;
 * it runs again, through eng_resume, when the lease it waits for ends. */
#define ENG_PARKED INT64_MIN

/* Submits a parked command again (to a core, never on the calling
 * thread); completes it with -ESHUTDOWN if the scheduler refuses. */
void eng_resume(struct engine *e, struct eng_cmd *c);

/* The handle table a command uses: its session's, or the engine's. */
static inline struct hdl_table *eng_hdl(struct engine *e, const struct eng_cmd *c)
{
    return c->hdl ? c->hdl : e->hdl;
}

/* Frees the idle step buffers (mem.c); at destruction. */
void eng_spares_drain(struct engine *e);

/* Records in c->chg (when set) what command c changed (engine_watch.c). */
void eng_note_changes(struct engine *e, struct eng_cmd *c);

static inline unsigned eng_stripe(uint64_t ino)
{
    return (unsigned)((ino * 0x9E3779B97F4A7C15ull) >> 56) % ENG_INO_STRIPES;
}

/* Takes inode stripe `idx` (exclusive or shared). A wait gives the core
 * up (sched_block): the holder may be a parked fused op, which needs a
 * core to finish and let the stripe go (device/sched/sched.h). */
static inline void eng_stripe_lock(struct engine *e, unsigned idx, bool excl)
{
    pthread_rwlock_t *l = &e->ino_lock[idx];
    if ((excl ? pthread_rwlock_trywrlock(l) : pthread_rwlock_tryrdlock(l)) == 0)
        return;
    sched_block(true);
    if (excl)
        pthread_rwlock_wrlock(l);
    else
        pthread_rwlock_rdlock(l);
    sched_unblock();
}

/* Executes one command; returns its result (0, count, or -errno). */
typedef int64_t (*eng_op_fn)(struct engine *e, struct eng_cmd *c);

#define X(N, n) int64_t eop_##n(struct engine *e, struct eng_cmd *c);
ENG_OPS(X)
#undef X

#endif
