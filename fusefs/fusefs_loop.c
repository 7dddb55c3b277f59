/*
 * fusefs/fusefs_loop.c - the session loop: FUSE worker threads pinned to
 * CPUs, so that a synchronous request is served on the CPU of the process
 * that made it (see fusefs_int.h for the model and invariants).
 *
 * Why pinned: a FUSE request is a ping-pong. The caller queues it and
 * sleeps; a daemon thread reads it, runs it and writes the reply, which
 * wakes the caller. When the daemon thread runs on another CPU, both
 * wake-ups cross CPUs; on a virtual machine whose idle CPUs halt, each one
 * costs an inter-processor interrupt and a halt exit, and a
 * create/stat/unlink storm ran at a third of the speed it reaches when
 * both sides share a CPU. libfuse's loop lets the scheduler place its
 * threads, and it puts a woken thread on the idle CPU: the expensive case
 * every time.
 *
 * Why blocking reads: the kernel queues a request and wakes *one*
 * exclusive reader of /dev/fuse, while poll() wakes every poller, each of
 * which then reads (the losers get EAGAIN) and polls again: under fio
 * random writes poll, the extra reads and their context switches were
 * two thirds of the device's CPU time. A blocking read is one system call
 * per request and one wake-up.
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MAX_CPUS   16u   /* beyond this, libfuse's loop is used */
#define LOOP_PER_CPU    2u    /* a reader and a stand-by for slow requests */
#define LOOP_ONE_CLIENT 256u  /* requests from one requester in a row before a reader
                                 asks where that requester runs (away_from_client) */
#define LOOP_SLOW_IO    (128u * 1024)  /* READ/WRITE larger than this may run long */
#define LOOP_PARK_MS    50    /* a parked worker looks again after this */
#define LOOP_NAP_MS     5     /* a reader away from the only client naps this long */
#define LOOP_POLL_MS    250   /* the loop thread re-checks for exit (signals may hit
                                 other threads) */
#define LOOP_KICK_MS    10    /* while stopping, readers are interrupted this often */

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
    bool reading;                 /* a worker holds the CPU's reading role */
};

struct fusefs_loop {
    struct fuse_session *se;
    int fd;                       /* /dev/fuse (blocking) */
    unsigned ncpu, nthreads;
    int cpus[LOOP_MAX_CPUS];
    struct loop_cpu cpu[LOOP_MAX_CPUS];
    /* __atomic: the counters are relaxed (hints for note_request); stop is
     * stored sequentially consistent (loop_stop, park) and only checked
     * now and then (relaxed) by the workers */
    bool stop;
    uint32_t exits;               /* futex word: workers that returned */
    uint64_t served;              /* requests read by any worker */
    uint32_t last_pid;            /* requester of the latest request (0: none) */
    uint64_t pid_change;          /* `served` when last_pid last changed */
    pthread_t threads[LOOP_MAX_CPUS * LOOP_PER_CPU];
};

struct loop_worker {
    struct fusefs_loop *l;
    unsigned ci;                  /* index into l->cpus */
    bool standby;                 /* starts parked */
    bool look;                    /* ask where the client runs on the next request */
    unsigned since_look;          /* requests read since it last asked */
};

/* A signal with nothing to do but interrupt a worker's blocking read
 * (installed without SA_RESTART). */
static int loop_signal(void)
{
    return SIGRTMIN + 3;
}

static void on_loop_signal(int sig)
{
    (void)sig;
}

static int install_signal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_loop_signal;
    sigemptyset(&sa.sa_mask);
    return sigaction(loop_signal(), &sa, NULL) ? -errno : 0;
}

static void futex_wake(uint32_t *w, int n)
{
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void futex_wait_ms(uint32_t *w, uint32_t seen, long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

/* Wakes up to n parked workers of CPU ci (n < 0: all). The caller has
 * just changed what parked workers wait for (stop, the reading role). */
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

/* Sleeps until woken or `ms` milliseconds pass: others serve meanwhile. Does
 * not sleep if the loop is stopping or, unless `keep` (a nap of the
 * reader itself), the CPU's reading role is free (counted as parked first,
 * so a waker cannot miss us: see wake_parked). */
static void park(struct fusefs_loop *l, unsigned ci, long ms, bool keep)
{
    struct loop_cpu *c = &l->cpu[ci];
    /* Sequentially consistent with wake_parked (which reads parked after
     * changing stop or reading): see there. */
    __atomic_fetch_add(&c->parked, 1, __ATOMIC_SEQ_CST);
    uint32_t seen = __atomic_load_n(&c->wake, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&l->stop, __ATOMIC_SEQ_CST) &&
        (keep || __atomic_load_n(&c->reading, __ATOMIC_SEQ_CST)))
        futex_wait_ms(&c->wake, seen, ms);
    __atomic_fetch_sub(&c->parked, 1, __ATOMIC_SEQ_CST);
}

/* Asks every worker to return. Readers blocked in read() are interrupted
 * by the loop thread (kick_readers), which this wakes. */
static void loop_stop(struct fusefs_loop *l)
{
    /* Sequentially consistent: ordered before wake_parked's loads of
     * `parked` (park() counts itself, then reads stop). */
    __atomic_store_n(&l->stop, true, __ATOMIC_SEQ_CST);
    for (unsigned i = 0; i < l->ncpu; i++)
        wake_parked(l, i, -1);
    __atomic_fetch_add(&l->exits, 0x10000u, __ATOMIC_SEQ_CST);   /* the high half: stops */
    futex_wake(&l->exits, 1);
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
 * takes over reading on this CPU while the worker is busy with one. Small
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

/* Takes the reading role of CPU ci; false if another worker holds it. */
static bool claim_read(struct fusefs_loop *l, unsigned ci)
{
    bool no = false;
    /* The acquire half pairs with hand_over_read's release (seq_cst) store
     * of false: the new reader starts after the old one let go. The
     * release half orders nothing the role protects; a failed claim reads
     * nothing either (relaxed). */
    return __atomic_compare_exchange_n(&l->cpu[ci].reading, &no, true, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Gives the reading role of CPU ci to a parked worker of the CPU. */
static void hand_over_read(struct fusefs_loop *l, unsigned ci)
{
    /* Sequentially consistent: before wake_parked's load of `parked`
     * (see there); its release half pairs with claim_read's acquire. */
    __atomic_store_n(&l->cpu[ci].reading, false, __ATOMIC_SEQ_CST);
    wake_parked(l, ci, 1);
}

/* The requester of request b (0 if unknown: FORGET, spliced buffers). */
static uint32_t requester(const struct fuse_buf *b)
{
    uint32_t pid = 0;
    if (!(b->flags & FUSE_BUF_IS_FD) && b->size >= sizeof(struct fuse_in_header))
        memcpy(&pid, (const char *)b->mem + offsetof(struct fuse_in_header, pid), sizeof(pid));
    return pid;
}

/* The CPU thread tid last ran on (field 39 of /proc/TID/stat), or -1. */
static int cpu_of(uint32_t tid)
{
    char path[32], buf[1024];
    snprintf(path, sizeof(path), "/proc/%u/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');   /* the command name may hold anything */
    for (int field = 2; p && field < 39; field++)
        p = strchr(p + 1, ' ');
    return p ? atoi(p + 1) : -1;
}

/* Counts a request from `pid` and tells whether its reader should nap.
 * The kernel wakes the reader that has waited longest, so with one client
 * (a single-threaded metadata storm) the readers of every CPU take turns,
 * and half the requests cross CPUs. When one requester has made the last
 * LOOP_ONE_CLIENT requests, a reader asks (once per nap, or every
 * LOOP_ONE_CLIENT of its own requests) which CPU that requester is
 * sleeping on; if that is another CPU of the loop, it naps, keeping its
 * role, so the requests go to the reader that shares the client's CPU. With several
 * requesters nobody naps: serving on every CPU is then parallel work. */
static bool away_from_client(struct loop_worker *w, uint32_t pid)
{
    struct fusefs_loop *l = w->l;
    uint64_t n = __atomic_fetch_add(&l->served, 1, __ATOMIC_RELAXED);
    if (pid && __atomic_exchange_n(&l->last_pid, pid, __ATOMIC_RELAXED) != pid)
        __atomic_store_n(&l->pid_change, n, __ATOMIC_RELAXED);
    uint64_t changed = __atomic_load_n(&l->pid_change, __ATOMIC_RELAXED);
    if (!pid || n - changed < LOOP_ONE_CLIENT) {
        w->look = true;
        return false;
    }
    if (!w->look && ++w->since_look < LOOP_ONE_CLIENT)
        return false;
    w->look = false;
    w->since_look = 0;
    int cpu = cpu_of(pid);
    if (cpu == l->cpus[w->ci])
        return false;
    for (unsigned i = 0; i < l->ncpu; i++)   /* one of ours: its reader serves */
        if (l->cpus[i] == cpu)
            return true;
    return false;
}

/* Reads and serves as the CPU's reader until it hands the role over (a
 * slow request) or the loop ends. Returns false when the loop ends. */
static bool read_and_serve(struct loop_worker *w, struct fuse_buf *buf)
{
    struct fusefs_loop *l = w->l;
    for (;;) {
        if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
            return false;
        int r = fuse_session_receive_buf(l->se, buf);
        if (r == -EINTR || r == -EAGAIN)
            continue;
        if (r <= 0 || fuse_session_exited(l->se))
            return false;         /* unmounted, or a read error */
        bool nap = away_from_client(w, requester(buf));
        bool slow = may_be_slow(buf);
        if (slow)
            hand_over_read(l, w->ci);
        fuse_session_process_buf(l->se, buf);
        if (slow)
            return true;
        if (nap) {
            park(l, w->ci, LOOP_NAP_MS, true);
            w->look = true;
        }
    }
}

/* One worker. At most one worker per CPU reads /dev/fuse (a second one
 * would take turns with the first and get requests of clients on other
 * CPUs); the others park until the reader starts a slow request and hands
 * the role over, or LOOP_PARK_MS pass. */
static void *worker_main(void *arg)
{
    struct loop_worker *w = arg;
    struct fusefs_loop *l = w->l;
    struct fuse_buf buf;
    memset(&buf, 0, sizeof(buf));
    in_worker = true;
    if (w->standby)
        park(l, w->ci, LOOP_PARK_MS, false);
    while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
        if (!claim_read(l, w->ci)) {
            park(l, w->ci, LOOP_PARK_MS, false);
            continue;
        }
        if (!read_and_serve(w, &buf))
            break;
    }
    free(buf.mem);
    loop_stop(l);
    __atomic_fetch_add(&l->exits, 1, __ATOMIC_SEQ_CST);
    futex_wake(&l->exits, 1);
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
        w[i] = (struct loop_worker){ .l = l, .ci = i % l->ncpu, .standby = i >= l->ncpu,
                                     .look = true };
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

/* The loop thread's part: waits until every worker has returned. Stop can
 * come from any thread (fusefs_loop_stop), from a worker (unmount, read
 * error) or from a signal handler (fuse_session_exit, on whatever thread
 * the signal hit: seen here within LOOP_POLL_MS). Readers blocked in
 * read() are interrupted with loop_signal() every LOOP_KICK_MS until they
 * return: one signal could land just before a reader blocks. */
static void wait_workers(struct fusefs_loop *l)
{
    for (;;) {
        uint32_t seen = __atomic_load_n(&l->exits, __ATOMIC_SEQ_CST);
        if ((seen & 0xffffu) >= l->nthreads)
            return;
        if (!__atomic_load_n(&l->stop, __ATOMIC_SEQ_CST) && fuse_session_exited(l->se))
            loop_stop(l);
        if (__atomic_load_n(&l->stop, __ATOMIC_SEQ_CST)) {
            for (unsigned i = 0; i < l->nthreads; i++)
                pthread_kill(l->threads[i], loop_signal());
            futex_wait_ms(&l->exits, seen, LOOP_KICK_MS);
        } else {
            futex_wait_ms(&l->exits, seen, LOOP_POLL_MS);
        }
    }
}

int fusefs_loop_pinned(struct fusefs *f, struct fusefs_loop *l)
{
    (void)f;
    struct loop_worker w[LOOP_MAX_CPUS * LOOP_PER_CPU];
    int r = start_workers(l, w);
    wait_workers(l);
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
    int fl = fcntl(l->fd, F_GETFL);
    int r = fl < 0 || fcntl(l->fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ? -errno : install_signal();
    if (r) {
        free(l);
        return r;
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
    free(l);
}
