/*
 * device/queue/queue_poll.c - the pollers: sweep queue pairs, fetch submissions
 * within the CQ's room, copy each SQE once and have it validated into an
 * engine command (sqe.c), hand the sweep's commands to the scheduler;
 * keep the active set (idle queues sleep until their doorbell rings),
 * take and drop queues handed over. See queue.h for the design.
 */
#include "device/queue/queue_int.h"
#include "common/thread.h"

#include "common/clock.h"
#include "common/spin.h"
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
    /* No wait here for the submissions' crossing of the link: it is a
     * visibility time, added to each completion's arrival (queue_done.c
     * post), so a poller never burns a host CPU on the link model. */
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
    __atomic_store_n(&qp->fetched_to, qp->sq_head, __ATOMIC_RELAXED);   /* qp_drain_published */
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

/* The poller may run c itself (in a free core's slot). A command worth
 * handing off never runs here, not even alone or last of its sweep: a
 * poller serves every queue pair on it, and one long command (a bpf step
 * may run for the engine's whole op time ceiling, engine.h) would stall
 * them all. Nor does any command on slow device cores (--core-speed > 1):
 * there every command holds its core that many times its work (model.h),
 * and all that while the poller would fetch nothing, so the scheduler
 * would choose among the commands of the last sweep only, blind to what
 * the queues sent since (in bench-sched's 9a at core speed 16, cfs then
 * gave write-only 0.36-0.42 of the core time instead of its fair 0.47);
 * against a command's modelled time the hand-off is cheap. */
static bool run_here(const struct eng_cmd *c)
{
    return dm_get().core_speed <= 1.0 && !worth_handoff(c);
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

/* ---- the thread's array: active and asleep queues -------------------------- */

/* Doorbells one futex_waitv watches besides the poller's wake word. */
#define QP_WATCH (FUTEX_WAITV_MAX - 1u)
/* The asleep queues beyond QP_WATCH are checked every scan interval: 1 ms
 * after one of them rang, doubling while none does, up to 8 ms (so
 * a thousand idle queues cost about one doorbell load each per 8 ms). */
#define QP_SCAN_MIN_NS 1000000ull
#define QP_SCAN_MAX_NS 8000000ull

static void put_at(struct qp_poller *p, unsigned i, struct qp *qp)
{
    p->q[i] = qp;
    qp->pidx = i;
}

static void swap_at(struct qp_poller *p, unsigned i, unsigned j)
{
    struct qp *a = p->q[i];
    put_at(p, i, p->q[j]);
    put_at(p, j, a);
}

/* The active queue at i becomes the first asleep one. */
static void to_asleep(struct qp_poller *p, unsigned i)
{
    swap_at(p, i, --p->nactive);
}

/* The asleep queue at i becomes active. */
static void to_active(struct qp_poller *p, unsigned i)
{
    swap_at(p, i, p->nactive++);
}

static void set_need_wakeup(struct qp *qp, bool on)
{
    if (qp->dead)
        return;
    qp->sq_flags = on ? qp->sq_flags | WIRE_SQ_NEED_WAKEUP : qp->sq_flags & ~WIRE_SQ_NEED_WAKEUP;
    __atomic_store_n(&qp->hdr->sq_flags, qp->sq_flags, __ATOMIC_RELAXED);
}

static bool bells_on(const struct qp_poller *p)
{
    return p->bells.fd >= 0;
}

/* With the io_uring, has it wait on qp's doorbell from bell on (once:
 * a wait still pending from before is as good). Returns false if it
 * cannot, and qp must stay active: with the io_uring every asleep queue
 * is watched. */
static bool arm(struct qp_poller *p, struct qp *qp)
{
    if (!bells_on(p) || qp->armed)
        return true;
    qp->armed = !qp_bells_arm(&p->bells, &qp->hdr->sq_doorbell, qp->bell, false,
                              (uintptr_t)qp);
    return qp->armed;
}

/* Puts the active qp to sleep: announces it (NEED_WAKEUP), then rechecks.
 * Returns true if it went to sleep (it then left slot qp->pidx). */
static bool try_sleep(struct qp_poller *p, struct qp *qp)
{
    /* Read before the flag is set: any ring after the client saw the flag
     * changes the doorbell from this value. */
    qp->bell = __atomic_load_n(&qp->hdr->sq_doorbell, __ATOMIC_RELAXED);
    set_need_wakeup(qp, true);
    /* Pairs with the client's fence between its sq_tail store and its
     * sq_flags load: either it sees NEED_WAKEUP (and rings), or we see
     * its tail here. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (fetchable(qp) || !arm(p, qp)) {
        set_need_wakeup(qp, false);
        return false;
    }
    to_asleep(p, qp->pidx);
    return true;
}

/* Whether the active qp, with nothing to fetch, should go to sleep: it
 * has been idle for the window since its last fetch or completion, or all
 * it has are commands in flight on the device cores. A client that waits
 * for them submits again only after their completion, so spinning
 * meanwhile would only take a CPU from the cores running them; instead
 * the first completion rings qp's doorbell (queue_done.c), and the poller
 * spins the window after it. Inside a hold-off (the window is a brief
 * spin) nothing rings: the client's next submission does. */
static bool idle(struct qp *qp, uint64_t now, uint64_t window)
{
    uint64_t done = __atomic_load_n(&qp->done_ns, __ATOMIC_RELAXED);
    uint64_t last = qp->busy_ns > done ? qp->busy_ns : done;
    if (last >= now)
        return false;   /* a completion posted since this sweep began */
    if (now - last >= window)
        return true;
    if (window <= SPIN_BRIEF_NS)
        return false;
    /* Pairs with post()'s decrement of inflight and load of ring_on_done
     * (all sequentially consistent): either we see its command still in
     * flight and it sees the flag (and rings), or we see it done. */
    __atomic_store_n(&qp->ring_on_done, true, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&qp->inflight, __ATOMIC_SEQ_CST))
        return true;
    __atomic_store_n(&qp->ring_on_done, false, __ATOMIC_RELAXED);
    return false;
}

/* Fetches from every active queue; an idle one goes to sleep (above).
 * Hands the commands to the scheduler. Returns SQEs taken. */
static unsigned sweep(struct qp_poller *p, uint64_t window)
{
    struct qp_cmd *list = NULL, **tail = &list;
    unsigned did = 0;
    uint64_t now = now_ns();
    for (unsigned i = 0; i < p->nactive;) {
        struct qp *qp = p->q[i];
        unsigned n = fetch(qp, &tail);
        did += n;
        if (n)
            qp->busy_ns = now;
        else if (idle(qp, now, window) && try_sleep(p, qp))
            continue;   /* slot i now holds an active queue not yet fetched from */
        i++;
    }
    dispatch(p->svc->eng, list);
    return did;
}

/* The asleep qp becomes active; it stays so only if a sweep finds work on
 * it after busy (now - spin_ns: a ring that brought nothing sends it
 * straight back to sleep). */
static void wake_queue(struct qp_poller *p, struct qp *qp, uint64_t busy)
{
    set_need_wakeup(qp, false);
    qp->busy_ns = busy;
    to_active(p, qp->pidx);
}

/* Wakes the asleep queues at [from, to) whose doorbell rang since they
 * went to sleep (a client rings after every submission it makes while
 * NEED_WAKEUP is set, and after freeing CQ room). A woken queue stays
 * active only if a sweep finds work on it. */
static void check_asleep(struct qp_poller *p, unsigned from, unsigned to, uint64_t now,
                         uint64_t spin_ns)
{
    for (unsigned i = from; i < to; i++) {
        struct qp *qp = p->q[i];
        /* Pairs with the client's release increment of the doorbell
         * (ring_doorbell): the sq_tail it published before is visible to
         * the sweep that follows. */
        if (__atomic_load_n(&qp->hdr->sq_doorbell, __ATOMIC_ACQUIRE) != qp->bell)
            wake_queue(p, qp, now - spin_ns);   /* slot i takes one already checked */
    }
}

/* One completion of the io_uring: a doorbell rang (or changed before the
 * wait began), the wake word changed, or a cancellation. */
static void on_bell(void *arg, uint64_t tag, int32_t res)
{
    struct qp_poller *p = arg;
    (void)res;   /* woken, -EAGAIN (changed already) or -ECANCELED: all end the wait */
    if (tag == QP_BELL_TAG_WAKE) {
        p->wake_armed = false;
    } else if (tag != QP_BELL_TAG_CANCEL) {
        struct qp *qp = (struct qp *)(uintptr_t)tag;
        qp->armed = false;
        if (qp->pidx >= p->nactive)
            wake_queue(p, qp, now_ns() - p->window);
    }
}

/* The asleep queues a futex_waitv watches: the QP_WATCH most recently
 * asleep (the front of the asleep part). Returns the end of that range. */
static unsigned watched_end(const struct qp_poller *p)
{
    return p->nq - p->nactive > QP_WATCH ? p->nactive + QP_WATCH : p->nq;
}

/* Checks the watched doorbells, and the others when their scan is due. */
static void check_bells(struct qp_poller *p, uint64_t spin_ns)
{
    unsigned w = watched_end(p);
    uint64_t now = now_ns();
    check_asleep(p, p->nactive, w, now, spin_ns);
    if (w == p->nq || now < p->scan_at)
        return;
    unsigned before = p->nactive;
    check_asleep(p, w, p->nq, now, spin_ns);
    p->scan_ns = p->nactive > before ? QP_SCAN_MIN_NS
                 : 2 * p->scan_ns > QP_SCAN_MAX_NS ? QP_SCAN_MAX_NS : 2 * p->scan_ns;
    p->scan_at = now + p->scan_ns;
}

/* ---- the hand-over: adding and dropping queues --------------------------- */

static void poller_wake(struct qp_poller *p)
{
    /* Pairs with the acquire load of wake in poller_sleep: a poller that
     * reads the new value also sees the gen bumped before this, and does
     * not sleep; one that read the old value has its futex wait fail. */
    __atomic_add_fetch(&p->wake, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &p->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Tells the thread that the hand-over lists changed (lock held). */
static void poller_kick(struct qp_poller *p)
{
    __atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELAXED);   /* the thread peeks unlocked */
    poller_wake(p);
}

#ifndef NDEBUG
/* Checks the hand-over lists against n and invariant 6 (lock held).
 * O(queues not yet adopted or dropped). */
static bool poller_check(const struct qp_poller *p)
{
    unsigned n = 0;
    for (const struct qp *q = p->incoming; q; q = q->pnext, n++)
        assert(q->poller == p && !q->adopted && !q->dropped);
    for (const struct qp *q = p->doomed; q; q = q->pnext)
        assert(q->poller == p && q->adopted && q->doomed);
    assert(n + p->nq == p->n);
    assert(p->capq >= p->n || p->capspare >= p->n);   /* 6 */
    return true;
}

/* Checks the thread's array (thread, lock held): every queue polled
 * (6) sits where it says, not dropped (4). O(queues on p). */
static bool array_check(const struct qp_poller *p)
{
    assert(p->nactive <= p->nq && p->nq <= p->capq);
    for (unsigned i = 0; i < p->nq; i++)
        assert(p->q[i]->pidx == i && p->q[i]->poller == p && p->q[i]->adopted &&
               !p->q[i]->dropped);
    return true;
}
#endif

/* Makes sure the thread's array can hold n queues (lock held): a larger
 * array waits in spare until the thread's next adopt takes it, so the
 * thread never allocates. Returns 0 or -ENOMEM. */
static int reserve_watch(struct qp_poller *p, unsigned n)
{
    if (n <= p->capq || n <= p->capspare)
        return 0;
    unsigned cap = n < 8 ? 8 : 2 * n;
    struct qp **a = calloc(cap, sizeof(*a));
    if (!a)
        return -ENOMEM;
    free(p->spare);   /* never seen by the thread */
    p->spare = a;
    p->capspare = cap;
    return 0;
}

int qp_poller_add(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    int r = reserve_watch(p, p->n + 1);
    if (!r) {
        qp->poller = p;
        qp->pnext = p->incoming;
        p->incoming = qp;
        __atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELAXED);
        assert(poller_check(p));
        poller_kick(p);
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

void qp_poller_drop(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    if (!qp->adopted) {   /* still incoming: the thread never saw it */
        for (struct qp **pp = &p->incoming; *pp; pp = &(*pp)->pnext) {
            if (*pp == qp) {
                *pp = qp->pnext;
                break;
            }
        }
        qp->dropped = true;
        __atomic_store_n(&p->n, p->n - 1, __ATOMIC_RELAXED);
    } else if (!qp->doomed) {
        qp->doomed = true;
        qp->pnext = p->doomed;
        p->doomed = qp;
        poller_kick(p);
    }
    assert(poller_check(p));
    pthread_mutex_unlock(&p->lock);
}

void qp_poller_wait_dropped(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    while (!qp->dropped)
        pthread_cond_wait(&p->acked, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* Moves the array into spare, made larger by qp_poller_add (lock held). */
static void take_spare(struct qp_poller *p)
{
    if (p->nq)
        memcpy(p->spare, p->q, p->nq * sizeof(*p->q));
    free(p->q);
    p->q = p->spare;
    p->capq = p->capspare;
    p->spare = NULL;
    p->capspare = 0;
}

/* True while a doomed queue still has a wait in the io_uring. */
static bool doomed_armed(const struct qp_poller *p)
{
    for (const struct qp *q = p->doomed; q; q = q->pnext)
        if (q->armed)
            return true;
    return false;
}

/* Cancels the io_uring's waits on the doomed queues' doorbells and reaps
 * until none is left (lock held): a completion must never name a queue
 * already let go. Waiting for completions may wake other queues. */
static void disarm_doomed(struct qp_poller *p)
{
    for (struct qp *q = p->doomed; q; q = q->pnext)
        while (q->armed && qp_bells_cancel(&p->bells, (uintptr_t)q)) {
            qp_bells_wait(&p->bells);   /* full: make room */
            qp_bells_reap(&p->bells, on_bell, p);
        }
    while (doomed_armed(p)) {
        qp_bells_wait(&p->bells);
        qp_bells_reap(&p->bells, on_bell, p);
    }
}

/* Lets go of the doomed queues (lock held): from now on the thread never
 * touches them (invariant 4). */
static void drop_doomed(struct qp_poller *p)
{
    disarm_doomed(p);
    while (p->doomed) {
        struct qp *qp = p->doomed;
        p->doomed = qp->pnext;
        if (qp->pidx < p->nactive)
            to_asleep(p, qp->pidx);
        swap_at(p, qp->pidx, p->nq - 1);
        p->q[--p->nq] = NULL;
        qp->adopted = false;
        qp->dropped = true;
        __atomic_store_n(&p->n, p->n - 1, __ATOMIC_RELAXED);
    }
}

/* Takes the incoming queues into the array, active (lock held). */
static void take_incoming(struct qp_poller *p)
{
    uint64_t now = now_ns();
    while (p->incoming) {
        struct qp *qp = p->incoming;
        p->incoming = qp->pnext;
        qp->pnext = NULL;
        qp->adopted = true;
        qp->busy_ns = now;
        put_at(p, p->nq++, qp);
        to_active(p, qp->pidx);
    }
}

/* The thread takes what was handed over. Returns false when told to stop. */
static bool adopt(struct qp_poller *p)
{
    pthread_mutex_lock(&p->lock);
    bool go = !p->stop;
    if (p->n > p->capq)   /* qp_poller_add made room in spare (invariant 6) */
        take_spare(p);
    drop_doomed(p);
    take_incoming(p);
    assert(poller_check(p) && array_check(p));
    p->seen = p->gen;
    pthread_cond_broadcast(&p->acked);
    pthread_mutex_unlock(&p->lock);
    return go;
}

/* ---- sleeping ------------------------------------------------------------------- */

/* Sleeps on the wake word and the watched doorbells (futex_waitv), until
 * the others' scan is due; with an old kernel, naps up to 1 ms. */
static void wait_bells(struct qp_poller *p, uint32_t wk)
{
    struct futex_waitv w[FUTEX_WAITV_MAX];
    unsigned n = 0, end = watched_end(p);
    w[n++] = (struct futex_waitv){ .val = wk, .uaddr = (uintptr_t)&p->wake,
                                   .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
    for (unsigned i = p->nactive; i < end; i++)
        if (!p->q[i]->dead)
            w[n++] = (struct futex_waitv){ .val = p->q[i]->bell,
                                           .uaddr = (uintptr_t)&p->q[i]->hdr->sq_doorbell,
                                           .flags = FUTEX_32 };
    struct timespec until = { (time_t)(p->scan_at / 1000000000u),
                              (long)(p->scan_at % 1000000000u) };
    if (syscall(SYS_futex_waitv, w, n, 0, end < p->nq ? &until : NULL, CLOCK_MONOTONIC) >= 0 ||
        errno != ENOSYS)
        return;
    struct timespec ms = { 0, 1000000 };
    syscall(SYS_futex, &p->wake, FUTEX_WAIT_PRIVATE, wk, &ms, NULL, 0);
}

/* With no active queue: sleeps until a doorbell rings, a hand-over or a
 * scan is due, then wakes the queues that rang. */
static void poller_sleep(struct qp_poller *p, uint64_t spin_ns)
{
    /* Pairs with the release add in poller_wake: if this is the new
     * value, the gen check below sees the bump made before it. */
    uint32_t wk = __atomic_load_n(&p->wake, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&p->gen, __ATOMIC_RELAXED) != p->seen)
        return;
    __atomic_add_fetch(&p->svc->sleeps, 1, __ATOMIC_RELAXED);
    if (bells_on(p)) {
        /* A wait on the wake word still pending from before is as good:
         * nothing bumped it since (that would have completed it). */
        if (!p->wake_armed)
            p->wake_armed = !qp_bells_arm(&p->bells, &p->wake, wk, true, QP_BELL_TAG_WAKE);
        qp_bells_wait(&p->bells);
        qp_bells_reap(&p->bells, on_bell, p);
        return;
    }
    wait_bells(p, wk);
    check_bells(p, spin_ns);
}

/* One idle round of the spin (a sweep found nothing): if the thread was
 * descheduled since the last one (common/spin.h), the host has no CPU to
 * spare, and for a hold-off the window shrinks to a brief spin, so that
 * the active queues go to sleep at the next sweep. */
static void idle_round(struct qp_poller *p)
{
    if (spin_round(&p->gov, now_ns()))
        __atomic_add_fetch(&p->svc->contended, 1, __ATOMIC_RELAXED);
    else
        dm_cpu_relax();
}

static void *poller_main(void *arg)
{
    struct qp_poller *p = arg;
    p->spin_ns = (uint64_t)p->svc->poll_us * 1000u;
    p->scan_ns = QP_SCAN_MIN_NS;
    bool hold = !getenv("CISC_QP_NO_HOLDOFF");   /* tests of an uncontended poller */
    qp_bells_open(&p->bells);   /* in this thread: its completions run here */
    for (;;) {
        /* An unlocked peek: adopt() reads the lists and gen under p->lock,
         * so nothing needs ordering here. */
        if (__atomic_load_n(&p->gen, __ATOMIC_RELAXED) != p->seen) {
            if (!adopt(p))
                break;
            spin_rest(&p->gov);   /* it may have waited for the lock */
        }
        p->window = hold ? spin_budget(&p->gov, now_ns(), p->spin_ns) : p->spin_ns;
        if (!p->nactive) {
            poller_sleep(p, p->window);
            spin_rest(&p->gov);
            continue;
        }
        /* Active queues spin the window after their last work; asleep
         * ones that rang meanwhile join them. */
        if (sweep(p, p->window))
            spin_rest(&p->gov);   /* it worked: not a spin */
        else
            idle_round(p);
        if (!bells_on(p)) {
            check_bells(p, p->window);
        } else {
            if (p->bells.queued)
                spin_rest(&p->gov);   /* a system call follows: not a gap */
            qp_bells_submit(&p->bells);   /* the waits of queues just asleep */
            qp_bells_reap(&p->bells, on_bell, p);
        }
    }
    qp_bells_close(&p->bells);
    return NULL;
}

int qp_poller_start(struct qp_poller *p)
{
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->acked, NULL);
    int r = thread_start_quiet(&p->thread, poller_main, p);
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
        poller_kick(p);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
    }
    free(p->q);
    free(p->spare);
    pthread_cond_destroy(&p->acked);
    pthread_mutex_destroy(&p->lock);
}
