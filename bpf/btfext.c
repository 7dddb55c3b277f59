/*
 * bpf/btfext.c - line info and CO-RE detection from .BTF / .BTF.ext (see
 * btfext.h).
 *
 * .BTF.ext layout (all little-endian; offsets relative to the header end):
 *   u16 magic 0xeB9F, u8 version 1, u8 flags, u32 hdr_len,
 *   u32 func_info_off, func_info_len, line_info_off, line_info_len,
 *   [u32 core_relo_off, core_relo_len]          (when hdr_len >= 32)
 * Each info area: u32 rec_size, then blocks of
 *   { u32 sec_name_off; u32 num_info; u8 rec[num_info][rec_size] }.
 * A line record starts { u32 insn_off (bytes); u32 file_name_off;
 * u32 line_off; u32 line_col (line << 10 | col) }; a CO-RE record
 * { u32 insn_off; u32 type_id; u32 access_str_off; u32 kind }.
 */
#include "bpf/btfext.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "common/le.h"

#define BTF_MAGIC       0xeB9F
#define BTF_HDR_SIZE    24
#define EXT_HDR_MIN     24
#define EXT_HDR_CORE    32
#define LINE_REC_MIN    16
#define CORE_REC_MIN    16

/* libbpf reports parse problems through a process-wide print callback; we
 * keep the last warning per thread so our error message can quote it. */
static __thread char libbpf_last[160];

static int libbpf_capture(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level != LIBBPF_INFO) {      /* parse errors come as WARN or DEBUG */
        vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
        libbpf_last[strcspn(libbpf_last, "\n")] = '\0';
    }
    return 0;
}

static void install_capture(void)
{
    libbpf_set_print(libbpf_capture);
}

/* Our own check of the .BTF header before libbpf sees the bytes. */
static int check_btf_header(const struct vm_elf_sec *s, struct vm_diag *d)
{
    const uint8_t *p = s->data;
    if (!p || s->size < BTF_HDR_SIZE || s->size > UINT32_MAX)
        return vm_diagf(d, -EINVAL, "section .BTF: %llu bytes is not a valid size",
                       (unsigned long long)s->size);
    uint32_t hdr = le32_get(p + 4);
    uint64_t body = s->size - (hdr <= s->size ? hdr : s->size);
    if (le16_get(p) != BTF_MAGIC || p[2] != 1 || hdr < BTF_HDR_SIZE || hdr > s->size)
        return vm_diagf(d, -EINVAL, "section .BTF: bad header (magic 0x%x, version %u, "
                       "header length %u)", le16_get(p), p[2], hdr);
    uint64_t toff = le32_get(p + 8), tlen = le32_get(p + 12);
    uint64_t soff = le32_get(p + 16), slen = le32_get(p + 20);
    if (toff + tlen > body || soff + slen > body)
        return vm_diagf(d, -EINVAL, "section .BTF: type or string area lies outside "
                       "the section");
    return 0;
}

static int parse_btf(struct vm_btf_info *bi, const struct vm_elf_sec *s, struct vm_diag *d)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int rc = check_btf_header(s, d);
    if (rc)
        return rc;
    pthread_once(&once, install_capture);
    libbpf_last[0] = '\0';
    struct btf *btf = btf__new(s->data, (uint32_t)s->size);
    long err = libbpf_get_error(btf);
    if (!btf || err)
        return vm_diagf(d, -EINVAL, "section .BTF: libbpf could not parse it (%s)",
                       libbpf_last[0] ? libbpf_last : strerror(err ? (int)-err : EINVAL));
    bi->btf = btf;
    return 0;
}

/* One info area of .BTF.ext: bounds of the records, validated. */
struct ext_area {
    const uint8_t *p;      /* first block */
    uint64_t len;          /* bytes after rec_size */
    uint32_t rec_size;
    const char *what;      /* "line info", "CO-RE relocation" */
};

struct ext_block {
    const char *sec_name;
    uint32_t sec;          /* ELF section index */
    uint32_t n;
    const uint8_t *recs;
};

static int area_open(const uint8_t *base, uint64_t size, uint32_t off, uint32_t len,
                     uint32_t min_rec, struct ext_area *a, struct vm_diag *d)
{
    a->len = 0;
    if (len == 0)
        return 0;
    if ((uint64_t)off + len > size || len < 4)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: %s area lies outside the section",
                       a->what);
    a->p = base + off + 4;
    a->len = len - 4;
    a->rec_size = le32_get(base + off);
    if (a->rec_size < min_rec || a->rec_size % 4 || a->rec_size > 1024)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: %s record size %u is invalid",
                       a->what, a->rec_size);
    return 0;
}

static uint32_t exec_section_by_name(const struct vm_elf *e, const char *name)
{
    for (uint32_t i = 1; i < e->nsecs; i++)
        if ((e->secs[i].flags & VM_ELF_SHF_EXECINSTR) && !strcmp(e->secs[i].name, name))
            return i;
    return 0;
}

/* Decodes the block at *pos of area a and advances *pos past it. */
static int block_next(const struct vm_btf_info *bi, const struct vm_elf *e,
                      const struct ext_area *a, uint64_t *pos, struct ext_block *b,
                      struct vm_diag *d)
{
    if (a->len - *pos < 8)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: truncated %s block", a->what);
    const uint8_t *p = a->p + *pos;
    b->n = le32_get(p + 4);
    b->recs = p + 8;
    b->sec_name = btf__name_by_offset(bi->btf, le32_get(p));
    if ((uint64_t)b->n * a->rec_size > a->len - *pos - 8)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: %s block of %u records overruns "
                       "the section", a->what, b->n);
    if (!b->sec_name)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: %s block names no section",
                       a->what);
    b->sec = exec_section_by_name(e, b->sec_name);
    if (!b->sec)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: %s for section '%s', which holds "
                       "no code", a->what, b->sec_name);
    *pos += 8 + (uint64_t)b->n * a->rec_size;
    return 0;
}

static int add_line(struct vm_btf_info *bi, const struct vm_elf *e,
                    const struct ext_block *b, const uint8_t *r, struct vm_diag *d)
{
    uint32_t off = le32_get(r);
    const char *file = btf__name_by_offset(bi->btf, le32_get(r + 4));
    const char *src = btf__name_by_offset(bi->btf, le32_get(r + 8));
    uint32_t lc = le32_get(r + 12);
    if (off % 8 || off >= e->secs[b->sec].size)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: line info at byte %u is outside "
                       "section %s", off, b->sec_name);
    if (!file || !src)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: line info string offset is "
                       "outside .BTF strings");
    bi->lines[bi->nlines++] = (struct vm_btf_line){b->sec, off / 8, lc >> 10, lc & 0x3ff,
                                                   file, src};
    return 0;
}

static int count_records(const struct vm_btf_info *bi, const struct vm_elf *e,
                         const struct ext_area *a, uint64_t *count, struct vm_diag *d)
{
    struct ext_block b;
    *count = 0;
    for (uint64_t pos = 0; pos < a->len;) {
        int rc = block_next(bi, e, a, &pos, &b, d);
        if (rc)
            return rc;
        *count += b.n;
    }
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const struct vm_btf_line *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec < y->sec ? -1 : 1;
    return x->insn < y->insn ? -1 : x->insn > y->insn;
}

static int read_lines(struct vm_btf_info *bi, const struct vm_elf *e,
                      const struct ext_area *a, struct vm_diag *d)
{
    uint64_t count;
    int rc = count_records(bi, e, a, &count, d);
    if (rc || count == 0)
        return rc;
    bi->lines = calloc(count, sizeof(*bi->lines));
    if (!bi->lines)
        return vm_diagf(d, -ENOMEM, "out of memory");
    struct ext_block b;
    for (uint64_t pos = 0; pos < a->len;) {
        rc = block_next(bi, e, a, &pos, &b, d);
        for (uint32_t i = 0; !rc && i < b.n; i++)
            rc = add_line(bi, e, &b, b.recs + (uint64_t)i * a->rec_size, d);
        if (rc)
            return rc;
    }
    qsort(bi->lines, bi->nlines, sizeof(*bi->lines), cmp_line);
    return 0;
}

/* "struct task", "union u", "int" or "<anonymous>" for messages. */
static const char *type_name(const struct btf *btf, uint32_t id, char *buf, size_t size)
{
    const struct btf_type *t = btf__type_by_id(btf, id);
    const char *n = t ? btf__name_by_offset(btf, t->name_off) : NULL;
    const char *kind = t && btf_is_struct(t) ? "struct " : t && btf_is_union(t) ? "union " : "";
    snprintf(buf, size, "%s%s", kind, n && *n ? n : "<anonymous>");
    return buf;
}

/* ABI v1 has no CO-RE: the first record found is the rejection. */
static int reject_core(const struct vm_btf_info *bi, const struct vm_elf *e,
                       const struct ext_area *a, struct vm_diag *d)
{
    struct ext_block b;
    for (uint64_t pos = 0; pos < a->len;) {
        int rc = block_next(bi, e, a, &pos, &b, d);
        if (rc)
            return rc;
        if (b.n == 0)
            continue;
        const char *acc = btf__name_by_offset(bi->btf, le32_get(b.recs + 8));
        char tn[96];
        return vm_diagf(d, -EOPNOTSUPP, "section %s, insn %u: CO-RE relocation against "
                       "'%s' (access %s) is not supported", b.sec_name,
                       le32_get(b.recs) / 8,
                       type_name(bi->btf, le32_get(b.recs + 4), tn, sizeof(tn)),
                       acc ? acc : "?");
    }
    return 0;
}

static int parse_ext(struct vm_btf_info *bi, const struct vm_elf *e,
                     const struct vm_elf_sec *s, struct vm_diag *d)
{
    const uint8_t *p = s->data;
    if (!p || s->size < EXT_HDR_MIN || s->size > UINT32_MAX)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: %llu bytes is not a valid size",
                       (unsigned long long)s->size);
    uint32_t hdr = le32_get(p + 4);
    if (le16_get(p) != BTF_MAGIC || p[2] != 1 || hdr < EXT_HDR_MIN || hdr > s->size)
        return vm_diagf(d, -EINVAL, "section .BTF.ext: bad header (magic 0x%x, version "
                       "%u, header length %u)", le16_get(p), p[2], hdr);
    struct ext_area lines = {.what = "line info"}, core = {.what = "CO-RE relocation"};
    int rc = area_open(p + hdr, s->size - hdr, le32_get(p + 16), le32_get(p + 20),
                       LINE_REC_MIN, &lines, d);
    if (!rc && hdr >= EXT_HDR_CORE)
        rc = area_open(p + hdr, s->size - hdr, le32_get(p + 24), le32_get(p + 28),
                       CORE_REC_MIN, &core, d);
    if (!rc)
        rc = reject_core(bi, e, &core, d);
    if (!rc)
        rc = read_lines(bi, e, &lines, d);
    return rc;
}

int vm_btf_info_load(struct vm_btf_info *bi, const struct vm_elf *e, struct vm_diag *d)
{
    memset(bi, 0, sizeof(*bi));
    uint32_t btf_sec = vm_elf_find_sec(e, ".BTF");
    uint32_t ext_sec = vm_elf_find_sec(e, ".BTF.ext");
    if (!btf_sec) {
        if (ext_sec)
            return vm_diagf(d, -EINVAL, "object has .BTF.ext but no .BTF");
        return 0;
    }
    int rc = parse_btf(bi, &e->secs[btf_sec], d);
    if (!rc && ext_sec)
        rc = parse_ext(bi, e, &e->secs[ext_sec], d);
    return rc;
}

void vm_btf_info_free(struct vm_btf_info *bi)
{
    btf__free(bi->btf);
    free(bi->lines);
    memset(bi, 0, sizeof(*bi));
}
