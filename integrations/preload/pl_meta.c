/*
 * integrations/preload/pl_meta.c - name and attribute calls: the stat
 * family (stat, fstat, fstatat, statx), rename, unlink, mkdir, rmdir,
 * access, chdir and umask, and the signal-handler bookkeeping of
 * invariant 4. Forms the device cannot answer exactly as the kernel
 * (lstat: the device follows symlinks; access beyond F_OK: the kernel
 * checks real ids) go to the kernel, which reaches the same device.
 */
#include "integrations/preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int (*real_stat)(const char *, struct stat *);
static int (*real_fstat)(int, struct stat *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_statx)(int, const char *, int, unsigned, struct statx *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_faccessat)(int, const char *, int, int);
static int (*real_chdir)(const char *);
static mode_t (*real_umask)(mode_t);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*real_signal)(int, sighandler_t);

/* Runs one libcisc call f(q, args) on the thread's queue (invariant 4). */
#define PL_CALL(res, call)                                                             \
    do {                                                                               \
        int err_ = 0;                                                                  \
        sigset_t old_;                                                                 \
        pl_enter(&old_);                                                               \
        struct cisc_queue *q = pl_queue(&err_);                                        \
        res = q ? (call) : err_;                                                       \
        pl_leave(&old_);                                                               \
    } while (0)

/* What the mount would report: its st_dev and st_blksize. */
static void fix_stat(struct stat *st)
{
    st->st_dev = pl.mnt_dev;
    st->st_blksize = pl.blksize;
}

/* Served stat by device path or handle into the caller's buffer. */
static int stat_served(const char *dpath, struct pl_ofd *o, struct stat *out)
{
    struct stat st;
    int r;
    if (o)
        PL_CALL(r, cisc_fstat(q, o->fh, &st));
    else
        PL_CALL(r, cisc_stat(q, dpath, &st));
    if (r == 0) {
        fix_stat(&st);
        r = pl_copy_out(out, &st, sizeof(st));
    }
    return r == -ENOTCONN ? -EIO : r;
}

PL_EXPORT int fstat(int fd, struct stat *st)
{
    struct pl_ofd *o = pl_fd_get(fd);
    if (!o)
        return PL_REAL(fstat)(fd, st);
    int r = stat_served(NULL, o, st);
    pl_ofd_put(o);
    return (int)pl_ret(r);
}

PL_EXPORT int fstat64(int fd, struct stat64 *st) __attribute__((alias("fstat")));

PL_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    char d[PATH_MAX];
    if ((flags & AT_EMPTY_PATH) && pl_served(dirfd) && pl_empty(path))
        return fstat(dirfd, st);
    if (!(flags & AT_SYMLINK_NOFOLLOW) && pl_path(dirfd, path, d, sizeof(d)))
        return (int)pl_ret(stat_served(d, NULL, st));
    return PL_REAL(fstatat)(dirfd, path, st, flags);
}

PL_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
    __attribute__((alias("fstatat")));

PL_EXPORT int stat(const char *path, struct stat *st)
{
    char d[PATH_MAX];
    if (pl_path(AT_FDCWD, path, d, sizeof(d)))
        return (int)pl_ret(stat_served(d, NULL, st));
    return PL_REAL(stat)(path, st);
}

PL_EXPORT int stat64(const char *path, struct stat64 *st) __attribute__((alias("stat")));

static void to_statx(const struct stat *s, struct statx *x)
{
    memset(x, 0, sizeof(*x));
    x->stx_mask = STATX_BASIC_STATS;
    x->stx_blksize = (uint32_t)s->st_blksize;
    x->stx_nlink = (uint32_t)s->st_nlink;
    x->stx_uid = s->st_uid;
    x->stx_gid = s->st_gid;
    x->stx_mode = (uint16_t)s->st_mode;
    x->stx_ino = s->st_ino;
    x->stx_size = (uint64_t)s->st_size;
    x->stx_blocks = (uint64_t)s->st_blocks;
    x->stx_atime = (struct statx_timestamp){ s->st_atim.tv_sec, (uint32_t)s->st_atim.tv_nsec, 0 };
    x->stx_mtime = (struct statx_timestamp){ s->st_mtim.tv_sec, (uint32_t)s->st_mtim.tv_nsec, 0 };
    x->stx_ctime = (struct statx_timestamp){ s->st_ctim.tv_sec, (uint32_t)s->st_ctim.tv_nsec, 0 };
    x->stx_dev_major = major(s->st_dev);
    x->stx_dev_minor = minor(s->st_dev);
}

PL_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *x)
{
    char d[PATH_MAX];
    struct pl_ofd *o = NULL;
    bool served = false;
    if ((flags & AT_EMPTY_PATH) && pl_served(dirfd) && pl_empty(path))
        served = (o = pl_fd_get(dirfd)) != NULL;
    else if (!(flags & AT_SYMLINK_NOFOLLOW))
        served = pl_path(dirfd, path, d, sizeof(d));
    if (!served)
        return PL_REAL(statx)(dirfd, path, flags, mask, x);
    struct stat st;
    struct statx sx;
    int r = stat_served(d, o, &st);
    if (o)
        pl_ofd_put(o);
    if (r == 0) {
        to_statx(&st, &sx);
        r = pl_copy_out(x, &sx, sizeof(sx));
    }
    return (int)pl_ret(r);
}

/* ---- names ------------------------------------------------------------------ */

/* After a rename, served descriptors opened by an old name keep their
 * file's new name (for demotion and as *at() directories). */
static void renamed(const char *from, const char *to)
{
    size_t n = strlen(from);
    pthread_mutex_lock(&pl.lock);
    for (int k = 0; k <= pl.fd_hi; k++) {
        struct pl_ofd *o = atomic_load_explicit(&pl_fds[k], memory_order_relaxed);
        if (!o || !o->path || strncmp(o->path, from, n) || (o->path[n] && o->path[n] != '/'))
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof(p), "%s%s", to, o->path + n) < (int)sizeof(p)) {
            char *c = strdup(p);   /* keep the old name if memory is short */
            if (c) {
                free(o->path);
                o->path = c;
            }
        }
    }
    pthread_mutex_unlock(&pl.lock);
}

PL_EXPORT int renameat2(int od, const char *oldp, int nd, const char *newp, unsigned flags)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (!(flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) && pl_path(od, oldp, a, sizeof(a)) &&
        pl_path(nd, newp, b, sizeof(b))) {
        int r;
        PL_CALL(r, cisc_rename(q, a, b, flags));
        if (r == 0 && !(flags & RENAME_EXCHANGE))
            renamed(a, b);
        return (int)pl_ret(r);
    }
    return PL_REAL(renameat2)(od, oldp, nd, newp, flags);
}

PL_EXPORT int renameat(int od, const char *oldp, int nd, const char *newp)
{
    return renameat2(od, oldp, nd, newp, 0);
}

PL_EXPORT int rename(const char *oldp, const char *newp)
{
    return renameat2(AT_FDCWD, oldp, AT_FDCWD, newp, 0);
}

PL_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    char d[PATH_MAX];
    if (!(flags & ~AT_REMOVEDIR) && pl_path(dirfd, path, d, sizeof(d))) {
        int r;
        if (flags & AT_REMOVEDIR)
            PL_CALL(r, cisc_rmdir(q, d));
        else
            PL_CALL(r, cisc_unlink(q, d));
        return (int)pl_ret(r);
    }
    return PL_REAL(unlinkat)(dirfd, path, flags);
}

PL_EXPORT int unlink(const char *path)
{
    return unlinkat(AT_FDCWD, path, 0);
}

PL_EXPORT int rmdir(const char *path)
{
    return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}

PL_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    char d[PATH_MAX];
    if (pl_path(dirfd, path, d, sizeof(d))) {
        int r;
        PL_CALL(r, cisc_mkdir(q, d, mode & 07777 & ~pl.umask));
        return (int)pl_ret(r);
    }
    return PL_REAL(mkdirat)(dirfd, path, mode);
}

PL_EXPORT int mkdir(const char *path, mode_t mode)
{
    return mkdirat(AT_FDCWD, path, mode);
}

PL_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    char d[PATH_MAX];
    if (mode == F_OK && flags == 0 && pl_path(dirfd, path, d, sizeof(d))) {
        struct stat st;
        int r;
        PL_CALL(r, cisc_stat(q, d, &st));
        return (int)pl_ret(r);
    }
    return PL_REAL(faccessat)(dirfd, path, mode, flags);
}

PL_EXPORT int access(const char *path, int mode)
{
    return faccessat(AT_FDCWD, path, mode, 0);
}

/* ---- process state the library keeps a copy of ------------------------------ */

PL_EXPORT int chdir(const char *path)
{
    int r = PL_REAL(chdir)(path);
    if (r == 0 && pl.on && !getcwd(pl.cwd, sizeof(pl.cwd)))
        pl.cwd[0] = 0;
    return r;
}

PL_EXPORT mode_t umask(mode_t m)
{
    pl.umask = m & 0777;
    return PL_REAL(umask)(m);
}

static void note_handler(void (*h)(int))
{
    if (h != SIG_DFL && h != SIG_IGN)
        pl.handlers = true;
}

PL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (act)
        note_handler(act->sa_handler);
    return PL_REAL(sigaction)(sig, act, old);
}

PL_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
    note_handler(h);
    return PL_REAL(signal)(sig, h);
}
