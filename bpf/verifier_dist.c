/*
 * bpf/verifier_dist.c - distances to a buffer's end (verifier_int.h
 * invariant 6): the pointer-vs-end part of a zone domain.
 *
 * The kernel's packet ranges only learn from comparing a pointer with the
 * end pointer (`p + 4 > end`). Programs as clang emits them also compare
 * the *difference*: `end - p < 4`, `if (len > end - p - 2)`, pass
 * `end - p` to a helper as a size, or advance `p += n` by such a length.
 * A scalar made by `end - p` therefore remembers that it is bounded by the
 * distance from p's group of pointers (its buffer type and id, which stand
 * for one variable part v) to the end:
 *
 *     value <= END - (base + v) - doff          (signed)
 *
 * one such bound for the input and one for the output (a length checked
 * against both buffers, as a copy loop does, is bounded by both).
 * The relation survives copies and spills (it is part of the register),
 * moves with added or subtracted constants (doff changes), survives
 * operations that cannot make the value larger (subtracting a
 * non-negative number; on a non-negative value masking, right shifts,
 * unsigned division and modulo, a 32-bit copy of a value that fits), and
 * is passed on by comparisons: on the side where `n <= d`
 * holds, n is bounded by d's distance too. It is used three ways:
 *
 *   - a lower bound L on the scalar proves L + doff bytes after base + v:
 *     the range of every pointer of the group (vm_dist_learn);
 *   - as a helper's size for a pointer of the group at an offset no
 *     larger than doff, it keeps the access before the end
 *     (vm_dist_covers);
 *   - p + n for such an n is at most END - doff + p.off, which proves
 *     doff bytes after the new pointer's base (vm_dist_range_after_add);
 *   - p + n stays within the buffer's largest size from its start less
 *     doff, whatever p's and n's ranges add up to (vm_dist_var_limit);
 *   - it is an upper bound too: at most the buffer's largest size less
 *     the group's smallest variable part and doff (a counter that
 *     widening pushed past that comes back, vm_dist_learn).
 *
 * Soundness: each rule keeps "value <= distance" true of every concrete
 * state the abstract one stands for; joins keep a relation only when both
 * sides have it with the same pointer group (verifier_join.c), pruning
 * only lets a state without it be covered by one that did not need it
 * (verifier_state.c).
 */
#include "bpf/verifier_int.h"

#define DIST_LIMIT ((int64_t)1 << 40)   /* values stay far from wrapping */

static bool small(const struct vm_scalar *v)
{
    return v->smin > -DIST_LIMIT && v->smax < DIST_LIMIT;
}

static bool is_buf(uint8_t t)
{
    return t == VT_IN || t == VT_OUT;
}

/* Sets bound k (an upper bound only: the exact bit is cleared). */
static void set_bound(struct vreg *r, unsigned k, uint32_t id, int64_t doff)
{
    r->dist &= (uint8_t)~VM_DIST_EQ(k);
    if (doff < INT32_MIN || doff > INT32_MAX) {
        r->dist &= (uint8_t)~(1u << k);
        return;
    }
    r->dist |= (uint8_t)(1u << k);
    r->did[k] = id;
    r->doff[k] = (int32_t)doff;
}

static void drop_exact(struct vreg *r)
{
    r->dist &= (uint8_t)~(VM_DIST_EQ(0) | VM_DIST_EQ(1));
}

void vm_dist_add(struct vreg *x, unsigned k, uint32_t id, int64_t doff)
{
    bool has = x->dist >> k & 1;
    if (x->dist & VM_DIST_EQ(k))   /* exact: nothing is tighter */
        return;
    if (x->type == VT_SCALAR && (!has || (x->did[k] == id && x->doff[k] < doff)))
        set_bound(x, k, id, doff);
}

bool vm_dist_le_end(const struct vreg *p)
{
    /* base + v + range <= END, so p = base + v + off <= END if off <=
     * range; with nothing proved, only the start itself (id 0, v = 0) */
    bool start = p->id == 0 && vs_is_const(&p->v) && p->v.t.value == 0;
    return is_buf(p->type) && !(p->sflags & VS_WILD) && p->off <= (int64_t)p->range &&
           (p->range > 0 || start);
}

void vm_dist_copy(struct vreg *dst, const struct vreg *src)
{
    dst->dist = src->dist;
    for (unsigned k = 0; k < 2; k++) {
        dst->did[k] = src->did[k];
        dst->doff[k] = src->doff[k];
    }
}

void vm_dist_make(struct vreg *dst, const struct vreg *end, const struct vreg *p)
{
    /* D = END - (base + v) lies in [max(range, -vmax), MAX_BUF - vmin]:
     * the buffer is at most VM_MAX_BUF_SIZE bytes and p proved `range`.
     * The end pointer is END + off + ve (ve: a variable part where it
     * walked back, invariant 12): dst = D + off + ve - p.off. */
    int64_t elo = (int64_t)end->off + end->v.smin, ehi = (int64_t)end->off + end->v.smax;
    int64_t doff = (int64_t)p->off - ehi;
    int64_t lo = -p->v.smax, hi = (int64_t)VM_MAX_BUF_SIZE - p->v.smin;
    if ((int64_t)p->range > lo)
        lo = p->range;
    if (lo > hi)
        lo = hi;
    int64_t vlo = lo + elo - p->off, vhi = hi - doff;
    /* an end pointer above p's group: place(end) - place(p) >= doff' - p.off */
    unsigned k = vm_buf_index(p->type);
    if (vm_back_has(end) && end->did[k] == p->id && p->id != 0 &&
        (int64_t)end->doff[k] - p->off > vlo)
        vlo = (int64_t)end->doff[k] - p->off;
    if (vlo > vhi)
        vlo = vhi;
    vm_mark_scalar(dst, vs_srange(vlo, vhi));
    set_bound(dst, k, p->id, doff);
    if (dst->dist && vs_is_const(&end->v))
        dst->dist |= VM_DIST_EQ(k);   /* END - p exactly */
}

/* True if the operation cannot make a non-negative value larger. */
static bool shrinks(unsigned op, bool signed_op)
{
    return op == VM_AND || op == VM_RSH || ((op == VM_DIV || op == VM_MOD) && !signed_op);
}

void vm_dist_alu(struct vreg *dst, const struct vm_scalar *before, const struct vm_scalar *src,
                 const struct vm_insn *insn)
{
    unsigned op = VM_OP(insn->code);
    bool is64 = VM_CLS(insn->code) == VM_CLS_ALU64;
    if (!dst->dist)
        return;
    if ((op == VM_ADD || op == VM_SUB) && is64 && vs_is_const(src) && small(before) &&
        small(&dst->v)) {
        int64_t c = (int64_t)src->t.value;
        for (unsigned k = 0; k < 2; k++) {
            uint8_t eq = dst->dist & VM_DIST_EQ(k);   /* x + c - c' stays exact */
            if (dst->dist >> k & 1)
                set_bound(dst, k, dst->did[k], op == VM_ADD ? (int64_t)dst->doff[k] - c
                                                            : (int64_t)dst->doff[k] + c);
            if (dst->dist >> k & 1)
                dst->dist |= eq;
        }
        return;
    }
    drop_exact(dst);   /* what follows keeps only upper bounds */
    /* minus a non-negative (plus a non-positive) number: no larger */
    bool sub_pos = op == VM_SUB && src->smin >= 0, add_neg = op == VM_ADD && src->smax <= 0;
    if ((sub_pos || add_neg) && is64 && small(before) && small(src))
        return;
    /* result <= before when before >= 0 (32-bit: also when it fits) */
    if (shrinks(op, insn->off == 1) && before->smin >= 0 &&
        (is64 || before->umax <= UINT32_MAX))
        return;
    dst->dist = 0;
}

/* `lo <= hi` holds (strict: `lo < hi`): hi's bounds bound lo too, where
 * lo has none of its own for that buffer (an existing one may be tighter).
 * With replace, hi's bound replaces one lo has for another pointer group,
 * but never a tighter one for the same group: `r3 = end - p` counted down
 * with p and tested as `len s> r3` keeps r3's exact doff, not the looser
 * one len got from an earlier test. */
static void pass_down(struct vreg *lo, const struct vreg *hi, bool strict, bool replace)
{
    for (unsigned k = 0; k < 2; k++) {
        if (!(hi->dist >> k & 1))
            continue;
        int64_t doff = (int64_t)hi->doff[k] + (strict ? 1 : 0);
        bool has = lo->dist >> k & 1;
        if (has && lo->did[k] == hi->did[k] &&
            (lo->doff[k] >= doff || (lo->dist & VM_DIST_EQ(k))))
            continue;
        if (replace || !has)
            set_bound(lo, k, hi->did[k], doff);
    }
}

static bool fits_u32(const struct vreg *r)
{
    return r->v.smin >= 0 && r->v.umax <= UINT32_MAX;
}

static bool fits_s32(const struct vreg *r)
{
    return r->v.smin >= INT32_MIN && r->v.smax <= INT32_MAX;
}

void vm_dist_cmp(struct vreg *a, struct vreg *b, unsigned op, bool is64)
{
    bool sgn = op == VM_JSLE || op == VM_JSLT || op == VM_JSGE || op == VM_JSGT;
    bool le = op == VM_JLE || op == VM_JLT || op == VM_JSLE || op == VM_JSLT;
    bool ge = op == VM_JGE || op == VM_JGT || op == VM_JSGE || op == VM_JSGT;
    bool strict = op == VM_JLT || op == VM_JGT || op == VM_JSLT || op == VM_JSGT;
    if (a->type != VT_SCALAR || b->type != VT_SCALAR || !(a->dist || b->dist))
        return;
    /* the comparison must mean the same on the signed 64-bit values */
    bool ok = is64 ? sgn || (a->v.smin >= 0 && b->v.smin >= 0)
                   : sgn ? fits_s32(a) && fits_s32(b) : fits_u32(a) && fits_u32(b);
    if (!ok)
        return;
    if (op == VM_JEQ) {
        pass_down(a, b, false, false);
        pass_down(b, a, false, false);
    } else if (le) {
        pass_down(a, b, strict, true);
    } else if (ge) {
        pass_down(b, a, strict, true);
    }
}

/* x == END - (base + v) - doff and END - (base + v) >= range: x >= range -
 * doff (for the group id of buffer k). */
struct exact_arg {
    unsigned k;
    uint32_t id, range;
};

static void exact_learn(struct venv *env, struct vreg *x, const void *arg)
{
    const struct exact_arg *a = arg;
    (void)env;
    if (x->type != VT_SCALAR || !(x->dist & VM_DIST_EQ(a->k)) || x->did[a->k] != a->id ||
        x->v.smin >= (int64_t)a->range - x->doff[a->k])
        return;
    struct vm_scalar lo = vs_const((uint64_t)((int64_t)a->range - x->doff[a->k])), v = x->v;
    if (vs_refine(&v, &lo, VM_JSGE, true, true))
        x->v = v;
}

void vm_dist_range_learnt(struct venv *env, uint8_t type, uint32_t id, uint32_t range)
{
    struct exact_arg a = {vm_buf_index(type), id, range};
    vm_each_reg(env, exact_learn, &a);
}

/* y = x + (y.off - x.off) for members x, y of one link group (invariant
 * 5) when both are plain, or one is the zero-extension of a value the
 * other shows fits 32 bits. */
static bool same_base(const struct vreg *x, const struct vreg *y, int64_t *delta)
{
    int64_t d = (int64_t)y->off - x->off;
    if (x->sflags == 0 && y->sflags == 0) {
        *delta = d;
        return true;
    }
    const struct vreg *plain = x->sflags == 0 ? x : y->sflags == 0 ? y : NULL;
    const struct vreg *z = plain == x ? y : x;
    if (!plain || z->sflags != VS_ZEXT || !small(&plain->v))
        return false;
    int64_t to_z = (int64_t)z->off - plain->off;   /* b + z.off = plain + to_z */
    if (plain->v.smin + to_z < 0 || plain->v.smax + to_z > (int64_t)UINT32_MAX)
        return false;
    *delta = d;
    return true;
}

static void links_one(struct venv *env, struct vreg *y, const void *arg)
{
    const struct vreg *x = arg;
    int64_t delta;
    (void)env;
    if (y == x || y->type != VT_SCALAR || y->id != x->id || !same_base(x, y, &delta))
        return;
    for (unsigned k = 0; k < 2; k++)
        if (x->dist >> k & 1)
            vm_dist_add(y, k, x->did[k], (int64_t)x->doff[k] - delta);
}

void vm_dist_links(struct venv *env, const struct vreg *x)
{
    if (x->type == VT_SCALAR && x->id && x->dist && small(&x->v))
        vm_each_reg(env, links_one, x);
}

/* A pointer of the group (type, id), for its variable part. */
const struct vreg *vm_group_member(struct venv *env, uint8_t type, uint32_t id)
{
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            if (fr->regs[r].type == type && fr->regs[r].id == id &&
                !(fr->regs[r].sflags & VS_WILD))
                return &fr->regs[r];
    }
    return NULL;
}

/* Pointers linked from the start to x's group (invariant 7: v = b +
 * loff, lgid 0): x = b + x.off <= END - base - doff, so
 * base + v + (doff + x.off - loff) <= END: that many bytes are proved
 * after base + v (`p += 64` linked to `base += 64`, checked as `data +
 * base + 64 > end`). */
struct linked_arg {
    const struct vreg *x;
    unsigned k;
};

static void linked_range(struct venv *env, struct vreg *p, const void *arg)
{
    const struct linked_arg *a = arg;
    uint8_t type = a->k ? VT_OUT : VT_IN;
    if (p->type != type || p->lid != a->x->id || p->lgid ||
        (p->sflags & (VS_WILD | VS_LZEXT | VS_SCALE_MASK)))
        return;
    int64_t range = (int64_t)a->x->doff[a->k] + a->x->off - p->loff;
    if (range > 0 && range <= VM_MAX_VAR_OFF)
        vm_mark_range(env, type, p->id, (uint32_t)range);
}

static void link_learn(struct venv *env, const struct vreg *x, unsigned k)
{
    struct linked_arg a = {x, k};
    if (x->id && !x->sflags && !x->did[k] && small(&x->v))
        vm_each_reg(env, linked_range, &a);
}

/* s = b_a + b_b + s.loff (invariant 10) <= END - (base + vG) - d, and a
 * pointer P linked to group a from G (v_P = vG + b_a + P.loff): then a
 * member y = b_b + y.off of the other group is at most END - (base + v_P)
 * - (d + s.loff - P.loff - y.off): `n + k < oend - out`, then `(out + n)
 * + k`. */
static void sum_regs(struct vreg *regs, unsigned n, const struct vreg *s, unsigned k,
                     uint32_t other, const struct vreg *p)
{
    for (unsigned r = 0; r < n; r++) {
        struct vreg *y = &regs[r];
        if (y->type == VT_SCALAR && y->id == other && !y->sflags && small(&y->v))
            vm_dist_add(y, k, p->id, (int64_t)s->doff[k] + s->loff - p->loff - y->off);
    }
}

static void sum_for(struct venv *env, const struct vreg *s, unsigned k, const struct vreg *p)
{
    uint8_t type = k ? VT_OUT : VT_IN;
    if (p->type != type || !p->lid || p->lgid != s->did[k] ||
        (p->sflags & (VS_WILD | VS_LZEXT | VS_SCALE_MASK)) ||
        (p->lid != s->lid && p->lid != s->lgid))
        return;
    uint32_t other = p->lid == s->lid ? s->lgid : s->lid;
    for (uint32_t f = 0; f < env->cur->nframes; f++)
        sum_regs(env->cur->frames[f].regs, VM_NREGS, s, k, other, p);
}

static void sum_learn(struct venv *env, const struct vreg *s, unsigned k)
{
    if (!s->lid || !small(&s->v))
        return;
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        const struct vframe *fr = &env->cur->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            sum_for(env, s, k, &fr->regs[r]);
    }
}

static void learn_one(struct venv *env, const struct vreg *r)
{
    if (r->type != VT_SCALAR || !r->dist || r->v.smin <= -DIST_LIMIT)
        return;
    for (unsigned k = 0; k < 2; k++) {
        if (!(r->dist >> k & 1))
            continue;
        link_learn(env, r, k);
        sum_learn(env, r, k);
        uint8_t type = k ? VT_OUT : VT_IN;
        int64_t proved = r->v.smin + r->doff[k];   /* END - (base + v) >= proved */
        if (proved < 0)
            continue;
        if (proved > 0)
            vm_mark_range(env, type, r->did[k],
                          (uint32_t)(proved < VM_MAX_VAR_OFF ? proved : VM_MAX_VAR_OFF));
        const struct vreg *p = r->did[k] ? vm_group_member(env, type, r->did[k]) : NULL;
        if (p)   /* base + v <= END: v is at most the buffer's size */
            vm_bound_var(env, p, (int64_t)VM_MAX_BUF_SIZE - proved);
    }
}

/* value <= END - (base + v) - doff <= VM_MAX_BUF_SIZE - min(v) - doff: a
 * distance is also an upper bound (a counter that widening pushed past
 * the buffer's largest size comes back). */
static void dist_narrow(struct venv *env, struct vreg *r)
{
    if (r->type != VT_SCALAR || !r->dist)
        return;
    for (unsigned k = 0; k < 2; k++) {
        if (!(r->dist >> k & 1))
            continue;
        const struct vreg *p = r->did[k] ? vm_group_member(env, k ? VT_OUT : VT_IN, r->did[k])
                                         : NULL;
        int64_t vmin = p ? p->v.smin : 0;
        if (r->did[k] && !p)
            continue;
        int64_t limit = (int64_t)VM_MAX_BUF_SIZE - vmin - r->doff[k];
        if (r->v.smax > limit && vmin > -DIST_LIMIT) {
            struct vm_scalar lim = vs_const((uint64_t)limit), v = r->v;
            if (vs_refine(&v, &lim, VM_JSLE, true, true))
                r->v = v;
        }
    }
}

void vm_dist_learn(struct venv *env)
{
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++) {
            dist_narrow(env, &fr->regs[r]);
            learn_one(env, &fr->regs[r]);
        }
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].spill) {
                dist_narrow(env, &fr->slots[s].r);
                learn_one(env, &fr->slots[s].r);
            }
    }
}

/* The bound of s that applies to pointer p (same buffer, same group). */
static bool bound_for(const struct vreg *p, const struct vreg *s, int32_t *doff)
{
    unsigned k = vm_buf_index(p->type);
    if (!is_buf(p->type) || s->type != VT_SCALAR || !(s->dist >> k & 1) ||
        s->did[k] != p->id || (p->sflags & VS_WILD))
        return false;
    *doff = s->doff[k];
    return true;
}

bool vm_dist_covers(const struct vreg *p, const struct vreg *s)
{
    /* p = base + v + p.off >= base and s <= END - (base + v) - doff with
     * p.off <= doff: p + s <= END */
    int32_t doff;
    return bound_for(p, s, &doff) && p->off >= 0 && p->v.smin + p->off >= 0 &&
           p->off <= doff && s->v.smin >= 0;
}

int64_t vm_dist_var_limit(const struct vreg *p, const struct vreg *s)
{
    /* q = p + s: v_q = v + s <= END - base - doff <= VM_MAX_BUF_SIZE - doff
     * (the runtime's promise, bpf/abi.h) */
    int32_t doff;
    if (!s || !bound_for(p, s, &doff))
        return INT64_MAX;
    return (int64_t)VM_MAX_BUF_SIZE - doff;
}

uint32_t vm_dist_range_after_add(const struct vreg *p, const struct vreg *s)
{
    /* q = p + s: base + v_q = base + v + s <= END - doff, so doff bytes
     * after q's base + var are inside (q keeps p's fixed offset) */
    int32_t doff;
    if (!s || !bound_for(p, s, &doff) || doff <= 0)
        return 0;
    return (uint32_t)(doff < VM_MAX_VAR_OFF ? doff : VM_MAX_VAR_OFF);
}
