/*
 * cisc_bpf.h - the header eBPF program authors include (ABI version 1).
 *
 * A ciscfs program is a C function in section "cisc":
 *
 *     #include <cisc_bpf.h>
 *
 *     SEC("cisc")
 *     int count_newlines(struct cisc_ctx *ctx)
 *     {
 *         const __u8 *p = ctx->data;
 *         __u64 n = 0;
 *         for (int i = 0; i < 4096; i++) {
 *             if (p + i + 1 > (const __u8 *)ctx->data_end)
 *                 break;
 *             n += p[i] == '\n';
 *         }
 *         if ((__u8 *)ctx->out + 8 > (__u8 *)ctx->out_end)
 *             return -CISC_ENOSPC;
 *         *(__u64 *)ctx->out = n;
 *         return 8;
 *     }
 *
 * built with `clang -O2 -g -target bpf -c prog.c -o prog.o`.
 *
 * The program returns the number of output bytes it wrote at ctx->out
 * (>= 0), or a negative errno. The context is read-only. The input may be
 * read only after proving with a comparison against data_end that the
 * access is inside it; the same holds for out/out_end. See docs/BPF.md for
 * the full contract, including how large inputs arrive in blocks.
 */
#ifndef CISC_BPF_H
#define CISC_BPF_H

#define CISC_BPF_ABI_VERSION 1

typedef unsigned char      __u8;
typedef signed char        __s8;
typedef unsigned short     __u16;
typedef short              __s16;
typedef unsigned int       __u32;
typedef int                __s32;
typedef unsigned long long __u64;
typedef long long          __s64;

#ifndef SEC
#define SEC(name) __attribute__((section(name), used))
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* The ABI version this object was built against, in section "cisc.abi";
 * the loader refuses objects built for a version it does not implement. */
static const __u32 __cisc_abi_version SEC("cisc.abi") = CISC_BPF_ABI_VERSION;

/* The context: 96 bytes, every field 8 bytes wide, read-only. */
struct cisc_ctx {
    const void *data;      /*  0: first input byte */
    const void *data_end;  /*  8: one past the last input byte */
    void *out;             /* 16: first output byte (writable) */
    void *out_end;         /* 24: one past the last output byte */
    __u64 offset;          /* 32: file offset of data[0] (0 for a buffer) */
    __u64 len;             /* 40: data_end - data */
    __u64 flags;           /* 48: CISC_F_* */
    __u64 block;           /* 56: index of this block within the step's input */
    __u64 arg[4];          /* 64: the caller's four arguments */
};

#define CISC_F_FIRST_BLOCK (1ull << 0)   /* first invocation of the step */
#define CISC_F_LAST_BLOCK  (1ull << 1)   /* last invocation of the step */

/* Size of the per-step state area returned by cisc_state(). */
#define CISC_STATE_SIZE 4096

/* errno values programs commonly return (negated). */
#define CISC_EPERM   1
#define CISC_EIO     5
#define CISC_E2BIG   7
#define CISC_EINVAL  22
#define CISC_ENOSPC  28
#define CISC_ERANGE  34
#define CISC_EBADMSG 74

/* Helpers: fixed ids, typed signatures (docs/BPF.md lists each one's
 * argument kinds as the verifier checks them). Sizes must be provably
 * within the memory their pointer points into. */

/* 1: CRC-32C of buf[0..len) continued from crc (start with 0). */
static __u32 (*cisc_crc32c)(__u32 crc, const void *buf, __u32 len) = (void *)1;
/* 2: XXH64 of buf[0..len) with seed. */
static __u64 (*cisc_xxh64)(const void *buf, __u32 len, __u64 seed) = (void *)2;
/* 3: XXH3-64 of buf[0..len). */
static __u64 (*cisc_xxh3_64)(const void *buf, __u32 len) = (void *)3;
/* 4: copies min(dst_len, src_len) bytes; returns the count. */
static long (*cisc_copy)(void *dst, __u32 dst_len, const void *src, __u32 src_len) = (void *)4;
/* 5: zstd-compresses src into dst at level; returns bytes or -errno. */
static long (*cisc_zstd_compress)(void *dst, __u32 dst_len, const void *src, __u32 src_len,
                                  int level) = (void *)5;
/* 6: decompresses a zstd frame; returns bytes or -errno. */
static long (*cisc_zstd_decompress)(void *dst, __u32 dst_len, const void *src,
                                    __u32 src_len) = (void *)6;
/* 7: records a message in the device trace; fmt takes %d %u %x %llu %lld
 *    %llx %s-free printf subset with up to three arguments. */
static long (*cisc_trace)(const char *fmt, __u32 fmt_size, __u64 a, __u64 b,
                          __u64 c) = (void *)7;
/* 8: monotonic time in nanoseconds. */
static __u64 (*cisc_ktime_ns)(void) = (void *)8;
/* 9: the step's state area: CISC_STATE_SIZE bytes, zero at the first
 *    block, kept across the blocks of one step. Never NULL. */
static void *(*cisc_state)(void) = (void *)9;

/* Search. Each returns an index, or -1 when there is none; the verifier
 * knows the range, so after `if (i < 0)` the index may be added to a
 * pointer (still check the bytes you access against the end pointer). */

/* 10: index of the first occurrence of needle (needle_len >= 1) in
 *     hay[0, hay_len), in [-1, hay_len). */
static long (*cisc_memmem)(const void *hay, __u32 hay_len, const void *needle,
                           __u32 needle_len) = (void *)10;
/* 11: index of the first byte equal to c in buf[0, len), in [-1, len). */
static long (*cisc_memchr)(const void *buf, __u32 len, __u32 c) = (void *)11;
/* 12: index (from ctx->data) of the first occurrence of needle lying
 *     entirely inside the input bytes [from, min(to, ctx->len)); in
 *     [-1, to). Variable-length search of the input: no proof needed. */
static long (*cisc_input_find)(const struct cisc_ctx *ctx, __u64 from, __u64 to,
                               const void *needle, __u32 needle_len) = (void *)12;
/* 13: index (from ctx->data) of the last byte equal to c in the input
 *     bytes [from, min(to, ctx->len)); in [-1, to). */
static long (*cisc_input_rchr)(const struct cisc_ctx *ctx, __u64 from, __u64 to,
                               __u32 c) = (void *)13;

/* cisc_printk("x=%d\n", x): cisc_trace with the format's size filled in
 * and missing arguments passed as 0 (at most three). */
#define __cisc_trace_args(dummy, a, b, c, ...) a, b, c
#define cisc_printk(fmt, ...)                                                  \
    ({                                                                         \
        static const char ____fmt[] = fmt;                                     \
        cisc_trace(____fmt, sizeof(____fmt),                                   \
                   __cisc_trace_args(0, ##__VA_ARGS__, 0, 0, 0));              \
    })

#endif
