/* device/sched.c - worker threads ("device cores") and the FIFO policy. */
#include "device/sched.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long an idle core polls before it sleeps (CISC_SCHED_SPIN_NS
 * overrides; experiment knob). */
static uint64_t spin_ns(void)
{
    const char *e = getenv("CISC_SCHED_SPIN_NS");
    return e ? strtoull(e, NULL, 10) : 0;
}

struct sched {
    const struct sched_policy *pol;
    void *q;
    sched_run_fn run;
    void *arg;
    unsigned cores;
    pthread_t *threads;
    pthread_mutex_t lock;      /* protects everything below and q */
    pthread_cond_t work;       /* signalled when an item is queued or on stop */
    pthread_cond_t idle_cv;    /* signalled when the last running item finishes */
    bool stopping;
    bool spinning;             /* one idle core is polling (spin_for_work) */
    unsigned idle;             /* cores waiting on `work` */
    unsigned busy;
    uint64_t submitted, completed, depth, max_depth;
    struct sched_core_stats core[SCHED_MAX_CORES];
    /* Lock-free mirrors read by the spinning core (written under lock). */
    uint64_t depth_hint;
    bool stopping_hint;
    uint64_t spin_ns;
};

struct core_arg {
    struct sched *s;
    unsigned core;
};

uint64_t sched_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- FIFO policy: one list, oldest first ---------------------------- */

struct fifo {
    struct sched_item *head, **tailp;
};

static void *fifo_create(unsigned cores)
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

static void fifo_push(void *q, struct sched_item *it)
{
    struct fifo *f = q;
    it->next = NULL;
    *f->tailp = it;
    f->tailp = &it->next;
}

static struct sched_item *fifo_pop(void *q, unsigned core)
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

const struct sched_policy sched_fifo = {
    .name = "fifo",
    .create = fifo_create,
    .destroy = fifo_destroy,
    .push = fifo_push,
    .pop = fifo_pop,
    .charge = fifo_charge,
};

static const struct sched_policy *const policies[] = { &sched_fifo };

const struct sched_policy *sched_policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (!strcmp(policies[i]->name, name))
            return policies[i];
    return NULL;
}

/* ---- the cores -------------------------------------------------------- */

/* Polls for work without the lock for up to SCHED_SPIN_NS; returns true
 * if something was queued meanwhile. */
static bool spin_for_work(struct sched *s)
{
    uint64_t deadline = sched_now_ns() + s->spin_ns;
    do {
        /* Pairs with the release store in sched_submit. */
        if (__atomic_load_n(&s->depth_hint, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&s->stopping_hint, __ATOMIC_RELAXED))
            return true;
        for (int i = 0; i < 64; i++)
            __builtin_ia32_pause();
    } while (sched_now_ns() < deadline);
    return false;
}

/* Waits for an item; NULL when stopping and the queue is empty. At most
 * one idle core spins (polls) before sleeping, so a burst of requests
 * finds a core awake without a wake-up, and the other idle cores leave the
 * CPUs to the host. */
static struct sched_item *take(struct sched *s, unsigned core)
{
    pthread_mutex_lock(&s->lock);
    struct sched_item *it;
    while (!(it = s->pol->pop(s->q, core)) && !s->stopping) {
        if (!s->spinning && s->spin_ns) {
            s->spinning = true;
            pthread_mutex_unlock(&s->lock);
            spin_for_work(s);
            pthread_mutex_lock(&s->lock);
            s->spinning = false;
            continue;   /* a submitter that saw us spinning did not signal */
        }
        s->idle++;
        pthread_cond_wait(&s->work, &s->lock);
        s->idle--;
    }
    if (it) {
        s->depth--;
        __atomic_store_n(&s->depth_hint, s->depth, __ATOMIC_RELAXED);
        s->busy++;
    }
    pthread_mutex_unlock(&s->lock);
    return it;
}

static void finish(struct sched *s, unsigned core, struct sched_item *copy, uint64_t ns)
{
    pthread_mutex_lock(&s->lock);
    s->pol->charge(s->q, copy, ns);
    s->busy--;
    s->completed++;
    s->core[core].executed++;
    s->core[core].busy_ns += ns;
    bool quiet = s->busy == 0 && s->depth == 0;
    pthread_mutex_unlock(&s->lock);
    if (quiet)
        pthread_cond_broadcast(&s->idle_cv);
}

static void *core_main(void *p)
{
    struct core_arg ca = *(struct core_arg *)p;
    free(p);
    struct sched *s = ca.s;
    struct sched_item *it;
    while ((it = take(s, ca.core))) {
        struct sched_item copy = *it;   /* run() may free it */
        uint64_t t0 = sched_now_ns();
        s->run(s->arg, it, ca.core);
        finish(s, ca.core, &copy, sched_now_ns() - t0);
    }
    return NULL;
}

static int start_cores(struct sched *s)
{
    sigset_t all, old;
    sigfillset(&all);
    /* Cores never take signals: the device's main thread handles them. */
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = 0;
    unsigned started = 0;
    while (started < s->cores) {
        struct core_arg *ca = malloc(sizeof(*ca));
        if (!ca) {
            r = ENOMEM;
            break;
        }
        *ca = (struct core_arg){ s, started };
        r = pthread_create(&s->threads[started], NULL, core_main, ca);
        if (r) {
            free(ca);
            break;
        }
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    s->cores = started;   /* sched_destroy joins only the ones that started */
    return -r;
}

int sched_create(const struct sched_policy *pol, unsigned cores, sched_run_fn run,
                 void *arg, struct sched **out)
{
    if (!pol || !run || cores < 1 || cores > SCHED_MAX_CORES)
        return -EINVAL;
    struct sched *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->pol = pol;
    s->run = run;
    s->arg = arg;
    s->cores = cores;
    s->spin_ns = spin_ns();
    s->q = pol->create(cores);
    s->threads = calloc(cores, sizeof(pthread_t));
    if (!s->q || !s->threads) {
        if (s->q)
            pol->destroy(s->q);
        free(s->threads);
        free(s);
        return -ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    int r = start_cores(s);
    if (r) {
        sched_destroy(s);
        return r;
    }
    *out = s;
    return 0;
}

int sched_submit(struct sched *s, struct sched_item *it)
{
    it->t_submit_ns = sched_now_ns();
    pthread_mutex_lock(&s->lock);
    if (s->stopping) {
        pthread_mutex_unlock(&s->lock);
        return -ESHUTDOWN;
    }
    s->pol->push(s->q, it);
    s->submitted++;
    if (++s->depth > s->max_depth)
        s->max_depth = s->depth;
    /* Pairs with the acquire load in spin_for_work. */
    __atomic_store_n(&s->depth_hint, s->depth, __ATOMIC_RELEASE);
    /* A spinning core takes it without a wake-up; wake a sleeper only when
     * there is more work than spinners. */
    bool wake = s->idle > 0 && (!s->spinning || s->depth > 1);
    pthread_mutex_unlock(&s->lock);
    if (wake)
        pthread_cond_signal(&s->work);
    return 0;
}

void sched_get_stats(struct sched *s, struct sched_stats *st)
{
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&s->lock);
    st->policy = s->pol->name;
    st->cores = s->cores;
    st->submitted = s->submitted;
    st->completed = s->completed;
    st->depth = s->depth;
    st->max_depth = s->max_depth;
    st->busy = s->busy;
    memcpy(st->core, s->core, sizeof(st->core));
    pthread_mutex_unlock(&s->lock);
}

void sched_drain(struct sched *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->busy || s->depth)
        pthread_cond_wait(&s->idle_cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

void sched_destroy(struct sched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    __atomic_store_n(&s->stopping_hint, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < s->cores; i++)
        pthread_join(s->threads[i], NULL);
    s->pol->destroy(s->q);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->lock);
    free(s->threads);
    free(s);
}
