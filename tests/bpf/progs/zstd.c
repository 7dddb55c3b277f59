/*
 * zstd: compresses each block with the cisc_zstd_compress helper; the
 * output of a run is a sequence of zstd frames whose decompression is the
 * input. arg[0]: level (0 = 3).
 *
 * A full block is one frame. The last, partial block is compressed as
 * frames of 2048, 1024, ..., 1 bytes: helper sizes must be constants the
 * verifier can check against data_end.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096
/* ZSTD_COMPRESSBOUND for sizes below 128 KiB. */
#define BOUND(n)  ((n) + ((n) >> 8) + ((128 * 1024 - (n)) >> 11))
#define OUT_MAX   16384

/* Compresses data[*off, *off + size) into out[*olen...] if that many input
 * bytes remain; advances both. Returns 0 or -errno. */
static __always_inline int frame(struct cisc_ctx *ctx, __u32 *off, __u32 *olen, __u32 size,
                                 int level)
{
    const __u8 *src = (const __u8 *)ctx->data + *off;
    if (*off > BLOCK_MAX || *olen > OUT_MAX)
        return -CISC_E2BIG;
    if (src + size > (const __u8 *)ctx->data_end)
        return 0;
    __u8 *dst = (__u8 *)ctx->out + *olen;
    if (dst + BOUND(size) > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    long n = cisc_zstd_compress(dst, BOUND(size), src, size, level);
    if (n < 0)
        return n;
    if (n > BOUND(size))
        return -CISC_EIO;
    *off += size;
    *olen += n;
    return 0;
}

#define FRAME(size)                                                                  \
    do {                                                                             \
        if ((rc = frame(ctx, &off, &olen, size, level)))                              \
            return rc;                                                               \
    } while (0)

SEC("cisc")
int zstd(struct cisc_ctx *ctx)
{
    int level = ctx->arg[0] ? (int)ctx->arg[0] : 3;
    __u32 off = 0, olen = 0;
    int rc;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    if (ctx->len == BLOCK_MAX) {
        FRAME(BLOCK_MAX);
        return olen;
    }
    FRAME(2048); FRAME(1024); FRAME(512); FRAME(256); FRAME(128); FRAME(64);
    FRAME(32);   FRAME(16);   FRAME(8);   FRAME(4);   FRAME(2);   FRAME(1);
    return olen;
}
