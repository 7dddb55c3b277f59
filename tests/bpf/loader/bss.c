/* Rejected by the loader: a writable global (.bss). */
#include <cisc_bpf.h>

int counter;

SEC("cisc")
int count_calls(struct cisc_ctx *ctx)
{
    return ++counter;
}
