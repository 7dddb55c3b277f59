/* device/engine/fused/bpfstep.c - the bpf step in each phase of a fused op (see
 * bpfstep.h). */
#include "device/engine/fused/bpfstep.h"

#include "bpf/blocks.h"
#include "common/clock.h"
#include "device/engine/fused/fused_int.h"
#include "device/sched/model.h"
#include "device/progs/progs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BPF_FLAGS (WIRE_BPF_ARGS | WIRE_BPF_MORE)

/* Copies the argument block out of the arena (the one fetch) into s. */
static int args_block(const struct wire_step *w, const struct eng_arena *a,
                      struct fop_step *s)
{
    const struct wire_bpf_args *p = fop_arena_at(a, w->fh, sizeof(*p));
    if (!p)
        return -EFAULT;
    struct wire_bpf_args b;
    memcpy(&b, p, sizeof(b));
    if (b.reserved || b.reserved2[0] || b.reserved2[1] ||
        b.block_out > 2ull * VM_BLOCK_SIZE_MAX)
        return -EINVAL;
    memcpy(s->arg, b.arg, sizeof(s->arg));
    s->stream = b.stream;
    s->block_out = b.block_out;
    return 0;
}

int fop_bpf_decode(const struct wire_step *w, const struct eng_arena *a, struct fop_step *s,
                    uint64_t in_cap, const struct fop_limits *lim)
{
    if (!w->key_id || (w->flags2 & ~BPF_FLAGS) || w->mode || w->len > VM_BLOCK_SIZE_MAX ||
        w->in2_step != WIRE_NO_STEP || (!(w->flags2 & WIRE_BPF_ARGS) && w->fh))
        return -EINVAL;
    int r = w->flags2 & WIRE_BPF_ARGS ? args_block(w, a, s) : 0;
    if (r)
        return r;
    s->fh = 0;
    if ((w->flags2 & WIRE_BPF_MORE) && !s->stream)
        return -EINVAL;   /* "more input later" needs a stream to carry the state */
    int64_t need = progs_out_cap(in_cap, (uint32_t)w->len, s->block_out);
    if (need < 0)
        return (int)need;
    s->cap = w->out_cap ? w->out_cap : (uint64_t)need;
    return s->cap > lim->step_bytes ? -E2BIG : 0;
}

int fop_bpf_prep(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    struct progs *p = x->e->progs;
    if (!p)
        return -EOPNOTSUPP;
    int r = progs_get(p, x->cred->uid, s->key_id, &x->prog[i]);
    if (!r && s->stream) {
        r = progs_stream_get(p, x->cred->uid, s->stream, &x->stream[i]);
        if (r) {
            progs_put(x->prog[i]);
            x->prog[i] = NULL;
        }
    }
    return r;
}

void fop_bpf_unprep(struct fop_run *x)
{
    for (unsigned i = 0; i < x->v->n && i < WIRE_MAX_STEPS; i++) {
        progs_stream_put(x->stream[i]);
        progs_put(x->prog[i]);
        x->stream[i] = NULL;
        x->prog[i] = NULL;
    }
}

/* The engine's floor for one step (engine.h): instructions left to the
 * step and the op, the op's deadline in host time (device time runs
 * core_speed times slower), the cancel flag. */
static void step_bounds(struct fop_run *x, struct progs_run *run)
{
    struct progs_limits l;
    progs_limits_get(x->e->progs, &l);
    uint64_t step = l.budget * ENG_STEP_BUDGETS, op = l.budget * ENG_OP_BUDGETS;
    uint64_t used = __atomic_load_n(&x->insns, __ATOMIC_RELAXED);
    uint64_t left = used < op ? op - used : 1;   /* 1: stops after one block */
    run->insns_max = step < left ? step : left;
    uint64_t now = now_ns();
    double speed = dm_get().core_speed;
    uint64_t dev_left = x->deadline_ns > now ? x->deadline_ns - now : 0;
    run->deadline_ns = now + (uint64_t)((double)dev_left / (speed > 1.0 ? speed : 1.0));
    run->cancel = &x->e->cancel;
}

int64_t fop_bpf_exec(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    struct progs_run run = { .out_cap = s->cap, .offset = s->off,
                             .block_size = (uint32_t)s->len, .block_out = s->block_out,
                             .more = (s->oflags & WIRE_BPF_MORE) != 0, .uid = x->cred->uid };
    if (s->in != WIRE_NO_STEP) {   /* an earlier step's buffer: device memory */
        run.in = x->buf[s->in];
        run.in_len = x->olen[s->in];
        /* A READ's view of the media too: a write through the mount
         * meanwhile may show in it, as in a Linux read racing a write;
         * nothing else changes it (exec.c "Views"). */
        run.in_place = true;
    } else {                       /* the client's arena: copied block by block */
        run.in = s->src;
        run.in_len = s->src_len;
    }
    memcpy(run.arg, s->arg, sizeof(run.arg));
    x->buf[i] = fop_buf_get(x->e, s->cap, &x->bufsize[i]);
    if (!x->buf[i])
        return -ENOMEM;
    run.out = x->buf[i];
    step_bounds(x, &run);
    struct dm_step dm;
    dm_step_begin(&dm);
    int r = progs_run(x->prog[i], x->stream[i], &run);
    dm_step_end(&dm);   /* the device model's core speed */
    /* Relaxed: steps of one op that run at once (independent runs on
     * several cores) only need the sum; nothing is published with it. */
    __atomic_add_fetch(&x->insns, run.insns, __ATOMIC_RELAXED);
    x->olen[i] = run.out_len;
    return r ? r : (int64_t)run.out_len;
}
