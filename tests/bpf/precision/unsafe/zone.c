/* Near misses of the scalar relations (bpf/verifier_zone.c): each is one
 * step off safe/records.c's rec_pascal, which checks
 * `oend - out < o + len + 1` and then writes out[o + k] for k < len and
 * out[o + len]. The relations k < len and o + len + 1 <= oend - out must
 * not prove any of these. */
#include <cisc_bpf.h>

/* `k <= len` instead of `k < len`: p[len] is one past what
 * `end - p < len` proves (out[o + len] itself is still inside). */
SEC("cisc")
int zone_le_not_lt(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 o = 0;
    while (p < end) {
        __u8 len = *p++;
        if (end - p < len || oend - out < o + len + 1)
            break;
        for (__u32 k = 0; k <= len; k++)
            out[o + k] = p[k]; // REJECT
        o += len + 1;
        p += len;
    }
    return o;
}

/* The loop right, the terminator one further: out[o + len + 1] is past
 * what `o + len + 1 <= oend - out` proves. */
SEC("cisc")
int zone_terminator_past(struct cisc_ctx *ctx)
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
        out[o + len + 1] = 0; // REJECT
        o += len + 2;
        p += len;
    }
    return o;
}

/* The +1 for the terminator missing from the check: out[o + len] is one
 * past what `o + len <= oend - out` proves. */
SEC("cisc")
int zone_missing_plus_one(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 o = 0;
    while (p < end) {
        __u8 len = *p++;
        if (end - p < len || oend - out < o + len)
            break;
        for (__u32 k = 0; k < len; k++)
            out[o + k] = p[k];
        out[o + len] = 0; // REJECT
        o += len + 1;
        p += len;
    }
    return o;
}

/* A signed index: k counts from -1, so out[o + k] may be before out. */
SEC("cisc")
int zone_signed_index(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    long o = 0;
    while (p < end) {
        __u8 len = *p++;
        if (end - p < len || oend - out < o + len + 1)
            break;
        for (long k = -1; k < len; k++)
            out[o + k] = (__u8)k; // REJECT
        o += len + 1;
        p += len;
    }
    return o;
}

/* o + len + 1 computed in 32 bits from an o the caller gives: it wraps
 * for o near 2^32, so the check passes while out[o + len] is far away. */
SEC("cisc")
int zone_sum_overflow(struct cisc_ctx *ctx)
{
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 o = ctx->arg[0], len = ctx->arg[1] & 0xff;
    if (oend - out < (__u32)(o + len + 1))
        return 0;
    out[(__u64)o + len] = 0; // REJECT
    return len;
}

/* str_reverse_lines (safe/strings.c) without the +1 of its check: the
 * '\n' at out[start + len] is one past `out + start + len <= oend`. */
SEC("cisc")
int zone_reverse_no_room_for_newline(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 start = 0, len = 0;
    for (__u32 i = 0; i < 4096 && p + i < end; i++) {
        if (p[i] != '\n') {
            len++;
            continue;
        }
        if (out + start + len > oend)
            return -CISC_ENOSPC;
        for (__u32 k = 0; k < len; k++)
            out[start + len - 1 - k] = p[start + k];
        out[start + len] = '\n'; // REJECT
        start += len + 1;
        len = 0;
    }
    return start;
}

/* str_reverse_lines reading p[start + k + 2]: at k = len - 1 that is
 * p[i + 1], one past the newline's byte p[i] = p[start + len], the last
 * one `p + i < end` proves (p[start + k + 1] would still be safe). */
SEC("cisc")
int zone_reverse_reads_past(struct cisc_ctx *ctx)
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
            out[start + len - 1 - k] = p[start + k + 2]; // REJECT
        out[start + len] = '\n';
        start += len + 1;
        len = 0;
    }
    return start;
}

/* str_reverse_lines copying k <= len bytes: at k = len the write is
 * out[start - 1], one before the line (out[-1] for the first one). At -O1
 * the index is one register counted down beside k, bounded below only
 * by k < len. */
SEC("cisc")
int zone_reverse_le_not_lt(struct cisc_ctx *ctx)
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
        for (__u32 k = 0; k <= len; k++)
            out[start + len - 1 - k] = p[start + k]; // REJECT
        out[start + len] = '\n';
        start += len + 1;
        len = 0;
    }
    return start;
}

/* str_reverse_lines writing out[start + len + 1 - k]: at k = 0 that is
 * one past out[start + len], the last byte `out + start + len + 1 <= oend`
 * proves (out[start + len - k] would still be inside). */
SEC("cisc")
int zone_reverse_writes_past(struct cisc_ctx *ctx)
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
            out[start + len + 1 - k] = p[start + k]; // REJECT
        out[start + len] = '\n';
        start += len + 1;
        len = 0;
    }
    return start;
}
