/*
 * bpf/blocks.h - runs a program over an input the way the device does:
 * one invocation per block, with a state area kept across the blocks.
 *
 * This is the one definition of block processing (docs/BPF.md, "Blocks"),
 * used by `cisc bpf run`, the corpus tests and the device's bpf steps
 * (through progs_run, device/progs/progs_run.c). For an input of L bytes
 * and block size B:
 *   - blocks are input[k*B, min((k+1)*B, L)), k = 0, 1, ...; an empty input
 *     is one empty block;
 *   - (a continued run, opts.first_block / state / more, numbers its blocks
 *     from first_block, keeps the caller's state, and leaves the flags off
 *     where the input goes on before or after it);
 *   - ctx.offset = base offset + k*B, ctx.len = block length, ctx.block = k,
 *     ctx.flags has CISC_F_FIRST_BLOCK on k = 0 and CISC_F_LAST_BLOCK on the
 *     final block (both on a single block);
 *   - ctx.out points at a zeroed buffer of out_cap bytes, fresh per block;
 *   - cisc_state() returns the same VM_STATE_SIZE bytes, zeroed before the
 *     first block, for every block of the run;
 *   - the return value is the low 32 bits of r0, as a signed int: n >= 0
 *     means out[0..n) is this block's output (n <= out_cap), n < 0 is an
 *     errno and stops the run.
 * Invariants:
 *   1. The caller's input is never written (the verifier makes the input
 *      read-only). Each block is copied into a private buffer first,
 *      unless the caller sets opts.in_place; then ctx.data points into
 *      the input. In place, bytes that change during the run (a device
 *      READ's view of the media racing a write, a file mapped by `cisc
 *      bpf run`) are seen as they are: safe, since the verifier assumes
 *      nothing about input bytes and helpers are bounded by lengths.
 *   2. The run stops at the first failing block; outputs already delivered
 *      stay delivered (on_block saw them).
 */
#ifndef CISC_BPF_BLOCKS_H
#define CISC_BPF_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/helpers.h"
#include "bpf/prog.h"

#define VM_BLOCK_SIZE_DEFAULT 4096u
#define VM_BLOCK_SIZE_MAX     (64u << 20)

/* What one block did. */
struct vm_block_result {
    uint64_t index;
    uint64_t offset;         /* ctx.offset */
    uint32_t len;            /* input bytes */
    int rc;                  /* 0, or vm_run()'s -errno (-ETIME: budget) */
    int32_t ret;             /* the program's return value when rc == 0 */
    uint64_t insns;          /* instructions executed */
    const uint8_t *out;      /* ret bytes of output when rc == 0 && ret > 0 */
    const char *fault;       /* vm_env.fault when rc != 0, else NULL */
};

struct vm_blocks_opts {
    uint32_t block_size;     /* 0 = VM_BLOCK_SIZE_DEFAULT */
    uint32_t out_cap;        /* output bytes per block; 0 = 2 * block size */
    uint64_t budget;         /* instructions per block; 0 = VM_DEFAULT_BUDGET */
    uint64_t offset;         /* file offset of input[0] */
    uint64_t arg[4];
    bool checked;            /* run with run-time bounds checks (debug) */
    bool in_place;           /* blocks point into the input instead of being
                                copied (invariant 1) */
    vm_trace_fn trace;       /* trace messages; may be NULL */
    void *trace_arg;
    /* Called after every block (including a failing one); may be NULL.
     * A non-zero return stops the run and becomes its result. */
    int (*on_block)(void *arg, const struct vm_block_result *r);
    void *on_block_arg;
    /* Continuation: one input split over several runs (the device's bpf
     * streams). All zero means a run of its own, as described above. */
    void *state;             /* VM_STATE_SIZE bytes kept by the caller, used as
                                they are (not zeroed); NULL = fresh zeroed area */
    uint64_t first_block;    /* ctx.block of input[0]'s block; CISC_F_FIRST_BLOCK
                                is set only when it is 0 */
    bool more;               /* the input continues in a later run: its final
                                block does not get CISC_F_LAST_BLOCK */
};

struct vm_blocks_stats {
    uint64_t blocks;         /* invocations made */
    uint64_t in_bytes;
    uint64_t out_bytes;
    uint64_t insns;          /* total instructions */
    uint64_t insns_max;      /* most used by one block */
};

/* Runs prog, which must be verified and prepared (vm_prepare), over
 * input[0..len). Returns 0 when every block succeeded; otherwise the
 * failing block's vm_run() error, -ERANGE when it returned more bytes than
 * out_cap, -ECANCELED when it returned a negative errno (the value is in
 * the last vm_block_result), -EINVAL for bad options, -EPERM for an
 * unverified program, -ENOMEM, or on_block's non-zero return. */
int vm_blocks_run(const struct vm_prog *prog, const void *input, size_t len,
                  const struct vm_blocks_opts *opts, struct vm_blocks_stats *stats);

#endif
