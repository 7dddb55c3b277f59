/*
 * bpf/verifier.h - static proof that a program is memory- and type-safe.
 *
 * See verifier.c's header comment for the algorithm. On success sets
 * prog->verified and prog->stack_depth.
 *
 * What a verified program may rely on at run time (the runtime's side of
 * the contract): r1 points to a struct vm_ctx; [data, data_end) and
 * [out, out_end) are readable (out also writable) buffers of at most
 * VM_MAX_BUF_SIZE (256 MiB) bytes each, out 8-byte aligned for atomics;
 * each frame has VM_STACK_SIZE bytes of stack; rodata is prog->rodata, in
 * place, with the slots of prog->rptrs holding their targets' addresses;
 * cisc_state() returns VM_STATE_SIZE writable bytes. Stack bytes a program
 * reads were written by it first; no pointer value reaches the output,
 * the state area, r0 of the main function or a helper's scalar argument.
 */
#ifndef CISC_BPF_VERIFIER_H
#define CISC_BPF_VERIFIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/abi.h"
#include "bpf/prog.h"

struct vm_verify_opts {
    uint64_t max_states;       /* explored states before giving up; 0 = 1,000,000 */
    uint64_t max_insns;        /* instructions processed before giving up; 0 = 1,000,000 */
    /* Called with each line of the full trace (`--log`); NULL = none. */
    void (*log)(void *arg, const char *line);
    void *log_arg;
};

struct vm_verify_result {
    uint64_t insns_processed;
    uint64_t states;           /* states stored for pruning */
    uint64_t exact_insns;      /* of insns_processed, those of the second, no-join
                                  exploration (0 if it did not run) */
    uint64_t elapsed_ns;
    uint32_t error_pc;         /* valid on rejection */
    /* On rejection: "prog.c:14: R3 points to input buffer, offset 4096
     * size 1 is outside the checked range [0, 4096)" plus the instruction. */
    char msg[1024];
};

/* Returns 0 if the program is proved safe, -EACCES (or -EINVAL for a
 * malformed program, -E2BIG for exceeded limits) with res->msg set. */
int vm_verify(struct vm_prog *prog, const struct vm_verify_opts *opts,
              struct vm_verify_result *res);

#endif
