/*
 * bpf/abi.c - the context field table of bpf/abi.h: what each field of
 * struct cisc_ctx holds, as the verifier checks context loads.
 *
 * Invariant: one entry per field of struct vm_ctx, in offset order, each
 * 8 bytes wide (asserted against the struct below).
 */
#include "bpf/abi.h"

#define CTX_FIELD(fname, member, kind)                                         \
    {fname, offsetof(struct vm_ctx, member), sizeof(((struct vm_ctx *)0)->member), kind}

const struct vm_ctx_field vm_ctx_fields[] = {
    CTX_FIELD("data", data, VM_CTXF_INPUT),
    CTX_FIELD("data_end", data_end, VM_CTXF_INPUT_END),
    CTX_FIELD("out", out, VM_CTXF_OUTPUT),
    CTX_FIELD("out_end", out_end, VM_CTXF_OUTPUT_END),
    CTX_FIELD("offset", offset, VM_CTXF_SCALAR),
    CTX_FIELD("len", len, VM_CTXF_SCALAR),
    CTX_FIELD("flags", flags, VM_CTXF_SCALAR),
    CTX_FIELD("block", block, VM_CTXF_SCALAR),
    CTX_FIELD("arg[0]", arg[0], VM_CTXF_SCALAR),
    CTX_FIELD("arg[1]", arg[1], VM_CTXF_SCALAR),
    CTX_FIELD("arg[2]", arg[2], VM_CTXF_SCALAR),
    CTX_FIELD("arg[3]", arg[3], VM_CTXF_SCALAR),
};

const unsigned vm_ctx_nfields = sizeof(vm_ctx_fields) / sizeof(vm_ctx_fields[0]);

_Static_assert(sizeof(vm_ctx_fields) / sizeof(vm_ctx_fields[0]) * 8 == sizeof(struct vm_ctx),
               "one 8-byte entry per context field");
