/*
 * device/media/flash_cores.c - the FTL cores of flash_cores.h: core
 * threads fed by single-producer rings, a futex bell for each sleeper,
 * and a timeline per core (and one for the single lock) that each batch
 * advances by the core speed times its CPU time, slept until.
 */
#include "device/media/flash_cores.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

/* ---- bells: sleep until another thread says something changed ---- */

/* An event count: a sleeper notes seq, says it waits, looks at its
 * condition once more and sleeps only if seq is still what it noted; a
 * notifier makes the condition true first, then bumps seq and wakes. */
struct bell {
    uint32_t seq;
    uint32_t waiters;
};

#define BELL_MAX_SLEEP_NS 100000000L   /* a lost wake-up costs at most 100 ms */

static void bell_ring(struct bell *b)
{
    /* Seq_cst with the sleeper's: either it sees the new seq (or the
     * condition made true before it), or we see it waiting and wake it. */
    __atomic_fetch_add(&b->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->waiters, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &b->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void bell_wait(struct bell *b, bool (*ready)(void *), void *arg)
{
    __atomic_fetch_add(&b->waiters, 1, __ATOMIC_SEQ_CST);
    uint32_t seen = __atomic_load_n(&b->seq, __ATOMIC_SEQ_CST);
    if (!ready(arg)) {
        struct timespec ts = {0, BELL_MAX_SLEEP_NS};
        syscall(SYS_futex, &b->seq, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    }
    __atomic_fetch_sub(&b->waiters, 1, __ATOMIC_SEQ_CST);
}

/* ---- structures ---- */

struct fcore {
    struct flash_ring req;      /* controller -> core */
    struct flash_ring done;     /* core -> controller */
    FLASH_LINE_ALIGNED struct bell bell;   /* the core sleeps here */
    struct flash_cores *c;
    uint32_t idx;
    pthread_t th;
    bool started;
    uint64_t core_t;            /* core's: its timeline (end of its last batch) */
    struct flash_core_stats st; /* core's until stopped */
    FLASH_LINE_ALIGNED uint64_t outstanding;   /* controller's (invariant 3) */
};

struct flash_cores {
    struct flash *f;
    uint32_t n, entries;
    bool single;
    double speed;
    uint64_t ftl_ns;
    bool stop;                  /* atomic: set once everything is submitted */
    uint64_t lock_t;            /* single lock: its timeline (under the lock) */
    uint32_t reap_from;         /* controller's: round-robin start */
    FLASH_LINE_ALIGNED struct bell hic;   /* the controller sleeps here */
    struct fcore *core;
};

/* ---- a core ---- */

static uint64_t thread_cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Sleeps until device time t (CLOCK_MONOTONIC) has come; returns the
 * time slept. */
static uint64_t sleep_until(uint64_t t)
{
    uint64_t t0 = now_ns();
    if (t <= t0)
        return 0;
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    return now_ns() - t0;
}

/* Where a batch starts on the core's timeline: when the core is free and
 * the batch's first sub-request has arrived (and, for the single-lock
 * FTL, when the lock's previous holder let it go), but at most
 * FLASH_CORES_LAG_MAX_NS before now: host scheduling delays up to that
 * are absorbed, longer stalls are lost time. */
static uint64_t batch_start(const struct fcore *k, uint64_t first_at, uint64_t now)
{
    uint64_t t = k->core_t > first_at ? k->core_t : first_at;
    if (k->c->single && k->c->lock_t > t)
        t = k->c->lock_t;
    return t + FLASH_CORES_LAG_MAX_NS < now ? now - FLASH_CORES_LAG_MAX_NS : t;
}

/* One sub-request on the model; the caller owns its partition. */
static void serve_one(struct flash *f, struct fcore *k, struct flash_sub *s)
{
    struct flash_io io = {s->at_ns, false};
    if (s->op == FLASH_SUB_READ)
        io = flash_read_owned(f, s->page, s->at_ns);
    else if (s->op == FLASH_SUB_WRITE)
        io = flash_write_owned(f, s->page, s->at_ns);
    else
        flash_trim_owned(f, s->page);
    s->at_ns = io.done_ns;
    s->flags = io.gc ? FLASH_SUB_GC : 0;
    s->core = k->idx;
}

/* Serves a batch: under the one lock for the single-lock FTL (held
 * until the batch's end on the core's timeline: the slow core's FTL
 * time), without any lock for a partitioned one (invariant 2). The batch
 * takes S times its measured CPU time on the core's timeline, and the
 * core sleeps until then (invariant 5). */
static void serve_batch(struct fcore *k, struct flash_sub *b, unsigned n)
{
    struct flash_cores *c = k->c;
    if (c->single)
        flash_part_lock(c->f, 0);
    uint64_t start = batch_start(k, b[0].at_ns, now_ns()), cpu0 = thread_cpu_ns();
    for (unsigned i = 0; i < n; i++)
        serve_one(c->f, k, &b[i]);
    uint64_t w = thread_cpu_ns() - cpu0;
    uint64_t len = c->ftl_ns ? n * c->ftl_ns : (uint64_t)(c->speed * (double)w);
    k->core_t = start + len;
    if (c->single)
        c->lock_t = k->core_t;   /* under the lock */
    k->st.slept_ns += sleep_until(k->core_t);
    if (c->single)
        flash_part_unlock(c->f, 0);
    k->st.first_ns = k->st.batches ? k->st.first_ns : start;
    k->st.last_ns = k->core_t;
    k->st.cpu_ns += w;
    k->st.busy_ns += len;
    k->st.served += n;
    k->st.batches++;
}

static bool core_ready(void *arg)
{
    struct fcore *k = arg;
    return !flash_ring_empty(&k->req) || __atomic_load_n(&k->c->stop, __ATOMIC_ACQUIRE);
}

static void *core_main(void *arg)
{
    struct fcore *k = arg;
    struct flash_cores *c = k->c;
    struct flash_sub b[FLASH_CORES_BATCH];
    if (!c->single)
        flash_part_claim(c->f, k->idx);
    for (;;) {
        unsigned n = flash_ring_pop(&k->req, b, FLASH_CORES_BATCH);
        if (n) {
            serve_batch(k, b, n);
            unsigned posted = flash_ring_push(&k->done, b, n);
            assert(posted == n);   /* invariant 3 */
            (void)posted;
            bell_ring(&c->hic);
            continue;
        }
        /* Pairs with the controller's release store of stop, made after
         * its last submission: a ring found empty after it is done. */
        if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) && flash_ring_empty(&k->req))
            break;
        bell_wait(&k->bell, core_ready, k);
    }
    if (!c->single)
        flash_part_release(c->f, k->idx);
    return NULL;
}

/* ---- start and stop ---- */

static int bad(char *err, unsigned len, const char *why)
{
    if (err && len)
        snprintf(err, len, "%s", why);
    return -EINVAL;
}

static int check_cfg(struct flash *f, const struct flash_cores_cfg *cfg, char *err,
                     unsigned len)
{
    if (!cfg->cores || cfg->cores > FLASH_CORES_MAX)
        return bad(err, len, "FTL cores: 1 to 64");
    if (cfg->core_speed != 0 && !(cfg->core_speed >= 1.0 && cfg->core_speed <= 1000.0))
        return bad(err, len, "FTL core speed: 1 to 1000");
    if (cfg->ftl_ns > 1000000)
        return bad(err, len, "FTL time per sub-request: at most 1 ms");
    uint32_t e = cfg->ring_entries;
    if (e && (e < FLASH_CORES_BATCH || e > FLASH_RING_MAX || (e & (e - 1))))
        return bad(err, len, "FTL core rings: a power of two from 64 to 65536 entries");
    if (cfg->single_lock && flash_partitions(f) != 1)
        return bad(err, len, "the single-lock FTL needs a model of one partition");
    if (!cfg->single_lock && flash_partitions(f) != cfg->cores)
        return bad(err, len, "a partitioned FTL needs one partition per core");
    return 0;
}

static int core_init(struct flash_cores *c, uint32_t i)
{
    struct fcore *k = &c->core[i];
    k->c = c;
    k->idx = i;
    int r = flash_ring_init(&k->req, c->entries);
    if (!r)
        r = flash_ring_init(&k->done, c->entries);
    if (!r)
        r = -pthread_create(&k->th, NULL, core_main, k);
    k->started = !r;
    return r;
}

static void cores_free(struct flash_cores *c)
{
    for (uint32_t i = 0; i < c->n; i++) {
        flash_ring_fini(&c->core[i].req);
        flash_ring_fini(&c->core[i].done);
    }
    free(c->core);
    free(c);
}

/* Tells the cores to stop once their rings are empty, and joins them. */
static void cores_join(struct flash_cores *c)
{
    /* Pairs with the cores' acquire loads: every push before it is seen. */
    __atomic_store_n(&c->stop, true, __ATOMIC_RELEASE);
    for (uint32_t i = 0; i < c->n; i++)
        if (c->core[i].started) {
            bell_ring(&c->core[i].bell);
            pthread_join(c->core[i].th, NULL);
        }
}

int flash_cores_start(struct flash *f, const struct flash_cores_cfg *cfg, char *err,
                      unsigned errlen, struct flash_cores **out)
{
    int r = check_cfg(f, cfg, err, errlen);
    if (r)
        return r;
    /* Both hold 64-byte aligned members (one cache line per side). */
    struct flash_cores *c = aligned_alloc(64, sizeof(*c));
    struct fcore *core = aligned_alloc(64, sizeof(*core) * cfg->cores);
    if (!c || !core) {
        free(core);
        free(c);
        return -ENOMEM;
    }
    memset(c, 0, sizeof(*c));
    memset(core, 0, sizeof(*core) * cfg->cores);
    c->f = f;
    c->n = cfg->cores;
    c->single = cfg->single_lock;
    c->speed = cfg->core_speed ? cfg->core_speed : 1.0;
    c->ftl_ns = cfg->ftl_ns;
    c->entries = cfg->ring_entries ? cfg->ring_entries : FLASH_CORES_RING_DEFAULT;
    c->core = core;
    for (uint32_t i = 0; !r && i < c->n; i++)
        r = core_init(c, i);
    if (r) {
        cores_join(c);
        cores_free(c);
        return r;
    }
    *out = c;
    return 0;
}

void flash_cores_stop(struct flash_cores *c, struct flash_core_stats *st)
{
    cores_join(c);
    for (uint32_t i = 0; st && i < c->n; i++)
        st[i] = c->core[i].st;
    cores_free(c);
}

/* ---- the controller ---- */

uint32_t flash_cores_core_of(const struct flash_cores *c, uint64_t l)
{
    return c->single ? (uint32_t)((l / flash_geom(c->f)->stripe_pages) % c->n)
                     : flash_part_of(c->f, l);
}

uint32_t flash_cores_room(const struct flash_cores *c, uint32_t i)
{
    return (uint32_t)(c->entries - c->core[i].outstanding);
}

unsigned flash_cores_submit(struct flash_cores *c, const struct flash_sub *subs, unsigned n)
{
    uint64_t rung = 0;   /* cores to wake, as bits of the first 64 */
    unsigned i = 0;
    while (i < n) {
        /* A run of sub-requests for one core goes in with one publish. */
        uint32_t k = flash_cores_core_of(c, subs[i].page);
        unsigned run = 1;
        while (i + run < n && flash_cores_core_of(c, subs[i + run].page) == k)
            run++;
        uint32_t room = flash_cores_room(c, k);
        unsigned put = flash_ring_push(&c->core[k].req, &subs[i], run < room ? run : room);
        c->core[k].outstanding += put;
        rung |= put ? 1ull << k : 0;
        i += put;
        if (put < run)
            break;   /* core k is full: the rest waits, in order */
    }
    for (uint32_t k = 0; k < c->n; k++)
        if (rung >> k & 1)
            bell_ring(&c->core[k].bell);
    return i;
}

unsigned flash_cores_reap(struct flash_cores *c, struct flash_sub *out, unsigned max)
{
    unsigned got = 0;
    for (uint32_t j = 0; j < c->n && got < max; j++) {
        struct fcore *k = &c->core[(c->reap_from + j) % c->n];
        unsigned m = flash_ring_pop(&k->done, out + got, max - got);
        k->outstanding -= m;
        got += m;
    }
    c->reap_from = (c->reap_from + 1) % c->n;
    return got;
}

uint64_t flash_cores_outstanding(const struct flash_cores *c)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->n; i++)
        n += c->core[i].outstanding;
    return n;
}

static bool hic_ready(void *arg)
{
    struct flash_cores *c = arg;
    for (uint32_t i = 0; i < c->n; i++)
        if (!flash_ring_empty(&c->core[i].done))
            return true;
    return false;
}

void flash_cores_wait(struct flash_cores *c)
{
    if (!hic_ready(c))
        bell_wait(&c->hic, hic_ready, c);
}
