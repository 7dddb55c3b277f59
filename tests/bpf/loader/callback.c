/* Rejected by the loader: the address of a function (a callback). */
#include <cisc_bpf.h>

static __attribute__((noinline)) int twice(int x)
{
    return 2 * x;
}

SEC("cisc")
int take_address(struct cisc_ctx *ctx)
{
    int (*volatile fn)(int) = twice;
    return (int)(long)fn;
}
