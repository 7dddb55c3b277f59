/*
 * tests/unit/bpf/loader/prog_check.h - checks that a program the loader
 * returned keeps the invariants of bpf/prog.h; shared by the loader tests
 * and the loader fuzz target (C and C++).
 */
#ifndef CISC_TESTS_PROG_CHECK_H
#define CISC_TESTS_PROG_CHECK_H

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "bpf/insn.h"
#include "bpf/prog.h"
#ifdef __cplusplus
}
#endif

/* Returns NULL when p is well formed, else what is wrong (static buffer). */
static inline const char *vm_test_prog_check(const struct vm_prog *p)
{
    static char why[160];
    if (!p->insns || p->ninsns == 0)
        return "no instructions";
    if (!memchr(p->name, '\0', sizeof(p->name)) || !memchr(p->section, '\0', sizeof(p->section)))
        return "name not terminated";
    for (uint32_t pc = 0; pc < p->ninsns; pc++) {
        const struct vm_insn *in = &p->insns[pc];
        if (in->code == (VM_CLS_JMP | VM_CALL) && vm_src(in) == VM_PSEUDO_CALL) {
            int64_t t = (int64_t)pc + 1 + in->imm;
            if (t < 0 || t >= p->ninsns) {
                snprintf(why, sizeof(why), "insn %u: local call to %lld is outside", pc,
                         (long long)t);
                return why;
            }
        }
        if (in->code == VM_OPC_LD_IMM64) {
            if (pc + 1 >= p->ninsns)
                return "ld_imm64 cut off";
            if (vm_src(in) == VM_PSEUDO_RODATA &&
                ((uint32_t)in->imm > p->rodata_size || p->insns[pc + 1].imm != 0)) {
                snprintf(why, sizeof(why), "insn %u: rodata offset %u outside %u bytes", pc,
                         (uint32_t)in->imm, p->rodata_size);
                return why;
            }
            if (vm_src(in) != 0 && vm_src(in) != VM_PSEUDO_RODATA)
                return "ld_imm64 with an unknown pseudo source";
            pc++;
        }
    }
    for (uint32_t i = 0; i < p->nrptrs; i++) {   /* invariant 5 */
        const struct vm_rodata_ptr *r = &p->rptrs[i];
        uint64_t v = 0;
        if (r->slot % 8 || (uint64_t)r->slot + 8 > p->rodata_size || r->lo > r->target ||
            r->target > r->hi || r->hi > p->rodata_size ||
            (i && r->slot < p->rptrs[i - 1].slot + 8))
            return "relocated rodata pointer out of range or not sorted";
        memcpy(&v, p->rodata + r->slot, 8);
        if (v != (uint64_t)(uintptr_t)(p->rodata + r->target))
            return "relocated rodata slot does not hold its target's address";
    }
    for (uint32_t i = 0; i < p->nlines; i++) {
        const struct vm_line_info *l = &p->lines[i];
        if (l->insn_off >= p->ninsns || !l->file || !l->src)
            return "line info entry out of range or without strings";
        if (i && l->insn_off < p->lines[i - 1].insn_off)
            return "line info not sorted";
        if (strlen(l->file) > 4096 || strlen(l->src) > 1 << 20)
            return "line info string too long";
    }
    return NULL;
}

#endif
