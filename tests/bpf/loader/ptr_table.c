/* Tables of pointers in read-only data (R_BPF_64_ABS64 relocations in
 * .rel.rodata): the loader relocates the entries, the verifier types a
 * loaded entry as a pointer into the string (or object) it points to. */
#include <cisc_bpf.h>

/* The HTTP method the input starts with, by the length of its first word:
 * the length, or -EINVAL (safe/keywords.c's kw_http_method). */
static const char *const methods[8] = {0, 0, 0, "GET", "POST", 0, "DELETE", "OPTIONS"};

SEC("cisc")
int http_method(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    long sp = cisc_memchr(p, end - p > 16 ? 16 : end - p, ' ');
    if (sp < 0 || sp >= 8)
        return -CISC_EINVAL;
    const char *m = methods[sp];
    if (!m)
        return -CISC_EINVAL;
    for (int i = 0; i < sp; i++)
        if (p[i] != m[i])
            return -CISC_EINVAL;
    return sp;
}

/* A table of tables: the entries point into the tables, whose entries
 * point into strings; copies the string row[arg0 & 1][arg1 & 1] (with
 * its NUL) to the output and returns its length. */
static const char *const odd[2] = {"one", "three"};
static const char *const even[2] = {"two", "four"};
static const char *const *const rows[2] = {even, odd};

SEC("cisc")
int row_name(struct cisc_ctx *ctx)
{
    char *out = ctx->out, *oend = ctx->out_end;
    const char *s = rows[ctx->arg[0] & 1][ctx->arg[1] & 1];
    if (oend - out < 6)
        return -CISC_ENOSPC;
    int n = 0;
    for (; n < 5; n++) {
        out[n] = s[n];
        if (!s[n])
            return n;
    }
    return n;
}
