/*
 * libcisc/fused.c - fused (CISC) operations of <cisc/fused.h>: the step
 * builder, submission (sync, async, batched), results, session keys.
 *
 * A vector's step array and result array live in one block of its
 * queue's arena, reserved by cisc_vec_init: builder calls write the wire
 * steps (proto/wire.h) straight into shared memory, the device reads
 * them from there and writes the results back beside them, so building
 * and reaping copy nothing. Input buffers outside the arena are staged
 * into temporary arena blocks (the "DMA" of the op), freed when the
 * vector is reset or freed.
 *
 * Invariants:
 *   1. v->n steps are valid in v->steps; every reference a builder call
 *      writes (in_step, in2_step, file_step) names an earlier step.
 *   2. Once v->err is set, no further step is added and nothing is
 *      submitted; cisc_vec_submit returns v->err.
 *   3. A vector in flight (state 1) is never changed; its arena blocks
 *      stay allocated until it is reset or freed after completion.
 */
#include "libcisc/client_int.h"

#include "common/le.h"
#include "proto/ctl.h"
#include "proto/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define STEP_BYTES (CISC_VEC_MAX * sizeof(struct wire_step))
#define RES_BYTES  (CISC_VEC_MAX * sizeof(struct wire_step_res))

_Static_assert(CISC_VEC_MAX == WIRE_MAX_STEPS, "one vector holds WIRE_MAX_STEPS steps");
_Static_assert(CISC_VEC_FH_BASE > CISC_VEC_MAX, "file ids do not collide with steps");
_Static_assert(STEP_BYTES % 8 == 0, "results are 8-byte aligned");

enum { VEC_BUILDING, VEC_INFLIGHT, VEC_DONE };

static struct wire_step *steps(const struct cisc_vec *v)
{
    return v->steps;
}

static struct wire_step_res *results(const struct cisc_vec *v)
{
    return v->res;
}

static int fail(struct cisc_vec *v, int err)
{
    if (!v->err)
        v->err = err;
    return err;
}

/* ---- life cycle ------------------------------------------------------------- */

CISC_API int cisc_vec_init(struct cisc_vec *v, struct cisc_queue *q)
{
    if (!v || !q)
        return -EINVAL;
    memset(v, 0, sizeof(*v));
    v->q = q;
    int r = lc_arena_alloc(q, STEP_BYTES + RES_BYTES, &v->area);
    if (r) {
        v->q = NULL;
        return r;
    }
    v->steps = lc_arena_ptr(q, v->area);
    v->res = (uint8_t *)v->steps + STEP_BYTES;
    return 0;
}

CISC_API void cisc_vec_reset(struct cisc_vec *v)
{
    if (!v || !v->q || v->state == VEC_INFLIGHT)
        return;
    for (unsigned i = 0; i < v->ntmp; i++)
        lc_arena_free(v->q, v->tmp[i]);
    v->n = v->nfh = v->nout = v->ntmp = v->ran = 0;
    v->err = 0;
    v->state = VEC_BUILDING;
    v->status = 0;
}

CISC_API void cisc_vec_free(struct cisc_vec *v)
{
    if (!v || !v->q || v->state == VEC_INFLIGHT)
        return;
    cisc_vec_reset(v);
    lc_arena_free(v->q, v->area);
    v->q = NULL;
}

/* ---- building blocks --------------------------------------------------------- */

/* Appends an empty step of kind; NULL when the vector cannot take one
 * (the error is recorded). */
static struct wire_step *add(struct cisc_vec *v, uint8_t kind, int *idx)
{
    if (!v || !v->q)
        return NULL;
    if (v->err)
        return NULL;
    if (v->state != VEC_BUILDING || v->n == CISC_VEC_MAX) {
        fail(v, v->state != VEC_BUILDING ? -EBUSY : -E2BIG);
        return NULL;
    }
    struct wire_step *s = &steps(v)[v->n];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->in_step = s->in2_step = s->file_step = WIRE_NO_STEP;
    *idx = (int)v->n++;
    return s;
}

/* Takes back the step just added and records err. */
static int drop(struct cisc_vec *v, int err)
{
    v->n--;
    return fail(v, err);
}

static int bad(const struct cisc_vec *v)
{
    return !v || !v->q ? -EINVAL : v->err;
}

/* A temporary arena block of len bytes for this op (the staging of an
 * input or an output), freed when the vector is reset or freed. */
static int tmp_block(struct cisc_vec *v, size_t len, uint64_t *off)
{
    if (v->ntmp == 2 * CISC_VEC_MAX)
        return -E2BIG;
    int r = lc_arena_alloc(v->q, len, off);
    if (!r)
        v->tmp[v->ntmp++] = *off;
    return r;
}

/* Arena range of buf: zero-copy when it is already in the arena, else a
 * temporary block holding a copy. */
static int stage(struct cisc_vec *v, const void *buf, size_t len, uint64_t *off)
{
    if (len == 0) {
        *off = 0;
        return 0;
    }
    if (!buf)
        return -EFAULT;
    if (len > UINT32_MAX)
        return -E2BIG;
    if (lc_arena_off(v->q, buf, len, off))
        return 0;
    int r = tmp_block(v, len, off);
    if (!r)
        memcpy(lc_arena_ptr(v->q, *off), buf, len);
    return r;
}

/* The arena operand (addr, alen) of s from a buffer source. */
static int arena_operand(struct cisc_vec *v, struct wire_step *s, const struct cisc_src *in)
{
    uint64_t off;
    int r = stage(v, in->buf, in->len, &off);
    if (!r) {
        s->addr = off;
        s->alen = (uint32_t)in->len;
    }
    return r;
}

/* A reference to step `step` from step `self`. */
static int ref(int step, int self, uint16_t *out)
{
    if (step < 0)
        return step == CISC_SRC_BUF ? -EINVAL : step;
    if (step >= self)
        return -EINVAL;
    *out = (uint16_t)step;
    return 0;
}

/* First input of step self. */
static int set_in(struct cisc_vec *v, struct wire_step *s, int self, struct cisc_src in)
{
    if (in.step == CISC_SRC_BUF)
        return arena_operand(v, s, &in);
    return ref(in.step, self, &s->in_step);
}

/* Second input of a two-operand step. */
static int set_in2(struct cisc_vec *v, struct wire_step *s, int self, struct cisc_src in)
{
    if (in.step == CISC_SRC_BUF)
        return arena_operand(v, s, &in);
    return ref(in.step, self, &s->in2_step);
}

static int set_file(struct cisc_vec *v, struct wire_step *s, int self, int file)
{
    if (file >= CISC_VEC_FH_BASE) {
        unsigned k = (unsigned)(file - CISC_VEC_FH_BASE);
        if (k >= v->nfh)
            return -EBADF;
        s->flags |= WIRE_STEP_F_FH;
        s->fh = v->fh[k];
        return 0;
    }
    if (file >= 0 && (file >= self || steps(v)[file].kind != WIRE_STEP_OPEN))
        return -EBADF;
    return ref(file, self, &s->file_step);
}

/* Stages a path (no NUL: the step carries its length). */
static int set_path(struct cisc_vec *v, struct wire_step *s, const char *path)
{
    if (!path)
        return -EFAULT;
    size_t n = strlen(path);
    if (n == 0)
        return -ENOENT;
    if (n >= WIRE_PATH_MAX)
        return -ENAMETOOLONG;
    uint64_t off;
    int r = stage(v, path, n, &off);
    if (!r) {
        s->addr = off;
        s->alen = (uint32_t)n;
    }
    return r;
}

/* ---- file steps ----------------------------------------------------------------- */

CISC_API int cisc_vec_fh(struct cisc_vec *v, uint64_t fh)
{
    if (bad(v))
        return bad(v);
    for (unsigned k = 0; k < v->nfh; k++)
        if (v->fh[k] == fh)
            return CISC_VEC_FH_BASE + (int)k;
    if (v->nfh == CISC_VEC_MAX_FH)
        return fail(v, -E2BIG);
    v->fh[v->nfh] = fh;
    return CISC_VEC_FH_BASE + (int)v->nfh++;
}

CISC_API int cisc_vec_open(struct cisc_vec *v, const char *path, int flags, mode_t mode)
{
    int i;
    struct wire_step *s = add(v, WIRE_STEP_OPEN, &i);
    if (!s)
        return bad(v);
    s->flags2 = (uint32_t)flags;
    s->mode = (uint32_t)mode & 07777;
    int r = set_path(v, s, path);
    return r ? drop(v, r) : i;
}

CISC_API int cisc_vec_unlink(struct cisc_vec *v, const char *path)
{
    int i;
    struct wire_step *s = add(v, WIRE_STEP_UNLINK, &i);
    if (!s)
        return bad(v);
    int r = set_path(v, s, path);
    return r ? drop(v, r) : i;
}

/* A step on a file with no other operand; returns its index (the caller
 * fills its other fields through steps(v)[i]) or -errno. */
static int file_step(struct cisc_vec *v, uint8_t kind, int file)
{
    int i;
    struct wire_step *s = add(v, kind, &i);
    if (!s)
        return bad(v);
    int r = set_file(v, s, i, file);
    return r ? drop(v, r) : i;
}

CISC_API int cisc_vec_close(struct cisc_vec *v, int file)
{
    return file_step(v, WIRE_STEP_CLOSE, file);
}

CISC_API int cisc_vec_read(struct cisc_vec *v, int file, uint64_t off, size_t len)
{
    int i = file_step(v, WIRE_STEP_READ, file);
    if (i >= 0) {
        steps(v)[i].off = off;
        steps(v)[i].len = len;
    }
    return i;
}

CISC_API int cisc_vec_truncate(struct cisc_vec *v, int file, uint64_t size)
{
    int i = file_step(v, WIRE_STEP_TRUNCATE, file);
    if (i >= 0)
        steps(v)[i].off = size;
    return i;
}

CISC_API int cisc_vec_fsync(struct cisc_vec *v, int file, int datasync)
{
    int i = file_step(v, WIRE_STEP_FSYNC, file);
    if (i >= 0)
        steps(v)[i].flags2 = datasync ? 1 : 0;
    return i;
}

/* WRITE / APPEND: a file and a data input. */
static int data_step(struct cisc_vec *v, uint8_t kind, int file, uint64_t off,
                     struct cisc_src in)
{
    int i = file_step(v, kind, file);
    if (i < 0)
        return i;
    steps(v)[i].off = off;
    int r = set_in(v, &steps(v)[i], i, in);
    return r ? drop(v, r) : i;
}

CISC_API int cisc_vec_write(struct cisc_vec *v, int file, uint64_t off, struct cisc_src in)
{
    return data_step(v, WIRE_STEP_WRITE, file, off, in);
}

CISC_API int cisc_vec_append(struct cisc_vec *v, int file, struct cisc_src in)
{
    return data_step(v, WIRE_STEP_APPEND, file, 0, in);
}

/* ---- compute steps ----------------------------------------------------------------- */

static int compute(struct cisc_vec *v, uint8_t kind, struct cisc_src in, uint64_t arg0,
                   uint32_t key_id, uint64_t out_cap)
{
    int i;
    struct wire_step *s = add(v, kind, &i);
    if (!s)
        return bad(v);
    if (out_cap > UINT32_MAX)
        return drop(v, -E2BIG);
    s->arg[0] = arg0;
    s->key_id = key_id;
    s->out_cap = (uint32_t)out_cap;
    int r = set_in(v, s, i, in);
    return r ? drop(v, r) : i;
}

CISC_API int cisc_vec_crc32c(struct cisc_vec *v, struct cisc_src in, uint32_t seed)
{
    return compute(v, WIRE_STEP_CRC32C, in, seed, 0, 0);
}

CISC_API int cisc_vec_xxh3(struct cisc_vec *v, struct cisc_src in, uint64_t seed)
{
    return compute(v, WIRE_STEP_XXH3, in, seed, 0, 0);
}

CISC_API int cisc_vec_compress(struct cisc_vec *v, struct cisc_src in, int level)
{
    return compute(v, WIRE_STEP_ZSTD_COMPRESS, in, (uint64_t)(int64_t)level, 0, 0);
}

CISC_API int cisc_vec_decompress(struct cisc_vec *v, struct cisc_src in, size_t max_out)
{
    if (max_out == 0)
        return v && v->q ? fail(v, -EINVAL) : -EINVAL;
    return compute(v, WIRE_STEP_ZSTD_DECOMPRESS, in, 0, 0, max_out);
}

CISC_API int cisc_vec_encrypt(struct cisc_vec *v, struct cisc_src in, uint32_t key_id)
{
    return compute(v, WIRE_STEP_ENCRYPT, in, 0, key_id, 0);
}

CISC_API int cisc_vec_decrypt(struct cisc_vec *v, struct cisc_src in, uint32_t key_id)
{
    return compute(v, WIRE_STEP_DECRYPT, in, 0, key_id, 0);
}

/* VERIFY / PATCH / CONCAT: a step's output and a second operand. */
static int two(struct cisc_vec *v, uint8_t kind, int a, struct cisc_src b, uint64_t arg0)
{
    int i = compute(v, kind, cisc_in_step(a), arg0, 0, 0);
    if (i < 0)
        return i;
    int r = set_in2(v, &steps(v)[i], i, b);
    return r ? drop(v, r) : i;
}

CISC_API int cisc_vec_verify(struct cisc_vec *v, int a, struct cisc_src b)
{
    return two(v, WIRE_STEP_VERIFY, a, b, 0);
}

CISC_API int cisc_vec_patch(struct cisc_vec *v, int base, uint64_t at, struct cisc_src patch)
{
    return two(v, WIRE_STEP_PATCH, base, patch, at);
}

CISC_API int cisc_vec_concat(struct cisc_vec *v, int a, struct cisc_src b)
{
    return two(v, WIRE_STEP_CONCAT, a, b, 0);
}

_Static_assert((int)CISC_TX_MACRO == (int)WIRE_TX_MACRO &&
                   (int)CISC_TX_MICRO == (int)WIRE_TX_MICRO &&
                   (int)CISC_TX_AUTOREC == (int)WIRE_TX_AUTOREC &&
                   (int)CISC_TX_DEFAULT == (int)WIRE_TX_DEFAULT,
               "cisc_tx is wire_tx");

CISC_API int cisc_vec_set_tx(struct cisc_vec *v, int tx)
{
    if (bad(v))
        return bad(v);
    if (tx < CISC_TX_DEFAULT || tx > CISC_TX_AUTOREC || v->state == VEC_INFLIGHT)
        return fail(v, -EINVAL);
    v->tx = (unsigned)tx;
    return 0;
}

CISC_API int cisc_vec_independent(struct cisc_vec *v, int i)
{
    if (bad(v))
        return bad(v);
    if (i < 0 || (unsigned)i >= v->n || v->state != VEC_BUILDING)
        return fail(v, -EINVAL);
    steps(v)[i].flags |= WIRE_STEP_F_INDEPENDENT;
    return 0;
}

/* Whether cap bytes hold step s's whole output: a READ's length, or a
 * kind's fixed output size (proto/steps.h). */
static bool out_fits(const struct wire_step *s, size_t cap)
{
    if (s->kind == WIRE_STEP_READ)
        return cap >= s->len;
    return cap >= step_kind(s->kind)->out_size;
}

CISC_API int cisc_vec_out_to(struct cisc_vec *v, int i, void *buf, size_t cap)
{
    if (bad(v))
        return bad(v);
    if (i < 0 || (unsigned)i >= v->n || !buf || v->state != VEC_BUILDING)
        return fail(v, -EINVAL);
    struct wire_step *s = &steps(v)[i];
    if (!step_has(s->kind, STEP_OUTPUT) || (s->flags & WIRE_STEP_F_OUT_ARENA))
        return fail(v, -EINVAL);
    if (!out_fits(s, cap))
        return fail(v, -ENOSPC);
    if (cap > UINT32_MAX || cap == 0)
        return fail(v, cap ? -E2BIG : -ENOSPC);
    uint64_t off;
    if (!lc_arena_off(v->q, buf, cap, &off)) {   /* stage: copied after completion */
        int r = tmp_block(v, cap, &off);
        if (r)
            return fail(v, r);
        v->out[v->nout].step = (unsigned)i;
        v->out[v->nout].dst = buf;
        v->out[v->nout].aoff = off;
        v->out[v->nout++].cap = cap;
    }
    s->flags |= WIRE_STEP_F_OUT_ARENA;
    s->out_off = off;
    s->out_cap = (uint32_t)cap;
    return 0;
}

/* ---- submission and results ------------------------------------------------------- */

static void make_sqe(const struct cisc_vec *v, struct wire_sqe *e)
{
    memset(e, 0, sizeof(*e));
    e->opcode = WIRE_OP_CISC;
    e->nsteps = (uint16_t)v->n;
    e->flags = v->tx;   /* enum wire_tx */
    e->addr = v->area;
    e->len = v->n * sizeof(struct wire_step);
    e->res_off = v->area + STEP_BYTES;
    e->res_len = (uint32_t)(v->n * sizeof(struct wire_step_res));
}

/* Checks v is ready to go; results read "did not run" until the device
 * writes them. */
static int ready(struct cisc_vec *v)
{
    if (bad(v))
        return bad(v);
    if (v->state == VEC_INFLIGHT)
        return -EBUSY;
    if (v->n == 0)
        return -EINVAL;
    for (unsigned i = 0; i < v->n; i++)
        results(v)[i] = (struct wire_step_res){ -ECANCELED, 0 };
    return 0;
}

/* Takes the completion: status, outputs staged for the caller's buffers. */
static void complete(struct cisc_vec *v, const struct wire_cqe *c)
{
    v->state = VEC_DONE;
    v->status = c->res;
    v->ran = (unsigned)c->aux;
    for (unsigned k = 0; k < v->nout; k++) {
        const struct wire_step_res *r = &results(v)[v->out[k].step];
        if (r->ret < 0)
            continue;
        size_t n = r->out_len < v->out[k].cap ? (size_t)r->out_len : v->out[k].cap;
        memcpy(v->out[k].dst, lc_arena_ptr(v->q, v->out[k].aoff), n);
    }
}

/* A transport failure: nothing ran. */
static int64_t lost(struct cisc_vec *v, int err)
{
    v->state = VEC_DONE;
    v->status = err;
    v->ran = 0;
    return err;
}

CISC_API int cisc_vec_submit_async(struct cisc_vec *v)
{
    int r = ready(v);
    if (r)
        return r;
    struct wire_sqe e;
    make_sqe(v, &e);
    r = lc_submit(v->q, &e, 1, &v->token);
    if (r < 0)
        return r;
    v->state = VEC_INFLIGHT;
    return 0;
}

CISC_API int cisc_vec_submit_batch(struct cisc_vec *const *vs, unsigned n)
{
    if (!vs || n == 0)
        return -EINVAL;
    struct cisc_queue *q = vs[0] ? vs[0]->q : NULL;
    for (unsigned i = 0; i < n; i++) {
        int r = vs[i] && vs[i]->q == q ? ready(vs[i]) : -EINVAL;
        if (r)
            return r;
    }
    struct wire_sqe *e = malloc(n * (sizeof(*e) + sizeof(uint64_t)));
    if (!e)
        return -ENOMEM;
    uint64_t *tok = (uint64_t *)(e + n);
    for (unsigned i = 0; i < n; i++)
        make_sqe(vs[i], &e[i]);
    int r = lc_submit(q, e, n, tok);
    for (unsigned i = 0; r >= 0 && i < n; i++) {
        vs[i]->token = tok[i];
        vs[i]->state = VEC_INFLIGHT;
    }
    free(e);
    return r < 0 ? r : 0;
}

CISC_API int64_t cisc_vec_wait(struct cisc_vec *v)
{
    if (!v || !v->q)
        return -EINVAL;
    if (v->state != VEC_INFLIGHT)
        return v->state == VEC_DONE ? v->status : -EINVAL;
    struct wire_cqe c;
    int r = lc_wait(v->q, v->token, &c);
    if (r)
        return lost(v, r);
    complete(v, &c);
    return v->status;
}

CISC_API int64_t cisc_vec_poll(struct cisc_vec *v)
{
    if (!v || !v->q)
        return -EINVAL;
    if (v->state != VEC_INFLIGHT)
        return v->state == VEC_DONE ? v->status : -EINVAL;
    struct wire_cqe c;
    int r = lc_peek(v->q, v->token, &c);
    if (r == -EAGAIN)
        return r;
    if (r)
        return lost(v, r);
    complete(v, &c);
    return v->status;
}

CISC_API int64_t cisc_vec_submit(struct cisc_vec *v)
{
    int r = cisc_vec_submit_async(v);
    if (r)
        return v && v->q && v->state != VEC_INFLIGHT ? lost(v, r) : r;
    return cisc_vec_wait(v);
}

CISC_API int64_t cisc_vec_ret(const struct cisc_vec *v, int i)
{
    if (!v || !v->q || i < 0 || (unsigned)i >= v->n)
        return -EINVAL;
    if (v->state != VEC_DONE)
        return -EAGAIN;
    return results(v)[i].ret;
}

CISC_API uint64_t cisc_vec_out_len(const struct cisc_vec *v, int i)
{
    if (!v || !v->q || i < 0 || (unsigned)i >= v->n || v->state != VEC_DONE)
        return 0;
    return results(v)[i].out_len;
}

CISC_API unsigned cisc_vec_ran(const struct cisc_vec *v)
{
    return v && v->state == VEC_DONE ? v->ran : 0;
}

/* ---- keys ----------------------------------------------------------------------------- */

CISC_API int cisc_key_add(struct cisc_session *s, const uint8_t key[CISC_KEY_BYTES],
                          uint32_t *id)
{
    if (!s || !key || !id)
        return -EINVAL;
    uint8_t req[8 + CISC_KEY_BYTES], rep[4];
    le32_put(req, 1);   /* XChaCha20-Poly1305 IETF */
    le32_put(req + 4, CISC_KEY_BYTES);
    memcpy(req + 8, key, CISC_KEY_BYTES);
    int32_t st = 0;
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call(s->fd, CTL_KEY_ADD, req, sizeof(req), &st, rep, sizeof(rep));
    pthread_mutex_unlock(&s->lock);
    explicit_bzero(req, sizeof(req));
    int r = n < 0 ? (int)n : st ? st : n < 4 ? -EPROTO : 0;
    if (!r)
        *id = le32_get(rep);
    return r == -ECONNRESET ? -ENOTCONN : r;
}

CISC_API int cisc_key_remove(struct cisc_session *s, uint32_t id)
{
    if (!s)
        return -EINVAL;
    uint8_t req[4];
    le32_put(req, id);
    int32_t st = 0;
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call(s->fd, CTL_KEY_REMOVE, req, sizeof(req), &st, NULL, 0);
    pthread_mutex_unlock(&s->lock);
    int r = n < 0 ? (int)n : st;
    return r == -ECONNRESET ? -ENOTCONN : r;
}

/* ---- recovery records ---------------------------------------------------------- */

CISC_API ssize_t cisc_recovery_list(struct cisc_session *s, char *buf, size_t size)
{
    if (!s || (!buf && size))
        return -EINVAL;
    int32_t st = 0;
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call(s->fd, CTL_RECOVERY_LIST, NULL, 0, &st, buf, size);
    pthread_mutex_unlock(&s->lock);
    ssize_t r = n < 0 ? n : st ? st : n;
    if (r >= 0 && (size_t)r < size)
        buf[r] = '\0';
    return r == -ECONNRESET ? -ENOTCONN : r;
}

CISC_API int cisc_recovery_ack(struct cisc_session *s, const char *name)
{
    if (!s || !name)
        return -EINVAL;
    int32_t st = 0;
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call(s->fd, CTL_RECOVERY_ACK, name, strlen(name), &st, NULL, 0);
    pthread_mutex_unlock(&s->lock);
    int r = n < 0 ? (int)n : st;
    return r == -ECONNRESET ? -ENOTCONN : r;
}

/* ---- for step builders in other files (internal.h) ---------------------------- */

struct wire_step *lc_vec_add(struct cisc_vec *v, uint8_t kind, int *idx)
{
    return add(v, kind, idx);
}

int lc_vec_drop(struct cisc_vec *v, int err)
{
    return drop(v, err);
}

int lc_vec_bad(const struct cisc_vec *v)
{
    return bad(v);
}

int lc_vec_stage(struct cisc_vec *v, const void *buf, size_t len, uint64_t *off)
{
    return stage(v, buf, len, off);
}

int lc_vec_set_in(struct cisc_vec *v, struct wire_step *s, int self, struct cisc_src in)
{
    return set_in(v, s, self, in);
}
