/*
 * libcisc/queue.c - the client side of a queue pair: mapping the region
 * the device created, the arena's buffers, submitting (with the doorbell
 * only when the device sleeps), reaping completions into the slot table
 * and waiting for one (spin, then sleep on the CQ futex; common/spin.h
 * cuts the spin short while the host has no CPU to spare).
 */
#include "libcisc/client_int.h"

#include "common/clock.h"
#include "common/le.h"
#include "common/spin.h"
#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LC_DEFAULT_SPIN_NS 20000u
#define LC_NAP_SLACK_NS    1000u        /* timer slack while sleeping for an arrival */
#define LC_ALIVE_CHECK_NS  (100u * 1000000u)   /* check the device every 100 ms of waiting */
#define LC_ARRIVE_MAX_NS   1000000000   /* device/sched/model.h DM_ARRIVE_MAX_NS */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- mapping ------------------------------------------------------------------ */

static bool pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

/* Checks the header the device wrote (a bad one means a broken device,
 * but the library must not fault on it) and sets the ring pointers. */
static int attach(struct cisc_queue *q)
{
    struct wire_qp_hdr *h = (struct wire_qp_hdr *)q->map;
    uint64_t sq_end = h->sq_off + (uint64_t)h->sq_entries * sizeof(struct wire_sqe);
    uint64_t cq_end = h->cq_off + (uint64_t)h->cq_entries * sizeof(struct wire_cqe);
    if (h->magic != WIRE_MAGIC || h->version != WIRE_VERSION || !pow2(h->sq_entries) ||
        !pow2(h->cq_entries) || h->sq_off < WIRE_HDR_SIZE || sq_end > h->cq_off ||
        cq_end > h->arena_off || h->arena_off + h->arena_size > q->map_size ||
        h->arena_size < LC_ARENA_MIN || (h->arena_size & (h->arena_size - 1)))
        return -EPROTO;
    q->hdr = h;
    q->id = h->qp_id;
    q->sq_entries = h->sq_entries;
    q->cq_entries = h->cq_entries;
    q->sq_mask = h->sq_entries - 1;
    q->cq_mask = h->cq_entries - 1;
    q->sq = (struct wire_sqe *)(q->map + h->sq_off);
    q->cq = (const struct wire_cqe *)(q->map + h->cq_off);
    q->arena = q->map + h->arena_off;
    q->arena_size = h->arena_size;
    q->ksq_head = &h->sq_head;
    q->ksq_tail = &h->sq_tail;
    q->ksq_flags = &h->sq_flags;
    q->ksq_doorbell = &h->sq_doorbell;
    q->kcq_head = &h->cq_head;
    q->kcq_tail = &h->cq_tail;
    q->kcq_flags = &h->cq_flags;
    q->sq_tail = __atomic_load_n(q->ksq_tail, __ATOMIC_RELAXED);
    q->cq_head = __atomic_load_n(q->kcq_head, __ATOMIC_RELAXED);
    return 0;
}

static int map_region(struct cisc_queue *q, int fd)
{
    struct stat st;
    if (fstat(fd, &st))
        return -errno;
    if (st.st_size < (off_t)WIRE_HDR_SIZE)
        return -EPROTO;
    q->map_size = (size_t)st.st_size;
    void *m = mmap(NULL, q->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -errno;
    q->map = m;
    return attach(q);
}

static int setup_slots(struct cisc_queue *q)
{
    q->nslots = q->cq_entries;
    q->slots = calloc(q->nslots, sizeof(*q->slots));
    if (!q->slots)
        return -ENOMEM;
    for (uint32_t i = 0; i < q->nslots; i++) {
        q->slots[i].gen = 1;
        q->slots[i].next_free = i + 2 <= q->nslots ? i + 2 : 0;
    }
    q->free_slot = 1;
    return lc_arena_init(&q->alloc, q->arena_size);
}

/* Asks the device for a queue pair; returns its memfd or -errno. */
static int request_qp(struct cisc_session *s, const struct cisc_queue_params *p, uint32_t *id)
{
    uint8_t req[16], rep[4];
    le32_put(req, p ? p->sq_entries : 0);
    le32_put(req + 4, p ? p->cq_entries : 0);
    le64_put(req + 8, p ? p->arena_size : 0);
    int32_t st = 0;
    int fd = -1;
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call_fd(s->fd, CTL_QP_CREATE, req, sizeof(req), &st, rep, sizeof(rep), &fd);
    pthread_mutex_unlock(&s->lock);
    /* A status is 0 or -errno; anything else is a broken reply, not an fd. */
    int r = n < 0 ? (int)n : st > 0 ? -EPROTO : st ? st : (n < 4 || fd < 0) ? -EPROTO : 0;
    if (r) {
        if (fd >= 0)
            close(fd);
        return r == -ECONNRESET ? -ENOTCONN : r;
    }
    *id = le32_get(rep);
    return fd;
}

static void free_queue(struct cisc_queue *q)
{
    if (q->map)
        munmap(q->map, q->map_size);
    lc_arena_fini(&q->alloc);
    free(q->slots);
    free(q);
}

CISC_API int cisc_queue_create_params(struct cisc_session *s,
                                      const struct cisc_queue_params *p,
                                      struct cisc_queue **out)
{
    if (!s || !out)
        return -EINVAL;
    uint32_t id = 0;         /* set by request_qp when it returns an fd */
    int fd = request_qp(s, p, &id);
    if (fd < 0)
        return fd;
    struct cisc_queue *q = calloc(1, sizeof(*q));
    int r = q ? map_region(q, fd) : -ENOMEM;
    close(fd);
    if (!r)
        r = setup_slots(q);
    if (r) {
        if (q)
            free_queue(q);
        return r;
    }
    q->s = s;
    q->id = id;
    q->spin_ns = p && p->spin_ns ? p->spin_ns : LC_DEFAULT_SPIN_NS;
    q->busy_poll = p && (p->flags & CISC_QUEUE_BUSY_POLL);
    pthread_mutex_lock(&s->lock);
    q->next = s->queues;
    s->queues = q;
    pthread_mutex_unlock(&s->lock);
    *out = q;
    return 0;
}

CISC_API int cisc_queue_create(struct cisc_session *s, struct cisc_queue **out)
{
    return cisc_queue_create_params(s, NULL, out);
}

static void unlink_queue(struct cisc_queue *q)
{
    struct cisc_session *s = q->s;
    pthread_mutex_lock(&s->lock);
    for (struct cisc_queue **pp = &s->queues; *pp; pp = &(*pp)->next) {
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

static bool queue_dead(struct cisc_queue *q)
{
    /* Pairs with the device's release store of sq_flags when it marks the
     * queue dead (qp_kill): the CQEs it posted before are visible. */
    return __atomic_load_n(q->ksq_flags, __ATOMIC_ACQUIRE) & WIRE_SQ_DEAD;
}

CISC_API void cisc_queue_destroy(struct cisc_queue *q)
{
    if (!q)
        return;
    /* Let the commands in flight finish (the device would wait anyway). */
    while (q->inflight && !queue_dead(q) && lc_session_alive(q->s)) {
        if (!lc_reap(q))
            usleep(100);
    }
    uint8_t req[4];
    le32_put(req, q->id);
    int32_t st;
    pthread_mutex_lock(&q->s->lock);
    ctl_call(q->s->fd, CTL_QP_DESTROY, req, sizeof(req), &st, NULL, 0);
    pthread_mutex_unlock(&q->s->lock);
    unlink_queue(q);
    free_queue(q);
}

void lc_queue_forget(struct cisc_queue *q)
{
    free_queue(q);   /* no lock, no message: the caller is a fork child */
}

CISC_API uint32_t cisc_queue_id(const struct cisc_queue *q)
{
    return q ? q->id : 0;
}

CISC_API uint64_t cisc_queue_gc_completions(const struct cisc_queue *q)
{
    return q ? q->gc_seen : 0;
}

/* ---- arena buffers ---------------------------------------------------------- */

int lc_arena_alloc(struct cisc_queue *q, size_t len, uint64_t *off)
{
    return lc_arena_get(&q->alloc, len, off);
}

void lc_arena_free(struct cisc_queue *q, uint64_t off)
{
    lc_arena_release(&q->alloc, off);
}

bool lc_arena_off(const struct cisc_queue *q, const void *p, size_t len, uint64_t *off)
{
    uintptr_t a = (uintptr_t)q->arena, b = (uintptr_t)p;
    if (b < a || b - a > q->arena_size || len > q->arena_size - (b - a))
        return false;
    *off = b - a;
    return true;
}

CISC_API int cisc_buf_alloc(struct cisc_queue *q, size_t size, void **buf)
{
    uint64_t off;
    if (!q || !buf)
        return -EINVAL;
    int r = lc_arena_alloc(q, size, &off);
    if (!r)
        *buf = lc_arena_ptr(q, off);
    return r;
}

CISC_API void cisc_buf_free(struct cisc_queue *q, void *buf)
{
    uint64_t off;
    if (q && buf && lc_arena_off(q, buf, 0, &off))
        lc_arena_free(q, off);
}

/* ---- slots and tokens -------------------------------------------------------- */

static uint64_t token_of(struct cisc_queue *q, uint32_t idx)
{
    return ((uint64_t)q->slots[idx].gen << 32) | (idx + 1u);
}

/* The slot a token names, or NULL when stale or foreign. */
static struct lc_slot *slot_of(struct cisc_queue *q, uint64_t token)
{
    uint32_t idx = (uint32_t)token, gen = (uint32_t)(token >> 32);
    if (idx == 0 || idx > q->nslots)
        return NULL;
    struct lc_slot *sl = &q->slots[idx - 1];
    return sl->gen == gen && sl->state != LC_SLOT_FREE ? sl : NULL;
}

static void slot_free(struct cisc_queue *q, struct lc_slot *sl)
{
    if (sl->state == LC_SLOT_ARRIVING)
        q->arriving--;
    if (sl->state == LC_SLOT_BUSY || sl->state == LC_SLOT_DISCARDED ||
        sl->state == LC_SLOT_ARRIVING)
        q->inflight--;
    sl->state = LC_SLOT_FREE;
    if (++sl->gen == 0)
        sl->gen = 1;
    sl->next_free = q->free_slot;
    q->free_slot = (uint32_t)(sl - q->slots) + 1;
}

static int slot_take(struct cisc_queue *q, uint32_t *idx)
{
    if (!q->free_slot)
        return -EBUSY;
    *idx = q->free_slot - 1;
    q->free_slot = q->slots[*idx].next_free;
    q->slots[*idx].state = LC_SLOT_BUSY;
    q->inflight++;
    return 0;
}

/* ---- completions ------------------------------------------------------------------ */

static void ring_doorbell(struct cisc_queue *q)
{
    /* Release pairs with nothing the device relies on: it reads the
     * doorbell only as the value its futex wait expects (relaxed); the
     * entries were published by the release store of sq_tail. */
    __atomic_add_fetch(q->ksq_doorbell, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, q->ksq_doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* After publishing sq_tail (or freeing CQ room): wakes the device if it
 * announced sleep while submissions wait. */
static void kick(struct cisc_queue *q)
{
    /* Pairs with the device's fence between setting NEED_WAKEUP and
     * re-reading sq_tail: either it sees our tail, or we see its flag. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(q->ksq_flags, __ATOMIC_RELAXED) & WIRE_SQ_NEED_WAKEUP &&
        __atomic_load_n(q->ksq_head, __ATOMIC_RELAXED) != q->sq_tail)
        ring_doorbell(q);
}

/* Nanoseconds until a completion has crossed the link (wire.h
 * WIRE_CQE_ARRIVE); 0 once it has. An arrival time more than
 * LC_ARRIVE_MAX_NS ahead (a confused device) counts as arrived. */
static uint32_t arrive_in(const struct wire_cqe *c)
{
    if (!(c->flags & WIRE_CQE_ARRIVE))
        return 0;
    int32_t ahead = (int32_t)(c->arrive - (uint32_t)now_ns());
    return ahead <= 0 || ahead > LC_ARRIVE_MAX_NS ? 0 : (uint32_t)ahead;
}

static void slot_done(struct cisc_queue *q, struct lc_slot *sl)
{
    if (sl->state == LC_SLOT_ARRIVING)
        q->arriving--;
    sl->state = LC_SLOT_DONE;
    q->inflight--;
}

/* Takes one CQE into its slot: done, or arriving (still crossing the
 * link: the completion is the caller's only once its stamp passed). */
static void reap_one(struct cisc_queue *q, const struct wire_cqe *cqe)
{
    struct lc_slot *sl = slot_of(q, cqe->user_data);
    if (!sl)
        return;   /* not ours: ignore */
    q->gc_seen += (cqe->flags & WIRE_CQE_GC) != 0;
    if (sl->state == LC_SLOT_DISCARDED) {
        slot_free(q, sl);
    } else if (sl->state == LC_SLOT_BUSY) {
        sl->cqe = *cqe;
        uint32_t ahead = arrive_in(cqe);
        if (ahead) {
            sl->arrive_at = now_ns() + ahead;   /* absolute: a 32-bit stamp wraps */
            sl->state = LC_SLOT_ARRIVING;
            q->arriving++;
            return;
        }
        slot_done(q, sl);
    }
}

/* Makes done the arriving slots whose stamp passed; sets *next to the ns
 * until the earliest of the others arrives (0: none left). Returns how
 * many became done. O(slots), only while some are arriving. */
static unsigned promote(struct cisc_queue *q, uint32_t *next)
{
    unsigned n = 0;
    uint64_t now = q->arriving ? now_ns() : 0;
    *next = 0;
    for (uint32_t i = 0; q->arriving && i < q->nslots; i++) {
        struct lc_slot *sl = &q->slots[i];
        if (sl->state != LC_SLOT_ARRIVING)
            continue;
        if (sl->arrive_at <= now) {
            slot_done(q, sl);
            n++;
        } else if (!*next || sl->arrive_at - now < *next) {
            *next = (uint32_t)(sl->arrive_at - now);   /* < LC_ARRIVE_MAX_NS */
        }
    }
    if (!q->arriving)
        *next = 0;
    return n;
}

/* Copies every CQE posted so far into the slot table (whether or not it
 * has crossed the link: one that has not must not hold up those behind
 * it, which the flash model may stamp earlier) and frees the ring's
 * slots. Returns how many CQEs it took plus how many arriving slots
 * became done (0: nothing changed); *next as promote(). */
static unsigned reap(struct cisc_queue *q, uint32_t *next)
{
    /* Pairs with the device's release store of cq_tail after it wrote the
     * entries. */
    uint32_t tail = __atomic_load_n(q->kcq_tail, __ATOMIC_ACQUIRE);
    uint32_t n = tail - q->cq_head;
    if (n > q->cq_entries)
        n = q->cq_entries;   /* cannot happen with a sane device */
    for (uint32_t i = 0; i < n; i++) {
        struct wire_cqe c = q->cq[(q->cq_head + i) & q->cq_mask];
        reap_one(q, &c);
    }
    if (n) {
        q->cq_head += n;
        /* Pairs with the device's acquire load of cq_head: the entries are
         * copied, it may reuse the slots. */
        __atomic_store_n(q->kcq_head, q->cq_head, __ATOMIC_RELEASE);
        kick(q);   /* the device may have stopped for lack of CQ room */
    }
    return n + promote(q, next);
}

unsigned lc_reap(struct cisc_queue *q)
{
    uint32_t next;
    return reap(q, &next);
}

/* Sleeps until cq_tail moves past what we consumed (or up to 100 ms). */
static void sleep_cq(struct cisc_queue *q)
{
    __atomic_store_n(q->kcq_flags, WIRE_CQ_WAITING, __ATOMIC_RELAXED);
    /* Pairs with the device's fence between its cq_tail store and its
     * cq_flags load: either it sees WAITING, or we see its tail. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint32_t t = __atomic_load_n(q->kcq_tail, __ATOMIC_ACQUIRE);
    if (t == q->cq_head && !queue_dead(q)) {
        struct timespec ts = { 0, LC_ALIVE_CHECK_NS };
        syscall(SYS_futex, q->kcq_tail, FUTEX_WAIT, t, &ts, NULL, 0);
    }
    __atomic_store_n(q->kcq_flags, 0, __ATOMIC_RELAXED);
}

/* Sleeps `ahead` ns: a completion is crossing the link (the flash model
 * stamps up to DM_ARRIVE_MAX_NS ahead). The thread's timer slack (50 us
 * by default, which would dwarf a stamp microseconds ahead) is cut to
 * LC_NAP_SLACK_NS for the sleep and put back after: the application's
 * own sleeps keep theirs. */
static void nap(uint32_t ahead)
{
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    bool cut = slack > (int)LC_NAP_SLACK_NS;
    if (cut)
        prctl(PR_SET_TIMERSLACK, LC_NAP_SLACK_NS, 0, 0, 0);
    struct timespec ts = { ahead / 1000000000u, ahead % 1000000000u };
    nanosleep(&ts, NULL);   /* EINTR: the loop looks again */
    if (cut)
        prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
}

/* The earliest completion crossing the link arrives in `ahead` ns: spins for it if
 * that is brief, fits what is left of the spin budget, or the queue
 * busy-polls; else sleeps until it arrives. A client never spins out a
 * modelled time longer than its budget (a slow simulated device must not
 * slow the host). */
static void wait_arrival(struct cisc_queue *q, uint32_t ahead, uint64_t spun, uint64_t budget)
{
    if (q->busy_poll || ahead <= SPIN_BRIEF_NS || spun + ahead <= budget) {
        cpu_relax();
        return;
    }
    nap(ahead);
    spin_rest(&q->gov);
}

/* Waits until something new is in the CQ; -ENOTCONN if it never will be.
 * Spins for the queue's budget (common/spin.h: cut short while the host
 * is contended, and at once when this thread was descheduled while
 * spinning), then sleeps on the CQ futex. */
static int wait_cq(struct cisc_queue *q)
{
    uint64_t t0 = now_ns(), check = t0 + LC_ALIVE_CHECK_NS;
    uint64_t budget = q->busy_poll ? UINT64_MAX : spin_budget(&q->gov, t0, q->spin_ns);
    spin_rest(&q->gov);   /* the last wait's rounds are not this spin's */
    for (;;) {
        uint32_t ahead;   /* until the earliest completion crossing the link arrives */
        if (reap(q, &ahead))
            return 0;
        if (queue_dead(q))
            return -ENOTCONN;
        uint64_t t = now_ns();
        if (t >= check) {
            if (!lc_session_alive(q->s))
                return -ENOTCONN;
            check = t + LC_ALIVE_CHECK_NS;
            spin_rest(&q->gov);   /* a system call: not a gap */
        }
        if (!q->busy_poll && spin_round(&q->gov, t))
            budget = 0;   /* descheduled while spinning: give the CPU back now */
        if (ahead) {
            wait_arrival(q, ahead, t - t0, budget);
        } else if (t - t0 < budget) {
            cpu_relax();
        } else {
            sleep_cq(q);
            spin_rest(&q->gov);
        }
    }
}

int lc_peek(struct cisc_queue *q, uint64_t token, struct wire_cqe *out)
{
    struct lc_slot *sl = slot_of(q, token);
    if (!sl || sl->state == LC_SLOT_DISCARDED)
        return -EINVAL;
    if (sl->state != LC_SLOT_DONE)
        lc_reap(q);
    if (sl->state != LC_SLOT_DONE)
        return queue_dead(q) ? -ENOTCONN : -EAGAIN;
    *out = sl->cqe;
    slot_free(q, sl);
    return 0;
}

int lc_wait(struct cisc_queue *q, uint64_t token, struct wire_cqe *out)
{
    struct lc_slot *sl = slot_of(q, token);
    if (!sl || sl->state == LC_SLOT_DISCARDED)
        return -EINVAL;
    while (sl->state != LC_SLOT_DONE) {
        int r = wait_cq(q);
        if (r)
            return r;
    }
    *out = sl->cqe;
    slot_free(q, sl);
    return 0;
}

void lc_discard(struct cisc_queue *q, uint64_t token)
{
    struct lc_slot *sl = slot_of(q, token);
    if (!sl)
        return;
    if (sl->state == LC_SLOT_DONE || sl->state == LC_SLOT_ARRIVING)
        slot_free(q, sl);
    else if (sl->state == LC_SLOT_BUSY)
        sl->state = LC_SLOT_DISCARDED;
}

/* ---- submission -------------------------------------------------------------------- */

/* Takes n slots, completing earlier commands to free some if needed. */
static int take_slots(struct cisc_queue *q, unsigned n, uint32_t *idx)
{
    for (unsigned i = 0; i < n; i++) {
        while (slot_take(q, &idx[i])) {
            int r = q->inflight ? wait_cq(q) : -EBUSY;   /* all DONE, unclaimed */
            if (r) {
                while (i-- > 0)
                    slot_free(q, &q->slots[idx[i]]);
                return r;
            }
        }
    }
    return 0;
}

/* Publishes the SQEs written so far. */
static void publish(struct cisc_queue *q)
{
    /* Pairs with the device's acquire load of sq_tail: the entries written
     * before are visible once it sees the new tail. */
    __atomic_store_n(q->ksq_tail, q->sq_tail, __ATOMIC_RELEASE);
    kick(q);
}

/* Waits for a free SQ slot (the device fetches, or is woken to). */
static int sq_room(struct cisc_queue *q)
{
    uint64_t check = now_ns() + LC_ALIVE_CHECK_NS;
    /* Pairs with the device's release store of sq_head after its copies. */
    while (q->sq_tail - __atomic_load_n(q->ksq_head, __ATOMIC_ACQUIRE) >= q->sq_entries) {
        if (queue_dead(q))
            return -ENOTCONN;
        publish(q);
        lc_reap(q);
        if (now_ns() >= check) {
            if (!lc_session_alive(q->s))
                return -ENOTCONN;
            check = now_ns() + LC_ALIVE_CHECK_NS;
        }
        sched_yield();
    }
    return 0;
}

int lc_submit(struct cisc_queue *q, const struct wire_sqe *sqes, unsigned n,
              uint64_t *tokens)
{
    if (n == 0 || n > q->nslots)
        return -EINVAL;
    if (queue_dead(q))
        return -ENOTCONN;
    uint32_t stack_idx[64], *idx = n <= 64 ? stack_idx : malloc(n * sizeof(uint32_t));
    if (!idx)
        return -ENOMEM;
    int r = take_slots(q, n, idx);
    for (unsigned i = 0; !r && i < n; i++) {
        r = sq_room(q);
        if (r)
            break;   /* the queue died: its slots will never complete */
        struct wire_sqe *e = &q->sq[q->sq_tail & q->sq_mask];
        *e = sqes[i];
        e->user_data = tokens[i] = token_of(q, idx[i]);
        q->sq_tail++;
    }
    if (!r)
        publish(q);
    if (idx != stack_idx)
        free(idx);
    return r ? r : (int)n;
}

int64_t lc_call(struct cisc_queue *q, const struct wire_sqe *sqe, struct wire_cqe *out)
{
    uint64_t token;
    struct wire_cqe c;
    int r = lc_submit(q, sqe, 1, &token);
    if (r < 0)
        return r;
    r = lc_wait(q, token, &c);
    if (r)
        return r;
    if (out)
        *out = c;
    return c.res;
}
