/* Rejected: the context is read-only. */
#include <cisc_bpf.h>

SEC("cisc")
int ctx_write(struct cisc_ctx *ctx)
{
    ctx->arg[0] = 1;
    return 0;
}
