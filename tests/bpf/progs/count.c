/* count.c - counts the bytes equal to arg[0] ('\n' when arg[0] is 0) in
 * the whole input and prints the count as a decimal line. */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096              /* the loop below covers 4 KiB blocks */

struct count_state {
    __u64 total;                    /* kept across blocks in cisc_state() */
};

SEC("cisc")
int count(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct count_state *st = cisc_state();
    __u8 want = ctx->arg[0] ? (__u8)ctx->arg[0] : '\n';
    __u64 n = 0;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (int i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)     /* proves that data[i] is inside the input */
            break;
        if (data[i] == want)
            n++;
    }
    st->total += n;
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;                   /* output only after the last block */

    __u64 v = st->total, div = 1;
    for (int d = 0; d < 19 && v / div >= 10; d++)
        div *= 10;                  /* the largest power of 10 <= v */
    __u8 *out = ctx->out, *out_end = ctx->out_end;
    int k;
    for (k = 0; k < 20; k++) {      /* the digits, most significant first */
        if (out + k + 1 > out_end)  /* proves that out[k] is inside the output */
            return -CISC_ENOSPC;
        out[k] = '0' + v / div % 10;
        if (div == 1)
            break;
        div /= 10;
    }
    __u8 *nl = out + k + 1;
    if (nl + 1 > out_end)
        return -CISC_ENOSPC;
    *nl = '\n';
    cisc_printk("counted %llu bytes equal to %d", st->total, want);
    return k + 2;
}
