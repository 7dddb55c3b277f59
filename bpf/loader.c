/*
 * bpf/loader.c - ELF object -> self-contained programs (see loader.h).
 *
 * Steps, each of which can reject the object with a one-line reason:
 *   1. elf.c validates the file (headers, sections, symbols, relocations).
 *   2. The optional ABI marker section "cisc.abi" must say version 1.
 *   3. Maps and writable globals are rejected where they are defined;
 *      btfext.c reads line info and rejects CO-RE relocations.
 *   4. Functions are the STT_FUNC symbols of executable sections; the
 *      relocations of each executable section are indexed by instruction.
 *   5. Each program (a global function outside .text) is linked on its
 *      own: its body first, then every function it calls, transitively,
 *      each appended once; calls are rewritten to pc-relative offsets in
 *      the new array, ld_imm64 of read-only data to VM_PSEUDO_RODATA with
 *      the referenced .rodata* sections copied into prog->rodata, and
 *      jumps are checked to stay inside their function.
 *   5b. Tables of pointers in read-only data (R_BPF_64_ABS64 in
 *      .rel.rodata*): every section copied brings the sections its
 *      relocations point into; once the image is final each such slot is
 *      set to the host address of its target and recorded in
 *      prog->rptrs with the object it points into (a string up to its NUL,
 *      the symbol, or the section), for the verifier. Anything else there
 *      (into writable data, code, extern symbols, 32-bit, misaligned, out
 *      of range) is refused.
 *   6. Line info of every placed function is copied with adjusted offsets;
 *      file names (base names) and source text go to prog->strings.
 */
#include "bpf/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/abi.h"
#include "bpf/btfext.h"
#include "bpf/loader_int.h"
#include "bpf/elf.h"
#include "common/le.h"

#define DEFAULT_MAX_INSNS  65536u
#define DEFAULT_MAX_OBJECT (64u << 20)
#define MAX_PROGS          256u
#define MAX_RODATA         (16u << 20)
#define MAX_TOTAL          (256ull << 20)  /* all programs' insns + rodata */
#define NONE               UINT32_MAX

struct vm_object {
    struct vm_prog **progs;
    unsigned nprogs;
};

struct func {
    uint32_t sec;          /* ELF section index */
    uint32_t start;        /* first instruction (index inside the section) */
    uint32_t n;            /* instructions */
    uint32_t sym;          /* symbol index */
};

/* A sized data symbol: the objects a table's pointers may point into. */
struct objsym {
    uint32_t sec;
    uint64_t value, size;
};

struct sec_rels {
    struct vm_elf_rel *r;  /* sorted by offset, one per instruction at most */
    uint32_t n;
};

/* Everything known about the object while its programs are linked. */
struct objctx {
    const struct vm_elf *e;
    struct vm_btf_info bi;
    struct func *funcs;    /* sorted by (sec, start) */
    uint32_t nfuncs;
    struct sec_rels *rels; /* per section index */
    struct sec_rels *rorels; /* per section index: relocations of read-only data */
    struct objsym *objs;   /* sized data symbols, sorted by (section, value) ... */
    uint32_t nobjs;        /* ... made when a table of pointers needs them */
    uint32_t max_insns;
    uint64_t total;        /* bytes of insns and rodata of the programs so far */
    struct vm_diag *d;
};

/* The program being linked. */
struct linker {
    struct objctx *o;
    uint32_t *placed;      /* per function: index in insns[] or NONE */
    uint32_t *order;       /* placed functions, in placement order */
    uint32_t norder;
    struct vm_insn *insns;
    uint32_t n, cap;
    uint32_t *rodata_base; /* per section: offset in rodata[] or NONE */
    uint32_t *ro_order;    /* sections copied into rodata[], in order */
    uint32_t nro;
    uint8_t *rodata;
    uint32_t rodata_size;
    struct vm_rodata_ptr *rptrs;   /* relocated slots (step 5b) */
    uint32_t nrptrs;
};

static const struct vm_elf_sec *sec_of(const struct objctx *o, uint32_t i)
{
    return &o->e->secs[i];
}

static bool is_code(const struct vm_elf_sec *s)
{
    return (s->flags & VM_ELF_SHF_EXECINSTR) != 0;
}

static bool is_map_section(const char *name)
{
    return !strcmp(name, ".maps") || !strcmp(name, "maps") || !strncmp(name, "maps/", 5);
}

/* libbpf's metadata sections (`char LICENSE[] SEC("license")`): accepted
 * so that programs written for the kernel load unchanged, and ignored. */
static bool is_metadata(const struct vm_elf_sec *s)
{
    return !strcmp(s->name, "license") || !strcmp(s->name, "version");
}

static bool is_writable_data(const struct vm_elf_sec *s)
{
    return (s->flags & VM_ELF_SHF_ALLOC) && (s->flags & VM_ELF_SHF_WRITE) && !is_code(s) &&
           !is_metadata(s);
}

static bool is_rodata(const struct vm_elf_sec *s)
{
    return s->type == VM_ELF_SHT_PROGBITS && (s->flags & VM_ELF_SHF_ALLOC) &&
           !(s->flags & (VM_ELF_SHF_WRITE | VM_ELF_SHF_EXECINSTR)) &&
           !strncmp(s->name, ".rodata", 7);
}

static struct vm_insn decode_insn(const uint8_t *p)
{
    return (struct vm_insn){p[0], p[1], (int16_t)le16_get(p + 2), (int32_t)le32_get(p + 4)};
}

/* ---- Step 2 and 3: object-wide checks ------------------------------------ */

/* One u32 per compilation unit: objects linked with `bpftool gen object`
 * carry one marker for each object that went in, and all must agree. */
static int check_abi_marker(const struct objctx *o)
{
    uint32_t i = vm_elf_find_sec(o->e, "cisc.abi");
    if (!i)
        return 0;
    const struct vm_elf_sec *s = sec_of(o, i);
    if (s->size == 0 || s->size % 4 || !s->data)
        return vm_diagf(o->d, -EINVAL, "section cisc.abi: %llu bytes, want 4-byte "
                        "versions", (unsigned long long)s->size);
    for (uint64_t at = 0; at < s->size; at += 4) {
        uint32_t v = le32_get(s->data + at);
        if (v != VM_ABI_VERSION)
            return vm_diagf(o->d, -EOPNOTSUPP, "object was built for cisc ABI version %u; "
                            "this runtime implements version %u", v, VM_ABI_VERSION);
    }
    return 0;
}

/* Maps and writable globals are rejected where they are defined. */
static int check_data_symbols(const struct objctx *o)
{
    for (uint32_t i = 1; i < o->e->nsyms; i++) {
        const struct vm_elf_sym *y = &o->e->syms[i];
        if ((y->type != VM_ELF_STT_OBJECT && y->type != VM_ELF_STT_NOTYPE) ||
            !y->name[0] || y->shndx == 0 || y->shndx >= o->e->nsecs)
            continue;
        const struct vm_elf_sec *s = sec_of(o, y->shndx);
        if (is_map_section(s->name))
            return vm_diagf(o->d, -EOPNOTSUPP, "map '%s' in section %s: maps are not "
                           "supported (use cisc_state() to keep data across blocks)",
                           y->name, s->name);
        if (is_writable_data(s) && !strncmp(y->name, "cisc_", 5))
            return vm_diagf(o->d, -EOPNOTSUPP, "helper '%s' is a variable in section %s: "
                            "build with optimisation (clang -O2 -g -target bpf)", y->name,
                            s->name);
        if (is_writable_data(s))
            return vm_diagf(o->d, -EOPNOTSUPP, "writable global '%s' in section %s is not "
                           "supported (make it const, or use cisc_state())", y->name,
                           s->name);
    }
    return 0;
}

/* ---- Step 4: functions and relocation index ------------------------------ */

static int cmp_func(const void *a, const void *b)
{
    const struct func *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec < y->sec ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int check_code_sections(const struct objctx *o)
{
    for (uint32_t i = 1; i < o->e->nsecs; i++) {
        const struct vm_elf_sec *s = sec_of(o, i);
        if (!is_code(s) || s->size == 0)
            continue;
        if (s->type != VM_ELF_SHT_PROGBITS || s->size % 8)
            return vm_diagf(o->d, -EINVAL, "code section %s: size %llu is not a whole "
                           "number of instructions", s->name,
                           (unsigned long long)s->size);
    }
    return 0;
}

static int add_func(struct objctx *o, uint32_t symi)
{
    const struct vm_elf_sym *y = &o->e->syms[symi];
    const struct vm_elf_sec *s = sec_of(o, y->shndx);
    if (y->value % 8 || y->size % 8 || y->value > s->size || y->size > s->size - y->value)
        return vm_diagf(o->d, -EINVAL, "function '%s': [%llu, +%llu) is not whole "
                       "instructions inside section %s", y->name,
                       (unsigned long long)y->value, (unsigned long long)y->size, s->name);
    o->funcs[o->nfuncs++] = (struct func){y->shndx, (uint32_t)(y->value / 8),
                                          (uint32_t)(y->size / 8), symi};
    return 0;
}

/* Functions without a size run to the next function or the section end. */
static int size_funcs(struct objctx *o)
{
    for (uint32_t i = 0; i < o->nfuncs; i++) {
        struct func *f = &o->funcs[i];
        if (f->n)
            continue;
        uint32_t end = (uint32_t)(sec_of(o, f->sec)->size / 8);
        for (uint32_t j = i + 1; j < o->nfuncs && o->funcs[j].sec == f->sec; j++)
            if (o->funcs[j].start > f->start) {
                end = o->funcs[j].start;
                break;
            }
        f->n = end - f->start;
        if (!f->n)
            return vm_diagf(o->d, -EINVAL, "function '%s' in section %s is empty",
                           o->e->syms[f->sym].name, sec_of(o, f->sec)->name);
    }
    return 0;
}

static int collect_funcs(struct objctx *o)
{
    o->funcs = calloc(o->e->nsyms ? o->e->nsyms : 1, sizeof(*o->funcs));
    if (!o->funcs)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    for (uint32_t i = 1; i < o->e->nsyms; i++) {
        const struct vm_elf_sym *y = &o->e->syms[i];
        if (y->type != VM_ELF_STT_FUNC || y->shndx == 0 || y->shndx >= o->e->nsecs ||
            !is_code(sec_of(o, y->shndx)))
            continue;
        int rc = add_func(o, i);
        if (rc)
            return rc;
    }
    qsort(o->funcs, o->nfuncs, sizeof(*o->funcs), cmp_func);
    return size_funcs(o);
}

static int cmp_rel(const void *a, const void *b)
{
    const struct vm_elf_rel *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int append_rels(struct objctx *o, uint32_t relsec)
{
    const struct vm_elf *e = o->e;
    uint32_t target = e->secs[relsec].info, n = vm_elf_nrels(e, relsec);
    struct sec_rels *sr = &o->rels[target];
    struct vm_elf_rel *r = realloc(sr->r, ((size_t)sr->n + n + 1) * sizeof(*r));
    if (!r)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    sr->r = r;
    for (uint32_t i = 0; i < n; i++) {
        struct vm_elf_rel rel = vm_elf_rel_get(e, relsec, i);
        if (rel.offset % 8 || rel.offset >= e->secs[target].size)
            return vm_diagf(o->d, -EINVAL, "%s: relocation %u at byte %llu is not on an "
                           "instruction of %s", e->secs[relsec].name, i,
                           (unsigned long long)rel.offset, e->secs[target].name);
        sr->r[sr->n++] = rel;
    }
    return 0;
}

static int sort_rels(struct objctx *o, uint32_t sec)
{
    struct sec_rels *sr = &o->rels[sec];
    qsort(sr->r, sr->n, sizeof(*sr->r), cmp_rel);
    for (uint32_t i = 1; i < sr->n; i++)
        if (sr->r[i].offset == sr->r[i - 1].offset)
            return vm_diagf(o->d, -EINVAL, "section %s, insn %llu: two relocations",
                           sec_of(o, sec)->name, (unsigned long long)(sr->r[i].offset / 8));
    return 0;
}

/* Relocations of read-only data (tables of pointers): checked when the
 * section is copied into a program (link_rodata_ptrs). */
static int append_rorels(struct objctx *o, uint32_t relsec)
{
    const struct vm_elf *e = o->e;
    uint32_t target = e->secs[relsec].info, n = vm_elf_nrels(e, relsec);
    struct sec_rels *sr = &o->rorels[target];
    if (e->secs[relsec].type == VM_ELF_SHT_RELA)
        return vm_diagf(o->d, -EINVAL, "%s: RELA relocations of read-only data are not "
                        "supported", e->secs[relsec].name);
    struct vm_elf_rel *r = realloc(sr->r, ((size_t)sr->n + n + 1) * sizeof(*r));
    if (!r)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    sr->r = r;
    for (uint32_t i = 0; i < n; i++)
        sr->r[sr->n++] = vm_elf_rel_get(e, relsec, i);
    qsort(sr->r, sr->n, sizeof(*sr->r), cmp_rel);
    return 0;
}

static int index_rels(struct objctx *o)
{
    o->rels = calloc(o->e->nsecs, sizeof(*o->rels));
    o->rorels = calloc(o->e->nsecs, sizeof(*o->rorels));
    if (!o->rels || !o->rorels)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    for (uint32_t i = 1; i < o->e->nsecs; i++) {
        const struct vm_elf_sec *s = sec_of(o, i);
        if ((s->type != VM_ELF_SHT_REL && s->type != VM_ELF_SHT_RELA) || s->info == 0 ||
            s->info >= o->e->nsecs)
            continue;
        if (is_rodata(sec_of(o, s->info))) {
            int rc = append_rorels(o, i);
            if (rc)
                return rc;
            continue;
        }
        if (!is_code(sec_of(o, s->info)))
            continue;
        if (s->type == VM_ELF_SHT_RELA)
            return vm_diagf(o->d, -EINVAL, "%s: RELA relocations of code are not supported",
                           s->name);
        int rc = append_rels(o, i);
        if (rc)
            return rc;
    }
    for (uint32_t i = 1; i < o->e->nsecs; i++) {
        int rc = o->rels[i].n ? sort_rels(o, i) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

static const struct vm_elf_rel *find_rel(const struct objctx *o, uint32_t sec, uint32_t insn)
{
    const struct sec_rels *sr = &o->rels[sec];
    uint64_t off = (uint64_t)insn * 8;
    uint32_t lo = 0, hi = sr->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sr->r[mid].offset < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sr->n && sr->r[lo].offset == off ? &sr->r[lo] : NULL;
}

/* The function starting at instruction insn of section sec, or NONE. */
static uint32_t find_func(const struct objctx *o, uint32_t sec, uint32_t insn)
{
    struct func key = {.sec = sec, .start = insn};
    const struct func *f = bsearch(&key, o->funcs, o->nfuncs, sizeof(key), cmp_func);
    return f ? (uint32_t)(f - o->funcs) : NONE;
}

/* ---- Step 5: linking one program ----------------------------------------- */

/* "section cisc, insn 11 (function prog)" for messages about instruction k
 * of function fi. */
static const char *where(const struct objctx *o, uint32_t fi, uint32_t k, char *buf,
                         size_t size)
{
    const struct func *f = &o->funcs[fi];
    snprintf(buf, size, "section %s, insn %u (function %s)", sec_of(o, f->sec)->name,
             f->start + k, o->e->syms[f->sym].name);
    return buf;
}

static int grow_insns(struct linker *l, uint32_t extra)
{
    struct objctx *o = l->o;
    if ((uint64_t)l->n + extra > o->max_insns)
        return vm_diagf(o->d, -E2BIG, "program '%s' has more than %u instructions after "
                       "linking its subprograms", o->e->syms[o->funcs[l->order[0]].sym].name,
                       o->max_insns);
    if (l->n + extra <= l->cap)
        return 0;
    uint32_t cap = l->cap ? l->cap : 64;
    while (cap < l->n + extra)
        cap *= 2;
    struct vm_insn *p = realloc(l->insns, (size_t)cap * sizeof(*p));
    if (!p)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    l->insns = p;
    l->cap = cap;
    return 0;
}

/* Appends function fi's body to the program; returns its first index. */
static int place(struct linker *l, uint32_t fi, uint32_t *at)
{
    const struct func *f = &l->o->funcs[fi];
    if (l->placed[fi] != NONE) {
        *at = l->placed[fi];
        return 0;
    }
    int rc = grow_insns(l, f->n);
    if (rc)
        return rc;
    const uint8_t *code = sec_of(l->o, f->sec)->data + (uint64_t)f->start * 8;
    for (uint32_t k = 0; k < f->n; k++)
        l->insns[l->n + k] = decode_insn(code + (uint64_t)k * 8);
    *at = l->placed[fi] = l->n;
    l->order[l->norder++] = fi;
    l->n += f->n;
    return 0;
}

/* Where a relocated call lands: symbol's instruction + imm + 1 (libbpf's
 * rule; covers both function symbols with imm -1 and section symbols). */
static int reloc_call_target(const struct objctx *o, uint32_t fi, uint32_t k,
                             const struct vm_elf_rel *r, int32_t imm, uint32_t *sec,
                             int64_t *target)
{
    char w[160];
    const struct vm_elf_sym *y = &o->e->syms[r->sym];
    const char *name = vm_elf_sym_name(o->e, r->sym);
    if (r->type != VM_R_BPF_64_32)
        return vm_diagf(o->d, -EINVAL, "%s: call has relocation type %u (want R_BPF_64_32)",
                       where(o, fi, k, w, sizeof(w)), r->type);
    if (y->shndx == VM_ELF_SHN_UNDEF)
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: call to extern function '%s' (kfunc) is "
                       "not supported", where(o, fi, k, w, sizeof(w)), name);
    if (y->shndx >= o->e->nsecs || !is_code(sec_of(o, y->shndx)) || y->value % 8)
        return vm_diagf(o->d, -EINVAL, "%s: call relocated against '%s', which is not code",
                       where(o, fi, k, w, sizeof(w)), name);
    *sec = y->shndx;
    *target = (int64_t)(y->value / 8) + imm + 1;
    return 0;
}

static int link_call(struct linker *l, uint32_t fi, uint32_t k, uint32_t pc)
{
    char w[160];
    struct objctx *o = l->o;
    const struct func *f = &o->funcs[fi];
    struct vm_insn *in = &l->insns[pc];
    const struct vm_elf_rel *r = find_rel(o, f->sec, f->start + k);
    uint32_t sec = f->sec;
    int64_t target = (int64_t)f->start + k + in->imm + 1;
    if (!r && vm_src(in) == 0)
        return 0;                       /* helper call: the verifier checks the id */
    int rc = r ? reloc_call_target(o, fi, k, r, in->imm, &sec, &target) : 0;
    if (rc)
        return rc;
    if (vm_src(in) != VM_PSEUDO_CALL)
        return vm_diagf(o->d, -EINVAL, "%s: call with source register %u is not a helper "
                       "or local call", where(o, fi, k, w, sizeof(w)), vm_src(in));
    uint32_t callee = target >= 0 && target <= UINT32_MAX ?
                      find_func(o, sec, (uint32_t)target) : NONE;
    if (callee == NONE)
        return vm_diagf(o->d, -EINVAL, "%s: call target %s+%lld is not the start of a "
                       "function", where(o, fi, k, w, sizeof(w)), sec_of(o, sec)->name,
                       (long long)target);
    uint32_t at;
    rc = place(l, callee, &at);
    if (rc)
        return rc;
    l->insns[pc].imm = (int32_t)((int64_t)at - pc - 1);
    return 0;
}

static int rodata_of(struct linker *l, uint32_t sec, uint32_t *base)
{
    const struct vm_elf_sec *s = sec_of(l->o, sec);
    if (l->rodata_base[sec] != NONE) {
        *base = l->rodata_base[sec];
        return 0;
    }
    uint64_t at = ((uint64_t)l->rodata_size + 7) & ~7ull;
    if (at + s->size > MAX_RODATA)
        return vm_diagf(l->o->d, -E2BIG, "program references more than %u bytes of "
                       "read-only data", MAX_RODATA);
    uint8_t *p = realloc(l->rodata, at + s->size ? at + s->size : 1);
    if (!p)
        return vm_diagf(l->o->d, -ENOMEM, "out of memory");
    memset(p + l->rodata_size, 0, at - l->rodata_size);
    if (s->size)
        memcpy(p + at, s->data, s->size);
    l->rodata = p;
    l->rodata_size = (uint32_t)(at + s->size);
    *base = l->rodata_base[sec] = (uint32_t)at;
    l->ro_order[l->nro++] = sec;
    return 0;
}

/* The name of the function at byte off of code section sec, for messages. */
static const char *func_name_at(const struct objctx *o, uint32_t sec, uint64_t off)
{
    uint32_t fi = off % 8 || off / 8 > UINT32_MAX ? NONE : find_func(o, sec, (uint32_t)(off / 8));
    return fi == NONE ? sec_of(o, sec)->name : o->e->syms[o->funcs[fi].sym].name;
}

/* Why symbol symi (+ addend) cannot be the target of an ld_imm64, or 0. */
static int check_data_target(const struct objctx *o, const char *w, uint32_t symi,
                             uint64_t addend)
{
    const struct vm_elf_sym *y = &o->e->syms[symi];
    const char *name = vm_elf_sym_name(o->e, symi);
    if (y->shndx == VM_ELF_SHN_UNDEF)
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: extern variable '%s' is not supported",
                       w, name);
    if (y->shndx >= o->e->nsecs)
        return vm_diagf(o->d, -EINVAL, "%s: '%s' is not in a section", w, name);
    const struct vm_elf_sec *s = sec_of(o, y->shndx);
    if (is_map_section(s->name))
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: map '%s' in section %s: maps are not "
                       "supported", w, name, s->name);
    if (is_writable_data(s))
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: writable global '%s' in section %s is not "
                       "supported", w, name, s->name);
    if (is_code(s))
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: address of function '%s' taken (callbacks "
                       "are not supported)", w, func_name_at(o, y->shndx, y->value + addend));
    if (!is_rodata(s))
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: '%s' in section %s is not read-only data",
                       w, name, s->name);
    return 0;
}

static int link_rodata(struct linker *l, uint32_t fi, uint32_t k, uint32_t pc,
                       const struct vm_elf_rel *r)
{
    char w[160];
    struct objctx *o = l->o;
    where(o, fi, k, w, sizeof(w));
    if (r->type != VM_R_BPF_64_64)
        return vm_diagf(o->d, -EINVAL, "%s: ld_imm64 has relocation type %u (want "
                       "R_BPF_64_64)", w, r->type);
    uint64_t addend = (uint32_t)l->insns[pc].imm | (uint64_t)(uint32_t)l->insns[pc + 1].imm
                                                       << 32;
    int rc = check_data_target(o, w, r->sym, addend);
    if (rc)
        return rc;
    const struct vm_elf_sym *y = &o->e->syms[r->sym];
    const struct vm_elf_sec *s = sec_of(o, y->shndx);
    if (y->value > s->size || addend > s->size - y->value)
        return vm_diagf(o->d, -EINVAL, "%s: reference to '%s'+%llu is outside section %s "
                       "(%llu bytes)", w, vm_elf_sym_name(o->e, r->sym),
                       (unsigned long long)addend, s->name, (unsigned long long)s->size);
    uint32_t base = 0;
    rc = rodata_of(l, y->shndx, &base);
    if (rc)
        return rc;
    l->insns[pc].regs = (uint8_t)(VM_PSEUDO_RODATA << 4 | vm_dst(&l->insns[pc]));
    l->insns[pc].imm = (int32_t)(base + y->value + addend);
    l->insns[pc + 1].imm = 0;
    return 0;
}

/* ---- Step 5b: tables of pointers in read-only data ------------------------- */

#define OBJECT_BACK 8        /* symbols starting before a target looked at */
#define STRING_SCAN 4096     /* bytes searched for a string's NUL */

static int cmp_objs(const void *a, const void *b)
{
    const struct objsym *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec < y->sec ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* The sized data symbols, sorted by (section, value), once per object. */
static int index_objects(struct objctx *o)
{
    if (o->objs)
        return 0;
    o->objs = malloc((size_t)o->e->nsyms * sizeof(*o->objs) + 1);
    if (!o->objs)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    for (uint32_t i = 1; i < o->e->nsyms; i++) {
        const struct vm_elf_sym *y = &o->e->syms[i];
        const struct vm_elf_sec *s = y->shndx < o->e->nsecs ? sec_of(o, y->shndx) : NULL;
        if (y->size && y->type != VM_ELF_STT_SECTION && y->type != VM_ELF_STT_FUNC && s &&
            y->value <= s->size && y->size <= s->size - y->value)   /* inside its section */
            o->objs[o->nobjs++] = (struct objsym){y->shndx, y->value, y->size};
    }
    qsort(o->objs, o->nobjs, sizeof(*o->objs), cmp_objs);
    return 0;
}

/* The smallest sized symbol of section sec containing byte at (ending at
 * it: a pointer one past an object) among the OBJECT_BACK last ones
 * starting at or before it, or NULL. (Looking further back costs a
 * hostile object's relocations time; a symbol missed only widens the
 * object to the section.) */
static const struct objsym *object_at(const struct objctx *o, uint32_t sec, uint64_t at)
{
    uint32_t lo = 0, hi = o->nobjs;   /* first symbol after (sec, at) */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct objsym *y = &o->objs[mid];
        if (y->sec < sec || (y->sec == sec && y->value <= at))
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct objsym *best = NULL;
    bool best_in = false;
    for (uint32_t k = lo; k > 0 && lo - k < OBJECT_BACK; k--) {
        const struct objsym *y = &o->objs[k - 1];
        if (y->sec != sec)
            break;
        if (at - y->value > y->size)
            continue;
        bool in = at - y->value < y->size;
        if (!best || (in && !best_in) || (in == best_in && y->size < best->size)) {
            best = y;
            best_in = in;
        }
    }
    return best;
}

/* The object a pointer to byte `at` of section sec points into, in section
 * offsets: the string up to its NUL in a string section (SHF_STRINGS with
 * 1-byte characters; at most its first STRING_SCAN bytes), else the
 * symbol around it, else the section. */
static int target_object(struct objctx *o, uint32_t sec, uint64_t at, uint64_t *lo,
                         uint64_t *hi)
{
    const struct vm_elf_sec *s = sec_of(o, sec);
    *lo = 0;
    *hi = s->size;
    if ((s->flags & VM_ELF_SHF_STRINGS) && s->entsize <= 1) {
        uint64_t scan = s->size - at < STRING_SCAN ? s->size - at : STRING_SCAN;
        const uint8_t *nul = scan ? memchr(s->data + at, 0, scan) : NULL;
        *lo = at;
        *hi = nul ? (uint64_t)(nul - s->data) + 1 : at + scan;
        return 0;
    }
    int rc = index_objects(o);
    const struct objsym *y = rc ? NULL : object_at(o, sec, at);
    if (y) {
        *lo = y->value;
        *hi = y->value + y->size;
    }
    return rc;
}

/* Why relocation r of read-only section sec cannot be honoured, or 0;
 * *value is then the target's offset inside its section. */
static int check_ro_reloc(const struct objctx *o, uint32_t sec, const struct vm_elf_rel *r,
                          const char *w, uint64_t *value)
{
    const struct vm_elf_sec *s = sec_of(o, sec);
    const char *name = vm_elf_sym_name(o->e, r->sym);
    if (r->type == VM_R_BPF_64_ABS32)
        return vm_diagf(o->d, -EOPNOTSUPP, "%s: a 32-bit address of '%s' is not supported "
                        "(tables of pointers hold 64-bit ones)", w, name);
    if (r->type != VM_R_BPF_64_ABS64)
        return vm_diagf(o->d, -EINVAL, "%s: relocation type %u in read-only data (want "
                        "R_BPF_64_ABS64)", w, r->type);
    if (r->offset % 8)
        return vm_diagf(o->d, -EINVAL, "%s: pointer to '%s' is not 8-byte aligned", w, name);
    if (r->offset > s->size || s->size - r->offset < 8 || !s->data)
        return vm_diagf(o->d, -EINVAL, "%s: pointer to '%s' is outside section %s (%llu "
                        "bytes)", w, name, s->name, (unsigned long long)s->size);
    uint64_t addend = le64_get(s->data + r->offset);
    int rc = check_data_target(o, w, r->sym, addend);
    if (rc)
        return rc;
    const struct vm_elf_sym *y = &o->e->syms[r->sym];
    const struct vm_elf_sec *t = sec_of(o, y->shndx);
    if (y->value > t->size || addend > t->size - y->value)
        return vm_diagf(o->d, -EINVAL, "%s: pointer to '%s'+%llu is outside section %s "
                        "(%llu bytes)", w, name, (unsigned long long)addend, t->name,
                        (unsigned long long)t->size);
    *value = y->value + addend;
    return 0;
}

static int add_rptr(struct linker *l, uint32_t sec, const struct vm_elf_rel *r)
{
    char w[160];
    struct objctx *o = l->o;
    snprintf(w, sizeof(w), "section %s, byte %llu", sec_of(o, sec)->name,
             (unsigned long long)r->offset);
    uint64_t value = 0, lo, hi;
    uint32_t tsec = 0, base = 0;
    int rc = check_ro_reloc(o, sec, r, w, &value);
    if (!rc) {
        tsec = o->e->syms[r->sym].shndx;
        rc = rodata_of(l, tsec, &base);   /* the target's section comes along */
    }
    if (!rc)
        rc = target_object(o, tsec, value, &lo, &hi);
    if (rc)
        return rc;
    l->rptrs[l->nrptrs++] = (struct vm_rodata_ptr){
        l->rodata_base[sec] + (uint32_t)r->offset, base + (uint32_t)value, base + (uint32_t)lo,
        base + (uint32_t)hi};
    return 0;
}

static int link_rodata_ptrs(struct linker *l)
{
    struct objctx *o = l->o;
    for (uint32_t i = 0; i < l->nro; i++) {   /* nro grows as targets are copied */
        uint32_t sec = l->ro_order[i];
        const struct sec_rels *sr = &o->rorels[sec];
        if (!sr->n)
            continue;
        struct vm_rodata_ptr *p = realloc(l->rptrs, ((size_t)l->nrptrs + sr->n) * sizeof(*p));
        if (!p)
            return vm_diagf(o->d, -ENOMEM, "out of memory");
        l->rptrs = p;
        for (uint32_t k = 0; k < sr->n; k++) {
            if (k && sr->r[k].offset == sr->r[k - 1].offset)
                return vm_diagf(o->d, -EINVAL, "section %s, byte %llu: two relocations",
                                sec_of(o, sec)->name, (unsigned long long)sr->r[k].offset);
            int rc = add_rptr(l, sec, &sr->r[k]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Writes the host address of each relocated slot's target into the
 * program's final image (prog.h invariant 5), as the machine stores a
 * pointer: the program's 8-byte load reads it natively. */
static void apply_rodata_ptrs(struct vm_prog *p)
{
    for (uint32_t i = 0; i < p->nrptrs; i++) {
        uint64_t a = (uint64_t)(uintptr_t)(p->rodata + p->rptrs[i].target);
        memcpy(p->rodata + p->rptrs[i].slot, &a, sizeof(a));
    }
}

static int link_ld_imm64(struct linker *l, uint32_t fi, uint32_t k, uint32_t pc)
{
    char w[160];
    struct objctx *o = l->o;
    const struct func *f = &o->funcs[fi];
    if (k + 1 >= f->n)
        return vm_diagf(o->d, -EINVAL, "%s: ld_imm64 is cut off by the end of the function",
                       where(o, fi, k, w, sizeof(w)));
    if (find_rel(o, f->sec, f->start + k + 1))
        return vm_diagf(o->d, -EINVAL, "%s: relocation on the second half of an ld_imm64",
                       where(o, fi, k + 1, w, sizeof(w)));
    const struct vm_elf_rel *r = find_rel(o, f->sec, f->start + k);
    if (r)
        return link_rodata(l, fi, k, pc, r);
    if (vm_src(&l->insns[pc]) != 0)
        return vm_diagf(o->d, -EINVAL, "%s: ld_imm64 with pseudo source %u and no "
                       "relocation", where(o, fi, k, w, sizeof(w)), vm_src(&l->insns[pc]));
    return 0;
}

static bool is_jump(const struct vm_insn *in)
{
    unsigned cls = VM_CLS(in->code), op = VM_OP(in->code);
    return (cls == VM_CLS_JMP || cls == VM_CLS_JMP32) && op != VM_CALL && op != VM_EXIT;
}

/* Jumps must stay inside their function, or relinking would change them. */
static int check_jump(const struct linker *l, uint32_t fi, uint32_t k, uint32_t pc)
{
    const struct vm_insn *in = &l->insns[pc];
    bool gotol = VM_CLS(in->code) == VM_CLS_JMP32 && VM_OP(in->code) == VM_JA;
    int64_t t = (int64_t)k + 1 + (gotol ? in->imm : in->off);
    if (t >= 0 && t < l->o->funcs[fi].n)
        return 0;
    char w[160];
    return vm_diagf(l->o->d, -EINVAL, "%s: jump to %+lld leaves the function",
                   where(l->o, fi, k, w, sizeof(w)), (long long)(gotol ? in->imm : in->off));
}

static int link_insn(struct linker *l, uint32_t fi, uint32_t k, uint32_t pc)
{
    const struct vm_insn *in = &l->insns[pc];
    const struct func *f = &l->o->funcs[fi];
    if (in->code == VM_OPC_LD_IMM64)
        return link_ld_imm64(l, fi, k, pc);
    if (in->code == (VM_CLS_JMP | VM_CALL))
        return link_call(l, fi, k, pc);
    if (find_rel(l->o, f->sec, f->start + k)) {
        char w[160];
        return vm_diagf(l->o->d, -EINVAL, "%s: relocation on an instruction that is not a "
                       "call or ld_imm64", where(l->o, fi, k, w, sizeof(w)));
    }
    return is_jump(in) ? check_jump(l, fi, k, pc) : 0;
}

static int link_func(struct linker *l, uint32_t fi)
{
    uint32_t base = l->placed[fi];
    for (uint32_t k = 0; k < l->o->funcs[fi].n; k++) {
        int rc = link_insn(l, fi, k, base + k);
        if (rc)
            return rc;
        if (l->insns[base + k].code == VM_OPC_LD_IMM64)
            k++;
    }
    return 0;
}

static int link_all(struct linker *l, uint32_t entry)
{
    uint32_t at;
    int rc = place(l, entry, &at);
    for (uint32_t i = 0; !rc && i < l->norder; i++)
        rc = link_func(l, l->order[i]);
    return rc ? rc : link_rodata_ptrs(l);
}

/* ---- Step 6: line info ---------------------------------------------------- */

static uint32_t first_line(const struct vm_btf_info *bi, uint32_t sec, uint32_t insn)
{
    uint32_t lo = 0, hi = bi->nlines;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct vm_btf_line *x = &bi->lines[mid];
        if (x->sec < sec || (x->sec == sec && x->insn < insn))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* Collects the placed functions' lines, with file and src still pointing
 * into the BTF strings. */
static int gather_lines(const struct linker *l, struct vm_prog *p)
{
    const struct vm_btf_info *bi = &l->o->bi;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < l->norder; i++) {
            const struct func *f = &l->o->funcs[l->order[i]];
            for (uint32_t j = first_line(bi, f->sec, f->start);
                 j < bi->nlines && bi->lines[j].sec == f->sec &&
                 bi->lines[j].insn < f->start + f->n; j++, n++) {
                const struct vm_btf_line *x = &bi->lines[j];
                if (pass)
                    p->lines[n] = (struct vm_line_info){
                        l->placed[l->order[i]] + x->insn - f->start, x->line, x->col,
                        base_name(x->file), x->src};
            }
        }
        if (pass == 0 && n && !(p->lines = calloc(n, sizeof(*p->lines))))
            return vm_diagf(l->o->d, -ENOMEM, "out of memory");
        p->nlines = n;
    }
    return 0;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const char *const *)a, y = (uintptr_t) * (const char *const *)b;
    return x < y ? -1 : x > y;
}

/* Copies each distinct string once into p->strings and repoints the lines. */
static int own_strings(struct vm_prog *p, struct vm_diag *d)
{
    const char **u = calloc((size_t)p->nlines * 2 + 1, sizeof(*u));
    size_t nu = 0, total = 0;
    if (!u)
        return vm_diagf(d, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < p->nlines; i++) {
        u[nu++] = p->lines[i].file;
        u[nu++] = p->lines[i].src;
    }
    qsort(u, nu, sizeof(*u), cmp_ptr);
    size_t w = 0;
    for (size_t i = 0; i < nu; i++)
        if (!w || u[i] != u[w - 1])
            u[w++] = u[i];
    for (size_t i = 0; i < w; i++)
        total += strlen(u[i]) + 1;
    p->strings = malloc(total ? total : 1);
    size_t *at = calloc(w + 1, sizeof(*at));
    if (!p->strings || !at) {
        free(u);
        free(at);
        return vm_diagf(d, -ENOMEM, "out of memory");
    }
    for (size_t i = 0, pos = 0; i < w; i++) {
        at[i] = pos;
        memcpy(p->strings + pos, u[i], strlen(u[i]) + 1);
        pos += strlen(u[i]) + 1;
    }
    for (uint32_t i = 0; i < p->nlines; i++) {
        const char **f = bsearch(&p->lines[i].file, u, w, sizeof(*u), cmp_ptr);
        const char **s = bsearch(&p->lines[i].src, u, w, sizeof(*u), cmp_ptr);
        p->lines[i].file = p->strings + at[f - u];
        p->lines[i].src = p->strings + at[s - u];
    }
    free(u);
    free(at);
    return 0;
}

/* ---- Building a program ---------------------------------------------------- */

static int linker_init(struct linker *l, struct objctx *o)
{
    memset(l, 0, sizeof(*l));
    l->o = o;
    l->placed = malloc((size_t)(o->nfuncs + 1) * sizeof(*l->placed));
    l->order = malloc((size_t)(o->nfuncs + 1) * sizeof(*l->order));
    l->rodata_base = malloc((size_t)o->e->nsecs * sizeof(*l->rodata_base));
    l->ro_order = malloc((size_t)o->e->nsecs * sizeof(*l->ro_order));
    if (!l->placed || !l->order || !l->rodata_base || !l->ro_order)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    memset(l->placed, 0xff, (size_t)(o->nfuncs + 1) * sizeof(*l->placed));
    memset(l->rodata_base, 0xff, (size_t)o->e->nsecs * sizeof(*l->rodata_base));
    return 0;
}

static void linker_free(struct linker *l)
{
    free(l->placed);
    free(l->order);
    free(l->rodata_base);
    free(l->ro_order);
    free(l->insns);
    free(l->rodata);
    free(l->rptrs);
}

static int fill_prog(struct linker *l, uint32_t fi, struct vm_prog *p)
{
    struct objctx *o = l->o;
    o->total += (uint64_t)l->n * sizeof(struct vm_insn) + l->rodata_size;
    if (o->total > MAX_TOTAL)
        return vm_diagf(o->d, -E2BIG, "the programs of this object need more than %llu MiB",
                        MAX_TOTAL >> 20);
    snprintf(p->name, sizeof(p->name), "%s", o->e->syms[o->funcs[fi].sym].name);
    snprintf(p->section, sizeof(p->section), "%s", sec_of(o, o->funcs[fi].sec)->name);
    p->insns = l->insns;
    p->ninsns = l->n;
    p->rodata = l->rodata;
    p->rodata_size = l->rodata_size;
    p->rptrs = l->rptrs;
    p->nrptrs = l->nrptrs;
    l->insns = NULL;
    l->rodata = NULL;
    l->rptrs = NULL;
    apply_rodata_ptrs(p);   /* the image is final: it never moves again */
    int rc = gather_lines(l, p);
    return rc ? rc : own_strings(p, o->d);
}

static int build_prog(struct objctx *o, uint32_t fi, struct vm_prog **out)
{
    struct linker l;
    struct vm_prog *p = calloc(1, sizeof(*p));
    int rc = p ? linker_init(&l, o) : vm_diagf(o->d, -ENOMEM, "out of memory");
    if (!rc)
        rc = link_all(&l, fi);
    if (!rc)
        rc = fill_prog(&l, fi, p);
    if (p)
        linker_free(&l);
    if (rc) {
        vm_prog_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* ---- Programs of the object ------------------------------------------------ */

static bool is_program(const struct objctx *o, const struct func *f)
{
    const struct vm_elf_sym *y = &o->e->syms[f->sym];
    return (y->bind == VM_ELF_STB_GLOBAL || y->bind == VM_ELF_STB_WEAK) &&
           strcmp(sec_of(o, f->sec)->name, ".text") != 0;
}

static int check_program_names(const struct objctx *o, const struct func *f)
{
    const char *name = o->e->syms[f->sym].name, *sec = sec_of(o, f->sec)->name;
    if (strlen(name) >= VM_NAME_MAX || strlen(sec) >= VM_NAME_MAX)
        return vm_diagf(o->d, -ENAMETOOLONG, "program '%.40s...' in section '%.40s': names "
                       "are limited to %d bytes", name, sec, VM_NAME_MAX - 1);
    return 0;
}

static int add_program(struct objctx *o, struct vm_object *obj, uint32_t fi)
{
    const char *name = o->e->syms[o->funcs[fi].sym].name;
    for (unsigned i = 0; i < obj->nprogs; i++)
        if (!strcmp(obj->progs[i]->name, name))
            return vm_diagf(o->d, -EINVAL, "two programs are called '%s'", name);
    if (obj->nprogs == MAX_PROGS)
        return vm_diagf(o->d, -E2BIG, "object has more than %u programs", MAX_PROGS);
    int rc = check_program_names(o, &o->funcs[fi]);
    struct vm_prog *p = NULL;
    if (!rc)
        rc = build_prog(o, fi, &p);
    if (!rc)
        obj->progs[obj->nprogs++] = p;
    return rc;
}

static int build_programs(struct objctx *o, struct vm_object *obj)
{
    obj->progs = calloc(MAX_PROGS, sizeof(*obj->progs));
    if (!obj->progs)
        return vm_diagf(o->d, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < o->nfuncs; i++) {
        if (!is_program(o, &o->funcs[i]))
            continue;
        int rc = add_program(o, obj, i);
        if (rc)
            return rc;
    }
    if (obj->nprogs == 0)
        return vm_diagf(o->d, -ENOENT, "no programs: no global function in a code section "
                       "other than .text (declare one with SEC(\"cisc\"))");
    return 0;
}

static int analyse(struct objctx *o, struct vm_object *obj)
{
    int rc = check_abi_marker(o);
    if (!rc)
        rc = check_data_symbols(o);
    if (!rc)
        rc = check_code_sections(o);
    if (!rc)
        rc = vm_btf_info_load(&o->bi, o->e, o->d);
    if (!rc)
        rc = collect_funcs(o);
    if (!rc)
        rc = index_rels(o);
    if (!rc)
        rc = build_programs(o, obj);
    return rc;
}

static void objctx_free(struct objctx *o)
{
    vm_btf_info_free(&o->bi);
    free(o->funcs);
    for (uint32_t i = 0; o->rels && i < o->e->nsecs; i++)
        free(o->rels[i].r);
    for (uint32_t i = 0; o->rorels && i < o->e->nsecs; i++)
        free(o->rorels[i].r);
    free(o->rels);
    free(o->rorels);
    free(o->objs);
}

int vm_object_load(const void *buf, size_t size, const struct vm_load_opts *opts,
                   struct vm_object **out, char *err, size_t errlen)
{
    struct vm_diag d = {err, errlen, false};
    size_t max_size = opts && opts->max_object_size ? opts->max_object_size
                                                    : DEFAULT_MAX_OBJECT;
    *out = NULL;
    if (size > max_size)
        return vm_diagf(&d, -E2BIG, "object is %zu bytes (limit %zu)", size, max_size);
    struct vm_elf e;
    int rc = vm_elf_open(&e, buf, size, &d);
    if (rc)
        return rc;
    struct objctx o = {.e = &e, .d = &d};
    o.max_insns = opts && opts->max_insns ? opts->max_insns : DEFAULT_MAX_INSNS;
    struct vm_object *obj = calloc(1, sizeof(*obj));
    rc = obj ? analyse(&o, obj) : vm_diagf(&d, -ENOMEM, "out of memory");
    objctx_free(&o);
    vm_elf_close(&e);
    if (rc) {
        vm_object_free(obj);
        return rc;
    }
    *out = obj;
    return 0;
}

static int read_all(int fd, size_t size, uint8_t *buf)
{
    for (size_t got = 0; got < size;) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        got += (size_t)r;
    }
    return 0;
}

int vm_object_load_file(const char *path, const struct vm_load_opts *opts,
                        struct vm_object **out, char *err, size_t errlen)
{
    struct vm_diag d = {err, errlen, false};
    size_t max_size = opts && opts->max_object_size ? opts->max_object_size
                                                    : DEFAULT_MAX_OBJECT;
    struct stat st;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        return vm_diagf(&d, rc, "%s: %s", path, strerror(-rc));
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max_size) {
        close(fd);
        return vm_diagf(&d, S_ISREG(st.st_mode) ? -E2BIG : -EINVAL, "%s: %s", path,
                       S_ISREG(st.st_mode) ? "object is larger than the limit"
                                           : "not a regular file");
    }
    uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    int rc = buf ? read_all(fd, (size_t)st.st_size, buf) : -ENOMEM;
    close(fd);
    if (!rc)
        rc = vm_object_load(buf, (size_t)st.st_size, opts, out, err, errlen);
    else
        vm_diagf(&d, rc, "%s: %s", path, strerror(-rc));
    free(buf);
    return rc;
}

unsigned vm_object_nprogs(const struct vm_object *obj)
{
    return obj ? obj->nprogs : 0;
}

struct vm_prog *vm_object_prog(struct vm_object *obj, unsigned i)
{
    return obj && i < obj->nprogs ? obj->progs[i] : NULL;
}

struct vm_prog *vm_object_find(struct vm_object *obj, const char *name)
{
    struct vm_prog *only = NULL;
    unsigned live = 0;
    for (unsigned i = 0; obj && i < obj->nprogs; i++) {
        struct vm_prog *p = obj->progs[i];
        if (!p)
            continue;
        if (name && !strcmp(p->name, name))
            return p;
        only = p;
        live++;
    }
    return !name && live == 1 ? only : NULL;
}

struct vm_prog *vm_object_take(struct vm_object *obj, struct vm_prog *p)
{
    for (unsigned i = 0; obj && p && i < obj->nprogs; i++)
        if (obj->progs[i] == p) {
            obj->progs[i] = NULL;
            return p;
        }
    return NULL;
}

void vm_object_free(struct vm_object *obj)
{
    if (!obj)
        return;
    for (unsigned i = 0; i < obj->nprogs; i++)
        vm_prog_free(obj->progs[i]);
    free(obj->progs);
    free(obj);
}
