/*
 * device/queue/queue_poll.c - the pollers: sweep queue pairs, fetch submissions
 * within the CQ's room, copy each SQE once and have it validated into an
 * engine command (sqe.c), hand the sweep's commands to the scheduler;
 * spin, then sleep on every doorbell at once. See queue.h for the design.
 */
#include "device/queue/queue_int.h"

#include "common/clock.h"
#include "device/engine/fused/fused.h"
#include "device/queue/sqe.h"
#include "device/sched/model.h"
#include "device/sched/sched.h"

#include <assert.h>
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449   /* the same number on every architecture */
#endif

/* ---- fetching ---------------------------------------------------------------- */

/* How many more commands qp's CQ has room for (invariant 3). */
static uint32_t cq_room(struct qp *qp)
{
    /* inflight first, then cq_tail: a completion between the two loads is
     * counted twice, never missed (the completer bumps cq_tail, then
     * drops inflight). Both acquire loads pair with post()'s release
     * store of cq_tail and release drop of inflight: seeing the drop
     * means seeing the tail stored before it. */
    uint32_t inflight = __atomic_load_n(&qp->inflight, __ATOMIC_ACQUIRE);
    uint32_t tail = __atomic_load_n(&qp->cq_tail, __ATOMIC_ACQUIRE);
    /* Pairs with the client's release store of cq_head once it has read
     * the entries: slots below cq_head may be overwritten. */
    uint32_t head = __atomic_load_n(&qp->hdr->cq_head, __ATOMIC_ACQUIRE);
    uint32_t used = tail - head;
    if (used > qp->cq_entries || used + inflight >= qp->cq_entries)
        return 0;   /* full, or a garbage cq_head: only this queue stalls */
    return qp->cq_entries - used - inflight;
}

/* SQEs waiting on qp that may be fetched now; kills qp on garbage. */
static uint32_t fetchable(struct qp *qp)
{
    if (qp->dead)
        return 0;
    /* Pairs with the client's release store of sq_tail after it wrote the
     * entries: everything below sq_tail is visible. */
    uint32_t tail = __atomic_load_n(&qp->hdr->sq_tail, __ATOMIC_ACQUIRE);
    uint32_t avail = tail - qp->sq_head;
    if (avail > qp->sq_entries) {
        __atomic_add_fetch(&qp->sess->svc->dead, 1, __ATOMIC_RELAXED);
        qp_kill(qp);
        return 0;
    }
    if (!avail)
        return 0;
    uint32_t room = cq_room(qp);
    uint32_t n = avail < room ? avail : room;
    return n < QP_FETCH_BATCH ? n : QP_FETCH_BATCH;
}

/* Fetches what qp allows; appends commands to *tail. Returns SQEs taken. */
static unsigned fetch(struct qp *qp, struct qp_cmd ***tail)
{
    uint32_t n = fetchable(qp);
    if (!n)
        return 0;
    struct qp_service *svc = qp->sess->svc;
    dm_link_cross();   /* one crossing for the batch */
    for (uint32_t i = 0; i < n; i++) {
        struct wire_sqe s;
        memcpy(&s, &qp->sq[(qp->sq_head + i) & (qp->sq_entries - 1)], sizeof(s));
        __atomic_add_fetch(&qp->inflight, 1, __ATOMIC_RELAXED);
        struct qp_cmd *qc = NULL;
        int r = qp_sqe_decode(qp, &s, &qc);
        if (r) {
            __atomic_add_fetch(&svc->refused, 1, __ATOMIC_RELAXED);
            qp_post_error(qp, s.user_data, r);
            continue;
        }
        **tail = qc;
        *tail = &qc->next;
    }
    qp->sq_head += n;
    /* Pairs with the client's acquire load of sq_head: the slots are
     * copied (above), it may reuse them. */
    __atomic_store_n(&qp->hdr->sq_head, qp->sq_head, __ATOMIC_RELEASE);
    __atomic_add_fetch(&svc->fetched, n, __ATOMIC_RELAXED);
    assert(qp_check(qp));
    return n;
}

/* A command moving fewer bytes than this is run by the poller itself
 * (direct dispatch, in a free core's slot) even when more of its batch
 * follow: waking a device core costs a thread switch (5-20 us measured on
 * a 2-CPU host), more than such a command's whole work (an append-CRC of
 * 4 KiB takes about 3 us), so handing it over only adds switches. Larger
 * commands are worth spreading over free cores. */
#define QP_HANDOFF_MIN_BYTES (64u << 10)

/* Worth handing to another core: large, or may block or run long (an
 * fsync waits for a journal commit; a program may run its whole budget). */
static bool worth_handoff(const struct eng_cmd *c)
{
    switch (c->op) {
    case ENG_OP_READ: case ENG_OP_WRITE: case ENG_OP_APPEND:
        return c->len >= QP_HANDOFF_MIN_BYTES;
    case ENG_OP_STAT_PATH: case ENG_OP_FSTAT: case ENG_OP_NOP:
        return false;
    case ENG_OP_CISC:
        break;
    default:
        return true;
    }
    const struct eng_cisc *v = c->cisc;
    if (!v || v->status)
        return false;   /* refused by the decoder: completes at once */
    uint64_t bytes = v->mem;
    for (unsigned i = 0; i < v->n; i++) {
        const struct fop_step *s = &v->st[i];
        if (s->kind == WIRE_STEP_FSYNC || s->kind == WIRE_STEP_BPF)
            return true;
        bytes += s->src_len;
    }
    return bytes >= QP_HANDOFF_MIN_BYTES;
}

/* The poller may run c itself (in a free core's slot). */
static bool run_here(const struct eng_cmd *c)
{
    return !worth_handoff(c);
}

/* Hands a sweep's commands to the scheduler as one batch: the poller then
 * runs small ones (above) itself while a core slot is free, but only in
 * the order the policy picks them (a tenant flooding one queue does not
 * go before the others because its commands were fetched first); the
 * device cores take the rest, so a batch of large commands spreads over
 * free cores. */
static void dispatch(struct engine *e, struct qp_cmd *list)
{
    while (list) {
        struct eng_cmd *cmd[ENG_BATCH_MAX];
        int err[ENG_BATCH_MAX];
        unsigned n = 0;
        for (; list && n < ENG_BATCH_MAX; n++) {   /* detach first: a core may free them */
            struct qp_cmd *qc = list;
            list = qc->next;
            qc->next = NULL;
            cmd[n] = &qc->c;
        }
        eng_submit_batch(e, cmd, n, err, run_here);
        for (unsigned i = 0; i < n; i++)
            if (err[i]) {
                cmd[i]->ret = err[i];
                qp_cmd_done(cmd[i]);
            }
    }
}

static unsigned sweep(struct qp_poller *p)
{
    struct qp_cmd *list = NULL, **tail = &list;
    unsigned did = 0;
    for (unsigned i = 0; i < p->nsnap; i++)
        did += fetch(p->snap[i].qp, &tail);
    dispatch(p->svc->eng, list);
    return did;
}

/* ---- the poller's queue list ----------------------------------------------- */

static void poller_wake(struct qp_poller *p)
{
    /* Pairs with the acquire load of wake in poller_sleep: a poller that
     * reads the new value also sees the gen bumped before this, and does
     * not sleep; one that read the old value has its futex wait fail. */
    __atomic_add_fetch(&p->wake, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &p->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#ifndef NDEBUG
/* Checks the poller's list against its count and invariant 6 (lock
 * held). O(queues on p), only where the list changes. */
static bool poller_check(const struct qp_poller *p)
{
    unsigned n = 0;
    for (const struct qp *q = p->list; q; q = q->pnext, n++)
        assert(q->poller == p);
    assert(n == p->n);
    assert(p->capsnap >= n || p->capspare >= n);   /* 6 */
    assert(p->nsnap <= p->capsnap);
    return true;
}
#endif

/* Bumps gen, wakes the thread and waits until it works with the new list. */
static void poller_sync(struct qp_poller *p)
{
    uint32_t want = p->gen + 1;
    __atomic_store_n(&p->gen, want, __ATOMIC_RELAXED);   /* the thread peeks unlocked */
    poller_wake(p);
    while (p->started && (int32_t)(p->seen - want) < 0)
        pthread_cond_wait(&p->acked, &p->lock);
}

/* Makes sure the thread's copy can hold n queues (lock held): a larger
 * array waits in spare until the thread's next adopt takes it, so the
 * thread never allocates. Returns 0 or -ENOMEM. */
static int reserve_watch(struct qp_poller *p, unsigned n)
{
    if (n <= p->capsnap || n <= p->capspare)
        return 0;
    unsigned cap = n < 8 ? 8 : 2 * n;
    struct qp_watch *w = calloc(cap, sizeof(*w));
    if (!w)
        return -ENOMEM;
    free(p->spare);   /* never seen by the thread */
    p->spare = w;
    p->capspare = cap;
    return 0;
}

int qp_poller_add(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    int r = reserve_watch(p, p->n + 1);
    if (!r) {
        qp->poller = p;
        qp->pnext = p->list;
        p->list = qp;
        __atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELAXED);
        assert(poller_check(p));
        poller_sync(p);
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

void qp_poller_remove(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    for (struct qp **pp = &p->list; *pp; pp = &(*pp)->pnext) {
        if (*pp == qp) {
            *pp = qp->pnext;
            __atomic_store_n(&p->n, p->n - 1, __ATOMIC_RELAXED);
            break;
        }
    }
    assert(poller_check(p));
    poller_sync(p);   /* the thread no longer touches qp after this */
    for (unsigned i = 0; p->started && i < p->nsnap; i++)
        assert(p->snap[i].qp != qp);                  /* 4 */
    pthread_mutex_unlock(&p->lock);
}

/* The thread adopts the current list. Returns false when told to stop. */
static bool adopt(struct qp_poller *p)
{
    pthread_mutex_lock(&p->lock);
    bool go = !p->stop;
    if (p->n > p->capsnap) {   /* qp_poller_add made room in spare (invariant 6) */
        free(p->snap);
        p->snap = p->spare;
        p->capsnap = p->capspare;
        p->spare = NULL;
        p->capspare = 0;
    }
    p->nsnap = 0;
    for (struct qp *q = p->list; q && p->nsnap < p->capsnap; q = q->pnext)
        p->snap[p->nsnap++] = (struct qp_watch){ .qp = q };
    assert(p->nsnap == p->n && poller_check(p));      /* 6: every queue polled */
    p->seen = p->gen;
    pthread_cond_broadcast(&p->acked);
    pthread_mutex_unlock(&p->lock);
    return go;
}

/* ---- sleeping ------------------------------------------------------------------- */

static void set_need_wakeup(struct qp *qp, bool on)
{
    if (qp->dead)
        return;
    qp->sq_flags = on ? qp->sq_flags | WIRE_SQ_NEED_WAKEUP : qp->sq_flags & ~WIRE_SQ_NEED_WAKEUP;
    __atomic_store_n(&qp->hdr->sq_flags, qp->sq_flags, __ATOMIC_RELAXED);
}

/* Sleeps on the private word and every doorbell (futex_waitv), or, when
 * the kernel lacks it or there are too many queues, up to 1 ms. */
static void wait_bells(struct qp_poller *p, uint32_t wk)
{
    struct futex_waitv w[FUTEX_WAITV_MAX];
    unsigned n = 0;
    w[n++] = (struct futex_waitv){ .val = wk, .uaddr = (uintptr_t)&p->wake,
                                   .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
    for (unsigned i = 0; i < p->nsnap && n < FUTEX_WAITV_MAX; i++)
        if (!p->snap[i].qp->dead)
            w[n++] = (struct futex_waitv){ .val = p->snap[i].bell,
                                           .uaddr = (uintptr_t)&p->snap[i].qp->hdr->sq_doorbell,
                                           .flags = FUTEX_32 };
    if (p->nsnap < FUTEX_WAITV_MAX &&
        (syscall(SYS_futex_waitv, w, n, 0, NULL, CLOCK_MONOTONIC) >= 0 || errno != ENOSYS))
        return;
    struct timespec ms = { 0, 1000000 };
    syscall(SYS_futex, &p->wake, FUTEX_WAIT_PRIVATE, wk, &ms, NULL, 0);
}

/* Announces sleep on every queue, rechecks, sleeps. */
static void poller_sleep(struct qp_poller *p)
{
    /* Pairs with the release add in poller_wake: if this is the new
     * value, the gen check below sees the bump made before it. */
    uint32_t wk = __atomic_load_n(&p->wake, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < p->nsnap; i++) {
        struct qp_watch *w = &p->snap[i];
        w->bell = __atomic_load_n(&w->qp->hdr->sq_doorbell, __ATOMIC_RELAXED);
        set_need_wakeup(w->qp, true);
    }
    /* Pairs with the client's fence between its sq_tail store and its
     * sq_flags load: either it sees NEED_WAKEUP, or we see its tail. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    bool work = __atomic_load_n(&p->gen, __ATOMIC_RELAXED) != p->seen;
    for (unsigned i = 0; i < p->nsnap && !work; i++)
        work = fetchable(p->snap[i].qp) > 0;
    if (!work) {
        __atomic_add_fetch(&p->svc->sleeps, 1, __ATOMIC_RELAXED);
        wait_bells(p, wk);
    }
    for (unsigned i = 0; i < p->nsnap; i++)
        set_need_wakeup(p->snap[i].qp, false);
}

static void *poller_main(void *arg)
{
    struct qp_poller *p = arg;
    uint64_t spin_ns = (uint64_t)p->svc->poll_us * 1000u, idle_since = now_ns();
    bool woke = false;
    for (;;) {
        /* An unlocked peek: adopt() reads the list and gen under p->lock,
         * so nothing needs ordering here. */
        if (__atomic_load_n(&p->gen, __ATOMIC_RELAXED) != p->seen && !adopt(p))
            break;
        if (sweep(p)) {
            idle_since = now_ns();
            woke = false;
            continue;
        }
        /* Spin only after real work: a doorbell that brought nothing (a
         * client ringing for fun) sends the poller straight back to sleep. */
        if (!woke && now_ns() - idle_since < spin_ns) {
            dm_cpu_relax();
            continue;
        }
        poller_sleep(p);
        woke = true;
    }
    return NULL;
}

int qp_poller_start(struct qp_poller *p)
{
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->acked, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);   /* signals go to the main thread */
    int r = -pthread_create(&p->thread, NULL, poller_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    p->started = r == 0;
    return r;
}

void qp_poller_stop(struct qp_poller *p)
{
    if (!p->svc)
        return;   /* never initialised */
    if (p->started) {
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        __atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELAXED);
        poller_wake(p);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
    }
    free(p->snap);
    free(p->spare);
    pthread_cond_destroy(&p->acked);
    pthread_mutex_destroy(&p->lock);
}
