/* Subprograms: stack buffers passed down, values returned, helpers. */
#include <cisc_bpf.h>

static __attribute__((noinline)) int fill(__u8 *buf, int n, __u8 v)
{
    for (int i = 0; i < 32; i++)
        if (i < n)
            buf[i] = v + i;
    return n;
}

static __attribute__((noinline)) __u32 sum(const __u8 *buf, int n)
{
    __u32 s = 0;
    for (int i = 0; i < 32 && i < n; i++)
        s += buf[i];
    return s;
}

SEC("cisc")
int stack_buffers(struct cisc_ctx *ctx)
{
    __u8 buf[32] = {0};
    int n = fill(buf, ctx->arg[0] & 31, 7);
    return sum(buf, n);
}

static __attribute__((noinline)) int checked_read(struct cisc_ctx *ctx, __u32 off)
{
    const __u8 *p = (const __u8 *)ctx->data + (off & 1023);
    if (p + 4 > (const __u8 *)ctx->data_end)
        return -1;
    return p[0] | p[1] << 8 | p[2] << 16 | p[3] << 24;
}

SEC("cisc")
int reader(struct cisc_ctx *ctx)
{
    int a = checked_read(ctx, 0), b = checked_read(ctx, ctx->arg[0]);
    return a ^ b;
}

SEC("cisc")
int hashes(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 len = 64;
    if (data + 64 > end)
        return -CISC_EINVAL;
    if (ctx->arg[0] < 64)
        len = ctx->arg[0];   /* a bounded, variable size */
    __u64 h = cisc_xxh64(data, len, 0) ^ cisc_xxh3_64(data, len);
    __u8 *out = ctx->out;
    if (out + 8 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *(__u64 *)out = h;
    cisc_printk("hash %llx\n", h);
    return 8;
}
