/*
 * bpf/vscalar.h - the verifier's abstract value of a 64-bit scalar.
 *
 * A vm_scalar stands for the set of 64-bit values x that satisfy all of:
 *   - tnum t contains x (known bits);
 *   - umin <= x <= umax (unsigned), smin <= (int64)x <= smax (signed);
 *   - u32min <= (uint32)x <= u32max, s32min <= (int32)x <= s32max.
 * Every ALU operation of RFC 9669 has an abstract version here, and so has
 * every conditional jump (refinement of both operands on either side).
 *
 * Invariants:
 *   1. Soundness: for every operation, if the inputs contain concrete
 *      values, the output contains the concrete result (tests check this by
 *      sampling).
 *   2. After vs_sync() all ten facts agree with each other as far as this
 *      module can deduce (bounds tightened from the tnum, 32-bit bounds
 *      from 64-bit ones and back, signed from unsigned and back).
 *   3. An empty set (a contradiction, e.g. the impossible side of a
 *      branch) is reported by vs_refine(), never returned silently.
 */
#ifndef CISC_BPF_VSCALAR_H
#define CISC_BPF_VSCALAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/tnum.h"

struct vm_scalar {
    struct vm_tnum t;
    uint64_t umin, umax;
    int64_t smin, smax;
    uint32_t u32min, u32max;
    int32_t s32min, s32max;
};

/* Every 64-bit value. */
struct vm_scalar vs_unknown(void);
/* Exactly v. */
struct vm_scalar vs_const(uint64_t v);
/* Every value in [min, max] (unsigned). */
struct vm_scalar vs_urange(uint64_t min, uint64_t max);
/* Every value in [min, max] (signed). */
struct vm_scalar vs_srange(int64_t min, int64_t max);

static inline bool vs_is_const(const struct vm_scalar *s)
{
    return tn_is_const(s->t);
}

/* True if concrete x is in s. */
bool vs_contains(const struct vm_scalar *s, uint64_t x);
/* True if every value of cur is in old (cur is contained in old). */
bool vs_subset(const struct vm_scalar *old, const struct vm_scalar *cur);
/* True if the set is empty (contradictory facts). */
bool vs_is_empty(const struct vm_scalar *s);

/* dst = the least value covering dst and src: hulls of the ranges, the
 * known bits both share. Not synced (vs_sync), so that a join can widen
 * the raw hull first. */
void vs_hull(struct vm_scalar *dst, const struct vm_scalar *src);

/* Tightens every fact from the others (invariant 2). */
void vs_sync(struct vm_scalar *s);

/* dst = dst OP src for an ALU operation (VM_ADD ... VM_ARSH, not MOV, NEG
 * or END); is64 false for the ALU (32-bit) class, whose result is the low
 * 32 bits zero-extended. sdiv/smod select the signed DIV/MOD (off 1). */
void vs_alu(struct vm_scalar *dst, const struct vm_scalar *src, unsigned op, bool is64,
            bool is_signed);
/* dst = -dst (64 or 32 bits). */
void vs_neg(struct vm_scalar *dst, bool is64);
/* dst = the low `bytes` bytes of dst, zero-extended (1, 2, 4, 8). */
void vs_trunc(struct vm_scalar *dst, unsigned bytes);
/* dst = the low `bits` bits of dst, sign-extended to 64 bits. */
void vs_sext(struct vm_scalar *dst, unsigned bits);
/* dst = byte swap of the low `bits` bits (16, 32, 64), upper bits zero. */
void vs_bswap(struct vm_scalar *dst, unsigned bits);

/* Refines a and b (in place) with the fact that `a OP b` is `taken` for
 * the conditional jump op (VM_JEQ ... VM_JSLE, VM_JSET), 64-bit or 32-bit
 * (JMP32) compare. Returns false if that fact is impossible. */
bool vs_refine(struct vm_scalar *a, struct vm_scalar *b, unsigned op, bool is64,
               bool taken);

/* Formats s compactly, e.g. "42", "[0,4095]" or with all facts. */
void vs_format(const struct vm_scalar *s, char *buf, size_t size);

#endif
