/*
 * device/media/flash_cores.c - the FTL cores of flash_cores.h: core
 * threads fed by single-producer rings (one pair per core and port), a
 * futex bell for each sleeper, and a timeline per core (and one for the
 * single lock) that each timed batch advances by the core speed times its
 * CPU time, slept until.
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

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Polls ready() up to spin_ns (0: once), then sleeps on b until it holds. */
static void spin_then_wait(struct bell *b, bool (*ready)(void *), void *arg, uint64_t spin_ns)
{
    if (ready(arg))
        return;
    if (spin_ns) {
        uint64_t end = now_ns() + spin_ns;
        do {
            for (int i = 0; i < 64; i++)
                cpu_relax();
            if (ready(arg))
                return;
        } while (now_ns() < end);
    }
    bell_wait(b, ready, arg);
}

/* ---- structures ---- */

/* One port's pair of rings to one core. */
struct fq {
    struct flash_ring req;      /* port -> core */
    struct flash_ring done;     /* core -> port */
    FLASH_LINE_ALIGNED uint64_t outstanding;   /* the port's (invariant 3) */
};

struct fcore {
    FLASH_LINE_ALIGNED struct bell bell;   /* the core sleeps here */
    struct flash_cores *c;
    struct fq *q;               /* one per port */
    uint32_t idx;
    pthread_t th;
    bool started;
    uint64_t core_t;            /* core's: its timeline (end of its last batch) */
    struct flash_core_stats st; /* core's until stopped */
};

/* A port's sleeper. */
struct fport {
    FLASH_LINE_ALIGNED struct bell bell;
};

struct flash_cores {
    struct flash *f;
    uint32_t n, entries, nports;
    bool single, untimed;
    double speed;
    uint64_t ftl_ns, spin_ns;
    bool stop;                  /* atomic: set once everything is submitted */
    uint64_t lock_t;            /* single lock: its timeline (under the lock) */
    uint32_t reap_from;         /* port 0's controller: round-robin start */
    uint64_t all_ports;         /* a bit per port */
    FLASH_LINE_ALIGNED uint64_t free_ports;   /* atomic (invariant 7) */
    struct bell port_bell;      /* a producer waits here for a free port */
    /* The gate (invariant 6): pause is set by the one pauser (pause_mu),
     * parked counts the cores that let their partitions go. */
    FLASH_LINE_ALIGNED bool pause;
    uint32_t parked;
    struct bell pause_bell;     /* the pauser waits here */
    pthread_mutex_t pause_mu;
    struct fport *port;
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
    else if (s->op == FLASH_SUB_IDLE)
        io.gc = flash_idle_owned(f, flash_part_of(f, s->page), s->at_ns) > 0;
    else
        flash_trim_owned(f, s->page);
    s->at_ns = io.done_ns;
    s->flags = io.gc ? FLASH_SUB_GC : 0;
    s->core = k->idx;
}

/* A timed batch's FTL time on the core's timeline: S times its measured
 * CPU time w, or n ftl_ns; the core sleeps until its end (invariant 5).
 * Called under the single lock, if any, which it thus holds for that. */
static void timed_batch(struct fcore *k, struct flash_sub *b, unsigned n)
{
    struct flash_cores *c = k->c;
    uint64_t start = batch_start(k, b[0].at_ns, now_ns()), cpu0 = thread_cpu_ns();
    for (unsigned i = 0; i < n; i++)
        serve_one(c->f, k, &b[i]);
    uint64_t w = thread_cpu_ns() - cpu0;
    uint64_t len = c->ftl_ns ? n * c->ftl_ns : (uint64_t)(c->speed * (double)w);
    k->core_t = start + len;
    if (c->single)
        c->lock_t = k->core_t;   /* under the lock */
    k->st.slept_ns += sleep_until(k->core_t);
    k->st.first_ns = k->st.batches ? k->st.first_ns : start;
    k->st.last_ns = k->core_t;
    k->st.cpu_ns += w;
    k->st.busy_ns += len;
}

/* Serves a batch: under the one lock for the single-lock FTL, without any
 * lock for a partitioned one (invariant 2); timed or not. */
static void serve_batch(struct fcore *k, struct flash_sub *b, unsigned n)
{
    struct flash_cores *c = k->c;
    if (c->single)
        flash_part_lock(c->f, 0);
    if (c->untimed)
        for (unsigned i = 0; i < n; i++)
            serve_one(c->f, k, &b[i]);
    else
        timed_batch(k, b, n);
    if (c->single)
        flash_part_unlock(c->f, 0);
    k->st.served += n;
    k->st.batches++;
}

/* The ports a core serves (invariant 7). */
static uint64_t taken_ports(const struct flash_cores *c)
{
    /* Pairs with port_get's acquire-release claim: a taken port's rings
     * are then looked at through their own indices. */
    return c->all_ports & ~__atomic_load_n(&c->free_ports, __ATOMIC_ACQUIRE);
}

/* One pass over the taken ports: a batch from each that has work,
 * served and posted back. Returns the sub-requests served. */
static unsigned core_pass(struct fcore *k, struct flash_sub *b)
{
    struct flash_cores *c = k->c;
    unsigned served = 0;
    for (uint64_t taken = taken_ports(c); taken; taken &= taken - 1) {
        unsigned p = (unsigned)__builtin_ctzll(taken);
        struct fq *q = &k->q[p];
        unsigned n = flash_ring_pop(&q->req, b, FLASH_CORES_BATCH);
        if (!n)
            continue;
        serve_batch(k, b, n);
        unsigned posted = flash_ring_push(&q->done, b, n);
        assert(posted == n);   /* invariant 3 */
        (void)posted;
        bell_ring(&c->port[p].bell);
        served += n;
    }
    return served;
}

static bool paused(const struct flash_cores *c)
{
    return __atomic_load_n(&c->pause, __ATOMIC_SEQ_CST);
}

static bool core_has_work(struct fcore *k)
{
    for (uint64_t taken = taken_ports(k->c); taken; taken &= taken - 1)
        if (!flash_ring_empty(&k->q[__builtin_ctzll(taken)].req))
            return true;
    return false;
}

static bool core_ready(void *arg)
{
    struct fcore *k = arg;
    return core_has_work(k) || __atomic_load_n(&k->c->stop, __ATOMIC_ACQUIRE) || paused(k->c);
}

static bool core_unpaused(void *arg)
{
    return !paused(((struct fcore *)arg)->c);
}

/* The gate (invariant 6): the partition goes back while the pauser holds
 * the model's locks, and is claimed again when it lets them go. */
static void core_park(struct fcore *k)
{
    struct flash_cores *c = k->c;
    flash_part_release(c->f, k->idx);
    __atomic_fetch_add(&c->parked, 1, __ATOMIC_SEQ_CST);
    bell_ring(&c->pause_bell);
    while (paused(c))
        bell_wait(&k->bell, core_unpaused, k);
    flash_part_claim(c->f, k->idx);
    __atomic_fetch_sub(&c->parked, 1, __ATOMIC_SEQ_CST);
    bell_ring(&c->pause_bell);
}

static void *core_main(void *arg)
{
    struct fcore *k = arg;
    struct flash_cores *c = k->c;
    struct flash_sub b[FLASH_CORES_BATCH];
    if (!c->single)
        flash_part_claim(c->f, k->idx);
    for (;;) {
        if (paused(c) && !c->single)
            core_park(k);   /* then a pass before it looks again: progress */
        if (core_pass(k, b))
            continue;
        /* Pairs with the controller's release store of stop, made after
         * its last submission: rings found empty after it are done. */
        if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) && !core_has_work(k))
            break;
        spin_then_wait(&k->bell, core_ready, k, c->spin_ns);
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
    if (cfg->ports > FLASH_CORES_MAX_PORTS)
        return bad(err, len, "FTL core ports: 1 to 64");
    if (cfg->spin_ns > 1000000)
        return bad(err, len, "FTL core spin: at most 1 ms");
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
    k->q = aligned_alloc(64, sizeof(*k->q) * c->nports);
    if (!k->q)
        return -ENOMEM;
    memset(k->q, 0, sizeof(*k->q) * c->nports);
    int r = 0;
    for (uint32_t p = 0; !r && p < c->nports; p++) {
        r = flash_ring_init(&k->q[p].req, c->entries);
        if (!r)
            r = flash_ring_init(&k->q[p].done, c->entries);
    }
    if (!r)
        r = -pthread_create(&k->th, NULL, core_main, k);
    k->started = !r;
    return r;
}

static void cores_free(struct flash_cores *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        for (uint32_t p = 0; c->core[i].q && p < c->nports; p++) {
            flash_ring_fini(&c->core[i].q[p].req);
            flash_ring_fini(&c->core[i].q[p].done);
        }
    for (uint32_t i = 0; i < c->n; i++)
        free(c->core[i].q);
    pthread_mutex_destroy(&c->pause_mu);
    free(c->core);
    free(c->port);
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

/* The zeroed, 64-byte aligned structures of cfg's cores and ports. */
static struct flash_cores *cores_alloc(const struct flash_cores_cfg *cfg, uint32_t nports)
{
    struct flash_cores *c = aligned_alloc(64, sizeof(*c));
    struct fcore *core = aligned_alloc(64, sizeof(*core) * cfg->cores);
    struct fport *port = aligned_alloc(64, sizeof(*port) * nports);
    if (!c || !core || !port) {
        free(port);
        free(core);
        free(c);
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    memset(core, 0, sizeof(*core) * cfg->cores);
    memset(port, 0, sizeof(*port) * nports);
    c->core = core;
    c->port = port;
    pthread_mutex_init(&c->pause_mu, NULL);
    return c;
}

int flash_cores_start(struct flash *f, const struct flash_cores_cfg *cfg, char *err,
                      unsigned errlen, struct flash_cores **out)
{
    int r = check_cfg(f, cfg, err, errlen);
    if (r)
        return r;
    uint32_t nports = cfg->ports ? cfg->ports : 1;
    struct flash_cores *c = cores_alloc(cfg, nports);
    if (!c)
        return -ENOMEM;
    c->f = f;
    c->n = cfg->cores;
    c->nports = nports;
    c->single = cfg->single_lock;
    c->untimed = cfg->untimed;
    c->speed = cfg->core_speed ? cfg->core_speed : 1.0;
    c->ftl_ns = cfg->ftl_ns;
    c->spin_ns = cfg->spin_ns;
    c->entries = cfg->ring_entries ? cfg->ring_entries : FLASH_CORES_RING_DEFAULT;
    c->all_ports = nports == 64 ? UINT64_MAX : (1ull << nports) - 1;
    c->free_ports = nports > 1 ? c->all_ports : 0;   /* invariant 7 */
    for (uint32_t i = 0; !r && i < c->n; i++)
        r = core_init(c, i);
    if (r) {
        cores_join(c);
        cores_free(c);
        return r;
    }
    if (!c->single)
        flash_set_gate(f, flash_cores_pause, c);
    *out = c;
    return 0;
}

void flash_cores_stop(struct flash_cores *c, struct flash_core_stats *st)
{
    cores_join(c);
    if (!c->single)
        flash_set_gate(c->f, NULL, NULL);   /* the partitions are free again */
    for (uint32_t i = 0; st && i < c->n; i++)
        st[i] = c->core[i].st;
    cores_free(c);
}

/* ---- the gate (invariant 6) ---- */

static bool all_parked(void *arg)
{
    struct flash_cores *c = arg;
    return __atomic_load_n(&c->parked, __ATOMIC_SEQ_CST) == c->n;
}

static bool none_parked(void *arg)
{
    return __atomic_load_n(&((struct flash_cores *)arg)->parked, __ATOMIC_SEQ_CST) == 0;
}

static void ring_cores(struct flash_cores *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        bell_ring(&c->core[i].bell);
}

void flash_cores_pause(void *ctx, bool on)
{
    struct flash_cores *c = ctx;
    if (on)
        pthread_mutex_lock(&c->pause_mu);   /* one pauser at a time */
    __atomic_store_n(&c->pause, on, __ATOMIC_SEQ_CST);
    ring_cores(c);
    while (!(on ? all_parked(c) : none_parked(c)))
        bell_wait(&c->pause_bell, on ? all_parked : none_parked, c);
    if (!on)
        pthread_mutex_unlock(&c->pause_mu);
}

/* ---- ports and the controller ---- */

uint32_t flash_cores_core_of(const struct flash_cores *c, uint64_t l)
{
    return c->single ? (uint32_t)((l / flash_geom(c->f)->stripe_pages) % c->n)
                     : flash_part_of(c->f, l);
}

static bool port_free(void *arg)
{
    return __atomic_load_n(&((struct flash_cores *)arg)->free_ports, __ATOMIC_ACQUIRE) != 0;
}

unsigned flash_cores_port_get(struct flash_cores *c)
{
    assert(c->nports > 1);
    for (;;) {
        uint64_t free = __atomic_load_n(&c->free_ports, __ATOMIC_ACQUIRE);
        while (free) {
            unsigned p = (unsigned)__builtin_ctzll(free);
            /* Acquire: what the port's last holder did (its rings empty,
             * their private copies) is seen; release: the cores that see
             * the port taken see it after (invariant 7). */
            if (__atomic_compare_exchange_n(&c->free_ports, &free, free & ~(1ull << p), false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return p;
        }
        bell_wait(&c->port_bell, port_free, c);
    }
}

void flash_cores_port_put(struct flash_cores *c, unsigned p)
{
    assert(flash_cores_port_outstanding(c, p) == 0);
    /* Release: pairs with the next taker's acquire. */
    __atomic_fetch_or(&c->free_ports, 1ull << p, __ATOMIC_RELEASE);
    bell_ring(&c->port_bell);
}

uint32_t flash_cores_port_room(const struct flash_cores *c, unsigned p, uint32_t core)
{
    return (uint32_t)(c->entries - c->core[core].q[p].outstanding);
}

unsigned flash_cores_port_submit(struct flash_cores *c, unsigned p,
                                 const struct flash_sub *subs, unsigned n)
{
    uint64_t rung = 0;   /* cores to wake, as bits of the first 64 */
    unsigned i = 0;
    while (i < n) {
        /* A run of sub-requests for one core goes in with one publish. */
        uint32_t k = flash_cores_core_of(c, subs[i].page);
        unsigned run = 1;
        while (i + run < n && flash_cores_core_of(c, subs[i + run].page) == k)
            run++;
        struct fq *q = &c->core[k].q[p];
        uint32_t room = flash_cores_port_room(c, p, k);
        unsigned put = flash_ring_push(&q->req, &subs[i], run < room ? run : room);
        q->outstanding += put;
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

/* Reaps port p's completions, starting at core `from`. */
static unsigned port_reap_from(struct flash_cores *c, unsigned p, uint32_t from,
                               struct flash_sub *out, unsigned max)
{
    unsigned got = 0;
    for (uint32_t j = 0; j < c->n && got < max; j++) {
        struct fq *q = &c->core[(from + j) % c->n].q[p];
        unsigned m = flash_ring_pop(&q->done, out + got, max - got);
        q->outstanding -= m;
        got += m;
    }
    return got;
}

unsigned flash_cores_port_reap(struct flash_cores *c, unsigned p, struct flash_sub *out,
                               unsigned max)
{
    return port_reap_from(c, p, 0, out, max);
}

uint64_t flash_cores_port_outstanding(const struct flash_cores *c, unsigned p)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->n; i++)
        n += c->core[i].q[p].outstanding;
    return n;
}

struct port_ref {
    struct flash_cores *c;
    unsigned p;
};

static bool port_ready(void *arg)
{
    struct port_ref *r = arg;
    for (uint32_t i = 0; i < r->c->n; i++)
        if (!flash_ring_empty(&r->c->core[i].q[r->p].done))
            return true;
    return false;
}

void flash_cores_port_wait(struct flash_cores *c, unsigned p, uint64_t spin_ns)
{
    struct port_ref r = {c, p};
    spin_then_wait(&c->port[p].bell, port_ready, &r, spin_ns);
}

/* The single controller: port 0. */

uint32_t flash_cores_room(const struct flash_cores *c, uint32_t i)
{
    return flash_cores_port_room(c, 0, i);
}

unsigned flash_cores_submit(struct flash_cores *c, const struct flash_sub *subs, unsigned n)
{
    return flash_cores_port_submit(c, 0, subs, n);
}

unsigned flash_cores_reap(struct flash_cores *c, struct flash_sub *out, unsigned max)
{
    unsigned got = port_reap_from(c, 0, c->reap_from, out, max);
    c->reap_from = (c->reap_from + 1) % c->n;
    return got;
}

uint64_t flash_cores_outstanding(const struct flash_cores *c)
{
    return flash_cores_port_outstanding(c, 0);
}

void flash_cores_wait(struct flash_cores *c)
{
    flash_cores_port_wait(c, 0, 0);
}
