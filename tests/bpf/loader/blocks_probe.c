/*
 * Programs for the block runner tests (blocks_test.cc).
 *   probe     writes what it saw (offset, len, flags, block, arg[0], the
 *             invocation count kept in cisc_state(), the first input byte
 *             or 256) as seven u64, returns 56; at block arg[1] - 1 it
 *             returns -arg[2] instead
 *   ret_arg   returns arg[0] (to return more than the output holds)
 */
#include <cisc_bpf.h>

SEC("cisc")
int probe(struct cisc_ctx *ctx)
{
    __u64 *calls = cisc_state();
    __u64 *out = ctx->out;
    const __u8 *in = ctx->data;
    *calls += 1;
    if (ctx->arg[1] && ctx->block + 1 == ctx->arg[1])
        return -(int)ctx->arg[2];
    if ((__u8 *)ctx->out + 56 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    out[0] = ctx->offset;
    out[1] = ctx->len;
    out[2] = ctx->flags;
    out[3] = ctx->block;
    out[4] = ctx->arg[0];
    out[5] = *calls;
    out[6] = in + 1 <= (const __u8 *)ctx->data_end ? in[0] : 256;
    return 56;
}

SEC("cisc")
int ret_arg(struct cisc_ctx *ctx)
{
    return (int)ctx->arg[0];
}

/* spin: a bounded loop of 1000 iterations (for budget tests). */
SEC("cisc")
int spin(struct cisc_ctx *ctx)
{
    volatile __u32 n = 0;
    for (int i = 0; i < 1000; i++)
        n++;
    return n;
}
