/*
 * device/queue/queue_bells.c - a poller's io_uring that waits on any
 * number of futex words at once (IORING_OP_FUTEX_WAIT, Linux 6.7), so that
 * the doorbells of all its asleep queues cost nothing while they sleep:
 * futex_waitv watches 128 words at most. Only the ring's own plumbing is
 * here; which words to watch is queue_poll.c's business.
 */
#include "device/queue/queue_int.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Not in every distribution's kernel headers yet; the kernel's ABI. */
#define QB_OP_FUTEX_WAIT  51u
#define QB_FUTEX2_U32     0x02u
#define QB_FUTEX2_PRIVATE 128u

#define QB_SQ_ENTRIES 64u
#define QB_CQ_ENTRIES 4096u   /* more complete at once only with NODROP, kept by the kernel */

static int uring_enter(int fd, unsigned submit, unsigned min, unsigned flags)
{
    long r = syscall(__NR_io_uring_enter, fd, submit, min, flags, NULL, 0);
    return r < 0 ? -errno : (int)r;
}

static int map_rings(struct qp_bells *b, const struct io_uring_params *pr)
{
    b->sqsz = pr->sq_off.array + pr->sq_entries * sizeof(unsigned);
    size_t cqsz = pr->cq_off.cqes + pr->cq_entries * sizeof(struct io_uring_cqe);
    if (cqsz > b->sqsz)
        b->sqsz = cqsz;   /* IORING_FEAT_SINGLE_MMAP: one mapping for both */
    void *r = mmap(NULL, b->sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd,
                   IORING_OFF_SQ_RING);
    if (r == MAP_FAILED)
        return -errno;
    b->ring = r;
    b->sqesz = pr->sq_entries * sizeof(struct io_uring_sqe);
    void *s = mmap(NULL, b->sqesz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd,
                   IORING_OFF_SQES);
    if (s == MAP_FAILED)
        return -errno;
    b->sqes = s;
    uint8_t *p = r;
    b->sq_head = (unsigned *)(p + pr->sq_off.head);
    b->sq_tail = (unsigned *)(p + pr->sq_off.tail);
    b->sq_mask = *(unsigned *)(p + pr->sq_off.ring_mask);
    b->sq_array = (unsigned *)(p + pr->sq_off.array);
    b->cq_head = (unsigned *)(p + pr->cq_off.head);
    b->cq_tail = (unsigned *)(p + pr->cq_off.tail);
    b->cq_mask = *(unsigned *)(p + pr->cq_off.ring_mask);
    b->cqes = (struct io_uring_cqe *)(p + pr->cq_off.cqes);
    return 0;
}

/* Submits what was queued; with min > 0, waits for that many completions. */
static int flush(struct qp_bells *b, unsigned min)
{
    int r = uring_enter(b->fd, b->queued, min, min ? IORING_ENTER_GETEVENTS : 0);
    if (r > 0)
        b->queued -= (unsigned)r < b->queued ? (unsigned)r : b->queued;
    return r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN ? r : 0;
}

/* The next free SQE, flushing a full SQ first; NULL on failure. */
static struct io_uring_sqe *next_sqe(struct qp_bells *b)
{
    /* Pairs with the kernel's release of sq_head once it consumed SQEs. */
    unsigned tail = *b->sq_tail;
    if (tail - __atomic_load_n(b->sq_head, __ATOMIC_ACQUIRE) > b->sq_mask) {
        if (flush(b, 0))
            return NULL;
        if (tail - __atomic_load_n(b->sq_head, __ATOMIC_ACQUIRE) > b->sq_mask)
            return NULL;
    }
    struct io_uring_sqe *e = &b->sqes[tail & b->sq_mask];
    memset(e, 0, sizeof(*e));
    b->sq_array[tail & b->sq_mask] = tail & b->sq_mask;
    return e;
}

static void push(struct qp_bells *b)
{
    /* Pairs with the kernel's acquire of sq_tail: the SQE is written. */
    __atomic_store_n(b->sq_tail, *b->sq_tail + 1, __ATOMIC_RELEASE);
    b->queued++;
}

int qp_bells_arm(struct qp_bells *b, uint32_t *word, uint32_t val, bool private, uint64_t tag)
{
    struct io_uring_sqe *e = next_sqe(b);
    if (!e)
        return -EBUSY;
    e->opcode = QB_OP_FUTEX_WAIT;
    e->fd = (int)(QB_FUTEX2_U32 | (private ? QB_FUTEX2_PRIVATE : 0));
    e->addr = (uintptr_t)word;
    e->off = val;   /* addr2 */
    e->addr3 = FUTEX_BITSET_MATCH_ANY;
    e->user_data = tag;
    push(b);
    return 0;
}

int qp_bells_cancel(struct qp_bells *b, uint64_t tag)
{
    struct io_uring_sqe *e = next_sqe(b);
    if (!e)
        return -EBUSY;
    e->opcode = IORING_OP_ASYNC_CANCEL;
    e->addr = tag;
    e->user_data = QP_BELL_TAG_CANCEL;
    push(b);
    return 0;
}

int qp_bells_wait(struct qp_bells *b)
{
    return flush(b, 1);
}

int qp_bells_submit(struct qp_bells *b)
{
    return b->queued ? flush(b, 0) : 0;
}

unsigned qp_bells_reap(struct qp_bells *b, void (*fn)(void *, uint64_t, int32_t), void *arg)
{
    unsigned head = *b->cq_head, n = 0;
    /* Pairs with the kernel's release of cq_tail after it wrote the CQEs. */
    unsigned tail = __atomic_load_n(b->cq_tail, __ATOMIC_ACQUIRE);
    for (; head != tail; head++, n++) {
        const struct io_uring_cqe *c = &b->cqes[head & b->cq_mask];
        uint64_t tag = c->user_data;
        int32_t res = c->res;
        /* Pairs with the kernel's acquire of cq_head: the slot is read. */
        __atomic_store_n(b->cq_head, head + 1, __ATOMIC_RELEASE);
        fn(arg, tag, res);
    }
    return n;
}

/* True if the kernel's futex waits in io_uring work: a wait on a word
 * that does not hold the value completes at once with -EAGAIN. */
static bool probe(struct qp_bells *b)
{
    uint32_t word = 1;
    if (qp_bells_arm(b, &word, 0, true, 1) || flush(b, 1))
        return false;
    unsigned head = *b->cq_head;
    if (__atomic_load_n(b->cq_tail, __ATOMIC_ACQUIRE) == head)
        return false;
    int32_t res = b->cqes[head & b->cq_mask].res;
    __atomic_store_n(b->cq_head, head + 1, __ATOMIC_RELEASE);
    return res == -EAGAIN;
}

int qp_bells_open(struct qp_bells *b)
{
    memset(b, 0, sizeof(*b));
    b->fd = -1;
    if (getenv("CISC_QP_NO_URING"))   /* tests of the fallback */
        return -ENOSYS;
    struct io_uring_params pr;
    memset(&pr, 0, sizeof(pr));
    pr.flags = IORING_SETUP_CQSIZE;
    pr.cq_entries = QB_CQ_ENTRIES;
    long fd = syscall(__NR_io_uring_setup, QB_SQ_ENTRIES, &pr);
    if (fd < 0) {
        b->fd = -1;
        return -errno;
    }
    b->fd = (int)fd;
    int r = (pr.features & IORING_FEAT_SINGLE_MMAP) && (pr.features & IORING_FEAT_NODROP)
                ? map_rings(b, &pr)
                : -ENOSYS;
    if (!r && !probe(b))
        r = -ENOSYS;
    if (r)
        qp_bells_close(b);
    return r;
}

void qp_bells_close(struct qp_bells *b)
{
    if (b->sqes)
        munmap(b->sqes, b->sqesz);
    if (b->ring)
        munmap(b->ring, b->sqsz);
    if (b->fd >= 0)
        close(b->fd);   /* the kernel cancels what still waits */
    memset(b, 0, sizeof(*b));
    b->fd = -1;
}
