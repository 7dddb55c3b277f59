/* libcisc/progrun.c - cisc_prog_run: a program over a whole file as a
 * sequence of fused ops (READ -> BPF -> APPEND, or READ -> BPF with the
 * result in the arena), one per chunk, chained by a stream. */
#include "libcisc/client_int.h"

#include <cisc/progs.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN_CHUNK_DEFAULT (4ull << 20)
#define RUN_BLOCK_DEFAULT 4096u

struct run {
    struct cisc_queue *q;
    const struct cisc_prog_run_opts *o;
    struct cisc_prog_run_stats *st;
    uint32_t id, bs;
    uint64_t stream, size, chunk, out_cap;
    uint64_t fh_in, fh_out;
    bool in_open, out_open;
    char tmp[PATH_MAX];
    uint64_t steps_off, res_off, args_off, out_off;   /* arena; 0 = not allocated */
    bool steps_a, res_a, args_a, out_a;
};

/* ---- one op ------------------------------------------------------------ */

static void step_read(struct wire_step *s, const struct run *r, uint64_t off, uint64_t n)
{
    *s = (struct wire_step){ .kind = WIRE_STEP_READ, .flags = WIRE_STEP_F_FH,
                             .in_step = WIRE_NO_STEP, .in2_step = WIRE_NO_STEP,
                             .file_step = WIRE_NO_STEP, .fh = r->fh_in, .off = off, .len = n };
}

static void step_bpf(struct wire_step *s, const struct run *r, uint64_t off, bool more)
{
    *s = (struct wire_step){ .kind = WIRE_STEP_BPF, .in_step = 0, .in2_step = WIRE_NO_STEP,
                             .file_step = WIRE_NO_STEP, .fh = r->args_off, .off = off,
                             .len = r->bs, .key_id = r->id, .out_cap = (uint32_t)r->out_cap,
                             .flags2 = WIRE_BPF_ARGS | (more ? WIRE_BPF_MORE : 0) };
    if (!r->o->output) {
        s->flags = WIRE_STEP_F_OUT_ARENA;
        s->out_off = r->out_off;
    }
}

static void step_append(struct wire_step *s, const struct run *r)
{
    *s = (struct wire_step){ .kind = WIRE_STEP_APPEND, .flags = WIRE_STEP_F_FH, .in_step = 1,
                             .in2_step = WIRE_NO_STEP, .file_step = WIRE_NO_STEP,
                             .fh = r->fh_out };
}

/* The first failing step of an op that failed with res. */
static int failed_step(const struct wire_step_res *res, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (res[i].ret < 0 && res[i].ret != -ECANCELED)
            return (int)i;
    return -1;
}

/* Runs the op for input [off, off + n). */
static int one_op(struct run *r, uint64_t off, uint64_t n, bool more)
{
    struct wire_step *steps = lc_arena_ptr(r->q, r->steps_off);
    unsigned ns = r->o->output ? 3 : 2;
    step_read(&steps[0], r, off, n);
    step_bpf(&steps[1], r, off, more);
    if (r->o->output)
        step_append(&steps[2], r);
    struct wire_sqe e = { .opcode = WIRE_OP_CISC, .nsteps = (uint16_t)ns,
                          .addr = r->steps_off, .len = ns * sizeof(struct wire_step),
                          .res_off = r->res_off,
                          .res_len = (uint32_t)(ns * sizeof(struct wire_step_res)) };
    int64_t rc = lc_call(r->q, &e, NULL);
    const struct wire_step_res *res = lc_arena_ptr(r->q, r->res_off);
    r->st->ops++;
    if (rc < 0) {
        r->st->failed_step = failed_step(res, ns);
        return (int)rc;
    }
    uint64_t got = res[0].ret > 0 ? (uint64_t)res[0].ret : 0, out = res[1].out_len;
    r->st->in_bytes += got;
    r->st->out_bytes += out;
    if (!r->o->output && out && r->o->sink && out <= r->out_cap)
        return r->o->sink(r->o->sink_arg, lc_arena_ptr(r->q, r->out_off), out);
    return 0;
}

/* ---- set-up and tear-down ------------------------------------------------- */

static int alloc(struct run *r, size_t len, uint64_t *off, bool *flag)
{
    int e = lc_arena_alloc(r->q, len, off);
    *flag = e == 0;
    return e;
}

static void write_args(struct run *r)
{
    struct wire_bpf_args *a = lc_arena_ptr(r->q, r->args_off);
    memset(a, 0, sizeof(*a));
    memcpy(a->arg, r->o->arg, sizeof(a->arg));
    a->stream = r->stream;
    a->block_out = r->o->block_out;
}

/* "<dir>/.<name>.cisc-run.<pid>": the result until the run succeeded. */
static int tmp_name(const char *out, char *buf, size_t size)
{
    const char *slash = strrchr(out, '/');
    int dlen = slash ? (int)(slash - out + 1) : 0;
    int n = snprintf(buf, size, "%.*s.%s.cisc-run.%d", dlen, out, slash ? slash + 1 : out,
                     (int)getpid());
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int open_files(struct run *r, const char *input)
{
    struct stat st;
    int e = cisc_open(r->q, input, O_RDONLY, 0, &r->fh_in);
    r->in_open = e == 0;
    if (!e)
        e = cisc_fstat(r->q, r->fh_in, &st);
    if (!e && S_ISDIR(st.st_mode))
        e = -EISDIR;
    r->st->failed_file = e ? 1 : 0;
    if (e)
        return e;
    r->size = (uint64_t)st.st_size;
    if (!r->o->output)
        return 0;
    e = tmp_name(r->o->output, r->tmp, sizeof(r->tmp));
    if (!e)
        e = cisc_open(r->q, r->tmp, O_WRONLY | O_CREAT | O_TRUNC,
                      r->o->mode ? r->o->mode : 0644, &r->fh_out);
    r->out_open = e == 0;
    r->st->failed_file = e ? 2 : 0;
    return e;
}

static uint64_t pow2_at_least(uint64_t n)
{
    uint64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static int setup(struct run *r, const char *input)
{
    const struct cisc_prog_run_opts *o = r->o;
    r->bs = o->block_size ? o->block_size : RUN_BLOCK_DEFAULT;
    uint64_t bo = o->block_out ? o->block_out : 2ull * r->bs;
    uint64_t c = o->chunk ? o->chunk : RUN_CHUNK_DEFAULT;
    r->chunk = c < r->bs ? r->bs : c - c % r->bs;
    while (!o->output && !o->chunk && !o->out_cap && r->chunk > r->bs &&
           pow2_at_least(r->chunk + 2 * bo) > r->q->arena_size / 2)
        r->chunk = (r->chunk / 2) - (r->chunk / 2) % r->bs;   /* the result must fit the arena */
    r->out_cap = o->out_cap ? o->out_cap : r->chunk + 2 * bo;
    if (r->out_cap > UINT32_MAX || r->chunk > UINT32_MAX)
        return -EINVAL;
    int e = cisc_prog_id(r->q->s, o->prog, &r->id);
    if (!e)
        e = cisc_prog_stream_open(r->q->s, &r->stream);
    if (!e)
        e = alloc(r, 3 * sizeof(struct wire_step), &r->steps_off, &r->steps_a);
    if (!e)
        e = alloc(r, 3 * sizeof(struct wire_step_res), &r->res_off, &r->res_a);
    if (!e)
        e = alloc(r, sizeof(struct wire_bpf_args), &r->args_off, &r->args_a);
    if (!e && !o->output)
        e = alloc(r, r->out_cap, &r->out_off, &r->out_a);
    if (!e)
        e = open_files(r, input);
    if (!e)
        write_args(r);
    return e;
}

/* Closes everything; puts the result in place when ok. */
static int finish(struct run *r, int rc)
{
    if (r->out_open) {
        int c = cisc_close(r->q, r->fh_out);
        rc = rc ? rc : c;
        if (!rc && (rc = cisc_rename(r->q, r->tmp, r->o->output, 0)))
            r->st->failed_file = 2;
        if (rc)
            cisc_unlink(r->q, r->tmp);
    }
    if (r->in_open)
        cisc_close(r->q, r->fh_in);
    if (r->stream)
        cisc_prog_stream_close(r->q->s, r->stream);
    if (r->out_a)
        lc_arena_free(r->q, r->out_off);
    if (r->args_a)
        lc_arena_free(r->q, r->args_off);
    if (r->res_a)
        lc_arena_free(r->q, r->res_off);
    if (r->steps_a)
        lc_arena_free(r->q, r->steps_off);
    return rc;
}

CISC_API int cisc_prog_run(struct cisc_queue *q, const char *input,
                           const struct cisc_prog_run_opts *o, struct cisc_prog_run_stats *st)
{
    struct cisc_prog_run_stats ignored;
    if (!st)
        st = &ignored;
    memset(st, 0, sizeof(*st));
    st->failed_step = -1;
    if (!q || !input || !o || !o->prog || (!o->output && !o->sink))
        return -EINVAL;
    struct run r = { .q = q, .o = o, .st = st };
    int rc = setup(&r, input);
    for (uint64_t off = 0; !rc;) {
        uint64_t n = r.size - off < r.chunk ? r.size - off : r.chunk;
        bool more = off + n < r.size;
        rc = one_op(&r, off, n, more);
        off += n;
        if (!rc && o->progress)
            o->progress(o->progress_arg, off, r.size);
        if (!more)
            break;
    }
    return finish(&r, rc);
}
