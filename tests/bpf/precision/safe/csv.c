/* CSV parsing the way a user writes it: pointer loops to data_end. */
#include <cisc_bpf.h>

/* Fields per line (separator arg[0], ',' by default), one byte per line. */
SEC("cisc")
int csv_fields(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u8 sep = ctx->arg[0] ? (__u8)ctx->arg[0] : ',';
    __u32 fields = 1, n = 0;

    while (p < end) {
        __u8 c = *p++;
        if (c == sep) {
            fields++;
        } else if (c == '\n') {
            if (out + n >= oend)
                return -CISC_ENOSPC;
            out[n++] = (__u8)fields;
            fields = 1;
        }
    }
    return n;
}

/* Sum of the unsigned integers in column arg[0] (0-based). */
SEC("cisc")
int csv_column_sum(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 col = ctx->arg[0], cur = 0, sum = 0, v = 0;

    for (; p < end; p++) {
        __u8 c = *p;
        if (c == ',' || c == '\n') {
            if (cur == col)
                sum += v;
            v = 0;
            cur = c == ',' ? cur + 1 : 0;
        } else if (cur == col && c >= '0' && c <= '9') {
            v = v * 10 + (c - '0');
        }
    }
    if (ctx->out + 8 > ctx->out_end)
        return -CISC_ENOSPC;
    *(__u64 *)ctx->out = sum;
    return 8;
}

/* Copies column arg[0] of every line to the output, one per line. */
SEC("cisc")
int csv_select(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u64 col = ctx->arg[0], cur = 0;

    for (; p < end; p++) {
        __u8 c = *p;
        if (c == '\n')
            cur = 0;
        else if (c == ',')
            cur++;
        if (cur != col && c != '\n')
            continue;
        if (c == ',' && cur == col)
            continue;
        if (out >= oend)
            return -CISC_ENOSPC;
        *out++ = c;
    }
    return out - (__u8 *)ctx->out;
}

/* Fields of quoted CSV ("a,b" is one field, "" an escaped quote). */
SEC("cisc")
int csv_quoted(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    int quoted = 0;
    __u32 fields = 0;

    for (__u32 i = 0; i < 4096; i++) {
        if (p + i + 1 > end)
            break;
        __u8 c = p[i];
        if (c == '"') {
            if (quoted && p + i + 2 <= end && p[i + 1] == '"')
                i++;
            else
                quoted = !quoted;
        } else if (!quoted && (c == ',' || c == '\n')) {
            fields++;
        }
    }
    return fields;
}

/* Longest line, found with an index loop and end - p comparisons. */
SEC("cisc")
int csv_longest(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 best = 0, len = 0;

    while (end - p > 0) {
        if (*p == '\n') {
            if (len > best)
                best = len;
            len = 0;
        } else {
            len++;
        }
        p++;
    }
    return len > best ? len : best;
}
