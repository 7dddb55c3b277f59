/* Histograms in stack arrays. */
#include <cisc_bpf.h>

/* The 256-entry byte histogram (saturating 8-bit counters); returns the
 * most frequent byte value. */
SEC("cisc")
int hist_bytes(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 counts[256];
    for (int i = 0; i < 256; i++)
        counts[i] = 0;
    for (; p < end; p++)
        if (counts[*p] < 255)
            counts[*p]++;
    int best = 0;
    for (int i = 1; i < 256; i++)
        if (counts[i] > counts[best])
            best = i;
    return best;
}

/* Distinct byte values of the block (a 256-entry table of flags). */
SEC("cisc")
int hist_distinct(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u8 seen[256] = {0};
    int n = 0;
    for (int i = 0; i < 4096; i++) {
        if (data + i + 1 > end)
            break;
        n += !seen[data[i]];
        seen[data[i]] = 1;
    }
    return n;
}

/* Line lengths in 32 buckets of 8 bytes (the last one open-ended). */
SEC("cisc")
int hist_lines(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 h[32] = {0};
    __u32 len = 0;
    for (; p < end; p++) {
        if (*p != '\n') {
            len++;
            continue;
        }
        __u32 b = len / 8;
        if (b > 31)
            b = 31;
        h[b]++;
        len = 0;
    }
    __u32 *out = ctx->out;
    if ((void *)(out + 32) > ctx->out_end)
        return -CISC_ENOSPC;
    for (int i = 0; i < 32; i++)
        out[i] = h[i];
    return sizeof(h);
}

/* High nibbles, 16 counters. */
SEC("cisc")
int hist_nibbles(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 h[16] = {0};
    for (int i = 0; i < 4096; i++) {
        if (data + i + 1 > end)
            break;
        h[data[i] >> 4]++;
    }
    __u32 m = 0;
    for (int i = 0; i < 16; i++)
        m = h[i] > m ? h[i] : m;
    return m;
}

/* Word lengths 1..16 (longer words count as 16). */
SEC("cisc")
int hist_words(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 h[17] = {0};
    __u32 len = 0;
    while (p < end) {
        __u8 c = *p++;
        int space = c == ' ' || c == '\n' || c == '\t';
        if (!space) {
            len++;
            continue;
        }
        if (len)
            h[len > 16 ? 16 : len]++;
        len = 0;
    }
    __u8 *out = ctx->out, *oend = ctx->out_end;
    for (int i = 1; i <= 16; i++) {
        if (out + i > oend)
            return -CISC_ENOSPC;
        out[i - 1] = h[i] > 255 ? 255 : h[i];
    }
    return 16;
}

/* Byte pairs hashed into 64 buckets in the state area, across blocks. */
SEC("cisc")
int hist_pairs_state(struct cisc_ctx *ctx)
{
    __u32 *h = cisc_state();
    const __u8 *p = ctx->data, *end = ctx->data_end;
    while (p + 1 < end) {
        __u32 k = (p[0] * 31 + p[1]) & 63;
        h[k]++;
        p++;
    }
    return 0;
}
