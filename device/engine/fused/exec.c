/* device/engine/fused/exec.c - ENG_OP_CISC on a device core (cisc.h): inode
 * stripes, the execute phase with deferred mutations and read-your-writes,
 * the spreading of work over free cores (ENG_OP_CISC_PART: runs of
 * independent compute steps, and large READ steps cut into pieces that
 * free cores read at once), and the in-process entry point. */
#include "device/engine/fused/fused_int.h"

#include "common/clock.h"
#include "common/le.h"
#include "device/engine/fused/bpfstep.h"
#include "device/engine/fused/oplog.h"
#include "device/compute/compute.h"
#include "device/sched/model.h"
#include "device/storagefs/map_read.h"
#include "proto/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void eng_fop_limits(struct engine *e, struct fop_limits *out)
{
    uint64_t b = e->mem_budget;
    out->step_bytes = b < FOP_STEP_BYTES_MAX ? b : FOP_STEP_BYTES_MAX;
    out->op_bytes = b < FOP_OP_BYTES_MAX ? b : FOP_OP_BYTES_MAX;
}

/* ---- inode stripes ------------------------------------------------------ */

/* The stripes an op holds: ascending, each once, with its mode. */
struct stripes {
    unsigned n;
    uint16_t idx[WIRE_MAX_STEPS];
    bool excl[WIRE_MAX_STEPS];
};

static void stripes_collect(const struct fop_run *x, struct stripes *sp)
{
    sp->n = 0;
    for (unsigned i = 0; i < x->nfiles; i++) {
        const struct cfile *f = &x->files[i];
        if (!f->ino)
            continue;
        uint16_t s = (uint16_t)eng_stripe(f->ino);
        unsigned k = 0;
        while (k < sp->n && sp->idx[k] < s)
            k++;
        if (k < sp->n && sp->idx[k] == s) {
            sp->excl[k] |= f->mutated;
            continue;
        }
        memmove(&sp->idx[k + 1], &sp->idx[k], (sp->n - k) * sizeof(sp->idx[0]));
        memmove(&sp->excl[k + 1], &sp->excl[k], (sp->n - k) * sizeof(sp->excl[0]));
        sp->idx[k] = s;
        sp->excl[k] = f->mutated;
        sp->n++;
    }
}

static void stripes_lock(struct engine *e, const struct stripes *sp)
{
    for (unsigned k = 0; k < sp->n; k++)
        eng_stripe_lock(e, sp->idx[k], sp->excl[k]);
}

static void stripes_unlock(struct engine *e, const struct stripes *sp)
{
    for (unsigned k = sp->n; k-- > 0;)
        pthread_rwlock_unlock(&e->ino_lock[sp->idx[k]]);
}

/* Base sizes, read once the stripes are held. */
static int files_sizes(struct fop_run *x)
{
    for (unsigned i = 0; i < x->nfiles; i++) {
        struct cfile *f = &x->files[i];
        struct sfs_attr a = { 0 };
        int r = f->ip ? sfs_getattr_ino(x->e->fs, f->ip, &a) : 0;
        if (r)
            return r;
        f->base_size = f->vsize = a.size;
    }
    return 0;
}

/* ---- reads through the op's pending mutations ----------------------------- */

static void overlay(const struct fop_mut *m, uint64_t off, uint8_t *out, uint64_t n)
{
    uint64_t end = off + n;
    if (m->kind == MUT_WRITE) {
        uint64_t a = m->off > off ? m->off : off;
        uint64_t b = m->off + m->len < end ? m->off + m->len : end;
        if (a < b)
            memcpy(out + (a - off), m->data + (a - m->off), b - a);
    } else if (m->kind == MUT_TRUNC && m->off < end) {
        uint64_t a = m->off > off ? m->off : off;
        memset(out + (a - off), 0, end - a);
    }
}

int64_t fop_vread(struct fop_run *x, unsigned fi, uint64_t off, uint8_t *out, uint64_t len)
{
    const struct cfile *f = &x->files[fi];
    if (off >= f->vsize)
        return 0;
    uint64_t n = len < f->vsize - off ? len : f->vsize - off;
    uint64_t got = 0;
    if (f->ip && off < f->base_size) {
        uint64_t want = n < f->base_size - off ? n : f->base_size - off;
        ssize_t r = sfs_read_ino(x->e->fs, f->ip, off, out, want);
        if (r < 0)
            return r;
        got = (uint64_t)r;
    }
    memset(out + got, 0, n - got);
    for (unsigned k = 0; k < x->nmuts; k++)
        if (x->muts[k].file == fi)
            overlay(&x->muts[k], off, out, n);
    return (int64_t)n;
}

/* ---- the execute phase ------------------------------------------------- */

static int add_mut(struct fop_run *x, struct fop_mut m)
{
    if (x->nmuts == FOP_MAX_MUTS)
        return -E2BIG;
    x->muts[x->nmuts++] = m;
    return 0;
}

/* The first input of step i: an earlier output or the arena operand. */
static void input(const struct fop_run *x, unsigned i, const uint8_t **p, uint64_t *n)
{
    const struct fop_step *s = &x->v->st[i];
    if (s->in != WIRE_NO_STEP) {
        *p = x->buf[s->in];
        *n = x->olen[s->in];
    } else {
        *p = s->src;
        *n = s->src_len;
    }
}

/* Whether step j reads step i's output. */
static bool consumes(const struct fop_step *s, unsigned i)
{
    return s->in == i || s->in2 == i;
}

/* Whether PATCH step i may patch its input's buffer in place and take it
 * as its own output: a macro op (micro and autorec ops log outputs), the
 * input is an earlier step's buffer of ours (not a view, not the
 * arena), big enough, and read by no other step (a deferred WRITE of it
 * holds its bytes until the commit). Saves the copy of the input. */
static bool patch_in_place(const struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    unsigned in = s->in;
    if (s->kind != WIRE_STEP_PATCH || x->tx != WIRE_TX_MACRO || in == WIRE_NO_STEP ||
        s->in2 == in || x->view[in] || !x->buf[in] || x->bufsize[in] < s->cap)
        return false;
    for (unsigned j = in + 1; j < x->v->n; j++)
        if (j != i && consumes(&x->v->st[j], in))
            return false;
    return true;
}

static int alloc_out(struct fop_run *x, unsigned i)
{
    if (patch_in_place(x, i)) {   /* the input's buffer moves to step i */
        x->buf[i] = x->buf[x->v->st[i].in];
        x->bufsize[i] = x->bufsize[x->v->st[i].in];
        x->buf[x->v->st[i].in] = NULL;
        return 0;
    }
    x->buf[i] = fop_buf_get(x->e, x->v->st[i].cap, &x->bufsize[i]);
    return x->buf[i] ? 0 : -ENOMEM;
}

static int64_t ex_read(struct fop_run *x, unsigned i);

static int64_t ex_write(struct fop_run *x, unsigned i, bool append)
{
    const struct fop_step *s = &x->v->st[i];
    struct cfile *f = &x->files[x->sfile[i]];
    const uint8_t *p;
    uint64_t n;
    input(x, i, &p, &n);
    append = append || (x->sacc[i] & O_APPEND);
    uint64_t off = append ? f->vsize : s->off;
    if (off > (1ull << 60) || n > (1ull << 60) - off)
        return -EFBIG;
    int r = add_mut(x, (struct fop_mut){ .kind = MUT_WRITE, .step = (uint8_t)i,
                                          .file = x->sfile[i], .off = off, .data = p,
                                          .len = n });
    if (r)
        return r;
    if (off + n > f->vsize)
        f->vsize = off + n;
    if (s->kind == WIRE_STEP_APPEND)
        x->olen[i] = off;   /* APPEND reports where its data landed */
    return (int64_t)n;
}

static int64_t ex_truncate(struct fop_run *x, unsigned i, uint64_t size)
{
    struct cfile *f = &x->files[x->sfile[i]];
    if (f->vsize > size && f->vsize - size > x->lim.op_bytes)
        return -EFBIG;   /* its undo (the cut tail) would not fit device memory */
    int r = add_mut(x, (struct fop_mut){ .kind = MUT_TRUNC, .step = (uint8_t)i,
                                          .file = x->sfile[i], .off = size,
                                          .len = f->vsize });   /* size before: bounds the tail */
    if (!r)
        f->vsize = size;
    return r;
}

static int64_t ex_open(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    struct cfile *f = &x->files[x->sfile[i]];
    int r = 0;
    if (f->create && !f->create_mut) {   /* the first OPEN of a new file creates it */
        f->create_mut = true;
        r = add_mut(x, (struct fop_mut){ .kind = MUT_CREATE, .step = (uint8_t)i,
                                          .file = x->sfile[i] });
    }
    if (!r && (s->oflags & O_TRUNC) && (s->oflags & O_ACCMODE) != O_RDONLY && f->vsize)
        r = (int)ex_truncate(x, i, 0);   /* an empty file stays as it is (as eop_open) */
    return r;
}

static int64_t ex_unlink(struct fop_run *x, unsigned i)
{
    return add_mut(x, (struct fop_mut){ .kind = MUT_UNLINK, .step = (uint8_t)i,
                                         .file = x->sfile[i], .parent = x->uparent[i],
                                         .name = x->uname[i] });
}

static int64_t ex_close(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    if (!(s->flags & WIRE_STEP_F_FH))
        return 0;
    return add_mut(x, (struct fop_mut){ .kind = MUT_CLOSE_FH, .step = (uint8_t)i,
                                         .file = x->sfile[i], .fh = s->fh });
}

/* Second operand of VERIFY/PATCH/CONCAT. */
static void input2(const struct fop_run *x, unsigned i, const uint8_t **p, uint64_t *n)
{
    const struct fop_step *s = &x->v->st[i];
    if (s->in2 != WIRE_NO_STEP) {
        *p = x->buf[s->in2];
        *n = x->olen[s->in2];
    } else {
        *p = s->src;
        *n = s->src_len;
    }
}

/* A compute step; safe to run on any core in parallel with other steps
 * of its run (it writes only its own buffer, length and result). */
/* Autorec: a CRC32C step over a block operand (oplog.h "Adoption") is
 * the operand's CRC, summed as the receipt logged the bytes. */
static int64_t known_crc(struct fop_run *x, unsigned i)
{
    int r = alloc_out(x, i);
    if (r)
        return r;
    if (x->v->st[i].cap < 4)
        return -EOVERFLOW;   /* as the step itself (compute.c) */
    le32_put(x->buf[i], x->opnd_crc[i]);
    x->olen[i] = 4;
    return 4;
}

static int64_t ex_compute(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    if (s->kind == WIRE_STEP_BPF)
        return fop_bpf_exec(x, i);   /* a program of the registry */
    if (x->oplog && fop_oplog_crc_known(s, x->opnd_off[i]))
        return known_crc(x, i);
    struct cmp_io io = { .key_id = s->key_id, .keys = x->v->keys };
    uint64_t n;
    input(x, i, &io.in, &n);
    io.in_len = n;
    input2(x, i, &io.in2, &n);
    io.in2_len = n;
    memcpy(io.arg, s->arg, sizeof(io.arg));
    int r = alloc_out(x, i);
    uint8_t *copy = NULL;
    if (!r && step_has(s->kind, STEP_PARSER) && s->in == WIRE_NO_STEP && io.in_len) {
        /* Parsers read a private copy: the client may scribble on its arena. */
        copy = malloc(io.in_len);
        r = copy ? 0 : -ENOMEM;
        if (copy)
            io.in = memcpy(copy, io.in, io.in_len);
    }
    if (r)
        return r;
    io.out = x->buf[i];
    io.out_cap = s->cap;
    struct dm_step dm;
    dm_step_begin(&dm);
    r = cmp_run(s->kind, &io);
    dm_step_end(&dm);   /* the device model's core speed */
    free(copy);
    x->olen[i] = io.out_len;
    return r ? r : (int64_t)io.out_len;
}

static int64_t ex_step(struct fop_run *x, unsigned i)
{
    switch (x->v->st[i].kind) {
    case WIRE_STEP_OPEN: return ex_open(x, i);
    case WIRE_STEP_CLOSE: return ex_close(x, i);
    case WIRE_STEP_READ: return ex_read(x, i);
    case WIRE_STEP_WRITE: return ex_write(x, i, false);
    case WIRE_STEP_APPEND: return ex_write(x, i, true);
    case WIRE_STEP_TRUNCATE: return ex_truncate(x, i, x->v->st[i].off);
    case WIRE_STEP_FSYNC: return 0;   /* the commit is made durable */
    case WIRE_STEP_UNLINK: return ex_unlink(x, i);
    default: return ex_compute(x, i);
    }
}

/* Records step i's result and copies its output to the arena if asked. */
static void finish_step(struct fop_run *x, unsigned i, int64_t r)
{
    const struct fop_step *s = &x->v->st[i];
    x->v->res[i] = (struct wire_step_res){ r, r < 0 ? 0 : x->olen[i] };
    if (r >= 0 && (s->flags & WIRE_STEP_F_OUT_ARENA) && x->olen[i] <= s->dst_cap)
        memcpy(s->dst, x->buf[i], x->olen[i]);
}

/* ---- spreading work over free cores -------------------------------------- */

#define FAN_HELPERS_MAX 8u

typedef void (*fan_task)(struct fop_run *x, void *arg, unsigned t);

/* Work shared by a core running an op and the helpers it submitted: tasks
 * [0, count) of task(x, arg, t). The last of them to let go frees it
 * (helpers may run after the op ended; they then touch only this struct,
 * never x or arg). */
struct fan {
    struct fop_run *x;
    fan_task task;
    void *arg;
    unsigned count;
    unsigned next;              /* next task to claim (atomic) */
    unsigned done;              /* tasks finished (atomic; futex word) */
    unsigned refs;              /* atomic */
    struct eng_cmd helper[FAN_HELPERS_MAX];
};

static void fan_put(struct fan *f)
{
    if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(f);
}

/* Claims and runs tasks until none is left. */
static void fan_work(struct fan *f)
{
    for (;;) {
        unsigned t = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
        if (t >= f->count)
            return;
        f->task(f->x, f->arg, t);
        /* Release: the owner reads this task's results after seeing it. */
        if (__atomic_add_fetch(&f->done, 1, __ATOMIC_RELEASE) == f->count)
            syscall(SYS_futex, &f->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

int64_t eop_cisc_part(struct engine *e, struct eng_cmd *c)
{
    fan_work(c->part);
    return 0;
}

static void helper_done(struct eng_cmd *c)
{
    fan_put(c->part);
}

/* Runs task(x, arg, t) for t in [0, count), spread over free cores; the
 * calling core takes its share. Returns when every task has finished. */
static void fan_run(struct fop_run *x, unsigned count, fan_task task, void *arg)
{
    struct fan *f = calloc(1, sizeof(*f));
    if (!f) {
        for (unsigned t = 0; t < count; t++)
            task(x, arg, t);
        return;
    }
    unsigned nh = count - 1 < x->e->cores - 1 ? count - 1 : x->e->cores - 1;
    nh = nh < FAN_HELPERS_MAX ? nh : FAN_HELPERS_MAX;
    *f = (struct fan){ .x = x, .task = task, .arg = arg, .count = count, .refs = 1 + nh };
    for (unsigned h = 0; h < nh; h++) {
        struct eng_cmd *c = &f->helper[h];
        eng_cmd_init(c, ENG_OP_CISC_PART, x->cred);
        c->part = f;
        c->done = helper_done;
        if (eng_submit_handoff(x->e, c))
            fan_put(f);   /* shutting down: this share is ours */
    }
    fan_work(f);
    unsigned d;
    /* Acquire: pairs with the release increment in fan_work. */
    while ((d = __atomic_load_n(&f->done, __ATOMIC_ACQUIRE)) < count)
        syscall(SYS_futex, &f->done, FUTEX_WAIT_PRIVATE, d, NULL, NULL, 0);
    fan_put(f);
}

/* Task t of a run of independent compute steps starting at *(unsigned *)arg. */
static void step_task(struct fop_run *x, void *arg, unsigned t)
{
    unsigned i = *(const unsigned *)arg + t;
    finish_step(x, i, ex_compute(x, i));
}

/* ---- READ, in pieces on free cores when large ------------------------------- */

/* A READ of at least two pieces is cut into pieces of about this size (at
 * most READ_PIECES of them): small enough that a core that is slow to
 * start (another process has the CPU) holds up little, large enough for
 * long contiguous reads. */
#define READ_PIECE (1ull << 20)
#define READ_PIECES 16u

/* One READ step cut into pieces (the tasks of a fan). */
struct read_pieces {
    unsigned fi;                 /* files[] index */
    uint64_t off, len, piece;    /* the step's range; bytes per piece */
    uint8_t *buf;
    int64_t got[READ_PIECES];
};

static uint64_t piece_len(const struct read_pieces *r, unsigned t)
{
    uint64_t o = (uint64_t)t * r->piece;
    return r->len - o < r->piece ? r->len - o : r->piece;
}

static void read_task(struct fop_run *x, void *arg, unsigned t)
{
    struct read_pieces *r = arg;
    uint64_t o = (uint64_t)t * r->piece;
    r->got[t] = fop_vread(x, r->fi, r->off + o, r->buf + o, piece_len(r, t));
}

/* Reads step i's range in k pieces, spread over free cores. The result
 * is what one fop_vread of the whole range gives: the bytes up to the
 * first short piece (end of file), or the first piece's error. */
static int64_t read_spread(struct fop_run *x, unsigned i, unsigned k)
{
    const struct fop_step *s = &x->v->st[i];
    struct read_pieces r = { .fi = x->sfile[i], .off = s->off, .len = s->len, .buf = x->buf[i] };
    r.piece = ((s->len + k - 1) / k + 4095) & ~4095ull;   /* whole blocks: no bounce copies */
    unsigned count = (unsigned)((s->len + r.piece - 1) / r.piece);   /* <= k */
    fan_run(x, count, read_task, &r);
    int64_t total = 0;
    for (unsigned t = 0; t < count; t++) {
        if (r.got[t] < 0)
            return total ? total : r.got[t];
        total += r.got[t];
        if ((uint64_t)r.got[t] < piece_len(&r, t))
            break;
    }
    return total;
}

/* ---- Views: READ output shown in place ---------------------------------------
 *
 * A READ whose bytes only bpf steps consume is not copied when StorageFS
 * can show the range where it is (map_read.h: the mapped media, written
 * extents consecutive on the image, nothing newer in the journal): the
 * step's buffer is then the view itself (x->view[i]), never freed.
 * Why the view stays the file's bytes while the op uses it:
 *   - the op holds a reference to the file (prep.c) and its stripe, shared
 *     at least: truncation, hole punching and mutating fused ops take it
 *     exclusively, so no block of the range is freed or reused, and no
 *     data-journaled write (which would put newer bytes in the cache,
 *     map_read.h invariant 2) starts on it until the op ends;
 *   - the op itself does not change the file (not `mutated`) and is a
 *     macro op (micro and autorec ops commit or log outputs mid-op);
 *   - a write through the mount (or a copy_file_range into the file) holds
 *     the stripe shared and may overwrite the blocks in place while the
 *     program reads them: the program may then see part of that write, as
 *     a Linux read racing a write may (page cache reads take no lock).
 *     Writes that returned before the op began are always seen, stale or
 *     freed blocks never. Memory safety does not depend on the bytes
 *     staying put: the verifier assumes nothing about input bytes (each
 *     load is an unknown scalar) and helpers are bounded by pointer and
 *     length, not by contents. So a bpf step reads a view in place
 *     (bpfstep.c), and only bpf steps may consume one: a WRITE or a
 *     parser expects the bytes the READ returned, fixed.
 * Anything else falls back to the copy (fop_vread), as before. */

/* Whether READ step i may hand out a view (above). */
static bool view_allowed(const struct fop_run *x, unsigned i)
{
    const struct cfile *f = &x->files[x->sfile[i]];
    if (x->tx != WIRE_TX_MACRO || !f->ino || f->mutated || f->vsize != f->base_size)
        return false;
    for (unsigned j = i + 1; j < x->v->n; j++)
        if (consumes(&x->v->st[j], i) && x->v->st[j].kind != WIRE_STEP_BPF)
            return false;
    return true;
}

/* READ step i as a view: its length, or -EAGAIN (then it is copied). */
static int64_t read_view(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    const struct cfile *f = &x->files[x->sfile[i]];
    if (!view_allowed(x, i) || s->off >= f->base_size)
        return -EAGAIN;
    uint64_t want = s->len < f->base_size - s->off ? s->len : f->base_size - s->off;
    const uint8_t *p;
    ssize_t n = sfs_read_view(x->e->fs, f->ino, s->off, (size_t)want, &p);
    if (n <= 0 || (uint64_t)n != want)
        return -EAGAIN;   /* errors too: the copy reports them as it always did */
    x->buf[i] = (uint8_t *)p;   /* read only: its consumers are bpf steps */
    x->view[i] = true;
    x->olen[i] = (uint64_t)n;
    return n;
}

static int64_t ex_read(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    int64_t v = read_view(x, i);
    if (v != -EAGAIN)
        return v;
    int r = alloc_out(x, i);
    if (r)
        return r;
    uint64_t k = (s->len + READ_PIECE - 1) / READ_PIECE;
    k = k < READ_PIECES ? k : READ_PIECES;
    int64_t n = k >= 2 && x->e->cores > 1 ? read_spread(x, i, (unsigned)k)
                       : fop_vread(x, x->sfile[i], s->off, x->buf[i], s->len);
    if (n >= 0)
        x->olen[i] = (uint64_t)n;
    return n;
}

/* Length of the run of independent compute steps starting at i in which
 * no step uses another's output. */
static unsigned independent_run(const struct eng_cisc *v, unsigned i)
{
    unsigned j = i;
    while (j < v->n && (v->st[j].flags & WIRE_STEP_F_INDEPENDENT) &&
           step_has(v->st[j].kind, STEP_COMPUTE)) {
        const struct fop_step *s = &v->st[j];
        if ((s->in != WIRE_NO_STEP && s->in >= i) || (s->in2 != WIRE_NO_STEP && s->in2 >= i))
            break;
        j++;
    }
    return j - i;
}

/* The coarse monotonic clock's resolution (it lags CLOCK_MONOTONIC by
 * less than that), read once. */
static uint64_t coarse_res_ns(void)
{
    static uint64_t res;   /* 0: not read yet (a benign race: same value) */
    uint64_t r = __atomic_load_n(&res, __ATOMIC_RELAXED);
    if (!r) {
        struct timespec ts;
        r = clock_getres(CLOCK_MONOTONIC_COARSE, &ts) ? UINT64_MAX / 2
                                                       : (uint64_t)ts.tv_sec * 1000000000u +
                                                             (uint64_t)ts.tv_nsec + 1;
        __atomic_store_n(&res, r, __ATOMIC_RELAXED);
    }
    return r;
}

/* Whether the op is certainly inside its deadline, from the coarse clock
 * (a few ns, no timer read): most checks end here; near the deadline the
 * precise clock decides. */
static bool surely_in_time(uint64_t deadline)
{
    uint64_t res = coarse_res_ns();
    return deadline > res && clock_ns(CLOCK_MONOTONIC_COARSE) < deadline - res;
}

/* Within a bpf step the same bounds are checked at every block. Each
 * check is also a preemption point: a macro op may be parked there for
 * another tenant (device/sched/sched.h); time parked is not its own. */
int fop_op_bound(const struct fop_run *x)
{
    if (__atomic_load_n(&x->e->cancel, __ATOMIC_RELAXED))
        return -ECANCELED;
    sched_preempt_point();
    uint64_t deadline = x->deadline_ns + sched_off_core_ns();
    if (surely_in_time(deadline) || now_ns() <= deadline)
        return 0;
    sched_note_terminated(x->e->sched, &x->cmd->item);   /* charged, counted */
    return -ETIME;
}

void fop_step_run(struct fop_run *x, unsigned i)
{
    finish_step(x, i, ex_step(x, i));
}

/* Runs every step; returns 0 or the first failure (marked in v). */
static int execute(struct fop_run *x)
{
    struct eng_cisc *v = x->v;
    if (x->tx != WIRE_TX_MACRO)
        return fop_execute_micro(x);   /* micro.c */
    for (unsigned i = 0; i < v->n;) {
        int r = fop_op_bound(x);
        if (r) {
            fop_fail(v, i, r);
            return r;
        }
        unsigned run = independent_run(v, i);
        if (run >= 2 && x->e->cores > 1) {
            fan_run(x, run, step_task, &i);
        } else {
            run = 1;
            finish_step(x, i, ex_step(x, i));
        }
        for (unsigned j = i; j < i + run; j++)
            if (v->res[j].ret < 0) {
                fop_fail(v, j, v->res[j].ret);
                return (int)v->res[j].ret;
            }
        for (unsigned j = i; j < i + run; j++)
            fop_crash_step(x, j);
        i += run;
    }
    return 0;
}

/* ---- the op ------------------------------------------------------------- */

static void free_bufs(struct fop_run *x)
{
    for (unsigned i = 0; i < x->v->n; i++)
        if (!x->view[i])   /* a view is the media's */
            fop_buf_put(x->e, x->buf[i], x->bufsize[i]);
}

/* Phases 3-4 with the stripes held. */
static int run_locked(struct fop_run *x)
{
    int r = files_sizes(x);
    if (r) {
        fop_res_fill(x->v, -ECANCELED);
        fop_fail(x->v, 0, r);
        return r;
    }
    x->deadline_ns = now_ns() + x->e->op_time_ns;   /* device time starts here */
    /* Autorec logs with the stripes held: logs of unfinished ops name
     * disjoint files, and log order is execution order (micro.c). */
    if (x->tx == WIRE_TX_AUTOREC && (r = fop_autorec_begin(x)) != 0)
        return r;
    r = execute(x);
    if (r && x->tx != WIRE_TX_MACRO && x->applied)
        fop_apply(x);   /* micro: what committed stays; its handles and changes */
    return r ? r : fop_apply(x);
}

/* Fresh execution state for v (only what the phases read before they
 * write: the struct is large and most of it stays unused). */
static void run_init(struct fop_run *x, struct engine *e, struct eng_cmd *c,
                     struct eng_cisc *v)
{
    x->e = e;
    x->cred = &c->cred;
    x->hdl = eng_hdl(e, c);
    x->cmd = c;
    x->v = v;
    eng_fop_limits(e, &x->lim);
    x->nfiles = x->nclosed_fh = x->nns = x->nmuts = x->ndead = 0;
    x->fsync = false;
    x->insns = 0;
    x->tx = v->tx > e->tx ? v->tx : e->tx;
    x->commit_step = fop_commit_step(v);
    x->applied = x->unsynced = false;
    x->oplog = 0;
    x->pre = x->oplog_reserved = x->recorded = 0;
    for (unsigned i = 0; i < v->n; i++) {
        /* One pass: without this barrier the compiler splits the loop
         * into a memset call per array (ten calls to clear three steps,
         * 5% of a small op's instructions). */
        __asm__ volatile("" ::: "memory");
        x->opnd_off[i] = 0;
        x->failed[i] = false;
        x->sfile[i] = FOP_NOFILE;
        x->sacc[i] = 0;
        x->closed[i] = false;
        x->uparent[i] = 0;
        x->buf[i] = NULL;
        x->view[i] = false;
        x->olen[i] = 0;
        x->prog[i] = NULL;
        x->stream[i] = NULL;
    }
}

/* Execution state is large (tens of KiB): each thread that runs ops keeps
 * one, freed when the thread exits, instead of a malloc/free per op. */
static pthread_key_t run_key;
static pthread_once_t run_once = PTHREAD_ONCE_INIT;

static void make_run_key(void)
{
    pthread_key_create(&run_key, free);
}

static struct fop_run *thread_run(void)
{
    pthread_once(&run_once, make_run_key);
    struct fop_run *x = pthread_getspecific(run_key);
    if (!x && (x = malloc(sizeof(*x))) != NULL)
        pthread_setspecific(run_key, x);
    return x;
}

/* Whether step i appends: an APPEND, or a WRITE on an O_APPEND file. */
static bool step_appends(const struct fop_run *x, unsigned i)
{
    unsigned k = x->v->st[i].kind;
    return k == WIRE_STEP_APPEND || (k == WIRE_STEP_WRITE && (x->sacc[i] & O_APPEND));
}

/* With the stripes held: parks c while a mount write(2) holds the end of
 * a file the op appends to (lease.h). Returns true when parked. */
static bool parked_on_lease(struct fop_run *x, struct eng_cmd *c)
{
    for (unsigned i = 0; i < x->v->n; i++) {
        uint64_t ino = x->sfile[i] == FOP_NOFILE ? 0 : x->files[x->sfile[i]].ino;
        if (ino && step_appends(x, i) &&
            lease_enter(x->e->lease, ino, &(struct lease_who){ x->hdl, 0 }, c))
            return true;
    }
    return false;
}

int64_t eop_cisc(struct engine *e, struct eng_cmd *c)
{
    struct eng_cisc *v = c->cisc;
    if (!v || v->n == 0 || v->n > WIRE_MAX_STEPS)
        return -EINVAL;
    if (v->status)
        return v->status;   /* decode refused it */
    struct fop_run *x = thread_run();
    if (!x)
        return -ENOMEM;
    run_init(x, e, c, v);
    int r = fop_prepare(x);
    if (!r) {
        struct stripes sp;
        fop_mem_reserve(e, v->mem);
        c->mem_held = v->mem;   /* given back once it leaves its core: fop_mem_done */
        stripes_collect(x, &sp);
        stripes_lock(e, &sp);
        bool parked = parked_on_lease(x, c);
        r = parked ? 0 : run_locked(x);
        stripes_unlock(e, &sp);
        if (parked)
            fop_mem_done(e, c);   /* it starts again from nothing */
        free_bufs(x);   /* large ones may stay as spares (counted, invariant 1) */
        if (parked) {
            fop_unprepare(x);
            return ENG_PARKED;   /* runs again, from the start, when the lease ends */
        }
    }
    if (x->oplog)
        fop_oplog_end(x, r != 0);   /* the op is complete: its operational log goes */
    fop_unprepare(x);
    v->ran = 0;
    for (unsigned i = 0; i < v->n; i++)
        v->ran += v->res[i].ret >= 0;
    v->status = r;
    return r;
}

void fop_mem_done(struct engine *e, struct eng_cmd *c)
{
    if (c->mem_held)
        fop_mem_release(e, c->mem_held);
    c->mem_held = 0;
}

int64_t fop_exec(struct engine *e, const struct eng_cred *cred, struct eng_cisc *v)
{
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_CISC, cred);
    c.cisc = v;
    int64_t r = eng_call(e, &c);
    if (r < 0 && v->status == 0) {   /* never reached the op (shutdown) */
        fop_res_fill(v, -ECANCELED);
        v->status = r;
    }
    return v->status;
}
