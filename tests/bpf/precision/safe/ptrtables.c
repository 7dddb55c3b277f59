/* Tables of pointers in read-only data: strings by index, walked to
 * their NUL; a table of records holding pointers. */
#include <cisc_bpf.h>

static const char *const levels[] = {"debug", "info", "warn", "error", "fatal"};

/* Writes the name of log level arg[0] (0..4), without its NUL, and
 * returns its length. */
SEC("cisc")
int ptab_level_name(struct cisc_ctx *ctx)
{
    __u8 *out = ctx->out, *oend = ctx->out_end;
    __u64 k = ctx->arg[0];
    if (k >= sizeof(levels) / sizeof(levels[0]))
        return -CISC_EINVAL;
    const char *s = levels[k];
    if (oend - out < 8)
        return -CISC_ENOSPC;
    int n = 0;
    while (n < 8 && s[n]) {
        out[n] = s[n];
        n++;
    }
    return n;
}

struct unit {
    const char *name;
    __u32 scale;
};

static const struct unit units[] = {{"k", 1000}, {"M", 1000000}, {"G", 1000000000}};

/* The input's first byte names a unit: its scale times arg[0], or 0. */
SEC("cisc")
int ptab_unit_scale(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    if (p >= end)
        return 0;
    for (int u = 0; u < 3; u++)
        if (units[u].name[0] == p[0])
            return (int)(units[u].scale * (ctx->arg[0] & 0xff));
    return 0;
}
