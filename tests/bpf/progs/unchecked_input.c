/* Rejected: reads the input without comparing against data_end first. */
#include <cisc_bpf.h>

SEC("cisc")
int unchecked_input(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data;
    return data[0];
}
