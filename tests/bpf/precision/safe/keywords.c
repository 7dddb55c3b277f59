/* Keyword tables in read-only data: binary search, tables by length. */
#include <cisc_bpf.h>

#define NKW 8
#define KWLEN 8
static const char kw[NKW][KWLEN] = {"break", "case", "do", "else", "for", "if", "return", "while"};

static __always_inline int cmp_word(const char *w, int len, const char *k)
{
    for (int i = 0; i < KWLEN; i++) {
        char a = i < len ? w[i] : 0;
        if (a != k[i])
            return (unsigned char)a - (unsigned char)k[i];
        if (!a)
            return 0;
    }
    return 0;
}

/* Counts words of the input that are C keywords (binary search). */
SEC("cisc")
int kw_bsearch(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 hits = 0;

    while (p < end) {
        char w[KWLEN] = {0};
        int len = 0;
        while (p < end && *p >= 'a' && *p <= 'z') {
            if (len < KWLEN)
                w[len] = *p;
            len++;
            p++;
        }
        if (len > 0 && len < KWLEN) {
            int lo = 0, hi = NKW - 1;
            while (lo <= hi) {
                int mid = (int)((unsigned)(lo + hi) >> 1);
                int c = cmp_word(w, len, kw[mid]);
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

/* HTTP request methods looked up in a table indexed by length. */
static const char *const methods[8] = {0, 0, 0, "GET", "POST", 0, "DELETE", "OPTIONS"};

SEC("cisc")
int kw_http_method(struct cisc_ctx *ctx)
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

/* Bit set of the single-letter commands present (a table of 26 flags). */
static const __u8 cmd_bit[26] = {['a' - 'a'] = 1, ['d' - 'a'] = 2, ['p' - 'a'] = 3,
                                 ['q' - 'a'] = 4, ['s' - 'a'] = 5, ['w' - 'a'] = 6};

SEC("cisc")
int kw_letters(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u32 mask = 0;
    for (; p < end; p++) {
        __u8 c = *p;
        if (c >= 'a' && c <= 'z' && cmd_bit[c - 'a'])
            mask |= 1u << cmd_bit[c - 'a'];
    }
    return mask;
}

/* Sorted u32 table: is arg[0] one of the well-known ports? */
static const __u32 ports[] = {21, 22, 25, 53, 80, 110, 143, 443, 993, 995, 3306, 5432, 6379, 8080};

SEC("cisc")
int kw_ports(struct cisc_ctx *ctx)
{
    __u32 key = ctx->arg[0];
    __u32 lo = 0, hi = sizeof(ports) / sizeof(ports[0]);
    while (lo < hi) {
        __u32 mid = lo + (hi - lo) / 2;
        if (ports[mid] == key)
            return mid + 1;
        if (ports[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}
