/* Hashes and checksums over the whole block. */
#include <cisc_bpf.h>

static __always_inline int put64(struct cisc_ctx *ctx, __u64 v)
{
    if (ctx->out + 8 > ctx->out_end)
        return -CISC_ENOSPC;
    *(__u64 *)ctx->out = v;
    return 8;
}

SEC("cisc")
int hash_fnv1a(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 h = 0xcbf29ce484222325ull;
    while (p < end) {
        h ^= *p++;
        h *= 0x100000001b3ull;
    }
    return put64(ctx, h);
}

SEC("cisc")
int hash_adler32(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 a = 1, b = 0;
    for (__u32 i = 0; i < 4096 && data + i < end; i++) {
        a = (a + data[i]) % 65521;
        b = (b + a) % 65521;
    }
    return put64(ctx, b << 16 | a);
}

/* CRC-32C of the whole block: the helper's size is end - data. */
SEC("cisc")
int hash_crc_block(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    return put64(ctx, cisc_crc32c(0, data, end - data));
}

/* djb2 of every line, one u32 per line. */
SEC("cisc")
int hash_lines(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 *out = ctx->out, *oend = ctx->out_end;
    __u32 h = 5381;
    int n = 0;
    for (; p < end; p++) {
        if (*p != '\n') {
            h = h * 33 + *p;
            continue;
        }
        if (out + n + 1 > oend)
            return -CISC_ENOSPC;
        out[n++] = h;
        h = 5381;
    }
    return n * 4;
}

/* XOR of the block taken 8 bytes at a time, then the tail. */
SEC("cisc")
int hash_xor64(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 x = 0;
    while (end - p >= 8) {
        x ^= *(const __u64 *)p;
        p += 8;
    }
    for (int s = 0; p < end; p++, s += 8)
        x ^= (__u64)*p << s;
    return put64(ctx, x);
}

/* The internet checksum (RFC 1071) of the block. */
SEC("cisc")
int hash_inet(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;
    while (p + 2 <= end) {
        sum += (__u32)p[0] << 8 | p[1];
        p += 2;
    }
    if (p < end)
        sum += (__u32)p[0] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (__u16)~sum;
}

/* xxh64 of the input in 512-byte pieces, chained through the seed. */
SEC("cisc")
int hash_xxh_chunks(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 h = 0;
    while (p < end) {
        __u32 n = end - p > 512 ? 512 : end - p;
        h = cisc_xxh64(p, n, h);
        p += n;
    }
    return put64(ctx, h);
}
