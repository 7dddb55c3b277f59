/*
 * fusefs/fusefs_loop.c - the session loop: FUSE worker threads pinned to
 * CPUs, so that a synchronous request is served on the CPU of the process
 * that made it (see fusefs_int.h for the model and invariants).
 *
 * Why: a FUSE request is a ping-pong. The caller queues it and sleeps;
 * a daemon thread reads it, runs it and writes the reply, which wakes the
 * caller. When the daemon thread runs on another CPU, both wake-ups cross
 * CPUs; on a virtual machine whose idle CPUs halt, each one costs an
 * inter-processor interrupt and a halt exit, and a create/stat/unlink
 * storm ran at a third of the speed it reaches when both sides share a
 * CPU. libfuse's loop lets the scheduler place its threads, and it puts a
 * woken thread on the idle CPU: the expensive case every time.
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MAX_CPUS   16u   /* beyond this, every request would wake too many pollers */
#define LOOP_PER_CPU    2u    /* a poller and a stand-by for slow requests */
#define LOOP_LOSS_PARK  8u    /* loss score at which a poller naps (see note_race) */
#define LOOP_WIN_CREDIT 2u    /* a request won takes this off the loss score */
#define LOOP_SLOW_IO    (128u * 1024)  /* READ/WRITE larger than this may run long */
#define LOOP_PARK_MS    50    /* a parked worker looks again after this */
#define LOOP_POLL_MS    250   /* re-check for exit (signals may hit other threads) */

/* Set in the loop's workers: libfuse keeps a splice pipe per thread that
 * replies with splice, freed when the thread exits; only threads that end
 * before the session is destroyed may splice (device cores outlive it). */
static __thread bool in_worker;

bool fusefs_loop_can_splice(void)
{
    return in_worker;
}

struct loop_cpu {
    _Atomic uint32_t wake;        /* futex word of the CPU's parked workers */
    _Atomic unsigned parked;      /* how many are parked on it */
    _Atomic bool polled;          /* a worker holds the CPU's polling role */
};

struct fusefs_loop {
    struct fuse_session *se;
    int fd, evfd;                 /* /dev/fuse (non-blocking), exit eventfd */
    unsigned ncpu, nthreads;
    int cpus[LOOP_MAX_CPUS];
    struct loop_cpu cpu[LOOP_MAX_CPUS];
    _Atomic bool stop;
    pthread_t threads[LOOP_MAX_CPUS * LOOP_PER_CPU];
};

struct loop_worker {
    struct fusefs_loop *l;
    unsigned ci;                  /* index into l->cpus */
    bool standby;                 /* starts parked */
};

static void futex_wake(_Atomic uint32_t *w, int n)
{
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Wakes up to n parked workers of CPU ci (n < 0: all). The caller has
 * just changed what parked workers wait for (stop, the polling role). */
static void wake_parked(struct fusefs_loop *l, unsigned ci, int n)
{
    struct loop_cpu *c = &l->cpu[ci];
    /* Sequentially consistent with park(): either this load sees the
     * parker's count, or the parker sees the change made before it. */
    if (atomic_load(&c->parked) == 0)
        return;
    atomic_fetch_add(&c->wake, 1);
    futex_wake(&c->wake, n < 0 ? INT32_MAX : n);
}

static void wake_everyone(struct fusefs_loop *l)
{
    for (unsigned i = 0; i < l->ncpu; i++)
        wake_parked(l, i, -1);
}

/* Sleeps until woken or LOOP_PARK_MS pass: others serve meanwhile. Does
 * not sleep if the loop is stopping or the CPU's polling role is free
 * (counted as parked first, so a waker cannot miss us: see wake_parked). */
static void park(struct fusefs_loop *l, unsigned ci)
{
    struct loop_cpu *c = &l->cpu[ci];
    struct timespec ts = { 0, LOOP_PARK_MS * 1000000L };
    atomic_fetch_add(&c->parked, 1);
    uint32_t seen = atomic_load(&c->wake);
    if (!atomic_load(&l->stop) && atomic_load(&c->polled))
        syscall(SYS_futex, &c->wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    atomic_fetch_sub(&c->parked, 1);
}

static void loop_stop(struct fusefs_loop *l)
{
    atomic_store(&l->stop, true);
    uint64_t one = 1;
    if (write(l->evfd, &one, sizeof(one)) < 0) {
        /* the counter cannot overflow with one write per stop */
    }
    wake_everyone(l);
}

/* The byte count of a READ or WRITE request (0 if the buffer is short). */
static uint32_t io_size(const struct fuse_buf *b, uint32_t op)
{
    size_t at = sizeof(struct fuse_in_header) +
                (op == FUSE_READ ? offsetof(struct fuse_read_in, size)
                                 : offsetof(struct fuse_write_in, size));
    uint32_t n = 0;
    if (b->size >= at + sizeof(n))
        memcpy(&n, (const char *)b->mem + at, sizeof(n));
    return n;
}

/* Requests that may run long (large data, sync, truncate): a stand-by
 * takes over polling on this CPU while the worker is busy with one. Small
 * reads and writes are as quick as a metadata operation. */
static bool may_be_slow(const struct fuse_buf *b)
{
    if (b->size < sizeof(struct fuse_in_header) || (b->flags & FUSE_BUF_IS_FD))
        return true;
    uint32_t op;
    memcpy(&op, (const char *)b->mem + offsetof(struct fuse_in_header, opcode), sizeof(op));
    if (op == FUSE_READ || op == FUSE_WRITE)
        return io_size(b, op) > LOOP_SLOW_IO;
    return op == FUSE_FSYNC || op == FUSE_FSYNCDIR || op == FUSE_SETATTR ||
           op == FUSE_FALLOCATE || op == FUSE_COPY_FILE_RANGE;
}

/* Waits until /dev/fuse is readable (or exit). Returns false to exit. */
static bool wait_readable(struct fusefs_loop *l)
{
    struct pollfd p[2] = { { l->fd, POLLIN, 0 }, { l->evfd, POLLIN, 0 } };
    for (;;) {
        if (atomic_load_explicit(&l->stop, memory_order_relaxed) || fuse_session_exited(l->se))
            return false;
        int n = poll(p, 2, LOOP_POLL_MS);
        if (n > 0 && !(p[1].revents & POLLIN))
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

/* Takes the polling role of CPU ci; false if another worker holds it. */
static bool claim_poll(struct fusefs_loop *l, unsigned ci)
{
    bool no = false;
    return atomic_compare_exchange_strong_explicit(&l->cpu[ci].polled, &no, true,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* Gives the polling role of CPU ci to a parked worker of the CPU. */
static void hand_over_poll(struct fusefs_loop *l, unsigned ci)
{
    atomic_store(&l->cpu[ci].polled, false);
    wake_parked(l, ci, 1);
}

/* Keeps the loss score of a poller: a loss (another CPU's poller read the
 * request first) adds one, a request won takes LOOP_WIN_CREDIT off. A
 * poller whose CPU runs no client loses most races (the requester's own
 * CPU usually wins) yet wins some, so consecutive losses are rare; the
 * score still climbs and the poller naps, keeping its role, so that new
 * requests stop waking its idle CPU (an inter-processor interrupt charged
 * to the requester). Returns true when it should nap. */
static bool note_race(unsigned *score, bool won)
{
    if (won) {
        *score = *score > LOOP_WIN_CREDIT ? *score - LOOP_WIN_CREDIT : 0;
        return false;
    }
    if (++*score < LOOP_LOSS_PARK)
        return false;
    *score = 0;
    return true;
}

/* Polls and serves as the CPU's poller until it hands the role over (a
 * slow request) or the loop ends. Returns false when the loop ends. */
static bool poll_and_serve(struct loop_worker *w, struct fuse_buf *buf, unsigned *score)
{
    struct fusefs_loop *l = w->l;
    while (wait_readable(l)) {
        int r = fuse_session_receive_buf(l->se, buf);
        if (r == -EAGAIN || r == -EINTR) {
            if (note_race(score, false))
                park(l, w->ci);      /* napping keeps the role */
            continue;
        }
        if (r <= 0 || fuse_session_exited(l->se))
            return false;         /* unmounted, or a read error */
        note_race(score, true);
        bool slow = may_be_slow(buf);
        if (slow)
            hand_over_poll(l, w->ci);
        fuse_session_process_buf(l->se, buf);
        if (slow)
            return true;
    }
    return false;
}

/* One worker. At most one worker per CPU polls /dev/fuse (a poll wakes
 * every poller, so a second one on the same CPU would only cost a
 * context switch per request); the others park until the poller starts
 * a slow request and hands the role over, or LOOP_PARK_MS pass. */
static void *worker_main(void *arg)
{
    struct loop_worker *w = arg;
    struct fusefs_loop *l = w->l;
    struct fuse_buf buf;
    memset(&buf, 0, sizeof(buf));
    unsigned score = 0;
    in_worker = true;
    if (w->standby)
        park(l, w->ci);
    while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) {
        if (!claim_poll(l, w->ci)) {
            park(l, w->ci);
            continue;
        }
        if (!poll_and_serve(w, &buf, &score))
            break;
    }
    free(buf.mem);
    loop_stop(l);
    return NULL;
}

/* The CPUs this process may run on; false if there are too many (or
 * too few to matter). */
static bool pick_cpus(struct fusefs_loop *l)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return false;
    unsigned n = (unsigned)CPU_COUNT(&set);
    if (n < 2 || n > LOOP_MAX_CPUS)
        return false;
    for (int c = 0; c < CPU_SETSIZE && l->ncpu < n; c++)
        if (CPU_ISSET(c, &set))
            l->cpus[l->ncpu++] = c;
    return true;
}

static int start_workers(struct fusefs_loop *l, struct loop_worker *w)
{
    for (unsigned i = 0; i < l->ncpu * LOOP_PER_CPU; i++) {
        pthread_attr_t a;
        cpu_set_t one;
        CPU_ZERO(&one);
        w[i].l = l;
        w[i].ci = i % l->ncpu;
        w[i].standby = i >= l->ncpu;
        CPU_SET(l->cpus[w[i].ci], &one);
        pthread_attr_init(&a);
        int r = pthread_attr_setaffinity_np(&a, sizeof(one), &one);
        if (!r)
            r = pthread_create(&l->threads[i], &a, worker_main, &w[i]);
        pthread_attr_destroy(&a);
        if (r) {
            loop_stop(l);
            return -r;
        }
        l->nthreads++;
    }
    return 0;
}

int fusefs_loop_pinned(struct fusefs *f, struct fusefs_loop *l)
{
    struct loop_worker w[LOOP_MAX_CPUS * LOOP_PER_CPU];
    int r = start_workers(l, w);
    for (unsigned i = 0; i < l->nthreads; i++)
        pthread_join(l->threads[i], NULL);
    return r;
}

int fusefs_loop_create(struct fusefs *f, struct fusefs_loop **out)
{
    struct fusefs_loop *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->se = f->se;
    l->fd = fuse_session_fd(f->se);
    if (!pick_cpus(l)) {
        free(l);
        return -EOPNOTSUPP;
    }
    l->evfd = eventfd(0, EFD_CLOEXEC);
    int fl = fcntl(l->fd, F_GETFL);
    if (l->evfd < 0 || fl < 0 || fcntl(l->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        int e = errno;
        if (l->evfd >= 0)
            close(l->evfd);
        free(l);
        return -e;
    }
    *out = l;
    return 0;
}

void fusefs_loop_stop(struct fusefs_loop *l)
{
    loop_stop(l);
}

void fusefs_loop_destroy(struct fusefs_loop *l)
{
    if (l) {
        close(l->evfd);
        free(l);
    }
}
