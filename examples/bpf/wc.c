/*
 * wc.c - counts lines, words and bytes of the whole input, like wc, and
 * prints "LINES WORDS BYTES\n" after the last block.
 *
 * A word is a maximal run of bytes other than space, \t, \n, \v, \f, \r.
 * The counts and whether the previous block ended inside a word live in
 * cisc_state(), so the result does not depend on the block size (any
 * block size up to 64 KiB). No arguments.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 65536

/* Bit 0: a space (ends words); bit 1: a newline. */
static const __u8 cls[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 3, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1,
};

struct wc_state {
    __u64 lines, words, bytes;
    __u64 in_word;
};

/* Writes v in decimal at out[*o], then `sep`. */
static __always_inline int put_num(struct cisc_ctx *ctx, __u64 *o, __u64 v, __u8 sep)
{
    __u64 div = 1;
    for (int d = 0; d < 19 && v / div >= 10; d++)
        div *= 10;
    for (int k = 0; k < 21; k++) {
        __u64 i = *o;
        asm volatile("" : "+r"(i));
        if (i > 64)
            return -CISC_ENOSPC;
        __u8 *q = (__u8 *)ctx->out + i;
        if (q + 1 > (__u8 *)ctx->out_end)
            return -CISC_ENOSPC;
        if (div == 0) {
            *q = sep;
            *o = i + 1;
            return 0;
        }
        *q = '0' + v / div % 10;
        *o = i + 1;
        div /= 10;
    }
    return 0;
}

SEC("cisc")
int wc(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct wc_state *st = cisc_state();
    __u64 lines = 0, words = 0, in_word = st->in_word, i;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (i = 0; i < BLOCK_MAX; i++) {
        const __u8 *p = data + i;
        if (p + 1 > end)
            break;
        __u64 k = cls[*p];
        lines += k >> 1;
        words += ~k & ~in_word & 1;
        in_word = ~k & 1;
    }
    st->lines += lines;
    st->words += words;
    st->bytes += i;
    st->in_word = in_word;
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;
    __u64 o = 0;
    int r = put_num(ctx, &o, st->lines, ' ');
    if (!r)
        r = put_num(ctx, &o, st->words, ' ');
    if (!r)
        r = put_num(ctx, &o, st->bytes, '\n');
    return r ? r : (int)o;
}
