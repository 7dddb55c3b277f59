/*
 * bpf/jit_loop.h - finds the loops whose trip count is known when they
 * are entered, so the JIT can run a copy of them without a budget check
 * per round (bpf/jit_x86_64.c, "counted loops").
 *
 * A counted loop is a back-edge `ja` at pc `back` to a head `t` that is
 * `if (ra >= rb) goto e` (64-bit unsigned, rb a register or a constant, e
 * past the loop), where:
 *   - the body t+1..back-1 only computes, loads, stores and jumps forward
 *     inside the loop (no call, exit, backward jump or jump out);
 *   - exactly one instruction writes ra: `ra += 1`, on every path (no jump
 *     passes over it); nothing writes rb;
 *   - only the back-edge jumps to t, and nothing jumps into the second
 *     slot of an ld_imm64.
 *
 * Invariants (what the JIT relies on):
 *   1. Entered at t with ra < rb, such a loop runs exactly rb - ra rounds
 *      and leaves only through the head; each round runs every instruction
 *      of t..back at most once, so it counts at most `cmax` instructions.
 *      With ra >= rb it runs no round.
 */
#ifndef CISC_BPF_JIT_LOOP_H
#define CISC_BPF_JIT_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/interp_int.h"

struct vm_jit_loop {
    uint32_t head, back;   /* t and the back-edge's pc */
    uint8_t ra, rb;        /* BPF registers; rb unused when rb_imm */
    bool rb_imm;           /* rb is the head's constant (sign-extended imm) */
    uint32_t cmax;         /* instructions counted per round, at most */
};

/* Whether the jump at pc `back` closes a counted loop (see above); fills
 * *out when it does. targets[p] = how many jumps and calls land on p. */
bool vm_jit_counted_loop(const struct vm_exec *x, const uint32_t *targets, uint32_t back,
                         struct vm_jit_loop *out);

#endif
