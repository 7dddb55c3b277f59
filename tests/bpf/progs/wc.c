/*
 * wc: lines, words and bytes of the whole input (like wc), counted block
 * by block with the running totals in cisc_state(). At the last block
 * outputs three u64: lines, words, bytes.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096

struct wc_state {
    __u64 lines, words, bytes;
    __u64 in_word;          /* the previous block ended inside a word */
};

SEC("cisc")
int wc(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct wc_state *st = cisc_state();
    __u64 lines = 0, words = 0, in_word = st->in_word;
    int i;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        __u8 c = data[i];
        int space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' ||
                    c == '\f';
        lines += c == '\n';
        words += !space && !in_word;
        in_word = !space;
    }
    st->lines += lines;
    st->words += words;
    st->bytes += i;
    st->in_word = in_word;
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;
    __u64 *out = ctx->out;
    if ((__u8 *)ctx->out + 24 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    out[0] = st->lines;
    out[1] = st->words;
    out[2] = st->bytes;
    return 24;
}
