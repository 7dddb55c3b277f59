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

/* The body's own checks: what it runs, where it jumps, who writes ra and
 * rb. Returns the pc of the one `ra += 1`, or 0 when the body does not
 * qualify. */
static uint32_t body_step(const struct vm_exec *x, uint32_t t, uint32_t back, unsigned ra,
                          int rb)
{
    uint32_t step = 0, reach = 0;   /* reach: farthest forward target so far */
    for (uint32_t i = t + 1; i < back; i++) {
        const struct vm_dinsn *d = &x->code[i];
        if (d->op == XOP_LDDW) {
            if (writes(d, ra) || (rb >= 0 && writes(d, (unsigned)rb)))
                return 0;
            i++;   /* slot 2: checked below not to be a target */
            continue;
        }
        if (is_cond(d->op) || d->op == XOP_JA) {
            uint32_t tg = target_of(x, d);
            if (tg <= i || tg > back)
                return 0;
            if (tg > reach)
                reach = tg;
            continue;
        }
        if (!is_straight(d->op) || (rb >= 0 && writes(d, (unsigned)rb)))
            return 0;
        if (!writes(d, ra))
            continue;
        if (step || d->op != XOP_ADD64_K || d->imm != 1 || d->dst != ra || reach > i)
            return 0;   /* a second write, not `ra += 1`, or a jump passes over it */
        step = i;
    }
    return step;
}

/* No jump lands on the second slot of an ld_imm64 inside t..back. */
static bool slots_untouched(const struct vm_exec *x, const uint32_t *targets, uint32_t t,
                            uint32_t back)
{
    for (uint32_t i = t + 1; i + 1 < back; i++)
        if (x->code[i].op == XOP_LDDW && targets[i + 1])
            return false;
    return true;
}

bool vm_jit_counted_loop(const struct vm_exec *x, const uint32_t *targets, uint32_t back,
                         struct vm_jit_loop *out)
{
    const struct vm_dinsn *j = &x->code[back];
    if (back >= x->n || j->op != XOP_JA)
        return false;
    uint32_t t = target_of(x, j);
    if (t + 2 > back || targets[t] != 1)
        return false;
    const struct vm_dinsn *h = &x->code[t];
    bool imm = h->op == XOP_JGE_K;
    if ((!imm && h->op != XOP_JGE_X) || target_of(x, h) <= back)
        return false;
    unsigned ra = h->dst;
    int rb = imm ? -1 : h->src;
    if (ra >= VM_REG_FP || (!imm && (h->src >= VM_REG_FP || h->src == ra)))
        return false;
    if (!body_step(x, t, back, ra, rb) || !slots_untouched(x, targets, t, back))
        return false;
    *out = (struct vm_jit_loop){t, back, (uint8_t)ra, (uint8_t)(imm ? 0 : rb), imm, back - t + 1};
    return true;
}
