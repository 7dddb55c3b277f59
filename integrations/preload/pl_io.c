/*
 * integrations/preload/pl_io.c - descriptor calls: open and its variants,
 * close, dup, read and write and their vector and positional forms, lseek,
 * fsync, ftruncate, fallocate and fcntl, served through libcisc when the
 * descriptor is served (preload.h), passed to libc otherwise.
 */
#include "integrations/preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_preadv2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_posix_fallocate)(int, off_t, off_t);
static int (*real_close_range)(unsigned, unsigned, int);
static void (*real_closefrom)(int);

/* Flags a libcisc handle takes; the rest is the library's (O_APPEND,
 * O_SYNC: preload.h) or has no meaning on the device. */
#define PL_HANDLE_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW)
/* Flags the kernel must handle: not served. */
#define PL_KERNEL_FLAGS (O_PATH | O_DIRECTORY | O_TMPFILE | O_ASYNC)



/* ---- open ------------------------------------------------------------------ */

int pl_open_served(const char *dpath, int flags, mode_t mode)
{
    if (flags & PL_KERNEL_FLAGS)
        return PL_KERNEL;
    int err = 0;
    uint64_t fh;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    if (q) {
        mode_t m = (flags & O_CREAT) ? (mode & 07777 & ~pl.umask) : 0;
        err = cisc_open(q, dpath, flags & PL_HANDLE_FLAGS, m, &fh);
    }
    pl_leave(&old);
    if (!q)
        return PL_KERNEL;   /* no queue to be had: the mount still works */
    if (err)
        return err;
    int fd = pl_reserve(flags & O_CLOEXEC);
    /* What F_GETFL shows: the kernel drops the open-time flags too. */
    int kept = flags & ~(O_CLOEXEC | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC);
    struct pl_ofd *o = fd >= 0 ? pl_ofd_new(fh, kept, dpath) : NULL;
    if (!o) {
        if (fd >= 0)
            PL_REAL(close)(fd);
        pl_enter(&old);
        cisc_close(pl_queue(&err), fh);
        pl_leave(&old);
        return PL_KERNEL;
    }
    pthread_mutex_lock(&pl.lock);
    struct pl_ofd *stale = pl_fd_take(fd);   /* closed behind our back, if any */
    pl_fd_set(fd, o);
    pthread_mutex_unlock(&pl.lock);
    if (stale)
        pl_ofd_put(stale);
    pl_ofd_put(o);   /* the table's ref remains */
    atomic_fetch_add_explicit(&pl.st.opens, 1, memory_order_relaxed);
    return fd;
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode)
{
    char dpath[PATH_MAX];
    if (pl_path(dirfd, path, dpath, sizeof(dpath))) {
        int r = pl_open_served(dpath, flags, mode);
        if (r != PL_KERNEL)
            return (int)pl_ret(r);
    }
    int fd = PL_REAL(openat)(dirfd, path, flags, mode);
    if (fd >= 0 && pl_served(fd)) {   /* closed behind our back (a raw close) */
        int e = errno;
        pthread_mutex_lock(&pl.lock);
        struct pl_ofd *stale = pl_fd_take(fd);
        pthread_mutex_unlock(&pl.lock);
        if (stale)
            pl_ofd_put(stale);
        errno = e;
    }
    return fd;
}

static mode_t va_mode(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

PL_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_mode(flags, ap);
    va_end(ap);
    return open_common(AT_FDCWD, path, flags, mode);
}

PL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_mode(flags, ap);
    va_end(ap);
    return open_common(dirfd, path, flags, mode);
}

PL_EXPORT int open64(const char *path, int flags, ...) __attribute__((alias("open")));
PL_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
    __attribute__((alias("openat")));

PL_EXPORT int __open_2(const char *path, int flags)
{
    return open_common(AT_FDCWD, path, flags, 0);
}

PL_EXPORT int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

PL_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return open_common(dirfd, path, flags, 0);
}

PL_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
    __attribute__((alias("__openat_2")));

PL_EXPORT int creat(const char *path, mode_t mode)
{
    return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

PL_EXPORT int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

/* ---- close and dup ------------------------------------------------------- */

/* fd is about to stop naming what it named (close, dup2 over it). */
static void forget_fd(int fd)
{
    if (fd == pl.root_fd)
        pl.root_fd = -1;
}

int pl_close(int fd)
{
    /* A kernel descriptor cannot become served while it is open: no lock. */
    if (!pl_served(fd) && fd != pl.root_fd)
        return PL_REAL(close)(fd);
    pthread_mutex_lock(&pl.lock);
    forget_fd(fd);
    struct pl_ofd *o = pl_fd_take(fd);
    int r = PL_REAL(close)(fd);
    pthread_mutex_unlock(&pl.lock);
    if (!o)
        return r;
    int e = errno;
    int c = pl_ofd_put(o);
    errno = e;
    return r < 0 ? r : (int)pl_ret(c);
}

PL_EXPORT int close(int fd)
{
    return pl_close(fd);
}

/* Maps newfd (just made a duplicate of oldfd by the kernel) to oldfd's
 * ofd, dropping what newfd named before. Under pl.lock. */
static void dup_map(struct pl_ofd *o, int newfd, struct pl_ofd **dropped)
{
    *dropped = pl_fd_take(newfd);
    if (o && newfd < PL_FD_MAX)
        pl_fd_set(newfd, o);
}

static int dup_common(int oldfd, int newfd, int how, int flags)
{
    struct pl_ofd *o = pl_fd_get(oldfd), *dropped = NULL;
    pthread_mutex_lock(&pl.lock);
    int r;
    if (how == 0)
        r = PL_REAL(dup)(oldfd);
    else if (how == 2)
        r = PL_REAL(dup2)(oldfd, newfd);
    else if (how == 3)
        r = PL_REAL(dup3)(oldfd, newfd, flags);
    else
        r = PL_REAL(fcntl)(oldfd, how, newfd);
    if (r >= 0 && r != oldfd) {
        if (how == 2 || how == 3)
            forget_fd(r);
        if (o && r >= PL_FD_MAX) {   /* beyond the table: cannot be served */
            PL_REAL(close)(r);
            r = -1;
            errno = EMFILE;
        } else {
            dup_map(o, r, &dropped);
        }
    }
    int e = errno;
    pthread_mutex_unlock(&pl.lock);
    if (dropped)
        pl_ofd_put(dropped);
    if (o)
        pl_ofd_put(o);
    errno = e;
    return r;
}

PL_EXPORT int dup(int fd)
{
    return dup_common(fd, -1, 0, 0);
}

PL_EXPORT int dup2(int oldfd, int newfd)
{
    return dup_common(oldfd, newfd, 2, 0);
}

PL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    return dup_common(oldfd, newfd, 3, flags);
}

/* Forgets the table entries of [first, last] (about to be closed). */
static void forget_range(unsigned first, unsigned last)
{
    unsigned end = last < (unsigned)pl.fd_hi ? last : (unsigned)pl.fd_hi;
    for (unsigned fd = first; pl.on && fd <= end; fd++) {
        pthread_mutex_lock(&pl.lock);
        forget_fd((int)fd);
        struct pl_ofd *o = pl_fd_take((int)fd);
        pthread_mutex_unlock(&pl.lock);
        if (o)
            pl_ofd_put(o);
    }
    if (pl.on && pl.root_fd >= (int)first && (unsigned)pl.root_fd <= last)
        pl.root_fd = -1;
}

PL_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    if (!(flags & CLOSE_RANGE_CLOEXEC))
        forget_range(first, last);
    return PL_REAL(close_range)(first, last, flags);
}

PL_EXPORT void closefrom(int lowfd)
{
    forget_range(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u);
    PL_REAL(closefrom)(lowfd);
}

/* ---- fcntl ------------------------------------------------------------------ */

/* The flags F_SETFL may change (as the kernel: the rest stay). */
#define PL_SETFL_FLAGS (O_APPEND | O_NONBLOCK | O_NOATIME | O_DIRECT)

/* Write life-time hints are advice to the kernel's block layer, which a
 * served descriptor's writes do not pass through: a hint is checked as
 * the kernel checks it and taken (0); reading one gives "not set".
 * Returns 0 or -errno. */
static int rw_hint(int cmd, uint64_t *arg)
{
    uint64_t h = RWH_WRITE_LIFE_NOT_SET;
    if (cmd == F_GET_RW_HINT)
        return pl_copy_out(arg, &h, sizeof(h));
    int r = pl_copy_in(&h, arg, sizeof(h));
    return r ? r : h > RWH_WRITE_LIFE_EXTREME ? -EINVAL : 0;
}

static int fcntl_served(int fd, struct pl_ofd *o, int cmd, long arg, bool *done)
{
    *done = true;
    switch (cmd) {
    case F_GETFL:   /* the kernel sets O_LARGEFILE (0100000 on x86-64, 0 in glibc) */
        return o->flags | 0100000;
    case F_SETFL:
        o->flags = (o->flags & ~PL_SETFL_FLAGS) | ((int)arg & PL_SETFL_FLAGS);
        return 0;
    case F_GETFD:
    case F_SETFD:
        return PL_REAL(fcntl)(fd, cmd, arg);   /* the reserve holds FD_CLOEXEC */
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
        return dup_common(fd, (int)arg, cmd, 0);
    case F_GET_RW_HINT:
    case F_SET_RW_HINT:
        return (int)pl_ret(rw_hint(cmd, (uint64_t *)arg));
    default:
        *done = false;   /* locks, leases, seals, notify ...: the kernel's */
        return 0;
    }
}

PL_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);   /* every fcntl argument fits a long */
    va_end(ap);
    struct pl_ofd *o = pl_fd_get(fd);
    if (o) {
        bool done;
        int r = fcntl_served(fd, o, cmd, arg, &done);
        pl_ofd_put(o);
        if (done)
            return r;
        if ((r = pl_demote_fd(fd)) < 0)
            return (int)pl_ret(r);
    }
    return PL_REAL(fcntl)(fd, cmd, arg);
}

PL_EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ---- reads ------------------------------------------------------------------ */

/* Positional read of a served ofd. */
static ssize_t ofd_pread(struct pl_ofd *o, void *buf, size_t len, uint64_t off)
{
    if ((o->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    int err = 0;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    ssize_t r = q ? pl_data_pread(q, o->fh, buf, len, off) : err;
    pl_leave(&old);
    return r == -ENOTCONN ? -EIO : r;
}

/* read(2) at the ofd's position (kept locked across the call, as the
 * kernel keeps f_pos_lock). */
static ssize_t ofd_read(struct pl_ofd *o, void *buf, size_t len)
{
    pthread_mutex_lock(&o->pos_lock);
    ssize_t r = ofd_pread(o, buf, len, o->pos);
    if (r > 0)
        o->pos += (uint64_t)r;
    pthread_mutex_unlock(&o->pos_lock);
    return r;
}

ssize_t pl_read(int fd, void *buf, size_t len)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(read)(fd, buf, len);
    ssize_t r = ofd_read(o, buf, len);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
    return pl_read(fd, buf, len);
}

PL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
    if (len > buflen)
        abort();   /* what glibc's __chk_fail does, minus the message */
    return pl_read(fd, buf, len);
}

PL_EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(pread)(fd, buf, len, off);
    ssize_t r = off < 0 ? -EINVAL : ofd_pread(o, buf, len, (uint64_t)off);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t pread64(int fd, void *buf, size_t len, off_t off)
    __attribute__((alias("pread")));

PL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
    if (len > buflen)
        abort();
    return pread(fd, buf, len, off);
}

PL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
    __attribute__((alias("__pread_chk")));

/* Total length of an iovec array, or -EINVAL as the kernel checks it. */
static ssize_t iov_len(const struct iovec *iov, int n)
{
    if (n < 0 || n > IOV_MAX)
        return -EINVAL;
    size_t t = 0;
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len > (size_t)SSIZE_MAX - t)
            return -EINVAL;
        t += iov[i].iov_len;
    }
    return (ssize_t)t;
}

/* readv/preadv: one read into a bounce buffer, then scattered. off < 0:
 * at the position. */
static ssize_t ofd_readv(struct pl_ofd *o, const struct iovec *iov, int n, off_t off)
{
    ssize_t t = iov_len(iov, n);
    if (t <= 0)
        return t;
    char *b = malloc((size_t)t);
    if (!b)
        return -ENOMEM;
    ssize_t r = off < 0 ? ofd_read(o, b, (size_t)t) : ofd_pread(o, b, (size_t)t, (uint64_t)off);
    for (ssize_t done = 0, i = 0; r > 0 && done < r; i++) {
        size_t k = iov[i].iov_len < (size_t)(r - done) ? iov[i].iov_len : (size_t)(r - done);
        memcpy(iov[i].iov_base, b + done, k);
        done += (ssize_t)k;
    }
    free(b);
    return r;
}

PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(readv)(fd, iov, n);
    ssize_t r = ofd_readv(o, iov, n, -1);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(preadv)(fd, iov, n, off);
    ssize_t r = off < 0 ? -EINVAL : ofd_readv(o, iov, n, off);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off_t off)
    __attribute__((alias("preadv")));

/* ---- writes ------------------------------------------------------------------ */

/* Positional write (pwrite: an O_APPEND ofd appends, as on Linux). */
static ssize_t ofd_pwrite(struct pl_ofd *o, const void *buf, size_t len, uint64_t off,
                          uint64_t *at)
{
    if ((o->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    int64_t r = pl_merge_write(o, buf, len, off, at);
    return r == -ENOTCONN ? -EIO : (ssize_t)r;
}

/* write(2): takes its range of the position first (as the kernel, which
 * holds f_pos_lock), so writes from several threads may merge. */
static ssize_t ofd_write(struct pl_ofd *o, const void *buf, size_t len)
{
    uint64_t off = 0, at;
    bool append = (o->flags & O_APPEND) != 0;
    if (!append) {
        pthread_mutex_lock(&o->pos_lock);
        off = o->pos;
        o->pos += len;
        pthread_mutex_unlock(&o->pos_lock);
    }
    ssize_t r = ofd_pwrite(o, buf, len, off, &at);
    pthread_mutex_lock(&o->pos_lock);
    if (append && r >= 0)
        o->pos = at + (uint64_t)r;
    else if (!append && (size_t)r != len && o->pos == off + len)
        o->pos = off + (uint64_t)(r > 0 ? r : 0);   /* give back what was not written */
    pthread_mutex_unlock(&o->pos_lock);
    return r;
}

ssize_t pl_write(int fd, const void *buf, size_t len)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(write)(fd, buf, len);
    ssize_t r = ofd_write(o, buf, len);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
    return pl_write(fd, buf, len);
}

PL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(pwrite)(fd, buf, len, off);
    ssize_t r = off < 0 ? -EINVAL : ofd_pwrite(o, buf, len, (uint64_t)off, NULL);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
    __attribute__((alias("pwrite")));

/* writev/pwritev: gathered into one buffer, so the write stays one call
 * (atomic for O_APPEND). off < 0: at the position. */
static ssize_t ofd_writev(struct pl_ofd *o, const struct iovec *iov, int n, off_t off)
{
    ssize_t t = iov_len(iov, n);
    if (t <= 0)
        return t;
    char *b = malloc((size_t)t);
    if (!b)
        return -ENOMEM;
    for (ssize_t done = 0, i = 0; done < t; i++) {
        memcpy(b + done, iov[i].iov_base, iov[i].iov_len);
        done += (ssize_t)iov[i].iov_len;
    }
    ssize_t r = off < 0 ? ofd_write(o, b, (size_t)t)
                        : ofd_pwrite(o, b, (size_t)t, (uint64_t)off, NULL);
    free(b);
    return r;
}

PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(writev)(fd, iov, n);
    ssize_t r = ofd_writev(o, iov, n, -1);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(pwritev)(fd, iov, n, off);
    ssize_t r = off < 0 ? -EINVAL : ofd_writev(o, iov, n, off);
    pl_ofd_put(o);
    return pl_ret(r);
}

PL_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off)
    __attribute__((alias("pwritev")));

/* preadv2/pwritev2: flags 0 and offset -1 are the plain calls; other
 * flags (RWF_*) are the kernel's. */
PL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
    if (pl_served(fd) && flags == 0)
        return off == -1 ? readv(fd, iov, n) : preadv(fd, iov, n, off);
    if (pl_demote_fd(fd) < 0)
        return -1;
    return PL_REAL(preadv2)(fd, iov, n, off, flags);
}

PL_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
    if (pl_served(fd) && flags == 0)
        return off == -1 ? writev(fd, iov, n) : pwritev(fd, iov, n, off);
    if (pl_demote_fd(fd) < 0)
        return -1;
    return PL_REAL(pwritev2)(fd, iov, n, off, flags);
}

PL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off_t off, int flags)
    __attribute__((alias("preadv2")));
PL_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off_t off, int flags)
    __attribute__((alias("pwritev2")));

/* ---- position, sync, size ------------------------------------------------ */

static int64_t ofd_size(struct pl_ofd *o)
{
    struct stat st;
    int err = 0;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    int r = q ? cisc_fstat(q, o->fh, &st) : err;
    pl_leave(&old);
    return r ? r : (int64_t)st.st_size;
}

static off_t ofd_lseek(struct pl_ofd *o, off_t off, int whence)
{
    int64_t base = 0, size = 0;
    if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
        if ((size = ofd_size(o)) < 0)
            return (off_t)size;
    }
    pthread_mutex_lock(&o->pos_lock);
    switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = (int64_t)o->pos; break;
    case SEEK_END: base = size; break;
    case SEEK_DATA:
    case SEEK_HOLE:   /* no holes are reported: data up to the end */
        base = off >= size ? -ENXIO : whence == SEEK_DATA ? off : size;
        off = 0;
        break;
    default: base = -EINVAL;
    }
    int64_t r = base < 0 ? base : base + off < 0 ? -EINVAL : base + off;
    if (r >= 0)
        o->pos = (uint64_t)r;
    pthread_mutex_unlock(&o->pos_lock);
    return (off_t)r;
}

off_t pl_lseek(int fd, off_t off, int whence)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(lseek)(fd, off, whence);
    off_t r = ofd_lseek(o, off, whence);
    pl_ofd_put(o);
    return (off_t)pl_ret(r);
}

PL_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    return pl_lseek(fd, off, whence);
}

PL_EXPORT off_t lseek64(int fd, off_t off, int whence) __attribute__((alias("lseek")));

static int sync_common(int fd, int datasync)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return datasync ? PL_REAL(fdatasync)(fd) : PL_REAL(fsync)(fd);
    int64_t r = pl_merge_fsync(o, datasync != 0);
    pl_ofd_put(o);
    return (int)pl_ret(r == -ENOTCONN ? -EIO : r);
}

PL_EXPORT int fsync(int fd)
{
    return sync_common(fd, 0);
}

PL_EXPORT int fdatasync(int fd)
{
    return sync_common(fd, 1);
}

PL_EXPORT int ftruncate(int fd, off_t len)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(ftruncate)(fd, len);
    int r = -EINVAL, err = 0;
    if (len >= 0 && (o->flags & O_ACCMODE) != O_RDONLY) {
        sigset_t old;
        pl_enter(&old);
        struct cisc_queue *q = pl_queue(&err);
        r = q ? cisc_truncate(q, o->fh, (uint64_t)len) : err;
        pl_leave(&old);
    }
    pl_ofd_put(o);
    return (int)pl_ret(r);
}

PL_EXPORT int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

/* fallocate has no libcisc call: the kernel does it on a second
 * descriptor of the same file, opened through the mount (the same engine),
 * and the served descriptor stays served (a program that preallocates, as
 * RocksDB does for every file, would otherwise leave the direct path at
 * its first append). Returns 0 or -errno. */
static int kernel_fallocate(struct pl_ofd *o, int mode, off_t off, off_t len, bool posix)
{
    int nfd = pl_reopen(o);
    if (nfd < 0)
        return nfd;
    int r = posix ? -PL_REAL(posix_fallocate)(nfd, off, len)
                  : (PL_REAL(fallocate)(nfd, mode, off, len) ? -errno : 0);
    PL_REAL(close)(nfd);
    return r;
}

PL_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(fallocate)(fd, mode, off, len);
    int r = kernel_fallocate(o, mode, off, len, false);
    pl_ofd_put(o);
    return (int)pl_ret(r);
}

PL_EXPORT int fallocate64(int fd, int mode, off_t off, off_t len)
    __attribute__((alias("fallocate")));

PL_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(posix_fallocate)(fd, off, len);
    int r = kernel_fallocate(o, 0, off, len, true);
    pl_ofd_put(o);
    return -r;
}

PL_EXPORT int posix_fallocate64(int fd, off_t off, off_t len)
    __attribute__((alias("posix_fallocate")));
