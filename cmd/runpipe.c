/* cmd/runpipe.c - a device program over a pipe (see runpipe.h). */
#include "cmd/runpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PIPE_CHUNK_DEFAULT (1u << 20)   /* smaller than a file's: a pipe trickles */

struct pipe_run {
    struct cisc_session *s;
    struct cisc_queue *q;
    const struct cisc_prog_run_opts *o;
    struct cisc_prog_run_stats *st;
    int fd;
    uint32_t id;
    uint64_t stream, chunk, out_cap, fh_out, done;
    void *in, *out;              /* arena buffers */
    bool out_open, held;         /* held: one byte read ahead, to know EOF */
    char hold, tmp[PATH_MAX];
};

uint64_t runpipe_chunk(const struct cisc_prog_run_opts *o)
{
    uint64_t bs = o->block_size ? o->block_size : 4096;
    uint64_t c = o->chunk ? o->chunk : PIPE_CHUNK_DEFAULT;
    return c < bs ? bs : c - c % bs;
}

/* Fills up to want bytes (less only at EOF). Returns the count or -errno. */
static ssize_t read_full(int fd, char *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* The next chunk into p->in; *more tells whether input follows it. */
static ssize_t next_chunk(struct pipe_run *p, bool *more)
{
    char *buf = p->in;
    size_t have = 0;
    if (p->held)
        buf[have++] = p->hold;
    ssize_t n = read_full(p->fd, buf + have, p->chunk - have);
    if (n < 0)
        return n;
    have += (size_t)n;
    *more = false;
    p->held = false;
    if (have == p->chunk) {
        ssize_t a = read_full(p->fd, &p->hold, 1);
        if (a < 0)
            return a;
        p->held = *more = a == 1;
    }
    return (ssize_t)have;
}

static int one_op(struct pipe_run *p, size_t n, bool more)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, p->q);
    if (r)
        return r;
    struct cisc_bpf_opts bo = { .block_size = p->o->block_size, .block_out = p->o->block_out,
                                .offset = p->done, .out_cap = p->out_cap,
                                .stream = p->stream, .more = more };
    memcpy(bo.arg, p->o->arg, sizeof(bo.arg));
    int bp = cisc_vec_bpf(&v, p->id, CISC_IN_BUF(p->in, n), &bo);
    if (p->o->output)
        cisc_vec_append(&v, cisc_vec_fh(&v, p->fh_out), CISC_IN_STEP(bp));
    else
        cisc_vec_out_to(&v, bp, p->out, p->out_cap);
    int64_t st = cisc_vec_submit(&v);
    p->st->ops++;
    uint64_t out = st == 0 ? cisc_vec_out_len(&v, bp) : 0;
    if (st < 0 && cisc_vec_ran(&v) > 0)   /* the builder and transport fail before step 0 */
        p->st->failed_step = cisc_vec_ret(&v, bp) < 0 ? 1 : 2;
    else if (st < 0)
        p->st->failed_step = 1;
    cisc_vec_free(&v);
    if (st < 0)
        return (int)st;
    p->st->in_bytes += n;
    p->st->out_bytes += out;
    p->done += n;
    if (!p->o->output && out && p->o->sink)
        return p->o->sink(p->o->sink_arg, p->out, out);
    return 0;
}

/* "<dir>/.<name>.cisc-run.<pid>", as cisc_prog_run names its own. */
static int open_output(struct pipe_run *p)
{
    const char *out = p->o->output, *slash = strrchr(out, '/');
    int dlen = slash ? (int)(slash - out + 1) : 0;
    int n = snprintf(p->tmp, sizeof(p->tmp), "%.*s.%s.cisc-run.%d", dlen, out,
                     slash ? slash + 1 : out, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(p->tmp))
        return -ENAMETOOLONG;
    int r = cisc_open(p->q, p->tmp, O_WRONLY | O_CREAT | O_TRUNC,
                      p->o->mode ? p->o->mode : 0644, &p->fh_out);
    p->out_open = r == 0;
    return r;
}

static int setup(struct pipe_run *p)
{
    uint64_t bs = p->o->block_size ? p->o->block_size : 4096;
    uint64_t bo = p->o->block_out ? p->o->block_out : 2 * bs;
    p->chunk = runpipe_chunk(p->o);
    p->out_cap = p->o->out_cap ? p->o->out_cap : p->chunk + 2 * bo;
    int r = cisc_prog_id(p->s, p->o->prog, &p->id);
    if (!r)
        r = cisc_prog_stream_open(p->s, &p->stream);
    if (!r)
        r = cisc_buf_alloc(p->q, p->chunk, &p->in);
    if (!r && !p->o->output)
        r = cisc_buf_alloc(p->q, p->out_cap, &p->out);
    if (!r && p->o->output && (r = open_output(p)))
        p->st->failed_file = 2;
    return r;
}

static int finish(struct pipe_run *p, int rc)
{
    if (p->out_open) {
        int c = cisc_close(p->q, p->fh_out);
        rc = rc ? rc : c;
        if (!rc && (rc = cisc_rename(p->q, p->tmp, p->o->output, 0)))
            p->st->failed_file = 2;
        if (rc)
            cisc_unlink(p->q, p->tmp);
    }
    if (p->stream)
        cisc_prog_stream_close(p->s, p->stream);
    cisc_buf_free(p->q, p->out);
    cisc_buf_free(p->q, p->in);
    return rc;
}

int runpipe_run(struct cisc_session *s, struct cisc_queue *q, int fd, const struct cisc_prog_run_opts *o,
                struct cisc_prog_run_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->failed_step = -1;
    struct pipe_run p = { .s = s, .q = q, .o = o, .st = st, .fd = fd };
    int rc = setup(&p);
    bool more = true;
    while (!rc && more) {
        ssize_t n = next_chunk(&p, &more);
        if (n < 0) {
            st->failed_file = 1;
            rc = (int)n;
            break;
        }
        rc = one_op(&p, (size_t)n, more);
        if (!rc && o->progress)
            o->progress(o->progress_arg, p.done, 0);
    }
    return finish(&p, rc);
}
