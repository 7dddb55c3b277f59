/* String transforms from the input into the output. */
#include <cisc_bpf.h>

SEC("cisc")
int str_upper(struct cisc_ctx *ctx)
{
    const __u8 *in = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 n = 0;
    for (; in + n < end; n++) {
        if (out + n >= oend)
            return -CISC_ENOSPC;
        __u8 c = in[n];
        out[n] = c >= 'a' && c <= 'z' ? c - 32 : c;
    }
    return n;
}

SEC("cisc")
int str_rot13(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    char *o = ctx->out, *oend = ctx->out_end;
    long len = end - p;
    if (oend - o < len)
        return -CISC_ENOSPC;
    for (long i = 0; i < len && i < 4096; i++) {
        char c = p[i];
        if ((c >= 'a' && c <= 'm') || (c >= 'A' && c <= 'M'))
            c += 13;
        else if ((c >= 'n' && c <= 'z') || (c >= 'N' && c <= 'Z'))
            c -= 13;
        o[i] = c;
    }
    return len < 4096 ? len : 4096;
}

/* Reverses every line: out[start + len - 1 - k] = line[k]. */
SEC("cisc")
int str_reverse_lines(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 start = 0, len = 0;
    for (__u32 i = 0; i < 4096 && p + i < end; i++) {
        if (p[i] != '\n') {
            len++;
            continue;
        }
        if (out + start + len + 1 > oend)
            return -CISC_ENOSPC;
        for (__u32 k = 0; k < len; k++)
            out[start + len - 1 - k] = p[start + k];
        out[start + len] = '\n';
        start += len + 1;
        len = 0;
    }
    return start;
}

/* Trims leading and trailing blanks of the whole block. */
SEC("cisc")
int str_trim(struct cisc_ctx *ctx)
{
    const __u8 *b = ctx->data, *e = ctx->data_end;
    while (b < e && (*b == ' ' || *b == '\t' || *b == '\n'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n'))
        e--;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    long n = e - b;
    if (n > oend - out)
        return -CISC_ENOSPC;
    return cisc_copy(out, oend - out, b, n);
}

/* Hex encoding: two output bytes per input byte. */
SEC("cisc")
int str_hex(struct cisc_ctx *ctx)
{
    static const char digits[16] = "0123456789abcdef";
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 i;
    for (i = 0; i < 2048 && p + i < end; i++) {
        if (out + 2 * i + 2 > oend)
            return -CISC_ENOSPC;
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    return 2 * i;
}

static __always_inline int hexval(__u8 c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Hex decoding; stops at the first non-hex pair. */
SEC("cisc")
int str_unhex(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    int n = 0;
    while (end - p >= 2 && out + n < oend) {
        int hi = hexval(p[0]), lo = hexval(p[1]);
        if (hi < 0 || lo < 0)
            break;
        out[n++] = (__u8)(hi << 4 | lo);
        p += 2;
    }
    return n;
}

/* Squeezes runs of the same byte into one (like tr -s). */
SEC("cisc")
int str_squeeze(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end, *o = out;
    int prev = -1;
    for (; p < end; p++) {
        if (*p == prev)
            continue;
        if (o == oend)
            return -CISC_ENOSPC;
        *o++ = *p;
        prev = *p;
    }
    return o - out;
}

/* Replaces tabs with a fixed number of spaces (arg[0], at most 8). */
SEC("cisc")
int str_expand_tabs(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 w = ctx->arg[0] > 8 ? 8 : ctx->arg[0];
    long n = 0;
    for (; p < end; p++) {
        if (*p != '\t') {
            if (oend - out <= n)
                return -CISC_ENOSPC;
            out[n++] = *p;
            continue;
        }
        for (__u32 k = 0; k < w; k++) {
            if (oend - out <= n)
                return -CISC_ENOSPC;
            out[n++] = ' ';
        }
    }
    return n;
}
