/* blockinfo.c - for every block, one 32-byte record of what the program
 * saw: ctx->block, ctx->offset, ctx->len, ctx->flags (u64 each). Also
 * counts blocks in cisc_state() and traces at the last block. Tests of
 * block boundaries and of streams use it. */
#include <cisc_bpf.h>

struct st {
    __u64 blocks;
};

SEC("cisc")
int blockinfo(struct cisc_ctx *ctx)
{
    struct st *s = cisc_state();
    __u64 *out = ctx->out;

    if ((__u8 *)ctx->out + 32 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    s->blocks++;
    out[0] = ctx->block;
    out[1] = ctx->offset;
    out[2] = ctx->len;
    out[3] = ctx->flags;
    if (ctx->flags & CISC_F_LAST_BLOCK)
        cisc_printk("blockinfo: %llu blocks", s->blocks);
    return 32;
}
