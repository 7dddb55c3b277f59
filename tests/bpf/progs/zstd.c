/*
 * zstd: compresses each block with the cisc_zstd_compress helper into one
 * zstd frame; the output of a run is a sequence of frames whose
 * decompression is the input. arg[0]: level (0 = 3).
 *
 * A helper's size must be provably inside its buffer. The loop first
 * measures the block: when it stops at n, the comparison with data_end has
 * proved n bytes, so the verifier accepts n as the source size.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096
/* ZSTD_COMPRESSBOUND for sizes below 128 KiB. */
#define BOUND(n)  ((n) + ((n) >> 8) + ((128 * 1024 - (n)) >> 11))

SEC("cisc")
int zstd(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    int level = ctx->arg[0] ? (int)ctx->arg[0] : 3;
    __u32 n;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (n = 0; n < BLOCK_MAX; n++)
        if (data + n + 1 > end)
            break;
    if ((__u8 *)ctx->out + BOUND(BLOCK_MAX) > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    long r = cisc_zstd_compress(ctx->out, BOUND(BLOCK_MAX), data, n, level);
    if (r < 0)
        return r;
    return r > BOUND(BLOCK_MAX) ? -CISC_EIO : r;
}
