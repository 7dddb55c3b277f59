/* upper.c - copies its input to its output with ASCII letters upper-cased
 * (a transform whose output is as long as its input). arg[0] = 1: fail
 * with -EIO at block arg[1] instead (a program error mid-step). */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096

SEC("cisc")
int upper(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *out_end = ctx->out_end;
    int i;

    if (ctx->arg[0] == 1 && ctx->block == ctx->arg[1])
        return -CISC_EIO;
    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        __u8 *q = out + i;
        if (q + 1 > out_end)
            return -CISC_ENOSPC;
        __u8 c = data[i];
        *q = c >= 'a' && c <= 'z' ? c - 32 : c;
    }
    return i;
}
