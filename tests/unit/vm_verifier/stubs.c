/*
 * tests/unit/vm_verifier/stubs.c - temporary stand-ins, used only until
 * the interpreter (helpers.c, abi.c) and loader (prog.c) branches are
 * merged: every definition is weak, so the real ones win as soon as they
 * are linked in.
 */
#include <stdio.h>

#include "bpf/abi.h"
#include "bpf/helpers.h"
#include "bpf/prog.h"

#define WEAK __attribute__((weak))

WEAK const struct vm_ctx_field vm_ctx_fields[] = {
    {"data", 0, 8, VM_CTXF_INPUT},      {"data_end", 8, 8, VM_CTXF_INPUT_END},
    {"out", 16, 8, VM_CTXF_OUTPUT},     {"out_end", 24, 8, VM_CTXF_OUTPUT_END},
    {"offset", 32, 8, VM_CTXF_SCALAR},  {"len", 40, 8, VM_CTXF_SCALAR},
    {"flags", 48, 8, VM_CTXF_SCALAR},   {"block", 56, 8, VM_CTXF_SCALAR},
    {"arg[0]", 64, 8, VM_CTXF_SCALAR},  {"arg[1]", 72, 8, VM_CTXF_SCALAR},
    {"arg[2]", 80, 8, VM_CTXF_SCALAR},  {"arg[3]", 88, 8, VM_CTXF_SCALAR},
};
WEAK const unsigned vm_ctx_nfields = sizeof(vm_ctx_fields) / sizeof(vm_ctx_fields[0]);

#define S VM_ARG_SCALAR
#define R VM_ARG_MEM_R
#define W VM_ARG_MEM_W
#define Z VM_ARG_SIZE_OR_ZERO
#define N VM_ARG_SIZE
static const struct vm_helper stub_helpers[] = {
    {1, "cisc_crc32c", {S, R, Z}, VM_RET_SCALAR, 0, NULL},
    {2, "cisc_xxh64", {R, Z, S}, VM_RET_SCALAR, 0, NULL},
    {3, "cisc_xxh3_64", {R, Z}, VM_RET_SCALAR, 0, NULL},
    {4, "cisc_copy", {W, Z, R, Z}, VM_RET_SCALAR, 0, NULL},
    {5, "cisc_zstd_compress", {W, N, R, Z, S}, VM_RET_SCALAR, 0, NULL},
    {6, "cisc_zstd_decompress", {W, N, R, N}, VM_RET_SCALAR, 0, NULL},
    {7, "cisc_trace", {R, N, S, S, S}, VM_RET_SCALAR, 0, NULL},
    {8, "cisc_ktime_ns", {0}, VM_RET_SCALAR, 0, NULL},
    {9, "cisc_state", {0}, VM_RET_MEM, VM_STATE_SIZE, NULL},
};

WEAK const struct vm_helper *vm_helper_find(uint32_t id)
{
    for (unsigned k = 0; k < sizeof(stub_helpers) / sizeof(stub_helpers[0]); k++)
        if (stub_helpers[k].id == id)
            return &stub_helpers[k];
    return NULL;
}

WEAK const struct vm_line_info *vm_prog_line(const struct vm_prog *p, uint32_t pc)
{
    const struct vm_line_info *best = NULL;
    for (uint32_t k = 0; k < p->nlines; k++)
        if (p->lines[k].insn_off <= pc)
            best = &p->lines[k];
    return best;
}

WEAK int vm_disasm_insn(const struct vm_prog *p, uint32_t pc, char *buf, size_t size)
{
    const struct vm_insn *i = &p->insns[pc];
    snprintf(buf, size, "op=%#04x dst=r%u src=r%u off=%d imm=%d", i->code, vm_dst(i),
             vm_src(i), i->off, i->imm);
    return i->code == VM_OPC_LD_IMM64 ? 2 : 1;
}
