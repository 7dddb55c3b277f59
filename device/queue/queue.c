/* device/queue/queue.c - the queue service, sessions, queue-pair memory and the
 * arena accessors (see queue.h). Polling is in queue_poll.c, completions
 * in queue_done.c. */
#include "device/queue/queue_int.h"

#include "common/clock.h"

#include "device/compute/keys.h"
#include "device/engine/handle.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define QP_DEFAULT_SQ    128u
#define QP_DEFAULT_ARENA (8u << 20)

/* ---- arena access ------------------------------------------------------ */

int qp_arena_write(const struct qp_arena *a, uint64_t off, const void *src, uint64_t len)
{
    if (!qp_arena_ok(a, off, len))
        return -EFAULT;
    memcpy(a->base + off, src, len);
    return 0;
}

/* ---- the service ----------------------------------------------------------- */

int qp_service_create(struct engine *e, const struct qp_config *cfg, struct qp_service **out)
{
    unsigned np = cfg && cfg->pollers ? cfg->pollers : QP_DEFAULT_POLLERS;
    if (np > QP_MAX_POLLERS)
        return -EINVAL;
    struct qp_service *svc = calloc(1, sizeof(*svc));
    if (!svc)
        return -ENOMEM;
    svc->eng = e;
    svc->npollers = np;
    svc->poll_us = cfg ? cfg->poll_us : QP_DEFAULT_POLL_US;
    pthread_mutex_init(&svc->lock, NULL);
    int r = qp_notifier_start(svc);
    for (unsigned i = 0; !r && i < np; i++) {
        svc->pollers[i].svc = svc;
        svc->pollers[i].idx = i;
        r = qp_poller_start(&svc->pollers[i]);
    }
    if (r) {
        qp_service_destroy(svc);
        return r;
    }
    *out = svc;
    return 0;
}

void qp_service_destroy(struct qp_service *svc)
{
    if (!svc)
        return;
    for (;;) {
        pthread_mutex_lock(&svc->lock);
        struct qp_session *s = svc->sessions;
        pthread_mutex_unlock(&svc->lock);
        if (!s)
            break;
        qp_session_destroy(s);   /* unlinks itself */
    }
    for (unsigned i = 0; i < svc->npollers; i++)
        qp_poller_stop(&svc->pollers[i]);
    qp_notifier_stop(svc);
    pthread_mutex_destroy(&svc->lock);
    free(svc);
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void qp_service_stats(struct qp_service *svc, struct qp_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->pollers = svc->npollers;
    st->poll_us = svc->poll_us;
    st->sessions = LOAD(svc->nsessions);
    pthread_mutex_lock(&svc->lock);
    for (struct qp_session *s = svc->sessions; s; s = s->next)
        st->handles += hdl_count(s->hdl);
    pthread_mutex_unlock(&svc->lock);
    st->queues = LOAD(svc->nqueues);
    st->fetched = LOAD(svc->fetched);
    st->refused = LOAD(svc->refused);
    st->completed = LOAD(svc->completed);
    st->invalidated = LOAD(svc->invalidated);
    st->dead = LOAD(svc->dead);
    st->sleeps = LOAD(svc->sleeps);
    st->contended = LOAD(svc->contended);
    st->done_rings = LOAD(svc->done_rings);
}

/* ---- sessions ------------------------------------------------------------ */

int qp_session_create(struct qp_service *svc, const struct eng_cred *cred,
                      struct qp_session **out)
{
    struct qp_session *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int r = hdl_table_create(&s->hdl);
    if (!r && (r = ckey_table_create(&s->keys)) != 0)
        hdl_table_destroy(s->hdl);
    if (r) {
        free(s);
        return r;
    }
    hdl_table_set_limit(s->hdl, QP_MAX_HANDLES);
    s->svc = svc;
    s->cred = *cred;
    s->cred.groups_fn = NULL;   /* groups come with the session, never fetched later */
    if (s->cred.ngroups < 0)
        s->cred.ngroups = 0;
    s->next_id = 1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_lock(&svc->lock);
    s->next = svc->sessions;
    svc->sessions = s;
    pthread_mutex_unlock(&svc->lock);
    __atomic_add_fetch(&svc->nsessions, 1, __ATOMIC_RELAXED);
    *out = s;
    return 0;
}

static void session_unlink(struct qp_session *s)
{
    struct qp_service *svc = s->svc;
    pthread_mutex_lock(&svc->lock);
    for (struct qp_session **pp = &svc->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&svc->lock);
}

static void qp_release(struct qp *qp);

#define QP_DRAIN_NAP_NS   100000u      /* a drain looks again after this */
#define QP_DRAIN_STALL_NS 50000000ull  /* and gives up after this without progress */

/* Has qp's poller fetch what the client published before its session
 * ended (queue.h invariant 7): rings the poller (the queue may sleep) and
 * waits until the fetches reach the tail read here, the queue dies, or
 * nothing moves for QP_DRAIN_STALL_NS (a CQ the client no longer
 * empties has no room: those commands are dropped). */
static void qp_drain_published(struct qp *qp)
{
    /* Pairs with the client's release store of sq_tail; read once. */
    uint32_t tail = __atomic_load_n(&qp->hdr->sq_tail, __ATOMIC_ACQUIRE);
    uint32_t at = __atomic_load_n(&qp->fetched_to, __ATOMIC_RELAXED);
    if (!qp->poller || tail == at || tail - at > qp->sq_entries)
        return;   /* nothing waits, or garbage (the poller kills the queue) */
    qp_ring_poller(qp);
    uint64_t moved = now_ns();
    while (!__atomic_load_n(&qp->dead, __ATOMIC_RELAXED)) {
        uint32_t now_at = __atomic_load_n(&qp->fetched_to, __ATOMIC_RELAXED);
        if ((int32_t)(now_at - tail) >= 0)
            return;
        if (now_at != at) {
            at = now_at;
            moved = now_ns();
        } else if (now_ns() - moved > QP_DRAIN_STALL_NS) {
            return;
        }
        struct timespec ts = { 0, QP_DRAIN_NAP_NS };
        nanosleep(&ts, NULL);
    }
}

void qp_session_destroy(struct qp_session *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    struct qp *list = s->qps;
    s->qps = NULL;
    s->nqps = 0;
    pthread_mutex_unlock(&s->lock);
    /* What the client published runs, even if it died right after. */
    for (struct qp *qp = list; qp; qp = qp->next)
        qp_drain_published(qp);
    /* All queues to their pollers first: they go in one round each, not
     * one round per queue. */
    for (struct qp *qp = list; qp; qp = qp->next)
        if (qp->poller)
            qp_poller_drop(qp->poller, qp);
    while (list) {
        struct qp *qp = list;
        list = qp->next;
        if (qp->poller)
            qp_poller_wait_dropped(qp->poller, qp);
        qp_release(qp);
    }
    /* Out of the service's list before its tables go: qp_service_stats
     * (a `cisc status` answered meanwhile) walks the list under the
     * service lock and reads each session's handle table. */
    session_unlink(s);
    /* No command of the session is in flight now: its handles can go. */
    eng_release_handles(s->svc->eng, s->hdl);
    hdl_table_destroy(s->hdl);
    ckey_table_destroy(s->keys);
    __atomic_sub_fetch(&s->svc->nsessions, 1, __ATOMIC_RELAXED);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

const struct eng_cred *qp_session_cred(const struct qp_session *s)
{
    return &s->cred;
}

struct ckey_table *qp_session_keys(struct qp_session *s)
{
    return s->keys;
}

/* ---- queue pairs ----------------------------------------------------------- */

static uint32_t pow2_up(uint64_t v)
{
    uint32_t p = 1;
    while (p < v && p < (1u << 31))
        p <<= 1;
    return p;
}

/* Validated geometry: entries powers of two, arena in range. */
static int geometry(const struct qp_geom *g, uint32_t *sq, uint32_t *cq, uint64_t *arena)
{
    uint64_t a = g->arena_size ? g->arena_size : QP_DEFAULT_ARENA;
    if (g->sq_entries > QP_MAX_SQ_ENTRIES || g->cq_entries > 2 * QP_MAX_SQ_ENTRIES ||
        a > QP_MAX_ARENA)
        return -EINVAL;
    *sq = pow2_up(g->sq_entries ? g->sq_entries : QP_DEFAULT_SQ);
    *cq = pow2_up(g->cq_entries ? g->cq_entries : 2 * *sq);
    if (*cq < *sq)
        return -EINVAL;
    *arena = pow2_up(a < QP_MIN_ARENA ? QP_MIN_ARENA : a);
    return 0;
}

/* A sealed memfd of `size` bytes: the client can neither shrink nor grow
 * it, so the device's mapping never faults. Returns the fd or -errno. */
static int sealed_memfd(size_t size)
{
    int fd = memfd_create("ciscfs-qp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)size) ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        int r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

static void fill_header(struct qp *qp, uint32_t sq, uint32_t cq, uint64_t arena)
{
    struct wire_qp_hdr *h = qp->hdr;
    h->magic = WIRE_MAGIC;
    h->version = WIRE_VERSION;
    h->sq_entries = sq;
    h->cq_entries = cq;
    h->sq_off = WIRE_HDR_SIZE;
    h->cq_off = h->sq_off + (uint64_t)sq * sizeof(struct wire_sqe);
    h->arena_off = (h->cq_off + (uint64_t)cq * sizeof(struct wire_cqe) + 4095) & ~4095ull;
    h->arena_size = arena;
    h->total_size = h->arena_off + arena;
    h->qp_id = qp->id;
    qp->sq = (const struct wire_sqe *)(qp->map + h->sq_off);
    qp->cq = (struct wire_cqe *)(qp->map + h->cq_off);
    qp->arena.base = qp->map + h->arena_off;
    qp->arena.size = arena;
    qp->sq_entries = sq;
    qp->cq_entries = cq;
}

static int qp_map(struct qp *qp, uint32_t sq, uint32_t cq, uint64_t arena, int *memfd)
{
    uint64_t cq_end = WIRE_HDR_SIZE + (uint64_t)sq * sizeof(struct wire_sqe) +
                      (uint64_t)cq * sizeof(struct wire_cqe);
    qp->map_size = ((cq_end + 4095) & ~4095ull) + arena;
    int fd = sealed_memfd(qp->map_size);
    if (fd < 0)
        return fd;
    void *m = mmap(NULL, qp->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        int r = -errno;
        close(fd);
        return r;
    }
    qp->map = m;
    qp->hdr = m;
    fill_header(qp, sq, cq, arena);
    *memfd = fd;
    return 0;
}

/* Least-loaded poller (by queue count). */
static struct qp_poller *pick_poller(struct qp_service *svc)
{
    struct qp_poller *best = &svc->pollers[0];
    for (unsigned i = 1; i < svc->npollers; i++)
        if (__atomic_load_n(&svc->pollers[i].n, __ATOMIC_RELAXED) <
            __atomic_load_n(&best->n, __ATOMIC_RELAXED))
            best = &svc->pollers[i];
    return best;
}

/* uid's entry (service lock held), made when make is set; NULL if none
 * or out of memory. */
static struct qp_uid *uid_entry(struct qp_service *svc, uint32_t uid, bool make)
{
    for (struct qp_uid *u = svc->uids; u; u = u->next)
        if (u->uid == uid)
            return u;
    struct qp_uid *u = make ? calloc(1, sizeof(*u)) : NULL;
    if (u) {
        u->uid = uid;
        u->next = svc->uids;
        svc->uids = u;
    }
    return u;
}

/* Counts qp (arena bytes of arena) against its session's uid, within the
 * per-uid limits; root is not limited. Returns 0, -EDQUOT or -ENOMEM. */
static int uid_charge(struct qp *qp, uint64_t arena)
{
    struct qp_service *svc = qp->sess->svc;
    uint32_t uid = qp->sess->cred.uid;
    if (uid == 0)
        return 0;
    pthread_mutex_lock(&svc->lock);
    struct qp_uid *u = uid_entry(svc, uid, true);
    int r = !u ? -ENOMEM
            : u->queues >= QP_UID_MAX_QUEUES || arena > QP_UID_MAX_ARENA - u->arena ? -EDQUOT
                                                                                    : 0;
    if (!r) {
        u->queues++;
        u->arena += arena;
        qp->charged = true;
        qp->charge = arena;
    } else if (u && !u->warned) {   /* once per uid while it holds queues: no log flood */
        u->warned = true;
        fprintf(stderr, "cisc device: uid %u refused a queue pair: it holds %u queues and "
                "%llu MiB of arenas, the limit per uid is %u queues and %llu MiB\n",
                uid, u->queues, (unsigned long long)(u->arena >> 20), QP_UID_MAX_QUEUES,
                (unsigned long long)(QP_UID_MAX_ARENA >> 20));
    }
    pthread_mutex_unlock(&svc->lock);
    return r;
}

/* Gives back what uid_charge counted for qp. */
static void uid_uncharge(struct qp *qp)
{
    struct qp_service *svc = qp->sess->svc;
    pthread_mutex_lock(&svc->lock);
    struct qp_uid *u = uid_entry(svc, qp->sess->cred.uid, false);
    assert(u && u->queues > 0 && u->arena >= qp->charge);
    u->queues--;
    u->arena -= qp->charge;
    if (!u->queues) {
        for (struct qp_uid **pp = &svc->uids; *pp; pp = &(*pp)->next) {
            if (*pp == u) {
                *pp = u->next;
                break;
            }
        }
        free(u);
    }
    pthread_mutex_unlock(&svc->lock);
    qp->charged = false;
}

static int session_add(struct qp_session *s, struct qp *qp)
{
    static uint32_t sched_ids;   /* 0 is the FUSE mount's queue */
    pthread_mutex_lock(&s->lock);
    int r = s->nqps >= QP_MAX_PER_SESSION ? -EMFILE : 0;
    if (!r)   /* the tenant's queue cap (sched.h invariant 6) */
        r = eng_queue_open(s->svc->eng, &s->cred);
    if (!r) {
        qp->sched_id = __atomic_add_fetch(&sched_ids, 1, __ATOMIC_RELAXED);
        qp->id = s->next_id++;
        qp->next = s->qps;
        s->qps = qp;
        s->nqps++;
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

int qp_create(struct qp_session *s, const struct qp_geom *g, int *memfd, uint32_t *id)
{
    uint32_t sq, cq;
    uint64_t arena;
    int r = geometry(g, &sq, &cq, &arena);
    if (r)
        return r;
    struct qp *qp = calloc(1, sizeof(*qp));
    if (!qp)
        return -ENOMEM;
    qp->sess = s;
    pthread_mutex_init(&qp->cq_lock, NULL);
    pthread_cond_init(&qp->drained, NULL);
    r = session_add(s, qp);
    if (r) {
        pthread_cond_destroy(&qp->drained);
        pthread_mutex_destroy(&qp->cq_lock);
        free(qp);
        return r;
    }
    r = uid_charge(qp, arena);
    if (!r)
        r = qp_map(qp, sq, cq, arena, memfd);
    if (r) {
        qp_destroy(s, qp->id);   /* not mapped, not polled: just freed */
        return r;
    }
    __atomic_add_fetch(&s->svc->nqueues, 1, __ATOMIC_RELAXED);
    assert(qp_check(qp));
    r = qp_poller_add(pick_poller(s->svc), qp);
    if (r) {
        /* A queue nobody polls would hang its client: refuse it. */
        close(*memfd);
        qp_destroy(s, qp->id);
        return r;
    }
    *id = qp->id;
    return 0;
}

#ifndef NDEBUG
static bool pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

bool qp_check(struct qp *qp)
{
    /* wire.h: power-of-two rings, cq_entries >= sq_entries, header, SQ,
     * CQ and arena in that order inside the mapping. */
    assert(pow2(qp->sq_entries) && pow2(qp->cq_entries) && qp->cq_entries >= qp->sq_entries);
    assert((const uint8_t *)qp->sq == qp->map + WIRE_HDR_SIZE);
    assert((const uint8_t *)qp->cq == (const uint8_t *)(qp->sq + qp->sq_entries));
    assert((uint8_t *)(qp->cq + qp->cq_entries) <= qp->arena.base);
    assert(qp->arena.base + qp->arena.size == qp->map + qp->map_size);
    /* 5: the private sq_flags are what the device published */
    assert(!(qp->sq_flags & ~(WIRE_SQ_NEED_WAKEUP | WIRE_SQ_DEAD)));
    assert(qp->dead == !!(qp->sq_flags & WIRE_SQ_DEAD));
    pthread_mutex_lock(&qp->cq_lock);
    uint32_t inflight = __atomic_load_n(&qp->inflight, __ATOMIC_RELAXED);
    /* 2: every fetched SQE (sq_head counts them) has had its CQE posted
     * (cq_tail) or is in flight; 3: those in flight fit in the CQ. */
    assert(qp->sq_head - qp->cq_tail == inflight);
    assert(inflight <= qp->cq_entries);
    pthread_mutex_unlock(&qp->cq_lock);
    return true;
}
#endif

/* Waits for qp's commands (its poller, if it had one, let go of it),
 * wakes its client, frees it. */
static void qp_release(struct qp *qp)
{
    assert(!qp->poller || qp->dropped);   /* 4: the poller no longer touches it */
    pthread_mutex_lock(&qp->cq_lock);
    /* Pairs with post()'s release decrement of inflight (its last touch
     * of qp); cq_lock, held by both, orders them too. */
    while (__atomic_load_n(&qp->inflight, __ATOMIC_ACQUIRE))
        pthread_cond_wait(&qp->drained, &qp->cq_lock);
    pthread_mutex_unlock(&qp->cq_lock);
    if (qp->map) {
        assert(qp->sq_head == qp->cq_tail);   /* 4: every command completed */
        qp_kill(qp);
        munmap(qp->map, qp->map_size);
        __atomic_sub_fetch(&qp->sess->svc->nqueues, 1, __ATOMIC_RELAXED);
    }
    if (qp->charged)
        uid_uncharge(qp);
    eng_queue_close(qp->sess->svc->eng, &qp->sess->cred);
    pthread_cond_destroy(&qp->drained);
    pthread_mutex_destroy(&qp->cq_lock);
    free(qp);
}

int qp_destroy(struct qp_session *s, uint32_t id)
{
    struct qp *found = NULL;
    pthread_mutex_lock(&s->lock);
    for (struct qp **pp = &s->qps; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            found = *pp;
            *pp = found->next;
            s->nqps--;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (!found)
        return -ENOENT;
    if (found->poller) {
        qp_poller_drop(found->poller, found);
        qp_poller_wait_dropped(found->poller, found);
    }
    qp_release(found);
    return 0;
}
