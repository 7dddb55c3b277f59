/*
 * libcisc/risc.c - the RISC operations of <cisc/cisc.h>: each is one
 * command (one SQE, one CQE) per call, with paths and data staged in the
 * queue's arena (zero-copy when the caller's buffer is already there).
 */
#include "libcisc/client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define LC_CHUNK (1u << 20)   /* bounce-buffer transfers, at most */

/* A staged range of the arena: freed by unstage() when `owned`. */
struct stage {
    uint64_t off, len;
    bool owned;
};

static void unstage(struct cisc_queue *q, struct stage *st)
{
    if (st->owned)
        lc_arena_free(q, st->off);
    st->owned = false;
}

/* Copies a path into the arena (no NUL: the SQE carries its length). */
static int stage_path(struct cisc_queue *q, const char *path, struct stage *st)
{
    if (!path)
        return -EFAULT;
    size_t n = strlen(path);
    if (n >= WIRE_PATH_MAX)
        return -ENAMETOOLONG;
    if (n == 0)
        return -ENOENT;
    int r = lc_arena_alloc(q, n, &st->off);
    if (r)
        return r;
    memcpy(lc_arena_ptr(q, st->off), path, n);
    st->len = n;
    st->owned = true;
    return 0;
}

/* One command with a path operand; returns the CQE's res. */
static int64_t path_call(struct cisc_queue *q, struct wire_sqe *e, const char *path,
                         struct wire_cqe *out)
{
    struct stage st;
    int r = stage_path(q, path, &st);
    if (r)
        return r;
    e->addr = st.off;
    e->len = st.len;
    int64_t res = lc_call(q, e, out);
    unstage(q, &st);
    return res;
}

static void to_stat(const struct wire_stat *w, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = w->ino;
    st->st_size = (off_t)w->size;
    st->st_blocks = (blkcnt_t)w->blocks;
    st->st_nlink = (nlink_t)w->nlink;
    st->st_mode = w->mode;
    st->st_uid = w->uid;
    st->st_gid = w->gid;
    st->st_blksize = 4096;
    st->st_atim = (struct timespec){ w->atime_ns / 1000000000, w->atime_ns % 1000000000 };
    st->st_mtim = (struct timespec){ w->mtime_ns / 1000000000, w->mtime_ns % 1000000000 };
    st->st_ctim = (struct timespec){ w->ctime_ns / 1000000000, w->ctime_ns % 1000000000 };
}

/* ---- files -------------------------------------------------------------------- */

CISC_API int cisc_open(struct cisc_queue *q, const char *path, int flags, mode_t mode,
                       uint64_t *fh)
{
    if (!q || !fh)
        return -EINVAL;
    struct wire_sqe e = { .opcode = WIRE_OP_OPEN, .flags = (uint32_t)flags,
                          .mode = (uint32_t)mode };
    struct wire_cqe c;
    int64_t r = path_call(q, &e, path, &c);
    if (r < 0)
        return (int)r;
    r = lc_file_add(q->s, c.aux, (flags & O_APPEND) != 0);
    if (r) {
        struct wire_sqe cl = { .opcode = WIRE_OP_CLOSE, .fh = c.aux };
        lc_call(q, &cl, NULL);
        return (int)r;
    }
    *fh = c.aux;
    return 0;
}

CISC_API int cisc_close(struct cisc_queue *q, uint64_t fh)
{
    if (!q)
        return -EINVAL;
    struct wire_sqe e = { .opcode = WIRE_OP_CLOSE, .fh = fh };
    int64_t r = lc_call(q, &e, NULL);
    if (r == 0 || r == -EBADF)
        lc_file_del(q->s, fh);
    return (int)r;
}

/* One transfer of len bytes at arena offset aoff: READ, WRITE or APPEND. */
static int64_t xfer(struct cisc_queue *q, uint8_t op, uint64_t fh, uint64_t aoff, size_t len,
                    uint64_t off, uint64_t *aux)
{
    struct wire_sqe e = { .opcode = op, .fh = fh, .off = off, .addr = aoff, .len = len };
    struct wire_cqe c;
    int64_t r = lc_call(q, &e, &c);
    if (r >= 0 && aux)
        *aux = c.aux;
    return r;
}

/* pread through a bounce buffer, chunk by chunk, until len or a short read. */
static ssize_t bounce_read(struct cisc_queue *q, uint64_t fh, uint8_t *buf, size_t len,
                           uint64_t off)
{
    size_t chunk = len < LC_CHUNK ? len : LC_CHUNK, done = 0;
    uint64_t aoff;
    int r = lc_arena_alloc(q, chunk, &aoff);
    if (r)
        return r;
    while (done < len) {
        size_t want = len - done < chunk ? len - done : chunk;
        int64_t n = xfer(q, WIRE_OP_READ, fh, aoff, want, off + done, NULL);
        if (n <= 0) {
            if (n < 0 && done == 0)
                done = (size_t)n;   /* the error, as ssize_t below */
            break;
        }
        memcpy(buf + done, lc_arena_ptr(q, aoff), (size_t)n);
        done += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    lc_arena_free(q, aoff);
    return (ssize_t)done;
}

CISC_API ssize_t cisc_pread(struct cisc_queue *q, uint64_t fh, void *buf, size_t len,
                            uint64_t off)
{
    uint64_t aoff;
    if (!q || (!buf && len))
        return -EINVAL;
    if (len == 0)
        return xfer(q, WIRE_OP_READ, fh, 0, 0, off, NULL);
    if (lc_arena_off(q, buf, len, &aoff))
        return xfer(q, WIRE_OP_READ, fh, aoff, len, off, NULL);
    return bounce_read(q, fh, buf, len, off);
}

/* Writes through a bounce buffer; op WRITE (at off) or APPEND (one piece). */
static ssize_t bounce_write(struct cisc_queue *q, uint8_t op, uint64_t fh, const uint8_t *buf,
                            size_t len, uint64_t off, uint64_t *aux)
{
    size_t chunk = op == WIRE_OP_APPEND || len < LC_CHUNK ? len : LC_CHUNK, done = 0;
    uint64_t aoff;
    int r = lc_arena_alloc(q, chunk, &aoff);
    if (r)
        return r;
    while (done < len) {
        size_t want = len - done < chunk ? len - done : chunk;
        memcpy(lc_arena_ptr(q, aoff), buf + done, want);
        int64_t n = xfer(q, op, fh, aoff, want, off + done, done ? NULL : aux);
        if (n <= 0) {
            if (done == 0)
                done = (size_t)n;
            break;
        }
        done += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    lc_arena_free(q, aoff);
    return (ssize_t)done;
}

static ssize_t do_write(struct cisc_queue *q, uint8_t op, uint64_t fh, const void *buf,
                        size_t len, uint64_t off, uint64_t *aux)
{
    uint64_t aoff;
    if (!q || (!buf && len))
        return -EINVAL;
    if (len == 0 || lc_arena_off(q, buf, len, &aoff))
        return xfer(q, op, fh, len ? aoff : 0, len, off, aux);
    return bounce_write(q, op, fh, buf, len, off, aux);
}

CISC_API ssize_t cisc_pwrite(struct cisc_queue *q, uint64_t fh, const void *buf, size_t len,
                             uint64_t off)
{
    return do_write(q, WIRE_OP_WRITE, fh, buf, len, off, NULL);
}

CISC_API ssize_t cisc_append(struct cisc_queue *q, uint64_t fh, const void *buf, size_t len,
                             uint64_t *off)
{
    return do_write(q, WIRE_OP_APPEND, fh, buf, len, 0, off);
}

CISC_API ssize_t cisc_read(struct cisc_queue *q, uint64_t fh, void *buf, size_t len)
{
    uint64_t pos;
    bool append;
    if (!q)
        return -EINVAL;
    int r = lc_file_pos(q->s, fh, &pos, &append);
    if (r)
        return r;
    ssize_t n = cisc_pread(q, fh, buf, len, pos);
    if (n > 0)
        lc_file_set_pos(q->s, fh, pos + (uint64_t)n);
    return n;
}

CISC_API ssize_t cisc_write(struct cisc_queue *q, uint64_t fh, const void *buf, size_t len)
{
    uint64_t pos, at;
    bool append;
    if (!q)
        return -EINVAL;
    int r = lc_file_pos(q->s, fh, &pos, &append);
    if (r)
        return r;
    ssize_t n = append ? do_write(q, WIRE_OP_APPEND, fh, buf, len, 0, &at)
                       : do_write(q, WIRE_OP_WRITE, fh, buf, len, pos, NULL);
    if (n > 0)
        lc_file_set_pos(q->s, fh, (append ? at : pos) + (uint64_t)n);
    return n;
}

CISC_API int cisc_truncate(struct cisc_queue *q, uint64_t fh, uint64_t size)
{
    if (!q)
        return -EINVAL;
    struct wire_sqe e = { .opcode = WIRE_OP_TRUNCATE, .fh = fh, .off = size };
    return (int)lc_call(q, &e, NULL);
}

CISC_API int cisc_fsync(struct cisc_queue *q, uint64_t fh, int datasync)
{
    if (!q)
        return -EINVAL;
    struct wire_sqe e = { .opcode = WIRE_OP_FSYNC, .fh = fh, .flags = datasync ? 1 : 0 };
    return (int)lc_call(q, &e, NULL);
}

/* STAT by path (path != NULL) or by handle. */
static int do_stat(struct cisc_queue *q, const char *path, uint64_t fh, struct stat *st)
{
    if (!q || !st)
        return -EINVAL;
    uint64_t res;
    int r = lc_arena_alloc(q, sizeof(struct wire_stat), &res);
    if (r)
        return r;
    struct wire_sqe e = { .opcode = WIRE_OP_STAT, .fh = path ? 0 : fh, .res_off = res,
                          .res_len = sizeof(struct wire_stat) };
    int64_t n = path ? path_call(q, &e, path, NULL) : lc_call(q, &e, NULL);
    if (n == 0) {
        struct wire_stat w;
        memcpy(&w, lc_arena_ptr(q, res), sizeof(w));
        to_stat(&w, st);
    }
    lc_arena_free(q, res);
    return (int)n;
}

CISC_API int cisc_stat(struct cisc_queue *q, const char *path, struct stat *st)
{
    return path ? do_stat(q, path, 0, st) : -EFAULT;
}

CISC_API int cisc_fstat(struct cisc_queue *q, uint64_t fh, struct stat *st)
{
    return fh ? do_stat(q, NULL, fh, st) : -EBADF;
}

/* ---- namespace ------------------------------------------------------------------- */

CISC_API int cisc_unlink(struct cisc_queue *q, const char *path)
{
    struct wire_sqe e = { .opcode = WIRE_OP_UNLINK };
    return q ? (int)path_call(q, &e, path, NULL) : -EINVAL;
}

CISC_API int cisc_mkdir(struct cisc_queue *q, const char *path, mode_t mode)
{
    struct wire_sqe e = { .opcode = WIRE_OP_MKDIR, .mode = (uint32_t)mode };
    return q ? (int)path_call(q, &e, path, NULL) : -EINVAL;
}

CISC_API int cisc_rmdir(struct cisc_queue *q, const char *path)
{
    struct wire_sqe e = { .opcode = WIRE_OP_RMDIR };
    return q ? (int)path_call(q, &e, path, NULL) : -EINVAL;
}

CISC_API int cisc_rename(struct cisc_queue *q, const char *oldpath, const char *newpath,
                         unsigned flags)
{
    if (!q)
        return -EINVAL;
    if (!oldpath || !newpath)
        return -EFAULT;
    size_t a = strlen(oldpath), b = strlen(newpath);
    if (a >= WIRE_PATH_MAX || b >= WIRE_PATH_MAX)
        return -ENAMETOOLONG;
    if (!a || !b)
        return -ENOENT;
    uint64_t off;
    int r = lc_arena_alloc(q, a + 1 + b, &off);
    if (r)
        return r;
    char *p = lc_arena_ptr(q, off);
    memcpy(p, oldpath, a + 1);
    memcpy(p + a + 1, newpath, b);
    struct wire_sqe e = { .opcode = WIRE_OP_RENAME, .flags = flags, .addr = off,
                          .len = a + 1 + b };
    int64_t n = lc_call(q, &e, NULL);
    lc_arena_free(q, off);
    return (int)n;
}

/* Calls fn for each record of a READDIR batch; returns 1 when fn stopped. */
static int walk_batch(const uint8_t *p, size_t len, cisc_dirent_fn fn, void *arg)
{
    char name[256];
    size_t pos = 0;
    while (pos + sizeof(struct wire_dirent) <= len) {
        struct wire_dirent d;
        memcpy(&d, p + pos, sizeof(d));
        if (d.reclen < sizeof(d) || pos + d.reclen > len || d.namelen > 255 ||
            sizeof(d) + d.namelen > d.reclen)
            return -EPROTO;
        memcpy(name, p + pos + sizeof(d), d.namelen);
        name[d.namelen] = '\0';
        struct cisc_dirent de = { d.ino, d.type, name };
        if (fn(arg, &de))
            return 1;
        pos += d.reclen;
    }
    return 0;
}

CISC_API int cisc_readdir(struct cisc_queue *q, const char *path, cisc_dirent_fn fn,
                          void *arg)
{
    if (!q || !fn)
        return -EINVAL;
    size_t cap = 32768 < q->arena_size / 4 ? 32768 : q->arena_size / 4;
    uint64_t res;
    int r = lc_arena_alloc(q, cap, &res);
    if (r)
        return r;
    uint64_t cookie = 0;
    for (;;) {
        struct wire_sqe e = { .opcode = WIRE_OP_READDIR, .off = cookie, .res_off = res,
                              .res_len = (uint32_t)cap };
        struct wire_cqe c;
        int64_t n = path_call(q, &e, path, &c);
        if (n <= 0) {
            r = (int)n;
            break;
        }
        r = walk_batch(lc_arena_ptr(q, res), (size_t)n, fn, arg);
        if (r) {
            r = r > 0 ? 0 : r;
            break;
        }
        cookie = c.aux;
    }
    lc_arena_free(q, res);
    return r;
}

CISC_API int cisc_nop(struct cisc_queue *q)
{
    struct wire_sqe e = { .opcode = WIRE_OP_NOP };
    return q ? (int)lc_call(q, &e, NULL) : -EINVAL;
}
