/*
 * bpf/verifier_back.c - pointers that walk back from a buffer's end
 * (verifier_int.h invariant 12).
 *
 * `while (e > b && e[-1] == ' ') e--;` trims a buffer from its end: e
 * starts as data_end and moves down while it stays above a pointer b
 * into the buffer. The byte e[-1] is inside the buffer because e - 1 >= b
 * >= data and e <= end. So an end pointer (VT_IN_END, VT_OUT_END) may
 * carry a lower bound from such a comparison: place(e) >= v_G + doff,
 * place being the offset from the buffer's start and v_G the variable
 * part of the buffer pointers of group did (0 for did 0: the start). Its
 * own fixed and variable offsets (off + v, at most 0 while it walks back)
 * bound it from above. A load or store through e is allowed when both
 * bounds put the bytes inside the buffer.
 *
 * Soundness: the bound is made only on the side of a comparison where e
 * > b (>=, ==) holds, from b's place (b.off + b's variable part, which is
 * v_G + b.off for b's group); adding a constant to e moves it, joins keep
 * the looser of two for the paired groups (verifier_join.c) and drop one
 * that loosens at a loop head, pruning requires the old state's
 * (verifier_state.c). The buffer is at most VM_MAX_BUF_SIZE bytes, so the
 * bound also keeps e's variable part within the sane range (invariant 2)
 * while e walks back in a loop.
 */
#include "bpf/verifier_int.h"

#define BACK_LIM ((int64_t)1 << 40)

static uint8_t buf_of(uint8_t end_type)
{
    return end_type == VT_IN_END ? VT_IN : VT_OUT;
}

bool vm_back_is_end(const struct vreg *r)
{
    return r->type == VT_IN_END || r->type == VT_OUT_END;
}

bool vm_back_has(const struct vreg *e)
{
    return vm_back_is_end(e) && !(e->sflags & VS_WILD) &&
           (e->dist >> vm_buf_index(buf_of(e->type)) & 1);
}

/* The variable part of group id of buffer type t: [*lo, *hi]; false when
 * no register shows it (id 0: the start, 0). */
static bool group_var(struct venv *env, uint8_t t, uint32_t id, int64_t *lo)
{
    if (id == 0) {
        *lo = 0;
        return true;
    }
    const struct vreg *g = vm_group_member(env, t, id);
    if (!g || g->v.smin <= -BACK_LIM || g->v.smax >= BACK_LIM)
        return false;
    *lo = g->v.smin;
    return true;
}

void vm_back_narrow(struct venv *env, struct vreg *e)
{
    int64_t vg;
    unsigned k = vm_buf_index(buf_of(e->type));
    if (!vm_back_has(e) || !group_var(env, buf_of(e->type), e->did[k], &vg))
        return;
    /* END - data <= VM_MAX_BUF_SIZE: off + v = place - (END - data) */
    int64_t lo = vg + e->doff[k] - (int64_t)VM_MAX_BUF_SIZE - e->off;
    struct vm_scalar v = e->v, l = vs_const((uint64_t)lo);
    if (vs_refine(&v, &l, VM_JSGE, true, true))
        e->v = v;
}

void vm_back_learn(struct venv *env, struct vreg *e, const struct vreg *p, unsigned op)
{
    /* only for an end pointer that walked back: the end itself is above
     * every byte a buffer pointer proved (vm_back_access), and a bound on
     * it would keep apart the states of every `while (p < end)` loop */
    if (!vm_back_is_end(e) || (e->sflags & VS_WILD) || p->type != buf_of(e->type) ||
        (p->sflags & VS_WILD) || (op != VM_JGT && op != VM_JGE && op != VM_JEQ) ||
        (e->off == 0 && vs_is_const(&e->v) && e->v.t.value == 0))
        return;
    unsigned k = vm_buf_index(p->type);
    /* place(p) = v_G + p.off for p's group (id 0: p.off + its constant v) */
    int64_t doff = (int64_t)p->off + (op == VM_JGT);
    if (p->id == 0) {
        if (!vs_is_const(&p->v))
            return;
        doff += (int64_t)p->v.t.value;
    }
    if (doff < INT32_MIN || doff > INT32_MAX)
        return;
    bool has = e->dist >> k & 1;
    if (has && e->did[k] == p->id && e->doff[k] >= doff)
        return;   /* as tight already */
    e->dist = (uint8_t)(1u << k);
    e->did[k] = p->id;
    e->doff[k] = (int32_t)doff;
    vm_back_narrow(env, e);
}

void vm_back_move(struct vreg *e, int64_t c)
{
    unsigned k = vm_buf_index(buf_of(e->type));
    if (!vm_back_has(e))
        return;
    int64_t d = (int64_t)e->doff[k] + c;
    if (d < INT32_MIN || d > INT32_MAX)
        e->dist = 0;
    else
        e->doff[k] = (int32_t)d;
}

/* END - data >= v.smin + range for a buffer pointer that proved `range`
 * bytes (base + v + range <= END, base + v >= data + v.smin). Kept in the
 * path's state, not read off the registers when an end pointer is used:
 * pruning compares only the registers live there, and the one that
 * proved it may be dead by then (`if (out + 21 > out_end) ...; x =
 * out_end[-11]`); state_subsumed compares end_lo itself. */
void vm_back_note(struct venv *env, const struct vreg *p)
{
    if ((p->type != VT_IN && p->type != VT_OUT) || (p->sflags & VS_WILD) || p->range == 0 ||
        p->v.smin <= -BACK_LIM || p->v.smax >= BACK_LIM)
        return;
    int64_t lo = p->v.smin + (int64_t)p->range, *have = &env->cur->end_lo[vm_buf_index(p->type)];
    if (lo > *have)
        *have = lo;
}

bool vm_back_access(struct venv *env, const struct vreg *e, int64_t o, unsigned size)
{
    int64_t vg = 0;
    unsigned k = vm_buf_index(buf_of(e->type));
    if (e->sflags & VS_WILD || e->v.smax >= BACK_LIM || e->v.smin <= -BACK_LIM ||
        (int64_t)e->off + e->v.smax + o + (int64_t)size > 0)
        return false;
    /* no bound of its own: END - data >= lo, so e + o >= data + lo + off + v + o */
    if (!vm_back_has(e))
        return env->cur->end_lo[k] + e->off + e->v.smin + o >= 0;
    if (!group_var(env, buf_of(e->type), e->did[k], &vg))
        return false;
    /* below the end: off + v + o + size <= 0; above the start: place(e) +
     * o >= v_G + doff + o >= 0 */
    return (int64_t)e->off + e->v.smax + o + (int64_t)size <= 0 && vg + e->doff[k] + o >= 0;
}
