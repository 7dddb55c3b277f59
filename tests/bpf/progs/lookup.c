/*
 * Lookup tables in .rodata:
 *   hex    each input byte as two lowercase hex digits (a 16-byte string
 *          table); the output is twice the input
 *   upper  ASCII letters to upper case through a 256-byte table; other
 *          bytes unchanged
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096

static const char hex_digits[16] = "0123456789abcdef";

#define U(c) ((c) >= 'a' && (c) <= 'z' ? (c) - 32 : (c))
#define ROW(b)                                                                       \
    U(b + 0), U(b + 1), U(b + 2), U(b + 3), U(b + 4), U(b + 5), U(b + 6), U(b + 7),    \
    U(b + 8), U(b + 9), U(b + 10), U(b + 11), U(b + 12), U(b + 13), U(b + 14), U(b + 15)
static const __u8 upper_table[256] = {
    ROW(0),   ROW(16),  ROW(32),  ROW(48),  ROW(64),  ROW(80),  ROW(96),  ROW(112),
    ROW(128), ROW(144), ROW(160), ROW(176), ROW(192), ROW(208), ROW(224), ROW(240),
};

SEC("cisc")
int hex(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *out_end = ctx->out_end;
    int i;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        if (out + 2 * i + 2 > out_end)
            return -CISC_ENOSPC;
        __u8 c = data[i];
        out[2 * i] = hex_digits[c >> 4];
        out[2 * i + 1] = hex_digits[c & 15];
    }
    return 2 * i;
}

SEC("cisc")
int upper(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *out_end = ctx->out_end;
    int i;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        if (out + i + 1 > out_end)
            return -CISC_ENOSPC;
        out[i] = upper_table[data[i]];
    }
    return i;
}
