/*
 * integrations/preload/pl_stdio.c - stdio streams on served files. glibc's
 * fopen opens with its internal open, past this library, and its FILE
 * reads and writes with internal calls on the descriptor; so a stream on
 * a served file is a fopencookie stream whose read, write, seek and close
 * are this library's descriptor calls. Its descriptor is recorded in the
 * FILE (the public _fileno field) so that fileno() works: programs fsync
 * or fstat their streams.
 */
#include "integrations/preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fdopen)(int, const char *);

static ssize_t ck_read(void *c, char *buf, size_t len)
{
    return pl_read((int)(intptr_t)c, buf, len);
}

static ssize_t ck_write(void *c, const char *buf, size_t len)
{
    ssize_t n = pl_write((int)(intptr_t)c, buf, len);
    return n < 0 ? 0 : n;   /* fopencookie: 0 is the error (errno kept) */
}

static int ck_seek(void *c, off64_t *pos, int whence)
{
    off_t r = pl_lseek((int)(intptr_t)c, (off_t)*pos, whence);
    if (r < 0)
        return -1;
    *pos = r;
    return 0;
}

static int ck_close(void *c)
{
    return pl_close((int)(intptr_t)c);
}

/* open(2) flags for an fopen mode, or -1 (EINVAL). */
static int mode_flags(const char *mode)
{
    int f;
    switch (mode[0]) {
    case 'r': f = O_RDONLY; break;
    case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
    case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
    default: return -1;
    }
    for (const char *m = mode + 1; *m && *m != ','; m++) {
        if (*m == '+')
            f = (f & ~O_ACCMODE) | O_RDWR;
        else if (*m == 'x')
            f |= O_EXCL;
        else if (*m == 'e')
            f |= O_CLOEXEC;
    }
    return f;
}

/* A stream on served descriptor fd; on failure fd stays open. */
static FILE *cookie_stream(int fd, const char *mode)
{
    static const cookie_io_functions_t io = { ck_read, ck_write, ck_seek, ck_close };
    char m[8];
    size_t k = 0;
    for (const char *p = mode; *p && *p != ',' && k < sizeof(m) - 1; p++)
        if (*p != 'e' && *p != 'x' && *p != 'm')   /* fopencookie's modes are plain */
            m[k++] = *p;
    m[k] = 0;
    FILE *f = fopencookie((void *)(intptr_t)fd, m, io);
    if (f)
        f->_fileno = fd;
    return f;
}

static FILE *fopen_common(const char *path, const char *mode)
{
    char dp[PATH_MAX];
    int flags = mode ? mode_flags(mode) : -1;
    if (flags < 0 || !pl_path(AT_FDCWD, path, dp, sizeof(dp)))
        return PL_REAL(fopen)(path, mode);
    int fd = pl_open_served(dp, flags, 0666);
    if (fd == PL_KERNEL)
        return PL_REAL(fopen)(path, mode);
    if (fd < 0) {
        errno = -fd;
        return NULL;
    }
    FILE *f = cookie_stream(fd, mode);
    if (!f) {
        int e = errno;
        pl_close(fd);
        errno = e;
    }
    return f;
}

PL_EXPORT FILE *fopen(const char *path, const char *mode)
{
    return fopen_common(path, mode);
}

PL_EXPORT FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

PL_EXPORT FILE *fdopen(int fd, const char *mode)
{
    if (!pl_served(fd) || !mode || mode_flags(mode) < 0)
        return PL_REAL(fdopen)(fd, mode);
    return cookie_stream(fd, mode);
}
