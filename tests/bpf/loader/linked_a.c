/* Half of an object linked by `bpftool gen object` (see CMakeLists.txt):
 * calls a function defined in linked_b.c. */
#include <cisc_bpf.h>

__attribute__((noinline)) int scaled(int x);

SEC("cisc")
int linked_first(struct cisc_ctx *ctx)
{
    return scaled((int)ctx->arg[0]) + 1;
}
