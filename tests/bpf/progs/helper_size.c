/* Rejected: proves 16 input bytes, then asks the helper to read 32. */
#include <cisc_bpf.h>

SEC("cisc")
int helper_size(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data;
    if (data + 16 > (const __u8 *)ctx->data_end)
        return 0;
    return cisc_crc32c(0, data, 32) & 0xff;
}
