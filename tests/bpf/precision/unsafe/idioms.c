/* Near misses of the idioms in safe/idioms.c. */
#include <cisc_bpf.h>

/* The length check forgets half of the 4-byte header. */
SEC("cisc")
int idiom_header_short(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    if (end - p < 4)
        return 0;
    __u32 len = p[2] << 8 | p[3];
    if (end - p - 2 < len)
        return -CISC_EBADMSG;
    __u32 s = 0;
    for (__u32 i = 0; i < len && i < 1024; i++)
        s += p[4 + i]; // REJECT
    return s;
}

/* Hashes each piece one byte too late. */
SEC("cisc")
int idiom_chunks_shifted(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 h = 0;
    while (p < end) {
        long n = end - p;
        if (n > 512)
            n = 512;
        h = cisc_xxh64(p + 1, n, h); // REJECT
        p += n;
    }
    return h & 0xffff;
}

/* The search result used without its -1 test. */
SEC("cisc")
int idiom_index_untested(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    long i = cisc_memchr(p, end - p, ',');
    return p[i]; // REJECT
}
