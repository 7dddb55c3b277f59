/* Near misses of tables of pointers in read-only data (kw_http_method in
 * safe/keywords.c): the loader relocates the entries, a whole entry loaded
 * is a pointer into the string it names (its bytes and its NUL), and
 * nothing else may see the entry's bits. Each table has a section of its
 * own, so that what follows it in the program's read-only data is a
 * string, never another table's entry. */
#include <cisc_bpf.h>

#define TABLE(n) __attribute__((section(".rodata.ptab" #n)))

static const char *const methods1[8] TABLE(1) = {0, 0, 0, "GET", "POST", 0, "DELETE",
                                                 "OPTIONS"};

/* The length checked one too far: sp = 8 reads the bytes after the table,
 * which are no entry: a number, not a pointer. */
SEC("cisc")
int ptab_one_past(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    long sp = cisc_memchr(p, end - p > 16 ? 16 : end - p, ' ');
    if (sp < 0 || sp > 8)
        return -CISC_EINVAL;
    const char *m = methods1[sp];
    if (!m)
        return -CISC_EINVAL;
    for (int i = 0; i < sp; i++)
        if (p[i] != m[i]) // REJECT
            return -CISC_EINVAL;
    return sp;
}

static const char *const methods2[8] TABLE(2) = {0, 0, 0, "GET", "POST", 0, "DELETE",
                                                 "OPTIONS"};

/* Compares 7 bytes whatever the method: "GET" has 4 (with its NUL). */
SEC("cisc")
int ptab_past_nul(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    if (end - p < 8)
        return 0;
    long sp = cisc_memchr(p, 8, ' ');
    if (sp < 0 || sp >= 8)
        return -CISC_EINVAL;
    const char *m = methods2[sp];
    if (!m)
        return -CISC_EINVAL;
    int same = 0;
    for (int i = 0; i < 7; i++)
        same += p[i] == m[i]; // REJECT
    return same;
}

static const char *const names3[4] TABLE(3) = {"alpha", "beta", "gamma", "delta"};

/* Writes through an entry: the string is read-only. */
SEC("cisc")
int ptab_write(struct cisc_ctx *ctx)
{
    char *m = (char *)names3[ctx->arg[0] & 3];
    m[0] = 'A'; // REJECT
    return 0;
}

static const char *const names4[4] TABLE(4) = {"alpha", "beta", "gamma", "delta"};

/* Stores the pointer itself into the output: a host address. */
SEC("cisc")
int ptab_leak_store(struct cisc_ctx *ctx)
{
    __u8 *out = ctx->out, *oend = ctx->out_end;
    if (oend - out < 8)
        return 0;
    const char *m = names4[ctx->arg[0] & 3];
    *(const char **)out = m; // REJECT
    return 8;
}

static const char *const names5[4] TABLE(5) = {"alpha", "beta", "gamma", "delta"};

/* Copies the bytes of an entry, one at a time, into the output. */
SEC("cisc")
int ptab_leak_bytes(struct cisc_ctx *ctx)
{
    const volatile __u8 *t = (const volatile __u8 *)names5;
    __u8 *out = ctx->out, *oend = ctx->out_end;
    if (oend - out < 8)
        return 0;
    for (int k = 0; k < 8; k++)
        out[k] = t[8 + k]; // REJECT
    return 8;
}

static const char *const names6[4] TABLE(6) = {"alpha", "beta", "gamma", "delta"};

/* Has a helper copy the table into the output. */
SEC("cisc")
int ptab_leak_copy(struct cisc_ctx *ctx)
{
    __u8 *out = ctx->out, *oend = ctx->out_end;
    if (oend - out < 32)
        return 0;
    cisc_copy(out, 32, names6, 32); // REJECT
    return 32;
}

static const char *const names7[4] TABLE(7) = {"alpha", "beta", "gamma", "delta"};

/* Returns the pointer as the program's result. */
SEC("cisc")
long ptab_leak_return(struct cisc_ctx *ctx)
{
    return (long)names7[ctx->arg[0] & 3]; // REJECT
}

static const char *const methods8[8] TABLE(8) = {0, 0, 0, "GET", "POST", 0, "DELETE",
                                                 "OPTIONS"};

/* Rules the NULL entries out by hand, with 6 written for 5: clang tests
 * the lengths as bits of a constant (71 >> sp & 1), and the path of
 * sp = 5 reads through NULL. */
SEC("cisc")
int ptab_null_missed(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    long sp = cisc_memchr(p, end - p > 16 ? 16 : end - p, ' ');
    if (sp < 0 || sp >= 8 || sp == 0 || sp == 1 || sp == 2 || sp == 6)
        return -CISC_EINVAL;
    const char *m = methods8[sp];
    return m[0] == p[0]; // REJECT
}

static const char *const methods9[8] TABLE(9) = {0, 0, 0, "GET", "POST", 0, "DELETE",
                                                 "OPTIONS"};

/* The lengths that have a method listed by hand, with 5 written for 6:
 * clang tests them as bits of a constant, and sp = 5 reads through NULL. */
SEC("cisc")
int ptab_switch_missed(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    long sp = cisc_memchr(p, end - p > 16 ? 16 : end - p, ' ');
    switch (sp) {
    case 3:
    case 4:
    case 5:
    case 7:
        break;
    default:
        return -CISC_EINVAL;
    }
    const char *m = methods9[sp];
    return m[0] == p[0]; // REJECT
}

struct unit {
    const char *name;
    __u32 scale;
};

static const struct unit units10[] TABLE(10) = {{"k", 1000}, {"M", 1000000}, {"G", 1000000000}};

/* safe/ptrtables.c's ptab_unit_scale comparing the letter at arg[1] & 3,
 * up to 3: "k" is 2 bytes with its NUL. */
SEC("cisc")
int ptab_unit_past(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    const struct unit *t = units10;
    __u32 k = ctx->arg[1] & 3;
    if (end - p < 4)
        return 0;
    asm volatile("" : "+r"(t)); /* clang must read the table, not fold it */
    for (int u = 0; u < 3; u++)
        if (t[u].name[k] == p[k]) // REJECT
            return (int)t[u].scale;
    return 0;
}

static const struct unit units11[] TABLE(11) = {{"k", 1000}, {"M", 1000000}, {"G", 1000000000}};

/* Reads the low half of a record's name pointer as a number. */
SEC("cisc")
int ptab_unit_half(struct cisc_ctx *ctx)
{
    const volatile __u32 *half = (const volatile __u32 *)&units11[ctx->arg[0] & 1].name;
    return *half & 1; // REJECT
}
