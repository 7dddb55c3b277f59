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
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MAX_CPUS   16u   /* beyond this, every request would wake too many pollers */
#define LOOP_PER_CPU    2u    /* a poller and a stand-by for slow requests */
#define LOOP_NAP_GAP    2u    /* a poller naps when others serve more than this many
                                 requests per one of its own, on average (share_note) */
#define LOOP_GAP_CAP    64u   /* one gap counts at most this much */
#define LOOP_ONE_CLIENT 256u  /* requests from one requester in a row before any poller naps */
#define LOOP_SLOW_IO    (128u * 1024)  /* READ/WRITE larger than this may run long */
#define LOOP_PARK_MS    50    /* a parked worker looks again after this */
#define LOOP_NAP_MS     5     /* a poller of an idle CPU naps this long (share_note) */
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
    /* all three __atomic */
    uint32_t wake;                /* futex word of the CPU's parked workers */
    unsigned parked;              /* how many are parked on it */
    bool polled;                  /* a worker holds the CPU's polling role */
};

struct fusefs_loop {
    struct fuse_session *se;
    int fd, evfd;                 /* /dev/fuse (non-blocking), exit eventfd */
    unsigned ncpu, nthreads;
    int cpus[LOOP_MAX_CPUS];
    struct loop_cpu cpu[LOOP_MAX_CPUS];
    /* __atomic: the counters are relaxed (hints for share_note); stop is
     * stored sequentially consistent (loop_stop, park) and only checked
     * now and then (relaxed) by the loops */
    bool stop;
    uint64_t served;              /* requests read by any worker */
    uint32_t last_pid;            /* requester of the latest request (0: none) */
    uint64_t pid_change;          /* `served` when last_pid last changed */
    pthread_t threads[LOOP_MAX_CPUS * LOOP_PER_CPU];
};

struct loop_worker {
    struct fusefs_loop *l;
    unsigned ci;                  /* index into l->cpus */
    bool standby;                 /* starts parked */
};

static void futex_wake(uint32_t *w, int n)
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
    if (__atomic_load_n(&c->parked, __ATOMIC_SEQ_CST) == 0)
        return;
    __atomic_fetch_add(&c->wake, 1, __ATOMIC_SEQ_CST);
    futex_wake(&c->wake, n < 0 ? INT32_MAX : n);
}

static void wake_everyone(struct fusefs_loop *l)
{
    for (unsigned i = 0; i < l->ncpu; i++)
        wake_parked(l, i, -1);
}

/* Sleeps until woken or `ms` milliseconds pass: others serve meanwhile. Does
 * not sleep if the loop is stopping or the CPU's polling role is free
 * (counted as parked first, so a waker cannot miss us: see wake_parked). */
static void park(struct fusefs_loop *l, unsigned ci, long ms)
{
    struct loop_cpu *c = &l->cpu[ci];
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    /* Sequentially consistent with wake_parked (which reads parked after
     * changing stop or polled): see there. */
    __atomic_fetch_add(&c->parked, 1, __ATOMIC_SEQ_CST);
    uint32_t seen = __atomic_load_n(&c->wake, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&l->stop, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&c->polled, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &c->wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    __atomic_fetch_sub(&c->parked, 1, __ATOMIC_SEQ_CST);
}

static void loop_stop(struct fusefs_loop *l)
{
    /* Sequentially consistent: ordered before wake_everyone's loads of
     * `parked` (park() counts itself, then reads stop). */
    __atomic_store_n(&l->stop, true, __ATOMIC_SEQ_CST);
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
        if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED) || fuse_session_exited(l->se))
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
    /* The acquire half pairs with hand_over_poll's release (seq_cst) store
     * of false: the new poller starts after the old one let go. The
     * release half orders nothing the role protects; a failed claim reads
     * nothing either (relaxed). */
    return __atomic_compare_exchange_n(&l->cpu[ci].polled, &no, true, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Gives the polling role of CPU ci to a parked worker of the CPU. */
static void hand_over_poll(struct fusefs_loop *l, unsigned ci)
{
    /* Sequentially consistent: before wake_parked's load of `parked`
     * (see there); its release half pairs with claim_poll's acquire. */
    __atomic_store_n(&l->cpu[ci].polled, false, __ATOMIC_SEQ_CST);
    wake_parked(l, ci, 1);
}

/* A poller's share of the requests: gap8 is an average (x8, weight 1/8)
 * of how many requests other CPUs' pollers read between two of its own. */
struct share {
    uint64_t prev;                /* l->served after this poller's last request */
    unsigned gap8;
};

static void share_reset(struct fusefs_loop *l, struct share *sh)
{
    sh->prev = __atomic_load_n(&l->served, __ATOMIC_RELAXED);
    sh->gap8 = 0;
}

/* The requester of request b (0 if unknown: FORGET, spliced buffers). */
static uint32_t requester(const struct fuse_buf *b)
{
    uint32_t pid = 0;
    if (!(b->flags & FUSE_BUF_IS_FD) && b->size >= sizeof(struct fuse_in_header))
        memcpy(&pid, (const char *)b->mem + offsetof(struct fuse_in_header, pid), sizeof(pid));
    return pid;
}

/* Notes that others read served - sh->prev requests since this poller's
 * last one (plus one more, the current, from `pid`, if `mine`). A poller
 * whose CPU runs no client still wins some races for the requests of a
 * client on another CPU (its CPU is idle, so it runs at once, while the
 * requester's own poller runs only once the requester sleeps); most it
 * loses inside poll(), which never tells. When one requester has made
 * every recent request, such a poller naps, keeping its role, so that the
 * requests stop waking its idle CPU (an inter-processor interrupt charged
 * to the requester) and stop being served across CPUs. With several
 * requesters it never naps: serving across CPUs is then parallel work
 * (two clients on one CPU), and with one client per CPU every poller reads
 * about every other request. Returns true when it should nap. */
static bool share_note(struct fusefs_loop *l, struct share *sh, bool mine, uint32_t pid)
{
    uint64_t n = mine ? __atomic_fetch_add(&l->served, 1, __ATOMIC_RELAXED)
                      : __atomic_load_n(&l->served, __ATOMIC_RELAXED);
    if (mine && pid && __atomic_exchange_n(&l->last_pid, pid, __ATOMIC_RELAXED) != pid)
        __atomic_store_n(&l->pid_change, n, __ATOMIC_RELAXED);
    uint64_t gap = n - sh->prev;
    sh->prev = mine ? n + 1 : n;
    sh->gap8 = sh->gap8 - sh->gap8 / 8 + (unsigned)(gap < LOOP_GAP_CAP ? gap : LOOP_GAP_CAP);
    uint64_t changed = __atomic_load_n(&l->pid_change, __ATOMIC_RELAXED);
    return sh->gap8 > 8 * LOOP_NAP_GAP && n > changed && n - changed > LOOP_ONE_CLIENT;
}

/* Naps (keeping the polling role) and starts counting afresh. */
static void nap(struct loop_worker *w, struct share *sh)
{
    park(w->l, w->ci, LOOP_NAP_MS);
    share_reset(w->l, sh);
}

/* Polls and serves as the CPU's poller until it hands the role over (a
 * slow request) or the loop ends. Returns false when the loop ends.
 * After a quick request it reads again before polling: the reply usually
 * wakes the requester on this CPU, which preempts us, queues its next
 * request and sleeps before we get back, so the poll would find it
 * waiting anyway (a system call saved per request). */
static bool poll_and_serve(struct loop_worker *w, struct fuse_buf *buf)
{
    struct fusefs_loop *l = w->l;
    struct share sh;
    share_reset(l, &sh);
    bool again = false;           /* read first, poll only if nothing waits */
    for (;;) {
        if (!again && !wait_readable(l))
            return false;
        bool polled = !again;
        again = false;
        int r = fuse_session_receive_buf(l->se, buf);
        if (r == -EAGAIN || r == -EINTR) {
            if (polled && share_note(l, &sh, false, 0))
                nap(w, &sh);
            continue;
        }
        if (r <= 0 || fuse_session_exited(l->se))
            return false;         /* unmounted, or a read error */
        bool idle_cpu = share_note(l, &sh, true, requester(buf));
        bool slow = may_be_slow(buf);
        if (slow)
            hand_over_poll(l, w->ci);
        fuse_session_process_buf(l->se, buf);
        if (slow)
            return true;
        if (idle_cpu)
            nap(w, &sh);
        else
            again = !__atomic_load_n(&l->stop, __ATOMIC_RELAXED);
    }
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
    in_worker = true;
    if (w->standby)
        park(l, w->ci, LOOP_PARK_MS);
    while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
        if (!claim_poll(l, w->ci)) {
            park(l, w->ci, LOOP_PARK_MS);
            continue;
        }
        if (!poll_and_serve(w, &buf))
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
