/*
 * bpf/loader.h - ELF object (clang -target bpf) -> struct vm_prog.
 *
 * Parses with libbpf's ELF access (libelf) and BTF API, applies the two
 * relocation kinds programs need (R_BPF_64_32 local calls into .text,
 * R_BPF_64_64 ld_imm64 references to read-only data), copies BTF.ext
 * line info, and rejects everything else with a message naming the symbol
 * and section.
 * Invariants:
 *   1. Never crashes or reads outside the buffer, whatever the bytes.
 *   2. Every program returned satisfies the invariants of bpf/prog.h.
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

/* Parses an object held in memory (copied; buf may be freed after).
 * On failure returns -errno and writes a one-line reason into err. */
int vm_object_load(const void *buf, size_t size, const struct vm_load_opts *opts,
                   struct vm_object **out, char *err, size_t errlen);

/* Same, from a file. */
int vm_object_load_file(const char *path, const struct vm_load_opts *opts,
                        struct vm_object **out, char *err, size_t errlen);

/* Number of programs (functions in executable sections other than .text). */
unsigned vm_object_nprogs(const struct vm_object *obj);

/* Program i (0-based), or NULL. The object keeps ownership. */
struct vm_prog *vm_object_prog(struct vm_object *obj, unsigned i);

/* Program by function name, or NULL. NULL name: the only program if
 * there is exactly one. */
struct vm_prog *vm_object_find(struct vm_object *obj, const char *name);

/* Takes program ownership out of the object (the object forgets it). */
struct vm_prog *vm_object_take(struct vm_object *obj, struct vm_prog *p);

void vm_object_free(struct vm_object *obj);

#endif
