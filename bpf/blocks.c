/*
 * bpf/blocks.c - block-by-block execution of a program (see blocks.h).
 */
#include "bpf/blocks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/abi.h"
#include "bpf/interp.h"

struct run {
    const struct vm_prog *prog;
    const struct vm_blocks_opts *o;
    uint32_t block_size, out_cap;
    uint8_t *in;             /* private copy of the current block */
    uint8_t *out;
    uint8_t *state;
    struct vm_blocks_stats *st;
};

static int check_opts(const struct vm_prog *prog, const struct vm_blocks_opts *o,
                      struct run *r)
{
    if (!prog->verified)
        return -EPERM;
    r->block_size = o->block_size ? o->block_size : VM_BLOCK_SIZE_DEFAULT;
    if (r->block_size > VM_BLOCK_SIZE_MAX)
        return -EINVAL;
    uint64_t cap = o->out_cap ? o->out_cap : 2ull * r->block_size;
    if (cap > 2ull * VM_BLOCK_SIZE_MAX)
        return -EINVAL;
    r->out_cap = (uint32_t)cap;
    return 0;
}

/* Block j of this run; k = first_block + j is its index in the input. */
static int run_block(struct run *r, uint64_t j, const uint8_t *src, uint32_t len, bool last)
{
    uint64_t k = r->o->first_block + j;
    const uint8_t *in = r->o->in_place ? src : memcpy(r->in, src, len);
    memset(r->out, 0, r->out_cap);
    struct vm_ctx ctx = {
        .data = (uintptr_t)in, .data_end = (uintptr_t)in + len,
        .out = (uintptr_t)r->out, .out_end = (uintptr_t)r->out + r->out_cap,
        .offset = r->o->offset + j * r->block_size, .len = len, .block = k,
        .flags = (k == 0 ? VM_F_FIRST_BLOCK : 0) |
                 (last && !r->o->more ? VM_F_LAST_BLOCK : 0),
    };
    memcpy(ctx.arg, r->o->arg, sizeof(ctx.arg));
    struct vm_env env = {.budget = r->o->budget ? r->o->budget : VM_DEFAULT_BUDGET,
                         .state = r->o->state ? r->o->state : r->state, .trace = r->o->trace,
                         .trace_arg = r->o->trace_arg, .checked = r->o->checked};
    uint64_t r0 = 0;
    int rc = vm_run(r->prog, &ctx, &env, &r0);
    struct vm_block_result res = {.index = k, .offset = ctx.offset, .len = len, .rc = rc,
                                  .ret = (int32_t)(uint32_t)r0, .insns = env.used,
                                  .out = r->out, .fault = rc ? env.fault : NULL};
    r->st->blocks++;
    r->st->in_bytes += len;
    r->st->insns += env.used;
    if (env.used > r->st->insns_max)
        r->st->insns_max = env.used;
    int verdict = rc ? rc : res.ret < 0 ? -ECANCELED
                         : (uint32_t)res.ret > r->out_cap ? -ERANGE : 0;
    if (!verdict)
        r->st->out_bytes += (uint32_t)res.ret;
    int cb = r->o->on_block ? r->o->on_block(r->o->on_block_arg, &res) : 0;
    return verdict ? verdict : cb;
}

static int run_all(struct run *r, const uint8_t *input, size_t len)
{
    uint64_t k = 0;
    size_t pos = 0;
    do {
        size_t n = len - pos < r->block_size ? len - pos : r->block_size;
        int rc = run_block(r, k++, input + pos, (uint32_t)n, pos + n >= len);
        if (rc)
            return rc;
        pos += n;
    } while (pos < len);
    return 0;
}

int vm_blocks_run(const struct vm_prog *prog, const void *input, size_t len,
                  const struct vm_blocks_opts *opts, struct vm_blocks_stats *stats)
{
    static const uint8_t empty;
    struct vm_blocks_opts none = {0};
    struct vm_blocks_stats ignored;
    struct run r = {.prog = prog, .o = opts ? opts : &none, .st = stats ? stats : &ignored};
    memset(r.st, 0, sizeof(*r.st));
    int rc = check_opts(prog, r.o, &r);
    if (rc)
        return rc;
    /* +1: malloc(0) may return NULL; a zero-length block still has a buffer. */
    r.in = malloc(r.o->in_place ? 1 : (size_t)r.block_size + 1);
    r.out = malloc((size_t)r.out_cap + 1);
    r.state = r.o->state ? NULL : calloc(1, VM_STATE_SIZE);
    if (!input)
        input = &empty;      /* only with len 0; keeps pointer arithmetic defined */
    rc = r.in && r.out && (r.state || r.o->state) ? run_all(&r, input, len) : -ENOMEM;
    free(r.in);
    free(r.out);
    free(r.state);
    return rc;
}
