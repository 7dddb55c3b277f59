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
 */
#include "bpf/helpers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "bpf/abi.h"
#include "common/crc32c.h"

#define PTR(r) ((void *)(uintptr_t)(r))
#define NEG(e) ((uint64_t)(int64_t)-(e))

static uint64_t h_crc32c(struct vm_env *env, uint64_t crc, uint64_t buf, uint64_t len,
                         uint64_t r4, uint64_t r5)
{
    return crc32c((uint32_t)crc, PTR(buf), (uint32_t)len);
}

static uint64_t h_xxh64(struct vm_env *env, uint64_t buf, uint64_t len, uint64_t seed,
                        uint64_t r4, uint64_t r5)
{
    return XXH64(PTR(buf), (uint32_t)len, seed);
}

static uint64_t h_xxh3_64(struct vm_env *env, uint64_t buf, uint64_t len, uint64_t r3,
                          uint64_t r4, uint64_t r5)
{
    return XXH3_64bits(PTR(buf), (uint32_t)len);
}

static uint64_t h_copy(struct vm_env *env, uint64_t dst, uint64_t dst_len, uint64_t src,
                       uint64_t src_len, uint64_t r5)
{
    uint32_t n = (uint32_t)dst_len < (uint32_t)src_len ? (uint32_t)dst_len : (uint32_t)src_len;
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
    size_t rc = ZSTD_compress(PTR(dst), (uint32_t)dst_len, PTR(src), (uint32_t)src_len, lvl);
    return ZSTD_isError(rc) ? zstd_errno(rc) : rc;
}

static uint64_t h_zstd_decompress(struct vm_env *env, uint64_t dst, uint64_t dst_len,
                                  uint64_t src, uint64_t src_len, uint64_t r5)
{
    size_t rc = ZSTD_decompress(PTR(dst), (uint32_t)dst_len, PTR(src), (uint32_t)src_len);
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
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The interpreter guarantees env->state is set during a run (helpers.h). */
static uint64_t h_state(struct vm_env *env, uint64_t r1, uint64_t r2, uint64_t r3,
                        uint64_t r4, uint64_t r5)
{
    return (uint64_t)(uintptr_t)env->state;
}

/* --- the table ------------------------------------------------------- */

#define S VM_ARG_SCALAR
#define MR VM_ARG_MEM_R
#define MW VM_ARG_MEM_W
#define SZ VM_ARG_SIZE
#define SZ0 VM_ARG_SIZE_OR_ZERO

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
};

const struct vm_helper *vm_helper_find(uint32_t id)
{
    for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
        if (helpers[i].id == id)
            return &helpers[i];
    return NULL;
}
