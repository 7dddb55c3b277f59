/* device/sched/sched.c - device cores (worker threads and core slots), the
 * accounting around every run, and the FIFO policy. The other policies are
 * in rr.c and cfs.c. */
#include "device/sched/sched_int.h"
#include "common/thread.h"

#include "common/clock.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Parked items at most (more: no preemption until one resumes), and the
 * worker threads at most (the cores' own plus those started so that a
 * parked or blocked item's core finds a thread to run on). */
#define SCHED_PARK_MAX 16u
#define SCHED_THREADS_MAX (SCHED_MAX_CORES + 64u)
/* A worker beyond the cores' own that has found nothing to do for this
 * long exits (sched_config.worker_idle_ns replaces it when set). */
#define SCHED_WORKER_IDLE_NS 2000000000ull
/* An item holds its core at least this long before it can be parked, and
 * a preemption point looks at the queue at most this often: parking costs
 * a few microseconds of hand-over, so slices are long against that. */
#define SCHED_SLICE_NS 1000000ull
#define SCHED_CHECK_NS 200000ull
/* A sleeper (sched_sleep_done) is parked by another thread after this long
 * on its core: its thread is asleep, so parking it costs no more than the
 * hand-over of its slot, but each park is two hand-overs (out, and back
 * later), during which the slot waits for a thread to wake on the host.
 * Measured (bench-sched 9a, core speed 16, 2 cores, 4 + 4 threads, cfs,
 * load 13-15): at 100 us, 3,700 parks in 2 s and the cores busy 0.86 of
 * the time (rr: 0.92-0.99); at 1 ms, 130-160 parks and 0.90-0.93, with
 * the same fair split of core time (0.45-0.48 for write-only). The light
 * tenant of CiscSched.TheMountIsChargedToItsCallerToo got 0.43-0.61 of
 * its backlog at 100 us and 0.46-0.51 at 1 ms (wake credit 3 ms). */
#define SCHED_SLEEP_SLICE_NS 1000000ull

/* The item a thread runs (run_on), for its preemption points and blocks:
 * on that thread's stack, found through `cur`. */
struct sched_ctx {
    struct sched *s;
    struct sched_item *it;     /* the item (valid until run() returns) */
    struct sched_item *copy;   /* run_on's copy, charged at the finish */
    unsigned slot;             /* the core slot it holds (while on core) */
    uint64_t t0;               /* its current slice on the core began */
    uint64_t next_check;       /* the next preemption point that looks */
    uint64_t left_at;          /* it left its core (while off) */
    uint64_t off_ns;           /* time off its core so far */
    bool preempt;              /* it may be parked: preemptible, on a worker thread */
    bool off;                  /* off its core: parked or blocked */
    bool on_lock;              /* blocked on a lock */
    bool granted;              /* parked: a core was handed back to it */
    bool mem_hold;             /* waits for device memory on its core (sched_mem_wait) */
    struct sched_ctx *prev;    /* the thread's outer item (nested runs) */
};

static __thread struct sched_ctx *cur;

struct sched {
    const struct sched_policy *pol;
    void *q;
    sched_run_fn run;
    void *arg;
    unsigned cores;
    bool direct;               /* submitters may run items themselves */
    bool tenant_pid;           /* for reports */
    pthread_t *threads;        /* SCHED_THREADS_MAX; the first nthreads are live */
    unsigned nthreads;
    uint64_t worker_idle_ns;   /* an extra worker idle this long exits */
    pthread_t reaped;          /* an extra worker that exited, to be joined */
    bool has_reaped;
    pthread_mutex_t lock;      /* protects everything below and q */
    pthread_cond_t work;       /* signalled when an item is queued or on stop */
    pthread_cond_t idle_cv;    /* signalled when the last running item finishes */
    pthread_cond_t slot_cv;    /* broadcast when a slot frees while items wait off core */
    bool stopping;
    unsigned mem_waiting;      /* running commands waiting for device memory */
    unsigned mem_holders;      /* of those, the ones that keep their core meanwhile */
    uint64_t mem_budget;       /* device memory */
    uint64_t mem_running;      /* reservations of the items running now */
    struct sched_accts acct;   /* tenants and queues */
    unsigned idle;             /* worker threads waiting on `work` */
    unsigned busy;             /* core slots in use */
    uint64_t free_slots;       /* bit i set: core slot i is free */
    uint64_t submitted, completed, direct_runs, depth, max_depth;
    struct sched_core_stats core[SCHED_MAX_CORES];
    /* Off core: started, not finished, holding no slot (parked or blocked). */
    unsigned off;
    struct sched_ctx *parked[SCHED_PARK_MAX];   /* parked items, oldest first */
    unsigned nparked;
    struct sched_ctx *sleepers[SCHED_MAX_CORES + SCHED_PARK_MAX];   /* in sched_sleep_done */
    unsigned nsleepers;
    unsigned lock_waiters;     /* blocked on a lock: parked items resume first */
    unsigned resumers;         /* blocked items done waiting, waiting for a slot */
    uint64_t resume_ticket, resume_serve;   /* their turns, first come first */
    uint64_t preemptions, blocks;
};

#define SCHED_CHECK_WALK 64u   /* a policy's check counts this many items at most */

#ifndef NDEBUG
/* The scheduler's invariants (sched.h) that its counters show, checked
 * from assert() after each state change in debug and sanitizer builds
 * (lock held): O(1), and the policy's own check. */
static bool sched_check(const struct sched *s)
{
    unsigned nfree = (unsigned)__builtin_popcountll(s->free_slots);
    assert(s->busy <= s->cores && s->acct.busy == s->busy);  /* 4 */
    assert(nfree == s->cores - s->busy);                       /* 4: one slot per item */
    assert(s->cores == 64 || (s->free_slots >> s->cores) == 0);
    /* 1: every accepted item is queued, running (on or off a core), or done, once */
    assert(s->submitted == s->completed + s->busy + s->depth + s->off);
    assert(s->nparked + s->resumers <= s->off && s->lock_waiters <= s->off);
    assert(s->mem_holders <= s->mem_waiting && s->mem_holders <= s->busy &&
           (s->mem_holders == 0 || s->mem_holders < s->cores));   /* sched_mem_wait */
    assert(s->depth <= s->max_depth && s->idle <= s->nthreads);
    assert(!s->pol->check || s->pol->check(s->q, s->depth));
    assert(sched_acct_check(&s->acct, SCHED_CHECK_WALK));
    return true;
}
#endif

/* ---- FIFO policy: one list, oldest first ---------------------------- */

struct fifo {
    struct sched_item *head, **tailp;
};

static void *fifo_create(const struct sched_env *env)
{
    struct fifo *f = calloc(1, sizeof(*f));
    if (f)
        f->tailp = &f->head;
    return f;
}

static void fifo_destroy(void *q)
{
    free(q);
}

static int fifo_push(void *q, struct sched_item *it)
{
    struct fifo *f = q;
    it->next = NULL;
    *f->tailp = it;
    f->tailp = &it->next;
    return 0;
}

static struct sched_item *fifo_peek(void *q, bool mem_tight)
{
    return ((struct fifo *)q)->head;
}

static struct sched_item *fifo_pop(void *q, bool mem_tight)
{
    struct fifo *f = q;
    struct sched_item *it = f->head;
    if (it) {
        f->head = it->next;
        if (!f->head)
            f->tailp = &f->head;
    }
    return it;
}

static void fifo_charge(void *q, const struct sched_item *it, uint64_t ns)
{
}

/* True if the list is well formed and holds `depth` items (counted up
 * to SCHED_CHECK_WALK). */
static bool fifo_check(const void *q, uint64_t depth)
{
    const struct fifo *f = q;
    if (!f->head != (f->tailp == &f->head) || *f->tailp != NULL)
        return false;
    uint64_t n = 0;
    for (const struct sched_item *it = f->head; it && n <= SCHED_CHECK_WALK; it = it->next)
        n++;
    return depth > SCHED_CHECK_WALK ? n > SCHED_CHECK_WALK : n == depth;
}

const struct sched_policy sched_fifo = {
    .name = "fifo",
    .create = fifo_create,
    .destroy = fifo_destroy,
    .push = fifo_push,
    .pop = fifo_pop,
    .peek = fifo_peek,
    .charge = fifo_charge,
    .check = fifo_check,
};

static const struct sched_policy *const policies[] = { &sched_fifo, &sched_rr, &sched_cfs,
                                                        &sched_cfs_cpu, &sched_drf };

const char sched_policy_names[] = "fifo|rr|cfs|cfs-cpu|drf";

const struct sched_policy *sched_policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (!strcmp(policies[i]->name, name))
            return policies[i];
    return NULL;
}

/* ---- core slots ------------------------------------------------------- */

/* Takes a free core slot at `now`; lock held, busy < cores guaranteed by
 * callers. */
static unsigned slot_get(struct sched *s, uint64_t now)
{
    assert(s->busy < s->cores && s->free_slots);   /* 4 */
    unsigned slot = (unsigned)__builtin_ctzll(s->free_slots);
    s->free_slots &= ~(1ull << slot);
    s->busy++;
    sched_acct_busy(&s->acct, 1, now);
    return slot;
}

/* it starts running at `now` (lock held): accounted, and the policy told.
 * One clock reading serves the slot, the start and run_on's t0. */
static void started(struct sched *s, struct sched_item *it, bool was_queued, uint64_t now)
{
    s->mem_running += it->mem;
    sched_acct_start(&s->acct, it, was_queued, now);
    if (s->pol->start)
        s->pol->start(s->q, it);
}

/* Whether a worker may start an item: a slot is free that no blocked item
 * waiting to come back has a claim on (lock held). */
static bool slots_open(const struct sched *s)
{
    return s->busy + s->resumers < s->cores;
}

/* A slot was given back (lock held): whoever waits for one may take it. */
static void worker_for_slot(struct sched *s);

static void slot_freed(struct sched *s)
{
    if (s->nparked || s->resumers)
        pthread_cond_broadcast(&s->slot_cv);
    if (s->depth > 0 && s->idle > 0)
        pthread_cond_signal(&s->work);
    worker_for_slot(s);   /* the slot of a direct run, every worker off core */
}

/* Charges the policy, returns the slot, wakes sched_drain when quiet. */
static void finish(struct sched *s, unsigned slot, struct sched_item *copy, uint64_t ns,
                   uint64_t end)
{
    pthread_mutex_lock(&s->lock);
    uint64_t lat = end > copy->t_submit_ns ? end - copy->t_submit_ns : 0;
    s->mem_running -= copy->mem;
    sched_acct_finish(&s->acct, copy, ns, lat);   /* 5 */
    s->pol->charge(s->q, copy, ns);
    sched_acct_settled(&s->acct, copy->sq);
    s->free_slots |= 1ull << slot;
    s->busy--;
    sched_acct_busy(&s->acct, -1, end);
    s->completed++;
    s->core[slot].executed++;
    s->core[slot].busy_ns += ns;
    bool quiet = s->busy == 0 && s->depth == 0 && s->off == 0;
    slot_freed(s);   /* a direct run kept a slot that queued work now can use */
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
    if (quiet)
        pthread_cond_broadcast(&s->idle_cv);
}

/* Runs it in slot, which it took at t0. Only a worker thread's item may be
 * parked (worker): a submitter that runs an item itself (a poller, a FUSE
 * worker) has other work of its own to get back to. */
static void run_on(struct sched *s, struct sched_item *it, unsigned slot, bool worker,
                   uint64_t t0)
{
    struct sched_item copy = *it;   /* run() may free it */
    struct sched_ctx c = { .s = s, .it = it, .copy = &copy, .slot = slot, .prev = cur,
                           .preempt = worker && it->preemptible };
    c.t0 = t0;
    c.next_check = c.t0 + SCHED_SLICE_NS;
    cur = &c;
    s->run(s->arg, it, slot);
    cur = c.prev;
    uint64_t t1 = now_ns();
    finish(s, c.slot, &copy, t1 - c.t0, t1);   /* the last slice; parks charged theirs */
}

/* ---- memory admission ------------------------------------------------------ */

/* Whether it's reservation fits beside the running items' (lock held).
 * With nothing running it always does: the engine's budget decides. */
static bool fits(const struct sched *s, const struct sched_item *it)
{
    return !it->mem || !s->mem_running || s->mem_running + it->mem <= s->mem_budget;
}

/* The item to start next (lock held), or NULL: none waits, or the
 * policy's choice does not fit in device memory beside the running items
 * and neither does its choice with memory tight (the memory key: cfs then
 * serves the tenant holding the least). A command that does not fit waits
 * in its queue, not on a core, so the cores stay free for commands that
 * fit; the finish that frees memory wakes a core (finish()). *tight says
 * which choice it is, for pop. */
static struct sched_item *choose(struct sched *s, bool *tight)
{
    *tight = s->mem_waiting > 0;
    struct sched_item *it = s->pol->peek(s->q, *tight);
    if (!s->pol->mem_admit)
        return it;
    if (it && !fits(s, it) && !*tight) {
        *tight = true;
        it = s->pol->peek(s->q, true);
    }
    return it && fits(s, it) ? it : NULL;
}

/* ---- leaving the core and coming back ------------------------------------- */

/* c's item gives its slot up for now (lock held): the slice it ran is
 * charged (accounts, policy, core), the slot is free. */
static void leave_core(struct sched *s, struct sched_ctx *c, uint64_t now)
{
    uint64_t ns = now - c->t0;
    sched_acct_slice(&s->acct, c->it, ns);
    if (s->pol->slice)
        s->pol->slice(s->q, c->it, ns);
    c->it->ran_ns += ns;
    c->copy->ran_ns = c->it->ran_ns;   /* the finish charges from the copy */
    c->copy->vt_pre = c->it->vt_pre;
    s->core[c->slot].busy_ns += ns;
    s->free_slots |= 1ull << c->slot;
    s->busy--;
    sched_acct_busy(&s->acct, -1, now);
    s->off++;
    c->off = true;
    c->left_at = now;
    slot_freed(s);
}

/* c's item holds core slot `slot` again (lock held). */
static void back_on(struct sched *s, struct sched_ctx *c)
{
    uint64_t now = now_ns();
    c->slot = slot_get(s, now);
    c->off = false;
    c->off_ns += now - c->left_at;
    c->t0 = now;
    c->next_check = now + SCHED_SLICE_NS;
    s->off--;
}

/* Starts one more worker thread (lock held): for a parked item's core.
 * Returns 0 or -errno (-EAGAIN at the limit or while stopping). */
static int spawn_worker(struct sched *s);

/* The parked item with the least key (lock held), or NULL. */
static struct sched_ctx *least_parked(struct sched *s)
{
    struct sched_ctx *b = s->nparked ? s->parked[0] : NULL;
    for (unsigned i = 1; i < s->nparked; i++)
        if (s->pol->key(s->q, s->parked[i]->it) < s->pol->key(s->q, b->it))
            b = s->parked[i];
    return b;
}

/* The parked item to resume next (lock held), or NULL: none is parked, or
 * the policy's next pick comes first by its key. While an item waits for
 * a lock, the oldest parked one comes first whatever its key: it may hold
 * that lock (an op keeps its locks while parked), and a lock's waiter
 * holds no core meanwhile, so this bounds the wait by one slice. */
static struct sched_ctx *best_parked(struct sched *s)
{
    if (!s->nparked)
        return NULL;
    if (s->lock_waiters)
        return s->parked[0];
    struct sched_ctx *b = least_parked(s);
    bool tight;
    struct sched_item *n = choose(s, &tight);
    return !n || s->pol->key(s->q, n) >= s->pol->key(s->q, b->it) ? b : NULL;
}

/* Hands a free slot to parked c (lock held, slots_open). */
static void grant(struct sched *s, struct sched_ctx *c)
{
    unsigned i = 0;
    while (s->parked[i] != c)
        i++;
    memmove(&s->parked[i], &s->parked[i + 1], (s->nparked - i - 1) * sizeof(s->parked[0]));
    s->nparked--;
    back_on(s, c);
    c->granted = true;
    pthread_cond_broadcast(&s->slot_cv);
}

/* Whether c's item (a preemption point, lock held) should give its core
 * to the next item the policy would serve: the parked one with the least
 * key if it comes before the policy's next pick, else that pick (which
 * must fit in memory and find a worker thread to run it); another
 * tenant's, and the policy says so (cfs: that tenant's virtual time is
 * less than this one's with the slice charged); nobody waits for a lock.
 * A parked item counts as much as a queued one: an item parked in its
 * model sleep (sched_preempt_point_done) may be the lighter tenant's. */
static bool want_park(struct sched *s, struct sched_ctx *c, uint64_t now)
{
    if (s->lock_waiters || s->nparked == SCHED_PARK_MAX || s->stopping)
        return false;
    bool tight;
    struct sched_item *n = choose(s, &tight);
    struct sched_ctx *p = least_parked(s);
    if (p && (!n || s->pol->key(s->q, p->it) <= s->pol->key(s->q, n))) {
        return p->it->sq->t != c->it->sq->t &&   /* its thread takes the slot */
               s->pol->preempt(s->q, c->it, now - c->t0, p->it);
    }
    if (!n || n->sq->t == c->it->sq->t || !fits(s, n) ||
        !s->pol->preempt(s->q, c->it, now - c->t0, n))
        return false;
    return s->idle > 0 || spawn_worker(s) == 0;
}

/* c's item leaves its core parked (lock held): charged, counted, its slot
 * free for the policy's next pick. Any thread may park an item so: its
 * own at a preemption point, or a sleeper's (kick_sleepers). */
static void park_out(struct sched *s, struct sched_ctx *c, uint64_t now)
{
    leave_core(s, c, now);
    c->granted = false;
    s->parked[s->nparked++] = c;
    s->preemptions++;
    sched_acct_preempted(&s->acct, c->it);
    if (s->idle > 0)
        pthread_cond_signal(&s->work);
}

/* One wait of parked c for its core (lock held, on c's thread): takes a
 * free slot if it is the best to resume, or if no other parked item is
 * and no worker is left to run the policy's pick; else waits for a slot
 * to free. Another parked item that is best takes the slot on its own
 * thread (woken by slot_freed's broadcast): were c to take it because no
 * worker is idle, an item parked for a lighter one would take its core
 * straight back. Returns once c holds a core or after one wake-up (the
 * caller loops while c->off). */
static void park_wait(struct sched *s, struct sched_ctx *c)
{
    if (slots_open(s)) {
        struct sched_ctx *b = best_parked(s);
        if (b == c || (!b && s->idle == 0 && (!s->depth || spawn_worker(s) != 0))) {
            grant(s, c);
            return;
        }
    }
    pthread_cond_wait(&s->slot_cv, &s->lock);
}

/* Parks c's item until a core is handed back to it (lock held). A worker
 * hands it one when the policy would pick it (best_parked); so does the
 * item itself when a slot is free and it is the best, or when no worker
 * is left to run the policy's pick (then it takes the slot rather than
 * leave it unused). */
static void park(struct sched *s, struct sched_ctx *c, uint64_t now)
{
    park_out(s, c, now);
    while (!c->granted)
        park_wait(s, c);
}

/* A preemption point of c's item (on its core): parks it if the policy
 * says so (want_park), at most one look every SCHED_CHECK_NS. */
static void point(struct sched_ctx *c)
{
    if (c->off || !c->s->pol->preempt)
        return;
    uint64_t now = now_ns();
    if (now < c->next_check)
        return;
    c->next_check = now + SCHED_CHECK_NS;
    struct sched *s = c->s;
    pthread_mutex_lock(&s->lock);
    if (want_park(s, c, now))
        park(s, c, now);
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
}

void sched_preempt_point(void)
{
    struct sched_ctx *c = cur;
    if (c && c->preempt)
        point(c);
}

void sched_preempt_point_done(void)
{
    struct sched_ctx *c = cur;
    if (c && !c->prev)   /* a nested run's outer item may hold locks */
        point(c);
}

/* Waits on slot_cv until the CLOCK_MONOTONIC time `at` at the latest (lock
 * held). */
static void wait_until(struct sched *s, uint64_t at)
{
    struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
    pthread_cond_timedwait(&s->slot_cv, &s->lock, &ts);
}

/* Sleeper c's own look at its slice (lock held): parks it when due. */
static void sleeper_point(struct sched *s, struct sched_ctx *c, uint64_t now)
{
    if (now < c->next_check)
        return;
    c->next_check = now + SCHED_CHECK_NS;
    if (want_park(s, c, now))
        park_out(s, c, now);
}

/* Parks the sleepers (sched_sleep_done) that the policy's next pick should
 * replace now (lock held; after an item was queued): a sleeping item needs
 * no host CPU to be parked, so its thread's late wake-up on a busy host
 * does not hold the core against the policy. */
static void kick_sleepers(struct sched *s)
{
    if (!s->nsleepers || !s->pol->preempt)
        return;
    uint64_t now = now_ns();
    for (unsigned i = 0; i < s->nsleepers; i++) {
        struct sched_ctx *c = s->sleepers[i];
        if (!c->off && now - c->t0 >= SCHED_SLEEP_SLICE_NS && want_park(s, c, now))
            park_out(s, c, now);
    }
}

/* Removes c from the sleepers (lock held). */
static void sleeper_del(struct sched *s, struct sched_ctx *c)
{
    unsigned i = 0;
    while (s->sleepers[i] != c)
        i++;
    s->sleepers[i] = s->sleepers[--s->nsleepers];
}

uint64_t sched_sleep_done(uint64_t ns)
{
    struct sched_ctx *c = cur;
    uint64_t t0 = now_ns();
    if (!c || c->off || c->prev || !c->s->pol->preempt) {   /* nothing can park it */
        struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
        nanosleep(&ts, NULL);   /* EINTR: the caller counts what elapsed */
        return now_ns() - t0;
    }
    struct sched *s = c->s;
    uint64_t off0 = c->off_ns, on = 0;
    pthread_mutex_lock(&s->lock);
    s->sleepers[s->nsleepers++] = c;
    if (c->next_check > c->t0 + SCHED_SLEEP_SLICE_NS)   /* looks sooner: see the define */
        c->next_check = t0 > c->t0 + SCHED_SLEEP_SLICE_NS ? t0 : c->t0 + SCHED_SLEEP_SLICE_NS;
    for (;;) {
        if (c->off) {   /* parked, by itself or by a thread that queued an item */
            park_wait(s, c);
            continue;
        }
        uint64_t now = now_ns();
        on = now - t0 - (c->off_ns - off0);
        if (on >= ns)
            break;
        sleeper_point(s, c, now);
        if (c->off)
            continue;
        uint64_t at = now + (ns - on);
        wait_until(s, at < c->next_check ? at : c->next_check);   /* or its next look */
    }
    sleeper_del(s, c);
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
    return on;
}

void sched_block(bool on_lock)
{
    struct sched_ctx *c = cur;
    if (!c || c->off)
        return;
    struct sched *s = c->s;
    pthread_mutex_lock(&s->lock);
    leave_core(s, c, now_ns());
    c->on_lock = on_lock;
    s->lock_waiters += on_lock;
    s->blocks++;
    worker_for_slot(s);   /* best effort: a thread for the slot it left */
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
}

void sched_unblock(void)
{
    struct sched_ctx *c = cur;
    if (!c || !c->off)
        return;
    struct sched *s = c->s;
    pthread_mutex_lock(&s->lock);
    s->lock_waiters -= c->on_lock;
    c->on_lock = false;
    uint64_t ticket = s->resume_ticket++;
    s->resumers++;
    while (s->busy == s->cores || ticket != s->resume_serve)
        pthread_cond_wait(&s->slot_cv, &s->lock);
    s->resume_serve++;
    s->resumers--;
    back_on(s, c);
    if (s->resumers)
        pthread_cond_broadcast(&s->slot_cv);   /* the next turn */
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
}

unsigned sched_core_now(unsigned core)
{
    return cur ? cur->slot : core;
}

uint64_t sched_off_core_ns(void)
{
    return cur ? cur->off_ns : 0;
}

/* ---- worker threads ------------------------------------------------------ */

/* An idle worker waits for work (lock held). A worker beyond the cores'
 * own waits at most worker_idle_ns: returns true when that passed (it may
 * exit, worker_exit), false when woken. Sleeps either way, never polls. */
static bool idle_wait(struct sched *s)
{
    if (s->nthreads <= s->cores) {
        pthread_cond_wait(&s->work, &s->lock);
        return false;
    }
    uint64_t at = now_ns() + s->worker_idle_ns;
    struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
    return pthread_cond_timedwait(&s->work, &s->lock, &ts) == ETIMEDOUT;
}

/* The calling worker, idle for worker_idle_ns with more workers than
 * cores, leaves (lock held): off the live list, joined by the next to
 * leave or by sched_destroy. The cores' own number always stays: a
 * worker is started again when a parked or blocked item leaves a slot
 * without one (want_park, worker_for_slot). */
static void worker_exit(struct sched *s)
{
    pthread_t self = pthread_self();
    unsigned i = 0;
    while (i < s->nthreads && !pthread_equal(s->threads[i], self))
        i++;
    assert(i < s->nthreads);
    s->threads[i] = s->threads[--s->nthreads];
    if (s->has_reaped)
        pthread_join(s->reaped, NULL);   /* it has left: returns at once */
    s->reaped = self;
    s->has_reaped = true;
}

/* Waits for an item and a free slot (taken at *t0); false when stopping
 * and drained, or when the calling worker is an extra one that was idle
 * too long. */
static bool take(struct sched *s, struct sched_item **it, unsigned *slot, uint64_t *t0)
{
    bool idle_long = false;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        bool tight;
        if (slots_open(s)) {
            struct sched_ctx *p = best_parked(s);
            if (p) {   /* its thread runs it: this one looks for more */
                grant(s, p);
                continue;
            }
            if (choose(s, &tight)) {
                *it = s->pol->pop(s->q, tight);
                break;
            }
        }
        if (s->stopping && s->depth == 0) {
            pthread_mutex_unlock(&s->lock);
            return false;
        }
        if (idle_long && s->nthreads > s->cores && !s->stopping) {
            worker_exit(s);
            pthread_mutex_unlock(&s->lock);
            return false;
        }
        s->idle++;
        idle_long = idle_wait(s);
        s->idle--;
    }
    s->depth--;
    *t0 = now_ns();
    *slot = slot_get(s, *t0);
    started(s, *it, true, *t0);
    /* one finish may have freed memory for several: pass the wake-up on */
    bool chain = s->depth > 0 && s->idle > 0 && slots_open(s);
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
    if (chain)
        pthread_cond_signal(&s->work);
    return true;
}

static void *core_main(void *p)
{
    struct sched *s = p;
    struct sched_item *it;
    unsigned slot;
    uint64_t t0;
    while (take(s, &it, &slot, &t0))
        run_on(s, it, slot, true, t0);
    return NULL;
}

static int spawn_worker(struct sched *s)
{
    if (s->nthreads >= SCHED_THREADS_MAX || s->stopping)
        return -EAGAIN;
    int r = thread_start_quiet(&s->threads[s->nthreads], core_main, s);
    if (!r)
        s->nthreads++;
    return r;
}

static int start_cores(struct sched *s)
{
    /* Cores never take signals: the device's main thread handles them. */
    while (s->nthreads < s->cores) {
        int r = thread_start_quiet(&s->threads[s->nthreads], core_main, s);
        if (r)
            return r;
        s->nthreads++;
    }
    return 0;
}

int sched_create(const struct sched_policy *pol, const struct sched_config *cfg,
                 sched_run_fn run, void *arg, struct sched **out)
{
    if (!pol || !run || cfg->cores < 1 || cfg->cores > SCHED_MAX_CORES)
        return -EINVAL;
    struct sched *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->pol = pol;
    s->run = run;
    s->arg = arg;
    s->cores = cfg->cores;
    s->direct = cfg->direct;
    s->tenant_pid = cfg->tenant_pid;
    uint64_t budget = cfg->mem_budget ? cfg->mem_budget : SCHED_MEM_DEFAULT;
    s->mem_budget = budget;
    sched_acct_init(&s->acct, cfg->cores, budget);
    s->acct.max_queues = cfg->max_queues;
    s->free_slots = cfg->cores == 64 ? ~0ull : (1ull << cfg->cores) - 1;
    s->q = pol->create(&(struct sched_env){ cfg->cores, budget, SCHED_WAKE_CREDIT_NS });
    s->threads = calloc(SCHED_THREADS_MAX, sizeof(pthread_t));
    sched_acct_bind(&s->acct, pol, s->q);
    if (!s->q || !s->threads) {
        if (s->q)
            pol->destroy(s->q);
        free(s->threads);
        free(s);
        return -ENOMEM;
    }
    s->worker_idle_ns = cfg->worker_idle_ns ? cfg->worker_idle_ns : SCHED_WORKER_IDLE_NS;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* now_ns's clock (idle_wait) */
    pthread_cond_init(&s->work, &ca);
    pthread_cond_init(&s->idle_cv, NULL);
    pthread_cond_init(&s->slot_cv, &ca);   /* sched_sleep_done's timed waits */
    pthread_condattr_destroy(&ca);
    int r = start_cores(s);
    if (r) {
        sched_destroy(s);
        return r;
    }
    *out = s;
    return 0;
}

/* Queued work and a free slot but no idle worker, because items are off
 * their cores on the workers' threads (lock held): one more worker, so
 * that the slot does not stay unused until one comes back. */
static void worker_for_slot(struct sched *s)
{
    if (s->depth > 0 && s->off > 0 && s->idle == 0 && slots_open(s))
        spawn_worker(s);
}

/* Queues it; lock held. Returns 0 or -ENOMEM. */
static int enqueue(struct sched *s, struct sched_item *it)
{
    int r = s->pol->push(s->q, it);
    if (r)
        return r;
    sched_acct_queued(&s->acct, it);
    if (++s->depth > s->max_depth)
        s->max_depth = s->depth;
    return 0;
}

static int submit(struct sched *s, struct sched_item *it, bool direct)
{
    uint64_t now = now_ns();   /* the submission, and a direct run's start */
    it->t_submit_ns = now;
    it->ran_ns = 0;   /* a command parked on a lease comes again (engine.c) */
    pthread_mutex_lock(&s->lock);
    int r = s->stopping ? -ESHUTDOWN : sched_acct_resolve(&s->acct, it);
    if (r) {
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    /* Direct dispatch: nothing waits and a core is free, so the submitter
     * runs the item in that core's slot instead of waking a worker. */
    if (direct && s->direct && s->depth == 0 && slots_open(s) && !s->nparked &&
        (!s->pol->mem_admit || fits(s, it))) {
        s->submitted++;
        unsigned slot = slot_get(s, now);
        s->direct_runs++;
        started(s, it, false, now);
        assert(sched_check(s));
        pthread_mutex_unlock(&s->lock);
        run_on(s, it, slot, false, now);
        return 0;
    }
    r = enqueue(s, it);
    s->submitted += r == 0;
    if (!r)
        kick_sleepers(s);
    bool wake = !r && s->idle > 0 && slots_open(s);
    worker_for_slot(s);
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
    if (wake)
        pthread_cond_signal(&s->work);
    return r;
}

/* Queues one item of a batch (lock held). */
static int batch_push(struct sched *s, struct sched_item *it)
{
    it->t_submit_ns = now_ns();
    it->ran_ns = 0;
    int r = s->stopping ? -ESHUTDOWN : sched_acct_resolve(&s->acct, it);
    if (!r)
        r = enqueue(s, it);
    s->submitted += r == 0;
    return r;
}

/* Takes the policy's next item if mine() accepts it and a slot is free
 * (lock held; taken at *t0); NULL otherwise. */
static struct sched_item *help_take(struct sched *s, unsigned *slot, uint64_t *t0,
                                    sched_mine_fn mine, void *arg)
{
    bool tight;
    if (!s->direct || !slots_open(s) || best_parked(s))
        return NULL;   /* queue dispatch: cores only; a parked item comes first */
    struct sched_item *it = choose(s, &tight);
    if (!it || !mine(arg, it))
        return NULL;
    it = s->pol->pop(s->q, tight);
    s->depth--;
    s->direct_runs++;
    *t0 = now_ns();
    *slot = slot_get(s, *t0);
    started(s, it, true, *t0);
    assert(sched_check(s));
    return it;
}

void sched_submit_batch(struct sched *s, struct sched_item **items, unsigned n, int *err,
                        sched_mine_fn mine, void *arg)
{
    pthread_mutex_lock(&s->lock);
    for (unsigned i = 0; i < n; i++)
        err[i] = batch_push(s, items[i]);
    kick_sleepers(s);
    assert(sched_check(s));
    for (;;) {
        unsigned slot;
        uint64_t t0;
        struct sched_item *it = help_take(s, &slot, &t0, mine, arg);
        if (!it)
            break;
        pthread_mutex_unlock(&s->lock);
        run_on(s, it, slot, false, t0);   /* in the policy's order, charged like any */
        pthread_mutex_lock(&s->lock);
    }
    unsigned free_slots = slots_open(s) ? s->cores - s->busy - s->resumers : 0;
    worker_for_slot(s);
    unsigned wake = s->depth < free_slots ? (unsigned)s->depth : free_slots;
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < wake; i++)
        pthread_cond_signal(&s->work);
}

int sched_submit(struct sched *s, struct sched_item *it)
{
    return submit(s, it, true);
}

int sched_submit_handoff(struct sched *s, struct sched_item *it)
{
    return submit(s, it, false);
}

void sched_get_stats(struct sched *s, struct sched_stats *st)
{
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&s->lock);
    st->policy = s->pol->name;
    st->cores = s->cores;
    st->direct = s->direct;
    st->submitted = s->submitted;
    st->completed = s->completed;
    st->direct_runs = s->direct_runs;
    st->depth = s->depth;
    st->max_depth = s->max_depth;
    st->busy = s->busy;
    st->tenants = s->acct.tenants.n;
    st->queues = s->acct.queues.n;
    st->freed_tenants = s->acct.freed_tenants;
    st->freed_queues = s->acct.freed_queues;
    st->preemptions = s->preemptions;
    st->blocks = s->blocks;
    st->threads = s->nthreads;
    st->tenant_pid = s->tenant_pid;
    memcpy(st->core, s->core, sizeof(st->core));
    pthread_mutex_unlock(&s->lock);
}

/* One tenant's numbers (lock held). */
static void tenant_stats(const struct sched *s, const struct sched_tenant *t,
                         struct sched_tenant_stats *o)
{
    const struct sched_accts *a = &s->acct;
    double core = a->core_ns ? (double)t->core_ns / (double)a->core_ns : 0.0;
    double mem = a->mem_bns > 0 ? t->mem_bns / a->mem_bns : 0.0;
    *o = (struct sched_tenant_stats){
        .id = t->id, .weight = t->weight, .queues = t->queues_open, .vt = t->vt,
        .core_ns = t->core_ns, .share = s->pol == &sched_drf && mem > core ? mem : core,
        .mem_use = t->mem_use, .mem_peak = t->mem_peak, .queued = t->queued,
        .running = t->running, .done = t->done, .throttled_ns = t->throttled_ns,
        .overtaken = t->overtaken,
        .terminated = t->terminated, .preempted = t->preempted,
        .backlog_ns = sched_acct_backlog(a, t, now_ns()),
    };
}

unsigned sched_tenant_stats(struct sched *s, struct sched_tenant_stats *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&s->lock);
    const struct acct_map *m = &s->acct.tenants;
    for (size_t i = 0; i < m->cap; i++)
        if (m->val[i] && n++ < max)
            tenant_stats(s, m->val[i], &out[n - 1]);
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* One queue's row (lock held). */
static void queue_row(const struct sched *s, const struct sched_queue *q, struct sched_row *o)
{
    const struct sched_accts *a = &s->acct;
    *o = (struct sched_row){
        .is_queue = true, .queue = q->id,
        .st = { .id = q->t->id, .weight = q->t->weight, .vt = q->vt, .core_ns = q->core_ns,
                .share = a->core_ns ? (double)q->core_ns / (double)a->core_ns : 0.0,
                .mem_use = q->mem_use, .mem_peak = q->mem_peak, .queued = q->queued,
                .running = q->running, .done = q->done },
        .lat = q->lat,
    };
}

unsigned sched_rows(struct sched *s, struct sched_row *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&s->lock);
    const struct acct_map *m = &s->acct.tenants;
    for (size_t i = 0; i < m->cap; i++) {
        const struct sched_tenant *t = m->val[i];
        if (t && n++ < max) {
            out[n - 1] = (struct sched_row){ .lat = t->lat };
            tenant_stats(s, t, &out[n - 1].st);
        }
    }
    m = &s->acct.queues;
    for (size_t i = 0; i < m->cap; i++)
        if (m->val[i] && n++ < max)
            queue_row(s, m->val[i], &out[n - 1]);
    pthread_mutex_unlock(&s->lock);
    return n;
}

int sched_tenant_weight(struct sched *s, uint32_t tenant, uint32_t weight)
{
    if (weight < SCHED_WEIGHT_MIN || weight > SCHED_WEIGHT_MAX)
        return -EINVAL;
    pthread_mutex_lock(&s->lock);
    struct sched_tenant *t = sched_acct_tenant(&s->acct, tenant);
    if (t) {
        t->weight = weight;   /* counts from the next charge on */
        sched_acct_idle_check(&s->acct, t);
    }
    pthread_mutex_unlock(&s->lock);
    return t ? 0 : -ENOMEM;
}

int sched_queue_open(struct sched *s, uint32_t tenant)
{
    pthread_mutex_lock(&s->lock);
    struct sched_tenant *t = sched_acct_tenant(&s->acct, tenant);
    int r = !t ? -ENOMEM
            : s->acct.max_queues && t->queues_open >= s->acct.max_queues ? -EDQUOT : 0;
    if (!r)
        t->queues_open++;
    if (t)
        sched_acct_idle_check(&s->acct, t);
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
    return r;
}

void sched_queue_close(struct sched *s, uint32_t tenant)
{
    pthread_mutex_lock(&s->lock);
    struct sched_tenant *t = sched_acct_find(&s->acct, tenant);
    assert(t && t->queues_open > 0);
    if (t && t->queues_open) {
        t->queues_open--;
        sched_acct_idle_check(&s->acct, t);
    }
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
}

void sched_note_terminated(struct sched *s, const struct sched_item *it)
{
    pthread_mutex_lock(&s->lock);
    it->sq->t->terminated++;
    pthread_mutex_unlock(&s->lock);
}

/* Whether the calling thread's item c, starting to wait for memory, keeps
 * its core (lock held): under a policy blind to memory (mem_hold), while
 * another core stays free of such waiters. That one core is what makes
 * it safe: the memory waited for may be an item's that is off its core
 * (parked, or blocked and coming back), and needs a core to finish. */
static bool mem_keeps_core(struct sched *s, const struct sched_ctx *c)
{
    return s->pol->mem_hold && c && c->s == s && !c->off && s->mem_holders + 1 < s->cores;
}

void sched_mem_wait(struct sched *s, int delta)
{
    struct sched_ctx *c = cur;
    bool held = false;
    pthread_mutex_lock(&s->lock);
    assert(delta > 0 || s->mem_waiting >= (unsigned)-delta);
    s->mem_waiting += (unsigned)delta;
    if (delta > 0 && mem_keeps_core(s, c)) {
        c->mem_hold = held = true;
        s->mem_holders++;
    } else if (delta < 0 && c && c->mem_hold) {
        c->mem_hold = false;
        held = true;
        s->mem_holders--;
    }
    assert(sched_check(s));
    pthread_mutex_unlock(&s->lock);
    /* Otherwise the waiter holds no core meanwhile: the memory it waits
     * for may be a parked item's, which needs a core to finish. */
    if (held)
        return;
    if (delta > 0)
        sched_block(false);
    else
        sched_unblock();
}

void sched_drain(struct sched *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->busy || s->depth || s->off)
        pthread_cond_wait(&s->idle_cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

void sched_destroy(struct sched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    assert(sched_check(s));
    pthread_cond_broadcast(&s->work);
    unsigned n = s->nthreads;   /* no more start or exit once stopping */
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < n; i++)
        pthread_join(s->threads[i], NULL);
    if (s->has_reaped)
        pthread_join(s->reaped, NULL);
    s->pol->destroy(s->q);
    sched_acct_free(&s->acct);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle_cv);
    pthread_cond_destroy(&s->slot_cv);
    pthread_mutex_destroy(&s->lock);
    free(s->threads);
    free(s);
}
