/*
 * integrations/preload/pl_kernel.c - handing served descriptors to the
 * kernel (demotion, preload.h), and the calls that need it: memory maps,
 * locks, ioctl, the f* calls libcisc has no verb for, descriptor passing,
 * exec, spawn and fork.
 */
#include "integrations/preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

static int (*real_open)(const char *, int, ...);
static int (*real_close)(int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_fstat)(int, struct stat *);

int pl_reopen(struct pl_ofd *o)
{
    char kpath[2 * PATH_MAX];
    snprintf(kpath, sizeof(kpath), "%s%s", pl.mnt, strcmp(o->path, "/") ? o->path : "");
    int flags = (o->flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC;
    int nfd = PL_REAL(open)(kpath, flags);
    if (nfd < 0)
        return -errno;
    struct stat ks, ds;
    int err = 0;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    int r = q ? cisc_fstat(q, o->fh, &ds) : err;
    pl_leave(&old);
    if (r == 0 && (PL_REAL(fstat)(nfd, &ks) != 0 || ks.st_ino != ds.st_ino))
        r = -ESTALE;   /* renamed or replaced by someone else since it was opened */
    pthread_mutex_lock(&o->pos_lock);
    if (r == 0 && PL_REAL(lseek)(nfd, (off_t)o->pos, SEEK_SET) < 0)
        r = -errno;
    pthread_mutex_unlock(&o->pos_lock);
    if (r) {
        PL_REAL(close)(nfd);
        return r;
    }
    return nfd;
}

int pl_demote_fd(int fd)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return 0;
    int nfd = pl_reopen(o), moved = 0;
    if (nfd < 0) {
        pl_ofd_put(o);
        return nfd;
    }
    pthread_mutex_lock(&pl.lock);
    for (int k = 0; k <= pl.fd_hi; k++) {
        if (atomic_load_explicit(&pl_fds[k], memory_order_relaxed) != o)
            continue;
        int cloexec = PL_REAL(fcntl)(k, F_GETFD) & FD_CLOEXEC;
        if (PL_REAL(dup3)(nfd, k, cloexec ? O_CLOEXEC : 0) == k) {
            pl_fd_take(k);
            moved++;
        }
    }
    pthread_mutex_unlock(&pl.lock);
    PL_REAL(close)(nfd);
    atomic_fetch_add_explicit(&pl.st.demotions, 1, memory_order_relaxed);
    while (moved-- > 0)
        pl_ofd_put(o);   /* the table's refs */
    pl_ofd_put(o);
    return 0;
}

void pl_demote_all(bool keep_cloexec)
{
    if (!pl.on)
        return;
    for (int k = 0; k <= pl.fd_hi; k++) {
        if (!pl_served(k))
            continue;
        if (keep_cloexec && (PL_REAL(fcntl)(k, F_GETFD) & FD_CLOEXEC))
            continue;   /* exec closes it: nothing to hand over */
        pl_demote_fd(k);
    }
}

/* Demotes fd for a call the kernel must serve; false (errno set) when
 * that failed. */
static bool to_kernel(int fd)
{
    int r = pl_demote_fd(fd);
    if (r < 0)
        errno = -r;
    return r == 0;
}

/* ---- calls that go to the kernel ----------------------------------------- */

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_flock)(int, int);
static int (*real_lockf)(int, int, off_t);
static int (*real_fchmod)(int, mode_t);
static int (*real_fchown)(int, uid_t, gid_t);
static int (*real_fchdir)(int);
static int (*real_fstatfs)(int, struct statfs *);
static int (*real_fstatvfs)(int, struct statvfs *);
static int (*real_futimens)(int, const struct timespec[2]);
static int (*real_futimes)(int, const struct timeval[2]);
static int (*real_posix_fadvise)(int, off_t, off_t, int);
static ssize_t (*real_readahead)(int, off64_t, size_t);
static int (*real_sync_file_range)(int, off64_t, off64_t, unsigned);
static int (*real_syncfs)(int);
static ssize_t (*real_fgetxattr)(int, const char *, void *, size_t);
static int (*real_fsetxattr)(int, const char *, const void *, size_t, int);
static ssize_t (*real_flistxattr)(int, char *, size_t);
static int (*real_fremovexattr)(int, const char *);
static ssize_t (*real_sendfile)(int, int, off_t *, size_t);
static ssize_t (*real_copy_file_range)(int, off64_t *, int, off64_t *, size_t, unsigned);
static ssize_t (*real_splice)(int, off64_t *, int, off64_t *, size_t, unsigned);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static int (*real_isatty)(int);

PL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!(flags & MAP_ANONYMOUS) && !to_kernel(fd))
        return MAP_FAILED;
    return PL_REAL(mmap)(addr, len, prot, flags, fd, off);
}

PL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

PL_EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return to_kernel(fd) ? PL_REAL(ioctl)(fd, req, arg) : -1;
}

PL_EXPORT int isatty(int fd)
{
    if (pl_served(fd)) {   /* a file of the device is never a terminal */
        errno = ENOTTY;
        return 0;
    }
    return PL_REAL(isatty)(fd);
}

/* One wrapper per call: demote the descriptor argument(s), then libc. */
#define PL_KERNEL_CALL(ret, name, params, args, fdexpr)                                \
    PL_EXPORT ret name params                                                          \
    {                                                                                  \
        if (!(fdexpr))                                                                 \
            return -1;                                                                 \
        return PL_REAL(name) args;                                                     \
    }

PL_KERNEL_CALL(int, flock, (int fd, int op), (fd, op), to_kernel(fd))
PL_KERNEL_CALL(int, lockf, (int fd, int cmd, off_t len), (fd, cmd, len), to_kernel(fd))
PL_KERNEL_CALL(int, fchmod, (int fd, mode_t m), (fd, m), to_kernel(fd))
PL_KERNEL_CALL(int, fchown, (int fd, uid_t u, gid_t g), (fd, u, g), to_kernel(fd))
PL_KERNEL_CALL(int, futimens, (int fd, const struct timespec t[2]), (fd, t), to_kernel(fd))
PL_KERNEL_CALL(int, futimes, (int fd, const struct timeval t[2]), (fd, t), to_kernel(fd))
PL_KERNEL_CALL(ssize_t, readahead, (int fd, off64_t o, size_t c), (fd, o, c), to_kernel(fd))
PL_KERNEL_CALL(int, syncfs, (int fd), (fd), to_kernel(fd))
PL_KERNEL_CALL(ssize_t, fgetxattr, (int fd, const char *n, void *v, size_t s), (fd, n, v, s),
               to_kernel(fd))
PL_KERNEL_CALL(int, fsetxattr, (int fd, const char *n, const void *v, size_t s, int f),
               (fd, n, v, s, f), to_kernel(fd))
PL_KERNEL_CALL(ssize_t, flistxattr, (int fd, char *l, size_t s), (fd, l, s), to_kernel(fd))
PL_KERNEL_CALL(int, fremovexattr, (int fd, const char *n), (fd, n), to_kernel(fd))
PL_KERNEL_CALL(ssize_t, sendfile, (int o, int i, off_t *off, size_t c), (o, i, off, c),
               to_kernel(o) && to_kernel(i))
PL_KERNEL_CALL(ssize_t, copy_file_range,
               (int i, off64_t *io, int o, off64_t *oo, size_t l, unsigned f),
               (i, io, o, oo, l, f), to_kernel(i) && to_kernel(o))
PL_KERNEL_CALL(ssize_t, splice, (int i, off64_t *io, int o, off64_t *oo, size_t l, unsigned f),
               (i, io, o, oo, l, f), to_kernel(i) && to_kernel(o))

/* fstatfs, fstatvfs: every served file lives on the mount, so the mount's
 * answer is the file's, without a demotion (RocksDB asks it of every file
 * it opens for writing). */
PL_EXPORT int fstatfs(int fd, struct statfs *b)
{
    return pl_served(fd) ? statfs(pl.mnt, b) : PL_REAL(fstatfs)(fd, b);
}

PL_EXPORT int fstatvfs(int fd, struct statvfs *b)
{
    return pl_served(fd) ? statvfs(pl.mnt, b) : PL_REAL(fstatvfs)(fd, b);
}

/* posix_fadvise is advice about the kernel's page cache, which a served
 * descriptor does not use: checked as the kernel checks it, then taken
 * (0), without a demotion. */
PL_EXPORT int posix_fadvise(int fd, off_t o, off_t l, int a)
{
    if (!pl_served(fd))
        return PL_REAL(posix_fadvise)(fd, o, l, a);
    return a < POSIX_FADV_NORMAL || a > POSIX_FADV_NOREUSE || l < 0 ? EINVAL : 0;
}

/* sync_file_range starts (or waits for) the kernel's writeback of dirty
 * page-cache pages; a served descriptor's writes reach the device with
 * no page cache between, so there is nothing to start: checked as the
 * kernel checks it, then 0, without a demotion (RocksDB probes it on every
 * file it opens for writing). */
PL_EXPORT int sync_file_range(int fd, off64_t o, off64_t n, unsigned f)
{
    if (!pl_served(fd))
        return PL_REAL(sync_file_range)(fd, o, n, f);
    unsigned ok = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
    return (int)pl_ret(o < 0 || n < 0 || (f & ~ok) ? -EINVAL : 0);
}

PL_EXPORT int fstatfs64(int fd, struct statfs64 *b)
{
    return fstatfs(fd, (struct statfs *)b);   /* one layout on 64-bit */
}

PL_EXPORT int fstatvfs64(int fd, struct statvfs64 *b)
{
    return fstatvfs(fd, (struct statvfs *)b);
}
PL_EXPORT int lockf64(int fd, int cmd, off_t len) __attribute__((alias("lockf")));
PL_EXPORT int posix_fadvise64(int fd, off_t o, off_t l, int a)
    __attribute__((alias("posix_fadvise")));
PL_EXPORT ssize_t sendfile64(int o, int i, off_t *off, size_t c) __attribute__((alias("sendfile")));

PL_EXPORT int fchdir(int fd)
{
    if (!to_kernel(fd) || PL_REAL(fchdir)(fd) != 0)
        return -1;
    if (pl.on && !getcwd(pl.cwd, sizeof(pl.cwd)))
        pl.cwd[0] = 0;
    return 0;
}

/* Descriptors passed over a socket go as kernel descriptors. */
PL_EXPORT ssize_t sendmsg(int sock, const struct msghdr *msg, int flags)
{
    for (struct cmsghdr *c = msg ? CMSG_FIRSTHDR(msg) : NULL; c;
         c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
            if (!to_kernel(fd))
                return -1;
        }
    }
    return PL_REAL(sendmsg)(sock, msg, flags);
}

/* ---- exec, spawn, fork ------------------------------------------------------ */

static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static int (*real_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                               const posix_spawnattr_t *, char *const[], char *const[]);
static int (*real_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                const posix_spawnattr_t *, char *const[], char *const[]);
static int (*real_system)(const char *);
static FILE *(*real_popen)(const char *, const char *);

/* Before a new program replaces this one: descriptors it inherits must
 * work without this library's memory. */
static void before_exec(void)
{
    pl_demote_all(true);
}

PL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    before_exec();
    return PL_REAL(execve)(path, argv, envp);
}

PL_EXPORT int execv(const char *path, char *const argv[])
{
    before_exec();
    return PL_REAL(execv)(path, argv);
}

PL_EXPORT int execvp(const char *file, char *const argv[])
{
    before_exec();
    return PL_REAL(execvp)(file, argv);
}

PL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    before_exec();
    return PL_REAL(execvpe)(file, argv, envp);
}

PL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    if (!to_kernel(fd))
        return -1;
    before_exec();
    return PL_REAL(fexecve)(fd, argv, envp);
}

/* The argument list of an execl* call as an array (NULL-terminated);
 * with want_env, envp_out gets the word after the NULL (execle's envp). */
#define PL_ARGV(first, ap, argv, want_env, envp_out)                                           \
    do {                                                                               \
        size_t n_ = 1;                                                                 \
        va_list c_;                                                                    \
        va_copy(c_, ap);                                                               \
        while (va_arg(c_, char *))                                                     \
            n_++;                                                                      \
        va_end(c_);                                                                    \
        argv = alloca((n_ + 1) * sizeof(char *));                                      \
        argv[0] = (char *)(first);                                                     \
        for (size_t i_ = 1; i_ <= n_; i_++)                                            \
            argv[i_] = va_arg(ap, char *);                                             \
        if (want_env)                                                                  \
            envp_out = va_arg(ap, char **);                                            \
    } while (0)

PL_EXPORT int execl(const char *path, const char *arg, ...)
{
    char **argv;
    va_list ap;
    va_start(ap, arg);
    char **unused = NULL;
    PL_ARGV(arg, ap, argv, 0, unused);
    va_end(ap);
    (void)unused;
    return execv(path, argv);
}

PL_EXPORT int execlp(const char *file, const char *arg, ...)
{
    char **argv;
    va_list ap;
    va_start(ap, arg);
    char **unused = NULL;
    PL_ARGV(arg, ap, argv, 0, unused);
    va_end(ap);
    (void)unused;
    return execvp(file, argv);
}

PL_EXPORT int execle(const char *path, const char *arg, ...)
{
    char **argv, **envp;
    va_list ap;
    va_start(ap, arg);
    PL_ARGV(arg, ap, argv, 1, envp);
    va_end(ap);
    return execve(path, argv, envp);
}

PL_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    before_exec();
    return PL_REAL(posix_spawn)(pid, path, fa, at, argv, envp);
}

PL_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    before_exec();
    return PL_REAL(posix_spawnp)(pid, file, fa, at, argv, envp);
}

PL_EXPORT int system(const char *cmd)
{
    before_exec();
    return PL_REAL(system)(cmd);
}

PL_EXPORT FILE *popen(const char *cmd, const char *type)
{
    before_exec();
    return PL_REAL(popen)(cmd, type);
}

/* vfork's child would share this library's memory with the parent: a
 * plain fork (a permitted vfork) keeps them apart. */
PL_EXPORT pid_t vfork(void)
{
    return fork();
}
