/* Near misses of the second round's rules (entries read from read-only
 * tables, narrow stores kept in the stack, distances known exactly): each
 * program is one entry, byte or element off a safe program of the corpus,
 * so the rule must not accept it. */
#include <cisc_bpf.h>

/* json_literals with one length in the table too long for its word's
 * check: the range of lens[] (here [4, 6]) bounds k, and the check
 * `end - p < 5` proves only 5 bytes. */
SEC("cisc")
int tab_len_too_long(struct cisc_ctx *ctx)
{
    static const char words[3][7] = {"true", "false", "nulls"};
    static const __u8 lens[3] = {4, 5, 6};
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;
    for (; p < end; p++) {
        for (int w = 0; w < 3; w++) {
            __u8 len = lens[w];
            if (end - p < 5)
                continue;
            int k = 0;
            while (k < len && p[k] == words[w][k]) // REJECT
                k++;
            n += k == len;
        }
    }
    return n;
}

/* json_literals with the distance checked one short: `end - p < len - 1`
 * leaves p[len - 1] unproved, whatever end - p is known to be exactly. */
SEC("cisc")
int tab_dist_one_short(struct cisc_ctx *ctx)
{
    static const char words[3][6] = {"true", "false", "null"};
    static const __u8 lens[3] = {4, 5, 4};
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;
    for (; p < end; p++) {
        for (int w = 0; w < 3; w++) {
            __u8 len = lens[w];
            if (end - p < len - 1)
                continue;
            int k = 0;
            while (k < len && p[k] == words[w][k]) // REJECT
                k++;
            n += k == len;
        }
    }
    return n;
}

/* Counts digits; 0..20 of them. */
static __attribute__((noinline)) void count_digits(const __u8 *p, const __u8 *end, __u32 *used)
{
    __u32 n = 0;
    while (p + n < end && n < 20 && p[n] >= '0' && p[n] <= '9')
        n++;
    *used = n;
}

/* The count a function stored through a pointer into the caller's stack
 * (a narrow store, kept) indexes the 20 bytes checked: 20 digits are one
 * too many. */
SEC("cisc")
int tab_used_one_past(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 used = 0;
    if (end - p < 20)
        return 0;
    count_digits(p, end, &used);
    return p[used]; // REJECT
}

/* kw_bsearch's scan with the test before the byte after the word
 * forgotten: the word's length is bounded by the distance to the end
 * (also after joins widened it), so p + len may be the end itself. */
SEC("cisc")
int tab_word_end_unchecked(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 hits = 0;
    while (p < end) {
        int len = 0;
        while (p < end && *p >= 'a' && *p <= 'z') {
            len++;
            p++;
        }
        hits += len > 3;
        hits += *p == ' '; // REJECT
        p++;
    }
    return hits;
}

/* sub_sum_numbers' parser with its check one short: `p + n <= end` lets
 * p[n] be the end itself (the counter n and the pointer p + n, both moving
 * in the loop, stay linked through the joins: the link must not prove the
 * byte at the end). */
static __attribute__((noinline)) __u64 parse_short(const __u8 *p, const __u8 *end, __u32 *used)
{
    __u64 v = 0;
    __u32 n = 0;
    while (p + n <= end && n < 20 && p[n] >= '0' && p[n] <= '9') { // REJECT: tab_sum_short
        v = v * 10 + (p[n] - '0');
        n++;
    }
    *used = n;
    return v;
}

SEC("cisc")
int tab_sum_short(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;
    while (p < end) {
        __u32 used = 0;
        sum += parse_short(p, end, &used);
        p += used ? used : 1;
    }
    return sum & 0x7fffffff;
}

/* str_expand_tabs with the inner test one short: `oend - out < n` lets n
 * be the distance itself (the sum n + k of two counters, tested before
 * the write through (out + n) + k, must not prove the byte at the end). */
SEC("cisc")
int tab_expand_short(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u32 w = ctx->arg[0] > 8 ? 8 : ctx->arg[0];
    long n = 0;
    for (; p < end; p++) {
        if (*p != '\t') {
            if (oend - out <= n)
                return -CISC_ENOSPC;
            out[n++] = *p;
            continue;
        }
        for (__u32 k = 0; k < w; k++) {
            if (oend - out < n)
                return -CISC_ENOSPC;
            out[n++] = ' '; // REJECT
        }
    }
    return n;
}

/* json_literals' row walk (clang -O1: a pointer advanced by the row size
 * beside w) with a length one longer than a row: k reaches words[2][6],
 * the byte after the table (the row link bounds the row pointer by w's
 * range, not by more). */
SEC("cisc")
int tab_row_past_the_table(struct cisc_ctx *ctx)
{
    static const char words[3][6] = {"true", "false", "null"};
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;
    for (; p < end; p++) {
        for (int w = 0; w < 3; w++) {
            __u8 len = (__u8)(ctx->arg[0] & 7);
            if (end - p < len)
                continue;
            int k = 0;
            while (k < len && p[k] == words[w][k]) // REJECT
                k++;
            n += k == len;
        }
    }
    return n;
}
