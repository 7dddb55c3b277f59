/* device/engine/fused/decode.c - validation of a client's step vector into a
 * private struct eng_cisc (cisc.h, phase 1). Every rejection names the
 * step (v->bad_step) and returns an errno; nothing here trusts a field.
 * Which operands each kind takes comes from the table of step kinds
 * (proto/steps.h). */
#include "device/engine/fused/fused.h"

#include "device/engine/fused/bpfstep.h"
#include "device/compute/compute.h"
#include "proto/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define KNOWN_FLAGS (WIRE_STEP_F_INDEPENDENT | WIRE_STEP_F_OUT_ARENA | WIRE_STEP_F_FH)
#define OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_NOFOLLOW | \
                    O_CLOEXEC | O_NOATIME)

void *fop_arena_at(const struct eng_arena *a, uint64_t off, uint64_t len)
{
    if (!a || !a->base || off > a->size || len > a->size - off)
        return NULL;
    return a->base + off;
}

void fop_res_fill(struct eng_cisc *v, int64_t ret)
{
    for (unsigned i = 0; i < WIRE_MAX_STEPS; i++)
        v->res[i] = (struct wire_step_res){ ret, 0 };
}

void fop_fail(struct eng_cisc *v, unsigned i, int64_t err)
{
    v->res[i] = (struct wire_step_res){ err, 0 };
    for (unsigned j = i + 1; j < v->n; j++)
        v->res[j] = (struct wire_step_res){ -ECANCELED, 0 };
    v->status = err;
    v->bad_step = i;
}

void fop_fail_one(struct eng_cisc *v, unsigned i, int64_t err)
{
    v->res[i] = (struct wire_step_res){ err, 0 };
    if (v->status == 0) {
        v->status = err;
        v->bad_step = i;
    }
}

/* A reference to an earlier producing step, or none when allowed. */
static int check_ref(const struct eng_cisc *v, unsigned i, uint16_t ref, bool allowed)
{
    if (ref == WIRE_NO_STEP)
        return 0;
    if (!allowed || ref >= i || !step_has(v->st[ref].kind, STEP_OUTPUT))
        return -EINVAL;
    return 0;
}

/* Whether a kind's properties (props, its row's STEP_* bits) have all of want. */
static bool has(unsigned props, unsigned want)
{
    return (props & want) == want;
}

static int check_file_ref(const struct eng_cisc *v, unsigned i, const struct wire_step *w,
                          unsigned props)
{
    bool fh = w->flags & WIRE_STEP_F_FH;
    if (!has(props, STEP_FILE))
        return fh || w->file_step != WIRE_NO_STEP ? -EINVAL : 0;
    if (fh)
        return w->file_step == WIRE_NO_STEP ? 0 : -EINVAL;
    if (w->file_step >= i || v->st[w->file_step].kind != WIRE_STEP_OPEN)
        return -EINVAL;
    return 0;
}

static int copy_path(const struct eng_arena *a, const struct wire_step *w, char **out)
{
    if (w->alen == 0 || w->alen >= PATH_MAX)
        return w->alen ? -ENAMETOOLONG : -EINVAL;
    const char *p = fop_arena_at(a, w->addr, w->alen);
    if (!p)
        return -EFAULT;
    char *s = malloc(w->alen + 1u);
    if (!s)
        return -ENOMEM;
    memcpy(s, p, w->alen);   /* the one fetch: checked below, used from here */
    s[w->alen] = '\0';
    if (strlen(s) != w->alen) {
        free(s);
        return -EINVAL;
    }
    *out = s;
    return 0;
}

/* The arena operand (addr, alen), when the step uses one. */
static int arena_operand(const struct eng_arena *a, const struct wire_step *w,
                         struct fop_step *s)
{
    s->src_len = w->alen;
    s->src = fop_arena_at(a, w->addr, w->alen);
    return s->src ? 0 : -EFAULT;
}

/* Which operand the arena range feeds: the first input if in_step is
 * none, else the second (two-input kinds) if in2_step is none. */
static int operands(const struct eng_cisc *v, unsigned i, const struct wire_step *w,
                    unsigned props, const struct eng_arena *a, struct fop_step *s)
{
    bool two = has(props, STEP_INPUT2), uses_arena;
    int r = check_ref(v, i, w->in_step, has(props, STEP_INPUT));
    if (!r)
        r = check_ref(v, i, w->in2_step, two);
    if (r)
        return r;
    if (two && w->in_step == WIRE_NO_STEP)
        return -EINVAL;   /* the first operand of VERIFY/PATCH/CONCAT is a step */
    uses_arena = has(props, STEP_INPUT) &&
                 (w->in_step == WIRE_NO_STEP || (two && w->in2_step == WIRE_NO_STEP));
    if (uses_arena)
        return arena_operand(a, w, s);
    if (has(props, STEP_PATH))
        return copy_path(a, w, &s->path);
    return 0;
}

static uint64_t in_cap(const struct eng_cisc *v, uint16_t ref, const struct fop_step *s)
{
    return ref == WIRE_NO_STEP ? s->src_len : v->st[ref].cap;
}

/* Output capacity of step s (device memory), checked against lim. */
static int out_cap(const struct eng_cisc *v, const struct wire_step *w, struct fop_step *s,
                   const struct fop_limits *lim)
{
    if (w->kind == WIRE_STEP_READ) {
        s->cap = w->len;
    } else if (cmp_is_compute(w->kind)) {
        int r = cmp_check_args(w->kind, s->arg);
        if (r)
            return r;
        int64_t c = cmp_out_cap(w->kind, in_cap(v, w->in_step, s), in_cap(v, w->in2_step, s),
                                w->out_cap, s->arg);
        if (c < 0)
            return (int)c;
        s->cap = (uint64_t)c;
    }
    return s->cap > lim->step_bytes ? -E2BIG : 0;
}

static int out_arena(const struct wire_step *w, unsigned props, struct fop_step *s,
                     const struct eng_arena *a)
{
    if (!(w->flags & WIRE_STEP_F_OUT_ARENA))
        return 0;
    if (!has(props, STEP_OUTPUT) || w->out_cap < s->cap)
        return -EINVAL;   /* nothing to copy, or the output may not fit */
    s->dst_cap = w->out_cap;
    s->dst = fop_arena_at(a, w->out_off, w->out_cap);
    return s->dst ? 0 : -EFAULT;
}

static int kind_fields(const struct wire_step *w)
{
    if ((w->flags & ~KNOWN_FLAGS) || w->reserved)
        return -EINVAL;
    if (w->kind == WIRE_STEP_OPEN && ((w->flags2 & ~(uint32_t)OPEN_FLAGS) ||
                                      (w->flags2 & O_ACCMODE) == O_ACCMODE ||
                                      (w->mode & ~07777u)))
        return -EINVAL;
    if (w->kind == WIRE_STEP_FSYNC && w->flags2 > 1)
        return -EINVAL;
    if (w->kind == WIRE_STEP_TRUNCATE && w->off > (1ull << 60))
        return -EFBIG;
    return 0;
}

/* Bytes of device memory step s needs: its output buffer, plus a private
 * copy of an arena input that a parser (decompress, decrypt) reads. */
static uint64_t step_mem(const struct fop_step *s, unsigned props)
{
    bool parser = has(props, STEP_PARSER);
    return s->cap + (parser && s->in == WIRE_NO_STEP ? s->src_len : 0);
}

static int decode_one(struct eng_cisc *v, unsigned i, const struct wire_step *w,
                      const struct eng_arena *a, const struct fop_limits *lim)
{
    struct fop_step *s = &v->st[i];
    *s = (struct fop_step){ .kind = w->kind, .flags = w->flags, .in = w->in_step,
                             .in2 = w->in2_step, .file = w->file_step, .fh = w->fh,
                             .off = w->off, .len = w->len, .key_id = w->key_id,
                             .oflags = w->flags2, .mode = w->mode,
                             .arg = { w->arg[0], w->arg[1], 0, 0 } };
    const struct step_kind *k = step_kind(w->kind);   /* one table look per step */
    if (!k)
        return -EINVAL;
    int r = kind_fields(w);
    if (!r)
        r = check_file_ref(v, i, w, k->props);
    if (!r)
        r = operands(v, i, w, k->props, a, s);
    if (!r && w->kind == WIRE_STEP_BPF)   /* its own fields and capacity: bpfstep.c */
        r = fop_bpf_decode(w, a, s, in_cap(v, w->in_step, s), lim);
    else if (!r)
        r = out_cap(v, w, s, lim);
    if (!r)
        r = out_arena(w, k->props, s, a);
    if (!r)
        v->mem += step_mem(s, k->props);
    return r;
}

int fop_decode(struct eng_cisc *v, const struct wire_step *steps, unsigned n,
                const struct eng_arena *a, const struct fop_limits *lim,
                struct ckey_table *keys)
{
    /* Only the fields read before written: the step array is large. */
    v->n = 0;
    v->status = 0;
    v->ran = v->bad_step = 0;
    v->mem = 0;
    v->keys = keys;
    v->tx = WIRE_TX_DEFAULT;
    v->replay = NULL;
    /* The results of the vector's own steps only: replies carry v->n of
     * them (the other 64 - n slots were a third of a small op's decode). */
    for (unsigned i = 0; i < n && i < WIRE_MAX_STEPS; i++) {
        v->res[i] = (struct wire_step_res){ -ECANCELED, 0 };
        v->st[i].path = NULL;   /* fop_release frees the decoded ones */
    }
    if (n == 0 || n > WIRE_MAX_STEPS) {
        v->n = 0;
        v->status = -EINVAL;
        return -EINVAL;
    }
    v->n = n;
    for (unsigned i = 0; i < n; i++) {
        int r = decode_one(v, i, &steps[i], a, lim);
        if (!r)
            r = v->mem > lim->op_bytes ? -E2BIG : 0;
        if (r) {
            fop_res_fill(v, -ECANCELED);
            fop_fail(v, i, r);
            return r;
        }
    }
    return 0;
}

void fop_release(struct eng_cisc *v)
{
    for (unsigned i = 0; i < v->n && i < WIRE_MAX_STEPS; i++) {
        free(v->st[i].path);
        v->st[i].path = NULL;
    }
}
