/* The idioms docs/BPF.md lists as accepted, each in its plainest form. */
#include <cisc_bpf.h>

/* Words of 4 bytes while 4 remain: p <= end - 4. */
SEC("cisc")
int idiom_step4(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 s = 0;
    for (; p <= end - 4; p += 4)
        s += *(const __u32 *)p;
    return s;
}

/* The index a search helper returns, used after its -1 test. */
SEC("cisc")
int idiom_at_index(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    long i = cisc_memchr(p, end - p, ',');
    if (i >= 0)
        return p[i] + 1;
    return 0;
}

/* A helper over the rest of the block in pieces of at most 512 bytes. */
SEC("cisc")
int idiom_chunks(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 h = 0;
    while (p < end) {
        long n = end - p;
        if (n > 512)
            n = 512;
        h = cisc_xxh64(p, n, h);
        p += n;
    }
    return h & 0xffff;
}

/* A fixed header, then a length-checked payload: end - p - 4 < len. */
SEC("cisc")
int idiom_header_len(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (end - p < 4)
        return 0;
    __u32 len = p[2] << 8 | p[3];
    if (end - p - 4 < len)
        return -CISC_EBADMSG;
    __u32 s = 0;
    for (__u32 i = 0; i < len && i < 1024; i++)
        s += p[4 + i];
    return s;
}
