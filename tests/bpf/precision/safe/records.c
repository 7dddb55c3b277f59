/* Fixed and variable records, the shapes of log and binary formats. */
#include <cisc_bpf.h>

/* Fixed 16-byte records: key(8) value(8); sum of values for key arg[0]. */
SEC("cisc")
int rec_fixed(struct cisc_ctx *ctx)
{
    const __u64 *r = ctx->data;
    const void *end = ctx->data_end;
    __u64 sum = 0;
    for (; (const void *)(r + 2) <= end; r += 2)
        if (r[0] == ctx->arg[0])
            sum += r[1];
    return sum & 0x7fffffff;
}

/* Records indexed from a base: data[base + i] with base checked once. */
SEC("cisc")
int rec_base_index(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 total = 0;
    for (__u32 base = 0; base < 4096; base += 64) {
        if (data + base + 64 > end)
            break;
        for (__u32 i = 0; i < 64; i++)
            total += data[base + i];
    }
    return total;
}

/* Length-prefixed strings (u8 length) copied out NUL-terminated. */
SEC("cisc")
int rec_pascal(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 o = 0;
    while (p < end) {
        __u8 len = *p++;
        if (end - p < len || oend - out < o + len + 1)
            break;
        for (__u32 k = 0; k < len; k++)
            out[o + k] = p[k];
        out[o + len] = 0;
        o += len + 1;
        p += len;
    }
    return o;
}

/* key=value lines: counts the lines whose key equals "level". */
SEC("cisc")
int rec_keyvalue(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;
    while (p < end) {
        const char *line = p;
        while (p < end && *p != '\n')
            p++;
        if (p - line > 6 && line[0] == 'l' && line[1] == 'e' && line[2] == 'v' &&
            line[3] == 'e' && line[4] == 'l' && line[5] == '=')
            n++;
        p++;
    }
    return n;
}

/* Varints (LEB128): sum of all values in the block. */
SEC("cisc")
int rec_varint(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;
    while (p < end) {
        __u64 v = 0;
        int shift = 0;
        __u8 b;
        do {
            if (p >= end)
                return -CISC_EBADMSG;
            b = *p++;
            v |= (__u64)(b & 0x7f) << shift;
            shift += 7;
        } while ((b & 0x80) && shift < 64);
        sum += v;
    }
    return sum & 0x7fffffff;
}

/* Counts lines whose first field (up to a space) is longer than arg[0]. */
SEC("cisc")
int rec_first_field(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;
    while (p < end) {
        long sp = cisc_memchr(p, end - p, ' ');
        long nl = cisc_memchr(p, end - p, '\n');
        if (nl < 0)
            break;
        if (sp >= 0 && sp < nl && sp > (long)ctx->arg[0])
            n++;
        p += nl + 1;
    }
    return n;
}
