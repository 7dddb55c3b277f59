/*
 * bpf/tnum.c - tracked-number arithmetic (see tnum.h).
 *
 * The carry-propagation trick for add and sub: compute the sum of the
 * smallest and of the largest members; every bit where the two differ,
 * or where an input bit was unknown, may differ between members.
 */
#include "bpf/tnum.h"

#include <stdio.h>

struct vm_tnum tn_range(uint64_t min, uint64_t max)
{
    uint64_t chi = min ^ max;
    if (chi == 0)
        return tn_const(min);
    unsigned bits = 64 - (unsigned)__builtin_clzll(chi);
    if (bits >= 64)
        return tn_unknown();
    uint64_t delta = (1ull << bits) - 1;
    return (struct vm_tnum){min & ~delta, delta};
}

struct vm_tnum tn_add(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t sm = a.mask + b.mask;
    uint64_t sv = a.value + b.value;
    uint64_t sigma = sm + sv;
    uint64_t chi = sigma ^ sv;
    uint64_t mu = chi | a.mask | b.mask;
    return (struct vm_tnum){sv & ~mu, mu};
}

struct vm_tnum tn_sub(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t dv = a.value - b.value;
    uint64_t alpha = dv + a.mask;
    uint64_t beta = dv - b.mask;
    uint64_t chi = alpha ^ beta;
    uint64_t mu = chi | a.mask | b.mask;
    return (struct vm_tnum){dv & ~mu, mu};
}

/* Long multiplication: the known product of the known parts, plus, for
 * every bit of a that is 1 or unknown, a partial product whose bits are
 * unknown where b's (shifted) bits may be set. */
struct vm_tnum tn_mul(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t known = a.value * b.value;
    struct vm_tnum acc = tn_const(0);
    while (a.value || a.mask) {
        if (a.value & 1)
            acc = tn_add(acc, (struct vm_tnum){0, b.mask});
        else if (a.mask & 1)
            acc = tn_add(acc, (struct vm_tnum){0, b.value | b.mask});
        a = tn_rsh(a, 1);
        b = tn_lsh(b, 1);
    }
    return tn_add(tn_const(known), acc);
}

struct vm_tnum tn_and(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t alpha = a.value | a.mask;
    uint64_t beta = b.value | b.mask;
    uint64_t v = a.value & b.value;
    return (struct vm_tnum){v, alpha & beta & ~v};
}

struct vm_tnum tn_or(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t v = a.value | b.value;
    uint64_t mu = a.mask | b.mask;
    return (struct vm_tnum){v, mu & ~v};
}

struct vm_tnum tn_xor(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t v = a.value ^ b.value;
    uint64_t mu = a.mask | b.mask;
    return (struct vm_tnum){v & ~mu, mu};
}

struct vm_tnum tn_lsh(struct vm_tnum a, unsigned k)
{
    return (struct vm_tnum){a.value << k, a.mask << k};
}

struct vm_tnum tn_rsh(struct vm_tnum a, unsigned k)
{
    return (struct vm_tnum){a.value >> k, a.mask >> k};
}

/* An unknown sign bit sits in mask, so shifting mask arithmetically makes
 * every copied sign bit unknown, while value's sign bit is then 0. */
struct vm_tnum tn_arsh(struct vm_tnum a, unsigned k)
{
    return (struct vm_tnum){(uint64_t)((int64_t)a.value >> k),
                            (uint64_t)((int64_t)a.mask >> k)};
}

struct vm_tnum tn_intersect(struct vm_tnum a, struct vm_tnum b, bool *empty)
{
    if ((a.value ^ b.value) & ~(a.mask | b.mask))
        *empty = true;
    uint64_t v = a.value | b.value;
    uint64_t mu = a.mask & b.mask;
    return (struct vm_tnum){v & ~mu, mu};
}

struct vm_tnum tn_union(struct vm_tnum a, struct vm_tnum b)
{
    uint64_t mu = a.mask | b.mask | (a.value ^ b.value);
    return (struct vm_tnum){a.value & ~mu, mu};
}

bool tn_subset(struct vm_tnum a, struct vm_tnum b)
{
    if (b.mask & ~a.mask)
        return false;
    return a.value == (b.value & ~a.mask);
}

struct vm_tnum tn_trunc(struct vm_tnum a, unsigned bytes)
{
    if (bytes >= 8)
        return a;
    uint64_t m = (1ull << (bytes * 8)) - 1;
    return (struct vm_tnum){a.value & m, a.mask & m};
}

struct vm_tnum tn_sext(struct vm_tnum a, unsigned bits)
{
    if (bits >= 64)
        return a;
    unsigned k = 64 - bits;
    return (struct vm_tnum){(uint64_t)((int64_t)(a.value << k) >> k),
                            (uint64_t)((int64_t)(a.mask << k) >> k)};
}

static uint64_t bswap_bits(uint64_t x, unsigned bits)
{
    switch (bits) {
    case 16: return __builtin_bswap16((uint16_t)x);
    case 32: return __builtin_bswap32((uint32_t)x);
    default: return __builtin_bswap64(x);
    }
}

/* Reordering bytes moves each bit, known or not, to a new place. */
struct vm_tnum tn_bswap(struct vm_tnum a, unsigned bits)
{
    return (struct vm_tnum){bswap_bits(a.value, bits), bswap_bits(a.mask, bits)};
}

struct vm_tnum tn_with_low32(struct vm_tnum a, struct vm_tnum sub)
{
    const uint64_t hi = 0xffffffff00000000ull;
    return (struct vm_tnum){(a.value & hi) | (sub.value & ~hi),
                            (a.mask & hi) | (sub.mask & ~hi)};
}

void tn_format(struct vm_tnum a, char *buf, size_t size)
{
    if (tn_is_const(a))
        snprintf(buf, size, "%#llx", (unsigned long long)a.value);
    else
        snprintf(buf, size, "(value=%#llx;mask=%#llx)", (unsigned long long)a.value,
                 (unsigned long long)a.mask);
}
