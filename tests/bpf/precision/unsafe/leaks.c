/* Pointer leaks: addresses must never reach the output, the state area,
 * a helper's number argument or the return value. */
#include <cisc_bpf.h>

SEC("cisc")
int leak_to_out(struct cisc_ctx *ctx)
{
    const void **out = ctx->out;
    if ((void *)(out + 1) > ctx->out_end)
        return -CISC_ENOSPC;
    out[0] = ctx->data; // REJECT
    return 8;
}

SEC("cisc")
int leak_return(struct cisc_ctx *ctx)
{
    const char *p = ctx->data;
    return (long)p; // REJECT
}

SEC("cisc")
int leak_stack_addr(struct cisc_ctx *ctx)
{
    __u64 x = 5;
    __u64 *o = ctx->out;
    if ((void *)(o + 1) > ctx->out_end)
        return -CISC_ENOSPC;
    *o = (__u64)&x; // REJECT
    return 8;
}

SEC("cisc")
int leak_trace(struct cisc_ctx *ctx)
{
    cisc_printk("data at %llx", (__u64)ctx->data); // REJECT
    return 0;
}

SEC("cisc")
int leak_state_end(struct cisc_ctx *ctx)
{
    __u64 *st = cisc_state();
    st[1] = (__u64)ctx->data_end; // REJECT
    return 0;
}

/* A pointer hidden in arithmetic: p ^ 0 is not a pointer any more. */
SEC("cisc")
int leak_xor(struct cisc_ctx *ctx)
{
    __u64 v = (__u64)ctx->data ^ ctx->arg[0]; // REJECT
    return v & 0xffff;
}

/* A pointer difference between two different buffers. */
SEC("cisc")
int leak_cross_diff(struct cisc_ctx *ctx)
{
    return (const char *)ctx->out - (const char *)ctx->data; // REJECT
}

/* A pointer compared with a number taken from the input. */
SEC("cisc")
int leak_cmp_number(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (end - p < 8)
        return 0;
    __u64 guess = *(const __u64 *)p;
    if ((__u64)p == guess) // REJECT
        return 1;
    return 0;
}
