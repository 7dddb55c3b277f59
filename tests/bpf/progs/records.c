/*
 * records: a parser for a stream of type-length-value records, with a
 * bounded loop.
 *
 *   record := type:u8 len:u8 payload[len]
 *
 * Records never span blocks; type 0 ends a block's records (padding).
 * Output: for every record of type 1 with at least 4 payload bytes, its
 * first 4 payload bytes (a little-endian u32 value). Other records are
 * skipped.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX   4096
#define MAX_RECORDS 2048     /* a record is at least 2 bytes */
#define OUT_MAX     (4 * MAX_RECORDS)

SEC("cisc")
int records(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 off = 0, olen = 0;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (int n = 0; n < MAX_RECORDS; n++) {
        if (off > BLOCK_MAX)
            break;                       /* keeps the offset bounded */
        const __u8 *p = data + off;
        if (p + 2 > end)
            break;
        __u8 type = p[0], len = p[1];
        if (type == 0)
            break;
        if (p + 2 + len > end)
            return -CISC_EBADMSG;        /* record runs past the block */
        if (type == 1 && len >= 4) {
            if (p + 6 > end || olen > OUT_MAX - 4)
                return -CISC_EBADMSG;
            __u8 *q = (__u8 *)ctx->out + olen;
            if (q + 4 > (__u8 *)ctx->out_end)
                return -CISC_ENOSPC;
            __builtin_memcpy(q, p + 2, 4);
            olen += 4;
        }
        off += 2 + len;
    }
    return olen;
}
