/* spin.c - verifies, then loops until the instruction budget stops it
 * (at block arg[0]; earlier blocks output nothing and succeed). */
#include <cisc_bpf.h>

SEC("cisc")
int spin(struct cisc_ctx *ctx)
{
    volatile __u64 go = ctx->block == ctx->arg[0];

    while (go)
        ;
    return 0;
}
