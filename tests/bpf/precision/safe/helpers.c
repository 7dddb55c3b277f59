/* Helper calls with sizes computed from the pointers. */
#include <cisc_bpf.h>

/* Lines counted with memchr over the rest of the block. */
SEC("cisc")
int hlp_memchr_lines(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 lines = 0;
    while (p < end) {
        long i = cisc_memchr(p, end - p, '\n');
        if (i < 0)
            break;
        lines++;
        p += i + 1;
    }
    return lines;
}

/* Occurrences of the 4-byte pattern in arg[0]. */
SEC("cisc")
int hlp_memmem_count(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 pat = ctx->arg[0];
    __u32 n = 0;
    while (end - p >= 4) {
        long i = cisc_memmem(p, end - p, &pat, 4);
        if (i < 0)
            break;
        n++;
        p += i + 1;
    }
    return n;
}

/* Copies the whole block to the output with one helper call. */
SEC("cisc")
int hlp_copy_all(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    return cisc_copy(out, oend - out, p, end - p);
}

/* Copies the first line (through its newline) to the output. */
SEC("cisc")
int hlp_first_line(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    long nl = cisc_memchr(p, end - p, '\n');
    long len = nl < 0 ? end - p : nl + 1;
    __u8 *out = ctx->out;
    if (out + len > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    return cisc_copy(out, len, p, len);
}

/* A 16-byte header, then a CRC-32C over the payload it announces. */
SEC("cisc")
int hlp_header_crc(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (end - p < 16)
        return -CISC_EBADMSG;
    __u32 len = *(const __u32 *)(p + 8), want = *(const __u32 *)(p + 12);
    if (len > end - p - 16)
        return -CISC_EBADMSG;
    return cisc_crc32c(0, p + 16, len) == want;
}

/* Input split at the last newline: the tail is kept in the state area. */
SEC("cisc")
int hlp_keep_tail(struct cisc_ctx *ctx)
{
    __u8 *st = cisc_state();
    const __u8 *p = ctx->data, *end = ctx->data_end;
    long last = cisc_input_rchr(ctx, 0, ctx->len, '\n');
    const __u8 *tail = p + last + 1;
    if (last < 0 || tail > end)
        return 0;
    long n = end - tail;
    if (n > 1024)
        n = 1024;
    return cisc_copy(st, 1024, tail, n);
}

/* Trace of every line that starts with '#', through a stack buffer. */
SEC("cisc")
int hlp_comments(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    int n = 0;
    while (p < end) {
        long nl = cisc_memchr(p, end - p, '\n');
        long len = nl < 0 ? end - p : nl;
        if (*p == '#')
            n++;
        p += len + 1;
    }
    cisc_printk("comments: %d", n);
    return n;
}
