/*
 * wc: lines, words and bytes of the whole input (like wc), counted block
 * by block with the running totals in cisc_state(). At the last block
 * outputs three u64: lines, words, bytes.
 *
 * Bytes are classified through a table in .rodata, so the loop body has no
 * branch: one path per iteration for the verifier to explore.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096
#define SP 1      /* white space */
#define NL 3      /* newline: white space and a line end */

static const __u8 class_of[256] = {
    ['\t'] = SP, ['\n'] = NL, ['\v'] = SP, ['\f'] = SP, ['\r'] = SP, [' '] = SP,
};

struct wc_state {
    __u64 lines, words, bytes;
    __u64 in_word;          /* the previous block ended inside a word */
};

SEC("cisc")
int wc(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct wc_state *st = cisc_state();
    __u64 lines = 0, words = 0, in_word = st->in_word & 1;
    int i;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        __u64 cls = class_of[data[i]];
        __u64 word = (cls & SP) ^ 1;            /* 1 inside a word */
        lines += cls >> 1;
        words += word & (in_word ^ 1);          /* a word starts here */
        in_word = word;
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
