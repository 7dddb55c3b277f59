/*
 * bpf/verifier_row.c - rows of a read-only table walked beside their
 * index (verifier_int.h invariant 11).
 *
 * clang -O1 turns `for (w = 0; w < 3; w++) ... words[w][k]` over a
 * `static const char words[3][6]` into a pointer `r4 = words` advanced by
 * the row size (`r4 += 6`) beside the counter (`w++`). Where two paths
 * meet, the hull of the pointer's offsets [0, 12] widens as the loop goes
 * on and forgets that it moves with w; the byte `words[w][k]` then seems
 * to reach past the table. A row link keeps "place(P) = m * w + k" for a
 * read-only data pointer P and a scalar w (m a row size, any positive
 * number, unlike the power-of-two scales of invariant 5), so P's offset is
 * bounded by w's range wherever P is used.
 *
 * Soundness: a link is made at a join only when the relation holds with
 * the same m and k in both states joined (each either has it already or
 * holds constants that satisfy it, or both hold constants that define it),
 * so it holds in every concrete state the joined one stands for. Adding a
 * constant to P moves its fixed offset and adding one to w moves w's
 * offset in its group; both keep the relation; anything else ends it.
 * The relation is modulo 2^64 and used only when both sides are small
 * (|w| < 2^40, m <= VM_ROW_MAX), where it is one between integers. A use
 * bounds P by a member w that is precise at that instruction
 * (verifier_flow.c): then w is precise at every pruning point before it
 * on the path, where subsumption compares its range and link
 * (verifier_state.c also requires the old state's row links).
 */
#include "bpf/verifier_int.h"

#define VM_ROW_MAX 65536
#define VM_ROW_LIM ((int64_t)1 << 40)

/* What one state says about place(P) and scalar X: a link (m, k) with
 * place(P) = m * X + k, or the constants (px, xx). */
struct row_rel {
    bool linked, point;
    int64_t m, k, px, xx;
};

static bool small(const struct vm_scalar *v)
{
    return v->smin > -VM_ROW_LIM && v->smax < VM_ROW_LIM;
}

static struct row_rel row_of(const struct vreg *P, const struct vreg *X)
{
    struct row_rel r = {false, false, 0, 0, 0, 0};
    if (P->type != VT_RODATA || (P->sflags & VS_WILD) || X->type != VT_SCALAR)
        return r;
    if ((P->sflags & VS_ROW) && P->lid && P->lid == X->id && X->sflags == 0) {
        r.linked = true;
        r.m = P->range;
        r.k = (int64_t)P->off + P->loff - r.m * X->off;
    } else if (vs_is_const(&P->v) && vs_is_const(&X->v) && small(&X->v) && small(&P->v)) {
        r.point = true;
        r.px = (int64_t)P->off + (int64_t)P->v.t.value;
        r.xx = (int64_t)X->v.t.value;
    }
    return r;
}

/* The relation both states agree on, if any. */
static bool row_common(const struct row_rel *a, const struct row_rel *b, int64_t *m, int64_t *k)
{
    if (a->linked && b->linked) {
        *m = a->m, *k = a->k;
        return a->m == b->m && a->k == b->k;
    }
    if (a->linked != b->linked) {
        const struct row_rel *l = a->linked ? a : b, *p = a->linked ? b : a;
        *m = l->m, *k = l->k;
        return p->point && p->px == l->m * p->xx + l->k;
    }
    if (!a->point || !b->point || a->xx == b->xx)
        return false;
    int64_t d = b->px - a->px, dx = b->xx - a->xx;
    if (d % dx != 0 || d / dx < 1 || d / dx > VM_ROW_MAX)
        return false;
    *m = d / dx;
    *k = a->px - *m * a->xx;
    return true;
}

void vm_row_unlink(struct vreg *p)
{
    if (p->type != VT_RODATA || !(p->sflags & VS_ROW))
        return;
    p->sflags &= (uint8_t)~VS_ROW;
    p->lid = 0, p->loff = 0, p->lgid = 0, p->range = 0;
}

/* Bounds P's variable part by x's range: v = m * (x - x.off) + loff. */
static void narrow_by(struct vreg *P, const struct vreg *x)
{
    if (!small(&x->v))
        return;
    int64_t m = P->range;
    int64_t lo = m * (x->v.smin - x->off) + P->loff, hi = m * (x->v.smax - x->off) + P->loff;
    struct vm_scalar v = P->v, l = vs_const((uint64_t)lo), h = vs_const((uint64_t)hi);
    if (vs_refine(&v, &h, VM_JSLE, true, true) && vs_refine(&v, &l, VM_JSGE, true, true))
        P->v = v;
}

static void narrow_regs(struct vreg *P, const struct vreg *regs, uint16_t prec)
{
    if (P->type != VT_RODATA || !(P->sflags & VS_ROW) || !P->lid)
        return;
    for (unsigned r = 0; r < VM_REG_FP; r++)
        if ((prec >> r & 1) && regs[r].type == VT_SCALAR && regs[r].id == P->lid &&
            regs[r].sflags == 0) {
            narrow_by(P, &regs[r]);
            return;
        }
}

void vm_row_narrow(struct venv *env, struct vreg *p)
{
    narrow_regs(p, vm_curframe(env)->regs, env->info[env->pc].prec);
}

void vm_row_synth(struct venv *env, struct vreg *j, const struct vreg *pre,
                  const struct vreg *c, uint16_t prec)
{
    for (unsigned p = 0; p < VM_REG_FP; p++) {
        if (j[p].type != VT_RODATA || (j[p].sflags & VS_WILD))
            continue;
        for (unsigned x = 0; x < VM_REG_FP; x++) {
            int64_t m, k;
            struct row_rel ro = row_of(&pre[p], &pre[x]), rc = row_of(&c[p], &c[x]);
            if (!(prec >> x & 1) || j[x].type != VT_SCALAR || (j[x].id && j[x].sflags) ||
                !row_common(&ro, &rc, &m, &k))
                continue;
            int64_t xoff = j[x].id ? j[x].off : 0;
            int64_t loff = k + m * xoff - j[p].off;
            if (loff < INT32_MIN || loff > INT32_MAX)
                continue;
            if (!j[x].id) {   /* a fresh group: x = b */
                j[x].id = ++env->id_gen;
                j[x].off = 0;
            }
            j[p].sflags = (uint8_t)((j[p].sflags & ~(VS_LZEXT | VS_SCALE_MASK)) | VS_ROW);
            j[p].lid = j[x].id;
            j[p].loff = (int32_t)loff;
            j[p].lgid = 0;
            j[p].range = (uint32_t)m;
            narrow_by(&j[p], &j[x]);
            break;
        }
    }
}

bool vm_row_subsumed(const struct vreg *o, const struct vreg *c, int64_t *shift)
{
    if (!(c->sflags & VS_ROW) || c->range != o->range || !c->lid)
        return false;
    int64_t d = (int64_t)c->off + c->loff - (int64_t)o->off - o->loff;
    if (d % (int64_t)o->range != 0)
        return false;
    *shift = d / (int64_t)o->range;
    return true;
}
