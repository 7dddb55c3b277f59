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
        n += ((__u64)(data[i] ^ want) - 1) >> 63;   /* 1 if equal, no branch */
    }
    st->total += n;
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;                   /* output only after the last block */

    __u64 v = st->total;
    int digits = 1;
    for (__u64 t = v; t >= 10 && digits < 20; t /= 10)
        digits++;
    __u8 *out = ctx->out;
    if (out + 21 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    for (int k = digits - 1; k >= 0; k--) {
        out[k] = '0' + v % 10;
        v /= 10;
    }
    out[digits] = '\n';
    cisc_printk("counted %llu bytes equal to %d", st->total, want);
    return digits + 1;
}
