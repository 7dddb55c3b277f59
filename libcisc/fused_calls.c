/*
 * libcisc/fused_calls.c - the convenience calls of <cisc/fused.h>: the
 * operation sequences of FusionFS Table 2, each built as one vector and
 * submitted as ONE fused op (one round trip, all or nothing).
 */
#include "libcisc/client_int.h"

#include <errno.h>
#include <fcntl.h>

/* Submits v; returns the op's failure, or step i's result. Frees v. */
static ssize_t run(struct cisc_vec *v, int i, uint64_t *out_len)
{
    int64_t st = cisc_vec_submit(v);
    ssize_t r = st ? (ssize_t)st : (ssize_t)cisc_vec_ret(v, i);
    if (!st && out_len)
        *out_len = cisc_vec_out_len(v, i);
    cisc_vec_free(v);
    return r;
}

CISC_API ssize_t cisc_open_write_close(struct cisc_queue *q, const char *path, int flags,
                                       mode_t mode, const void *buf, size_t len, uint64_t off)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_open(&v, path, (flags & ~O_ACCMODE) | O_WRONLY, mode);
    int w = cisc_vec_write(&v, f, off, cisc_in_buf(buf, len));
    cisc_vec_close(&v, f);
    return run(&v, w, NULL);
}

CISC_API ssize_t cisc_open_read_close(struct cisc_queue *q, const char *path, void *buf,
                                      size_t len, uint64_t off)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_open(&v, path, O_RDONLY, 0);
    int rd = cisc_vec_read(&v, f, off, len);
    if (len)
        cisc_vec_out_to(&v, rd, buf, len);
    cisc_vec_close(&v, f);
    return run(&v, rd, NULL);
}

CISC_API ssize_t cisc_write_fsync(struct cisc_queue *q, uint64_t fh, const void *buf,
                                  size_t len, uint64_t off)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh);
    int w = cisc_vec_write(&v, f, off, cisc_in_buf(buf, len));
    cisc_vec_fsync(&v, f, 0);
    return run(&v, w, NULL);
}

CISC_API ssize_t cisc_read_modify_write(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                        size_t len, const void *patch, size_t plen,
                                        size_t at)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh);
    int rd = cisc_vec_read(&v, f, off, len);
    int p = cisc_vec_patch(&v, rd, at, cisc_in_buf(patch, plen));
    int w = cisc_vec_write(&v, f, off, cisc_in_step(p));
    return run(&v, w, NULL);
}

/* An arena copy of buf that several steps can share (staged once; the
 * steps then find it in the arena and copy nothing). */
static int share(struct cisc_vec *v, const void *buf, size_t len, struct cisc_src *out)
{
    uint64_t off;
    *out = cisc_in_buf(buf, len);
    int r = lc_vec_stage(v, buf, len, &off);
    if (!r && len)
        out->buf = lc_arena_ptr(v->q, off);
    return r;
}

CISC_API ssize_t cisc_append_crc_write(struct cisc_queue *q, uint64_t fh, const void *buf,
                                       size_t len, uint64_t *off)
{
    struct cisc_vec v;
    struct cisc_src data;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    if ((r = share(&v, buf, len, &data)) != 0) {
        cisc_vec_free(&v);
        return r;
    }
    int f = cisc_vec_fh(&v, fh);
    int a = cisc_vec_append(&v, f, data);
    int c = cisc_vec_crc32c(&v, data, 0);
    cisc_vec_append(&v, f, cisc_in_step(c));
    return run(&v, a, off);
}

CISC_API ssize_t cisc_read_verify_crc(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                      void *buf, size_t len)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh);
    int d = cisc_vec_read(&v, f, off, len);
    int s = cisc_vec_read(&v, f, off + len, 4);
    int c = cisc_vec_crc32c(&v, cisc_in_step(d), 0);
    cisc_vec_verify(&v, c, cisc_in_step(s));
    if (len)
        cisc_vec_out_to(&v, d, buf, len);
    ssize_t n = run(&v, d, NULL);
    return n >= 0 && (size_t)n < len ? -EBADMSG : n;
}

/* read(in) -> compute -> append(out): the two "read, X, write" sequences. */
static ssize_t read_x_append(struct cisc_queue *q, uint64_t in_fh, uint64_t in_off,
                             size_t len, uint64_t out_fh, int kind, int64_t arg,
                             uint64_t *out_off)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int fi = cisc_vec_fh(&v, in_fh), fo = cisc_vec_fh(&v, out_fh);
    int rd = cisc_vec_read(&v, fi, in_off, len);
    int x = kind ? cisc_vec_encrypt(&v, cisc_in_step(rd), (uint32_t)arg)
                 : cisc_vec_compress(&v, cisc_in_step(rd), (int)arg);
    int a = cisc_vec_append(&v, fo, cisc_in_step(x));
    ssize_t n = run(&v, a, out_off);
    return n;
}

CISC_API ssize_t cisc_read_compress_write(struct cisc_queue *q, uint64_t in_fh,
                                          uint64_t in_off, size_t len, uint64_t out_fh,
                                          int level, uint64_t *out_off)
{
    return read_x_append(q, in_fh, in_off, len, out_fh, 0, level, out_off);
}

CISC_API ssize_t cisc_read_encrypt_write(struct cisc_queue *q, uint64_t in_fh,
                                         uint64_t in_off, size_t len, uint64_t out_fh,
                                         uint32_t key_id, uint64_t *out_off)
{
    return read_x_append(q, in_fh, in_off, len, out_fh, 1, key_id, out_off);
}

/* read -> decompress / decrypt -> the caller's buffer. */
static ssize_t read_y(struct cisc_queue *q, uint64_t fh, uint64_t off, size_t len, int kind,
                      uint32_t key_id, void *buf, size_t cap)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh);
    int rd = cisc_vec_read(&v, f, off, len);
    int y = kind ? cisc_vec_decrypt(&v, cisc_in_step(rd), key_id)
                 : cisc_vec_decompress(&v, cisc_in_step(rd), cap);
    cisc_vec_out_to(&v, y, buf, cap);
    return run(&v, y, NULL);
}

CISC_API ssize_t cisc_read_decompress(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                      size_t len, void *buf, size_t cap)
{
    return read_y(q, fh, off, len, 0, 0, buf, cap);
}

CISC_API ssize_t cisc_read_decrypt(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                   size_t len, uint32_t key_id, void *buf, size_t cap)
{
    return read_y(q, fh, off, len, 1, key_id, buf, cap);
}
