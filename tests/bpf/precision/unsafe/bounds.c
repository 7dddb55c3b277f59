/* Subtly wrong bounds: each program's line marked REJECT is where the
 * verifier must stop it (the test reads the marker). */
#include <cisc_bpf.h>

/* Reads one byte past the checked range: `<=` instead of `<`. */
SEC("cisc")
int oob_le_end(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 s = 0;
    for (; p <= end; p++)
        s += *p; // REJECT
    return s;
}

/* Checks data + i but reads data[i + 1]. */
SEC("cisc")
int oob_next_byte(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 n = 0;
    for (__u32 i = 0; i < 4096; i++) {
        if (data + i + 1 > end)
            break;
        n += data[i] == '\r' && data[i + 1] == '\n'; // REJECT
    }
    return n;
}

/* A u32 read after checking only 2 bytes. */
SEC("cisc")
int oob_wide_load(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (end - p < 2)
        return 0;
    return *(const __u32 *)p; // REJECT
}

/* TLV whose value length is checked without the 2-byte header. */
SEC("cisc")
int oob_tlv_header(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 s = 0;
    while (end - p >= 2) {
        __u8 len = p[1];
        if (p + len > end)
            break;
        s += p[2 + len - 1]; // REJECT
        p += 2 + len;
    }
    return s;
}

/* Writes the terminating NUL one past the checked output. */
SEC("cisc")
int oob_out_nul(struct cisc_ctx *ctx)
{
    __u8 *out = ctx->out, *oend = ctx->out_end;
    const __u8 *p = ctx->data, *end = ctx->data_end;
    long n = end - p;
    if (n > 64 || out + n > oend)
        return -CISC_ENOSPC;
    for (long i = 0; i < n; i++)
        out[i] = p[i];
    out[n] = 0; // REJECT
    return n + 1;
}

/* A stack array written at index 16 (it has 16 entries). */
SEC("cisc")
int oob_stack_le(struct cisc_ctx *ctx)
{
    __u32 h[16];
    __u32 n = ctx->arg[0] > 16 ? 16 : ctx->arg[0];
    for (__u32 i = 0; i <= n; i++)
        h[i] = i; // REJECT
    return h[ctx->arg[0] & 15];
}

/* Backwards scan for the last space that starts at data[len], one past
 * the end. */
SEC("cisc")
int oob_before_start(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    long i = end - data;
    if (i > 4096)
        return 0;
    while (i >= 0 && data[i] != ' ') // REJECT
        i--;
    return i;
}

/* Output written at out[k] after checking out + k against the end. */
SEC("cisc")
int oob_out_at_end(struct cisc_ctx *ctx)
{
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 k = ctx->arg[0] & 255;
    if (out + k > oend)
        return -CISC_ENOSPC;
    out[k] = 1; // REJECT
    return k + 1;
}

/* Header struct read after checking its first field only. */
struct hdr {
    __u32 magic;
    __u32 len;
};

SEC("cisc")
int oob_struct_field(struct cisc_ctx *ctx)
{
    const struct hdr *h = ctx->data;
    if ((const __u8 *)h + 4 > (const __u8 *)ctx->data_end)
        return 0;
    if (h->magic != 7)
        return 0;
    return h->len; // REJECT
}

/* Counting down from the end with an index that reaches len. */
SEC("cisc")
int oob_count_down(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    long len = end - p;
    if (len > 256 || oend - out < len)
        return -CISC_ENOSPC;
    for (long k = 0; k < len; k++)
        out[len - k] = p[k]; // REJECT
    return len;
}
