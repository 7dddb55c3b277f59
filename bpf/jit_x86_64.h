/*
 * bpf/jit_x86_64.h - translates a verified, prepared eBPF program into
 * x86-64 machine code that vm_run() runs instead of the interpreter.
 *
 * The JIT is a second engine for the same semantics: it translates the
 * interpreter's pre-decoded form (bpf/interp_int.h), so both engines see
 * the same resolved jump targets, helpers and rodata addresses, and
 * vm_run() keeps doing everything around the run (context contract,
 * regions, state area, fault messages).
 *
 * Invariants:
 *   1. Only verified programs are compiled (prog->verified); anything the
 *      JIT refuses (-ENOTSUP) is run by the interpreter, never with a
 *      wrong translation.
 *   2. Generated code is never writable and executable at once: it is
 *      written into a private read+write mapping, which is then turned
 *      read+exec; it is unmapped by vm_jit_free() (vm_unprepare()).
 *   3. The instruction budget is counted exactly as the interpreter
 *      counts it (every executed instruction, checked at backward jumps,
 *      local calls and after helper calls), so the same program stops at
 *      the same pc with the same `used`.
 *   4. The checked mode (env->checked) always runs in the interpreter.
 */
#ifndef CISC_BPF_JIT_X86_64_H
#define CISC_BPF_JIT_X86_64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/helpers.h"
#include "bpf/prog.h"

/* How a JIT run ended (vm_jit_ctl.fault_pc says where). */
enum vm_jit_end {
    VM_JIT_OK = 0,
    VM_JIT_BUDGET,    /* instruction budget exhausted: -ETIME */
    VM_JIT_DEPTH,     /* local calls nested too deep: -EFAULT */
    VM_JIT_CALLX,     /* callx through a number that names no helper: -EINVAL */
    VM_JIT_INVALID,   /* invalid instruction or off the end: -EINVAL */
};

/* The run's state the generated code reads and writes; lives on
 * vm_run()'s stack. Offsets are part of the code generator's contract
 * (asserted in jit_x86_64.c). */
struct vm_jit_ctl {
    uint64_t r1, r2;             /* in: initial r1, r2 */
    uint64_t fp_top;             /* in: r10 of the entry frame */
    uint64_t fp_limit;           /* in: a local call from r10 <= this is too deep */
    int64_t left;                /* in/out: budget minus instructions counted */
    uint64_t r0;                 /* out */
    uint64_t saved_rsp;          /* generated code's own */
    const struct vm_helper *helper;   /* the helper being called */
    uint64_t callx;              /* a callx's number; out: the one that named no helper */
    uint64_t callx_bad;          /* set when that happened */
    uint64_t charge;             /* the last helper's env->charge */
    struct vm_env *env;
    uint8_t *state_area;         /* zeroed lazily when env->state is NULL */
    uint32_t fault_pc;           /* out */
    bool own_state;              /* out: env->state was pointed at state_area */
};

/* Compiles prog (verified and vm_prepare()d) into native code kept in
 * prog->jit. Returns 0, -ENOTSUP (not an x86-64 host, or not verified:
 * the interpreter runs it),
 * -ENOMEM. Idempotent. Instructions that decoded as invalid become code
 * that ends the run as the interpreter would (VM_JIT_INVALID). */
int vm_jit_compile(struct vm_prog *prog);

/* Unmaps prog's native code and sets prog->jit to NULL. NULL-safe. */
void vm_jit_free(struct vm_prog *prog);

/* Runs the compiled code of prog with the run state in *c. Returns how
 * it ended. Called by vm_run() only. */
enum vm_jit_end vm_jit_exec(const struct vm_prog *prog, struct vm_jit_ctl *c);

/* Bytes of native code prog was compiled to, 0 when not compiled. */
size_t vm_jit_size(const struct vm_prog *prog);

/* The native code of instruction pc: *code and *len (0 for the second
 * slot of ld_imm64). Returns 0 or -ENOENT (not compiled, pc out of
 * range). */
int vm_jit_insn_code(const struct vm_prog *prog, uint32_t pc, const uint8_t **code,
                     size_t *len);

/* True when this build has a JIT (x86-64 host). */
bool vm_jit_available(void);

#endif
