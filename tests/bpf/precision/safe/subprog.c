/* Programs split into real (noinline) functions. */
#include <cisc_bpf.h>

/* Parses an unsigned decimal at *pp, advancing it; end bounds the read. */
static __attribute__((noinline)) __u64 parse_uint(const __u8 *p, const __u8 *end, __u32 *used)
{
    __u64 v = 0;
    __u32 n = 0;
    while (p + n < end && n < 20 && p[n] >= '0' && p[n] <= '9') {
        v = v * 10 + (p[n] - '0');
        n++;
    }
    *used = n;
    return v;
}

/* Sum of all decimal numbers in the input. */
SEC("cisc")
int sub_sum_numbers(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;
    while (p < end) {
        __u32 used = 0;
        sum += parse_uint(p, end, &used);
        p += used ? used : 1;
    }
    return sum & 0x7fffffff;
}

static __attribute__((noinline)) int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Words, with the classification in a function. */
SEC("cisc")
int sub_words(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    int words = 0, in = 0;
    for (; p < end; p++) {
        int s = is_space(*p);
        words += !s && !in;
        in = !s;
    }
    return words;
}

/* Fills a stack buffer in a function, the caller consumes it. */
static __attribute__((noinline)) int fill_digits(char *buf, __u64 v)
{
    int n = 0;
    do {
        buf[n++] = '0' + v % 10;
        v /= 10;
    } while (v && n < 20);
    return n;
}

SEC("cisc")
int sub_print_len(struct cisc_ctx *ctx)
{
    char buf[20] = {0};
    int n = fill_digits(buf, ctx->len);
    __u8 *out = ctx->out, *oend = ctx->out_end;
    if (out + 20 > oend)
        return -CISC_ENOSPC;
    for (int i = 0; i < n && i < 20; i++)
        out[i] = buf[n - 1 - i];
    return n;
}

/* A function that checks and returns a record pointer, or NULL. */
struct pair {
    __u32 key, val;
};

static __attribute__((noinline)) const struct pair *next_pair(const __u8 *p, const __u8 *end)
{
    if (p + sizeof(struct pair) > end)
        return 0;
    return (const struct pair *)p;
}

SEC("cisc")
int sub_pairs(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;
    for (int i = 0; i < 512; i++) {
        const struct pair *r = next_pair(p + i * 8, end);
        if (!r)
            break;
        if (r->key == ctx->arg[0])
            sum += r->val;
    }
    return sum & 0x7fffffff;
}
