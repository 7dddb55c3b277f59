/* device/engine/fused/micro.c - MicroTx (fused.h "Transaction modes",
 * FusionFS §4.4.2-4.4.3): the execute phase of an op whose mutating steps
 * commit one by one, with the error semantics of §4.4.3 (a failing step
 * cancels the later steps that depend on it, directly or through another;
 * independent later steps still run; what committed stays committed);
 * and the crash points of macro ops' execute phase. */
#include "device/engine/fused/fused_int.h"
#include "device/engine/fused/crash.h"
#include "device/engine/fused/oplog.h"

#include <string.h>

#include <errno.h>
#include <fcntl.h>

bool fop_step_may_mutate(const struct fop_step *s)
{
    switch (s->kind) {
    case WIRE_STEP_WRITE: case WIRE_STEP_APPEND: case WIRE_STEP_TRUNCATE:
    case WIRE_STEP_UNLINK:
        return true;
    case WIRE_STEP_OPEN:
        return (s->oflags & (O_CREAT | O_TRUNC)) != 0;
    default:
        return false;
    }
}

unsigned fop_commit_step(const struct eng_cisc *v)
{
    for (unsigned i = v->n; i-- > 0;)
        if (fop_step_may_mutate(&v->st[i]))
            return i;
    return v->n - 1;
}

void fop_crash_step(const struct fop_run *x, unsigned i)
{
    if (x->tx == WIRE_TX_MACRO && i == x->commit_step)
        return;   /* the op's one commit: fop_apply fires its points */
    fop_crash_point(FOP_CRASH_BEFORE_COMMIT, i);
    fop_crash_after(x, i);
}

void fop_crash_after(const struct fop_run *x, unsigned i)
{
    /* The journal may commit its running transaction at any moment (its
     * timer, another op's fsync, a full ring): the point stands for a
     * power cut right after one that came just after step i. The steps
     * so far are in it whole, the later ones not yet (micro_step). */
    if (x->tx == WIRE_TX_MICRO && x->unsynced && fop_crash_armed(FOP_CRASH_AFTER_COMMIT, i))
        sfs_sync(x->e->fs);
    fop_crash_point(FOP_CRASH_AFTER_COMMIT, i);
}

/* Whether step i takes an input or a file from a step that failed or
 * was cancelled. */
static bool depends_on_failure(const struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    uint16_t ref[3] = { s->in, s->in2, s->file };
    for (unsigned k = 0; k < 3; k++)
        if (ref[k] != WIRE_NO_STEP && x->failed[ref[k]])
            return true;
    return false;
}

/* After step i committed: the committed size is the base that later
 * steps' copy-on-write decisions and reads go by. */
static void rebase(struct fop_run *x, unsigned i)
{
    if (x->sfile[i] == FOP_NOFILE)
        return;
    struct cfile *f = &x->files[x->sfile[i]];
    struct sfs_attr a;
    if (f->ip && sfs_getattr_ino(x->e->fs, f->ip, &a) == 0)
        f->base_size = a.size;
}

int fop_autorec_begin(struct fop_run *x)
{
    const struct fop_replay *rp = x->v->replay;
    if (rp) {
        x->oplog = rp->oplog;
        x->oplog_size = rp->oplog_size;
        memcpy(x->oplog_name, rp->name, sizeof(x->oplog_name));
        x->recorded = rp->done;
        memcpy(x->opnd_off, rp->opnd_off, x->v->n * sizeof(x->opnd_off[0]));
        memcpy(x->opnd_crc, rp->opnd_crc, x->v->n * sizeof(x->opnd_crc[0]));
        return 0;
    }
    unsigned bad = 0;
    int r = fop_oplog_supported(x, &bad);
    if (!r)
        r = fop_oplog_begin(x, &bad);
    if (r) {
        fop_res_fill(x->v, -ECANCELED);
        fop_fail(x->v, bad, r);
    }
    return r;
}

/* Recovery: step i committed before the crash; its logged result and
 * output stand in for running it. */
static int64_t replayed_step(struct fop_run *x, unsigned i)
{
    const struct fop_replay *rp = x->v->replay;
    x->olen[i] = rp->out_len[i];
    if (rp->out[i]) {
        x->buf[i] = fop_buf_get(x->e, rp->out_len[i], &x->bufsize[i]);
        if (!x->buf[i])
            return -ENOMEM;
        memcpy(x->buf[i], rp->out[i], rp->out_len[i]);
    }
    x->v->res[i] = (struct wire_step_res){ rp->ret[i], rp->out_len[i] };
    return rp->ret[i];
}

/* Autorec: a step that committed nothing of its own logs its output when
 * a later step takes it (a durable transaction of its own). */
static int log_unapplied(struct fop_run *x, unsigned i)
{
    if (!x->oplog || !fop_oplog_needs_output(x, i))
        return 0;
    return fop_oplog_step(x, NULL, i);
}

/* Runs and commits step i; returns its result (>= 0) or -errno. A
 * failure leaves no trace of the step: its mutations are dropped (and
 * undone if they were being applied) and its file's view restored. */
static int64_t micro_step(struct fop_run *x, unsigned i)
{
    if (x->v->replay && (x->v->replay->done >> i & 1))
        return replayed_step(x, i);
    if (x->pre >> i & 1)
        return x->v->res[i].ret;   /* ran before the log (oplog.h "Keys") */
    struct cfile *f = x->sfile[i] == FOP_NOFILE ? NULL : &x->files[x->sfile[i]];
    uint64_t vsize = f ? f->vsize : 0;
    bool create_mut = f ? f->create_mut : false;
    unsigned k0 = x->nmuts;
    fop_step_run(x, i);
    int64_t r = x->v->res[i].ret;
    bool applied = false;
    if (r >= 0) {
        int a = fop_apply_step(x, i, k0, &applied);
        if (!a && !applied)
            a = log_unapplied(x, i);
        r = a ? a : r;
    }
    if (r < 0) {
        x->nmuts = k0;
        if (f) {
            f->vsize = vsize;
            f->create_mut = create_mut;
        }
        return r;
    }
    if (applied)
        rebase(x, i);
    else
        fop_crash_step(x, i);
    return r;
}

int fop_execute_micro(struct fop_run *x)
{
    struct eng_cisc *v = x->v;
    for (unsigned i = 0; i < v->n; i++) {
        if (x->failed[i])
            continue;   /* replay: failed its check (prep.c), reported already */
        int64_t r = depends_on_failure(x, i) ? -ECANCELED : fop_op_bound(x);
        if (!r)
            r = micro_step(x, i);   /* past the op's bound no step starts */
        if (r < 0) {
            x->failed[i] = true;
            if (r == -ECANCELED)
                v->res[i] = (struct wire_step_res){ -ECANCELED, 0 };
            else
                fop_fail_one(v, i, r);
        }
    }
    return (int)v->status;
}
