/* Type-length-value records: 1-byte and 2-byte headers, big-endian lengths. */
#include <cisc_bpf.h>

/* type(1) len(1) value[len]: bytes of value per type in a 16-entry table. */
SEC("cisc")
int tlv_bytes_per_type(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 bytes[16] = {0};

    while (end - p >= 2) {
        __u8 type = p[0], len = p[1];
        if (end - p - 2 < len)
            return -CISC_EBADMSG;
        bytes[type & 15] += len;
        p += 2 + len;
    }
    if (ctx->out + sizeof(bytes) > ctx->out_end)
        return -CISC_ENOSPC;
    __u32 *o = ctx->out;
    for (int i = 0; i < 16; i++)
        o[i] = bytes[i];
    return sizeof(bytes);
}

/* type(2) len(2, big-endian): number of records of type arg[0]. */
SEC("cisc")
int tlv_be16(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;

    for (;;) {
        if (p + 4 > end)
            break;
        __u16 type = (__u16)(p[0] << 8 | p[1]);
        __u16 len = (__u16)(p[2] << 8 | p[3]);
        p += 4;
        if (p + len > end)
            return -CISC_EBADMSG;
        n += type == ctx->arg[0];
        p += len;
    }
    return n;
}

/* Copies the value of every record of type arg[0] to the output. */
SEC("cisc")
int tlv_extract(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;

    while (p + 2 <= end) {
        __u8 type = p[0], len = p[1];
        const __u8 *v = p + 2;
        if (v + len > end)
            break;
        if (type == ctx->arg[0]) {
            for (__u8 i = 0; i < len; i++) {
                if (out >= oend)
                    return -CISC_ENOSPC;
                *out++ = v[i];
            }
        }
        p = v + len;
    }
    return out - (__u8 *)ctx->out;
}

/* CRC-32C of every value, through the helper with a checked length. */
SEC("cisc")
int tlv_crc(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 crc = 0;

    while (end - p > 2) {
        __u32 len = p[1];
        if (len > end - p - 2)
            break;
        crc = cisc_crc32c(crc, p + 2, len);
        p += 2 + len;
    }
    return crc & 0x7fffffff;
}

/* Little-endian u32 length-prefixed records, fixed-size header struct. */
struct rec_hdr {
    __u32 magic;
    __u16 kind;
    __u16 len;
};

SEC("cisc")
int tlv_struct(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 good = 0;

    for (int k = 0; k < 1024; k++) {
        const struct rec_hdr *h = (const void *)p;
        if ((const __u8 *)(h + 1) > end)
            break;
        if (h->magic != 0x52454331)
            return -CISC_EBADMSG;
        good += h->kind == 1;
        p += sizeof(*h) + h->len;
    }
    return good;
}
