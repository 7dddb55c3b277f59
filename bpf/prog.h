/*
 * bpf/prog.h - a loaded eBPF program: the object the loader produces, the
 * verifier proves and the interpreter runs.
 *
 * Invariants:
 *   1. insns[] is self-contained: the entry function comes first, followed
 *      by every .text subprogram it can reach; local calls (CALL with src
 *      VM_PSEUDO_CALL) hold pc-relative targets inside insns[].
 *   2. Read-only data the program references is copied into rodata[];
 *      every ld_imm64 that referred to it has src VM_PSEUDO_RODATA and imm
 *      = byte offset into rodata[] (second slot's imm 0).
 *   3. After vm_verify() succeeds, `verified` is set and the program is
 *      never modified again: many device cores may run it concurrently.
 *   4. Line info (if the object had BTF.ext) is sorted by insn_off.
 *   5. Each entry of rptrs[] (sorted by slot, no two overlapping) names an
 *      8-byte aligned slot of rodata[] that holds the host address
 *      rodata + target (a table of pointers in read-only data, relocated
 *      by the loader), with lo <= target <= hi <= rodata_size and [lo, hi)
 *      the object it points into. rodata[] therefore never moves after
 *      loading (no realloc, no copy: the slots would point into the old
 *      image).
 */
#ifndef CISC_BPF_PROG_H
#define CISC_BPF_PROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/insn.h"

#define VM_NAME_MAX 64

struct vm_line_info {
    uint32_t insn_off;      /* index into insns[] */
    uint32_t line;          /* 1-based source line, 0 if unknown */
    uint32_t col;
    const char *file;       /* points into the program's string storage */
    const char *src;        /* the source text of that line, or NULL */
};

/* A relocated pointer in read-only data (invariant 5). */
struct vm_rodata_ptr {
    uint32_t slot;          /* byte offset of the 8-byte slot in rodata[] */
    uint32_t target;        /* rodata offset the slot points to */
    uint32_t lo, hi;        /* the object it points into: rodata[lo, hi) */
};

struct vm_prog {
    char name[VM_NAME_MAX];      /* function name */
    char section[VM_NAME_MAX];   /* ELF section, e.g. "cisc" */
    struct vm_insn *insns;
    uint32_t ninsns;
    uint8_t *rodata;
    uint32_t rodata_size;
    struct vm_rodata_ptr *rptrs; /* relocated pointers in rodata[] (invariant 5) */
    uint32_t nrptrs;
    struct vm_line_info *lines;
    uint32_t nlines;
    char *strings;               /* storage for file names and source lines */

    /* Set by the verifier. */
    bool verified;
    uint32_t stack_depth;        /* deepest stack use of any frame, bytes */

    /* Private to the interpreter (pre-decoded form), NULL until prepared. */
    void *exec;
    /* Private to the JIT (bpf/jit_x86_64.h): native code, NULL unless
     * compiled; freed with exec by vm_unprepare(). */
    void *jit;
};

/* Frees a program and everything it owns. NULL is a no-op. */
void vm_prog_free(struct vm_prog *p);

/* The line info entry covering instruction pc (the last entry with
 * insn_off <= pc), or NULL. */
const struct vm_line_info *vm_prog_line(const struct vm_prog *p, uint32_t pc);

/* Formats instruction pc as assembly text (llvm-objdump style) into buf.
 * Returns the number of slots it occupies (1, or 2 for ld_imm64). */
int vm_disasm_insn(const struct vm_prog *p, uint32_t pc, char *buf, size_t size);

#endif
