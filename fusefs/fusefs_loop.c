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
#define LOOP_LOSSES     3u    /* empty wake-ups before a worker parks */
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

/* Wakes up to n parked workers of CPU ci (n < 0: all). */
static void wake_parked(struct fusefs_loop *l, unsigned ci, int n)
{
    struct loop_cpu *c = &l->cpu[ci];
    if (atomic_load_explicit(&c->parked, memory_order_relaxed) == 0)
        return;
    /* Pairs with the acquire load in park(): a parker that read the old
     * value is woken by the FUTEX_WAKE, one that reads the new value does
     * not sleep. */
    atomic_fetch_add_explicit(&c->wake, 1, memory_order_release);
    futex_wake(&c->wake, n < 0 ? INT32_MAX : n);
}

static void wake_everyone(struct fusefs_loop *l)
{
    for (unsigned i = 0; i < l->ncpu; i++)
        wake_parked(l, i, -1);
}

/* Sleeps until woken or LOOP_PARK_MS pass: others serve meanwhile. */
static void park(struct fusefs_loop *l, unsigned ci)
{
    struct loop_cpu *c = &l->cpu[ci];
    struct timespec ts = { 0, LOOP_PARK_MS * 1000000L };
    uint32_t seen = atomic_load_explicit(&c->wake, memory_order_acquire);
    atomic_fetch_add_explicit(&c->parked, 1, memory_order_relaxed);
    if (!atomic_load_explicit(&l->stop, memory_order_relaxed))
        syscall(SYS_futex, &c->wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    atomic_fetch_sub_explicit(&c->parked, 1, memory_order_relaxed);
}

static void loop_stop(struct fusefs_loop *l)
{
    atomic_store_explicit(&l->stop, true, memory_order_relaxed);
    uint64_t one = 1;
    if (write(l->evfd, &one, sizeof(one)) < 0) {
        /* the counter cannot overflow with one write per stop */
    }
    wake_everyone(l);
}

/* Requests that may run long (data, sync, truncate): a stand-by takes
 * over polling on this CPU while the worker is busy with one. */
static bool may_be_slow(const struct fuse_buf *b)
{
    if (b->size < sizeof(struct fuse_in_header) || (b->flags & FUSE_BUF_IS_FD))
        return true;
    uint32_t op;
    memcpy(&op, (const char *)b->mem + offsetof(struct fuse_in_header, opcode), sizeof(op));
    return op == FUSE_READ || op == FUSE_WRITE || op == FUSE_FSYNC || op == FUSE_FSYNCDIR ||
           op == FUSE_SETATTR || op == FUSE_FALLOCATE || op == FUSE_COPY_FILE_RANGE;
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

/* One worker: poll, read, run; park after repeatedly losing the race for
 * requests to the workers of other CPUs (they serve a process on their
 * own CPU). Stand-bys (all but the first worker of a CPU) start parked. */
static void *worker_main(void *arg)
{
    struct loop_worker *w = arg;
    struct fusefs_loop *l = w->l;
    struct fuse_buf buf;
    memset(&buf, 0, sizeof(buf));
    unsigned losses = 0;
    in_worker = true;
    if (w->standby)
        park(l, w->ci);
    while (wait_readable(l)) {
        int r = fuse_session_receive_buf(l->se, &buf);
        if (r == -EAGAIN || r == -EINTR) {
            if (++losses >= LOOP_LOSSES) {
                losses = 0;
                park(l, w->ci);
            }
            continue;
        }
        if (r <= 0 || fuse_session_exited(l->se))
            break;                /* unmounted, or a read error */
        losses = 0;
        if (may_be_slow(&buf))
            wake_parked(l, w->ci, 1);
        fuse_session_process_buf(l->se, &buf);
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
