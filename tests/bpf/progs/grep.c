/*
 * grep: the lines of the input that contain a pattern (like grep -F).
 *
 * arg[0], arg[1]: the pattern, up to 16 bytes, little-endian, NUL-padded
 * (`cisc bpf run grep.o --arg 0=str:ERROR ...`). An empty pattern matches
 * every line. Output: each matching line with its '\n' (a last line
 * without one is output without one).
 *
 * Matching is shift-and (one table lookup per byte, no inner loop). A line
 * may span blocks: its unfinished part is carried in cisc_state() and
 * replayed at the start of the next block's output, so the output of the
 * whole run is the same for every block size. Lines longer than CARRY_MAX
 * bytes fail the run with -E2BIG.
 */
#include <cisc_bpf.h>

#define PAT_MAX   16
#define CARRY_MAX 2048
#define BLOCK_MAX 4096
#define OUT_MAX   (CARRY_MAX + BLOCK_MAX)

struct grep_state {
    __u32 mask[256];        /* bit j set in mask[c] iff pattern[j] == c */
    __u32 d;                /* shift-and state of the current line */
    __u32 matched;          /* the current line contains the pattern */
    __u32 carry_len;        /* bytes of the current line seen in earlier blocks */
    __u32 pad;
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

/* Appends byte c to the output at *olen; 0 or -ENOSPC. */
static __always_inline int emit(struct cisc_ctx *ctx, __u32 *olen, __u8 c)
{
    __u32 n = *olen;
    if (n >= OUT_MAX)
        return -CISC_ENOSPC;
    __u8 *q = (__u8 *)ctx->out + n;
    if (q + 1 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *q = c;
    *olen = n + 1;
    return 0;
}

/* Saves input[from, len) after the carried part (or alone when the line
 * started in this block). */
static __always_inline int save_carry(struct cisc_ctx *ctx, struct grep_state *st,
                                      __u32 from, int cont)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 n = cont ? st->carry_len : 0;
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
    __u8 pat[PAT_MAX];
    __u32 m = pattern(ctx, pat);
    __u32 accept = m ? 1u << (m - 1) : 0;
    const __u8 *data = ctx->data, *end = ctx->data_end;
    __u32 olen = 0, line_out = 0, line_in = 0;
    int cont = 1, rc;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;            /* blocks larger than the loops cover */
    if (ctx->flags & CISC_F_FIRST_BLOCK) {
        build_mask(st, pat, m);
        st->matched = m == 0;
    }
    for (__u32 i = 0; i < CARRY_MAX; i++) {
        if (i >= st->carry_len)
            break;
        if ((rc = emit(ctx, &olen, st->carry[i])))
            return rc;
    }
    __u32 d = st->d, matched = st->matched;
    for (__u32 i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        __u8 c = data[i];
        if ((rc = emit(ctx, &olen, c)))
            return rc;
        if (c == '\n') {
            if (!matched)
                olen = line_out;        /* drop the line */
            line_out = olen;
            line_in = i + 1;
            cont = 0;
            d = 0;
            matched = m == 0;
            continue;
        }
        d = ((d << 1) | 1) & st->mask[c];
        if (d & accept)
            matched = 1;
    }
    st->d = d;
    st->matched = matched;
    if (ctx->flags & CISC_F_LAST_BLOCK)
        return matched ? olen : line_out;
    if ((rc = save_carry(ctx, st, line_in, cont)))
        return rc;
    return line_out;
}
