/*
 * grep.c - the lines of the input that contain a pattern (like grep -F).
 *
 * arg[0..3]: the pattern, 1 to 32 bytes without '\n', little-endian and
 * NUL-padded: `cisc run ... --arg 0=str:ERROR`. Output: every line that
 * contains it, with its '\n' (a last line without one is output without).
 * An empty pattern or one with '\n' fails with -EINVAL.
 *
 * Speed: the search tests 32 bytes per step for the pattern's rarest
 * byte (SWAR: four 8-byte words, a has-this-byte test on each), then
 * compares the pattern only at candidates, so a rare pattern costs about
 * one instruction per input byte. Lines are only located around matches
 * and at block edges.
 *
 * Blocks: any block size up to 64 KiB. A line that crosses into the
 * next block is kept in cisc_state() (up to CARRY_MAX bytes; a longer
 * crossing line fails the run with -E2BIG) and finished there, so the
 * output is the same for every block size.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 65536     /* blocks up to 64 KiB (bigger ones: -E2BIG) */
#define PAT_MAX   32
#define CARRY_MAX 3072
#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

struct grep_state {
    __u64 carry_len;        /* bytes of the unfinished line from earlier blocks */
    __u64 pat_len;
    __u64 anchor;           /* the pattern byte the fast search looks for */
    __u8 pat[PAT_MAX];
    __u8 carry[CARRY_MAX];
};

/* How common a byte is in text and logs (0 rare .. 9 everywhere): the
 * search looks for the pattern's rarest byte, so it stops less often. */
static const __u8 common[256] = {
    [' '] = 9, ['e'] = 8, ['t'] = 8, ['a'] = 8, ['o'] = 8, ['i'] = 8, ['n'] = 8,
    ['s'] = 8, ['r'] = 8, ['h'] = 7, ['l'] = 7, ['d'] = 6, ['c'] = 6, ['u'] = 6,
    ['m'] = 6, ['w'] = 5, ['f'] = 5, ['g'] = 5, ['y'] = 5, ['p'] = 5, ['b'] = 5,
    ['v'] = 3, ['k'] = 3, ['j'] = 1, ['x'] = 1, ['q'] = 1, ['z'] = 1,
    ['0'] = 5, ['1'] = 5, ['2'] = 5, ['3'] = 4, ['4'] = 4, ['5'] = 4, ['6'] = 4,
    ['7'] = 4, ['8'] = 4, ['9'] = 4, ['.'] = 4, [','] = 4, [':'] = 4, ['-'] = 4,
    ['/'] = 4, ['_'] = 3, ['='] = 3, ['"'] = 3, ['['] = 3, [']'] = 3, ['('] = 3,
    [')'] = 3, ['\t'] = 3, ['E'] = 3, ['T'] = 3, ['A'] = 3, ['I'] = 3, ['S'] = 3,
    ['O'] = 2, ['N'] = 2, ['R'] = 2, ['C'] = 2, ['D'] = 2, ['L'] = 2, ['M'] = 2,
    ['P'] = 2, ['H'] = 2, ['U'] = 2, ['F'] = 2, ['G'] = 2, ['B'] = 2, ['W'] = 2,
};

/* Takes the pattern from arg[0..3] (first block). */
static __always_inline int load_pattern(struct cisc_ctx *ctx, struct grep_state *st)
{
    __u64 m = PAT_MAX;
    __builtin_memcpy(st->pat, &ctx->arg[0], 8);
    __builtin_memcpy(st->pat + 8, &ctx->arg[1], 8);
    __builtin_memcpy(st->pat + 16, &ctx->arg[2], 8);
    __builtin_memcpy(st->pat + 24, &ctx->arg[3], 8);
    for (int j = 0; j < PAT_MAX; j++) {
        __u8 c = st->pat[j];
        if (c == '\n')
            return -CISC_EINVAL;
        if (c == 0 && m == PAT_MAX)
            m = j;
    }
    if (m == 0)
        return -CISC_EINVAL;
    st->pat_len = m;
    st->anchor = 0;
    for (int j = 1; j < PAT_MAX; j++)
        if (j < m && common[st->pat[j]] < common[st->pat[st->anchor & (PAT_MAX - 1)]])
            st->anchor = j;
    return 0;
}

/* Whether the pattern occurs at data[k]. */
static __always_inline int match_at(const __u8 *data, const __u8 *end, __u64 k,
                                    const struct grep_state *st)
{
    asm volatile("" : "+r"(k));   /* the bound below holds for the pointer math */
    if (k >= BLOCK_MAX)
        return 0;
    for (__u64 j = 0; j < PAT_MAX; j++) {
        if (j >= st->pat_len)
            return 1;
        const __u8 *p = data + k + j;
        if (p + 1 > end || *p != st->pat[j])
            return 0;
    }
    return 1;
}

/* Whether the pattern occurs at carry[k]. */
static __always_inline int match_carry(const struct grep_state *st, __u64 k)
{
    for (__u64 j = 0; j < PAT_MAX; j++) {
        if (j >= st->pat_len)
            return 1;
        __u64 x = k + j;
        if (x >= CARRY_MAX || st->carry[x] != st->pat[j])
            return 0;
    }
    return 1;
}

/* Index of the first '\n' in data[from, len), or len. */
static __always_inline __u64 nl_fwd(const __u8 *data, const __u8 *end, __u64 from, __u64 len)
{
    for (__u64 i = from; i < BLOCK_MAX; i++) {
        const __u8 *p = data + i;
        if (i >= len || p + 1 > end)
            return len;
        if (*p == '\n')
            return i;
    }
    return len;
}

/* Index of the last '\n' in data[from, len), or len when there is none. */
static __always_inline __u64 nl_back(const __u8 *data, const __u8 *end, __u64 from, __u64 len)
{
    __u64 i = len;
    if (i > BLOCK_MAX)
        return len;
    for (int n = 0; n < BLOCK_MAX; n++) {
        if (i <= from)
            return len;
        i--;
        __u64 j = i;
        asm volatile("" : "+r"(j));   /* keeps clang from folding the -1 into the load */
        const __u8 *p = data + j;
        if (p + 1 > end)
            return len;
        if (*p == '\n')
            return i;
    }
    return len;
}

#define OUT_MAX (2 * BLOCK_MAX)   /* the largest default output buffer of a block */

/* Appends byte c to the output at *olen. */
static __always_inline int put(struct cisc_ctx *ctx, __u64 *olen, __u8 c)
{
    __u64 o = *olen;
    asm volatile("" : "+r"(o));   /* index, check and store stay together */
    if (o >= OUT_MAX)
        return -CISC_ENOSPC;
    __u8 *q = (__u8 *)ctx->out + o;
    if (q + 1 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *q = c;
    *olen = o + 1;
    return 0;
}

/* Appends data[a, b) to the output at *olen: 64-byte pieces with the
 * cisc_copy helper (constant sizes the verifier can prove), then bytes. */
static __always_inline int emit(struct cisc_ctx *ctx, const __u8 *data, const __u8 *end,
                                __u64 a, __u64 b, __u64 *olen)
{
    __u64 i = a;
    for (int it = 0; it < BLOCK_MAX; it++) {
        if (i >= b)
            break;
        if (b - i >= 64) {
            __u64 o = *olen, j = i;
            asm volatile("" : "+r"(o), "+r"(j));   /* indices, checks and copy stay together */
            if (j > BLOCK_MAX || o > OUT_MAX)
                return -CISC_ENOSPC;
            const __u8 *p = data + j;
            __u8 *q = (__u8 *)ctx->out + o;
            if (p + 64 > end || q + 64 > (__u8 *)ctx->out_end)
                return -CISC_ENOSPC;
            cisc_copy(q, 64, p, 64);
            *olen = o + 64;
            i = j + 64;
            continue;
        }
        const __u8 *p = data + i;
        if (i > BLOCK_MAX || p + 1 > end)
            return -CISC_ENOSPC;
        int r = put(ctx, olen, *p);
        if (r)
            return r;
        i++;
    }
    return 0;
}

/* Index of the first byte at or after i that may start the pattern (a
 * SWAR test of eight bytes per step for its first byte; false positives
 * are possible, misses are not), or an index past the last full word. */
static __attribute__((noinline)) __u64 skip(const __u8 *data, const __u8 *end, __u64 i, __u64 rep)
{
    for (;;) {   /* 32 bytes per step while none is a candidate */
        if (i > BLOCK_MAX)
            return i;
        const __u8 *p = data + i;
        if (p + 32 > end)
            break;
        __u64 w = *(const __u64 *)p ^ rep, x = *(const __u64 *)(p + 8) ^ rep;
        __u64 y = *(const __u64 *)(p + 16) ^ rep, z = *(const __u64 *)(p + 24) ^ rep;
        if ((((w - ONES) & ~w) | ((x - ONES) & ~x) | ((y - ONES) & ~y) | ((z - ONES) & ~z)) &
            HIGHS)
            break;
        i += 32;
    }
    for (;;) {
        if (i > BLOCK_MAX)
            return i;
        const __u8 *p = data + i;
        if (p + 8 > end)
            return i;
        __u64 x = *(const __u64 *)p ^ rep;
        __u64 t = (x - ONES) & ~x & HIGHS;
        if (t) {
            while (!(t & 0x80)) {   /* the lowest flagged byte is a true candidate */
                t >>= 8;
                i++;
            }
            return i;
        }
        i += 8;
    }
}

/* Searches the complete lines in data[from, to] (to is a '\n') and emits
 * those with the pattern. */
static __always_inline int scan(struct cisc_ctx *ctx, struct grep_state *st, __u64 from,
                                __u64 to, __u64 *olen)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u64 a = st->anchor & (PAT_MAX - 1);
    __u64 rep = ONES * st->pat[a];
    __u64 i = from + a;
    while (i <= to) {
        __u64 c = skip(data, end, i, rep);   /* the anchor byte is at c */
        if (c > to)
            break;
        __u64 k = c - a;                     /* where the pattern would start */
        asm volatile("" : "+r"(k));          /* i >= from + a, so k >= from */
        if (k > BLOCK_MAX)
            break;
        if (!match_at(data, end, k, st)) {
            i = c + 1;
            continue;
        }
        __u64 ls = nl_back(data, end, from, k);      /* the line's '\n' before k */
        ls = ls == k ? from : ls + 1;
        __u64 le = nl_fwd(data, end, k, to + 1);     /* its own '\n' */
        int r = emit(ctx, data, end, ls, le + 1, olen);
        if (r)
            return r;
        i = le + 1;
    }
    return 0;
}

/* Adds data[0, n) to the carried line. */
static __always_inline int carry_add(struct grep_state *st, const __u8 *data, const __u8 *end,
                                     __u64 n)
{
    __u64 c = st->carry_len;
    if (c > CARRY_MAX)
        return -CISC_E2BIG;
    for (__u64 i = 0; i < BLOCK_MAX; i++) {
        if (i >= n)
            break;
        const __u8 *p = data + i;
        if (p + 1 > end)
            break;
        __u64 x = c;
        asm volatile("" : "+r"(x));   /* index, check and store stay together */
        if (x >= CARRY_MAX) {
            cisc_printk("grep: a line crossing blocks is longer than %d bytes", CARRY_MAX);
            return -CISC_E2BIG;
        }
        st->carry[x] = *p;
        c = x + 1;
    }
    st->carry_len = c;
    return 0;
}

/* Emits the carried line if it contains the pattern; empties it. */
static __always_inline int carry_finish(struct cisc_ctx *ctx, struct grep_state *st,
                                        int newline, __u64 *olen)
{
    __u64 n = st->carry_len, found = 0;
    if (n > CARRY_MAX)
        return -CISC_E2BIG;
    for (__u64 k = 0; k < CARRY_MAX; k++) {
        if (k >= n)
            break;
        if (k + st->pat_len <= n && match_carry(st, k)) {
            found = 1;
            break;
        }
    }
    st->carry_len = 0;
    if (!found)
        return 0;
    for (__u64 k = 0; k < CARRY_MAX; k++) {
        if (k >= n)
            break;
        int r = put(ctx, olen, st->carry[k]);
        if (r)
            return r;
    }
    return newline ? put(ctx, olen, '\n') : 0;
}

SEC("cisc")
int grep(struct cisc_ctx *ctx)
{
    struct grep_state *st = cisc_state();
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u64 len = ctx->len, olen = 0, start = 0;
    int last = (ctx->flags & CISC_F_LAST_BLOCK) != 0, r;

    if (len > BLOCK_MAX)
        return -CISC_E2BIG;
    if ((ctx->flags & CISC_F_FIRST_BLOCK) && (r = load_pattern(ctx, st)))
        return r;
    if (st->carry_len) {   /* finish the line an earlier block began */
        __u64 nl = nl_fwd(data, end, 0, len);
        if ((r = carry_add(st, data, end, nl)))
            return r;
        if (nl == len && !last)
            return 0;      /* still no end of line */
        if ((r = carry_finish(ctx, st, nl < len, &olen)))
            return r;
        start = nl + 1;
    }
    if (start >= len)
        return olen;
    __u64 last_nl = nl_back(data, end, start, len);
    if (last_nl < len && (r = scan(ctx, st, start, last_nl, &olen)))
        return r;
    __u64 rest = last_nl < len ? last_nl + 1 : start;   /* the unfinished line */
    if (rest < len) {
        if (rest >= BLOCK_MAX)
            return -CISC_E2BIG;
        if ((r = carry_add(st, data + rest, end, len - rest)))
            return r;
        if (last && (r = carry_finish(ctx, st, 0, &olen)))
            return r;
    }
    return olen;
}
