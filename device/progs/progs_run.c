/* device/progs/progs_run.c - the bpf step: a program over its input in blocks
 * (bpf/blocks.h, the one definition), outputs appended, counters, trace
 * messages, and streams that carry state from one op to the next. */
#include "device/progs/progs_int.h"

#include "bpf/abi.h"
#include "bpf/blocks.h"
#include "common/clock.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(((struct progs_stream *)0)->state) == VM_STATE_SIZE,
               "a stream holds one state area");

int64_t progs_out_cap(uint64_t in_cap, uint32_t block_size, uint32_t block_out)
{
    uint64_t bs = block_size ? block_size : VM_BLOCK_SIZE_DEFAULT;
    uint64_t bo = block_out ? block_out : 2 * bs;
    if (bs > VM_BLOCK_SIZE_MAX || bo > 2ull * VM_BLOCK_SIZE_MAX || in_cap > (1ull << 50))
        return -EINVAL;
    uint64_t blocks = in_cap ? (in_cap + bs - 1) / bs : 1;
    return (int64_t)(blocks * bo);
}

/* ---- one run ------------------------------------------------------------- */

struct collect {
    struct progs_prog *pp;
    struct progs_run *run;
    uint64_t first;            /* ctx.block of the run's first block */
    uint32_t block_out;
    int32_t last_ret;          /* the program's return of the last block */
    int stop;                  /* why on_block stopped a good run (step_bound) */
};

/* The step's bounds after a good block (progs.h, struct progs_run):
 * -ECANCELED, -ETIME, or 0 to go on. */
static int step_bound(const struct progs_run *run)
{
    if (run->cancel && __atomic_load_n(run->cancel, __ATOMIC_RELAXED))
        return -ECANCELED;
    if (run->insns_max && run->insns > run->insns_max)
        return -ETIME;
    if (run->deadline_ns && now_ns() > run->deadline_ns)
        return -ETIME;
    return 0;
}

/* Appends a block's output to the step's; notes a failing block. */
static int on_block(void *arg, const struct vm_block_result *r)
{
    struct collect *c = arg;
    struct progs_run *run = c->run;
    run->blocks++;
    run->insns += r->insns;
    c->last_ret = r->ret;
    if (r->rc || r->ret < 0 || (uint32_t)r->ret > c->block_out) {
        run->fail_block = r->index;
        return 0;   /* vm_blocks_run reports it */
    }
    if ((size_t)r->ret > run->out_cap - run->out_len) {
        run->fail_block = r->index;
        return -EOVERFLOW;
    }
    memcpy(run->out + run->out_len, r->out, (size_t)r->ret);
    run->out_len += (size_t)r->ret;
    c->stop = step_bound(run);
    if (c->stop)
        run->fail_block = r->index;
    return c->stop;
}

/* Keeps the message in the program's ring, and logs it when tracing. */
static void on_trace(void *arg, const char *msg)
{
    struct collect *c = arg;
    struct progs_prog *pp = c->pp;
    unsigned long long block = c->first + c->run->blocks;
    pthread_mutex_lock(&pp->trace_lock);
    snprintf(pp->trace[pp->ntrace % PROGS_TRACE_KEEP], sizeof(pp->trace[0]),
             "uid %u block %llu: %s", c->run->uid, block, msg);
    pp->ntrace++;
    pthread_mutex_unlock(&pp->trace_lock);
    if (pp->reg->trace)
        progs_logf(pp->reg, "trace: program '%s' (id %u) uid %u block %llu: %s",
                   pp->info.name, pp->info.id, c->run->uid, block, msg);
}

static void account(struct progs_prog *pp, const struct progs_run *run, int rc)
{
    struct progs_info *i = &pp->info;
    __atomic_add_fetch(&i->runs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&i->invocations, run->blocks, __ATOMIC_RELAXED);
    __atomic_add_fetch(&i->insns_run, run->insns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&i->bytes_in, run->in_len, __ATOMIC_RELAXED);
    __atomic_add_fetch(&i->bytes_out, run->out_len, __ATOMIC_RELAXED);
    if (rc == -ETIME)
        __atomic_add_fetch(&i->budget_hits, 1, __ATOMIC_RELAXED);
    else if (rc)
        __atomic_add_fetch(&i->errors, 1, __ATOMIC_RELAXED);
}

/* The step's error for vm_blocks_run's result (progs.h, progs_run). */
static int step_error(int rc, const struct collect *c)
{
    if (c->stop)
        return c->stop;       /* a bound of the step, not the program's errno */
    if (rc == -ECANCELED)
        return c->last_ret;   /* the program's own errno, as it returned it */
    return rc;
}

int progs_run(struct progs_prog *pp, struct progs_stream *s, struct progs_run *run)
{
    run->out_len = 0;
    run->blocks = run->insns = run->fail_block = 0;
    if (progs_out_cap(0, run->block_size, run->block_out) < 0 || (run->more && !s) ||
        (s && s->prog_id && s->prog_id != pp->info.id))
        return -EINVAL;
    uint32_t bs = run->block_size ? run->block_size : VM_BLOCK_SIZE_DEFAULT;
    struct collect c = { pp, run, s ? s->next_block : 0, run->block_out ? run->block_out : 2 * bs,
                         0, 0 };
    struct vm_blocks_opts o = {
        .block_size = bs, .out_cap = c.block_out, .budget = pp->reg->lim.budget,
        .offset = run->offset, .trace = on_trace, .trace_arg = &c,
        .on_block = on_block, .on_block_arg = &c,
        .state = s ? s->state : NULL, .first_block = c.first, .more = run->more,
        .in_place = run->in_place,
    };
    memcpy(o.arg, run->arg, sizeof(o.arg));
    int rc = step_error(vm_blocks_run(pp->prog, run->in, run->in_len, &o, NULL), &c);
    if (s) {
        s->prog_id = pp->info.id;
        s->next_block += run->blocks;
    }
    account(pp, run, rc);
    return rc;
}

/* ---- streams ---------------------------------------------------------------- */

static struct progs_stream *stream_find(struct progs *p, uint64_t token)
{
    for (struct progs_stream *s = p->streams; s; s = s->next)
        if (s->token == token)
            return s;
    return NULL;
}

static void stream_unlink(struct progs *p, struct progs_stream *s)
{
    struct progs_stream **pp = &p->streams;
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = s->next;
        p->nstreams--;
    }
}

/* A fresh random token, not 0 and not in use (under p->lock). */
static uint64_t new_token(struct progs *p)
{
    uint64_t t;
    do
        randombytes_buf(&t, sizeof(t));
    while (t == 0 || stream_find(p, t));
    return t;
}

int progs_stream_open(struct progs *p, const void *owner, uint32_t uid, uint64_t *token)
{
    struct progs_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pthread_mutex_lock(&p->lock);
    int r = p->nstreams >= PROGS_STREAMS_MAX ? -ENOSPC : 0;
    if (!r) {
        *s = (struct progs_stream){ .reg = p, .token = new_token(p), .owner = owner, .uid = uid,
                                    .next = p->streams };
        p->streams = s;
        p->nstreams++;
        *token = s->token;
    }
    pthread_mutex_unlock(&p->lock);
    if (r)
        free(s);
    return r;
}

/* Unlinks s and frees it now, or when the step holding it lets go
 * (under p->lock). */
static void stream_close(struct progs *p, struct progs_stream *s)
{
    stream_unlink(p, s);
    if (s->busy)
        s->closed = true;
    else
        free(s);
}

int progs_stream_close(struct progs *p, const void *owner, uint64_t token)
{
    pthread_mutex_lock(&p->lock);
    struct progs_stream *s = stream_find(p, token);
    int r = s && s->owner == owner ? 0 : -ENOENT;
    if (!r)
        stream_close(p, s);
    pthread_mutex_unlock(&p->lock);
    return r;
}

void progs_owner_gone(struct progs *p, const void *owner)
{
    pthread_mutex_lock(&p->lock);
    struct progs_stream *s = p->streams;
    while (s) {
        struct progs_stream *next = s->next;
        if (s->owner == owner)
            stream_close(p, s);
        s = next;
    }
    pthread_mutex_unlock(&p->lock);
}

int progs_stream_get(struct progs *p, uint32_t uid, uint64_t token, struct progs_stream **out)
{
    pthread_mutex_lock(&p->lock);
    struct progs_stream *s = token ? stream_find(p, token) : NULL;
    int r = !s || s->uid != uid ? -ENOENT : s->busy ? -EBUSY : 0;
    if (!r) {
        s->busy = true;
        *out = s;
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

void progs_stream_put(struct progs_stream *s)
{
    if (!s)
        return;
    struct progs *p = s->reg;
    pthread_mutex_lock(&p->lock);
    s->busy = false;
    bool dead = s->closed;
    pthread_mutex_unlock(&p->lock);
    if (dead)
        free(s);
}

void progs_streams_free(struct progs *p)
{
    while (p->streams) {
        struct progs_stream *s = p->streams;
        p->streams = s->next;
        free(s);
    }
    p->nstreams = 0;
}
