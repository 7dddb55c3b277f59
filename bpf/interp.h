/*
 * bpf/interp.h - the eBPF interpreter (RFC 9669, full ISA) with an
 * instruction budget.
 *
 * Invariants:
 *   1. Re-entrant: any number of threads may run the same prepared
 *      program at once; all mutable state is in the caller's vm_env and
 *      the interpreter's own stack frame.
 *   2. The budget is checked on backward jumps and calls, so a verified
 *      program cannot run forever; exhausting it returns -ETIME. Helper
 *      calls add the work their helper charged (helpers.h, invariant 5).
 *   3. In checked mode (env->checked) every load, store and helper memory
 *      argument is bounds-checked against the regions the invocation owns;
 *      a violation returns -EFAULT with env->fault set (a verifier bug if
 *      the program was verified).
 */
#ifndef CISC_BPF_INTERP_H
#define CISC_BPF_INTERP_H

#include <stdint.h>

#include "bpf/abi.h"
#include "bpf/helpers.h"
#include "bpf/prog.h"

/* Prepares prog for execution (pre-decoding into prog->exec). Called once,
 * before the program is shared between threads. Returns 0 or -errno. */
int vm_prepare(struct vm_prog *prog);

/* Frees what vm_prepare() allocated (prog->exec) and sets it to NULL.
 * No-op when the program was never prepared. vm_prog_free() calls it. */
void vm_unprepare(struct vm_prog *prog);

/* Runs prog with r1 = ctx: as native code when prog was JIT-compiled
 * (bpf/jit_x86_64.h) and neither env->checked nor env->interp is set,
 * otherwise in the interpreter; both give the same results, instruction
 * counts and faults. Returns 0 and sets *ret to r0, or -ETIME
 * (budget exhausted), -EFAULT (checked-mode fault, or local calls nested
 * deeper than VM_MAX_CALL_DEPTH), -EINVAL (invalid instruction reached,
 * only possible in unverified programs; or ctx buffers that break the
 * verifier's runtime contract: larger than VM_MAX_BUF_SIZE, end before
 * start, output not 8-byte aligned), -ENOEXEC (not prepared).
 * env->used is set in every case; env->fault_pc/fault on -EFAULT and
 * -EINVAL. */
int vm_run(const struct vm_prog *prog, struct vm_ctx *ctx, struct vm_env *env,
           uint64_t *ret);

/* Runs prog with r1 = mem, r2 = len (the conformance-suite convention);
 * in checked mode [mem, mem+len) is the only accessible region besides the
 * stack and rodata. */
int vm_run_raw(const struct vm_prog *prog, void *mem, uint64_t len, struct vm_env *env,
               uint64_t *ret);

#endif
