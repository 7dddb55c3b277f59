/* The other half of the linked object: a .text function with read-only
 * data, and a second program. */
#include <cisc_bpf.h>

static const char weights[2] = {10, 20};

__attribute__((noinline)) int scaled(int x)
{
    return x * 3 + weights[x & 1];
}

SEC("cisc")
int linked_second(struct cisc_ctx *ctx)
{
    return scaled(2);
}
