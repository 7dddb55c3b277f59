/* burn.c - counts to arg[0] in every block (about 6 instructions a step),
 * then returns 0 with no output: a program that stays just under its
 * per-invocation budget in every block, so only a bound on the whole step
 * (or the op) stops a long input. */
#include <cisc_bpf.h>

SEC("cisc")
int burn(struct cisc_ctx *ctx)
{
    volatile __u64 i = 0;
    __u64 n = ctx->arg[0];

    while (i < n)
        i++;
    return 0;
}
