/* device/engine/fused/oplog.c - the operational log's writer (oplog.h):
 * what autorec covers, the log files, log space, and the records of a
 * running op. Records are encoded by oplog_rec.c; recovery is
 * oplog_recover.c (oplog_int.h). */
#include "device/engine/fused/oplog_int.h"
#include "device/engine/fused/crash.h"
#include "device/engine/sysdir.h"

#include "common/crc32c.h"
#include "proto/steps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <time.h>

#define LOG_WAIT_MS 2000          /* an op waits this long for log space, then -ENOSPC */

/* ---- what autorec covers ------------------------------------------------ */

/* Whether step i can run before the op's log is written: a built-in
 * compute step whose inputs are arena operands or such steps (no file
 * content, no program). */
static bool prerunnable(const struct eng_cisc *v, unsigned i, const bool *ok)
{
    const struct fop_step *s = &v->st[i];
    return step_has(s->kind, STEP_COMPUTE) && s->kind != WIRE_STEP_BPF &&
           (s->in == WIRE_NO_STEP || ok[s->in]) && (s->in2 == WIRE_NO_STEP || ok[s->in2]);
}

bool oplog_keyed(const struct fop_step *s)
{
    return s->kind == WIRE_STEP_ENCRYPT || s->kind == WIRE_STEP_DECRYPT;
}

/* The steps run before the log (oplog.h "Keys"): the keyed steps and
 * the steps they take input from. 0 when a keyed step cannot run early
 * (*bad: it). */
static uint64_t prerun_mask(const struct eng_cisc *v, unsigned *bad)
{
    bool ok[WIRE_MAX_STEPS];
    uint64_t want = 0;
    for (unsigned i = 0; i < v->n; i++) {
        ok[i] = prerunnable(v, i, ok);
        if (oplog_keyed(&v->st[i]) && !ok[i]) {
            *bad = i;
            return UINT64_MAX;
        }
        if (oplog_keyed(&v->st[i]))
            want |= 1ull << i;
    }
    for (unsigned i = v->n; i-- > 0;) {
        const struct fop_step *s = &v->st[i];
        if (!(want >> i & 1))
            continue;
        if (s->in != WIRE_NO_STEP)
            want |= 1ull << s->in;
        if (s->in2 != WIRE_NO_STEP)
            want |= 1ull << s->in2;
    }
    return want;
}

int fop_oplog_supported(const struct fop_run *x, unsigned *bad)
{
    for (unsigned i = 0; i < x->v->n; i++) {
        const struct fop_step *s = &x->v->st[i];
        bool no = (s->flags & WIRE_STEP_F_FH) || (s->kind == WIRE_STEP_BPF && s->stream);
        if (no) {
            *bad = i;
            return -EOPNOTSUPP;
        }
    }
    return prerun_mask(x->v, bad) == UINT64_MAX ? -EOPNOTSUPP : 0;
}

bool fop_oplog_crc_known(const struct fop_step *s, uint64_t opnd_off)
{
    return opnd_off && s->kind == WIRE_STEP_CRC32C && s->in == WIRE_NO_STEP &&
           (uint32_t)s->arg[0] == 0;
}

/* Whether step j, another step with the same block operand as an
 * adopting step, no longer needs the operand's bytes in the log: its
 * result is the logged CRC, or its record is in the log (it is never
 * run again), or it ran before the log. */
static bool opnd_spent(const struct fop_run *x, unsigned j)
{
    return fop_oplog_crc_known(&x->v->st[j], x->opnd_off[j]) || (x->recorded >> j & 1) ||
           (x->pre >> j & 1);
}

uint64_t fop_oplog_adopt_from(const struct fop_run *x, unsigned i, uint64_t off,
                              const uint8_t *data, uint64_t len)
{
    const struct fop_step *s = &x->v->st[i];
    uint64_t from = x->opnd_off[i];
    if (!x->oplog || !from || data != s->src || len != s->src_len || len < SFS_BLOCK_SIZE ||
        off % SFS_BLOCK_SIZE)
        return 0;
    for (unsigned j = 0; j < x->v->n; j++)
        if (j != i && x->opnd_off[j] == from && !opnd_spent(x, j))
            return 0;   /* a step still to run (or to run again) reads the bytes */
    return from;
}

bool fop_oplog_needs_output(const struct fop_run *x, unsigned i)
{
    if ((x->v->st[i].flags & WIRE_STEP_F_OUT_ARENA) && x->olen[i] <= FOP_REC_OUT_MAX)
        return true;   /* kept for the recovery record */
    for (unsigned j = i + 1; j < x->v->n; j++)
        if (x->v->st[j].in == i || x->v->st[j].in2 == i)
            return true;
    return false;
}

/* ---- the log files ---------------------------------------------------- */

static int oplog_dir(struct engine *e, uint64_t *dir)
{
    uint64_t d = __atomic_load_n(&e->oplog_dir, __ATOMIC_ACQUIRE);
    if (d) {
        *dir = d;
        return 0;
    }
    int r = sysdir_open(e->fs, OPLOG_SUB, &d);   /* idempotent: racing callers agree */
    if (!r)
        __atomic_store_n(&e->oplog_dir, d, __ATOMIC_RELEASE);
    *dir = d;
    return r;
}

/* An op's name, sorting in submission order: wall-clock ns and a
 * counter (oplog_op_name prints it). */
static void op_stamp(uint64_t *stamp, uint32_t *seq)
{
    static uint32_t count;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *stamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    *seq = __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
}

/* ---- slots (oplog.h "Slots") ------------------------------------------------ */

/* The engine's log files: slot k is /.cisc-system/oplog/slot-NNNN. */
struct oplog_pool {
    struct oplog_slot {
        uint64_t ino;            /* 0: not looked up or created yet */
        bool busy;               /* a running op's, or kept (not reusable) */
    } *s;
    unsigned n;
};

static void slot_name(char *name, unsigned k)
{
    snprintf(name, OPLOG_NAME_MAX, SLOT_PREFIX "%04u", k);
}

/* Takes a free slot (a new one when all are busy). Returns its index, or
 * -ENOMEM. */
static int slot_take(struct engine *e, uint64_t *ino)
{
    int k = -ENOMEM;
    pthread_mutex_lock(&e->oplog_mu);
    struct oplog_pool *p = e->oplog_pool;
    if (!p)
        p = e->oplog_pool = calloc(1, sizeof(*p));
    for (unsigned i = 0; p && k < 0 && i < p->n; i++)
        if (!p->s[i].busy)
            k = (int)i;
    if (p && k < 0) {
        struct oplog_slot *q = realloc(p->s, (p->n + 1) * sizeof(*q));
        if (q) {
            p->s = q;
            q[p->n] = (struct oplog_slot){ 0, false };
            k = (int)p->n++;
        }
    }
    if (k >= 0) {
        p->s[k].busy = true;
        *ino = p->s[k].ino;
    }
    pthread_mutex_unlock(&e->oplog_mu);
    return k;
}

/* Gives slot k back (ino: its file, 0 when it has none); kept: it holds a
 * log that must stay (never given out again while the device runs). */
static void slot_give(struct engine *e, unsigned k, uint64_t ino, bool kept)
{
    pthread_mutex_lock(&e->oplog_mu);
    e->oplog_pool->s[k].ino = ino;
    e->oplog_pool->s[k].busy = kept;
    pthread_mutex_unlock(&e->oplog_mu);
}

void fop_oplog_free(struct engine *e)
{
    if (e->oplog_pool)
        free(e->oplog_pool->s);
    free(e->oplog_pool);
    e->oplog_pool = NULL;
}

/* The index of x's slot, or -1 (a log recovery found: not the pool's). */
static int slot_of(const struct fop_run *x)
{
    unsigned k;
    if (!x->e->oplog_pool || !oplog_is_slot(x->oplog_name) ||
        sscanf(x->oplog_name + strlen(SLOT_PREFIX), "%u", &k) != 1 || k >= x->e->oplog_pool->n)
        return -1;
    return (int)k;
}

/* Finds slot k's file inside tx: looks it up the first time (a file from
 * an earlier run: reused only when oplog_slot_reusable; *kept when not),
 * creates it when there is none. */
static int slot_open(struct fop_run *x, struct sfs_txn *tx, uint64_t dir, unsigned k,
                     uint64_t *ino, bool *kept)
{
    struct sfs_attr a;
    *kept = false;
    if (*ino)
        return 0;
    slot_name(x->oplog_name, k);
    int r = sfs_lookup(x->e->fs, dir, x->oplog_name, &a);
    if (!r) {
        *kept = !oplog_slot_reusable(x->e->fs, a.ino);
        *ino = a.ino;
        return 0;
    }
    if (r == -ENOENT)
        r = sfs_mknod(x->e->fs, tx, dir, x->oplog_name, S_IFREG | 0600, 0, 0, 0, &a);
    if (!r)
        *ino = a.ino;
    return r;
}

/* Cuts log file ino to size inside tx when it is longer (0: a slot's
 * "free"). */
static int slot_cut(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t size)
{
    struct sfs_attr a = { 0 };
    int r = sfs_getattr(fs, ino, &a);
    if (r || a.size <= size)
        return r;
    a.size = size;
    return sfs_setattr(fs, tx, ino, &a, SFS_SET_SIZE, NULL);
}

static int slot_clear(struct sfs *fs, struct sfs_txn *tx, uint64_t ino)
{
    return slot_cut(fs, tx, ino, 0);
}

/* A log up to this size, without block operands, is written over its
 * slot's blocks in a data-journaled receipt (oplog.h "Slots"). */
#define SLOT_OVERWRITE_MAX (64u << 10)

static bool overwrites(const struct opnds *ops)
{
    return ops->n == 0 && ops->end <= SLOT_OVERWRITE_MAX;
}

static int write_all(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t off,
                     const void *p, size_t n)
{
    ssize_t w = sfs_write(fs, tx, ino, off, p, n);
    return w == (ssize_t)n ? 0 : w < 0 ? (int)w : -ENOSPC;
}

/* Runs the steps of mask (oplog.h "Keys") before the op is logged.
 * Returns 0 or the first failure's -errno (*bad: its step). */
static int prerun(struct fop_run *x, uint64_t mask, unsigned *bad)
{
    for (unsigned i = 0; i < x->v->n; i++) {
        if (!(mask >> i & 1))
            continue;
        fop_step_run(x, i);
        if (x->v->res[i].ret < 0) {
            *bad = i;
            return (int)x->v->res[i].ret;
        }
        x->pre |= 1ull << i;
    }
    return 0;
}

/* ---- log space ("Space" in oplog.h) ------------------------------------- */

/* Reserves n bytes of the engine's log space, waiting up to LOG_WAIT_MS
 * while other ops hold it. Returns 0 or -ENOSPC. */
static int space_take(struct engine *e, uint64_t n)
{
    if (n > e->tx_log_max)
        return -ENOSPC;   /* never fits */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += LOG_WAIT_MS / 1000;
    until.tv_nsec += (LOG_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int r = 0;
    pthread_mutex_lock(&e->oplog_mu);
    while (!r && e->oplog_used + n > e->tx_log_max)
        r = pthread_cond_timedwait(&e->oplog_cv, &e->oplog_mu, &until) ? -ENOSPC : 0;
    if (!r)
        e->oplog_used += n;
    pthread_mutex_unlock(&e->oplog_mu);
    return r;
}

static void space_give(struct engine *e, uint64_t n)
{
    if (!n)
        return;
    pthread_mutex_lock(&e->oplog_mu);
    e->oplog_used -= n;
    pthread_cond_broadcast(&e->oplog_cv);
    pthread_mutex_unlock(&e->oplog_mu);
}

void fop_oplog_space(struct engine *e, uint64_t *max, uint64_t *entry, uint64_t *used)
{
    pthread_mutex_lock(&e->oplog_mu);
    *max = e->tx_log_max;
    *entry = e->tx_log_entry;
    *used = e->oplog_used;
    pthread_mutex_unlock(&e->oplog_mu);
}

uint64_t fop_oplog_adopted(struct engine *e)
{
    return __atomic_load_n(&e->oplog_adopted, __ATOMIC_RELAXED);
}

/* ---- writing the log ------------------------------------------------------ */

/* Appends step i's record to the log inside tx (and its output's log
 * blocks). */
static int append_step(struct fop_run *x, struct sfs_txn *tx, unsigned i)
{
    struct obuf b = { 0 };
    uint64_t ext;
    oplog_encode_step(x, i, x->oplog_size, &b, &ext);
    int r = b.err ? b.err : write_all(x->e->fs, tx, x->oplog, x->oplog_size, b.p, b.len);
    if (!r && ext)
        r = write_all(x->e->fs, tx, x->oplog, ext, x->buf[i], x->olen[i]);
    if (!r) {
        x->oplog_size = ext ? ext + x->olen[i] : x->oplog_size + b.len;
        x->recorded |= 1ull << i;
    }
    free(b.p);
    return r;
}

#define OPND_CHUNK (256u << 10)   /* a block operand is copied and summed this much at once */

/* The block operands' bytes, into the blocks fallocated for them: each
 * piece copied out of the client's arena first and summed from the copy,
 * so that the CRC is that of the bytes logged whatever the client does
 * to its arena meanwhile (and a steady writer keeps few extents). */
static int write_opnds(struct fop_run *x, struct sfs_txn *tx, uint64_t ino, struct opnds *ops)
{
    if (!ops->n)
        return 0;
    uint64_t first = ops->o[0].off;
    int r = sfs_fallocate(x->e->fs, tx, ino, SFS_FALLOC_KEEP_SIZE, first, ops->end - first);
    uint8_t *bounce = r ? NULL : malloc(OPND_CHUNK);
    if (!r && !bounce)
        r = -ENOMEM;
    for (unsigned k = 0; !r && k < ops->n; k++) {
        struct opnd *o = &ops->o[k];
        o->crc = 0;
        for (uint64_t at = 0; !r && at < o->len; at += OPND_CHUNK) {
            size_t n = o->len - at < OPND_CHUNK ? (size_t)(o->len - at) : OPND_CHUNK;
            memcpy(bounce, o->p + at, n);
            o->crc = crc32c(o->crc, bounce, n);
            r = write_all(x->e->fs, tx, ino, o->off + at, bounce, n);
        }
    }
    free(bounce);
    return r;
}

/* Where each step's block operand is (its own, or the same bytes another
 * step logged), for adoption and CRC steps (oplog.h "Adoption"). */
static void note_opnds(struct fop_run *x, const struct opnds *ops)
{
    for (unsigned k = 0; k < ops->n; k++) {
        x->opnd_off[ops->o[k].step] = ops->o[k].off;
        x->opnd_crc[ops->o[k].step] = ops->o[k].crc;
    }
    for (unsigned i = 0; ops->n && i < x->v->n; i++) {
        int j = oplog_same_src(x->v, i);
        if (j >= 0) {
            x->opnd_off[i] = x->opnd_off[j];
            x->opnd_crc[i] = x->opnd_crc[j];
        }
    }
}

/* The op record after its block operands (whose CRCs it holds). */
static int write_record(struct fop_run *x, struct sfs_txn *tx, uint64_t ino, struct obuf *b,
                        struct opnds *ops)
{
    int r = write_opnds(x, tx, ino, ops);
    if (!r)
        r = oplog_seal_op(b, ops);
    if (!r)
        r = write_all(x->e->fs, tx, ino, 0, b->p, b->len);
    if (!r)
        note_opnds(x, ops);
    x->oplog_size = ops->end;
    return r;
}

/* Writes the op record, its block operands and the records of its
 * pre-run steps into a free slot inside tx, over the completed op it
 * held (oplog.h "Slots"). On failure the slot is emptied and given
 * back. */
static int write_begin(struct fop_run *x, struct sfs_txn *tx, struct obuf *b, struct opnds *ops)
{
    uint64_t dir, ino = 0;
    bool kept = true;
    int k = -ENOMEM, r = oplog_dir(x->e, &dir);
    while (!r && kept) {   /* a slot holding a log that must stay is skipped */
        if ((k = slot_take(x->e, &ino)) < 0)
            return k;
        slot_name(x->oplog_name, (unsigned)k);
        r = slot_open(x, tx, dir, (unsigned)k, &ino, &kept);
        if (!r && kept)
            slot_give(x->e, (unsigned)k, ino, true);
    }
    if (r) {
        if (k >= 0)
            slot_give(x->e, (unsigned)k, 0, false);
        return r;
    }
    x->oplog = ino;
    bool over = overwrites(ops);   /* else a fresh file: its blocks may be adopted */
    r = over ? 0 : slot_clear(x->e->fs, tx, ino);
    if (!r)
        r = write_record(x, tx, ino, b, ops);
    for (unsigned i = 0; !r && i < x->v->n; i++)
        if (x->pre >> i & 1)
            r = append_step(x, tx, i);
    if (!r && over)
        r = slot_cut(x->e->fs, tx, ino, x->oplog_size);   /* the previous log's tail */
    if (r) {   /* no half-written log stays */
        slot_clear(x->e->fs, tx, ino);
        slot_give(x->e, (unsigned)k, ino, false);
        x->oplog = 0;
    }
    return r;
}

int fop_oplog_begin(struct fop_run *x, unsigned *bad)
{
    struct obuf b = { 0 };
    struct opnds ops;
    uint64_t mask = prerun_mask(x->v, bad), need = 0, stamp;
    uint32_t seq;
    op_stamp(&stamp, &seq);
    int r = mask == UINT64_MAX ? -EOPNOTSUPP : oplog_encode_op(x, stamp, seq, &b, &ops);
    for (unsigned i = 0; !r && i < x->v->n; i++)
        need += oplog_step_need(x, i);
    if (!r && (r = space_take(x->e, need += ops.end + END_BYTES)) != 0)   /* record, operands */
        *bad = 0;
    x->oplog_reserved = r ? 0 : need;
    if (!r)
        r = prerun(x, mask, bad);
    struct sfs_txn *tx = NULL;
    unsigned flags = SFS_TXN_COMMIT_HERE | (overwrites(&ops) ? SFS_TXN_DATA_JOURNAL : 0);
    if (!r)   /* the receipt's durable commit written here (apply.c apply_tx) */
        r = sfs_txn_begin_flags(x->e->fs, flags, &tx);
    if (!r)
        r = write_begin(x, tx, &b, &ops);
    /* The client's receipt; it also makes the slot's previous op's end
     * durable (its step records committed before, in order). */
    int c = tx ? sfs_txn_commit(tx, true) : 0;
    free(b.p);
    r = r ? r : c;
    if (r) {
        if (x->oplog)
            fop_oplog_end(x, false);
        space_give(x->e, x->oplog_reserved);
        x->oplog = x->oplog_reserved = 0;
        return r;
    }
    fop_crash_point(FOP_CRASH_AFTER_LOG, 0);
    return 0;
}

int fop_oplog_step(struct fop_run *x, struct sfs_txn *tx, unsigned i)
{
    struct sfs_txn *own = NULL;
    int r = tx ? 0 : sfs_txn_begin(x->e->fs, &own);
    if (!r)
        r = append_step(x, tx ? tx : own, i);
    /* Not flushed: the journal commits in order, so the record is durable
     * before any later step's commit that may take its output is. */
    int c = own ? sfs_txn_commit(own, false) : 0;
    return r ? r : c;
}

/* Ends a log that is not a slot (one file per op, as recovery finds
 * them in images of before slots): the file goes. */
static int end_file(struct fop_run *x, struct sfs_txn *tx)
{
    uint64_t dir;
    int r = oplog_dir(x->e, &dir);
    return r ? r : sfs_unlink(x->e->fs, tx, dir, x->oplog_name);
}

/* Appends the end record to x's slot inside tx. */
static int append_end(struct fop_run *x, struct sfs_txn *tx)
{
    struct obuf b = { 0 };
    oplog_encode_end(&b);
    int r = b.err ? b.err : write_all(x->e->fs, tx, x->oplog, x->oplog_size, b.p, b.len);
    free(b.p);
    return r;
}

void fop_oplog_end(struct fop_run *x, bool durable)
{
    struct sfs_txn *tx = NULL;
    int k = slot_of(x);
    bool slot = oplog_is_slot(x->oplog_name);
    /* A completed op's slot gets its end record, not flushed (the next
     * op's receipt, durable, replaces it; a crash that takes it leaves
     * a log recovery finishes, committed steps not run again). A failed
     * op's is emptied durably (a replay must not redo a step whose
     * failure the client was told of). */
    int r = durable || slot ? sfs_txn_begin(x->e->fs, &tx) : 0;
    if (!r)
        r = !slot ? end_file(x, tx) : durable ? slot_clear(x->e->fs, tx, x->oplog)
                                               : append_end(x, tx);
    int c = tx ? sfs_txn_commit(tx, durable) : 0;
    r = r ? r : c;
    space_give(x->e, x->oplog_reserved);
    x->oplog_reserved = 0;
    if (r)
        fprintf(stderr, "cisc device: cannot end operational log %s: %s\n", x->oplog_name,
                strerror(-r));
    if (k >= 0)
        slot_give(x->e, (unsigned)k, x->oplog, r != 0);
    x->oplog = 0;
}
