/*
 * grep: the lines of the input that contain a pattern (like grep -F).
 *
 * arg[0], arg[1]: the pattern, up to 16 bytes, little-endian, NUL-padded
 * (`cisc bpf run grep.o --arg 0=str:ERROR ...`). An empty pattern matches
 * every line. Output: each matching line with its '\n' (a last line
 * without one is output without one).
 *
 * Matching is shift-and: one table lookup per byte, no inner loop. Every
 * byte is copied to the output as it is read; at a newline the line is
 * kept or dropped by moving the output length back. A line may span
 * blocks: its unfinished part is carried in cisc_state() and replayed at
 * the start of the next block's output, so the output of the whole run is
 * the same for every block size. Lines longer than CARRY_MAX bytes fail
 * the run with -E2BIG.
 *
 * Written for the verifier: the per-byte loop carries only values whose
 * exact value never decides a branch or an address (the shift-and state,
 * the match flag, computed without branches); the output cursors and the
 * values derived from the pattern live in cisc_state() (volatile, so the
 * compiler keeps them there), whose contents the verifier does not track;
 * each use is bounds-checked. So each iteration is one abstract state,
 * whatever the pattern length.
 */
#include <cisc_bpf.h>

#define PAT_MAX   16
#define CARRY_MAX 2048
#define BLOCK_MAX 4096
#define OUT_MAX   (CARRY_MAX + BLOCK_MAX)

struct grep_state {
    __u32 mask[256];           /* bit j set in mask[c] iff pattern[j] == c */
    volatile __u32 accept;     /* bit m-1: the whole pattern matched (0 if empty) */
    volatile __u32 shift;      /* m-1: moves the accept bit to bit 0 */
    volatile __u32 empty;      /* the pattern is empty: every line matches */
    __u32 d;                   /* shift-and state of the current line */
    __u32 matched;             /* the current line contains the pattern */
    __u32 carry_len;           /* bytes of the current line from earlier blocks */
    volatile __u32 olen;       /* output bytes of this block so far */
    volatile __u32 line_out;   /* output offset where the current line starts */
    volatile __u32 line_in;    /* input offset after the last newline, 0 if none */
    __u8 carry[CARRY_MAX];
};

/* Length of the pattern held in arg[0..1] (first NUL byte). */
static __always_inline __u32 pattern(struct cisc_ctx *ctx, __u8 pat[PAT_MAX])
{
    __u32 m = PAT_MAX;
    __builtin_memcpy(pat, &ctx->arg[0], 8);
    __builtin_memcpy(pat + 8, &ctx->arg[1], 8);
    for (int j = PAT_MAX - 1; j >= 0; j--)
        if (pat[j] == 0)
            m = j;
    return m;
}

static __always_inline void build_mask(struct grep_state *st, const __u8 *pat, __u32 m)
{
    for (int j = 0; j < PAT_MAX; j++)
        if (j < m)
            st->mask[pat[j]] |= 1u << j;
}

/* Appends byte c to the output; 0 or -ENOSPC. */
static __always_inline int emit(struct cisc_ctx *ctx, struct grep_state *st, __u8 c)
{
    __u32 n = st->olen;
    if (n >= OUT_MAX)
        return -CISC_ENOSPC;
    __u8 *q = (__u8 *)ctx->out + n;
    if (q + 1 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *q = c;
    st->olen = n + 1;
    return 0;
}

/* Keeps the unfinished line, input[line_in, len), after the carried part
 * (or alone when the line started in this block). */
static __always_inline int save_carry(struct cisc_ctx *ctx, struct grep_state *st)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 from = st->line_in;
    __u32 n = from ? 0 : st->carry_len;
    for (__u32 i = from; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        if (n >= CARRY_MAX) {
            cisc_printk("grep: line longer than %d bytes\n", CARRY_MAX);
            return -CISC_E2BIG;
        }
        st->carry[n] = data[i];
        n++;
    }
    st->carry_len = n;
    return 0;
}

SEC("cisc")
int grep(struct cisc_ctx *ctx)
{
    struct grep_state *st = cisc_state();
    const __u8 *data = ctx->data, *end = ctx->data_end;
    int rc;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;            /* blocks larger than the loops cover */
    if (ctx->flags & CISC_F_FIRST_BLOCK) {
        __u8 pat[PAT_MAX];
        __u32 m = pattern(ctx, pat);
        build_mask(st, pat, m);
        st->accept = m ? 1u << (m - 1) : 0;
        st->shift = m ? m - 1 : 0;
        st->empty = m == 0;
        st->matched = m == 0;
    }
    __u32 accept = st->accept, shift = st->shift & 31, empty = st->empty & 1;
    st->olen = 0;
    st->line_out = 0;
    st->line_in = 0;
    for (__u32 i = 0; i < CARRY_MAX; i++) {
        if (i >= st->carry_len)
            break;
        if ((rc = emit(ctx, st, st->carry[i])))
            return rc;
    }
    __u32 d = st->d, matched = st->matched;
    for (__u32 i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        __u8 c = data[i];
        if ((rc = emit(ctx, st, c)))
            return rc;
        if (c == '\n') {
            __u32 start = st->line_out, len = st->olen;
            len = start + (len - start) * matched;    /* drop an unmatched line */
            st->olen = len;
            st->line_out = len;
            st->line_in = i + 1;
            d = 0;
            matched = empty;
            continue;
        }
        d = ((d << 1) | 1) & st->mask[c];
        matched |= (d & accept) >> shift;
    }
    st->d = d;
    st->matched = matched;
    if (ctx->flags & CISC_F_LAST_BLOCK)
        return matched ? st->olen : st->line_out;
    if ((rc = save_carry(ctx, st)))
        return rc;
    return st->line_out;
}
