/*
 * bpf/helpers.c - the native helpers programs call (ids and signatures of
 * bpf/include/cisc_bpf.h) and the table the verifier and interpreter use.
 *
 * Invariants:
 *   1. Each helper reads and writes exactly the memory its signature
 *      declares: a MEM argument with the size argument that follows it,
 *      sizes taken as the low 32 bits (the C signatures say __u32).
 *   2. Helpers keep no state between calls (zstd contexts are per call),
 *      so they are thread-safe; errors are negative errno values in r0.
 *   3. trace formats only integer conversions into a bounded buffer; it
 *      never dereferences an argument (%s, %p and %n are refused).
 *   4. Every helper that touches memory charges its work (helpers.h,
 *      invariant 5): scans, hashes and copies one instruction per
 *      VM_HELPER_COST_BYTES bytes, zstd one per input byte (compress) or
 *      per four output bytes (decompress), as they are that much slower.
 *   5. The search helpers return -1 or an index inside the range their
 *      table entry declares (helpers.h, invariant 4): cisc_memmem below
 *      hay_len, cisc_memchr below len, the input helpers below `to` and
 *      below the input's length.
 */
#include "bpf/helpers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "bpf/abi.h"
#include "bpf/search.h"
#include "common/clock.h"
#include "common/crc32c.h"

#define PTR(r) ((void *)(uintptr_t)(r))
#define NEG(e) ((uint64_t)(int64_t)-(e))
#define NOT_FOUND ((uint64_t)(int64_t)-1)

/* Charges `bytes` of helper work at `per` bytes an instruction. */
static void charge(struct vm_env *env, uint64_t bytes, uint64_t per)
{
    env->charge += (bytes + per - 1) / per;
}

static uint64_t h_crc32c(struct vm_env *env, uint64_t crc, uint64_t buf, uint64_t len,
                         uint64_t r4, uint64_t r5)
{
    charge(env, (uint32_t)len, VM_HELPER_COST_BYTES);
    return crc32c((uint32_t)crc, PTR(buf), (uint32_t)len);
}

static uint64_t h_xxh64(struct vm_env *env, uint64_t buf, uint64_t len, uint64_t seed,
                        uint64_t r4, uint64_t r5)
{
    charge(env, (uint32_t)len, VM_HELPER_COST_BYTES);
    return XXH64(PTR(buf), (uint32_t)len, seed);
}

static uint64_t h_xxh3_64(struct vm_env *env, uint64_t buf, uint64_t len, uint64_t r3,
                          uint64_t r4, uint64_t r5)
{
    charge(env, (uint32_t)len, VM_HELPER_COST_BYTES);
    return XXH3_64bits(PTR(buf), (uint32_t)len);
}

static uint64_t h_copy(struct vm_env *env, uint64_t dst, uint64_t dst_len, uint64_t src,
                       uint64_t src_len, uint64_t r5)
{
    uint32_t n = (uint32_t)dst_len < (uint32_t)src_len ? (uint32_t)dst_len : (uint32_t)src_len;
    charge(env, n, VM_HELPER_COST_BYTES);
    if (n)
        memmove(PTR(dst), PTR(src), n);   /* both may be on the program's stack */
    return n;
}

/* Maps a zstd error code to a negative errno. */
static uint64_t zstd_errno(size_t rc)
{
    switch (ZSTD_getErrorCode(rc)) {
    case ZSTD_error_dstSize_tooSmall: return NEG(ENOSPC);
    case ZSTD_error_memory_allocation: return NEG(ENOMEM);
    case ZSTD_error_parameter_outOfBound:
    case ZSTD_error_parameter_unsupported: return NEG(EINVAL);
    default: return NEG(EBADMSG);   /* corrupt, truncated or unknown frame */
    }
}

static uint64_t h_zstd_compress(struct vm_env *env, uint64_t dst, uint64_t dst_len,
                                uint64_t src, uint64_t src_len, uint64_t level)
{
    int lvl = (int)(int32_t)level;
    if (lvl < ZSTD_minCLevel() || lvl > ZSTD_maxCLevel())
        return NEG(EINVAL);
    charge(env, (uint32_t)src_len, 1);
    size_t rc = ZSTD_compress(PTR(dst), (uint32_t)dst_len, PTR(src), (uint32_t)src_len, lvl);
    return ZSTD_isError(rc) ? zstd_errno(rc) : rc;
}

static uint64_t h_zstd_decompress(struct vm_env *env, uint64_t dst, uint64_t dst_len,
                                  uint64_t src, uint64_t src_len, uint64_t r5)
{
    size_t rc = ZSTD_decompress(PTR(dst), (uint32_t)dst_len, PTR(src), (uint32_t)src_len);
    charge(env, (uint32_t)src_len, VM_HELPER_COST_BYTES);
    charge(env, ZSTD_isError(rc) ? 0 : rc, 4);
    return ZSTD_isError(rc) ? zstd_errno(rc) : rc;
}

/* --- trace: a safe printf subset ------------------------------------- */

struct tbuf {
    char *s;
    size_t len, cap;   /* cap includes the NUL */
};

static void tput(struct tbuf *b, const char *s, size_t n)
{
    size_t room = b->cap - 1 - b->len;
    if (n > room)
        n = room;   /* silently truncated */
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

/* Parses one conversion after '%' at fmt[*i]; appends its text. Accepts
 * flags '-' '0', a width of at most two digits, length l or ll, and d i u
 * x c %. Returns 0, or -EINVAL for anything else or a fourth argument. */
static int tconv(struct tbuf *b, const char *fmt, uint32_t size, uint32_t *i,
                 const uint64_t *args, unsigned *argi)
{
    char spec[16] = "%", out[72];
    size_t k = 1;
    int longs = 0;

    while (*i < size && (fmt[*i] == '-' || fmt[*i] == '0') && k < 4)
        spec[k++] = fmt[(*i)++];
    for (int d = 0; d < 2 && *i < size && fmt[*i] >= '0' && fmt[*i] <= '9'; d++)
        spec[k++] = fmt[(*i)++];
    while (*i < size && fmt[*i] == 'l' && longs < 2)
        longs++, (*i)++;
    if (*i >= size)
        return -EINVAL;
    char c = fmt[(*i)++];
    if (c == '%' && k == 1 && !longs) {
        tput(b, "%", 1);
        return 0;
    }
    if (!strchr("diuxc", c) || !c || (c == 'c' && longs) || *argi >= 3)
        return -EINVAL;
    uint64_t v = args[(*argi)++];
    int n;
    if (c == 'c') {
        memcpy(spec + k, "c", 2);
        n = snprintf(out, sizeof(out), spec, (int)(unsigned char)v);
    } else if (c == 'd' || c == 'i') {
        memcpy(spec + k, "lld", 4);
        long long sv = longs ? (long long)(int64_t)v : (long long)(int32_t)v;
        n = snprintf(out, sizeof(out), spec, sv);
    } else {
        spec[k] = 'l', spec[k + 1] = 'l', spec[k + 2] = c, spec[k + 3] = '\0';
        unsigned long long uv = longs ? (unsigned long long)v : (unsigned long long)(uint32_t)v;
        n = snprintf(out, sizeof(out), spec, uv);
    }
    if (n > 0)
        tput(b, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
    return 0;
}

/* Formats fmt[0..size) (stopping early at a NUL) with up to three
 * arguments into buf. Returns the message length or -EINVAL. */
static int trace_format(char *buf, size_t cap, const char *fmt, uint32_t size,
                        const uint64_t *args)
{
    struct tbuf b = {buf, 0, cap};
    unsigned argi = 0;
    uint32_t i = 0;

    buf[0] = '\0';
    while (i < size && fmt[i]) {
        uint32_t start = i;
        while (i < size && fmt[i] && fmt[i] != '%')
            i++;
        tput(&b, fmt + start, i - start);
        if (i < size && fmt[i] == '%') {
            i++;
            if (tconv(&b, fmt, size, &i, args, &argi) < 0)
                return -EINVAL;
        }
    }
    while (b.len && buf[b.len - 1] == '\n')
        buf[--b.len] = '\0';
    return (int)b.len;
}

static uint64_t h_trace(struct vm_env *env, uint64_t fmt, uint64_t fmt_size, uint64_t a,
                        uint64_t b, uint64_t c)
{
    char msg[VM_TRACE_MSG_MAX];
    const uint64_t args[3] = {a, b, c};
    int n = trace_format(msg, sizeof(msg), PTR(fmt), (uint32_t)fmt_size, args);
    if (n < 0)
        return NEG(-n);
    if (env->trace)
        env->trace(env->trace_arg, msg);
    return (uint64_t)n;
}

static uint64_t h_ktime_ns(struct vm_env *env, uint64_t r1, uint64_t r2, uint64_t r3,
                           uint64_t r4, uint64_t r5)
{
    return now_ns();
}

/* The interpreter guarantees env->state is set during a run (helpers.h). */
static uint64_t h_state(struct vm_env *env, uint64_t r1, uint64_t r2, uint64_t r3,
                        uint64_t r4, uint64_t r5)
{
    return (uint64_t)(uintptr_t)env->state;
}

/* --- search -------------------------------------------------------- */

static uint64_t h_memmem(struct vm_env *env, uint64_t hay, uint64_t hay_len, uint64_t needle,
                         uint64_t needle_len, uint64_t r5)
{
    uint32_t hl = (uint32_t)hay_len, nl = (uint32_t)needle_len;
    int64_t i = vm_search_fwd(PTR(hay), hl, PTR(needle), nl);
    charge(env, (i < 0 ? hl : (uint64_t)i + nl) + nl, VM_HELPER_COST_BYTES);
    return (uint64_t)i;
}

static uint64_t h_memchr(struct vm_env *env, uint64_t buf, uint64_t len, uint64_t c,
                         uint64_t r4, uint64_t r5)
{
    uint32_t n = (uint32_t)len;
    const uint8_t *p = n ? memchr(PTR(buf), (uint8_t)c, n) : NULL;
    uint64_t i = p ? (uint64_t)(p - (const uint8_t *)PTR(buf)) : NOT_FOUND;
    charge(env, p ? i + 1 : n, VM_HELPER_COST_BYTES);
    return i;
}

/* The input of this run, [from, min(to, len)), or false when empty or when
 * ctx is not the run's context (only possible in unverified programs). */
static bool input_span(struct vm_env *env, uint64_t ctx, uint64_t from, uint64_t to,
                       const uint8_t **start, uint64_t *n)
{
    const struct vm_ctx *x = env->ctx;
    if (!x || (uintptr_t)x != ctx)
        return false;
    uint64_t len = x->data_end - x->data, end = to < len ? to : len;
    if (from >= end)
        return false;
    *start = (const uint8_t *)(uintptr_t)x->data + from;
    *n = end - from;
    return true;
}

static uint64_t h_input_find(struct vm_env *env, uint64_t ctx, uint64_t from, uint64_t to,
                             uint64_t needle, uint64_t needle_len)
{
    const uint8_t *p;
    uint64_t n;
    uint32_t nl = (uint32_t)needle_len;
    if (!input_span(env, ctx, from, to, &p, &n))
        return NOT_FOUND;
    int64_t i = vm_search_fwd(p, n, PTR(needle), nl);
    charge(env, (i < 0 ? n : (uint64_t)i + nl) + nl, VM_HELPER_COST_BYTES);
    return i < 0 ? NOT_FOUND : from + (uint64_t)i;
}

static uint64_t h_input_rchr(struct vm_env *env, uint64_t ctx, uint64_t from, uint64_t to,
                             uint64_t c, uint64_t r5)
{
    const uint8_t *p;
    uint64_t n;
    if (!input_span(env, ctx, from, to, &p, &n))
        return NOT_FOUND;
    int64_t i = vm_search_rchr(p, n, (uint8_t)c);
    charge(env, i < 0 ? n : n - (uint64_t)i, VM_HELPER_COST_BYTES);
    return i < 0 ? NOT_FOUND : from + (uint64_t)i;
}

/* --- the table ------------------------------------------------------- */

#define S VM_ARG_SCALAR
#define MR VM_ARG_MEM_R
#define MW VM_ARG_MEM_W
#define SZ VM_ARG_SIZE
#define SZ0 VM_ARG_SIZE_OR_ZERO
#define CTX VM_ARG_CTX

static const struct vm_helper helpers[] = {
    {1, "cisc_crc32c", {S, MR, SZ0}, VM_RET_SCALAR, 0, h_crc32c},
    {2, "cisc_xxh64", {MR, SZ0, S}, VM_RET_SCALAR, 0, h_xxh64},
    {3, "cisc_xxh3_64", {MR, SZ0}, VM_RET_SCALAR, 0, h_xxh3_64},
    {4, "cisc_copy", {MW, SZ0, MR, SZ0}, VM_RET_SCALAR, 0, h_copy},
    {5, "cisc_zstd_compress", {MW, SZ, MR, SZ0, S}, VM_RET_SCALAR, 0, h_zstd_compress},
    {6, "cisc_zstd_decompress", {MW, SZ, MR, SZ}, VM_RET_SCALAR, 0, h_zstd_decompress},
    {7, "cisc_trace", {MR, SZ, S, S, S}, VM_RET_SCALAR, 0, h_trace},
    {8, "cisc_ktime_ns", {0}, VM_RET_SCALAR, 0, h_ktime_ns},
    {9, "cisc_state", {0}, VM_RET_MEM, VM_STATE_SIZE, h_state},
    {10, "cisc_memmem", {MR, SZ0, MR, SZ}, VM_RET_INDEX, 0, h_memmem, 2},
    {11, "cisc_memchr", {MR, SZ0, S}, VM_RET_INDEX, 0, h_memchr, 2},
    {12, "cisc_input_find", {CTX, S, S, MR, SZ}, VM_RET_INDEX, 0, h_input_find, 3},
    {13, "cisc_input_rchr", {CTX, S, S, S}, VM_RET_INDEX, 0, h_input_rchr, 3},
};

const struct vm_helper *vm_helper_find(uint32_t id)
{
    for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
        if (helpers[i].id == id)
            return &helpers[i];
    return NULL;
}

const struct vm_helper *vm_helper_callx(uint64_t v)
{
    const struct vm_helper *h = v <= UINT32_MAX ? vm_helper_find((uint32_t)v) : NULL;
    return h && h->fn ? h : NULL;
}
