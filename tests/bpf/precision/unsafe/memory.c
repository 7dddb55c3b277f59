/* Uninitialised stack and writes to read-only memory. */
#include <cisc_bpf.h>

/* A histogram whose counters were never zeroed. */
SEC("cisc")
int uninit_hist(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 h[16];
    for (; p < end; p++)
        h[*p & 15]++; // REJECT
    return 0;
}

/* A buffer filled only when the input is long enough, then hashed. */
SEC("cisc")
int uninit_partial(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 buf[16];
    for (int i = 0; i < 8 && p + i < end; i++)
        buf[i] = p[i];
    return cisc_crc32c(0, buf, 16); // REJECT
}

/* A struct with a padding hole copied to the output. */
struct pad {
    __u8 kind;
    __u32 val;
};

SEC("cisc")
int uninit_padding(struct cisc_ctx *ctx)
{
    struct pad r;
    r.kind = 1;
    r.val = ctx->len;
    if (ctx->out + sizeof(r) > ctx->out_end)
        return -CISC_ENOSPC;
    return cisc_copy(ctx->out, sizeof(r), &r, sizeof(r)); // REJECT
}

/* A value set on one branch only. */
SEC("cisc")
int uninit_branch(struct cisc_ctx *ctx)
{
    volatile __u64 slot;
    if (ctx->arg[0] == 1)
        slot = 7;
    return slot; // REJECT
}

/* The needle buffer is not filled completely. */
SEC("cisc")
int uninit_needle(struct cisc_ctx *ctx)
{
    char pat[8];
    pat[0] = 'E';
    pat[1] = 'R';
    return cisc_input_find(ctx, 0, 4096, pat, 8); // REJECT
}

/* Writes into the input, which is read-only. */
SEC("cisc")
int ro_write_input(struct cisc_ctx *ctx)
{
    __u8 *p = (__u8 *)ctx->data, *end = (__u8 *)ctx->data_end;
    for (; p < end; p++)
        if (*p == '\t')
            *p = ' '; // REJECT
    return 0;
}

/* Writes into a const table (read-only data). */
static const __u8 table[4] = {1, 2, 3, 4};

SEC("cisc")
int ro_write_rodata(struct cisc_ctx *ctx)
{
    volatile __u8 *t = (volatile __u8 *)table;
    t[ctx->arg[0] & 3] = 9; // REJECT
    return table[1];
}

/* Writes a context field. */
SEC("cisc")
int ro_write_ctx(struct cisc_ctx *ctx)
{
    ctx->arg[0] = 1; // REJECT
    return 0;
}

/* Uses the input as the destination of a copy. */
SEC("cisc")
int ro_copy_into_input(struct cisc_ctx *ctx)
{
    __u8 *p = (__u8 *)ctx->data, *end = (__u8 *)ctx->data_end;
    if (end - p < 16)
        return 0;
    return cisc_copy(p, 16, "0123456789abcdef", 16); // REJECT
}

/* Writes past the end of the state area. */
SEC("cisc")
int oob_state(struct cisc_ctx *ctx)
{
    __u8 *st = cisc_state();
    st[CISC_STATE_SIZE] = 1; // REJECT
    return 0;
}

/* Helper size measured from the wrong pointer: the output's end minus the input. */
SEC("cisc")
int oob_helper_size(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    return cisc_crc32c(0, p, oend - out); // REJECT
}

/* off + len overflows: each is checked alone against the block size. */
SEC("cisc")
int overflow_off_len(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 off = ctx->arg[0], len = ctx->arg[1];
    if (off > end - p || len > end - p)
        return 0;
    return cisc_crc32c(0, p + off, len); // REJECT
}

/* A 32-bit offset + length that wraps around. */
SEC("cisc")
int overflow_u32(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 off = ctx->arg[0], len = ctx->arg[1];
    if ((__u32)(off + len) > (__u32)(end - p))
        return 0;
    return p[off]; // REJECT
}
