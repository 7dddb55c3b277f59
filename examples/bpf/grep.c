/*
 * grep.c - the lines of the input that contain a pattern (like grep -F).
 *
 * arg[0..3]: the pattern, 1 to 32 bytes without '\n', little-endian and
 * NUL-padded: `cisc run ... --arg 0=str:ERROR`. Output: every line that
 * contains it, with its '\n' (a last line without one is output without).
 * An empty pattern or one with '\n' fails with -EINVAL.
 *
 * Speed: the device's search helpers do the scanning natively, so the
 * program runs a few dozen instructions per matching line and none per
 * byte: cisc_input_find finds the next match, cisc_input_rchr and
 * cisc_input_find the '\n' before and after it, and the line is copied
 * out with cisc_copy (adjacent matching lines in one go).
 *
 * Blocks: any block size. A line that crosses into the next block is
 * kept in cisc_state() (up to CARRY_MAX bytes; a longer crossing line
 * fails the run with -E2BIG) and finished there, so the output is the
 * same for every block size. A block's output buffer must hold its
 * matching lines plus a carried line (cisc run --block-out).
 */
#include <cisc_bpf.h>

#define PAT_MAX   32
#define CARRY_MAX 4000
#define IDX_MAX   (1 << 28)   /* helper indexes stay below this (VM_MAX_BUF_SIZE) */

struct grep_state {
    __u64 carry_len;          /* bytes of the unfinished line from earlier blocks */
    __u64 pat_len;
    __u8 pat[PAT_MAX];
    __u8 carry[CARRY_MAX];
};

_Static_assert(sizeof(struct grep_state) <= CISC_STATE_SIZE, "state fits cisc_state()");

static const __u8 newline = '\n';

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
    return 0;
}

/* The pattern's length, proved to be 1..PAT_MAX. */
static __always_inline __u64 pat_len(const struct grep_state *st)
{
    __u64 m = st->pat_len;
    asm volatile("" : "+r"(m));   /* the checks below apply to this value */
    return m >= 1 && m <= PAT_MAX ? m : 0;
}

/* Piece copies in functions of their own, so that clang cannot merge the
 * calls into one with a size the verifier cannot bound. Each returns its
 * size. */
#define COPY_PIECE(N)                                                          \
    static __attribute__((noinline)) __u64 copy_##N(__u8 *q, const __u8 *p)    \
    {                                                                          \
        return cisc_copy(q, N, p, N);                                          \
    }
COPY_PIECE(4096)
COPY_PIECE(512)
COPY_PIECE(32)
COPY_PIECE(8)
COPY_PIECE(2)

/* Copies input[a, b) to the output at *olen: 4096-, 512- and 64-byte pieces
 * with cisc_copy (a last 64-byte piece may copy past b: the bytes after the
 * output's length do not count); near the end of the input or output,
 * exact pieces of 32, 8, 2 and 1 bytes. */
static __attribute__((noinline)) int emit(struct cisc_ctx *ctx, __u64 a, __u64 b, __u64 *olen)
{
    const __u8 *end = ctx->data_end;
    __u8 *out_end = ctx->out_end;
    __u64 o = *olen;
    while (a < b) {
        __u64 n = b - a, i = a, j = o;
        asm volatile("" : "+r"(i), "+r"(j));   /* bound, pointer and check stay together */
        if (i > IDX_MAX || j > IDX_MAX)
            return -CISC_ENOSPC;
        const __u8 *p = (const __u8 *)ctx->data + i;
        __u8 *q = (__u8 *)ctx->out + j;
        if (n >= 4096 && p + 4096 <= end && q + 4096 <= out_end) {
            n = copy_4096(q, p);
        } else if (n >= 512 && p + 512 <= end && q + 512 <= out_end) {
            n = copy_512(q, p);
        } else if (p + 64 <= end && q + 64 <= out_end) {
            cisc_copy(q, 64, p, 64);
            n = n < 64 ? n : 64;
        } else if (n >= 32 && p + 32 <= end && q + 32 <= out_end) {
            n = copy_32(q, p);
        } else if (n >= 8 && p + 8 <= end && q + 8 <= out_end) {
            n = copy_8(q, p);
        } else if (n >= 2 && p + 2 <= end && q + 2 <= out_end) {
            n = copy_2(q, p);
        } else {
            if (p + 1 > end || q + 1 > out_end)
                return -CISC_ENOSPC;
            *q = *p;
            n = 1;
        }
        a = i + n;
        o = j + n;
    }
    *olen = o;
    return 0;
}

/* Appends byte c to the output at *olen. */
static __always_inline int put(struct cisc_ctx *ctx, __u64 *olen, __u8 c)
{
    __u64 o = *olen;
    asm volatile("" : "+r"(o));
    if (o > IDX_MAX)
        return -CISC_ENOSPC;
    __u8 *q = (__u8 *)ctx->out + o;
    if (q + 1 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *q = c;
    *olen = o + 1;
    return 0;
}

/* Adds input[a, b) to the carried line. */
static __attribute__((noinline)) int carry_add(struct cisc_ctx *ctx, struct grep_state *st,
                                               __u64 a, __u64 b)
{
    const __u8 *end = ctx->data_end;
    __u64 c = st->carry_len;
    while (a < b) {
        __u64 n = b - a, i = a, k = c;
        asm volatile("" : "+r"(i), "+r"(k));
        if (k >= CARRY_MAX) {
            cisc_printk("grep: a line crossing blocks is longer than %d bytes", CARRY_MAX);
            return -CISC_E2BIG;
        }
        if (i > IDX_MAX)
            return -CISC_E2BIG;
        const __u8 *p = (const __u8 *)ctx->data + i;
        if (k <= CARRY_MAX - 64 && p + 64 <= end) {
            cisc_copy(st->carry + k, 64, p, 64);
            n = n < 64 ? n : 64;
        } else if (n >= 32 && k <= CARRY_MAX - 32 && p + 32 <= end) {
            n = copy_32(st->carry + k, p);   /* the end of the input: exact pieces */
        } else if (n >= 8 && k <= CARRY_MAX - 8 && p + 8 <= end) {
            n = copy_8(st->carry + k, p);
        } else if (n >= 2 && k <= CARRY_MAX - 2 && p + 2 <= end) {
            n = copy_2(st->carry + k, p);
        } else {
            if (p + 1 > end)
                return -CISC_EINVAL;
            st->carry[k] = *p;
            n = 1;
        }
        a = i + n;
        c = k + n;
    }
    st->carry_len = c;
    return 0;
}

/* Emits the carried line (with a '\n' if newline) if it contains the
 * pattern; empties it. */
static __attribute__((noinline)) int carry_finish(struct cisc_ctx *ctx, struct grep_state *st,
                                                  int newline_after, __u64 *olen)
{
    __u64 n = st->carry_len, m = pat_len(st), o = *olen;
    st->carry_len = 0;
    if (n > CARRY_MAX || m == 0)
        return -CISC_EINVAL;
    if (cisc_memmem(st->carry, n, st->pat, m) < 0)
        return 0;
    asm volatile("" : "+r"(o));
    if (o > IDX_MAX)
        return -CISC_ENOSPC;
    __u8 *q = (__u8 *)ctx->out + o;
    if (q + CARRY_MAX <= (__u8 *)ctx->out_end) {
        cisc_copy(q, n, st->carry, n);
        *olen = o + n;
    } else {               /* near the end of the output buffer: byte by byte */
        for (__u64 k = 0; k < CARRY_MAX && k < n; k++) {
            int r = put(ctx, olen, st->carry[k]);
            if (r)
                return r;
        }
    }
    return newline_after ? put(ctx, olen, '\n') : 0;
}

/* Emits the lines of input[from, to) (whole lines: to - 1 is a '\n') that
 * contain the pattern; runs of adjacent matching lines are copied as one. */
static __attribute__((noinline)) int scan(struct cisc_ctx *ctx, struct grep_state *st,
                                          __u64 from, __u64 to, __u64 *olen)
{
    __u64 m = pat_len(st), i = from, run_a = from, run_b = from;
    int r;
    if (m == 0)
        return -CISC_EINVAL;
    for (;;) {
        long k = cisc_input_find(ctx, i, to, st->pat, m);   /* the next match */
        if (k < 0)
            break;
        long s = cisc_input_rchr(ctx, i, k, '\n');           /* its line's start - 1 */
        long e = cisc_input_find(ctx, k + m, to, &newline, 1);
        __u64 ls = s < 0 ? i : (__u64)s + 1, le = e < 0 ? to : (__u64)e + 1;
        if (ls != run_b) {
            if ((r = emit(ctx, run_a, run_b, olen)))
                return r;
            run_a = ls;
        }
        run_b = le;
        i = le;
    }
    return emit(ctx, run_a, run_b, olen);
}

SEC("cisc")
int grep(struct cisc_ctx *ctx)
{
    struct grep_state *st = cisc_state();
    __u64 len = ctx->len, olen = 0, start = 0;
    int last = (ctx->flags & CISC_F_LAST_BLOCK) != 0, r;

    if ((ctx->flags & CISC_F_FIRST_BLOCK) && (r = load_pattern(ctx, st)))
        return r;
    if (st->carry_len) {   /* finish the line an earlier block began */
        long nl = cisc_input_find(ctx, 0, len, &newline, 1);
        if ((r = carry_add(ctx, st, 0, nl < 0 ? len : (__u64)nl)))
            return r;
        if (nl < 0 && !last)
            return 0;      /* still no end of line */
        if ((r = carry_finish(ctx, st, nl >= 0, &olen)))
            return r;
        start = nl < 0 ? len : (__u64)nl + 1;
    }
    if (start >= len)
        return olen;
    long ln = cisc_input_rchr(ctx, start, len, '\n');   /* the last complete line's end */
    __u64 rest = ln < 0 ? start : (__u64)ln + 1;
    if (ln >= 0 && (r = scan(ctx, st, start, rest, &olen)))
        return r;
    if (rest < len) {      /* an unfinished line: carry it */
        if ((r = carry_add(ctx, st, rest, len)))
            return r;
        if (last && (r = carry_finish(ctx, st, 0, &olen)))
            return r;
    }
    return olen;
}
