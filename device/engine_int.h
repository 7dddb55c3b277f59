/*
 * device/engine_int.h - what engine.c (lifecycle, dispatch, completion)
 * and engine_ops.c (one function per opcode) share. Not for other modules.
 */
#ifndef CISC_DEVICE_ENGINE_INT_H
#define CISC_DEVICE_ENGINE_INT_H

#include <pthread.h>

#include "device/engine.h"
#include "device/handle.h"
#include "device/stats.h"

#define ENG_APPEND_LOCKS 64u

struct engine {
    struct sfs *fs;               /* not owned */
    struct sched *sched;
    struct stats *stats;          /* one shard per core + one for other threads */
    struct hdl_table *hdl;
    unsigned cores;
    bool trace;
    /* O_APPEND writes read the size and write under the lock of their
     * inode's stripe, so two appenders never write at the same offset. */
    pthread_mutex_t append_lock[ENG_APPEND_LOCKS];
    /* The watcher (eng_set_watch): calls into it hold watch_lock for
     * reading, so clearing it waits for them. */
    pthread_rwlock_t watch_lock;
    struct eng_watch watch;
    bool watching;            /* protected by watch_lock; also read relaxed as a hint */
};

/* The handle table a command uses: its session's, or the engine's. */
static inline struct hdl_table *eng_hdl(struct engine *e, const struct eng_cmd *c)
{
    return c->hdl ? c->hdl : e->hdl;
}

/* Records in c->chg (when set) what command c changed (engine_path.c). */
void eng_note_changes(struct engine *e, struct eng_cmd *c);

/* Executes one command; returns its result (0, count, or -errno). */
typedef int64_t (*eng_op_fn)(struct engine *e, struct eng_cmd *c);

#define X(N, n) int64_t eop_##n(struct engine *e, struct eng_cmd *c);
ENG_OPS(X)
#undef X

#endif
