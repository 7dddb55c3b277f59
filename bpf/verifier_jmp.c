/*
 * bpf/verifier_jmp.c - jumps: both sides of every conditional.
 *
 * Scalar comparisons refine both operands on each side (vs_refine); a side
 * that is impossible is not explored. Pointer comparisons are allowed only
 * between pointers into the same region, 64-bit and unsigned; comparing a
 * buffer pointer P with its end pointer E proves, on the side where
 * P <= E (or P < E) holds, that the bytes [0, P.off - E.off) (one more
 * for <) after P's base are inside the buffer. That range is given to
 * every register and spilled slot with P's id (the same variable part),
 * exactly like the kernel's packet ranges.
 */
#include <errno.h>

#include "bpf/verifier_int.h"

static uint16_t bit(unsigned r)
{
    return (uint16_t)(1u << r);
}

static unsigned negate(unsigned op)
{
    switch (op) {
    case VM_JEQ: return VM_JNE;
    case VM_JNE: return VM_JEQ;
    case VM_JGT: return VM_JLE;
    case VM_JGE: return VM_JLT;
    case VM_JLT: return VM_JGE;
    case VM_JLE: return VM_JGT;
    case VM_JSGT: return VM_JSLE;
    case VM_JSGE: return VM_JSLT;
    case VM_JSLT: return VM_JSGE;
    case VM_JSLE: return VM_JSGT;
    default: return op;   /* JSET: no negation among the opcodes */
    }
}

/* a OP b  ==  b swap(OP) a */
static unsigned swap_sides(unsigned op)
{
    switch (op) {
    case VM_JGT: return VM_JLT;
    case VM_JGE: return VM_JLE;
    case VM_JLT: return VM_JGT;
    case VM_JLE: return VM_JGE;
    default: return op;
    }
}

static void propagate(struct venv *env, const struct vreg *m);

static void mark_range_regs(struct vreg *regs, unsigned n, uint8_t type, uint32_t id,
                            uint32_t range)
{
    for (unsigned r = 0; r < n; r++)
        if (regs[r].type == type && regs[r].id == id && regs[r].range < range)
            regs[r].range = range;
}

void vm_mark_range(struct venv *env, uint8_t type, uint32_t id, uint32_t range)
{
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        mark_range_regs(fr->regs, VM_NREGS, type, id, range);
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].spill)
                mark_range_regs(&fr->slots[s].r, 1, type, id, range);
    }
    const struct vreg *g = vm_group_member(env, type, id);
    if (g)
        vm_back_note(env, g);
    vm_dist_range_learnt(env, type, id, range);
}

const struct vreg *vm_link_member(struct venv *env, uint32_t id)
{
    for (uint32_t f = 0; f < env->cur->nframes; f++)
        for (unsigned r = 0; r < VM_NREGS; r++) {
            const struct vreg *x = &env->cur->frames[f].regs[r];
            if (x->type == VT_SCALAR && x->id == id && x->sflags == 0)
                return x;
        }
    return NULL;
}

static void bound_var(struct venv *env, const struct vreg *p, int64_t limit, unsigned depth);
static void bound_var_op(struct venv *env, const struct vreg *p, int64_t limit, unsigned op,
                         unsigned depth);

/* p's v = vG + b + loff <= limit (invariant 7, lgid != 0): vG <= limit -
 * min(b + loff), which a plain member x = b + x.off of the link shows. */
static void bound_base_group(struct venv *env, const struct vreg *p, int64_t limit,
                             unsigned depth)
{
    const int64_t lim = (int64_t)1 << 40;
    const struct vreg *x = vm_link_member(env, p->lid);
    const struct vreg *g = vm_group_member(env, p->type, p->lgid);
    if (!x || !g || depth >= 4 || x->v.smin <= -lim || x->v.smin >= lim || limit >= lim)
        return;
    struct vreg gc = *g;   /* bound_var rewrites the registers g is one of */
    bound_var(env, &gc, limit - (x->v.smin + p->loff - x->off), depth + 1);
}

/* P <= E also bounds P's variable part: a buffer is at most
 * VM_MAX_BUF_SIZE bytes (the runtime's promise, bpf/abi.h), so
 * var + P.off <= VM_MAX_BUF_SIZE + E.off. */
void vm_bound_var(struct venv *env, const struct vreg *p, int64_t limit)
{
    bound_var(env, p, limit, 0);
}

static void bound_var(struct venv *env, const struct vreg *p, int64_t limit, unsigned depth)
{
    bound_var_op(env, p, limit, VM_JSLE, depth);
}

/* Narrows the variable part of p's group to `v op limit` (VM_JSLE: at
 * most, VM_JSGE: at least) and passes it on to what is linked with it. */
static void bound_var_op(struct venv *env, const struct vreg *p, int64_t limit, unsigned op,
                         unsigned depth)
{
    struct vm_scalar lim = vs_const((uint64_t)limit), v = p->v;
    bool within = op == VM_JSLE ? v.smax <= limit : v.smin >= limit;
    if (vs_is_const(&v) || within || !vs_refine(&v, &lim, op, true, true))
        return;   /* (within the limit already: nothing to learn, nothing to pass on) */
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            if (fr->regs[r].type == p->type && fr->regs[r].id == p->id)
                fr->regs[r].v = v;
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].spill && fr->slots[s].r.type == p->type &&
                fr->slots[s].r.id == p->id)
                fr->slots[s].r.v = v;
    }
    if (p->lid && p->lgid && op == VM_JSLE)
        bound_base_group(env, p, limit, depth);
    if (p->lid && !p->lgid) {   /* v = b + loff: the linked scalars learn it too */
        struct vreg m;
        vm_mark_scalar(&m, v);
        m.id = p->lid;
        m.off = p->loff;
        m.sflags = p->sflags & VS_LZEXT ? VS_ZEXT : (uint8_t)(p->sflags & VS_SCALE_MASK);
        propagate(env, &m);
    }
}

/* Pointers linked from the start (invariant 7: v = b + loff, lgid 0)
 * after a join: b's range, which a plain member x = b + x.off of the link
 * shows, bounds v. (Widening moves v and x separately; `p += 64` beside
 * `base += 64` keeps p within what the test of base allows.) */
void vm_link_narrow(struct venv *env)
{
    const int64_t lim = (int64_t)1 << 40;
    struct vframe *fr = vm_curframe(env);
    for (unsigned r = 0; r < VM_REG_FP; r++) {
        const struct vreg *p = &fr->regs[r];
        if ((p->type != VT_IN && p->type != VT_OUT) || !p->lid || p->lgid ||
            (p->sflags & (VS_WILD | VS_LZEXT | VS_SCALE_MASK)))
            continue;
        const struct vreg *x = vm_link_member(env, p->lid);
        if (!x || x->v.smax >= lim || x->v.smin <= -lim)
            continue;
        int64_t limit = x->v.smax - x->off + p->loff;
        if (p->v.smax > limit) {
            struct vreg pc = *p;   /* bound_var rewrites the registers p is one of */
            vm_bound_var(env, &pc, limit);
        }
    }
}

/* P = base + vG + b + loff (invariant 7) proved `range` bytes: the
 * scalars linked with b are bounded by the distance from the pointers of
 * group lgid (the start when 0) to the end. */
static void link_dist_regs(struct vreg *regs, unsigned n, const struct vreg *p, int64_t range)
{
    bool zext = p->sflags & VS_LZEXT;
    for (unsigned r = 0; r < n; r++) {
        struct vreg *x = &regs[r];
        if (x->type != VT_SCALAR || x->id != p->lid)
            continue;
        /* zext32(b + loff) is b + loff where x shows that it fits */
        int64_t d = (int64_t)p->loff - x->off;
        bool fits = x->v.smin + d >= 0 && x->v.smax + d <= (int64_t)UINT32_MAX &&
                    x->v.smax < ((int64_t)1 << 40) && x->v.smin > -((int64_t)1 << 40);
        if ((!zext || fits) && x->sflags == 0)
            vm_dist_add(x, vm_buf_index(p->type), p->lgid,
                        (int64_t)p->loff + range - x->off);
        else if (zext && x->sflags == VS_ZEXT && x->off == p->loff)
            vm_dist_add(x, vm_buf_index(p->type), 0, range);
    }
}

static void link_dist(struct venv *env, const struct vreg *p, int64_t range)
{
    if (!p->lid || vm_link_scale(p->sflags))   /* (b + loff) << k: no distance for b */
        return;
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        link_dist_regs(fr->regs, VM_NREGS, p, range);
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].spill)
                link_dist_regs(&fr->slots[s].r, 1, p, range);
    }
}

/* Applies what "P op E" (P a buffer pointer, E its end) proves. */
static void learn_range(struct venv *env, const struct vreg *p, const struct vreg *e,
                        unsigned op)
{
    int64_t range;
    if ((p->sflags | e->sflags) & VS_WILD)
        return;
    /* E = END + off + v (a variable part only where E walks back,
     * invariant 12): at most END + ehi */
    int64_t ehi = (int64_t)e->off + e->v.smax;
    struct vreg pe = *p;   /* P relative to E's end */
    pe.off = (int32_t)((int64_t)p->off - e->off);
    if (op == VM_JLE || op == VM_JEQ)
        range = (int64_t)p->off - ehi;
    else if (op == VM_JLT || (op == VM_JNE && vs_is_const(&e->v) && vm_dist_le_end(&pe)))
        range = (int64_t)p->off - ehi + 1;   /* P <= E known and P != E: P < E */
    else
        return;
    if (range > 0 && range <= VM_MAX_VAR_OFF)
        vm_mark_range(env, p->type, p->id, (uint32_t)range);
    if (range >= 0 && range <= VM_MAX_VAR_OFF)   /* P <= E even with no byte proved */
        link_dist(env, p, range);
    if (p->id != 0)
        vm_bound_var(env, p, (int64_t)VM_MAX_BUF_SIZE + ehi - p->off);
    /* the bounds it gave scalars prove bytes for linked pointers */
}

static bool is_end(const struct vreg *r)
{
    return r->type == VT_IN_END || r->type == VT_OUT_END;
}

static int region(const struct vreg *r)
{
    if (r->type == VT_IN_END)
        return VT_IN;
    if (r->type == VT_OUT_END)
        return VT_OUT;
    return r->type == VT_STACK ? VT_STACK + 16 * r->frame : r->type;
}

/* Learns ranges for the side where `a op b` holds (registers ra, rb):
 * for a buffer pointer below its end, and for an end pointer above a
 * buffer pointer (invariant 12). */
static void pointer_side(struct venv *env, const struct vreg *a, const struct vreg *b,
                         unsigned op, unsigned ra, unsigned rb)
{
    if (is_end(b) && !is_end(a)) {
        learn_range(env, a, b, op);
        if (rb < VM_NREGS)
            vm_back_learn(env, vm_reg(env, rb), a, swap_sides(op));
    } else if (is_end(a) && !is_end(b)) {
        learn_range(env, b, a, swap_sides(op));
        if (ra < VM_NREGS)
            vm_back_learn(env, vm_reg(env, ra), b, op);
    }
}

static bool side_learns(const struct vreg *a, const struct vreg *b, unsigned op)
{
    if (is_end(a) == is_end(b))
        return false;
    if (is_end(a))
        op = swap_sides(op);
    return op == VM_JLE || op == VM_JLT || op == VM_JEQ;
}

static int push_side(struct venv *env, uint32_t target)
{
    uint32_t saved_pc = env->pc, saved_be = env->cur->backedges;
    if (env->info[target].rpo <= env->info[saved_pc].rpo)
        env->cur->backedges++;
    int err = vm_state_push(env, target);
    env->cur->backedges = saved_be;
    return err;
}

static void go(struct venv *env, uint32_t target)
{
    if (env->info[target].rpo <= env->info[env->pc].rpo)
        env->cur->backedges++;
    env->pc = target;
}

/* P == E and P != E: both sides may learn (== the range up to E, != one
 * byte when P <= E was known), so the taken side is queued from a copy. */
static int pointer_eq(struct venv *env, const struct vreg *a, const struct vreg *b,
                      unsigned op, uint32_t target, unsigned ra, unsigned rb)
{
    struct vsnap *before = vm_snap_take(env->cur);
    if (!before)
        return -ENOMEM;
    pointer_side(env, a, b, op, ra, rb);
    int err = push_side(env, target);
    vm_snap_restore(env->cur, before);
    vm_snap_free(before);
    if (!err) {
        pointer_side(env, a, b, negate(op), ra, rb);
        go(env, env->pc + 1);
    }
    return err;
}

/* `p == 0` / `p != 0` (a function's pointer-or-NULL result tested): both
 * sides go on with the state as it is. Nothing is learnt, and the side a
 * valid pointer never takes is checked all the same, so this is sound
 * whatever the pointer's value; the scalar 0 of a NULL path decides its
 * own comparison in scalar_cond. */
static int null_test(struct venv *env, uint32_t target)
{
    int err = push_side(env, target);
    if (!err)
        go(env, env->pc + 1);
    return err;
}

/* --- two pointers into one buffer ------------------------------------------------- */

/* Their places (offset from the buffer's start, off + v) differ by d in
 * [*lo, *hi]: exactly when they share the variable part. */
static bool place_diff(const struct vreg *a, const struct vreg *b, int64_t *lo, int64_t *hi)
{
    if ((a->sflags | b->sflags) & VS_WILD)
        return false;
    if (a->id == b->id && a->id != 0) {
        *lo = *hi = (int64_t)a->off - b->off;
        return true;
    }
    *lo = (int64_t)a->off + a->v.smin - b->off - b->v.smax;
    *hi = (int64_t)a->off + a->v.smax - b->off - b->v.smin;
    return true;
}

/* Whether `d op 0` can hold for some d in [lo, hi]. */
static bool diff_can(int64_t lo, int64_t hi, unsigned op)
{
    switch (op) {
    case VM_JEQ: return lo <= 0 && hi >= 0;
    case VM_JNE: return lo != 0 || hi != 0;
    case VM_JGT: return hi > 0;
    case VM_JGE: return hi >= 0;
    case VM_JLT: return lo < 0;
    default:     return lo <= 0;   /* VM_JLE */
    }
}

/* place(a) + gap <= place(b) (gap 0 or 1; place = off + v): a's variable
 * part is at most b's greatest place less a.off and the gap, b's at least
 * a's least place plus the gap less b.off; and what b proved, END >= base
 * + b.v + b.range, proves base + a.v + R <= END for R = b.range - b.off +
 * a.off + gap, since a.v <= b.v + b.off - a.off - gap. */
static void learn_before(struct venv *env, const struct vreg *a, const struct vreg *b,
                         int64_t gap)
{
    if (a->id)   /* (id 0: the start pointers, whose variable part is not one value) */
        bound_var_op(env, a, (int64_t)b->off + b->v.smax - gap - a->off, VM_JSLE, 0);
    if (b->id)
        bound_var_op(env, b, (int64_t)a->off + a->v.smin + gap - b->off, VM_JSGE, 0);
    int64_t range = (int64_t)b->range - b->off + a->off + gap;
    if (b->range > 0 && range > (int64_t)a->range && range <= VM_MAX_VAR_OFF)
        vm_mark_range(env, a->type, a->id, (uint32_t)range);
}

/* What `a op b` says of two pointers into the same buffer (a and b as
 * they were before the test; the registers are refined). */
static void pair_side(struct venv *env, const struct vreg *a, const struct vreg *b, unsigned op)
{
    if ((a->id == b->id && a->id != 0) || (a->sflags | b->sflags) & VS_WILD)
        return;   /* decided by their offsets, or nothing known */
    switch (op) {
    case VM_JEQ: learn_before(env, a, b, 0); learn_before(env, b, a, 0); break;
    case VM_JGT: learn_before(env, b, a, 1); break;
    case VM_JGE: learn_before(env, b, a, 0); break;
    case VM_JLT: learn_before(env, a, b, 1); break;
    case VM_JLE: learn_before(env, a, b, 0); break;
    default:     break;
    }
}

/* `a op b` for two pointers into the same input or output buffer, neither
 * its end (clang's `q > p` of a loop walking back to a line's start, `q <
 * eol` of one walking up to a line's end): the difference of their
 * places decides the test where it can, and each side learns bounds on
 * the pointers' variable parts and the bytes proved (pair_side). */
static int pointer_pair(struct venv *env, const struct vreg *a, const struct vreg *b,
                        unsigned op, uint32_t target)
{
    int64_t lo, hi;
    bool known = place_diff(a, b, &lo, &hi);
    bool can_take = !known || diff_can(lo, hi, op);
    bool can_fall = !known || diff_can(lo, hi, negate(op));
    if (can_take && can_fall) {
        struct vsnap *before = vm_snap_take(env->cur);
        if (!before)
            return -ENOMEM;
        pair_side(env, a, b, op);
        int err = push_side(env, target);
        vm_snap_restore(env->cur, before);
        vm_snap_free(before);
        if (err)
            return err;
    }
    if (can_fall) {
        pair_side(env, a, b, negate(op));
        go(env, env->pc + 1);
        return 0;
    }
    if (can_take) {
        pair_side(env, a, b, op);
        go(env, target);
        return 0;
    }
    return 1;
}

static int pointer_cond(struct venv *env, const struct vm_insn *insn, uint32_t target)
{
    unsigned op = VM_OP(insn->code), dst = vm_dst(insn), src = vm_src(insn);
    bool x = VM_SRC(insn->code) == VM_X;
    const struct vreg *a = vm_reg(env, dst);
    struct vreg kb;
    const struct vreg *b = x ? vm_reg(env, src) : &kb;
    if (!x)
        vm_mark_scalar(&kb, vs_const((uint64_t)(int64_t)insn->imm));
    unsigned p = vm_is_ptr(a) ? dst : src;
    const struct vreg *other = vm_is_ptr(a) ? b : a;
    bool null = other->type == VT_SCALAR && vs_is_const(&other->v) && other->v.t.value == 0;
    if (null && (op == VM_JEQ || op == VM_JNE) && VM_CLS(insn->code) == VM_CLS_JMP)
        return null_test(env, target);
    if (!vm_is_ptr(a) || !vm_is_ptr(b))
        return vm_verr(env, bit(p) | (x ? bit(src) | bit(dst) : 0), "R%u (pointer to %s) is "
                       "compared with a scalar: pointers may only be compared with pointers "
                       "into the same region, or tested against 0 in 64 bits (`p == 0`)",
                       p, vm_vtype_desc(vm_reg(env, p)->type));
    if (VM_CLS(insn->code) == VM_CLS_JMP32)
        return vm_verr(env, bit(dst) | bit(src), "32-bit comparison of pointers is not "
                       "allowed");
    if (region(a) != region(b))
        return vm_verr(env, bit(dst) | bit(src), "comparing a pointer to %s with a pointer "
                       "to %s is not allowed", vm_vtype_desc(a->type), vm_vtype_desc(b->type));
    if (op != VM_JEQ && op != VM_JNE && op != VM_JGT && op != VM_JGE && op != VM_JLT &&
        op != VM_JLE)
        return vm_verr(env, bit(dst) | bit(src), "pointers may only be compared with "
                       "unsigned comparisons (==, !=, <, <=, >, >=)");
    struct vreg ca = *a, cb = *b;
    unsigned ra = dst, rb = x ? src : VM_NREGS;
    if ((a->type == VT_IN || a->type == VT_OUT) && a->type == b->type)
        return pointer_pair(env, &ca, &cb, op, target);
    if (op == VM_JEQ || op == VM_JNE)
        return pointer_eq(env, &ca, &cb, op, target, ra, rb);
    /* At most one side learns (<=, < or == of the buffer pointer with the
     * end: its range, and the end pointer's lower bound): that side
     * continues after the other, unchanged, is queued. */
    if (side_learns(&ca, &cb, op)) {
        int err = push_side(env, env->pc + 1);
        if (!err) {
            pointer_side(env, &ca, &cb, op, ra, rb);
            go(env, target);
        }
        return err;
    }
    int err = push_side(env, target);
    if (!err) {
        pointer_side(env, &ca, &cb, negate(op), ra, rb);
        go(env, env->pc + 1);
    }
    return err;
}

/* Narrows x with the fact that it lies in `fact` (ignored if that
 * contradicts, which only an imprecise fact could). */
static void narrow(struct vm_scalar *x, struct vm_scalar fact)
{
    struct vm_scalar y = *x;
    if (vs_refine(&y, &fact, VM_JEQ, true, true))
        *x = y;
}

static int64_t floor_to(int64_t v, int64_t w)
{
    return v >= 0 ? v / w : -((-v + w - 1) / w);
}

/* m = (b + m.off) mod 2^bits was refined (bits 8: VS_LOW8, 32: VS_ZEXT),
 * x = b + x.off: y = x + (m.off - x.off) is congruent to m modulo 2^bits,
 * so within each 2^bits-aligned window that y's range spans, y lies in
 * [window + m.umin, window + m.umax]. (-O2's `(__u32)(len - 1) > 6`
 * bounds len to [1, 7] this way: the window below 0 holds only -1, whose
 * low half is 0xffffffff.) */
static void refine_mod(struct vreg *x, const struct vreg *m, unsigned bits)
{
    const int64_t lim = (int64_t)1 << 40, win = (int64_t)1 << bits;   /* no wrap-around below */
    if (x->v.smin <= -lim || x->v.smax >= lim || m->v.umax >= (uint64_t)win)
        return;
    int64_t delta = (int64_t)m->off - x->off;
    int64_t ylo = x->v.smin + delta, yhi = x->v.smax + delta, lo = INT64_MAX, hi = INT64_MIN;
    if ((yhi - ylo) / win > 16)
        return;   /* too many windows to be worth it */
    for (int64_t w = floor_to(ylo, win) * win; w <= yhi; w += win) {
        int64_t a = w + (int64_t)m->v.umin, b = w + (int64_t)m->v.umax;
        a = a < ylo ? ylo : a;
        b = b > yhi ? yhi : b;
        if (a <= b) {
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
        }
    }
    if (lo <= hi)
        narrow(&x->v, vs_srange(lo - delta, hi - delta));
}

/* y = b + off of a member x, shifted to another member's off (d = that
 * off - x's): its signed range if it lies in [0, 2^(63-k)), where
 * y << k does not wrap. */
static bool unwrapped(const struct vreg *x, int64_t d, unsigned k, int64_t *lo, int64_t *hi)
{
    const int64_t lim = (int64_t)1 << 40;
    if (x->v.smin <= -lim || x->v.smax >= lim)
        return false;
    *lo = x->v.smin + d;
    *hi = x->v.smax + d;
    return *lo >= 0 && *hi < ((int64_t)1 << (63 - k));
}

/* m and x linked, one of them scaled by k (the other plain): y << k = the
 * scaled one, with y = b + off of the plain one moved to the scaled one's
 * off. Where y << k does not wrap (the plain one's range shows it), a
 * bound on either gives one on the other. */
static void refine_scaled(struct vreg *x, const struct vreg *m)
{
    bool m_scaled = vm_link_scale(m->sflags) != 0;
    unsigned k = vm_link_scale(m_scaled ? m->sflags : x->sflags);
    const struct vreg *plain = m_scaled ? x : m;
    int64_t d = (int64_t)(m_scaled ? m->off : x->off) - plain->off, lo, hi;
    if (!unwrapped(plain, d, k, &lo, &hi))
        return;
    if (m_scaled) {   /* y = m >> k exactly; x = y - d */
        int64_t mlo = m->v.smin > 0 ? m->v.smin : 0, mhi = m->v.smax;
        int64_t ylo = (mlo + ((int64_t)1 << k) - 1) >> k, yhi = mhi >> k;
        if (ylo <= yhi)
            narrow(&x->v, vs_srange(ylo - d, yhi - d));
    } else {          /* x = y << k, y = m + d */
        narrow(&x->v, vs_srange(lo << k, hi << k));
    }
}

/* What refining m tells about x, another member of m's link group. */
static void refine_linked(struct vreg *x, const struct vreg *m)
{
    unsigned km = vm_link_scale(m->sflags), kx = vm_link_scale(x->sflags);
    if (km || kx) {
        if ((km && x->sflags == 0) || (kx && m->sflags == 0))
            refine_scaled(x, m);
        else if (km && m->sflags == x->sflags && m->off == x->off)
            narrow(&x->v, m->v);
        return;
    }
    if (m->sflags == VS_LOW8) {
        if (x->sflags == 0)
            refine_mod(x, m, 8);
        else if (x->sflags == VS_LOW8 && x->off == m->off)
            narrow(&x->v, m->v);
        return;
    }
    if (m->sflags == 0 && (x->sflags == 0 || x->sflags == VS_ZEXT)) {
        struct vm_scalar b = m->v, d = vs_const((uint64_t)((int64_t)x->off - m->off));
        vs_alu(&b, &d, VM_ADD, true, false);   /* b + x's delta */
        if (x->sflags == VS_ZEXT)
            vs_trunc(&b, 4);
        narrow(&x->v, b);
    } else if (m->sflags == VS_ZEXT && x->off == m->off) {
        if (x->sflags == VS_ZEXT) {
            narrow(&x->v, m->v);
        } else if (x->sflags == 0) {
            bool empty = false;
            if (m->v.umin > x->v.u32min)
                x->v.u32min = (uint32_t)m->v.umin;
            if (m->v.umax < x->v.u32max)
                x->v.u32max = (uint32_t)m->v.umax;
            x->v.t = tn_with_low32(x->v.t, tn_intersect(tn_trunc(x->v.t, 4), m->v.t, &empty));
            vs_sync(&x->v);
        }
    } else if (m->sflags == VS_ZEXT && x->sflags == 0) {
        refine_mod(x, m, 32);   /* zext32(b - 1) beside b */
    }
}

static void refine_regs(struct vreg *regs, unsigned n, const struct vreg *m)
{
    for (unsigned r = 0; r < n; r++)
        if (&regs[r] != m && regs[r].type == VT_SCALAR && regs[r].id == m->id)
            refine_linked(&regs[r], m);
}

/* Passes a refinement of register m on to the registers and spilled
 * slots linked with it (verifier_int.h invariant 5). */
static void propagate(struct venv *env, const struct vreg *m)
{
    if (m->type != VT_SCALAR || m->id == 0 || (m->sflags & VS_SHL32))
        return;
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        refine_regs(fr->regs, VM_NREGS, m);
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].spill)
                refine_regs(&fr->slots[s].r, 1, m);
    }
}

/* Installs the refined values of the side where `dst op src` holds. */
static void set_side(struct venv *env, const struct vm_insn *insn, unsigned op,
                     const struct vm_scalar *a, const struct vm_scalar *b, bool zone)
{
    struct vreg *d = vm_reg(env, vm_dst(insn));
    d->v = *a;
    if (VM_SRC(insn->code) == VM_X && vm_src(insn) != vm_dst(insn)) {
        struct vreg *s = vm_reg(env, vm_src(insn));
        s->v = *b;
        propagate(env, s);
        vm_dist_cmp(d, s, op, VM_CLS(insn->code) == VM_CLS_JMP);
        if (zone)   /* (only where the other side does not share the state) */
            vm_zone_cmp(env, d, s, op, VM_CLS(insn->code) == VM_CLS_JMP);
        vm_dist_links(env, d);   /* a bound a comparison passed on holds for the group */
        vm_dist_links(env, s);
    }
    propagate(env, d);
    if (zone)
        vm_zone_narrow(env);
    vm_dist_learn(env);
}

bool vm_jmp_pin(struct venv *env, unsigned regno, uint64_t k)
{
    struct vreg *r = vm_reg(env, regno);
    struct vm_scalar a = r->v, b = vs_const(k);
    if (r->type != VT_SCALAR || !vs_refine(&a, &b, VM_JEQ, true, true))
        return false;
    const struct vm_insn eq = {VM_CLS_JMP | VM_JEQ | VM_K, (uint8_t)regno, 0, 0};
    set_side(env, &eq, VM_JEQ, &a, &b, true);   /* the pinned path has its own state */
    return true;
}

/* The second operand of a scalar test: the register, or the immediate
 * (sign-extended for 64-bit tests, zero-extended for 32-bit ones). */
static struct vreg operand_of(struct venv *env, const struct vm_insn *insn)
{
    struct vreg k;
    if (VM_SRC(insn->code) == VM_X)
        return *vm_reg(env, vm_src(insn));
    vm_mark_scalar(&k, vs_const(VM_CLS(insn->code) == VM_CLS_JMP ? (uint64_t)(int64_t)insn->imm
                                                               : (uint32_t)insn->imm));
    return k;
}

/* `a == b` / `a != b` (invariant 9): a difference known decides the test;
 * otherwise, when both sides are possible, the values are named so that
 * the `!=` side can record it. Returns the side on which they differ (1
 * taken, 0 fall-through), -1 for none. */
static int neq_side(struct venv *env, const struct vm_insn *insn, bool *can_take,
                    bool *can_fall)
{
    unsigned op = VM_OP(insn->code), dst = vm_dst(insn), src = vm_src(insn);
    bool x = VM_SRC(insn->code) == VM_X;
    if ((op != VM_JEQ && op != VM_JNE) || (x && src == dst))
        return -1;
    struct vreg *a = vm_reg(env, dst), b = operand_of(env, insn);
    int side = op == VM_JNE ? 1 : 0;
    if (vm_neq_known(env, a, &b, VM_CLS(insn->code) == VM_CLS_JMP)) {
        if (side)
            *can_fall = false;   /* they differ: `==` is impossible */
        else
            *can_take = false;
        return -1;
    }
    if (!*can_take || !*can_fall || (vs_is_const(&a->v) && vs_is_const(&b.v)))
        return -1;
    vm_neq_name(env, a);
    if (x)
        vm_neq_name(env, vm_reg(env, src));
    return side;
}

static void neq_note(struct venv *env, const struct vm_insn *insn, int side, int here)
{
    if (side == here) {
        struct vreg b = operand_of(env, insn);
        vm_neq_add(env, vm_reg(env, vm_dst(insn)), &b);
    }
}

static int scalar_cond(struct venv *env, const struct vm_insn *insn, uint32_t target)
{
    unsigned op = VM_OP(insn->code), dst = vm_dst(insn), src = vm_src(insn);
    bool x = VM_SRC(insn->code) == VM_X, is64 = VM_CLS(insn->code) == VM_CLS_JMP;
    struct vreg *d = vm_reg(env, dst);
    struct vm_scalar imm = vs_const(is64 ? (uint64_t)(int64_t)insn->imm : (uint32_t)insn->imm);
    struct vm_scalar a0 = d->v, b0 = x ? vm_reg(env, src)->v : imm;
    struct vm_scalar at = a0, bt = b0, af = a0, bf = b0;
    bool same = x && src == dst;
    bool can_take = vs_refine(&at, same ? &at : &bt, op, is64, true);
    bool can_fall = vs_refine(&af, same ? &af : &bf, op, is64, false);
    int neq = neq_side(env, insn, &can_take, &can_fall);
    if (can_take && can_fall) {
        /* both sides change linked registers (or, through a distance
         * bound, pointers): queue a copy of the taken side made from a
         * snapshot of the state before refinement */
        const struct vreg *sr = x ? vm_reg(env, src) : NULL;
        bool linked = d->id || d->dist || (sr && (sr->id || sr->dist)) ||
                      (sr && vm_zone_cmp_wants(env, d, sr));   /* a difference it records */
        struct vsnap *before = linked ? vm_snap_take(env->cur) : NULL;
        if (linked && !before)
            return -ENOMEM;
        set_side(env, insn, op, &at, &bt, before != NULL);
        neq_note(env, insn, neq, 1);
        int err = push_side(env, target);
        if (before)
            vm_snap_restore(env->cur, before);
        vm_snap_free(before);
        if (err)
            return err;
    }
    if (can_fall) {
        set_side(env, insn, negate(op), &af, &bf, true);
        neq_note(env, insn, neq, 0);
        go(env, env->pc + 1);
        return 0;
    }
    if (can_take) {
        set_side(env, insn, op, &at, &bt, true);
        go(env, target);
        return 0;
    }
    return 1;
}

int vm_check_jmp(struct venv *env, const struct vm_insn *insn)
{
    unsigned op = VM_OP(insn->code);
    bool is32 = VM_CLS(insn->code) == VM_CLS_JMP32;
    if (op == VM_JA) {
        go(env, env->pc + 1 + (uint32_t)(is32 ? insn->imm : insn->off));
        return 0;
    }
    uint32_t target = env->pc + 1 + (uint32_t)(int32_t)insn->off;
    int err = vm_check_reg_init(env, vm_dst(insn));
    if (!err && VM_SRC(insn->code) == VM_X)
        err = vm_check_reg_init(env, vm_src(insn));
    if (err)
        return err;
    bool x = VM_SRC(insn->code) == VM_X;
    if (vm_is_ptr(vm_reg(env, vm_dst(insn))) || (x && vm_is_ptr(vm_reg(env, vm_src(insn)))))
        return pointer_cond(env, insn, target);
    return scalar_cond(env, insn, target);
}
