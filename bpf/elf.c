/*
 * bpf/elf.c - validating ELF64 reader for eBPF objects (see elf.h).
 *
 * Why our own reader rather than libelf: the loader's first promise is
 * "never crashes, whatever the bytes", and every field we use is checked
 * here, in one place, with a message that names the section. The format
 * subset is small (header, section headers, one symbol table, REL
 * relocations) and decoded field by field.
 */
#include "bpf/elf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/le.h"

#define EHDR_SIZE  64
#define SHDR_SIZE  64
#define SYM_SIZE   24
#define REL_SIZE   16
#define EM_BPF     247
#define ET_REL     1
#define SHN_LORESERVE 0xff00

/* A NUL-terminated string at off inside section sec, or NULL. */
static const char *str_at(const struct vm_elf *e, uint32_t sec, uint64_t off)
{
    const struct vm_elf_sec *s = &e->secs[sec];
    if (!s->data || off >= s->size)
        return NULL;
    const char *p = (const char *)s->data + off;
    return memchr(p, '\0', s->size - off) ? p : NULL;
}

static int check_ident(const uint8_t *b, size_t size, struct vm_diag *d)
{
    if (size < EHDR_SIZE || memcmp(b, "\177ELF", 4) != 0)
        return vm_diagf(d, -ENOEXEC, "not an ELF object (%s)",
                       size < EHDR_SIZE ? "shorter than an ELF header" : "bad magic");
    if (b[4] != 2)
        return vm_diagf(d, -ENOEXEC, "ELF class %u is not 64-bit (ELFCLASS64)", b[4]);
    if (b[5] != 1)
        return vm_diagf(d, -ENOEXEC,
                       "ELF data encoding %u is not little-endian (built with "
                       "-target bpfeb? use -target bpf)", b[5]);
    if (le16_get(b + 16) != ET_REL)
        return vm_diagf(d, -ENOEXEC, "ELF type %u is not a relocatable object (ET_REL)",
                       le16_get(b + 16));
    if (le16_get(b + 18) != EM_BPF)
        return vm_diagf(d, -ENOEXEC,
                       "ELF machine %u is not eBPF (247): compile with clang -target bpf",
                       le16_get(b + 18));
    return 0;
}

static void decode_shdr(const uint8_t *p, struct vm_elf_sec *s, uint32_t *name_off)
{
    *name_off = le32_get(p);
    s->type = le32_get(p + 4);
    s->flags = le64_get(p + 8);
    s->offset = le64_get(p + 24);
    s->size = le64_get(p + 32);
    s->link = le32_get(p + 40);
    s->info = le32_get(p + 44);
    s->entsize = le64_get(p + 56);
}

/* Reads the section header table and checks every section lies in the file. */
static int read_sections(struct vm_elf *e, uint32_t *name_offs, struct vm_diag *d)
{
    for (uint32_t i = 0; i < e->nsecs; i++) {
        struct vm_elf_sec *s = &e->secs[i];
        uint64_t shoff = le64_get(e->buf + 40);
        decode_shdr(e->buf + shoff + (uint64_t)i * SHDR_SIZE, s, &name_offs[i]);
        if (s->type == VM_ELF_SHT_NOBITS || s->size == 0)
            continue;
        if (s->offset > e->size || s->size > e->size - s->offset)
            return vm_diagf(d, -EINVAL,
                           "section %u: data [%llu, +%llu) lies outside the %zu-byte file",
                           i, (unsigned long long)s->offset, (unsigned long long)s->size,
                           e->size);
        s->data = e->buf + s->offset;
    }
    return 0;
}

static int name_sections(struct vm_elf *e, const uint32_t *name_offs, struct vm_diag *d)
{
    uint32_t shstrndx = le16_get(e->buf + 62);
    if (shstrndx >= e->nsecs || e->secs[shstrndx].type != VM_ELF_SHT_STRTAB)
        return vm_diagf(d, -EINVAL, "section name table index %u is not a string table",
                       shstrndx);
    for (uint32_t i = 0; i < e->nsecs; i++) {
        e->secs[i].name = str_at(e, shstrndx, name_offs[i]);
        if (!e->secs[i].name)
            return vm_diagf(d, -EINVAL, "section %u: name offset %u is outside .shstrtab",
                           i, name_offs[i]);
    }
    return 0;
}

struct region {
    uint64_t start, end;
    uint32_t sec;     /* section index, or UINT32_MAX for the headers */
};

static int cmp_region(const void *a, const void *b)
{
    const struct region *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const char *region_name(const struct vm_elf *e, const struct region *r)
{
    return r->sec == UINT32_MAX ? "the ELF headers" : e->secs[r->sec].name;
}

/* No two pieces of file data may share bytes (invariant 2). */
static int check_overlaps(const struct vm_elf *e, struct vm_diag *d)
{
    struct region *r = calloc(e->nsecs + 2, sizeof(*r));
    if (!r)
        return vm_diagf(d, -ENOMEM, "out of memory");
    uint32_t n = 0;
    uint64_t shoff = le64_get(e->buf + 40);
    r[n++] = (struct region){0, EHDR_SIZE, UINT32_MAX};
    r[n++] = (struct region){shoff, shoff + (uint64_t)e->nsecs * SHDR_SIZE, UINT32_MAX};
    for (uint32_t i = 0; i < e->nsecs; i++)
        if (e->secs[i].data)
            r[n++] = (struct region){e->secs[i].offset,
                                     e->secs[i].offset + e->secs[i].size, i};
    qsort(r, n, sizeof(*r), cmp_region);
    int rc = 0;
    for (uint32_t i = 1; i < n && !rc; i++)
        if (r[i].start < r[i - 1].end)
            rc = vm_diagf(d, -EINVAL, "sections %s and %s overlap in the file",
                         region_name(e, &r[i - 1]), region_name(e, &r[i]));
    free(r);
    return rc;
}

static int check_header_table(const struct vm_elf *e, struct vm_diag *d)
{
    uint64_t shoff = le64_get(e->buf + 40);
    uint16_t shentsize = le16_get(e->buf + 58);
    if (e->nsecs == 0)
        return vm_diagf(d, -EINVAL, "object has no section headers");
    if (e->nsecs >= SHN_LORESERVE || e->nsecs > VM_ELF_MAX_SECTIONS)
        return vm_diagf(d, -E2BIG, "object has %u sections (limit %u)", e->nsecs,
                       VM_ELF_MAX_SECTIONS);
    if (shentsize != SHDR_SIZE)
        return vm_diagf(d, -EINVAL, "section header size %u is not %u", shentsize,
                       SHDR_SIZE);
    if (shoff > e->size || (uint64_t)e->nsecs * SHDR_SIZE > e->size - shoff)
        return vm_diagf(d, -EINVAL, "section header table [%llu, +%u) lies outside the "
                       "%zu-byte file", (unsigned long long)shoff,
                       e->nsecs * SHDR_SIZE, e->size);
    return 0;
}

static int check_shndx(const struct vm_elf *e, uint32_t i, uint16_t shndx, struct vm_diag *d)
{
    if (shndx == VM_ELF_SHN_UNDEF || shndx == VM_ELF_SHN_ABS ||
        shndx == VM_ELF_SHN_COMMON || shndx < e->nsecs)
        return 0;
    return vm_diagf(d, -EINVAL, "symbol %u (%s): section index %u does not exist", i,
                   e->syms[i].name, shndx);
}

static int decode_symbols(struct vm_elf *e, uint32_t symsec, struct vm_diag *d)
{
    const struct vm_elf_sec *s = &e->secs[symsec];
    uint32_t strsec = s->link;
    for (uint32_t i = 0; i < e->nsyms; i++) {
        const uint8_t *p = s->data + (uint64_t)i * SYM_SIZE;
        struct vm_elf_sym *y = &e->syms[i];
        y->name = str_at(e, strsec, le32_get(p));
        if (!y->name)
            return vm_diagf(d, -EINVAL, "symbol %u: name offset %u is outside %s", i,
                           le32_get(p), e->secs[strsec].name);
        y->bind = p[4] >> 4;
        y->type = p[4] & 0xf;
        y->shndx = le16_get(p + 6);
        y->value = le64_get(p + 8);
        y->size = le64_get(p + 16);
        int rc = check_shndx(e, i, y->shndx, d);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_symtab(struct vm_elf *e, uint32_t symsec, struct vm_diag *d)
{
    const struct vm_elf_sec *s = &e->secs[symsec];
    if (s->entsize != SYM_SIZE || s->size % SYM_SIZE || !s->data)
        return vm_diagf(d, -EINVAL, "symbol table %s: entry size %llu, size %llu (want "
                       "a non-empty multiple of %u)", s->name,
                       (unsigned long long)s->entsize, (unsigned long long)s->size,
                       SYM_SIZE);
    if (s->link >= e->nsecs || e->secs[s->link].type != VM_ELF_SHT_STRTAB)
        return vm_diagf(d, -EINVAL, "symbol table %s: linked section %u is not a string "
                       "table", s->name, s->link);
    if (s->size / SYM_SIZE > VM_ELF_MAX_SYMBOLS)
        return vm_diagf(d, -E2BIG, "symbol table %s has %llu symbols (limit %u)", s->name,
                       (unsigned long long)(s->size / SYM_SIZE), VM_ELF_MAX_SYMBOLS);
    e->nsyms = (uint32_t)(s->size / SYM_SIZE);
    e->syms = calloc(e->nsyms, sizeof(*e->syms));
    if (!e->syms)
        return vm_diagf(d, -ENOMEM, "out of memory");
    return decode_symbols(e, symsec, d);
}

static int find_symtab(struct vm_elf *e, struct vm_diag *d)
{
    uint32_t symsec = 0;
    for (uint32_t i = 0; i < e->nsecs; i++) {
        if (e->secs[i].type != VM_ELF_SHT_SYMTAB)
            continue;
        if (symsec)
            return vm_diagf(d, -EINVAL, "object has two symbol tables (%s and %s)",
                           e->secs[symsec].name, e->secs[i].name);
        symsec = i;
    }
    if (!symsec)
        return 0;
    return read_symtab(e, symsec, d);
}

static int check_rel_entries(const struct vm_elf *e, uint32_t sec, struct vm_diag *d)
{
    uint32_t n = vm_elf_nrels(e, sec);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t info = le64_get(e->secs[sec].data + (uint64_t)i * REL_SIZE + 8);
        if ((info >> 32) >= e->nsyms)
            return vm_diagf(d, -EINVAL, "%s: relocation %u refers to symbol %llu, but "
                           "there are %u", e->secs[sec].name, i,
                           (unsigned long long)(info >> 32), e->nsyms);
    }
    return 0;
}

static int check_rel_section(const struct vm_elf *e, uint32_t i, struct vm_diag *d)
{
    const struct vm_elf_sec *s = &e->secs[i];
    if (s->entsize != REL_SIZE || s->size % REL_SIZE)
        return vm_diagf(d, -EINVAL, "%s: entry size %llu, size %llu (want a multiple of "
                       "%u)", s->name, (unsigned long long)s->entsize,
                       (unsigned long long)s->size, REL_SIZE);
    if (s->info == 0 || s->info >= e->nsecs)
        return vm_diagf(d, -EINVAL, "%s: target section %u does not exist", s->name,
                       s->info);
    if (s->size && (!e->nsyms || s->link >= e->nsecs ||
                    e->secs[s->link].type != VM_ELF_SHT_SYMTAB))
        return vm_diagf(d, -EINVAL, "%s: linked section %u is not the symbol table",
                       s->name, s->link);
    return check_rel_entries(e, i, d);
}

static int check_relocations(const struct vm_elf *e, struct vm_diag *d)
{
    for (uint32_t i = 0; i < e->nsecs; i++) {
        if (e->secs[i].type != VM_ELF_SHT_REL)
            continue;
        int rc = check_rel_section(e, i, d);
        if (rc)
            return rc;
    }
    return 0;
}

static int open_sections(struct vm_elf *e, struct vm_diag *d)
{
    int rc = check_header_table(e, d);
    if (rc)
        return rc;
    e->secs = calloc(e->nsecs, sizeof(*e->secs));
    uint32_t *name_offs = calloc(e->nsecs, sizeof(*name_offs));
    if (!e->secs || !name_offs)
        rc = vm_diagf(d, -ENOMEM, "out of memory");
    if (!rc)
        rc = read_sections(e, name_offs, d);
    if (!rc)
        rc = name_sections(e, name_offs, d);
    free(name_offs);
    return rc;
}

int vm_elf_open(struct vm_elf *e, const void *buf, size_t size, struct vm_diag *d)
{
    memset(e, 0, sizeof(*e));
    e->buf = buf;
    e->size = size;
    int rc = check_ident(buf, size, d);
    if (rc)
        return rc;
    e->nsecs = le16_get(e->buf + 60);
    rc = open_sections(e, d);
    if (!rc)
        rc = check_overlaps(e, d);
    if (!rc)
        rc = find_symtab(e, d);
    if (!rc)
        rc = check_relocations(e, d);
    if (rc)
        vm_elf_close(e);
    return rc;
}

void vm_elf_close(struct vm_elf *e)
{
    free(e->secs);
    free(e->syms);
    e->secs = NULL;
    e->syms = NULL;
    e->nsecs = e->nsyms = 0;
}

uint32_t vm_elf_nrels(const struct vm_elf *e, uint32_t sec)
{
    const struct vm_elf_sec *s = &e->secs[sec];
    return s->type == VM_ELF_SHT_REL && s->data ? (uint32_t)(s->size / REL_SIZE) : 0;
}

struct vm_elf_rel vm_elf_rel_get(const struct vm_elf *e, uint32_t sec, uint32_t i)
{
    const uint8_t *p = e->secs[sec].data + (uint64_t)i * REL_SIZE;
    uint64_t info = le64_get(p + 8);
    return (struct vm_elf_rel){le64_get(p), (uint32_t)info, (uint32_t)(info >> 32)};
}

uint32_t vm_elf_find_sec(const struct vm_elf *e, const char *name)
{
    for (uint32_t i = 1; i < e->nsecs; i++)
        if (!strcmp(e->secs[i].name, name))
            return i;
    return 0;
}

const char *vm_elf_sym_name(const struct vm_elf *e, uint32_t i)
{
    const struct vm_elf_sym *y = &e->syms[i];
    if (y->name[0])
        return y->name;
    if (y->type == VM_ELF_STT_SECTION && y->shndx < e->nsecs && y->shndx)
        return e->secs[y->shndx].name;
    return "<unnamed>";
}
