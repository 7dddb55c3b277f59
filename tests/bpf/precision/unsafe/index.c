/* Unchecked, signed and truncated indexes. */
#include <cisc_bpf.h>

/* A byte value used to index a 200-entry table. */
SEC("cisc")
int idx_unchecked_byte(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 t[200] = {0};
    for (; p < end; p++)
        t[*p]++; // REJECT
    return t[0];
}

/* An argument used as an index without a check. */
SEC("cisc")
int idx_unchecked_arg(struct cisc_ctx *ctx)
{
    __u32 t[32] = {0};
    t[ctx->arg[0]] = 1; // REJECT
    return t[1];
}

/* A signed char index: negative bytes index before the table. */
SEC("cisc")
int idx_signed_char(struct cisc_ctx *ctx)
{
    const __s8 *p = ctx->data, *end = ctx->data_end;
    __u16 t[128] = {0};
    for (; p < (const __s8 *)end; p++) {
        int c = *p;
        if (c < 128)
            t[c]++; // REJECT
    }
    return t[65];
}

/* A signed index checked only from above. */
SEC("cisc")
int idx_signed_arg(struct cisc_ctx *ctx)
{
    static const __u8 tbl[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    int i = (int)ctx->arg[0];
    if (i >= 16)
        return 0;
    return tbl[i]; // REJECT
}

/* The check is on a truncated copy; the index used is the full value. */
SEC("cisc")
int idx_truncated(struct cisc_ctx *ctx)
{
    __u64 i = ctx->arg[0];
    __u8 t[64] = {0};
    if ((__u8)i >= 64)
        return 0;
    t[i] = 1; // REJECT
    return t[5];
}

/* A 16-bit length from the input truncated to 8 bits for the check. */
SEC("cisc")
int idx_trunc_len(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (end - p < 2)
        return 0;
    __u16 len = (__u16)(p[0] << 8 | p[1]);
    if ((__u8)len > end - p - 2)
        return 0;
    return cisc_crc32c(0, p + 2, len); // REJECT
}

/* Binary search whose upper bound is one past the table. */
static const __u32 keys[8] = {2, 3, 5, 7, 11, 13, 17, 19};

SEC("cisc")
int idx_bsearch_hi(struct cisc_ctx *ctx)
{
    __u32 key = ctx->arg[0];
    __u32 lo = 0, hi = 8;
    while (lo <= hi) {
        __u32 mid = (lo + hi) / 2;
        if (keys[mid] == key) // REJECT
            return mid;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* An index masked with the wrong mask (31 for a 16-entry table). */
SEC("cisc")
int idx_bad_mask(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 h[16] = {0};
    for (; p < end; p++)
        h[*p & 31]++; // REJECT
    return h[3];
}

/* A histogram bucket computed as len / 8 without clamping. */
SEC("cisc")
int idx_no_clamp(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 h[32] = {0}, len = 0;
    for (; p < end; p++) {
        if (*p != '\n') {
            len++;
            continue;
        }
        h[len / 8]++; // REJECT
        len = 0;
    }
    return h[1];
}

/* A read-only table indexed by a value from the input. */
static const char hexd[16] = "0123456789abcdef";

SEC("cisc")
int idx_rodata(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (p + 1 > end)
        return 0;
    return hexd[*p >> 3]; // REJECT
}
