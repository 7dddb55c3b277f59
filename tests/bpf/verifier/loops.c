/* Loop shapes clang produces that the verifier must accept (and a few
 * near misses it must reject): each program is one SEC("cisc") function. */
#include <cisc_bpf.h>

#define BLOCK 4096

/* pointer induction variable: p walks the input */
SEC("cisc")
int ptr_walk(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;
    for (int i = 0; i < BLOCK && p + 1 <= end; i++, p++)
        sum += *p;
    return sum & 0xffff;
}

/* nested loops: 16 rows of 256 bytes */
SEC("cisc")
int nested(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 rows = 0;
    for (int r = 0; r < 16; r++) {
        __u32 acc = 0;
        for (int c = 0; c < 256; c++) {
            const __u8 *q = data + r * 256 + c;
            if (q + 1 > end)
                return rows;
            acc += *q;
        }
        rows += acc > 1000;
    }
    return rows;
}

/* stride 3 (pixels) with an exit test on !=  */
SEC("cisc")
int stride3(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 n = 0;
    for (__u32 i = 0; i != 3 * 1365; i += 3) {
        if (data + i + 3 > end || out + n + 1 > oend)
            break;
        out[n++] = (data[i] * 77 + data[i + 1] * 150 + data[i + 2] * 29) >> 8;
    }
    return n;
}

/* signed arithmetic and a data-dependent count */
SEC("cisc")
int deltas(struct cisc_ctx *ctx)
{
    const __s8 *data = ctx->data, *end = ctx->data_end;
    int big = 0;
    for (int i = 1; i < BLOCK; i++) {
        if (data + i + 1 > (const __s8 *)end)
            break;
        int d = data[i] - data[i - 1];
        if (d < -10 || d > 10)
            big++;
        if (big > 100)
            return -CISC_ERANGE;
    }
    return big;
}

/* byte histogram in the state area, written out at the last block */
struct hist {
    __u32 count[256];
};

SEC("cisc")
int histogram(struct cisc_ctx *ctx)
{
    struct hist *h = cisc_state();
    const __u8 *data = ctx->data, *end = ctx->data_end;
    for (int i = 0; i < BLOCK; i++) {
        if (data + i + 1 > end)
            break;
        h->count[data[i]]++;
    }
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;
    if ((__u8 *)ctx->out + sizeof(*h) > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    __builtin_memcpy(ctx->out, h, sizeof(*h));
    return sizeof(*h);
}

/* output at a growing variable offset, records separated by newlines */
SEC("cisc")
int first_columns(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 olen = 0;
    int in_first = 1;
    for (__u32 i = 0; i < BLOCK; i++) {
        if (data + i + 1 > end)
            break;
        __u8 c = data[i];
        if (c == '\n')
            in_first = 1;
        else if (c == ',')
            in_first = 0;
        if (!in_first && c != '\n')
            continue;
        if (olen >= BLOCK || out + olen + 1 > oend)
            return -CISC_ENOSPC;
        out[olen++] = c;
    }
    return olen;
}

/* 64-byte records: a pointer and an index moving together by 64, the
 * index checked through another sum (data + 64 + base), the pointer used */
SEC("cisc")
int base_walk(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 total = 0;
    for (__u32 base = 0; base < 4096; base += 64) {
        if (data + base + 64 > end)
            break;
        for (__u32 i = 0; i < 64; i++)
            total += data[base + i];
    }
    return total;
}
