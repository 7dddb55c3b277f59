/* Accepted: several programs in several sections sharing .text
 * subprograms and read-only data; a license section; a static function in
 * the program section called like a subprogram. */
#include <cisc_bpf.h>

char LICENSE[] SEC("license") = "GPL";

static const __u32 weights[4] = {3, 5, 7, 11};

__attribute__((noinline)) int weigh(int i)
{
    return weights[i & 3];
}

static __attribute__((noinline)) int twice(int x)
{
    return x * 2;
}

SEC("cisc") __attribute__((noinline)) static int in_section(int x)
{
    return weigh(x) + 1;
}

SEC("cisc")
int first(struct cisc_ctx *ctx)
{
    return weigh((int)ctx->arg[0]);
}

SEC("cisc")
int second(struct cisc_ctx *ctx)
{
    cisc_printk("second: %d\n", (int)ctx->arg[0]);
    return twice(weigh((int)ctx->arg[0])) + in_section((int)ctx->arg[1]);
}

SEC("cisc/other")
int third(struct cisc_ctx *ctx)
{
    return twice((int)ctx->arg[1]);
}

SEC("cisc")
int leaf(struct cisc_ctx *ctx)
{
    return 42;
}
