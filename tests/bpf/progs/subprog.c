/*
 * charstats: subprogram calls (noinline functions in .text, one global,
 * one static calling another, one taking a pointer).
 *
 * Counts the input's bytes by class (other, digit, letter, space) and
 * hashes its digits with FNV-1a; at the last block outputs five u64:
 * other, digits, letters, spaces, hash.
 */
#include <cisc_bpf.h>

#define BLOCK_MAX 4096

struct stats {
    __u64 count[4];
    __u64 hash;
};

/* 0 other, 1 digit, 2 letter, 3 space */
static __attribute__((noinline)) int classify(__u32 c)
{
    if (c - '0' < 10)
        return 1;
    if ((c | 32) - 'a' < 26)
        return 2;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r')
        return 3;
    return 0;
}

__attribute__((noinline)) __u64 fnv_step(__u64 h, __u64 byte)
{
    return (h ^ byte) * 0x100000001b3ull;
}

static __attribute__((noinline)) __u64 hash_digit(__u64 h, __u32 c)
{
    return fnv_step(h, c);
}

static __attribute__((noinline)) void bump(__u64 *counter)
{
    *counter += 1;
}

SEC("cisc")
int charstats(struct cisc_ctx *ctx)
{
    const __u8 *data = ctx->data, *end = ctx->data_end;
    struct stats *st = cisc_state();

    if (ctx->len > BLOCK_MAX)
        return -CISC_E2BIG;
    if (ctx->flags & CISC_F_FIRST_BLOCK)
        st->hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < BLOCK_MAX; i++) {
        if (data + i + 1 > end)
            break;
        __u8 c = data[i];
        int k = classify(c);
        bump(&st->count[k & 3]);
        if (k == 1)
            st->hash = hash_digit(st->hash, c);
    }
    if (!(ctx->flags & CISC_F_LAST_BLOCK))
        return 0;
    if ((__u8 *)ctx->out + sizeof(*st) > (__u8 *)ctx->out_end)
        return -CISC_ENOSPC;
    return cisc_copy(ctx->out, sizeof(*st), st, sizeof(*st));
}
