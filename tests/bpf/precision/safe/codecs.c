/* Encoders, decoders and validators the way a user writes them: tables in
 * read-only data, in the stack and in the step's state, escapes that read
 * ahead, output that grows by more than one byte per input byte. */
#include <cisc_bpf.h>

static const char b64_alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* RFC 4648 base64 with '=' padding. */
SEC("cisc")
int b64_encode(struct cisc_ctx *ctx)
{
    const __u8 *in = ctx->data, *end = ctx->data_end;
    char *out = ctx->out, *oend = ctx->out_end;
    char *o = out;

    while (end - in >= 3) {
        if (oend - o < 4)
            return -CISC_ENOSPC;
        __u32 v = (__u32)in[0] << 16 | (__u32)in[1] << 8 | in[2];
        o[0] = b64_alphabet[v >> 18];
        o[1] = b64_alphabet[(v >> 12) & 63];
        o[2] = b64_alphabet[(v >> 6) & 63];
        o[3] = b64_alphabet[v & 63];
        in += 3;
        o += 4;
    }
    if (in < end) {
        if (oend - o < 4)
            return -CISC_ENOSPC;
        __u32 v = (__u32)in[0] << 16;
        if (in + 1 < end)
            v |= (__u32)in[1] << 8;
        o[0] = b64_alphabet[v >> 18];
        o[1] = b64_alphabet[(v >> 12) & 63];
        o[2] = in + 1 < end ? b64_alphabet[(v >> 6) & 63] : '=';
        o[3] = '=';
        o += 4;
    }
    return o - out;
}

static __always_inline int b64_value(__u8 c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes base64, skipping line breaks; stops at the first '='. */
SEC("cisc")
int b64_decode(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 acc = 0, bits = 0, n = 0;

    for (; p < end; p++) {
        __u8 c = *p;
        if (c == '\n' || c == '\r')
            continue;
        if (c == '=')
            break;
        int v = b64_value(c);
        if (v < 0)
            return -CISC_EBADMSG;
        acc = acc << 6 | (__u32)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (out + n >= oend)
                return -CISC_ENOSPC;
            out[n++] = (__u8)(acc >> bits);
        }
    }
    return n;
}

static __always_inline int hexval(__u8 c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* URL decoding: %XX escapes and '+' for a space. */
SEC("cisc")
int url_decode(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *o = ctx->out, *oend = ctx->out_end;
    __u8 *start = o;

    while (p < end) {
        if (o >= oend)
            return -CISC_ENOSPC;
        __u8 c = *p;
        if (c == '%') {
            if (end - p < 3)
                return -CISC_EBADMSG;
            int hi = hexval(p[1]), lo = hexval(p[2]);
            if (hi < 0 || lo < 0)
                return -CISC_EBADMSG;
            *o++ = (__u8)(hi << 4 | lo);
            p += 3;
            continue;
        }
        *o++ = c == '+' ? ' ' : c;
        p++;
    }
    return o - start;
}

/* Run-length encoding: (count, byte) pairs, runs of at most 255. */
SEC("cisc")
int rle_encode(struct cisc_ctx *ctx)
{
    const __u8 *in = ctx->data;
    __u64 len = ctx->len;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u64 i = 0, n = 0;

    if (len > (__u64)((const __u8 *)ctx->data_end - in))
        return -CISC_EINVAL;
    while (i < len) {
        __u8 c = in[i];
        __u32 run = 1;
        while (i + run < len && run < 255 && in[i + run] == c)
            run++;
        if (out + n + 2 > oend)
            return -CISC_ENOSPC;
        out[n] = (__u8)run;
        out[n + 1] = c;
        n += 2;
        i += run;
    }
    return n;
}

/* The inverse: every pair expands to count copies of its byte. */
SEC("cisc")
int rle_decode(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    long n = 0;

    while (p + 2 <= end) {
        __u8 count = p[0], c = p[1];
        p += 2;
        for (__u8 k = 0; k < count; k++) {
            if (out + n >= oend)
                return -CISC_ENOSPC;
            out[n++] = c;
        }
    }
    return p == end ? n : -CISC_EBADMSG;
}

/* Counts the code points of well-formed UTF-8 (no overlongs, surrogates
 * or values past U+10FFFF). */
SEC("cisc")
int utf8_count(struct cisc_ctx *ctx)
{
    const __u8 *s = ctx->data, *end = ctx->data_end;
    long count = 0;

    while (s < end) {
        __u8 c = s[0];
        int len;
        __u32 cp;
        if (c < 0x80) {
            s++;
            count++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return -CISC_EBADMSG;
        }
        if (end - s < len)
            return -CISC_EBADMSG;
        for (int k = 1; k < len; k++) {
            if ((s[k] & 0xc0) != 0x80)
                return -CISC_EBADMSG;
            cp = cp << 6 | (s[k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return -CISC_EBADMSG;
        s += len;
        count++;
    }
    return count;
}

/* Luhn check of one card number per line: '1' or '0' per line. */
SEC("cisc")
int luhn_lines(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    char *out = ctx->out, *oend = ctx->out_end;
    __u32 n = 0;

    while (p < end) {
        const char *eol = p;
        while (eol < end && *eol != '\n')
            eol++;
        __u32 sum = 0, digits = 0;
        for (const char *q = eol; q > p;) {
            char c = *--q;
            if (c == ' ')
                continue;
            if (c < '0' || c > '9')
                return -CISC_EBADMSG;
            __u32 d = c - '0';
            if (digits++ & 1) {
                d *= 2;
                if (d > 9)
                    d -= 9;
            }
            sum += d;
        }
        if (out + n >= oend)
            return -CISC_ENOSPC;
        out[n++] = digits > 1 && sum % 10 == 0 ? '1' : '0';
        p = eol + 1;
    }
    return n;
}

/* Dotted-quad IPv4 addresses, one per line, to 32-bit big-endian words. */
SEC("cisc")
int ipv4_parse(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 words = 0;

    while (p < end) {
        __u8 quad[4] = {0};   /* written at a variable index: initialised first */
        int part = 0;
        __u32 v = 0, ndig = 0;
        for (; p < end && *p != '\n'; p++) {
            __u8 c = *p;
            if (c == '.') {
                if (ndig == 0 || part == 3)
                    return -CISC_EBADMSG;
                quad[part++] = (__u8)v;
                v = 0;
                ndig = 0;
            } else if (c >= '0' && c <= '9' && ndig < 3) {
                v = v * 10 + (c - '0');
                ndig++;
                if (v > 255)
                    return -CISC_EBADMSG;
            } else {
                return -CISC_EBADMSG;
            }
        }
        if (part != 3 || ndig == 0)
            return -CISC_EBADMSG;
        quad[3] = (__u8)v;
        p++;   /* the newline, or past the end */
        if (out + 4 * words + 4 > oend)
            return -CISC_ENOSPC;
        __builtin_memcpy(out + 4 * words, quad, 4);
        words++;
    }
    return 4 * words;
}

/* CRC-32 (IEEE, reflected) with its 1 KiB table built in the step's state
 * at the first block and used by every block; the running value lives
 * after the table. */
struct crc_state {
    __u32 table[256];
    __u32 crc;
};

SEC("cisc")
int crc32_table(struct cisc_ctx *ctx)
{
    struct crc_state *st = cisc_state();
    const __u8 *p = ctx->data, *end = ctx->data_end;

    if (ctx->flags & CISC_F_FIRST_BLOCK) {
        for (__u32 i = 0; i < 256; i++) {
            __u32 c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            st->table[i] = c;
        }
        st->crc = 0xffffffffu;
    }
    __u32 crc = st->crc;
    for (; p < end; p++)
        crc = st->table[(crc ^ *p) & 0xff] ^ (crc >> 8);
    st->crc = crc;
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;
    if ((__u8 *)ctx->out + 4 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *(__u32 *)ctx->out = ~crc;
    return 4;
}

/* Distinct words of a block, counted in an open-addressing table of word
 * hashes on the stack (64 slots, linear probing). */
SEC("cisc")
int words_distinct(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 slots[64];
    __u32 distinct = 0;

    for (int i = 0; i < 64; i++)
        slots[i] = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\t'))
            p++;
        if (p >= end)
            break;
        __u32 h = 2166136261u;
        while (p < end && *p != ' ' && *p != '\n' && *p != '\t')
            h = (h ^ *p++) * 16777619u;
        h |= 1;   /* 0 marks an empty slot */
        for (__u32 probe = 0; probe < 64; probe++) {
            __u32 s = (h + probe) & 63;
            if (slots[s] == h)
                break;
            if (slots[s] == 0) {
                slots[s] = h;
                distinct++;
                break;
            }
        }
        if (distinct == 64)
            return -CISC_E2BIG;
    }
    return distinct;
}

/* Moving average of the last 8 numbers (one per line), as 8-byte words. */
SEC("cisc")
int moving_avg8(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 *out = ctx->out;
    __u64 ring[8] = {0};
    __u64 sum = 0, v = 0;
    __u32 count = 0, nout = 0;
    __u64 room = (__u64)((__u8 *)ctx->out_end - (__u8 *)ctx->out) / 8;

    for (; p < end; p++) {
        __u8 c = *p;
        if (c >= '0' && c <= '9') {
            v = v * 10 + (c - '0');
            continue;
        }
        if (c != '\n')
            return -CISC_EBADMSG;
        __u32 slot = count % 8;
        sum += v - ring[slot];
        ring[slot] = v;
        count++;
        v = 0;
        if (nout >= room)
            return -CISC_ENOSPC;
        out[nout++] = sum / (count < 8 ? count : 8);
    }
    return nout * 8;
}

/* Drops a line equal to the line before it (uniq): lines found with
 * cisc_memchr, compared by their XXH64. */
SEC("cisc")
int uniq_lines(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u64 prev = 0, n = 0;
    int have_prev = 0;

    while (p < end) {
        long nl = cisc_memchr(p, end - p, '\n');
        __u32 len = nl < 0 ? end - p : nl + 1;
        __u64 h = cisc_xxh64(p, len, 0);
        if (!have_prev || h != prev) {
            if (oend - out - n < len)
                return -CISC_ENOSPC;
            cisc_copy(out + n, len, p, len);
            n += len;
        }
        prev = h;
        have_prev = 1;
        p += len;
    }
    return n;
}
