/* Programs the verifier must reject, with the source line in the message. */
#include <cisc_bpf.h>

SEC("cisc")
int off_by_one_loop(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    int s = 0;
    for (int i = 0; i < 4096; i++) {
        if (data + i + 1 > end)
            break;
        s += data[i + 1];   /* BAD: one past the checked byte */
    }
    return s;
}

SEC("cisc")
int leak_to_state(struct cisc_ctx *ctx)
{
    const void **st = cisc_state();
    st[0] = ctx->data;   /* BAD: an address into memory that persists */
    return 0;
}

SEC("cisc")
int unbounded_helper(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data;
    if (data + 1 > (const __u8 *)ctx->data_end)
        return 0;
    return cisc_crc32c(0, data, ctx->len);   /* BAD: len not proved */
}

SEC("cisc")
int uninit_read(struct cisc_ctx *ctx)
{
    __u32 buf[8];
    if (ctx->arg[0] < 8)
        buf[ctx->arg[0]] = 1;
    return buf[3];   /* BAD: maybe never written */
}
