/*
 * bpf/tnum.h - tracked numbers: which bits of a 64-bit value are known.
 *
 * A tnum (value, mask) stands for every x with (x & ~mask) == value: bits
 * set in mask are unknown, the others equal the bits of value. The
 * verifier keeps one per scalar (and per pointer's variable offset) beside
 * its ranges; bpf/vscalar.c keeps the two consistent.
 *
 * Invariants:
 *   1. value & mask == 0 for every tnum these functions return.
 *   2. Every operation is sound: if x is in a and y is in b, then
 *      x OP y is in tn_OP(a, b) (with the eBPF meaning of OP, e.g. shifts
 *      are taken modulo the width by the caller).
 */
#ifndef CISC_BPF_TNUM_H
#define CISC_BPF_TNUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm_tnum {
    uint64_t value;
    uint64_t mask;
};

static inline struct vm_tnum tn_const(uint64_t v)
{
    return (struct vm_tnum){v, 0};
}

static inline struct vm_tnum tn_unknown(void)
{
    return (struct vm_tnum){0, ~0ull};
}

static inline bool tn_is_const(struct vm_tnum a)
{
    return a.mask == 0;
}

/* True if x is one of the values a stands for. */
static inline bool tn_contains(struct vm_tnum a, uint64_t x)
{
    return (x & ~a.mask) == a.value;
}

/* The smallest tnum holding every value of [min, max]. */
struct vm_tnum tn_range(uint64_t min, uint64_t max);

struct vm_tnum tn_add(struct vm_tnum a, struct vm_tnum b);
struct vm_tnum tn_sub(struct vm_tnum a, struct vm_tnum b);
struct vm_tnum tn_mul(struct vm_tnum a, struct vm_tnum b);
struct vm_tnum tn_and(struct vm_tnum a, struct vm_tnum b);
struct vm_tnum tn_or(struct vm_tnum a, struct vm_tnum b);
struct vm_tnum tn_xor(struct vm_tnum a, struct vm_tnum b);
/* Shifts by a known amount, k < 64. */
struct vm_tnum tn_lsh(struct vm_tnum a, unsigned k);
struct vm_tnum tn_rsh(struct vm_tnum a, unsigned k);
struct vm_tnum tn_arsh(struct vm_tnum a, unsigned k);

/* Values in both a and b. Sets *empty when no value is in both. */
struct vm_tnum tn_intersect(struct vm_tnum a, struct vm_tnum b, bool *empty);

/* Every value of a and every value of b (the bits they agree on). */
struct vm_tnum tn_union(struct vm_tnum a, struct vm_tnum b);

/* True if every value of b is a value of a (b is contained in a). */
bool tn_subset(struct vm_tnum a, struct vm_tnum b);

/* The low `bytes` bytes of a, zero-extended (bytes 1, 2, 4 or 8). */
struct vm_tnum tn_trunc(struct vm_tnum a, unsigned bytes);
/* The low `bits` bits of a, sign-extended to 64 (bits 8, 16, 32 or 64). */
struct vm_tnum tn_sext(struct vm_tnum a, unsigned bits);
/* Byte order of the low `bits` bits reversed, upper bits zero. */
struct vm_tnum tn_bswap(struct vm_tnum a, unsigned bits);
/* a with its low 32 bits replaced by the low 32 bits of sub. */
struct vm_tnum tn_with_low32(struct vm_tnum a, struct vm_tnum sub);

/* Formats a as "0x..." when constant, else "(value=0x..;mask=0x..)". */
void tn_format(struct vm_tnum a, char *buf, size_t size);

#endif
