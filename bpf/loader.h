/*
 * bpf/loader.h - ELF object (clang -target bpf) -> struct vm_prog.
 *
 * Reads the ELF with our own validating reader (bpf/elf.c: every header
 * checked before use, so hostile bytes never reach a parser), BTF with
 * libbpf and .BTF.ext line info by hand (bpf/btfext.c); applies the two
 * relocation kinds programs need (R_BPF_64_32 calls into subprograms,
 * R_BPF_64_64 ld_imm64 references to .rodata*), links each program with
 * the functions it reaches (bpf/loader.c), and rejects everything else
 * (maps, writable globals, kfuncs, extern variables, CO-RE relocations,
 * function addresses, another ABI version) with a message naming the
 * symbol and section. docs/BPF.md, "What the loader accepts".
 * Invariants:
 *   1. Never crashes or reads outside the buffer, whatever the bytes; a
 *      refusal is a negative errno plus one line of text.
 *   2. Every program returned satisfies the invariants of bpf/prog.h; its
 *      line info's `file` is the source's base name ("prog.c").
 *   3. Programs are independent of the object and of each other: each
 *      owns its instructions, read-only data and strings.
 *   4. Thread-safe: loads may run concurrently (libbpf's print hook is
 *      installed once; its captured message is per thread).
 */
#ifndef CISC_BPF_LOADER_H
#define CISC_BPF_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/prog.h"

struct vm_object;

struct vm_load_opts {
    uint32_t max_insns;      /* per program after linking; 0 = 65536 */
    size_t max_object_size;  /* 0 = 64 MiB */
};

/* Parses an object held in memory (nothing is kept; buf may be freed
 * after). Returns 0 and sets *out, or a negative errno and writes a
 * one-line reason into err (NUL-terminated, truncated to errlen):
 * -ENOEXEC not an ELF64 little-endian eBPF relocatable object, -EINVAL
 * malformed, -EOPNOTSUPP a feature ABI v1 lacks, -E2BIG over a limit,
 * -ENOENT no program, -ENAMETOOLONG a name over 63 bytes, -ENOMEM. */
int vm_object_load(const void *buf, size_t size, const struct vm_load_opts *opts,
                   struct vm_object **out, char *err, size_t errlen);

/* Same, from a file; the message starts with the path when the file
 * cannot be read (-errno of open/read, -EINVAL for a non-regular file). */
int vm_object_load_file(const char *path, const struct vm_load_opts *opts,
                        struct vm_object **out, char *err, size_t errlen);

/* Number of programs (global functions in executable sections other than
 * .text), taken ones included. */
unsigned vm_object_nprogs(const struct vm_object *obj);

/* Program i (0-based), or NULL. The object keeps ownership. */
struct vm_prog *vm_object_prog(struct vm_object *obj, unsigned i);

/* Program by function name, or NULL. NULL name: the only program if
 * there is exactly one (not taken). */
struct vm_prog *vm_object_find(struct vm_object *obj, const char *name);

/* Takes program ownership out of the object (the object forgets it:
 * vm_object_prog() returns NULL for its index). Returns p, or NULL when
 * p is not in obj. Free it with vm_prog_free(). */
struct vm_prog *vm_object_take(struct vm_object *obj, struct vm_prog *p);

/* Frees the object and the programs it still owns. NULL is a no-op. */
void vm_object_free(struct vm_object *obj);

#endif
