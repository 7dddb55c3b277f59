/*
 * bpf/btfext.h - BTF and .BTF.ext of an eBPF object, as the loader needs
 * them: source line info per instruction, and the detection of CO-RE
 * relocations (which ABI v1 does not support).
 *
 * .BTF is parsed by libbpf (btf__new) after we check its header; .BTF.ext
 * is parsed here (libbpf 1.1 has no public API for line info), following
 * the documented layout (Documentation/bpf/btf.rst, "BTF.ext section").
 * Strings (file names, source text) are resolved with btf__name_by_offset.
 * Invariants (after vm_btf_info_load() returns 0):
 *   1. lines[] is sorted by (sec, insn); each entry's sec is an executable
 *      section of the object and insn is inside it.
 *   2. file and src of every entry are NUL-terminated strings owned by the
 *      struct btf, valid until vm_btf_info_free().
 *   3. The object has no CO-RE relocation records.
 */
#ifndef CISC_BPF_BTFEXT_H
#define CISC_BPF_BTFEXT_H

#include <stdint.h>

#include "bpf/loader_int.h"
#include "bpf/elf.h"

struct btf;

struct vm_btf_line {
    uint32_t sec;          /* ELF section index */
    uint32_t insn;         /* instruction index inside that section */
    uint32_t line;
    uint32_t col;
    const char *file;      /* as recorded by the compiler (may be a path) */
    const char *src;       /* the source line's text, "" if not recorded */
};

struct vm_btf_info {
    struct btf *btf;               /* NULL when the object has no .BTF */
    struct vm_btf_line *lines;
    uint32_t nlines;
};

/* Parses .BTF and .BTF.ext of e, if present (both absent is fine: no line
 * info). Returns 0, -EINVAL for malformed sections, -EOPNOTSUPP for CO-RE
 * relocations (message names type, access string, section, instruction),
 * or -ENOMEM; d holds the reason. bi needs vm_btf_info_free() either way. */
int vm_btf_info_load(struct vm_btf_info *bi, const struct vm_elf *e, struct vm_diag *d);

void vm_btf_info_free(struct vm_btf_info *bi);

#endif
