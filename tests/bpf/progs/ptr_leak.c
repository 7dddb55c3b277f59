/* Rejected: writes the address of the input buffer into the output. */
#include <cisc_bpf.h>

SEC("cisc")
int ptr_leak(struct cisc_ctx *ctx)
{
    __u64 *out = ctx->out;
    if ((__u8 *)ctx->out + 8 > (__u8 *)ctx->out_end)
        return 0;
    *out = (__u64)ctx->data;
    return 8;
}
