/* two.c - an object with two programs (load needs --prog). */
#include <cisc_bpf.h>

SEC("cisc")
int first(struct cisc_ctx *ctx)
{
    return 0;
}

SEC("cisc")
int second(struct cisc_ctx *ctx)
{
    return 0;
}
