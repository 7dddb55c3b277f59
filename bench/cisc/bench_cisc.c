/*
 * bench/cisc/bench_cisc.c - the FusionFS microbenchmarks (FAST'22 §5.2.1)
 * over five paths, one run per invocation (bench_cisc.py drives it):
 *
 *   A  POSIX system calls on a tmpfs directory, compute on the host
 *   B  the same system calls on the ciscfs FUSE mount
 *   C  libcisc RISC ops (one round trip each), compute on the host
 *   D  libcisc fused ops (one round trip per sequence, compute in the device)
 *   E  fused ops submitted ten per doorbell (cisc_vec_submit_batch)
 *   H  the bytes alone: the workload's copies (into and out of a memory
 *      area standing for the file) and its compute step, plain C, no
 *      system call: the floor every other path is measured against
 *      (bench_cisc.py runs it with one thread; DIR is not used)
 *
 * Workloads (each thread on its own files, as in the paper):
 *   acw  append-CRC-write: append a 4 KiB record, then its CRC-32C
 *   rmw  read-modify-write: read a random 4 KiB block of the thread's file,
 *        overwrite 64 bytes of it with random text, write it back
 *   owc  open-write-close: 2,000 files of 256 KiB, split over the threads
 *   rcw  read-compress-write: read 64 KiB of text, zstd level 1, append
 *   rew  read-encrypt-write: read 64 KiB, XChaCha20-Poly1305, append
 *
 * Data buffers of paths C-E are arena buffers (the "DMA-able memory" of
 * the paper), so the library adds no copy of its own. Throughput counts
 * payload bytes (the 4 KiB record, the 4 KiB block, the 256 KiB file, the
 * 64 KiB input chunk). Prints one CSV line:
 *   workload,path,threads,ops,bytes,seconds,mib_s,kops_s,errors
 * Not a test: nothing is asserted.
 */
#include <cisc/cisc.h>

#include "common/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define REC      4096u
#define BLK      4096u
#define PATCH    64u
#define OWC_FILES 2000u
#define OWC_SIZE (256u << 10)
#define CHUNK    (64u << 10)
#define BATCH    10u
#define MAXT     16

struct opts {
    const char *wl;          /* acw rmw owc rcw rew */
    char path;               /* A B C D E */
    unsigned threads;
    const char *dir;         /* A, B: directory; C-E: the mount point */
    double seconds;
    uint64_t rmw_file;       /* bytes per thread */
    uint64_t in_file;        /* rcw/rew input bytes per thread */
};

struct worker {
    const struct opts *o;
    unsigned id;
    pthread_t th;
    uint64_t ops, bytes, errors;
    double secs;
    /* POSIX */
    int fd, fd2;
    ZSTD_CCtx *zc;
    /* libcisc */
    struct cisc_session *s;
    struct cisc_queue *q;
    uint64_t fh, fh2;
    void *buf, *buf2;        /* arena buffers */
    uint32_t key;
    struct cisc_vec v[BATCH];
    unsigned nv;
    uint64_t rng;
    /* H: the memory standing for the files */
    uint8_t *area;
    uint64_t area_len;
};

static uint8_t key_bytes[32];
static double deadline_s;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rnd(struct worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static void text(uint8_t *p, size_t n, uint64_t seed)
{
    static const char words[] = "the quick brown fox jumps over the lazy dog near the river ";
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)words[(i + seed * 7) % (sizeof(words) - 1)];
    for (size_t i = 0; i < n; i += 97)
        p[i] = (uint8_t)('0' + (seed + i) % 10);
}

/* The mount's paths (B) and libcisc's (C, D, E) use files of their own:
 * a file the kernel caches (opened through the mount) makes every libcisc
 * change to it pay for invalidating the kernel's caches first, a cost of
 * sharing a file between the two doors, not of either path alone. */
static const char *door(const struct opts *o)
{
    return o->path == 'A' || o->path == 'B' ? "posix" : "cisc";
}

static void fname(char *out, size_t n, const struct opts *o, const char *what, unsigned id)
{
    snprintf(out, n, "%s/%s-%s-%s%u", o->dir, o->wl, door(o), what, id);
}

/* Path under the device root for libcisc (the mount point stripped). */
static void rname(char *out, size_t n, const struct opts *o, const char *what, unsigned id)
{
    snprintf(out, n, "%s-%s-%s%u", o->wl, door(o), what, id);
}

static bool posix(const struct opts *o)
{
    return o->path == 'A' || o->path == 'B';
}

#define HOST_AREA (64u << 20)   /* H: where appended and written bytes land */

/* ---- setup --------------------------------------------------------------------- */

/* Makes a file of `size` bytes of text through POSIX (reused if present). */
static int make_file(const char *path, uint64_t size, uint64_t seed)
{
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size == size)
        return 0;
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return -errno;
    uint8_t *b = malloc(1 << 20);
    int r = b ? 0 : -ENOMEM;
    for (uint64_t off = 0; !r && off < size; off += 1 << 20) {
        size_t n = size - off < (1 << 20) ? (size_t)(size - off) : (1 << 20);
        text(b, n, seed + off / 4096);
        if (pwrite(fd, b, n, (off_t)off) != (ssize_t)n)
            r = -EIO;
    }
    free(b);
    fsync(fd);
    close(fd);
    return r;
}

/* make_file through libcisc (so that the kernel never caches the file),
 * then opens it with flags into *fh. */
static int make_file_cisc(struct worker *w, const char *path, uint64_t size, uint64_t seed,
                          int flags, uint64_t *fh)
{
    struct stat st;
    if (cisc_stat(w->q, path, &st) == 0 && (uint64_t)st.st_size == size)
        return cisc_open(w->q, path, flags, 0, fh);
    uint64_t f;
    int r = cisc_open(w->q, path, O_CREAT | O_WRONLY | O_TRUNC, 0644, &f);
    for (uint64_t off = 0; !r && off < size; off += 2 * CHUNK) {
        size_t n = size - off < 2 * CHUNK ? (size_t)(size - off) : 2 * CHUNK;
        text(w->buf2, n, seed + off / 4096);
        if (cisc_pwrite(w->q, f, w->buf2, n, off) != (ssize_t)n)
            r = -EIO;
    }
    if (!r)
        r = cisc_fsync(w->q, f, 0);
    int c = cisc_close(w->q, f);
    return r ?: c ?: cisc_open(w->q, path, flags, 0, fh);
}

static int setup_posix(struct worker *w)
{
    const struct opts *o = w->o;
    char a[4096], b[4096];
    w->zc = ZSTD_createCCtx();
    w->buf = malloc(OWC_SIZE + CHUNK);
    w->buf2 = malloc(2 * CHUNK);
    if (!w->zc || !w->buf || !w->buf2)
        return -ENOMEM;
    fname(a, sizeof(a), o, "in", w->id);
    fname(b, sizeof(b), o, "out", w->id);
    if (!strcmp(o->wl, "acw"))
        w->fd = open(b, O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0644);
    else if (!strcmp(o->wl, "rmw"))
        w->fd = make_file(a, o->rmw_file, w->id) ? -1 : open(a, O_RDWR);
    else if (!strcmp(o->wl, "rcw") || !strcmp(o->wl, "rew")) {
        w->fd = make_file(a, o->in_file, w->id) ? -1 : open(a, O_RDONLY);
        w->fd2 = open(b, O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0644);
        if (w->fd2 < 0)
            return -errno;
    } else
        w->fd = 0;
    text(w->buf, OWC_SIZE, w->id);
    return w->fd < 0 ? -EIO : 0;
}

/* H: buffers and an area of memory for the "file" (the rmw file's size
 * for rmw, else HOST_AREA), filled (faulted in) before the run. */
static int setup_host(struct worker *w)
{
    const struct opts *o = w->o;
    w->zc = ZSTD_createCCtx();
    w->buf = malloc(OWC_SIZE + CHUNK);
    w->buf2 = malloc(2 * CHUNK);
    w->area_len = !strcmp(o->wl, "rmw") ? o->rmw_file : HOST_AREA;
    w->area = malloc(w->area_len);
    if (!w->zc || !w->buf || !w->buf2 || !w->area || w->area_len < OWC_SIZE + 2 * CHUNK)
        return -ENOMEM;
    text(w->area, w->area_len, w->id);
    text(w->buf, OWC_SIZE, w->id);
    return 0;
}

static int setup_cisc(struct worker *w)
{
    const struct opts *o = w->o;
    char a[4096], b[4096];
    int r = cisc_session_open(o->dir, &w->s);
    struct cisc_queue_params qp = { .arena_size = 32u << 20 };
    if (!r)
        r = cisc_queue_create_params(w->s, &qp, &w->q);
    if (!r)
        r = cisc_buf_alloc(w->q, OWC_SIZE + CHUNK, &w->buf);
    if (!r)
        r = cisc_buf_alloc(w->q, 2 * CHUNK, &w->buf2);
    if (!r)
        r = cisc_key_add(w->s, key_bytes, &w->key);
    if (r)
        return r;
    w->zc = ZSTD_createCCtx();
    text(w->buf, OWC_SIZE, w->id);
    rname(a, sizeof(a), o, "in", w->id);
    rname(b, sizeof(b), o, "out", w->id);
    if (!strcmp(o->wl, "acw"))
        r = cisc_open(w->q, b, O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0644, &w->fh);
    else if (!strcmp(o->wl, "rmw"))
        r = make_file_cisc(w, a, o->rmw_file, w->id, O_RDWR, &w->fh);
    else if (!strcmp(o->wl, "rcw") || !strcmp(o->wl, "rew")) {
        r = make_file_cisc(w, a, o->in_file, w->id, O_RDONLY, &w->fh);
        if (!r)
            r = cisc_open(w->q, b, O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0644, &w->fh2);
    }
    for (unsigned i = 0; !r && i < BATCH; i++, w->nv++)
        r = cisc_vec_init(&w->v[i], w->q);
    return r;
}

static void teardown(struct worker *w)
{
    if (w->s) {
        for (unsigned i = 0; i < w->nv; i++)
            cisc_vec_free(&w->v[i]);
        cisc_session_close(w->s);
    } else {
        free(w->buf);
        free(w->buf2);
        free(w->area);
        if (w->fd > 0)
            close(w->fd);
        if (w->fd2 > 0)
            close(w->fd2);
    }
    ZSTD_freeCCtx(w->zc);
}

/* ---- host compute --------------------------------------------------------------- */

static size_t host_compress(struct worker *w, const void *in, size_t n, void *out, size_t cap)
{
    size_t z = ZSTD_compressCCtx(w->zc, out, cap, in, n, 1);
    return ZSTD_isError(z) ? 0 : z;
}

static size_t host_encrypt(const void *in, size_t n, uint8_t *out)
{
    unsigned long long clen;
    randombytes_buf(out, 24);
    crypto_aead_xchacha20poly1305_ietf_encrypt(out + 24, &clen, in, n, NULL, 0, NULL, out,
                                               key_bytes);
    return 24 + (size_t)clen;
}

static void patch(struct worker *w, uint8_t *blk, size_t *at)
{
    *at = rnd(w) % (BLK - PATCH);
    for (unsigned i = 0; i < PATCH; i++)
        blk[*at + i] = (uint8_t)('a' + rnd(w) % 26);
}

/* ---- path A/B: POSIX ------------------------------------------------------------ */

static int op_posix(struct worker *w, uint64_t i)
{
    const struct opts *o = w->o;
    uint8_t *b = w->buf, *b2 = w->buf2;
    if (!strcmp(o->wl, "acw")) {
        uint32_t c = crc32c(0, b, REC);
        return write(w->fd, b, REC) == REC && write(w->fd, &c, 4) == 4 ? 0 : -EIO;
    }
    if (!strcmp(o->wl, "rmw")) {
        off_t off = (off_t)(rnd(w) % (o->rmw_file / BLK)) * BLK;
        size_t at;
        if (pread(w->fd, b, BLK, off) != BLK)
            return -EIO;
        patch(w, b, &at);
        return pwrite(w->fd, b, BLK, off) == BLK ? 0 : -EIO;
    }
    if (!strcmp(o->wl, "owc")) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/owc-%u", o->dir, (unsigned)i);
        int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        int r = fd >= 0 && write(fd, b, OWC_SIZE) == OWC_SIZE ? 0 : -EIO;
        if (fd >= 0)
            close(fd);
        return r;
    }
    off_t off = (off_t)((i * CHUNK) % o->in_file);
    if (pread(w->fd, b, CHUNK, off) != CHUNK)
        return -EIO;
    size_t n = !strcmp(o->wl, "rcw") ? host_compress(w, b, CHUNK, b2, 2 * CHUNK)
                                     : host_encrypt(b, CHUNK, b2);
    return n && write(w->fd2, b2, n) == (ssize_t)n ? 0 : -EIO;
}

/* ---- path H: the bytes alone ------------------------------------------------------ */

/* Where the bytes of op i land in the area (n bytes, wrapping). */
static uint8_t *host_at(struct worker *w, uint64_t i, size_t n)
{
    return w->area + (i * n) % (w->area_len - n);
}

static int op_host(struct worker *w, uint64_t i)
{
    const struct opts *o = w->o;
    uint8_t *b = w->buf, *b2 = w->buf2;
    if (!strcmp(o->wl, "acw")) {
        uint32_t c = crc32c(0, b, REC);
        uint8_t *d = host_at(w, i, REC + 4);
        memcpy(d, b, REC);
        memcpy(d + REC, &c, 4);
        return 0;
    }
    if (!strcmp(o->wl, "rmw")) {
        uint8_t *blk = w->area + (rnd(w) % (w->area_len / BLK)) * BLK;
        size_t at;
        memcpy(b, blk, BLK);
        patch(w, b, &at);
        memcpy(blk, b, BLK);
        return 0;
    }
    if (!strcmp(o->wl, "owc")) {
        memcpy(host_at(w, i, OWC_SIZE), b, OWC_SIZE);
        return 0;
    }
    memcpy(b, host_at(w, i, CHUNK), CHUNK);
    size_t n = !strcmp(o->wl, "rcw") ? host_compress(w, b, CHUNK, b2, 2 * CHUNK)
                                     : host_encrypt(b, CHUNK, b2);
    if (!n)
        return -EIO;
    memcpy(host_at(w, i + 1, n), b2, n);
    return 0;
}

/* ---- path C: libcisc RISC ops ------------------------------------------------------ */

static int op_risc(struct worker *w, uint64_t i)
{
    const struct opts *o = w->o;
    uint8_t *b = w->buf, *b2 = w->buf2;
    struct cisc_queue *q = w->q;
    if (!strcmp(o->wl, "acw")) {
        uint32_t *c = (uint32_t *)(b2);
        if (cisc_append(q, w->fh, b, REC, NULL) != REC)
            return -EIO;
        *c = crc32c(0, b, REC);
        return cisc_append(q, w->fh, c, 4, NULL) == 4 ? 0 : -EIO;
    }
    if (!strcmp(o->wl, "rmw")) {
        uint64_t off = (rnd(w) % (o->rmw_file / BLK)) * BLK;
        size_t at;
        if (cisc_pread(q, w->fh, b, BLK, off) != BLK)
            return -EIO;
        patch(w, b, &at);
        return cisc_pwrite(q, w->fh, b, BLK, off) == BLK ? 0 : -EIO;
    }
    if (!strcmp(o->wl, "owc")) {
        char p[64];
        uint64_t fh;
        snprintf(p, sizeof(p), "owc-%u", (unsigned)i);
        int r = cisc_open(q, p, O_CREAT | O_WRONLY | O_TRUNC, 0644, &fh);
        if (!r)
            r = cisc_pwrite(q, fh, b, OWC_SIZE, 0) == OWC_SIZE ? 0 : -EIO;
        cisc_close(q, fh);
        return r;
    }
    uint64_t off = (i * CHUNK) % o->in_file;
    if (cisc_pread(q, w->fh, b, CHUNK, off) != CHUNK)
        return -EIO;
    size_t n = !strcmp(o->wl, "rcw") ? host_compress(w, b, CHUNK, b2, 2 * CHUNK)
                                     : host_encrypt(b, CHUNK, b2);
    return n && cisc_append(q, w->fh2, b2, n, NULL) == (ssize_t)n ? 0 : -EIO;
}

/* ---- path D: fused ops ------------------------------------------------------------ */

static int op_fused(struct worker *w, uint64_t i)
{
    const struct opts *o = w->o;
    uint8_t *b = w->buf, *b2 = w->buf2;
    struct cisc_queue *q = w->q;
    if (!strcmp(o->wl, "acw"))
        return cisc_append_crc_write(q, w->fh, b, REC, NULL) == REC ? 0 : -EIO;
    if (!strcmp(o->wl, "rmw")) {
        uint64_t off = (rnd(w) % (o->rmw_file / BLK)) * BLK;
        size_t at;
        patch(w, b2, &at);
        return cisc_read_modify_write(q, w->fh, off, BLK, b2 + at, PATCH, at) == BLK ? 0 : -EIO;
    }
    if (!strcmp(o->wl, "owc")) {
        char p[64];
        snprintf(p, sizeof(p), "owc-%u", (unsigned)i);
        return cisc_open_write_close(q, p, O_CREAT | O_TRUNC, 0644, b, OWC_SIZE, 0) == OWC_SIZE
                   ? 0 : -EIO;
    }
    uint64_t off = (i * CHUNK) % o->in_file;
    ssize_t n = !strcmp(o->wl, "rcw")
                    ? cisc_read_compress_write(q, w->fh, off, CHUNK, w->fh2, 1, NULL)
                    : cisc_read_encrypt_write(q, w->fh, off, CHUNK, w->fh2, w->key, NULL);
    return n > 0 ? 0 : -EIO;
}

/* ---- path E: fused ops, ten per doorbell ---------------------------------------------- */

/* Builds op number i of the workload into v. */
static int build(struct worker *w, struct cisc_vec *v, uint64_t i)
{
    const struct opts *o = w->o;
    uint8_t *b = w->buf, *b2 = w->buf2;
    cisc_vec_reset(v);
    if (!strcmp(o->wl, "acw")) {
        int f = cisc_vec_fh(v, w->fh);
        cisc_vec_append(v, f, CISC_IN_BUF(b, REC));
        int c = cisc_vec_crc32c(v, CISC_IN_BUF(b, REC), 0);
        return cisc_vec_append(v, f, CISC_IN_STEP(c));
    }
    if (!strcmp(o->wl, "rmw")) {
        uint64_t off = (rnd(w) % (o->rmw_file / BLK)) * BLK;
        size_t at;
        uint8_t *p = b2 + (i % BATCH) * BLK;   /* each op its own patch text */
        patch(w, p, &at);
        int f = cisc_vec_fh(v, w->fh);
        int r = cisc_vec_read(v, f, off, BLK);
        int m = cisc_vec_patch(v, r, at, CISC_IN_BUF(p + at, PATCH));
        return cisc_vec_write(v, f, off, CISC_IN_STEP(m));
    }
    if (!strcmp(o->wl, "owc")) {
        char p[64];
        snprintf(p, sizeof(p), "owc-%u", (unsigned)i);
        int f = cisc_vec_open(v, p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        cisc_vec_write(v, f, 0, CISC_IN_BUF(b, OWC_SIZE));
        return cisc_vec_close(v, f);
    }
    uint64_t off = (i * CHUNK) % o->in_file;
    int fi = cisc_vec_fh(v, w->fh), fo = cisc_vec_fh(v, w->fh2);
    int r = cisc_vec_read(v, fi, off, CHUNK);
    int x = !strcmp(o->wl, "rcw") ? cisc_vec_compress(v, CISC_IN_STEP(r), 1)
                                  : cisc_vec_encrypt(v, CISC_IN_STEP(r), w->key);
    return cisc_vec_append(v, fo, CISC_IN_STEP(x));
}

/* ---- the run ------------------------------------------------------------------------ */

static uint64_t payload(const struct opts *o)
{
    if (!strcmp(o->wl, "acw"))
        return REC;
    if (!strcmp(o->wl, "rmw"))
        return BLK;
    if (!strcmp(o->wl, "owc"))
        return OWC_SIZE;
    return CHUNK;
}

/* owc: files id, id + T, id + 2T ... < OWC_FILES; others: until the deadline. */
static bool more(const struct worker *w, uint64_t i)
{
    if (!strcmp(w->o->wl, "owc"))
        return i < OWC_FILES;
    return now() < deadline_s;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    const struct opts *o = w->o;
    bool owc = !strcmp(o->wl, "owc");
    uint64_t step = owc ? o->threads : 1, i = owc ? w->id : 0;
    double t0 = now();
    while (more(w, i)) {
        unsigned n = 1;
        int r;
        if (o->path == 'E') {
            n = BATCH;
            if (owc)   /* the files of this thread, ten at a time */
                for (n = 0; n < BATCH && i + n * step < OWC_FILES; n++)
                    ;
            uint64_t idx[BATCH];
            for (unsigned k = 0; k < n; k++)
                idx[k] = i + k * step;
            r = 0;
            struct cisc_vec *vs[BATCH];
            for (unsigned k = 0; !r && k < n; k++) {
                r = build(w, &w->v[k], idx[k]) < 0 ? -EINVAL : 0;
                vs[k] = &w->v[k];
            }
            if (!r)
                r = cisc_vec_submit_batch(vs, n);
            for (unsigned k = 0; !r && k < n; k++)
                r = cisc_vec_wait(&w->v[k]) ? -EIO : 0;
        } else {
            r = posix(o)         ? op_posix(w, i)
                : o->path == 'H' ? op_host(w, i)
                : o->path == 'C' ? op_risc(w, i)
                                 : op_fused(w, i);
        }
        if (r)
            w->errors++;
        else {
            w->ops += n;
            w->bytes += n * payload(o);
        }
        i += n * step;
    }
    w->secs = now() - t0;
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: cisc-bench-cisc WORKLOAD(acw|rmw|owc|rcw|rew) PATH(A-E|H) THREADS "
                    "DIR [SECONDS [RMW_FILE_MIB [INPUT_MIB]]]\n"
                    "  DIR: a tmpfs directory (A) or the ciscfs mount point (B-E); unused (H)\n");
    return 2;
}

static void cleanup_owc(const struct opts *o)
{
    char p[4096];
    for (unsigned i = 0; i < OWC_FILES; i++) {
        snprintf(p, sizeof(p), "%s/owc-%u", o->dir, i);
        unlink(p);
    }
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return usage();
    struct opts o = { argv[1], argv[2][0], (unsigned)atoi(argv[3]), argv[4],
                      argc > 5 ? atof(argv[5]) : 1.0,
                      (argc > 6 ? strtoull(argv[6], NULL, 0) : 256) << 20,
                      (argc > 7 ? strtoull(argv[7], NULL, 0) : 32) << 20 };
    if (o.threads < 1 || o.threads > MAXT || ((o.path < 'A' || o.path > 'E') && o.path != 'H'))
        return usage();
    if (sodium_init() < 0)
        return 1;
    memset(key_bytes, 0x42, sizeof(key_bytes));
    struct worker w[MAXT];
    memset(w, 0, sizeof(w));
    for (unsigned t = 0; t < o.threads; t++) {
        w[t] = (struct worker){ .o = &o, .id = t, .rng = 0x9E3779B97F4A7C15ull * (t + 1) };
        int r = posix(&o) ? setup_posix(&w[t]) : o.path == 'H' ? setup_host(&w[t])
                                                              : setup_cisc(&w[t]);
        if (r) {
            fprintf(stderr, "setup of thread %u failed: %s\n", t, strerror(-r));
            return 1;
        }
    }
    if (!strcmp(o.wl, "owc") && o.path != 'H')
        cleanup_owc(&o);
    deadline_s = now() + o.seconds;
    for (unsigned t = 0; t < o.threads; t++)
        pthread_create(&w[t].th, NULL, run, &w[t]);
    uint64_t ops = 0, bytes = 0, errors = 0;
    double secs = 0;
    for (unsigned t = 0; t < o.threads; t++) {
        pthread_join(w[t].th, NULL);
        ops += w[t].ops;
        bytes += w[t].bytes;
        errors += w[t].errors;
        secs = w[t].secs > secs ? w[t].secs : secs;
    }
    for (unsigned t = 0; t < o.threads; t++)
        teardown(&w[t]);
    if (!strcmp(o.wl, "owc") && o.path != 'H')
        cleanup_owc(&o);
    printf("%s,%c,%u,%llu,%llu,%.4f,%.1f,%.2f,%llu\n", o.wl, o.path, o.threads,
           (unsigned long long)ops, (unsigned long long)bytes, secs,
           (double)bytes / secs / (1 << 20), (double)ops / secs / 1000,
           (unsigned long long)errors);
    return 0;
}
