/*
 * bpf/jit_loop.h - finds the loops whose trip count is known when they
 * are entered, so the JIT can run a copy of them without a budget check
 * per round (bpf/jit_x86_64.c, "counted loops").
 *
 * A counted loop t..back is one of
 *   - head-tested: a back-edge `ja` at `back` to a head t that is
 *     `if (ra >= rb) goto e` or `if (rb <= ra) goto e` (e past the loop);
 *   - bottom-tested (clang's rotated loops): a back-edge at `back` that is
 *     `if (ra < rb) goto t`, `if (rb > ra) goto t` or `if (ra != rb) goto t`;
 * 64-bit unsigned compares, rb a register or the jump's constant, where:
 *   - the body (the loop without the head test or the back-edge) only
 *     computes, loads, stores and jumps forward: inside the loop, or out
 *     of it past `back` (an early exit); no call, exit or backward jump;
 *   - exactly one instruction writes ra: `ra += 1`, which no jump inside
 *     the loop passes over; nothing writes rb;
 *   - only the back-edge jumps to t, and nothing jumps into the second
 *     slot of an ld_imm64 inside the loop.
 *
 * Invariants (what the JIT relies on):
 *   1. Entered at t with ra < rb, such a loop runs at most R = rb - ra
 *      rounds (exactly R unless it exits early), each running every
 *      instruction of t..back at most once, so it counts at most `cmax`
 *      instructions per round. After k whole rounds ra = ra0 + k, so at an
 *      early exit the rounds not run, the current one included, are
 *      rb - ra (+ 1 past the increment).
 */
#ifndef CISC_BPF_JIT_LOOP_H
#define CISC_BPF_JIT_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/interp_int.h"

struct vm_jit_loop {
    uint32_t head, back;   /* t and the back-edge's pc */
    uint32_t step;         /* pc of `ra += 1` */
    uint8_t ra, rb;        /* BPF registers; rb unused when rb_imm */
    bool rb_imm;           /* rb is the test's constant (sign-extended imm) */
    bool bottom;           /* bottom-tested (the back-edge is the test) */
    int32_t imm;           /* the constant when rb_imm */
    uint32_t cmax;         /* instructions counted per round, at most */
};

/* Whether the jump at pc `back` closes a counted loop (see above); fills
 * *out when it does. targets[p] = how many jumps and calls land on p. */
bool vm_jit_counted_loop(const struct vm_exec *x, const uint32_t *targets, uint32_t back,
                         struct vm_jit_loop *out);

#endif
