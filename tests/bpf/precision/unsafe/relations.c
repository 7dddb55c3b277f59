/* Near misses of the relational rules: each program is one byte (or one
 * element) off the safe program that a rule of the verifier accepts, so
 * the rule must not accept it. */
#include <cisc_bpf.h>

/* csv_quoted's check `p + i + 2 <= end` made one short: p[i + 1] is read
 * after checking only p + i + 1 (the link of the loop counter to the
 * pointer, kept through joins and constant first iterations, must not
 * prove the second byte). */
SEC("cisc")
int rel_quote_pair_short(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 pairs = 0;
    for (__u32 i = 0; i < 4096; i++) {
        if (p + i + 1 > end)
            break;
        if (p[i] == '"' && p + i + 1 <= end && p[i + 1] == '"') // REJECT
            pairs++;
    }
    return pairs;
}

/* hash_lines with the check of the 4-byte slot forgotten: `out + n >
 * oend` proves no element at out + n (the scaled index n << 2 is linked
 * to n, which must not make the slot itself proved). */
SEC("cisc")
int rel_scaled_short(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 *out = ctx->out, *oend = ctx->out_end;
    __u32 h = 5381;
    int n = 0;
    for (; p < end; p++) {
        if (*p != '\n') {
            h = h * 33 + *p;
            continue;
        }
        if (out + n > oend)
            return -CISC_ENOSPC;
        out[n++] = h; // REJECT
        h = 5381;
    }
    return n * 4;
}

/* An index checked in 32 bits and used in 64: `(__u32)i <= 100` holds
 * for i = 2^32 + 3 while p[i] is far past the end (the zero-extension of
 * a value that may not fit in 32 bits is not a no-op). */
SEC("cisc")
int rel_zext_not_fitting(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 i = ctx->arg[0];
    __u32 lo = i;
    if (i > 0x1000000ffull || lo > 100)
        return 0;
    if (p + lo + 1 > end)
        return 0;
    return p[i]; // REJECT
}

/* j is i on some paths and i + 1 on others: where they meet, j is linked
 * to i only if the join keeps the two offsets apart (a check of p + i
 * then proves nothing about p[j]). */
SEC("cisc")
int rel_join_offsets(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 sum = 0;
    for (__u32 i = 0; i < 4096; i++) {
        __u32 j = i;
        if (i >= 100 && p[0] == 1)
            j = i + 1;
        if (p + i + 1 > end)
            break;
        sum += p[j]; // REJECT
    }
    return sum;
}

/* tlv_extract's value loop running one byte too far (`i <= len`): the
 * check `v + len <= end` bounds len by the distance from v, which must
 * not let v[len] through. */
SEC("cisc")
int rel_value_past_len(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 sum = 0;
    while (p + 2 <= end) {
        __u8 len = p[1];
        const __u8 *v = p + 2;
        if (v + len > end)
            break;
        for (__u32 i = 0; i <= len; i++)
            sum += v[i]; // REJECT
        p = v + len;
    }
    return sum;
}

/* kw_bsearch (accepted at -O1 since joins keep a register set on one path
 * apart from the same register never set, and keep pointers that shared a
 * group in both states together when a third one pairs their groups
 * otherwise) with the word buffer filled one byte too far: w[8] is the
 * byte above the frame. */
#define NKW_ 8
#define KWLEN_ 8
static const char kw_[NKW_][KWLEN_] = {"break", "case", "do", "else", "for", "if", "return",
                                       "while"};

static __always_inline int cmp_word_(const char *w, int len, const char *k)
{
    for (int i = 0; i < KWLEN_; i++) {
        char a = i < len ? w[i] : 0;
        if (a != k[i])
            return (unsigned char)a - (unsigned char)k[i];
        if (!a)
            return 0;
    }
    return 0;
}

SEC("cisc")
int rel_word_one_past(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 hits = 0;
    while (p < end) {
        char w[KWLEN_] = {0};
        int len = 0;
        while (p < end && *p >= 'a' && *p <= 'z') {
            if (len <= KWLEN_)
                w[len] = *p; // REJECT
            len++;
            p++;
        }
        if (len > 0 && len < KWLEN_) {
            int lo = 0, hi = NKW_ - 1;
            while (lo <= hi) {
                int mid = (int)((unsigned)(lo + hi) >> 1);
                int c = cmp_word_(w, len, kw_[mid]);
                if (c == 0) {
                    hits++;
                    break;
                }
                if (c < 0)
                    hi = mid - 1;
                else
                    lo = mid + 1;
            }
        }
        if (p < end)
            p++;
    }
    return hits;
}

/* str_trim (an end pointer walking back is bounded below by its test
 * against the start pointer) with `e >= b`: when e == b, e[-1] is the
 * byte before b, which is the byte before the buffer for an all-blank
 * block. */
SEC("cisc")
int rel_trim_ge(struct cisc_ctx *ctx)
{
    const __u8 *b = ctx->data, *e = ctx->data_end;
    while (e >= b && e[-1] == ' ') // REJECT
        e--;
    return e - b;
}

/* str_trim looking two bytes back: e > b proves e[-1] only. */
SEC("cisc")
int rel_trim_two_back(struct cisc_ctx *ctx)
{
    const __u8 *b = ctx->data, *e = ctx->data_end;
    while (e > b && e[-2] == ' ') // REJECT
        e--;
    return e - b;
}

/* str_trim's copy with the length measured to one past the trimmed end:
 * n = e - b + 1 may reach past the input. */
SEC("cisc")
int rel_trim_copy_one_more(struct cisc_ctx *ctx)
{
    const __u8 *b = ctx->data, *e = ctx->data_end;
    while (e > b && e[-1] == ' ')
        e--;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    long n = e - b + 1;
    if (n > oend - out)
        return -CISC_ENOSPC;
    return cisc_copy(out, oend - out, b, n); // REJECT
}
