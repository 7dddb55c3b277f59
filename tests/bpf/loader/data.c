/* Rejected by the loader: an initialised writable global (.data). */
#include <cisc_bpf.h>

int limit = 5;

SEC("cisc")
int use_limit(struct cisc_ctx *ctx)
{
    return ctx->len > (__u64)limit;
}
