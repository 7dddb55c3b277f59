/*
 * bpf/verifier_zone.c - relations between scalars (verifier_int.h
 * invariant 13): the scalar part of a zone domain, plus sums.
 *
 * clang keeps a length check and the indexes it protects in separate
 * registers: rec_pascal tests `(__u32)(o + len + 1) <= oend - out` and
 * then writes out[o + k] for k < len and out[o + len]; str_reverse_lines
 * keeps `start + len == i` across a loop and reads p[start + k]. Ranges
 * alone cannot prove these: they need `k <= len - 1` (a difference bound,
 * the zone domain of PREVAIL) and `s = o + len` (a sum), which together
 * bound o + k by s - 1, and s by the distance to the end (invariant 6).
 *
 * The state keeps a few facts over the bases of scalar link groups
 * (invariant 5: a plain member is b + off):
 *
 *     VZ_LE   b_a - b_b <= c
 *     VZ_SUM  b_a = b_b + b_c + c
 *
 * over signed integers; every register a rule reads or writes for them is
 * "small" (|value| < 2^40), so the 64-bit values are those integers (a
 * sum made when its terms' registers were not small still holds where
 * they are: a group's members differ by 32-bit constants, so small
 * members mean small concrete bases, then and now). Entries name groups
 * held by registers or spilled slots; at most VM_MAX_ZONE, those no
 * register holds go first.
 *
 * Made by: naming a register that carries a sum link (invariant 10); a
 * comparison `x < y` (<=, ==; only where it means the same on the signed
 * 64-bit values, as verifier_dist.c's does) on the side where it holds,
 * when the state has a sum (differences are only ever used with one, and
 * a binary search's `lo < hi` would cost joins for nothing); joins, for
 * relations that hold between the joined top frame's registers and
 * spilled scalars in both states joined (derived from constants, groups
 * and facts, one or two steps deep) and that the joined ranges do not
 * imply. A join at a loop head drops a difference that loosened
 * (widening), so loops converge.
 *
 * Used by: a 64-bit add `d = x + y` (or `d = x + k`): when a fact says
 * s = x + z (+ c) and another bounds y - z, d <= s + const, so d gets the
 * distance bounds of a member of s's group (`o + k <= (o + len) - 1`);
 * when y is z itself, d is a member of s's group, with the range of the
 * group's members (its operands' ranges add up to more: -O1's `len +
 * start` beside the `i` it equals); `p + y` for a pointer linked to x
 * from the start is linked to s (invariant 7); after joins and
 * comparisons a sum bounds its terms (x = s - z - c), ranges and distance
 * bounds (x <= s - min z - c: the bound a loop head's widening dropped
 * from -O1's `start + len - 1 - k`, counted down beside k).
 *
 * Cost: joins try pairs and triples of at most ZCAND candidates (precise
 * small scalars that move between the two states), with cheap tests
 * before the derivations; the rest is linear in the (few) facts.
 *
 * Soundness: a fact is made only where it holds in every concrete state
 * (values named by a group never change; ids are never reused); a join
 * keeps only what both inputs imply. A rule uses a fact only when every
 * group it names is held by a register of the top frame that is precise
 * at that instruction (verifier_flow.c). Such a register's value was held,
 * in the same group, by a precise register or slot at every pruning point
 * before on the path, where subsumption pairs the groups and requires of
 * the current state every fact of the stored one over paired groups
 * (verifier_state.c), so a pruned path never lacks a fact the stored
 * state's exploration used.
 */
#include "bpf/verifier_int.h"

#define ZLIM ((int64_t)1 << 40)
#define ZNONE INT64_MAX

/* One state's top frame and facts, as the rules read them: entry i < 10
 * is register i, 10 + s the scalar spilled in slot s (NULL: none). */
#define ZV (VM_REG_FP + VM_NSLOTS)
struct zview {
    const struct vreg *v[ZV];
    bool p[ZV];                /* precise at the instruction */
    unsigned n;
    uint8_t idx[ZV];           /* the entries that are precise plain scalars */
    unsigned np;
    const struct vzone *z;
    uint32_t nz;
};

static bool small_v(const struct vm_scalar *v)
{
    return v->smin > -ZLIM && v->smax < ZLIM;
}

static bool plain(const struct vreg *r)
{
    return r->type == VT_SCALAR && r->id && r->sflags == 0 && small_v(&r->v);
}

static void build(struct zview *w, const struct vframe *fr, struct vm_masks mk,
                  const struct vzone *z, uint32_t nz)
{
    w->z = z;
    w->nz = nz;
    w->n = VM_REG_FP + fr->nslots;
    for (unsigned r = 0; r < VM_REG_FP; r++) {
        w->v[r] = &fr->regs[r];
        w->p[r] = mk.prec >> r & 1;
    }
    for (uint32_t k = 0; k < fr->nslots; k++) {
        const struct vslot *sl = &fr->slots[k];
        w->v[VM_REG_FP + k] = sl->spill && sl->r.type == VT_SCALAR ? &sl->r : NULL;
        w->p[VM_REG_FP + k] = mk.slots >> k & 1;
    }
    w->np = 0;
    for (unsigned i = 0; i < w->n; i++)
        if (w->v[i] && w->p[i] && plain(w->v[i]))
            w->idx[w->np++] = (uint8_t)i;
}

static void view_of(struct venv *env, struct zview *w)
{
    build(w, vm_curframe(env), vm_frame_masks(env, env->cur->nframes - 1), env->cur->zone,
          env->cur->nzone);
}

/* Whether build() gives frame fr an entry i (a register, or a spilled
 * scalar). */
static bool has_entry(const struct vframe *fr, unsigned i)
{
    if (i < VM_REG_FP)
        return true;
    if (i >= VM_REG_FP + fr->nslots)
        return false;
    const struct vslot *sl = &fr->slots[i - VM_REG_FP];
    return sl->spill && sl->r.type == VT_SCALAR;
}

/* The register or slot of frame fr for entry i. */
static struct vreg *entry(struct vframe *fr, unsigned i)
{
    return i < VM_REG_FP ? &fr->regs[i] : &fr->slots[i - VM_REG_FP].r;
}

/* A precise plain member of group g, or NULL. */
static const struct vreg *member(const struct zview *w, uint32_t g)
{
    for (unsigned i = 0; i < w->np; i++)
        if (w->v[w->idx[i]]->id == g)
            return w->v[w->idx[i]];
    return NULL;
}

/* Bounds of base b_g from its precise members' ranges. */
static bool base_range(const struct zview *w, uint32_t g, int64_t *lo, int64_t *hi)
{
    bool found = false;
    *lo = -ZLIM * 2, *hi = ZLIM * 2;
    for (unsigned i = 0; i < w->np; i++) {
        const struct vreg *m = w->v[w->idx[i]];
        if (m->id != g)
            continue;
        found = true;
        if (m->v.smin - m->off > *lo)
            *lo = m->v.smin - m->off;
        if (m->v.smax - m->off < *hi)
            *hi = m->v.smax - m->off;
    }
    return found;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* b_a - b_b <= the result by a VZ_LE fact or the same group (ZNONE: none). */
static int64_t le_fact(const struct zview *w, uint32_t a, uint32_t b)
{
    int64_t best = a == b ? 0 : ZNONE;
    for (uint32_t k = 0; k < w->nz; k++)
        if (w->z[k].kind == VZ_LE && w->z[k].id[0] == a && w->z[k].id[1] == b)
            best = min64(best, w->z[k].c);
    return best;
}

/* An upper bound on b_a - b_b (ZNONE: none): the same group, a VZ_LE
 * fact, a sum with a term related to a (or b) by one, or the bases'
 * ranges. */
static int64_t diff_ub(const struct zview *w, uint32_t a, uint32_t b)
{
    int64_t best = le_fact(w, a, b), alo, ahi, blo, bhi, lo, hi;
    if (a == b)
        return 0;
    for (uint32_t k = 0; k < w->nz; k++) {
        const struct vzone *f = &w->z[k];
        if (f->kind != VZ_SUM)
            continue;
        for (unsigned t = 1; t <= 2; t++) {
            uint32_t o = f->id[3 - t];   /* the other term */
            int64_t d;
            /* b = t + o + c, a - t <= d: a - b <= d - o - c */
            if (f->id[0] == b && (d = le_fact(w, a, f->id[t])) != ZNONE &&
                base_range(w, o, &lo, &hi))
                best = min64(best, d - lo - f->c);
            /* a = t + o + c, t - b <= d: a - b <= d + o + c */
            if (f->id[0] == a && (d = le_fact(w, f->id[t], b)) != ZNONE &&
                base_range(w, o, &lo, &hi))
                best = min64(best, d + hi + f->c);
        }
    }
    if (base_range(w, a, &alo, &ahi) && base_range(w, b, &blo, &bhi))
        best = min64(best, ahi - blo);
    return best;
}

static bool reg_sum_k(const struct zview *w, unsigned s, unsigned x, unsigned y, int64_t *k);

/* --- facts -------------------------------------------------------------------- */

static bool fact_held(const struct vstate *st, const struct vzone *f)
{
    unsigned n = f->kind == VZ_SUM ? 3 : 2;
    for (unsigned i = 0; i < n; i++)
        if (!vm_group_held(st, f->id[i]))
            return false;
    return true;
}

static bool same_fact(const struct vzone *a, const struct vzone *b)
{
    if (a->kind != b->kind || a->id[0] != b->id[0])
        return false;
    if (a->kind == VZ_LE)
        return a->id[1] == b->id[1];
    return (a->id[1] == b->id[1] && a->id[2] == b->id[2]) ||
           (a->id[1] == b->id[2] && a->id[2] == b->id[1]);
}

/* Adds fact e (a tighter VZ_LE replaces a looser one). */
static void add_fact(struct vstate *st, struct vzone e)
{
    for (uint32_t k = 0; k < st->nzone; k++)
        if (same_fact(&st->zone[k], &e)) {
            if (e.kind == VZ_LE && e.c < st->zone[k].c)
                st->zone[k].c = e.c;
            return;
        }
    if (st->nzone == VM_MAX_ZONE) {   /* facts no register can name go first */
        uint32_t n = 0;
        for (uint32_t k = 0; k < st->nzone; k++)
            if (fact_held(st, &st->zone[k]))
                st->zone[n++] = st->zone[k];
        st->nzone = n;
    }
    if (st->nzone == VM_MAX_ZONE) {   /* then the oldest */
        for (uint32_t k = 1; k < VM_MAX_ZONE; k++)
            st->zone[k - 1] = st->zone[k];
        st->nzone--;
    }
    st->zone[st->nzone++] = e;
}

static bool fits32(int64_t c)
{
    return c >= INT32_MIN && c <= INT32_MAX;
}

/* True if st has a sum: differences are only ever used with one. */
static bool has_sum(const struct vzone *z, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (z[k].kind == VZ_SUM)
            return true;
    return false;
}

static void add_le(struct vstate *st, uint32_t a, uint32_t b, int64_t c)
{
    if (a != b && a && b && c > -ZLIM && c < ZLIM)
        add_fact(st, (struct vzone){{a, b, 0}, 0, VZ_LE, {0}, c});
}

static void add_sum(struct vstate *st, uint32_t s, uint32_t x, uint32_t y, int64_t c)
{
    if (s && x && y && s != x && s != y && c > -ZLIM && c < ZLIM)
        add_fact(st, (struct vzone){{s, x, y}, 0, VZ_SUM, {0}, c});
}

void vm_zone_named(struct venv *env, const struct vreg *r)
{
    /* r = b_lid + b_lgid + loff (invariant 10) and r = b_id + off */
    if (r->type == VT_SCALAR && r->id && r->lid && r->lgid && r->sflags == 0 &&
        small_v(&r->v))
        add_sum(env->cur, r->id, r->lid, r->lgid, (int64_t)r->loff - r->off);
}

bool vm_zone_cmp_wants(const struct venv *env, const struct vreg *a, const struct vreg *b)
{
    return has_sum(env->cur->zone, env->cur->nzone) && a->type == VT_SCALAR && b->type == VT_SCALAR && !vs_is_const(&a->v) &&
           !vs_is_const(&b->v) && small_v(&a->v) && small_v(&b->v) && (!a->id || !a->sflags) &&
           (!b->id || !b->sflags);
}

void vm_zone_cmp(struct venv *env, struct vreg *a, struct vreg *b, unsigned op, bool is64)
{
    bool sgn = op == VM_JSLE || op == VM_JSLT || op == VM_JSGE || op == VM_JSGT;
    bool le = op == VM_JLE || op == VM_JLT || op == VM_JSLE || op == VM_JSLT;
    bool ge = op == VM_JGE || op == VM_JGT || op == VM_JSGE || op == VM_JSGT;
    int64_t strict = op == VM_JLT || op == VM_JGT || op == VM_JSLT || op == VM_JSGT;
    if ((!le && !ge && op != VM_JEQ) || !vm_zone_cmp_wants(env, a, b) ||
        vs_is_const(&a->v) || vs_is_const(&b->v) || !small_v(&a->v) || !small_v(&b->v))
        return;
    bool fu = a->v.smin >= 0 && b->v.smin >= 0;
    bool ok = is64 ? sgn || fu
                   : sgn ? a->v.smin >= INT32_MIN && a->v.smax <= INT32_MAX &&
                               b->v.smin >= INT32_MIN && b->v.smax <= INT32_MAX
                         : fu && a->v.umax <= UINT32_MAX && b->v.umax <= UINT32_MAX;
    if (!ok || (a->id && a->sflags) || (b->id && b->sflags))
        return;
    vm_neq_name(env, a);
    vm_neq_name(env, b);
    if (!a->id || !b->id)
        return;
    /* a = b_A + fa, b = b_B + fb */
    if (le || op == VM_JEQ)   /* a <= b - strict */
        add_le(env->cur, a->id, b->id, (int64_t)b->off - a->off - strict);
    if (ge || op == VM_JEQ)   /* b <= a - strict */
        add_le(env->cur, b->id, a->id, (int64_t)a->off - b->off - strict);
}

/* --- uses ---------------------------------------------------------------------- */

/* t = b_x + b_y + f (y 0: t = b_x + f) <= b_s + c for a sum s = x + z
 * (+ k) and a bound on b_y - b_z (or -b_z): the smallest c, ZNONE if none;
 * *s the sum's group. x and y are the operands of the instruction (precise
 * there when its result matters); s and z are held by precise registers. */
static int64_t sum_bound(const struct zview *w, uint32_t x, uint32_t y, int64_t f, uint32_t *s)
{
    int64_t best = ZNONE;
    for (uint32_t k = 0; k < w->nz; k++) {
        const struct vzone *e = &w->z[k];
        if (e->kind != VZ_SUM || !member(w, e->id[0]))
            continue;
        for (unsigned t = 1; t <= 2; t++) {
            uint32_t z = e->id[3 - t];
            int64_t rest, lo, hi;
            if (e->id[t] != x || !member(w, z))
                continue;
            /* b_x = b_s - b_z - k: t = b_s + (b_y - b_z) - k + f */
            if (y)
                rest = diff_ub(w, y, z);
            else
                rest = base_range(w, z, &lo, &hi) ? -lo : ZNONE;
            if (rest == ZNONE || rest >= ZLIM || rest <= -ZLIM)
                continue;
            int64_t c = rest - e->c + f;
            if (c < best) {
                best = c;
                *s = e->id[0];
            }
        }
    }
    return best;
}

/* d <= b_s + c: d gets the distance bounds of the precise members of s. */
static void dist_from(const struct zview *w, struct vreg *d, uint32_t s, int64_t c)
{
    for (unsigned i = 0; i < w->np; i++) {
        const struct vreg *m = w->v[w->idx[i]];
        if (m->id != s || !m->dist)
            continue;
        /* m = b_s + m.off <= END - (base + v) - doff */
        for (unsigned k = 0; k < 2; k++)
            if (m->dist >> k & 1)
                vm_dist_add(d, k, m->did[k], (int64_t)m->doff[k] + m->off - c);
    }
}

/* The sum fact s = x + y + k (either order), if one holds. */
static bool exact_sum(const struct zview *w, uint32_t x, uint32_t y, uint32_t *s, int64_t *k)
{
    for (uint32_t i = 0; i < w->nz; i++) {
        const struct vzone *e = &w->z[i];
        if (e->kind == VZ_SUM && ((e->id[1] == x && e->id[2] == y) ||
                                  (e->id[1] == y && e->id[2] == x))) {
            *s = e->id[0];
            *k = e->c;
            return true;
        }
    }
    return false;
}

/* d just became a member of group g (d = b_g + d.off): the precise plain
 * members of g bound b_g, so d lies in their range moved by d.off - their
 * off. (The interval sum of the operands knows nothing of the group:
 * -O1's `len + start` beside the `i` it equals.) Only members precise at
 * the instruction, as for every rule: they were compared where earlier
 * paths were pruned. */
static void narrow_new_member(const struct zview *w, struct vreg *d)
{
    int64_t lo, hi;
    if (!base_range(w, d->id, &lo, &hi) || lo <= -ZLIM || hi >= ZLIM)
        return;
    struct vm_scalar v = d->v, r = vs_srange(lo + d->off, hi + d->off);
    if (vs_refine(&v, &r, VM_JEQ, true, true))
        d->v = v;
}

void vm_zone_alu(struct venv *env, struct vreg *d, const struct vreg *d0, const struct vreg *s,
                 const struct vm_insn *insn)
{
    unsigned op = VM_OP(insn->code);
    if (!env->cur->nzone || VM_CLS(insn->code) != VM_CLS_ALU64 ||
        (op != VM_ADD && op != VM_SUB) || d->type != VT_SCALAR || !small_v(&d->v))
        return;
    struct zview w;
    view_of(env, &w);
    uint32_t g = 0;
    int64_t c = ZNONE, k;
    uint16_t prec = env->info[env->pc].prec, dbit = (uint16_t)(1u << vm_dst(insn));
    if (!(prec & dbit) || (VM_SRC(insn->code) == VM_X && !(prec >> vm_src(insn) & 1)))
        return;   /* (the result does not matter) */
    if (VM_SRC(insn->code) == VM_K) {   /* d = b_x + off: x = s - z - k */
        if (plain(d))
            c = sum_bound(&w, d->id, 0, d->off, &g);
    } else if (op == VM_ADD && plain(d0) && plain(s) && d0->id != s->id) {
        int64_t f = (int64_t)d0->off + s->off;
        if (exact_sum(&w, d0->id, s->id, &g, &k) && fits32(f - k) && member(&w, g)) {
            d->id = g;   /* d = b_x + b_y + f = b_s + (f - k) */
            d->off = (int32_t)(f - k);
            d->sflags = 0;
            narrow_new_member(&w, d);
        }
        int64_t c1 = sum_bound(&w, d0->id, s->id, f, &g);
        uint32_t g2 = 0;
        int64_t c2 = sum_bound(&w, s->id, d0->id, f, &g2);
        c = c1 <= c2 ? c1 : c2;
        g = c1 <= c2 ? g : g2;
    }
    if (c != ZNONE)
        dist_from(&w, d, g, c);
}

bool vm_zone_link(struct venv *env, struct vreg *p, const struct vreg *s)
{
    /* p: v = b_x + loff from the start (invariant 7); p + s, s = b_y +
     * s.off, and x + y = sum - k: v' = b_sum + (loff + s.off - k) */
    uint32_t g;
    int64_t k;
    if (!env->cur->nzone || !p->lid || p->lgid || (p->sflags & (VS_WILD | VS_LZEXT |
                                                                VS_SCALE_MASK | VS_ROW)) ||
        !plain(s))
        return false;
    struct zview w;
    view_of(env, &w);
    const struct vreg *x = member(&w, p->lid);
    if (!x || !member(&w, s->id) || !exact_sum(&w, p->lid, s->id, &g, &k) || !member(&w, g))
        return false;
    int64_t loff = (int64_t)p->loff + s->off - k;
    if (!fits32(loff))
        return false;
    p->lid = g;
    p->loff = (int32_t)loff;
    return true;
}

/* x = s - z - k bounds the members of x by s's and z's ranges. */
static void narrow_term(struct venv *env, const struct zview *w, const struct vzone *e,
                        unsigned t)
{
    uint32_t x = e->id[t], z = e->id[3 - t];
    int64_t ub = diff_ub(w, e->id[0], z), nlb = diff_ub(w, z, e->id[0]);
    struct vframe *fr = vm_curframe(env);
    int64_t zlo, zhi;
    bool zlo_ok = base_range(w, z, &zlo, &zhi) && zlo > -ZLIM;
    for (unsigned i = 0; i < w->np; i++) {
        if (w->v[w->idx[i]]->id != x)
            continue;
        struct vreg *m = entry(fr, w->idx[i]);
        /* m = b_x + off = (b_s - b_z) - k + off */
        struct vm_scalar v = m->v;
        if (nlb != ZNONE && nlb < ZLIM && nlb > -ZLIM) {
            struct vm_scalar l = vs_const((uint64_t)(-nlb - e->c + m->off));
            if (!vs_refine(&v, &l, VM_JSGE, true, true))
                continue;
        }
        if (ub != ZNONE && ub < ZLIM && ub > -ZLIM) {
            struct vm_scalar h = vs_const((uint64_t)(ub - e->c + m->off));
            if (!vs_refine(&v, &h, VM_JSLE, true, true))
                continue;
        }
        m->v = v;
        /* m <= b_s - min(b_z) - k + off: the distance bounds of s's members */
        if (zlo_ok)
            dist_from(w, m, e->id[0], -zlo - e->c + m->off);
    }
}

void vm_zone_narrow(struct venv *env)
{
    if (!env->cur->nzone)
        return;
    struct zview w;
    view_of(env, &w);
    for (uint32_t k = 0; k < env->cur->nzone; k++) {
        const struct vzone *e = &env->cur->zone[k];
        if (e->kind != VZ_SUM || !member(&w, e->id[0]) || !member(&w, e->id[1]) ||
            !member(&w, e->id[2]))
            continue;
        narrow_term(env, &w, e, 1);
        narrow_term(env, &w, e, 2);
    }
}

/* --- joins ------------------------------------------------------------------------- */

/* An upper bound on value(a) - value(b) for registers a, b of one state. */
static int64_t reg_diff_ub(const struct zview *w, unsigned a, unsigned b)
{
    const struct vreg *x = w->v[a], *y = w->v[b];
    if (!x || !y || x->type != VT_SCALAR || y->type != VT_SCALAR || !small_v(&x->v) || !small_v(&y->v))
        return ZNONE;
    int64_t best = x->v.smax - y->v.smin;
    if (plain(x) && plain(y)) {
        int64_t f = diff_ub(w, x->id, y->id);
        if (f != ZNONE && f < ZLIM && f > -ZLIM)
            best = min64(best, f + x->off - y->off);
    }
    return best;
}

/* value(s) - value(x) - value(y) if it is one constant in this state. */
static bool reg_sum_k(const struct zview *w, unsigned s, unsigned x, unsigned y, int64_t *k)
{
    const struct vreg *S = w->v[s], *X = w->v[x], *Y = w->v[y];
    uint32_t g;
    int64_t c;
    if (!S || !X || !Y || S->type != VT_SCALAR || X->type != VT_SCALAR || Y->type != VT_SCALAR ||
        !small_v(&S->v) || !small_v(&X->v) || !small_v(&Y->v))
        return false;
    for (unsigned t = 0; t < 2; t++) {
        const struct vreg *K = t ? Y : X;
        unsigned other = t ? x : y;
        if (!vs_is_const(&K->v))
            continue;
        int64_t up = reg_diff_ub(w, s, other), dn = reg_diff_ub(w, other, s);
        if (up != ZNONE && dn != ZNONE && up == -dn) {
            *k = up - (int64_t)K->v.t.value;
            return true;
        }
    }
    if (plain(S) && plain(X) && plain(Y) && exact_sum(w, X->id, Y->id, &g, &c) && g == S->id) {
        *k = c + S->off - X->off - Y->off;
        return true;
    }
    return false;
}

/* value(s) - value(x) - value(y) may be a constant in w (a cheap test
 * before reg_sum_k): constants, a constant term beside two members of
 * one group, or named members with facts. */
static bool sum_possible(const struct zview *w, unsigned s, unsigned x, unsigned y)
{
    const struct vreg *S = w->v[s], *X = w->v[x], *Y = w->v[y];
    if (!S || !X || !Y)
        return false;
    bool ks = vs_is_const(&S->v), kx = vs_is_const(&X->v), ky = vs_is_const(&Y->v);
    if (ks && kx && ky)
        return true;
    if ((kx && S->id && S->id == Y->id) || (ky && S->id && S->id == X->id))
        return true;
    if (!plain(S))
        return false;
    for (uint32_t k = 0; k < w->nz; k++)   /* a sum of S's group, or a difference */
        if ((w->z[k].kind == VZ_SUM && w->z[k].id[0] == S->id) ||
            (w->z[k].kind == VZ_LE && (kx || ky) &&
             (w->z[k].id[0] == S->id || w->z[k].id[1] == S->id)))
            return true;
    return false;
}

/* A name for joined register j (a fresh group if it has none). */
static bool zname(struct venv *env, struct vreg *j)
{
    if (j->type != VT_SCALAR || (vs_is_const(&j->v) && !j->id) || !small_v(&j->v) ||
        j->sflags)
        return false;
    if (!j->id) {
        j->id = ++env->id_gen;
        j->off = 0;
    }
    return true;
}

/* Entries a and b of w may be related by more than the joined ranges will
 * say (a cheap test first): one is a constant there (a counter in the
 * first iterations), or both are named, in one group or with facts. */
static bool rel_possible(const struct zview *w, unsigned a, unsigned b)
{
    const struct vreg *x = w->v[a], *y = w->v[b];
    if (!x || !y)
        return false;
    if (vs_is_const(&x->v) || vs_is_const(&y->v))
        return true;
    return plain(x) && plain(y) && (x->id == y->id || w->nz);
}

static void join_le(struct venv *env, struct vstate *st, struct vframe *jf, const struct zview *o,
                    const struct zview *c, unsigned a, unsigned b, bool wide)
{
    struct vreg *ja = entry(jf, a), *jb = entry(jf, b);
    if (vs_is_const(&ja->v) || vs_is_const(&jb->v) || !small_v(&ja->v) || !small_v(&jb->v) ||
        (ja->id && ja->id == jb->id) || (!rel_possible(o, a, b) && !rel_possible(c, a, b)))
        return;
    int64_t co = reg_diff_ub(o, a, b), cc = reg_diff_ub(c, a, b);
    if (co == ZNONE || cc == ZNONE || (wide && cc > co))
        return;
    int64_t m = co > cc ? co : cc;
    if (m >= ja->v.smax - jb->v.smin)
        return;   /* the joined ranges say as much */
    if (zname(env, ja) && zname(env, jb))
        add_le(st, ja->id, jb->id, m - ja->off + jb->off);
}

static void join_sum(struct venv *env, struct vstate *st, struct vframe *jf, const struct zview *o,
                     const struct zview *c, unsigned s, unsigned x, unsigned y)
{
    int64_t ko, kc;
    unsigned moving = !vs_is_const(&entry(jf, s)->v) + !vs_is_const(&entry(jf, x)->v) +
                      !vs_is_const(&entry(jf, y)->v);
    if (moving < 2 || !sum_possible(o, s, x, y) || !sum_possible(c, s, x, y))
        return;   /* constants and one number: the ranges say it */
    if (!reg_sum_k(o, s, x, y, &ko) || !reg_sum_k(c, s, x, y, &kc) || ko != kc)
        return;
    struct vreg *js = entry(jf, s), *jx = entry(jf, x), *jy = entry(jf, y);
    if ((vs_is_const(&js->v) && (!js->id || js->sflags)) || !small_v(&js->v))
        return;   /* (a constant already named may be the sum) */
    /* a constant term: s - other = k + term, two differences */
    for (unsigned t = 0; t < 2; t++) {
        struct vreg *kr = t ? jy : jx, *other = t ? jx : jy;
        if (!vs_is_const(&kr->v))
            continue;
        int64_t e = ko + (int64_t)kr->v.t.value;
        if (!vs_is_const(&other->v) && zname(env, js) && zname(env, other) &&
            js->id != other->id) {
            add_le(st, js->id, other->id, e - js->off + other->off);
            add_le(st, other->id, js->id, -e + js->off - other->off);
        }
        return;
    }
    if (!zname(env, js) || !zname(env, jx) || !zname(env, jy) || js->id == jx->id ||
        js->id == jy->id || jx->id == jy->id)
        return;
    add_sum(st, js->id, jx->id, jy->id, ko - js->off + jx->off + jy->off);
}

#define ZCAND 7   /* candidates at most: the work is cubic */

void vm_zone_join(struct venv *env, struct vstate *joined, const struct vframe *pre,
                  const struct vzone *oz, uint32_t onz, const struct vstate *cur,
                  struct vm_masks mk, bool wide)
{
    uint32_t top = cur->nframes - 1;
    struct vframe *jf = &joined->frames[top];
    const struct vframe *cf = &cur->frames[top];
    struct zview o, c, j;
    build(&j, jf, mk, NULL, 0);
    unsigned cand[ZCAND], n = 0, mov[ZCAND], nm = 0;
    joined->nzone = 0;
    for (unsigned i = 0; i < j.n && n < ZCAND; i++) {
        const struct vreg *r = j.v[i];
        if (r && j.p[i] && r->type == VT_SCALAR && small_v(&r->v) && (!r->id || !r->sflags) &&
            has_entry(pre, i) && has_entry(cf, i)) {
            cand[n++] = i;
            if (!vs_is_const(&r->v))
                mov[nm++] = i;
        }
    }
    if (nm < 2)
        return;   /* every relation needs two numbers that differ between the states */
    build(&o, pre, mk, oz, onz);
    build(&c, cf, mk, cur->zone, cur->nzone);
    /* with no facts on either side, a difference comes from constants or
     * a group: only where a number is constant in one state (a counter's
     * first iterations) beside one that moves in the other */
    bool facts = onz || cur->nzone, sums = has_sum(oz, onz) || has_sum(cur->zone, cur->nzone);
    for (unsigned a = 0; a < nm; a++)
        for (unsigned b = 0; b < nm; b++)
            if (a != b && sums && (facts || vs_is_const(&o.v[mov[a]]->v) != vs_is_const(&c.v[mov[a]]->v) ||
                           vs_is_const(&o.v[mov[b]]->v) != vs_is_const(&c.v[mov[b]]->v) ||
                           (o.v[mov[a]]->id && o.v[mov[a]]->id == o.v[mov[b]]->id) ||
                           (c.v[mov[a]]->id && c.v[mov[a]]->id == c.v[mov[b]]->id)))
                join_le(env, joined, jf, &o, &c, mov[a], mov[b], wide);
    /* constants of each state, for a cheap first test of every triple */
    bool ko[ZCAND], kc[ZCAND], kk[ZCAND], jm[ZCAND];
    int64_t vo[ZCAND], vc[ZCAND];
    unsigned nkk = 0;
    for (unsigned i = 0; i < n; i++) {
        ko[i] = vs_is_const(&o.v[cand[i]]->v), kc[i] = vs_is_const(&c.v[cand[i]]->v);
        vo[i] = (int64_t)o.v[cand[i]]->v.t.value, vc[i] = (int64_t)c.v[cand[i]]->v.t.value;
        jm[i] = !vs_is_const(&j.v[cand[i]]->v);
        kk[i] = ko[i] && kc[i];
        nkk += kk[i];
    }
    if (!facts && !nkk)
        return;   /* no fact, no constant term: no sum to see */
    for (unsigned s = 0; s < n; s++)
        for (unsigned x = 0; x < n; x++)
            for (unsigned y = x + 1; y < n; y++) {
                if ((!facts && !kk[x] && !kk[y]) || s == x || s == y ||
                    jm[s] + jm[x] + jm[y] < 2)
                    continue;   /* (no fact, no constant term: no sum to see) */
                bool allk = kk[s] && kk[x] && kk[y];
                if (allk && vo[s] - vo[x] - vo[y] != vc[s] - vc[x] - vc[y])
                    continue;   /* constants in both, and not the same sum */
                join_sum(env, joined, jf, &o, &c, cand[s], cand[x], cand[y]);
            }
}

/* --- checker ------------------------------------------------------------------------ */

bool vm_zone_ok(const struct vstate *st)
{
    if (st->nzone > VM_MAX_ZONE)
        return false;
    for (uint32_t k = 0; k < st->nzone; k++) {
        const struct vzone *e = &st->zone[k];
        bool le = e->kind == VZ_LE, sum = e->kind == VZ_SUM;
        if ((!le && !sum) || !e->id[0] || !e->id[1] || e->id[0] == e->id[1] ||
            (sum && (!e->id[2] || e->id[2] == e->id[0])) || (le && e->id[2]) ||
            e->c <= -ZLIM || e->c >= ZLIM)
            return false;
    }
    return true;
}

/* --- subsumption --------------------------------------------------------------------- */

/* The register of w holding a precise plain member of g (VM_NREGS: none). */
static unsigned member_reg(const struct zview *w, uint32_t g)
{
    for (unsigned i = 0; i < w->np; i++)
        if (w->v[w->idx[i]]->id == g)
            return w->idx[i];
    return ZV;
}

/* True if the current state's registers and facts imply fact e. */
static bool implied(const struct zview *w, const struct vzone *e)
{
    if (e->kind == VZ_LE) {
        int64_t ub = diff_ub(w, e->id[0], e->id[1]);
        return ub != ZNONE && ub <= e->c;
    }
    unsigned s = member_reg(w, e->id[0]), x = member_reg(w, e->id[1]), y = member_reg(w, e->id[2]);
    int64_t k;
    if (s == ZV || x == ZV || y == ZV || s == x || s == y || x == y ||
        !reg_sum_k(w, s, x, y, &k))
        return false;
    /* value(s) - value(x) - value(y) = c + fs - fx - fy */
    return k == e->c + w->v[s]->off - w->v[x]->off - w->v[y]->off;
}

bool vm_zone_subsumed(const struct venv *env, const struct vzone *oz, uint32_t onz,
                      bool (*find)(const void *m, uint32_t o, uint32_t *c, int64_t *shift),
                      const void *m)
{
    const struct vstate *cur = env->cur;
    struct zview w;
    if (!onz)
        return true;
    build(&w, &cur->frames[cur->nframes - 1], vm_frame_masks(env, cur->nframes - 1), cur->zone,
          cur->nzone);
    for (uint32_t k = 0; k < onz; k++) {
        const struct vzone *e = &oz[k];
        unsigned n = e->kind == VZ_SUM ? 3 : 2;
        uint32_t id[3] = {0, 0, 0};
        int64_t sh[3] = {0, 0, 0};
        bool mapped = true;
        for (unsigned i = 0; i < n && mapped; i++)
            mapped = find(m, e->id[i], &id[i], &sh[i]);
        if (!mapped)
            continue;   /* a group no compared register holds: it cannot matter */
        /* b_old = b_cur + shift */
        struct vzone want = *e;
        for (unsigned i = 0; i < n; i++)
            want.id[i] = id[i];
        want.c = e->kind == VZ_LE ? e->c - sh[0] + sh[1] : e->c + sh[1] + sh[2] - sh[0];
        bool ok = false;
        for (uint32_t i = 0; i < cur->nzone && !ok; i++) {
            const struct vzone *f = &cur->zone[i];
            ok = same_fact(f, &want) && (e->kind == VZ_LE ? f->c <= want.c : f->c == want.c);
        }
        if (e->kind == VZ_LE && want.id[0] == want.id[1])
            ok = want.c >= 0;
        if (!ok && !implied(&w, &want))
            return false;
    }
    return true;
}
