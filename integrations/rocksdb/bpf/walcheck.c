/*
 * walcheck.c - checks the records of a RocksDB (or LevelDB) write-ahead
 * log in the device and passes on the bytes before the first damaged one
 * (integrations/rocksdb, cisc_rocksdb.h invariant 5).
 *
 * The log is a sequence of 32 KiB blocks; run with block size 32768 over
 * input that starts on a block boundary, so one invocation sees one log
 * block. A block holds records - header, then payload - and, when fewer
 * than 7 bytes are left, a zero trailer. Header: masked CRC-32C (4 bytes,
 * little-endian), payload length (2, little-endian), type (1); recyclable
 * records (types 5-8) add the log number (4). The CRC covers the type, the
 * log number if any, and the payload; it is stored masked (rotated right
 * by 15 bits, plus 0xa282ead8).
 *
 * Output: the block's bytes up to the first record whose CRC is wrong
 * (all of them when every record is right); after one, the later blocks
 * output nothing, so the step's output is the valid prefix of its input.
 * What the program cannot judge - a zero header, an unknown type, a record
 * running past the input (the torn tail a crash leaves) - ends the check
 * of the block and passes the block on whole: RocksDB's reader decides.
 */
#include <cisc_bpf.h>

#define LOG_BLOCK  32768
#define HDR        7
#define HDR_RECYC  11
#define MAX_RECS   (LOG_BLOCK / HDR + 1)
#define MASK_DELTA 0xa282ead8u

struct wc_state {
    __u64 damaged;   /* a damaged record was found in an earlier block */
};

static __always_inline __u32 unmask(__u32 m)
{
    __u32 rot = m - MASK_DELTA;
    return (rot >> 17) | (rot << 15);
}

/* Bytes of the block before its first damaged record, or the block's
 * length when it has none. */
static __always_inline __u64 valid_prefix(const __u8 *data, const __u8 *end)
{
    __u64 pos = 0;
    for (int k = 0; k < MAX_RECS; k++) {
        if (pos > LOG_BLOCK - HDR)
            break;
        const __u8 *h = data + pos;
        if (h + HDR > end)
            break;
        __u32 len = (__u32)h[4] | (__u32)h[5] << 8;
        __u8 type = h[6];
        __u32 hdr = type >= 5 && type <= 8 ? HDR_RECYC : HDR;
        if (type == 0 || type > 9)
            break;
        const __u8 *q = h + 6;
        __u64 need = hdr - 6 + len;
        asm volatile("" : "+r"(need));   /* one register for the check and the call */
        if (need > (__u64)(end - q))
            break;
        __u32 want = unmask((__u32)h[0] | (__u32)h[1] << 8 | (__u32)h[2] << 16 |
                            (__u32)h[3] << 24);
        if (cisc_crc32c(0, q, need) != want)
            return pos;
        pos += hdr + len;
    }
    return end - data;
}

SEC("cisc")
int walcheck(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct wc_state *st = cisc_state();

    if (end - data > LOG_BLOCK)
        return -CISC_E2BIG;
    if (st->damaged)
        return 0;
    __u64 good = valid_prefix(data, end);
    if (good < (__u64)(end - data))
        st->damaged = 1;
    cisc_copy(ctx->out, ctx->out_end - ctx->out, data, end - data);
    return (int)good;
}
