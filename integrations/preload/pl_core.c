/*
 * integrations/preload/pl_core.c - the preload library's process state:
 * start-up from the environment, the session and a queue per thread, the
 * descriptor table and its open file descriptions, path classification,
 * and fork.
 */
#include "integrations/preload/preload.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pl_state pl = { .lock = PTHREAD_MUTEX_INITIALIZER, .root_fd = -1 };
struct pl_ofd *_Atomic pl_fds[PL_FD_MAX];

static int (*real_fcntl)(int, int, ...);
static int (*real_close)(int);
static int (*real_open)(const char *, int, ...);

void *pl_dlnext(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        static const char msg[] = "libcisc-preload: a libc symbol is missing\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        abort();
    }
    return p;
}

void *pl_real(void **slot, const char *name)
{
    void *p = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (!p) {
        p = pl_dlnext(name);
        __atomic_store_n(slot, p, __ATOMIC_RELAXED);
    }
    return p;
}

long pl_ret(long r)
{
    if (r >= 0)
        return r;
    errno = (int)-r;
    return -1;
}

/* ---- queues: one per thread, plus a shared one past the device's limit ---- */

struct pl_thread {
    struct cisc_queue *q;
    unsigned gen;
    bool shared;                   /* holds ovf_lock between enter and leave */
    unsigned share_gen;            /* gen + 1 once this thread uses the shared queue */
};

static __thread struct pl_thread t_self;
static pthread_key_t t_key;
static pthread_mutex_t ovf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cisc_queue *ovf_q;   /* under ovf_lock */
static _Atomic int n_own;          /* threads' own queues alive */

static void thread_gone(void *arg)
{
    struct pl_thread *t = arg;
    if (t->q && t->gen == pl.gen) {
        cisc_queue_destroy(t->q);
        atomic_fetch_sub(&n_own, 1);
    }
    t->q = NULL;
}

static int session(struct cisc_session **out)
{
    int r = 0;
    pthread_mutex_lock(&pl.lock);
    if (!pl.s)
        r = cisc_session_open(pl.mnt, &pl.s);
    *out = pl.s;
    pthread_mutex_unlock(&pl.lock);
    return r;
}

/* Own queues per process; later threads share one (a session may have 64
 * queues, and the shared one must still fit). */
#define PL_OWN_QUEUES 48

struct cisc_queue *pl_queue(int *err)
{
    struct pl_thread *t = &t_self;
    if (t->q && t->gen == pl.gen)
        return t->q;
    struct cisc_session *s;
    int r = session(&s);
    if (r) {
        *err = r;
        return NULL;
    }
    struct cisc_queue_params p = { .arena_size = 8u << 20 };   /* appends land whole up to this */
    if (t->share_gen != pl.gen + 1) {   /* not yet sent to the shared queue */
        t->q = NULL;
        if (atomic_fetch_add(&n_own, 1) < PL_OWN_QUEUES &&
            cisc_queue_create_params(s, &p, &t->q) == 0) {
            t->gen = pl.gen;
            pthread_setspecific(t_key, t);
            return t->q;
        }
        atomic_fetch_sub(&n_own, 1);
        t->share_gen = pl.gen + 1;   /* don't ask the device again */
    }
    pthread_mutex_lock(&ovf_lock);
    if (!ovf_q && (r = cisc_queue_create_params(s, &p, &ovf_q)) != 0) {
        pthread_mutex_unlock(&ovf_lock);
        *err = r;
        return NULL;
    }
    t->shared = true;   /* ovf_lock held until pl_leave */
    return ovf_q;
}

void pl_enter(sigset_t *old)
{
    if (pl.handlers) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, old);
    }
}

void pl_leave(const sigset_t *old)
{
    if (t_self.shared) {
        t_self.shared = false;
        pthread_mutex_unlock(&ovf_lock);
    }
    if (pl.handlers)
        pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* ---- open file descriptions and the table --------------------------------- */

struct pl_ofd *pl_ofd_new(uint64_t fh, int flags, const char *path)
{
    pthread_mutex_lock(&pl.lock);
    struct pl_ofd *o = pl.free_ofds;
    if (o)
        pl.free_ofds = o->free_next;
    pthread_mutex_unlock(&pl.lock);
    if (!o) {
        o = calloc(1, sizeof(*o));   /* never freed: invariant 2 */
        if (!o)
            return NULL;
        pthread_mutex_init(&o->pos_lock, NULL);
        pthread_mutex_init(&o->mq_lock, NULL);
        pthread_cond_init(&o->mq_cond, NULL);
    }
    o->path = strdup(path);
    if (!o->path) {
        pthread_mutex_lock(&pl.lock);
        o->free_next = pl.free_ofds;
        pl.free_ofds = o;
        pthread_mutex_unlock(&pl.lock);
        return NULL;
    }
    o->fh = fh;
    o->flags = flags;
    o->pos = 0;
    o->mq_head = NULL;
    o->mq_tail = &o->mq_head;
    o->mq_leaders = 0;
    o->mq_spinner = false;
    o->wgen = o->wgen_fsync = o->synced_gen = 0;
    o->streak = 0;
    o->live = true;
    atomic_store_explicit((_Atomic int *)&o->refs, 1, memory_order_release);
    return o;
}

bool pl_served(int fd)
{
    return fd >= 0 && fd < PL_FD_MAX &&
           atomic_load_explicit(&pl_fds[fd], memory_order_relaxed) != NULL;
}

struct pl_ofd *pl_fd_get(int fd)
{
    if (fd < 0 || fd >= PL_FD_MAX)
        return NULL;
    for (;;) {
        struct pl_ofd *o = atomic_load_explicit(&pl_fds[fd], memory_order_acquire);
        if (!o)
            return NULL;
        _Atomic int *refs = (_Atomic int *)&o->refs;
        int n = atomic_load_explicit(refs, memory_order_relaxed);
        /* Take a ref only on a live ofd (never revive one at 0) ... */
        while (n > 0 &&
               !atomic_compare_exchange_weak_explicit(refs, &n, n + 1, memory_order_acquire,
                                                      memory_order_relaxed))
            ;
        if (n <= 0)
            continue;
        /* ... and keep it only if fd still names it (invariant 2). */
        if (atomic_load_explicit(&pl_fds[fd], memory_order_acquire) == o)
            return o;
        pl_ofd_put(o);
    }
}

int pl_ofd_put(struct pl_ofd *o)
{
    if (atomic_fetch_sub_explicit((_Atomic int *)&o->refs, 1, memory_order_acq_rel) != 1)
        return 0;
    int r = 0, err = 0;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    if (q && o->live)
        r = cisc_close(q, o->fh);
    pl_leave(&old);
    o->live = false;
    free(o->path);
    o->path = NULL;
    pthread_mutex_lock(&pl.lock);
    o->free_next = pl.free_ofds;
    pl.free_ofds = o;
    pthread_mutex_unlock(&pl.lock);
    return q ? (r == -EBADF ? 0 : r) : err;
}

/* Invariants 1 and 2 of preload.h for table entry fd (under pl.lock):
 * a live ofd with refs, at a number the kernel has open. */
__attribute__((unused)) static bool fd_entry_ok(int fd)
{
    struct pl_ofd *o = atomic_load_explicit(&pl_fds[fd], memory_order_relaxed);
    return !o || (o->live && atomic_load((_Atomic int *)&o->refs) > 0 &&
                  PL_REAL(fcntl)(fd, F_GETFD) >= 0);
}

void pl_fd_set(int fd, struct pl_ofd *o)
{
    atomic_fetch_add_explicit((_Atomic int *)&o->refs, 1, memory_order_relaxed);
    if (fd > pl.fd_hi)
        pl.fd_hi = fd;
    atomic_store_explicit(&pl_fds[fd], o, memory_order_release);
    assert(fd_entry_ok(fd));
}

struct pl_ofd *pl_fd_take(int fd)
{
    if (fd < 0 || fd >= PL_FD_MAX)
        return NULL;
    return atomic_exchange_explicit(&pl_fds[fd], NULL, memory_order_acq_rel);
}

static int open_root(void)
{
    return PL_REAL(open)(pl.mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int pl_reserve(bool cloexec)
{
    pthread_mutex_lock(&pl.lock);
    if (pl.root_fd < 0)
        pl.root_fd = open_root();
    int root = pl.root_fd;
    pthread_mutex_unlock(&pl.lock);
    if (root < 0)
        return -errno;
    int fd = PL_REAL(fcntl)(root, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
    if (fd < 0)
        return -errno;
    if (fd >= PL_FD_MAX) {
        PL_REAL(close)(fd);
        return -EMFILE;
    }
    return fd;
}

/* ---- paths ------------------------------------------------------------------ */

/* The directory dirfd names, as an absolute path, into buf. */
static bool dir_of(int dirfd, char *buf, size_t size)
{
    if (dirfd == AT_FDCWD) {
        size_t n = strlen(pl.cwd);
        if (n == 0 || n >= size)
            return false;
        memcpy(buf, pl.cwd, n + 1);
        return true;
    }
    struct pl_ofd *o = pl_fd_get(dirfd);
    if (o) {   /* a served descriptor of a directory */
        int n = snprintf(buf, size, "%s%s", pl.mnt, o->path);
        pl_ofd_put(o);
        return n > 0 && (size_t)n < size;
    }
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, buf, size - 1);
    if (n <= 0 || buf[0] != '/')
        return false;
    buf[n] = 0;
    return true;
}

/* True when a path component of p is "..". */
static bool has_dotdot(const char *p)
{
    for (const char *c = p; (c = strstr(c, "..")); c += 2)
        if ((c == p || c[-1] == '/') && (c[2] == 0 || c[2] == '/'))
            return true;
    return false;
}

/* Copies the caller's path into buf, page by page through the checked
 * copy: false when it is unreadable (the kernel then says EFAULT) or
 * longer than size. */
static bool path_copy(const char *p, char *buf, size_t size)
{
    for (size_t done = 0; done < size;) {
        size_t page = 4096 - (((uintptr_t)p + done) & 4095);
        size_t n = page < size - done ? page : size - done;
        if (pl_copy_in(buf + done, p + done, n))
            return false;
        if (memchr(buf + done, 0, n))
            return true;
        done += n;
    }
    return false;
}

bool pl_empty(const char *path)
{
    char c;
    return path && pl_copy_in(&c, path, 1) == 0 && c == 0;
}

bool pl_path(int dirfd, const char *upath, char *out, size_t size)
{
    char abs[PATH_MAX * 2], path[PATH_MAX];
    if (!pl.on || !upath || !path_copy(upath, path, sizeof(path)) || !path[0])
        return false;
    if (path[0] == '/') {
        if (strncmp(path, pl.mnt, pl.mnt_len) != 0)
            return false;
        snprintf(abs, sizeof(abs), "%s", path);
    } else {
        const char *p = path;
        while (p[0] == '.' && p[1] == '/')   /* "./x" is "x" */
            for (p += 2; *p == '/'; p++)
                ;
        memmove(path, p, strlen(p) + 1);
        char dir[PATH_MAX];   /* may be the mount's parent: "m/x" from above it */
        if (!dir_of(dirfd, dir, sizeof(dir)))
            return false;
        snprintf(abs, sizeof(abs), "%s/%s", dir, path);
        if (strncmp(abs, pl.mnt, pl.mnt_len) != 0)
            return false;
    }
    const char *rest = abs + pl.mnt_len;
    if (*rest != 0 && *rest != '/')
        return false;   /* /mnt-other, not /mnt */
    size_t n = strlen(rest);
    /* ".." may leave the mount, a trailing '/' asks for a directory: the
     * kernel's rules, so the kernel decides. */
    if (has_dotdot(rest) || (n > 1 && rest[n - 1] == '/') || n + 2 > size)
        return false;
    if (n == 0)
        rest = "/";
    memcpy(out, rest, strlen(rest) + 1);
    return true;
}

/* ---- start-up and fork ---------------------------------------------------- */

static void fork_prepare(void)
{
    if (!pl.on)
        return;
    pl_demote_all(false);   /* the child shares positions: the kernel's job */
    pthread_mutex_lock(&pl.lock);
}

static void fork_parent(void)
{
    if (pl.on)
        pthread_mutex_unlock(&pl.lock);
}

static void fork_child(void)
{
    if (!pl.on)
        return;
    pthread_mutex_init(&pl.lock, NULL);
    pthread_mutex_init(&ovf_lock, NULL);
    cisc_session_forget(pl.s);
    pl.s = NULL;
    ovf_q = NULL;
    atomic_store(&n_own, 0);
    pl.gen++;
    t_self.q = NULL;
    t_self.shared = false;
}

static void read_umask(void)
{
    mode_t m = umask(022);
    umask(m);
    pl.umask = m;
}

__attribute__((destructor)) static void pl_report(void)
{
    const char *e = getenv("CISC_EXEC_STATS");
    if (!pl.on || !e || strcmp(e, "1"))
        return;
    fprintf(stderr,
            "cisc exec [%d]: opens %llu, write-side calls alone %llu, merged %llu into %llu "
            "fused ops, fsyncs answered by a write + sync op %llu, demotions %llu\n",
            (int)getpid(), (unsigned long long)pl.st.opens,
            (unsigned long long)pl.st.solo_calls, (unsigned long long)pl.st.merged_calls,
            (unsigned long long)pl.st.merged_ops, (unsigned long long)pl.st.fsyncs_merged,
            (unsigned long long)pl.st.demotions);
}

__attribute__((constructor)) static void pl_init(void)
{
    const char *m = getenv("CISC_EXEC_MOUNT");
    const char *merge = getenv("CISC_EXEC_MERGE");
    struct stat st;
    if (!m || m[0] != '/' || strlen(m) >= sizeof(pl.mnt) || stat(m, &st) != 0)
        return;
    snprintf(pl.mnt, sizeof(pl.mnt), "%s", m);
    pl.mnt_len = strlen(pl.mnt);
    while (pl.mnt_len > 1 && pl.mnt[pl.mnt_len - 1] == '/')
        pl.mnt[--pl.mnt_len] = 0;
    pl.mnt_dev = st.st_dev;
    pl.blksize = st.st_blksize;
    pl.merge = !merge || strcmp(merge, "0") != 0;
    const char *inflight = getenv("CISC_EXEC_MERGE_INFLIGHT");
    pl.merge_inflight = inflight ? atoi(inflight) : 2;
    if (pl.merge_inflight < 1 || pl.merge_inflight > 64)
        pl.merge_inflight = 2;
    if (!getcwd(pl.cwd, sizeof(pl.cwd)))
        pl.cwd[0] = 0;
    read_umask();
    pthread_key_create(&t_key, thread_gone);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    pl.on = true;
}
