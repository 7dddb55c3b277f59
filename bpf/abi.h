/*
 * bpf/abi.h - the host side of the program ABI of bpf/include/cisc_bpf.h.
 *
 * struct vm_ctx is the host mirror of struct cisc_ctx; the verifier checks
 * context accesses against vm_ctx_fields[], field by field.
 * Invariants:
 *   1. Layout equals struct cisc_ctx in cisc_bpf.h (asserted below).
 *   2. The context is read-only for programs; a load must cover exactly one
 *      whole field (8 bytes, aligned), except scalar fields which may also
 *      be read in their low 4 bytes.
 */
#ifndef CISC_BPF_ABI_H
#define CISC_BPF_ABI_H

#include <assert.h>   /* static_assert, in C and in the C++ tests */
#include <stddef.h>
#include <stdint.h>

#define VM_ABI_VERSION 1
#define VM_STATE_SIZE 4096     /* CISC_STATE_SIZE */

/* Largest input or output buffer a program may be given; vm_run() refuses
 * larger ones, and the verifier's range arithmetic relies on the bound. */
#define VM_MAX_BUF_SIZE (1 << 28)

struct vm_ctx {
    uint64_t data;        /* host address of the input */
    uint64_t data_end;
    uint64_t out;
    uint64_t out_end;
    uint64_t offset;
    uint64_t len;
    uint64_t flags;
    uint64_t block;
    uint64_t arg[4];
};
static_assert(sizeof(struct vm_ctx) == 96, "cisc_ctx is 96 bytes");
static_assert(offsetof(struct vm_ctx, arg) == 64, "cisc_ctx.arg at 64");

#define VM_F_FIRST_BLOCK (1ull << 0)
#define VM_F_LAST_BLOCK  (1ull << 1)

/* What a context field holds, as the verifier sees it. */
enum vm_ctx_kind {
    VM_CTXF_INPUT,       /* pointer to the start of the input buffer */
    VM_CTXF_INPUT_END,   /* pointer one past the input buffer */
    VM_CTXF_OUTPUT,
    VM_CTXF_OUTPUT_END,
    VM_CTXF_SCALAR,
};

struct vm_ctx_field {
    const char *name;
    uint32_t offset;
    uint32_t size;
    enum vm_ctx_kind kind;
};

extern const struct vm_ctx_field vm_ctx_fields[];
extern const unsigned vm_ctx_nfields;

#endif
