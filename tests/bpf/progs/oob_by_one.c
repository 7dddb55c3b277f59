/* Rejected: checks that 4 input bytes exist, then reads the fifth. */
#include <cisc_bpf.h>

SEC("cisc")
int oob_by_one(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data;
    if (data + 4 > (const __u8 *)ctx->data_end)
        return 0;
    return data[4];
}
