/*
 * integrations/preload/pl_dir.c - directory streams of served paths:
 * opendir lists the directory through libcisc (cisc_readdir) into a
 * snapshot, which readdir walks (POSIX leaves entries added or removed
 * after opendir/rewinddir unspecified). A stream of ours is told from
 * glibc's by its first word: glibc's starts with a descriptor, never -1.
 */
#include "integrations/preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PL_DIR_MAGIC 0xc15cd1a7ffffffffull   /* low 32 bits: fd -1 */

struct pl_dir {
    uint64_t magic;
    char *path;                    /* device path */
    struct dirent64 *ents;
    size_t n, cap, pos;
    int fd;                        /* dirfd(): a kernel descriptor, opened on demand */
    bool oom;                      /* the listing ran out of memory */
};

static DIR *(*real_opendir)(const char *);
static DIR *(*real_fdopendir)(int);
static struct dirent *(*real_readdir)(DIR *);
static struct dirent64 *(*real_readdir64)(DIR *);
static int (*real_readdir_r)(DIR *, struct dirent *, struct dirent **);
static int (*real_closedir)(DIR *);
static void (*real_rewinddir)(DIR *);
static long (*real_telldir)(DIR *);
static void (*real_seekdir)(DIR *, long);
static int (*real_dirfd)(DIR *);
static int (*real_open)(const char *, int, ...);
static int (*real_close)(int);

static struct pl_dir *ours(DIR *d)
{
    return d && ((struct pl_dir *)d)->magic == PL_DIR_MAGIC ? (struct pl_dir *)d : NULL;
}

static int add_ent(void *arg, const struct cisc_dirent *de)
{
    struct pl_dir *d = arg;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 32;
        struct dirent64 *e = realloc(d->ents, cap * sizeof(*e));
        if (!e) {
            d->oom = true;
            return 1;   /* stops the listing */
        }
        d->ents = e;
        d->cap = cap;
    }
    struct dirent64 *e = &d->ents[d->n++];
    memset(e, 0, offsetof(struct dirent64, d_name));
    e->d_ino = de->ino;
    e->d_off = (off64_t)d->n;
    e->d_reclen = sizeof(*e);
    e->d_type = (unsigned char)de->type;
    snprintf(e->d_name, sizeof(e->d_name), "%s", de->name);
    return 0;
}

static void dir_free(struct pl_dir *d)
{
    free(d->ents);
    free(d->path);
    free(d);
}

PL_EXPORT DIR *opendir(const char *path)
{
    char dp[PATH_MAX];
    if (!pl_path(AT_FDCWD, path, dp, sizeof(dp)))
        return PL_REAL(opendir)(path);
    struct pl_dir *d = calloc(1, sizeof(*d));
    if (!d || !(d->path = strdup(dp))) {
        free(d);
        errno = ENOMEM;
        return NULL;
    }
    d->magic = PL_DIR_MAGIC;
    d->fd = -1;
    int r = 0, err = 0;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    r = q ? cisc_readdir(q, dp, add_ent, d) : err;
    pl_leave(&old);
    if (r == 0 && d->oom)
        r = -ENOMEM;
    if (r) {
        dir_free(d);
        errno = r == -ENOTCONN ? EIO : -r;
        return NULL;
    }
    return (DIR *)d;
}

PL_EXPORT DIR *fdopendir(int fd)
{
    int r = pl_demote_fd(fd);   /* the stream reads the kernel's descriptor */
    if (r < 0) {
        errno = -r;
        return NULL;
    }
    return PL_REAL(fdopendir)(fd);
}

PL_EXPORT struct dirent64 *readdir64(DIR *dir)
{
    struct pl_dir *d = ours(dir);
    if (!d)
        return PL_REAL(readdir64)(dir);
    return d->pos < d->n ? &d->ents[d->pos++] : NULL;
}

PL_EXPORT struct dirent *readdir(DIR *dir)
{
    if (!ours(dir))
        return PL_REAL(readdir)(dir);
    return (struct dirent *)readdir64(dir);   /* the same layout on 64-bit */
}

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
PL_EXPORT int readdir_r(DIR *dir, struct dirent *ent, struct dirent **res)
{
    if (!ours(dir))
        return PL_REAL(readdir_r)(dir, ent, res);
    struct dirent64 *e = readdir64(dir);
    if (e)
        memcpy(ent, e, sizeof(*e));
    *res = e ? ent : NULL;
    return 0;
}

PL_EXPORT int readdir64_r(DIR *dir, struct dirent64 *ent, struct dirent64 **res)
{
    return readdir_r(dir, (struct dirent *)ent, (struct dirent **)res);
}

PL_EXPORT int closedir(DIR *dir)
{
    struct pl_dir *d = ours(dir);
    if (!d)
        return PL_REAL(closedir)(dir);
    if (d->fd >= 0)
        PL_REAL(close)(d->fd);
    d->magic = 0;
    dir_free(d);
    return 0;
}

PL_EXPORT void rewinddir(DIR *dir)
{
    struct pl_dir *d = ours(dir);
    if (!d) {
        PL_REAL(rewinddir)(dir);
        return;
    }
    /* A fresh listing, as rewinddir promises. */
    size_t keep = d->n;
    d->n = 0;
    int err = 0, r;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    r = q ? cisc_readdir(q, d->path, add_ent, d) : err;
    pl_leave(&old);
    if (r)
        d->n = keep < d->n ? keep : d->n;
    d->pos = 0;
}

PL_EXPORT long telldir(DIR *dir)
{
    struct pl_dir *d = ours(dir);
    return d ? (long)d->pos : PL_REAL(telldir)(dir);
}

PL_EXPORT void seekdir(DIR *dir, long pos)
{
    struct pl_dir *d = ours(dir);
    if (!d)
        PL_REAL(seekdir)(dir, pos);
    else if (pos >= 0 && (size_t)pos <= d->n)
        d->pos = (size_t)pos;
}

PL_EXPORT int dirfd(DIR *dir)
{
    struct pl_dir *d = ours(dir);
    if (!d)
        return PL_REAL(dirfd)(dir);
    if (d->fd < 0) {
        char k[2 * PATH_MAX];
        snprintf(k, sizeof(k), "%s%s", pl.mnt, strcmp(d->path, "/") ? d->path : "");
        d->fd = PL_REAL(open)(k, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    return d->fd;
}
