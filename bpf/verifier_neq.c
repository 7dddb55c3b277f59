/*
 * bpf/verifier_neq.c - scalar values known to differ (verifier_int.h
 * invariant 9).
 *
 * clang -O1 merges the two exits of `if (t[mid] == key) return mid;`
 * into one block and tests `t[mid] != key` again after the loop's other
 * branch: the path that came from the `!=` side must not take the `==`
 * side the second time (there a register is a copy of one never set). A
 * range domain cannot carry `a != b` between two unknown values, so the
 * state keeps a few such facts. A value is named by its link group, offset
 * and kind (invariant 5), not by a register: `key` recomputed as
 * `(__u32)arg` between the two tests is the same value.
 *
 * Soundness: an entry is added only on the side of a JEQ/JNE where the two
 * operands differ, and names values, which never change while a member of
 * their group exists (ALU operations give a register another name);
 * joins keep an entry only when both states have it for the paired
 * groups, pruning requires what the old state relied on (verifier_state.c).
 * A 32-bit test is decided by an entry only when both values fit 32 bits.
 */
#include "bpf/verifier_int.h"

static bool names(const struct vreg *r, uint32_t id, int32_t off, uint8_t kind)
{
    return r->type == VT_SCALAR && r->id == id && r->id && r->off == off && r->sflags == kind;
}

/* Value i of entry e is r's value. */
static bool is_value(const struct vneq *e, unsigned i, const struct vreg *r)
{
    if (i == 1 && !e->id[1])
        return vs_is_const(&r->v) && r->v.t.value == e->k;
    return names(r, e->id[i], e->off[i], e->kind[i]);
}

static bool entry_is(const struct vneq *e, const struct vreg *a, const struct vreg *b)
{
    return (is_value(e, 0, a) && is_value(e, 1, b)) || (is_value(e, 0, b) && is_value(e, 1, a));
}

static bool fits32(const struct vreg *r)
{
    return r->v.umax <= UINT32_MAX;
}

bool vm_neq_known(const struct venv *env, const struct vreg *a, const struct vreg *b,
                  bool is64)
{
    if ((!a->id && !b->id) || (!is64 && !(fits32(a) && fits32(b))))
        return false;
    if (a->id == b->id && a->id && !a->sflags && !b->sflags && a->off != b->off)
        return true;   /* b + off1 != b + off2 */
    for (uint32_t k = 0; k < env->cur->nneq; k++)
        if (entry_is(&env->cur->neq[k], a, b))
            return true;
    return false;
}

bool vm_group_held(const struct vstate *st, uint32_t id)
{
    for (uint32_t f = 0; f < st->nframes; f++) {
        const struct vframe *fr = &st->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            if (fr->regs[r].type == VT_SCALAR && fr->regs[r].id == id)
                return true;
        for (uint32_t s = 0; s < fr->nslots; s++)
            if ((fr->slots[s].spill || fr->slots[s].nsize) && fr->slots[s].r.type == VT_SCALAR &&
                fr->slots[s].r.id == id)
                return true;
    }
    return false;
}

/* Drops entries naming a group no register holds any more (no value of
 * it can be named again: ids are never reused). */
static void prune(struct vstate *st)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < st->nneq; k++)
        if (vm_group_held(st, st->neq[k].id[0]) &&
            (!st->neq[k].id[1] || vm_group_held(st, st->neq[k].id[1])))
            st->neq[n++] = st->neq[k];
    st->nneq = n;
}

void vm_neq_name(struct venv *env, struct vreg *r)
{
    if (r->type == VT_SCALAR && !r->id && !vs_is_const(&r->v)) {
        r->id = ++env->id_gen;
        r->off = 0;
        r->sflags = 0;
    }
}

void vm_neq_add(struct venv *env, const struct vreg *a, const struct vreg *b)
{
    struct vstate *st = env->cur;
    if (vs_is_const(&a->v) && !vs_is_const(&b->v)) {   /* the named one first */
        const struct vreg *t = a;
        a = b;
        b = t;
    }
    bool konst = vs_is_const(&b->v);
    if (!a->id || (!konst && !b->id) || vm_neq_known(env, a, b, true))
        return;
    if (st->nneq == VM_MAX_NEQ)
        prune(st);
    if (st->nneq == VM_MAX_NEQ) {   /* the oldest goes */
        for (uint32_t k = 1; k < VM_MAX_NEQ; k++)
            st->neq[k - 1] = st->neq[k];
        st->nneq--;
    }
    struct vneq e = {{a->id, konst ? 0 : b->id}, {a->off, konst ? 0 : b->off},
                     {a->sflags, konst ? 0 : b->sflags}, {0}, konst ? b->v.t.value : 0};
    st->neq[st->nneq++] = e;
}
