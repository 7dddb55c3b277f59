/*
 * csv.c - projects columns of CSV text: keeps the columns whose bit is set
 * in arg[0] (bit k = column k, counting from 0; up to 64 columns) and
 * writes them joined by the separator, one row per line.
 *
 * arg[1]: the separator byte (0 = ','). Fields may be double-quoted; a
 * separator or newline inside quotes belongs to the field, and the quotes
 * are copied as they are. Rows end with '\n' ("\r\n" keeps its '\r' in
 * the last field). Fields stream straight to the output, so rows and
 * fields may cross block boundaries freely: the column, the quote state
 * and whether the row has output a field yet live in cisc_state(). Blocks
 * up to 64 KiB; the output of a block is never longer than its input.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 65536

struct csv_state {
    __u64 col;          /* column of the current field */
    __u64 quoted;       /* inside double quotes */
    __u64 started;      /* the current row has output a field */
    __u64 pending_sep;  /* a kept field ended: a separator goes before the next kept one */
};

/* Appends c at out[*o]. */
static __always_inline int put(struct cisc_ctx *ctx, __u64 *o, __u8 c)
{
    __u64 i = *o;
    asm volatile("" : "+r"(i));   /* index, check and store stay together */
    if (i >= BLOCK_MAX)
        return -CISC_ENOSPC;
    __u8 *q = (__u8 *)ctx->out + i;
    if (q + 1 > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    *q = c;
    *o = i + 1;
    return 0;
}

SEC("cisc")
int csv(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct csv_state *st = cisc_state();
    __u64 keep = ctx->arg[0], o = 0;
    __u8 sep = ctx->arg[1] ? (__u8)ctx->arg[1] : ',';
    __u64 col = st->col, quoted = st->quoted, started = st->started, pend = st->pending_sep;
    int r = 0;

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    for (__u64 i = 0; i < BLOCK_MAX; i++) {
        const __u8 *p = data + i;
        if (p + 1 > end)
            break;
        __u8 c = *p;
        int kept = col < 64 && ((keep >> col) & 1);
        if (c == '"')
            quoted = !quoted;
        if (!quoted && c == '\n') {          /* end of row */
            r = put(ctx, &o, '\n');
            col = 0;
            started = pend = 0;
        } else if (!quoted && c == sep) {    /* end of field */
            pend |= kept;
            col++;
        } else if (kept) {                   /* a byte of a kept field */
            if (pend && started)
                r = put(ctx, &o, sep);
            pend = 0;
            started = 1;
            if (!r)
                r = put(ctx, &o, c);
        }
        if (r)
            return r;
    }
    st->col = col;
    st->quoted = quoted;
    st->started = started;
    st->pending_sep = pend;
    return (int)o;
}
