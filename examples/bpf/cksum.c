/*
 * cksum.c - CRC-32C of the whole input: computes it, or checks the input
 * against an expected value while passing it through.
 *
 *   arg[1] = 0 (compute): after the last block, outputs
 *            "crc32c XXXXXXXX BYTES\n".
 *   arg[1] = 1 (verify):  copies the input to the output unchanged; after
 *            the last block compares the CRC with arg[0] and fails with
 *            -EBADMSG if it differs. In a fused op read -> cksum -> write,
 *            a mismatch fails the op, so nothing is written (MacroTx).
 *
 * The checksum uses the cisc_crc32c helper on 4 KiB pieces (sizes the
 * verifier can prove), then on the pieces of 2048, 1024, ... 1 bytes that
 * make up a partial block. The running value lives in cisc_state().
 * Blocks up to 64 KiB.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 65536
#define PIECE     4096

struct ck_state {
    __u64 crc;
    __u64 bytes;
};

/* Checksums data[*off, *off + n) and (verify) copies it to the output at
 * the same offset, when n bytes remain. Returns 1 if it did, 0 if not. */
#define STEP(n)                                                               \
    do {                                                                      \
        const __u8 *p = data + off;                                           \
        if (off <= BLOCK_MAX && p + (n) <= end) {                             \
            crc = cisc_crc32c(crc, p, (n));                                   \
            if (verify) {                                                     \
                __u8 *q = (__u8 *)ctx->out + off;                             \
                if (q + (n) > (__u8 *)ctx->out_end)                           \
                    return -CISC_ENOSPC;                                      \
                cisc_copy(q, (n), p, (n));                                    \
            }                                                                 \
            off += (n);                                                       \
        }                                                                     \
    } while (0)

/* Writes the low `digits` hex digits of v at out[*o]. */
static __always_inline int put_hex(struct cisc_ctx *ctx, __u64 *o, __u64 v, int digits)
{
    static const char hex[] = "0123456789abcdef";
    for (int k = digits - 1; k >= 0; k--) {
        __u64 i = *o;
        asm volatile("" : "+r"(i));
        if (i > 64)
            return -CISC_ENOSPC;
        __u8 *q = (__u8 *)ctx->out + i;
        if (q + 1 > (__u8 *)ctx->out_end)
            return -CISC_ENOSPC;
        *q = hex[(v >> (4 * k)) & 15];
        *o = i + 1;
    }
    return 0;
}

/* Writes s (a string constant of n bytes) at out[*o]. */
static __always_inline int put_str(struct cisc_ctx *ctx, __u64 *o, const char *s, int n)
{
    for (int k = 0; k < n; k++) {
        __u64 i = *o;
        asm volatile("" : "+r"(i));
        if (i > 64)
            return -CISC_ENOSPC;
        __u8 *q = (__u8 *)ctx->out + i;
        if (q + 1 > (__u8 *)ctx->out_end)
            return -CISC_ENOSPC;
        *q = s[k];
        *o = i + 1;
    }
    return 0;
}

SEC("cisc")
int cksum(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct ck_state *st = cisc_state();
    int verify = ctx->arg[1] == 1;
    __u32 crc = (__u32)st->crc;
    __u64 off = 0;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (int k = 0; k < BLOCK_MAX / PIECE; k++) {
        const __u8 *p = data + off;
        if (off > BLOCK_MAX || p + PIECE > end)
            break;
        STEP(PIECE);
    }
    STEP(2048); STEP(1024); STEP(512); STEP(256); STEP(128); STEP(64);
    STEP(32); STEP(16); STEP(8); STEP(4); STEP(2); STEP(1);
    st->crc = crc;
    st->bytes += off;
    __u64 n = verify ? off : 0;
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return (int)n;
    if (verify) {
        if (crc != (__u32)ctx->arg[0]) {
            cisc_printk("cksum: crc32c %x, expected %x", crc, (__u32)ctx->arg[0]);
            return -CISC_EBADMSG;
        }
        return (int)n;
    }
    __u64 o = 0;
    int r = put_str(ctx, &o, "crc32c ", 7);
    if (!r)
        r = put_hex(ctx, &o, crc, 8);
    if (!r)
        r = put_str(ctx, &o, " ", 1);
    __u64 b = st->bytes, div = 1;
    for (int d = 0; !r && d < 19 && b / div >= 10; d++)
        div *= 10;
    for (int k = 0; !r && k < 20; k++) {
        __u8 c = '0' + b / div % 10;
        r = put_str(ctx, &o, (const char *)&c, 1);
        if (div == 1)
            break;
        div /= 10;
    }
    if (!r)
        r = put_str(ctx, &o, "\n", 1);
    return r ? r : (int)o;
}
