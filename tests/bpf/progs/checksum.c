/*
 * CRC-32C over blocks, three ways:
 *   crc32c_helper  the cisc_crc32c helper, chained across blocks through
 *                  cisc_state(); 4 bytes (little-endian) at the last block
 *   crc32c_loop    the same value from a hand-rolled bitwise loop
 *   crc32c_blocks  the CRC of each block on its own: 4 bytes per block
 * Helper sizes must be provable, so the helper runs over 256-byte chunks
 * that a comparison with data_end proved present, then byte by byte.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096
#define CHUNK     256
#define POLY      0x82F63B78u   /* CRC-32C, reflected */

static __always_inline __u32 crc_block(struct cisc_ctx *ctx, __u32 crc)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 off = 0;
    for (int k = 0; k < BLOCK_MAX / CHUNK; k++) {
        if (data + off + CHUNK > end)
            break;
        crc = cisc_crc32c(crc, data + off, CHUNK);
        off += CHUNK;
    }
    for (int k = 0; k < CHUNK; k++) {
        if (data + off + 1 > end)
            break;
        crc = cisc_crc32c(crc, data + off, 1);
        off++;
    }
    return crc;
}

static __always_inline int put_u32(struct cisc_ctx *ctx, __u32 v)
{
    __u8 *out = ctx->out;
    if (out + 4 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    out[0] = v;
    out[1] = v >> 8;
    out[2] = v >> 16;
    out[3] = v >> 24;
    return 4;
}

SEC("cisc")
int crc32c_helper(struct cisc_ctx *ctx)
{
    __u32 *crc = cisc_state();
    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    *crc = crc_block(ctx, *crc);
    return ctx->flags & CISC_F_LAST_BLOCK ? put_u32(ctx, *crc) : 0;
}

SEC("cisc")
int crc32c_blocks(struct cisc_ctx *ctx)
{
    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    return put_u32(ctx, crc_block(ctx, 0));
}

SEC("cisc")
int crc32c_loop(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 *state = cisc_state();
    __u32 crc = ~*state;
    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (int i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        crc ^= data[i];
#pragma unroll
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (POLY & -(crc & 1));
    }
    *state = ~crc;
    return ctx->flags & CISC_F_LAST_BLOCK ? put_u32(ctx, ~crc) : 0;
}
