/* JSON-ish scanners: nesting, strings with escapes, keys, numbers. */
#include <cisc_bpf.h>

/* Deepest nesting of {} and [] outside strings. */
SEC("cisc")
int json_depth(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    int depth = 0, max = 0, in_str = 0;

    for (; p < end; p++) {
        char c = *p;
        if (in_str) {
            if (c == '\\')
                p++;
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '"')
            in_str = 1;
        else if (c == '{' || c == '[')
            max = ++depth > max ? depth : max;
        else if (c == '}' || c == ']')
            depth--;
    }
    return max;
}

/* Number of string literals, escapes skipped. */
SEC("cisc")
int json_strings(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;

    while (p < end) {
        if (*p++ != '"')
            continue;
        n++;
        while (p < end && *p != '"') {
            if (*p == '\\' && end - p >= 2)
                p++;
            p++;
        }
        p++;
    }
    return n;
}

static const char key[] = "\"id\":";

/* Sum of the numbers following "id": keys. */
SEC("cisc")
int json_ids(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    __u64 sum = 0;

    while (end - p >= (long)sizeof(key) - 1) {
        int i;
        for (i = 0; i < (int)sizeof(key) - 1; i++)
            if (p[i] != key[i])
                break;
        if (i < (int)sizeof(key) - 1) {
            p++;
            continue;
        }
        p += sizeof(key) - 1;
        __u64 v = 0;
        while (p < end && *p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        sum += v;
    }
    return sum & 0x7fffffff;
}

/* Copies the value of the first "name": string into the output. */
SEC("cisc")
int json_name(struct cisc_ctx *ctx)
{
    const char *p = ctx->data, *end = ctx->data_end;
    char *out = ctx->out, *oend = ctx->out_end;
    long at = cisc_input_find(ctx, 0, 4096, "\"name\":\"", 8);
    if (at < 0)
        return 0;
    p += at + 8;
    int n = 0;
    for (; n < 256; n++) {
        if (p + n + 1 > end || out + n + 1 > oend)
            break;
        if (p[n] == '"')
            break;
        out[n] = p[n];
    }
    return n;
}

/* Counts true/false/null literals with a small keyword table. */
SEC("cisc")
int json_literals(struct cisc_ctx *ctx)
{
    static const char words[3][6] = {"true", "false", "null"};
    static const __u8 lens[3] = {4, 5, 4};
    const char *p = ctx->data, *end = ctx->data_end;
    __u32 n = 0;

    for (; p < end; p++) {
        for (int w = 0; w < 3; w++) {
            __u8 len = lens[w];
            if (end - p < len)
                continue;
            int k = 0;
            while (k < len && p[k] == words[w][k])
                k++;
            n += k == len;
        }
    }
    return n;
}
