/* The codecs of safe/codecs.c, each with the slip a user makes: the line
 * marked REJECT is where the verifier must stop it. */
#include <cisc_bpf.h>

static const char b64_alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Room checked for 3 output bytes, 4 written. */
SEC("cisc")
int b64_encode_short_room(struct cisc_ctx *ctx)
{
    const __u8 *in = ctx->data, *end = ctx->data_end;
    char *out = ctx->out, *oend = ctx->out_end;
    char *o = out;

    while (end - in >= 3) {
        if (oend - o < 3)
            return -CISC_ENOSPC;
        __u32 v = (__u32)in[0] << 16 | (__u32)in[1] << 8 | in[2];
        o[0] = b64_alphabet[v >> 18];
        o[1] = b64_alphabet[(v >> 12) & 63];
        o[2] = b64_alphabet[(v >> 6) & 63];
        o[3] = b64_alphabet[v & 63]; // REJECT
        in += 3;
        o += 4;
    }
    return o - out;
}

/* The top sextet taken from a 32-bit word of four input bytes: v >> 18
 * reaches 16383, past the 64-entry alphabet. */
SEC("cisc")
int b64_encode_wide_index(struct cisc_ctx *ctx)
{
    const __u8 *in = ctx->data, *end = ctx->data_end;
    char *o = ctx->out, *oend = ctx->out_end;
    if (end - in < 4 || oend - o < 1)
        return 0;
    __u32 v = (__u32)in[0] << 24 | (__u32)in[1] << 16 | (__u32)in[2] << 8 | in[3];
    o[0] = b64_alphabet[v >> 18]; // REJECT
    return 1;
}

/* An escape at the end of the input reads past it: only 2 bytes checked. */
SEC("cisc")
int url_decode_short_escape(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *o = ctx->out, *oend = ctx->out_end;
    __u8 *start = o;

    while (p < end) {
        if (o >= oend)
            return -CISC_ENOSPC;
        if (*p == '%') {
            if (end - p < 2)
                return -CISC_EBADMSG;
            __u8 hi = p[1], lo = p[2]; // REJECT
            *o++ = (__u8)((hi & 15) << 4 | (lo & 15));
            p += 3;
            continue;
        }
        *o++ = *p++;
    }
    return o - start;
}

/* The pair written after checking room for one byte. */
SEC("cisc")
int rle_encode_one_byte_room(struct cisc_ctx *ctx)
{
    const __u8 *in = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 n = 0;

    for (__u32 i = 0; i < 4096 && in + i < end; i++) {
        if (out + n + 1 > oend)
            return -CISC_ENOSPC;
        out[n] = 1;
        out[n + 1] = in[i]; // REJECT
        n += 2;
    }
    return n;
}

/* The table index without `& 0xff`: crc ^ byte spans 32 bits. */
struct crc_state {
    __u32 table[256];
    __u32 crc;
};

SEC("cisc")
int crc32_unmasked_index(struct cisc_ctx *ctx)
{
    struct crc_state *st = cisc_state();
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 crc = st->crc;
    for (; p < end; p++)
        crc = st->table[crc ^ *p] ^ (crc >> 8); // REJECT
    st->crc = crc;
    return 0;
}

/* A ring of 8 slots indexed modulo 9. */
SEC("cisc")
int ring_modulo_nine(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 ring[8] = {0};
    __u64 sum = 0;
    __u32 count = 0;

    for (; p < end; p++) {
        __u32 slot = count % 9;
        sum += *p - ring[slot]; // REJECT
        ring[slot] = *p;
        count++;
    }
    return sum;
}

/* A hash table of 64 slots probed with `& 64` for `& 63`. */
SEC("cisc")
int hash_slot_wrong_mask(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 slots[64];
    __u32 distinct = 0;

    for (int i = 0; i < 64; i++)
        slots[i] = 0;
    for (; p < end; p++) {
        __u32 h = (*p * 2654435761u) | 1;
        __u32 s = (h >> 8) & 64;
        if (slots[s] != h) { // REJECT
            slots[s] = h;
            distinct++;
        }
    }
    return distinct;
}

/* A UTF-8 sequence's continuation bytes read after checking one byte
 * fewer than the sequence's length. */
SEC("cisc")
int utf8_short_sequence(struct cisc_ctx *ctx)
{
    const __u8 *s = ctx->data, *end = ctx->data_end;
    long count = 0;

    while (s < end) {
        __u8 c = s[0];
        int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
        if (end - s < len - 1)
            return -CISC_EBADMSG;
        __u32 cp = c;
        for (int k = 1; k < len; k++)
            cp = cp << 6 | (s[k] & 0x3f); // REJECT
        s += len;
        count += cp != 0;
    }
    return count;
}

/* A line's hash taken over one byte more than is left when the last line
 * has no newline. */
SEC("cisc")
int uniq_hash_past_end(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 h = 0;

    while (p < end) {
        long nl = cisc_memchr(p, end - p, '\n');
        __u32 len = nl < 0 ? end - p + 1 : nl + 1;
        h ^= cisc_xxh64(p, len, 0); // REJECT
        p += len;
    }
    return h != 0;
}

/* The four address bytes stored at out + 4 * words, with room checked
 * for the word before it. */
SEC("cisc")
int ipv4_room_for_previous(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 words = 0;

    for (; p + 4 <= end && words < 1024; p += 4) {
        if (out + 4 * words > oend)
            return -CISC_ENOSPC;
        __builtin_memcpy(out + 4 * words, p, 4); // REJECT
        words++;
    }
    return 4 * words;
}
