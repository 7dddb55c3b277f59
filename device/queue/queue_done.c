/*
 * device/queue/queue_done.c - completions: a finished command's results go into
 * the arena ranges it named and into its CQE; the CQE is posted (one link
 * crossing) and the client woken if it sleeps. Commands that changed what
 * the FUSE mount's kernel caches go through the notifier thread first.
 */
#include "device/queue/queue_int.h"

#include "common/clock.h"
#include "common/thread.h"

#include "device/engine/fused/fused.h"
#include "device/media/flash_media.h"
#include "device/sched/model.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void qp_futex_wake_shared(uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void qp_wake_client(struct qp *qp)
{
    qp_futex_wake_shared(&qp->hdr->cq_tail);
}

/* The client also increments the doorbell, atomically; the poller only
 * compares it with the value it slept on. */
void qp_ring_poller(struct qp *qp)
{
    __atomic_add_fetch(&qp->hdr->sq_doorbell, 1, __ATOMIC_RELEASE);
    qp_futex_wake_shared(&qp->hdr->sq_doorbell);
}

void qp_kill(struct qp *qp)
{
    __atomic_store_n(&qp->dead, true, __ATOMIC_RELAXED);   /* qp_drain_published reads it */
    qp->sq_flags |= WIRE_SQ_DEAD;
    /* Pairs with the client's acquire load of sq_flags (libcisc
     * queue_dead): a client that sees DEAD also sees every CQE posted
     * before, so it can reap them before giving up. */
    __atomic_store_n(&qp->hdr->sq_flags, qp->sq_flags, __ATOMIC_RELEASE);
    qp_wake_client(qp);
    assert(qp_check(qp));
}

static int64_t to_ns(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void put_stat(struct qp_cmd *qc)
{
    const struct sfs_attr *a = &qc->c.attr;
    struct wire_stat st = {
        .ino = a->ino, .size = a->size, .blocks = a->blocks, .nlink = a->nlink,
        .mode = a->mode, .uid = a->uid, .gid = a->gid,
        .atime_ns = to_ns(&a->atime), .mtime_ns = to_ns(&a->mtime),
        .ctime_ns = to_ns(&a->ctime),
    };
    qp_arena_write(&qc->qp->arena, qc->res_off, &st, sizeof(st));
}

int qp_fill_dirent(void *arg, const struct sfs_dirent *de, const struct sfs_attr *attr)
{
    struct qp_cmd *qc = arg;
    size_t nl = de->namelen > SFS_NAME_MAX ? SFS_NAME_MAX : de->namelen;
    size_t rec = (sizeof(struct wire_dirent) + nl + 1 + 7) & ~(size_t)7;
    if (qc->rd_used + rec > qc->res_len) {
        qc->rd_small = qc->rd_used == 0;
        return 1;
    }
    union {
        struct wire_dirent d;
        uint8_t b[sizeof(struct wire_dirent) + SFS_NAME_MAX + 8];
    } u;
    memset(&u, 0, rec);
    u.d.ino = de->ino;
    u.d.next = de->next_cookie;
    u.d.reclen = (uint16_t)rec;
    u.d.namelen = (uint16_t)nl;
    u.d.type = (uint8_t)de->type;
    memcpy(u.b + sizeof(struct wire_dirent), de->name, nl);
    qp_arena_write(&qc->qp->arena, qc->res_off + qc->rd_used, u.b, rec);
    qc->rd_used += (uint32_t)rec;
    qc->rd_next = de->next_cookie;
    return 0;
}

/* Builds the CQE from the engine's results (and writes STAT output). */
static void finish(struct qp_cmd *qc)
{
    struct eng_cmd *c = &qc->c;
    struct wire_cqe *q = &qc->cqe;
    memset(q, 0, sizeof(*q));
    q->user_data = qc->user_data;
    q->res = c->ret;
    if (qc->cisc) {   /* status, steps completed, each step's result */
        struct eng_cisc *v = qc->cisc;
        q->res = c->ret < 0 ? c->ret : v->status;
        q->aux = v->ran;
        qp_arena_write(&qc->qp->arena, qc->res_off, v->res,
                       (uint64_t)v->n * sizeof(struct wire_step_res));
        return;
    }
    if (c->ret < 0)
        return;
    switch (qc->wop) {
    case WIRE_OP_OPEN: q->aux = c->out_fh; break;
    case WIRE_OP_APPEND: q->aux = c->out_off; break;
    case WIRE_OP_STAT: put_stat(qc); break;
    case WIRE_OP_READDIR:
        q->res = qc->rd_small ? -EINVAL : (int64_t)qc->rd_used;
        q->aux = qc->rd_next;
        break;
    default: break;
    }
}

/* When a completion posted now leaves the device in the model (0 = now):
 * the command crossed the link to the device one latency after the
 * poller fetched it, so all it did happens one latency later than it ran
 * here, its media operations' completion (ready_ns, 0 = none) included.
 * The poller never waits for that crossing; the delay travels with the
 * completion instead. */
static uint64_t leaves_at(uint64_t ready_ns)
{
    uint64_t link = dm_get().link_latency_ns;
    if (!link)
        return ready_ns;
    uint64_t now = now_ns();
    return (ready_ns > now ? ready_ns : now) + link;
}

/* Writes cqe into qp's CQ and publishes it; drops one in-flight count.
 * The completion crosses the link: it carries its arrival time (its
 * command's crossing to the device, then its own, after the media), and
 * the client waits for it (wire.h WIRE_CQE_ARRIVE). */
static void post(struct qp *qp, const struct wire_cqe *cqe)
{
    struct qp_service *svc = qp->sess->svc;
    struct wire_cqe out = *cqe;
    bool gc = false;
    uint64_t media_ns = flash_media_deadline_take(&gc);   /* 0 unless --media flash */
    if (dm_arrival_after(leaves_at(media_ns), &out.arrive))
        out.flags |= WIRE_CQE_ARRIVE;
    if (gc)
        out.flags |= WIRE_CQE_GC;
    pthread_mutex_lock(&qp->cq_lock);
    uint32_t t = qp->cq_tail;
    memcpy(&qp->cq[t & (qp->cq_entries - 1)], &out, sizeof(out));
    /* The private copy, for the poller's cq_room (unlocked): pairs with
     * its acquire load of cq_tail. The drop of inflight below comes
     * after, so a poller that sees the drop sees this tail (cq_room). */
    __atomic_store_n(&qp->cq_tail, t + 1, __ATOMIC_RELEASE);
    /* Pairs with the client's acquire load of cq_tail: the entry written
     * above is visible once it sees the new tail. */
    __atomic_store_n(&qp->hdr->cq_tail, t + 1, __ATOMIC_RELEASE);
    /* Pairs with the client's fence between setting WIRE_CQ_WAITING and
     * re-reading cq_tail: either it sees the tail, or we see the flag. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&qp->hdr->cq_flags, __ATOMIC_RELAXED) & WIRE_CQ_WAITING)
        qp_wake_client(qp);
    __atomic_add_fetch(&svc->completed, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&qp->done_ns, now_ns(), __ATOMIC_RELAXED);   /* the poller's window */
    /* Last touch of qp: qp_release waits for inflight 0 under cq_lock.
     * The decrement releases for the acquire loads of inflight in cq_room
     * (the new cq_tail above is visible to a poller that sees the drop)
     * and in qp_release; it is sequentially consistent with the load of
     * ring_on_done after it, pairing with the poller's store of the flag
     * and load of inflight (queue_poll.c idle). */
    uint32_t left = __atomic_sub_fetch(&qp->inflight, 1, __ATOMIC_SEQ_CST);
    assert(left < qp->cq_entries);   /* queue.h 2: one CQE per fetched SQE */
    if (__atomic_load_n(&qp->ring_on_done, __ATOMIC_SEQ_CST) &&
        __atomic_exchange_n(&qp->ring_on_done, false, __ATOMIC_RELAXED)) {
        /* The poller slept with commands of qp in flight: it spins again
         * for the client's next submission. */
        __atomic_add_fetch(&svc->done_rings, 1, __ATOMIC_RELAXED);
        qp_ring_poller(qp);
    }
    if (left == 0)
        pthread_cond_broadcast(&qp->drained);
    pthread_mutex_unlock(&qp->cq_lock);
}

void qp_post_error(struct qp *qp, uint64_t user_data, int err)
{
    struct wire_cqe q = { .user_data = user_data, .res = err };
    post(qp, &q);
}

static void cmd_free(struct qp_cmd *qc)
{
    eng_chg_release(&qc->chg);
    if (qc->cisc) {
        fop_release(qc->cisc);
        free(qc->cisc);
    }
    free(qc);
}

static void notify_push(struct qp_service *svc, struct qp_cmd *qc)
{
    pthread_mutex_lock(&svc->nlock);
    qc->next = NULL;
    *svc->ntail = qc;
    svc->ntail = &qc->next;
    pthread_cond_signal(&svc->ncond);
    pthread_mutex_unlock(&svc->nlock);
}

void qp_cmd_done(struct eng_cmd *c)
{
    struct qp_cmd *qc = (struct qp_cmd *)c;
    struct qp *qp = qc->qp;
    struct engine *eng = qp->sess->svc->eng;   /* qp may go once posted */
    finish(qc);
    if (eng_chg_pending(eng, &qc->chg)) {
        notify_push(qp->sess->svc, qc);   /* invalidate first, then post */
        return;
    }
    post(qp, &qc->cqe);
    eng_cmd_posted(eng, &qc->c);
    cmd_free(qc);
}

/* ---- the notifier ---------------------------------------------------------- */

static struct qp_cmd *notify_pop(struct qp_service *svc)
{
    pthread_mutex_lock(&svc->nlock);
    while (!svc->nhead && !svc->nstop)
        pthread_cond_wait(&svc->ncond, &svc->nlock);
    struct qp_cmd *qc = svc->nhead;
    if (qc) {
        svc->nhead = qc->next;
        if (!svc->nhead)
            svc->ntail = &svc->nhead;
    }
    pthread_mutex_unlock(&svc->nlock);
    return qc;
}

/* Runs invalidations on its own thread: never a device core (which FUSE
 * requests holding kernel locks may be waiting for) nor a FUSE thread. */
static void *notifier_main(void *arg)
{
    struct qp_service *svc = arg;
    struct qp_cmd *qc;
    while ((qc = notify_pop(svc)) != NULL) {
        eng_chg_flush(svc->eng, &qc->chg);
        __atomic_add_fetch(&svc->invalidated, 1, __ATOMIC_RELAXED);
        post(qc->qp, &qc->cqe);
        eng_cmd_posted(svc->eng, &qc->c);
        cmd_free(qc);
    }
    return NULL;
}

int qp_notifier_start(struct qp_service *svc)
{
    pthread_mutex_init(&svc->nlock, NULL);
    pthread_cond_init(&svc->ncond, NULL);
    svc->ntail = &svc->nhead;
    int r = thread_start_quiet(&svc->notifier, notifier_main, svc);
    svc->notifier_started = r == 0;
    return r;
}

void qp_notifier_stop(struct qp_service *svc)
{
    if (svc->notifier_started) {
        pthread_mutex_lock(&svc->nlock);
        svc->nstop = true;   /* the thread drains the list first */
        pthread_cond_signal(&svc->ncond);
        pthread_mutex_unlock(&svc->nlock);
        pthread_join(svc->notifier, NULL);
    }
    pthread_cond_destroy(&svc->ncond);
    pthread_mutex_destroy(&svc->nlock);
}
