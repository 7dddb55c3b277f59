/*
 * bpf/jit_loop.c - counted loops for the JIT (see jit_loop.h).
 */
#include "bpf/jit_loop.h"

#include "bpf/insn.h"

static bool is_cond(int op)
{
    return op >= XOP_JEQ_K && op <= XOP_JSLE32_X;
}

static bool is_atomic(int op)
{
    return op >= XOP_AADD32 && op <= XOP_CMPXCHG64;
}

/* Computes, loads or stores: no jump, call, exit or invalid slot. */
static bool is_straight(int op)
{
    return (op >= XOP_ADD64_K && op <= XOP_BSWAP64) || (op >= XOP_LDXB && op <= XOP_CMPXCHG64) ||
           op == XOP_LDDW;
}

/* Whether d may change BPF register r (atomics: conservatively both the
 * fetched-into source and r0). */
static bool writes(const struct vm_dinsn *d, unsigned r)
{
    if (is_atomic(d->op))
        return d->src == r || r == 0;
    if (d->op >= XOP_STB && d->op <= XOP_STXDW)
        return false;
    return d->dst == r;
}

static uint32_t target_of(const struct vm_exec *x, const struct vm_dinsn *d)
{
    return (uint32_t)(d->aux.target - x->code);
}

/* The body [from, back): what it runs, where it jumps, who writes ra and
 * rb. Returns the pc of the one `ra += 1`, or UINT32_MAX when the body
 * does not qualify. */
static uint32_t body_step(const struct vm_exec *x, uint32_t from, uint32_t back, unsigned ra,
                          int rb)
{
    uint32_t step = UINT32_MAX, reach = 0;   /* reach: farthest target inside so far */
    for (uint32_t i = from; i < back; i++) {
        const struct vm_dinsn *d = &x->code[i];
        if (d->op == XOP_LDDW) {
            if (writes(d, ra) || (rb >= 0 && writes(d, (unsigned)rb)))
                return UINT32_MAX;
            i++;   /* slot 2: checked below not to be a target */
            continue;
        }
        if (is_cond(d->op) || d->op == XOP_JA) {
            uint32_t tg = target_of(x, d);
            if (tg <= i)
                return UINT32_MAX;
            if (tg <= back && tg > reach)
                reach = tg;   /* past back: an early exit */
            continue;
        }
        if (!is_straight(d->op) || (rb >= 0 && writes(d, (unsigned)rb)))
            return UINT32_MAX;
        if (!writes(d, ra))
            continue;
        if (step != UINT32_MAX || d->op != XOP_ADD64_K || d->imm != 1 || d->dst != ra ||
            reach > i)
            return UINT32_MAX;   /* a second write, not `ra += 1`, or a jump passes over it */
        step = i;
    }
    return step;
}

/* No jump lands on the second slot of an ld_imm64 inside t..back. */
static bool slots_untouched(const struct vm_exec *x, const uint32_t *targets, uint32_t t,
                            uint32_t back)
{
    for (uint32_t i = t; i + 1 < back; i++)
        if (x->code[i].op == XOP_LDDW && targets[i + 1])
            return false;
    return true;
}

/* The loop's test: head-tested `if (ra >= rb) goto out` at t, or the
 * bottom-tested back-edge `if (ra < rb) / (ra != rb) goto t`. */
static bool loop_test(const struct vm_exec *x, uint32_t back, struct vm_jit_loop *l)
{
    const struct vm_dinsn *j = &x->code[back], *h;
    l->back = back;
    l->head = target_of(x, j);
    bool swapped;   /* the counter is the source: `rb <= ra`, `rb > ra` */
    if (j->op == XOP_JA) {
        h = &x->code[l->head];
        swapped = h->op == XOP_JLE_X;
        if ((h->op != XOP_JGE_K && h->op != XOP_JGE_X && !swapped) || target_of(x, h) <= back)
            return false;
        l->bottom = false;
    } else {
        h = j;
        swapped = h->op == XOP_JGT_X;
        if (h->op != XOP_JLT_K && h->op != XOP_JLT_X && h->op != XOP_JNE_K &&
            h->op != XOP_JNE_X && !swapped)
            return false;
        l->bottom = true;
    }
    l->rb_imm = h->op == XOP_JGE_K || h->op == XOP_JLT_K || h->op == XOP_JNE_K;
    l->ra = swapped ? h->src : h->dst;
    l->rb = l->rb_imm ? 0 : swapped ? h->dst : h->src;
    l->imm = h->imm;
    return l->ra < VM_REG_FP && (l->rb_imm || (l->rb < VM_REG_FP && l->rb != l->ra));
}

bool vm_jit_counted_loop(const struct vm_exec *x, const uint32_t *targets, uint32_t back,
                         struct vm_jit_loop *out)
{
    const struct vm_dinsn *j = &x->code[back];
    struct vm_jit_loop l;
    if (back >= x->n || (j->op != XOP_JA && !is_cond(j->op)) || !loop_test(x, back, &l))
        return false;
    if (l.head >= back || (!l.bottom && l.head + 2 > back) || targets[l.head] != 1)
        return false;
    l.step = body_step(x, l.bottom ? l.head : l.head + 1, back, l.ra, l.rb_imm ? -1 : l.rb);
    if (l.step == UINT32_MAX || !slots_untouched(x, targets, l.head, back))
        return false;
    l.cmax = back - l.head + 1;
    *out = l;
    return true;
}
