/*
 * bpf/elf.h - a validating reader of ELF64 little-endian relocatable
 * objects for eBPF (the output of `clang -target bpf -c`).
 *
 * The loader's only view of the file. It decodes headers field by field
 * (common/le.h) from the caller's buffer and checks everything before
 * anything else looks at it, so that hostile bytes end here with a
 * one-line reason instead of reaching libbpf or the linker.
 * Invariants (after vm_elf_open() returns 0):
 *   1. The file is ELFCLASS64, ELFDATA2LSB, ET_REL, EM_BPF.
 *   2. Every section's name is a NUL-terminated string inside .shstrtab;
 *      every section with file data lies inside the buffer, and no two of
 *      them (nor the ELF header or section header table) overlap.
 *   3. There is at most one SHT_SYMTAB; every symbol's name is a valid
 *      string of its string table and its section index is SHN_UNDEF,
 *      SHN_ABS, SHN_COMMON or an existing section.
 *   4. Every SHT_REL section has 16-byte entries, points at the symbol
 *      table (sh_link) and at an existing section (sh_info); every entry's
 *      symbol index is inside the symbol table.
 *   5. The reader never writes to the buffer and keeps pointers into it:
 *      the buffer must outlive the struct vm_elf.
 */
#ifndef CISC_BPF_ELF_H
#define CISC_BPF_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/loader_int.h"

/* The subset of <elf.h> constants the reader checks, under our prefix. */
#define VM_ELF_SHT_PROGBITS 1
#define VM_ELF_SHT_SYMTAB   2
#define VM_ELF_SHT_STRTAB   3
#define VM_ELF_SHT_RELA     4
#define VM_ELF_SHT_NOBITS   8
#define VM_ELF_SHT_REL      9
#define VM_ELF_SHF_WRITE     0x1
#define VM_ELF_SHF_ALLOC     0x2
#define VM_ELF_SHF_EXECINSTR 0x4
#define VM_ELF_SHF_MERGE     0x10
#define VM_ELF_SHF_STRINGS   0x20
#define VM_ELF_SHN_UNDEF  0
#define VM_ELF_SHN_ABS    0xfff1
#define VM_ELF_SHN_COMMON 0xfff2
#define VM_ELF_STB_LOCAL  0
#define VM_ELF_STB_GLOBAL 1
#define VM_ELF_STB_WEAK   2
#define VM_ELF_STT_NOTYPE  0
#define VM_ELF_STT_OBJECT  1
#define VM_ELF_STT_FUNC    2
#define VM_ELF_STT_SECTION 3

/* eBPF relocation types (llvm BPFELFObjectWriter). */
#define VM_R_BPF_NONE         0
#define VM_R_BPF_64_64        1    /* ld_imm64 of a symbol's address */
#define VM_R_BPF_64_ABS64     2
#define VM_R_BPF_64_ABS32     3
#define VM_R_BPF_64_NODYLD32  4
#define VM_R_BPF_64_32        10   /* call: pc-relative, in instructions */

#define VM_ELF_MAX_SECTIONS 4096
#define VM_ELF_MAX_SYMBOLS  (1u << 20)

struct vm_elf_sec {
    const char *name;
    uint32_t type;
    uint64_t flags;
    uint64_t offset;
    uint64_t size;
    uint32_t link;
    uint32_t info;
    uint64_t entsize;
    const uint8_t *data;     /* NULL for SHT_NOBITS and empty sections */
};

struct vm_elf_sym {
    const char *name;        /* "" when unnamed */
    uint64_t value;
    uint64_t size;
    uint16_t shndx;
    uint8_t bind;
    uint8_t type;
};

struct vm_elf_rel {
    uint64_t offset;         /* byte offset inside the target section */
    uint32_t type;           /* VM_R_BPF_* */
    uint32_t sym;            /* index into syms[] */
};

struct vm_elf {
    const uint8_t *buf;
    size_t size;
    struct vm_elf_sec *secs;
    uint32_t nsecs;
    struct vm_elf_sym *syms;
    uint32_t nsyms;
};

/* Validates the object in buf[0..size) and indexes its sections and
 * symbols. The buffer is borrowed (invariant 5). Returns 0, -ENOEXEC for
 * a file that is not a little-endian 64-bit eBPF object, -EINVAL for a
 * malformed one, -E2BIG for absurd counts or -ENOMEM; on failure d holds
 * the reason and e needs no vm_elf_close(). */
int vm_elf_open(struct vm_elf *e, const void *buf, size_t size, struct vm_diag *d);

/* Frees what vm_elf_open() allocated. */
void vm_elf_close(struct vm_elf *e);

/* Number of entries of SHT_REL section `sec`. */
uint32_t vm_elf_nrels(const struct vm_elf *e, uint32_t sec);

/* Decodes entry i of SHT_REL section `sec` (invariant 4 holds for it). */
struct vm_elf_rel vm_elf_rel_get(const struct vm_elf *e, uint32_t sec, uint32_t i);

/* Index of the first section called name, or 0 when there is none. */
uint32_t vm_elf_find_sec(const struct vm_elf *e, const char *name);

/* A printable name for symbol i: its own name, for a section symbol the
 * section's name, else "<unnamed>". */
const char *vm_elf_sym_name(const struct vm_elf *e, uint32_t i);

#endif
