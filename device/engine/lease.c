/* device/engine/lease.c - append leases (lease.h): a short list of the
 * inodes whose end a mount write(2) holds, the commands parked on them,
 * and a timer thread that breaks a lease whose parked commands waited
 * LEASE_WAIT_NS. */
#include "device/engine/lease.h"
#include "common/thread.h"

#include "device/engine/engine_int.h"
#include "common/clock.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct lease {
    struct lease *next;
    uint64_t ino;
    const struct hdl_table *tbl;   /* holder */
    uint64_t fh;
    uint64_t deadline_ns;          /* CLOCK_MONOTONIC (now_ns) */
    bool broken;                   /* deadline passed with commands parked */
    struct eng_cmd *parked;        /* linked through item.next (no queue holds them) */
    struct eng_cmd **parked_tail;
};

struct lease_table {
    struct engine *e;
    uint64_t wait_ns;              /* LEASE_WAIT_NS, or the engine's setting */
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* the timer: a command parked, or stop */
    struct lease *list;            /* protected by mu */
    /* Number of leases, changed under mu (relaxed stores). lease_enter
     * reads it holding only its inode's stripe: a lease on that inode was
     * granted under the same stripe, so the read comes after the grant in
     * the count's modification order, and the count stays >= 1 until that
     * lease is dropped. A zero read therefore means "none on this inode". */
    unsigned nleases;
    bool closed, stop;             /* protected by mu */
    pthread_t timer;
};

/* Invariant 1 and the count, for assert() at the changes (debug and
 * sanitizer builds). */
__attribute__((unused)) static bool table_ok(const struct lease_table *t)
{
    unsigned n = 0;
    for (const struct lease *l = t->list; l; l = l->next, n++) {
        if (l->broken && l->parked)
            return false;
        for (const struct lease *m = l->next; m; m = m->next)
            if (m->ino == l->ino)
                return false;
    }
    return n == t->nleases;
}

static struct lease **find(struct lease_table *t, uint64_t ino)
{
    struct lease **p = &t->list;
    while (*p && (*p)->ino != ino)
        p = &(*p)->next;
    return p;
}

static bool holds(const struct lease *l, const struct lease_who *w)
{
    return l->tbl == w->tbl && l->fh == w->fh;
}

/* Moves l's parked commands to the end of *out. */
static void take_parked(struct lease *l, struct eng_cmd **out)
{
    while (*out)
        out = (struct eng_cmd **)&(*out)->item.next;
    *out = l->parked;
    l->parked = NULL;
    l->parked_tail = &l->parked;
}

/* Removes the lease at *p; its parked commands go to *out. */
static void drop(struct lease_table *t, struct lease **p, struct eng_cmd **out)
{
    struct lease *l = *p;
    take_parked(l, out);
    *p = l->next;
    __atomic_store_n(&t->nleases, t->nleases - 1, __ATOMIC_RELAXED);
    free(l);
}

/* Submits the commands of list again (without any lock held). */
static void resume_all(struct lease_table *t, struct eng_cmd *list)
{
    while (list) {
        struct eng_cmd *c = list;
        list = (struct eng_cmd *)c->item.next;   /* before the scheduler relinks it */
        eng_resume(t->e, c);
    }
}

static void park(struct lease_table *t, struct lease *l, struct eng_cmd *c)
{
    c->item.next = NULL;
    *l->parked_tail = c;
    l->parked_tail = (struct eng_cmd **)&c->item.next;
    pthread_cond_signal(&t->cv);   /* the timer learns the deadline */
}

enum verdict { V_APPEND, V_END, V_PARK };

/* What an appender w does about lease l (NULL: none) at time now. */
static enum verdict judge(const struct lease *l, const struct lease_who *w, uint64_t now)
{
    if (!l || holds(l, w))
        return V_APPEND;
    if (w->ordered)
        return V_END;      /* the kernel's inode lock: the holder's write(2) is over */
    if (l->broken)
        return V_APPEND;   /* its parked commands waited long enough */
    if (!l->parked && now >= l->deadline_ns)
        return V_END;      /* the holder stopped (died, or its last piece was full) */
    return V_PARK;
}

int lease_enter(struct lease_table *t, uint64_t ino, const struct lease_who *w,
                struct eng_cmd *c)
{
    if (!__atomic_load_n(&t->nleases, __ATOMIC_RELAXED))   /* see nleases */
        return 0;
    struct eng_cmd *wake = NULL;
    pthread_mutex_lock(&t->mu);
    struct lease **p = find(t, ino);
    enum verdict v = judge(*p, w, now_ns());
    if (v == V_END)
        drop(t, p, &wake);
    else if (v == V_PARK)
        park(t, *p, c);
    assert(table_ok(t));
    pthread_mutex_unlock(&t->mu);
    resume_all(t, wake);
    return v == V_PARK;
}

/* A new lease on ino for w, or none when out of memory (the write then
 * just is not protected). */
static void grant(struct lease_table *t, uint64_t ino, const struct lease_who *w)
{
    struct lease *l = calloc(1, sizeof(*l));
    if (!l)
        return;
    l->ino = ino;
    l->tbl = w->tbl;
    l->fh = w->fh;
    l->deadline_ns = now_ns() + t->wait_ns;
    l->parked_tail = &l->parked;
    l->next = t->list;
    t->list = l;
    __atomic_store_n(&t->nleases, t->nleases + 1, __ATOMIC_RELAXED);
}

void lease_exit(struct lease_table *t, uint64_t ino, const struct lease_who *w, bool ok)
{
    if (!w->ordered)
        return;
    struct eng_cmd *wake = NULL;
    pthread_mutex_lock(&t->mu);
    struct lease **p = find(t, ino), *l = *p;
    if (ok && w->more) {
        if (!l && !t->closed)
            grant(t, ino, w);
        else if (l && holds(l, w) && !l->parked && !l->broken)
            l->deadline_ns = now_ns() + t->wait_ns;   /* renew */
    } else if (l && holds(l, w)) {
        drop(t, p, &wake);
    }
    assert(table_ok(t));
    pthread_mutex_unlock(&t->mu);
    resume_all(t, wake);
}

void lease_release(struct lease_table *t, uint64_t ino, const struct hdl_table *tbl,
                   uint64_t fh)
{
    struct eng_cmd *wake = NULL;
    pthread_mutex_lock(&t->mu);
    struct lease **p = find(t, ino);
    if (*p && (*p)->tbl == tbl && (*p)->fh == fh)
        drop(t, p, &wake);
    assert(table_ok(t));
    pthread_mutex_unlock(&t->mu);
    resume_all(t, wake);
}

uint64_t lease_parked(struct lease_table *t)
{
    uint64_t n = 0;
    pthread_mutex_lock(&t->mu);
    for (const struct lease *l = t->list; l; l = l->next)
        for (const struct eng_cmd *c = l->parked; c; c = (const struct eng_cmd *)c->item.next)
            n++;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* Breaks the leases whose deadline passed with commands parked (their
 * commands go to *out); returns the earliest deadline still to come. */
static uint64_t break_due(struct lease_table *t, uint64_t now, struct eng_cmd **out)
{
    uint64_t next = UINT64_MAX;
    for (struct lease *l = t->list; l; l = l->next) {
        if (!l->parked)
            continue;
        if (l->deadline_ns <= now) {
            l->broken = true;
            take_parked(l, out);
        } else if (l->deadline_ns < next) {
            next = l->deadline_ns;
        }
    }
    return next;
}

static void *timer_main(void *arg)
{
    struct lease_table *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct eng_cmd *wake = NULL;
        uint64_t next = break_due(t, now_ns(), &wake);
        assert(table_ok(t));
        if (wake) {
            pthread_mutex_unlock(&t->mu);
            resume_all(t, wake);
            pthread_mutex_lock(&t->mu);
        } else if (next == UINT64_MAX) {
            pthread_cond_wait(&t->cv, &t->mu);
        } else {
            struct timespec ts = { (time_t)(next / 1000000000ull),
                                   (long)(next % 1000000000ull) };
            pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        }
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int lease_table_create(struct engine *e, uint64_t wait_ns, struct lease_table **out)
{
    struct lease_table *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->e = e;
    t->wait_ns = wait_ns ? wait_ns : LEASE_WAIT_NS;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* now_ns's clock */
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&t->mu, NULL);
    int r = thread_start_quiet(&t->timer, timer_main, t);   /* no signals here either */
    if (r) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return r;
    }
    *out = t;
    return 0;
}

void lease_table_close(struct lease_table *t)
{
    struct eng_cmd *wake = NULL;
    pthread_mutex_lock(&t->mu);
    t->closed = true;
    while (t->list)
        drop(t, &t->list, &wake);
    assert(table_ok(t));
    pthread_mutex_unlock(&t->mu);
    resume_all(t, wake);
}

void lease_table_destroy(struct lease_table *t)
{
    if (!t)
        return;
    lease_table_close(t);
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->timer, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
