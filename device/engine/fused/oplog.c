/* device/engine/fused/oplog.c - AutoRec's operational log and recovery
 * (oplog.h; records drawn in docs/FORMAT.md "Operational log"). */
#include "device/engine/fused/oplog.h"
#include "device/engine/fused/crash.h"
#include "device/engine/fused/fused_int.h"
#include "device/engine/sysdir.h"
#include "device/progs/progs.h"

#include "common/crc32c.h"
#include "common/le.h"
#include "common/thread.h"
#include "proto/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <time.h>

#define OPLOG_SUB "oplog"
#define OP_MAGIC 0x4c4f6673u      /* "sfOL" */
#define STEP_MAGIC 0x534f6673u    /* "sfOS" */
#define OP_VERSION 2u           /* 1: the same without program identities */
#define OP_HDR 32u                /* magic version nsteps uid gid ngroups mem(8) */
#define STEP_FIXED 96u            /* one step's fixed fields */
#define REC_FIXED 28u             /* step record: magic step flags ret out_len data_len */
#define REC_F_BLOCKS 1u           /* its output is in whole log blocks after it */
#define LOG_WAIT_MS 2000          /* an op waits this long for log space, then -ENOSPC */
#define OPLOG_MAX (512ull << 20)  /* one op's log (inputs included) */
#define SRC_SAME (1ull << 63)     /* src_len: the operand of step (low 16 bits) again */
#define PROG_ID_BYTES (32u + 2u * PROGS_NAME_MAX)   /* sha256 name func */

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

static bool keyed(const struct fop_step *s)
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
        if (keyed(&v->st[i]) && !ok[i]) {
            *bad = i;
            return UINT64_MAX;
        }
        if (keyed(&v->st[i]))
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

bool fop_oplog_needs_output(const struct fop_run *x, unsigned i)
{
    if ((x->v->st[i].flags & WIRE_STEP_F_OUT_ARENA) && x->olen[i] <= FOP_REC_OUT_MAX)
        return true;   /* kept for the recovery record */
    for (unsigned j = i + 1; j < x->v->n; j++)
        if (x->v->st[j].in == i || x->v->st[j].in2 == i)
            return true;
    return false;
}

/* ---- the op record ---------------------------------------------------- */

/* A growable byte buffer. */
struct obuf {
    uint8_t *p;
    size_t len, cap;
    int err;
};

static uint8_t *ob_room(struct obuf *b, size_t n)
{
    if (b->err)
        return NULL;
    if (b->len + n > b->cap) {
        size_t c = b->cap ? b->cap : 1024;
        while (c < b->len + n)
            c *= 2;
        uint8_t *q = c > OPLOG_MAX ? NULL : realloc(b->p, c);
        if (!q) {
            b->err = -ENOSPC;
            return NULL;
        }
        b->p = q;
        b->cap = c;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

static void ob_u16(struct obuf *b, uint16_t v) { uint8_t *q = ob_room(b, 2); if (q) le16_put(q, v); }
static void ob_u32(struct obuf *b, uint32_t v) { uint8_t *q = ob_room(b, 4); if (q) le32_put(q, v); }
static void ob_u64(struct obuf *b, uint64_t v) { uint8_t *q = ob_room(b, 8); if (q) le64_put(q, v); }

static void ob_bytes(struct obuf *b, const void *p, size_t n)
{
    uint8_t *q = ob_room(b, n);
    if (q && n)
        memcpy(q, p, n);
}

/* A bpf step's program identity (FORMAT.md "Program identity"): the
 * SHA-256 of its object as loaded, its name and its function. */
static void put_prog_id(struct obuf *b, struct engine *e, const struct fop_step *s)
{
    struct progs_info info;
    if (!e->progs || progs_show(e->progs, 0, s->key_id, NULL, &info, NULL, 0)) {
        b->err = b->err ? b->err : -ENOENT;   /* unloaded since the check */
        return;
    }
    ob_bytes(b, info.sha256, 32);
    ob_bytes(b, info.name, PROGS_NAME_MAX);
    ob_bytes(b, info.func, PROGS_NAME_MAX);
}

/* The earlier step of v whose arena operand is the same bytes as step
 * i's (a client passing one buffer to two steps), or -1. */
static int same_src(const struct eng_cisc *v, unsigned i)
{
    const struct fop_step *s = &v->st[i];
    for (unsigned j = 0; s->src && j < i; j++)
        if (v->st[j].src == s->src && v->st[j].src_len == s->src_len)
            return (int)j;
    return -1;
}

static void put_step(struct obuf *b, struct engine *e, const struct eng_cisc *v, unsigned i)
{
    const struct fop_step *s = &v->st[i];
    int same = same_src(v, i);
    size_t l0 = b->len;
    ob_bytes(b, &s->kind, 1);
    ob_bytes(b, &s->flags, 1);
    ob_u16(b, s->in);
    ob_u16(b, s->in2);
    ob_u16(b, s->file);
    ob_u32(b, s->key_id);
    ob_u32(b, s->oflags);
    ob_u32(b, s->mode);
    ob_u32(b, s->block_out);
    ob_u64(b, s->off);
    ob_u64(b, s->len);
    for (unsigned k = 0; k < 4; k++)
        ob_u64(b, s->arg[k]);
    ob_u64(b, s->cap);
    uint32_t plen = s->path ? (uint32_t)strlen(s->path) : 0;
    ob_u32(b, plen);
    ob_u64(b, same >= 0 ? SRC_SAME | (uint64_t)same : s->src ? s->src_len : 0);
    ob_u32(b, s->kind == WIRE_STEP_BPF ? PROG_ID_BYTES : 0);   /* trailer */
    if (!b->err && b->len - l0 != STEP_FIXED)
        b->err = -EINVAL;   /* programmer error: the layout and STEP_FIXED disagree */
    ob_bytes(b, s->path, plen);
    if (s->src && same < 0)
        ob_bytes(b, s->src, s->src_len);
    if (s->kind == WIRE_STEP_BPF)
        put_prog_id(b, e, s);
}

static int encode_op(const struct fop_run *x, struct obuf *b)
{
    const struct eng_cred *c = x->cred;
    unsigned ng = c->ngroups > 0 ? (unsigned)c->ngroups : 0;
    ob_u32(b, OP_MAGIC);
    ob_u32(b, OP_VERSION);
    ob_u32(b, x->v->n);
    ob_u32(b, c->uid);
    ob_u32(b, c->gid);
    ob_u32(b, ng);
    ob_u64(b, x->v->mem);
    for (unsigned g = 0; g < ng; g++)
        ob_u32(b, c->groups[g]);
    for (unsigned i = 0; i < x->v->n; i++)
        put_step(b, x->e, x->v, i);
    if (!b->err)
        ob_u32(b, crc32c(0, b->p, b->len));
    return b->err;
}

/* Step i's record (FORMAT.md "Step record"), to go at log offset at: its
 * result, and its output when a later step takes it or the recovery
 * record keeps it: inline up to the log entry size, else in whole log
 * blocks after the record (*ext: where; the caller writes them). */
static void encode_step(const struct fop_run *x, unsigned i, uint64_t at, struct obuf *b,
                        uint64_t *ext)
{
    bool out = fop_oplog_needs_output(x, i);
    uint64_t dlen = out ? x->olen[i] : 0;
    bool blocks = dlen > x->e->tx_log_entry;
    size_t b0 = b->len;
    ob_u32(b, STEP_MAGIC);
    ob_u16(b, (uint16_t)i);
    ob_u16(b, blocks ? REC_F_BLOCKS : 0);
    ob_u64(b, (uint64_t)x->v->res[i].ret);
    ob_u64(b, x->olen[i]);
    ob_u32(b, (uint32_t)dlen);
    *ext = 0;
    if (blocks) {   /* after the record's 12 more bytes and its CRC */
        *ext = (at + REC_FIXED + 16 + SFS_BLOCK_SIZE - 1) & ~(uint64_t)(SFS_BLOCK_SIZE - 1);
        ob_u64(b, *ext);
        ob_u32(b, crc32c(0, x->buf[i], dlen));
    } else {
        ob_bytes(b, out ? x->buf[i] : NULL, dlen);
    }
    if (!b->err)
        ob_u32(b, crc32c(0, b->p + b0, b->len - b0));
}

/* An upper bound of the log bytes step i's record takes. */
static uint64_t step_need(const struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    uint64_t out = 0;
    for (unsigned j = i + 1; j < x->v->n; j++)
        if (x->v->st[j].in == i || x->v->st[j].in2 == i)
            out = s->cap;
    if (!out && (s->flags & WIRE_STEP_F_OUT_ARENA))
        out = s->cap < FOP_REC_OUT_MAX ? s->cap : FOP_REC_OUT_MAX;
    return REC_FIXED + 16 + out + (out > x->e->tx_log_entry ? SFS_BLOCK_SIZE : 0);
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

/* A name that sorts in submission order: wall-clock ns and a counter. */
static void op_name(char *name, size_t size)
{
    static uint32_t seq;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    snprintf(name, size, "%016" PRIx64 "-%08x", ns, __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
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

/* ---- writing the log ------------------------------------------------------ */

/* Appends step i's record to the log inside tx (and its output's log
 * blocks). */
static int append_step(struct fop_run *x, struct sfs_txn *tx, unsigned i)
{
    struct obuf b = { 0 };
    uint64_t ext;
    encode_step(x, i, x->oplog_size, &b, &ext);
    int r = b.err ? b.err : write_all(x->e->fs, tx, x->oplog, x->oplog_size, b.p, b.len);
    if (!r && ext)
        r = write_all(x->e->fs, tx, x->oplog, ext, x->buf[i], x->olen[i]);
    if (!r)
        x->oplog_size = ext ? ext + x->olen[i] : x->oplog_size + b.len;
    free(b.p);
    return r;
}

/* Writes the op record and the records of its pre-run steps into a new
 * log file inside tx. */
static int write_begin(struct fop_run *x, struct sfs_txn *tx, const struct obuf *b)
{
    uint64_t dir;
    struct sfs_attr a;
    int r = oplog_dir(x->e, &dir);
    if (!r) {
        op_name(x->oplog_name, sizeof(x->oplog_name));
        r = sfs_mknod(x->e->fs, tx, dir, x->oplog_name, S_IFREG | 0600, 0, 0, 0, &a);
    }
    if (!r) {
        x->oplog = a.ino;
        r = write_all(x->e->fs, tx, a.ino, 0, b->p, b->len);
    }
    x->oplog_size = b->len;
    for (unsigned i = 0; !r && i < x->v->n; i++)
        if (x->pre >> i & 1)
            r = append_step(x, tx, i);
    return r;
}

int fop_oplog_begin(struct fop_run *x, unsigned *bad)
{
    struct obuf b = { 0 };
    uint64_t mask = prerun_mask(x->v, bad), need = 0;
    int r = mask == UINT64_MAX ? -EOPNOTSUPP : encode_op(x, &b);
    for (unsigned i = 0; !r && i < x->v->n; i++)
        need += step_need(x, i);
    if (!r && (r = space_take(x->e, need += b.len)) != 0)
        *bad = 0;
    x->oplog_reserved = r ? 0 : need;
    if (!r)
        r = prerun(x, mask, bad);
    struct sfs_txn *tx = NULL;
    if (!r)
        r = sfs_txn_begin(x->e->fs, &tx);
    if (!r)
        r = write_begin(x, tx, &b);
    uint64_t dir;
    if (r && x->oplog && oplog_dir(x->e, &dir) == 0)
        sfs_unlink(x->e->fs, tx, dir, x->oplog_name);   /* no half-written log stays */
    int c = tx ? sfs_txn_commit(tx, true) : 0;   /* the client's receipt */
    free(b.p);
    r = r ? r : c;
    if (r) {
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

void fop_oplog_end(struct fop_run *x, bool durable)
{
    uint64_t dir;
    struct sfs_txn *tx = NULL;
    int r = oplog_dir(x->e, &dir);
    if (!r && durable)
        r = sfs_txn_begin(x->e->fs, &tx);
    if (!r)
        r = sfs_unlink(x->e->fs, tx, dir, x->oplog_name);
    int c = tx ? sfs_txn_commit(tx, true) : 0;
    r = r ? r : c;
    space_give(x->e, x->oplog_reserved);
    x->oplog_reserved = 0;
    if (r)
        fprintf(stderr, "cisc device: cannot remove operational log %s: %s\n", x->oplog_name,
                strerror(-r));
    x->oplog = 0;
}

/* ---- recovery ------------------------------------------------------------ */

/* A parsed log: the op, its credentials, and what its steps committed. */
struct recovered {
    struct eng_cisc v;
    struct eng_cred cred;
    struct fop_replay rp;
    uint8_t *data;               /* the file's bytes (inputs and outputs point here) */
    size_t len;                  /* and their length (read_log's mapping) */
    uint8_t kept[WIRE_MAX_STEPS][FOP_REC_OUT_MAX];   /* F_OUT_ARENA outputs of recovery */
};

struct rd {
    const uint8_t *p;
    size_t len, at;
    bool bad;
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
    if (r->bad || n > r->len - r->at) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *q = r->p + r->at;
    r->at += n;
    return q;
}

static uint16_t rd_u16(struct rd *r) { const uint8_t *q = rd_take(r, 2); return q ? le16_get(q) : 0; }
static uint32_t rd_u32(struct rd *r) { const uint8_t *q = rd_take(r, 4); return q ? le32_get(q) : 0; }
static uint64_t rd_u64(struct rd *r) { const uint8_t *q = rd_take(r, 8); return q ? le64_get(q) : 0; }

static bool ref_ok(uint16_t ref, unsigned i)
{
    return ref == WIRE_NO_STEP || ref < i;
}

/* A step's trailer: a bpf step's program identity, nothing else. */
static const char *get_trailer(struct rd *r, struct recovered *rc, unsigned i, uint32_t xlen)
{
    bool bpf = rc->v.st[i].kind == WIRE_STEP_BPF;
    if (xlen != (bpf ? PROG_ID_BYTES : 0))
        return "impossible step vector";
    rc->rp.prog_id[i] = xlen ? rd_take(r, xlen) : NULL;
    return r->bad ? "inputs past the log's end" : NULL;
}

/* One step's fields; "impossible" vectors (bad kinds, forward references,
 * lengths past the end) make the whole log unrecoverable. */
static const char *get_step(struct rd *r, struct recovered *rc, unsigned i)
{
    struct fop_step *s = &rc->v.st[i];
    const uint8_t *k = rd_take(r, 2);
    s->kind = k ? k[0] : 0;
    s->flags = k ? k[1] : 0;   /* F_OUT_ARENA: kept in the recovery record */
    s->in = rd_u16(r);
    s->in2 = rd_u16(r);
    s->file = rd_u16(r);
    s->key_id = rd_u32(r);
    s->oflags = rd_u32(r);
    s->mode = rd_u32(r);
    s->block_out = rd_u32(r);
    s->off = rd_u64(r);
    s->len = rd_u64(r);
    for (unsigned j = 0; j < 4; j++)
        s->arg[j] = rd_u64(r);
    s->cap = rd_u64(r);
    uint32_t plen = rd_u32(r);
    uint64_t slen = rd_u64(r);
    uint32_t xlen = rd_u32(r);
    if (r->bad)
        return "step vector past the log's end";
    if (!step_kind(s->kind) || !ref_ok(s->in, i) || !ref_ok(s->in2, i) ||
        !ref_ok(s->file, i) || plen >= WIRE_PATH_MAX || s->cap > FOP_STEP_BYTES_MAX ||
        (s->flags & WIRE_STEP_F_FH))
        return "impossible step vector";
    const uint8_t *path = rd_take(r, plen);
    if (slen & SRC_SAME) {   /* one buffer given to two steps: logged once */
        uint64_t j = slen & ~SRC_SAME;
        if (j >= i || !rc->v.st[j].src)
            return "impossible step vector";
        s->src = rc->v.st[j].src;
        s->src_len = rc->v.st[j].src_len;
    } else {
        s->src = slen ? rd_take(r, slen) : NULL;
        s->src_len = slen;
    }
    if (r->bad)
        return "inputs past the log's end";
    const char *why = get_trailer(r, rc, i, xlen);
    if (why)
        return why;
    s->path = plen ? strndup((const char *)path, plen) : NULL;
    return plen && !s->path ? "out of memory" : NULL;
}

static const char *parse_op(struct recovered *rc, struct rd *r)
{
    uint32_t magic = rd_u32(r), version = rd_u32(r);
    if (magic != OP_MAGIC || version < 1 || version > OP_VERSION)
        return "not an operational log";
    unsigned n = rd_u32(r);
    rc->cred.uid = rd_u32(r);
    rc->cred.gid = rd_u32(r);
    unsigned ng = rd_u32(r);
    rc->v.mem = rd_u64(r);
    if (r->bad || n == 0 || n > WIRE_MAX_STEPS || ng > ENG_GROUPS_MAX)
        return "impossible step vector";
    rc->cred.ngroups = (int32_t)ng;
    for (unsigned g = 0; g < ng; g++)
        rc->cred.groups[g] = rd_u32(r);
    rc->v.n = n;
    for (unsigned i = 0; i < n; i++) {
        const char *why = get_step(r, rc, i);
        if (why)
            return why;
    }
    size_t body = r->at;
    uint32_t crc = rd_u32(r);
    if (r->bad || crc != crc32c(0, r->p, body))
        return "checksum mismatch";
    return NULL;
}

/* Step records after the op record, up to the first that does not check
 * (a transaction that did not commit leaves none: the file's size is
 * journaled with it). */
static void parse_steps(struct recovered *rc, struct rd *r)
{
    while (r->at < r->len) {
        size_t at = r->at;
        uint32_t magic = rd_u32(r);
        unsigned i = rd_u16(r);
        unsigned flags = rd_u16(r);
        int64_t ret = (int64_t)rd_u64(r);
        uint64_t olen = rd_u64(r);
        uint32_t dlen = rd_u32(r);
        uint64_t ext = flags & REC_F_BLOCKS ? rd_u64(r) : 0;
        uint32_t dcrc = flags & REC_F_BLOCKS ? rd_u32(r) : 0;
        const uint8_t *d = flags & REC_F_BLOCKS ? NULL : rd_take(r, dlen);
        uint32_t crc = rd_u32(r);
        if (r->bad || magic != STEP_MAGIC || i >= rc->v.n || (flags & ~REC_F_BLOCKS) ||
            crc != crc32c(0, r->p + at, r->at - at - 4))
            return;
        if (flags & REC_F_BLOCKS) {   /* its output: whole log blocks after it */
            if (ext < r->at || ext % SFS_BLOCK_SIZE || dlen > r->len - ext ||
                crc32c(0, r->p + ext, dlen) != dcrc)
                return;
            d = r->p + ext;
            r->at = ext + dlen;
        }
        rc->rp.done |= 1ull << i;
        rc->rp.ret[i] = ret;
        rc->rp.out[i] = dlen ? d : NULL;
        rc->rp.out_len[i] = dlen ? dlen : olen;
    }
}

/* Whether the logged op still has work: a step that may change a file,
 * or whose output a later step takes, without its record. An op whose
 * every such step committed had completed; only the removal of its log
 * (not made durable, to keep a flush off every op) was lost. */
static bool pending(const struct recovered *rc)
{
    for (unsigned i = 0; i < rc->v.n; i++) {
        bool needed = false;
        for (unsigned j = i + 1; j < rc->v.n; j++)
            needed |= rc->v.st[j].in == i || rc->v.st[j].in2 == i;
        if (!(rc->rp.done >> i & 1) && (needed || fop_step_may_mutate(&rc->v.st[i])))
            return true;
    }
    return false;
}

/* A committed OPEN is opened again without creating or truncating. */
static void settle_done_opens(struct recovered *rc)
{
    for (unsigned i = 0; i < rc->v.n; i++)
        if (rc->v.st[i].kind == WIRE_STEP_OPEN && (rc->rp.done >> i & 1))
            rc->v.st[i].oflags &= ~(uint32_t)(O_EXCL | O_TRUNC);
}

/* The log file's bytes in memory: its blocks in the image are mapped
 * read-only where they can be (no copy, no fresh pages: a log holds the
 * op's inputs, megabytes), the rest (holes, cached pieces, unaligned
 * ones) copied into the same private region. */
struct lmap {
    uint8_t *base;
    size_t len;
};

static int map_piece(uint8_t *at, const struct sfs_seg *g)
{
    long page = sysconf(_SC_PAGESIZE);
    bool aligned = (uintptr_t)at % (uintptr_t)page == 0 && g->pos % (uint64_t)page == 0;
    if (g->kind == SFS_SEG_FD && aligned &&
        mmap(at, g->len, PROT_READ, MAP_SHARED | MAP_FIXED | MAP_POPULATE, g->fd,
             (off_t)g->pos) != MAP_FAILED)
        return 0;
    if (g->kind == SFS_SEG_FD) {
        ssize_t n = pread(g->fd, at, g->len, (off_t)g->pos);
        return n == (ssize_t)g->len ? 0 : n < 0 ? -errno : -EIO;
    }
    if (g->kind == SFS_SEG_MEM)
        memcpy(at, g->mem, g->len);
    return 0;   /* SFS_SEG_ZERO: the region is zeros already */
}

static int map_fn(void *arg, const struct sfs_seg *segs, unsigned n, size_t total)
{
    struct lmap *m = arg;
    size_t at = 0;
    for (unsigned k = 0; k < n; k++) {
        if (segs[k].len > m->len - at)
            return -EIO;
        int r = map_piece(m->base + at, &segs[k]);
        if (r)
            return r;
        at += segs[k].len;
    }
    return 0;
}

static size_t map_size(size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return len ? (len + page - 1) / page * page : page;
}

static int read_log(struct sfs *fs, uint64_t ino, uint8_t **out, size_t *len)
{
    struct sfs_attr a;
    int r = sfs_getattr(fs, ino, &a);
    if (r)
        return r;
    if (a.size > OPLOG_MAX)
        return -EFBIG;
    void *base = mmap(NULL, map_size(a.size), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -ENOMEM;
    struct lmap m = { base, a.size };
    ssize_t n = a.size ? sfs_read_map(fs, ino, 0, a.size, map_fn, &m) : 0;
    if (n != (ssize_t)a.size) {
        munmap(base, map_size(a.size));
        return n < 0 ? (int)n : -EIO;
    }
    *out = base;
    *len = a.size;
    return 0;
}

static void unmap_log(uint8_t *p, size_t len)
{
    if (p)
        munmap(p, map_size(len));
}

/* Why step i failed, for the report. */
static const char *step_why(const struct recovered *rc, unsigned i, char *buf, size_t size)
{
    const struct fop_step *s = &rc->v.st[i];
    int64_t err = rc->v.res[i].ret;
    if (s->kind == WIRE_STEP_BPF && err == -ESTALE && rc->rp.prog_id[i])
        snprintf(buf, size, "program %.*s changed or unloaded", (int)PROGS_NAME_MAX - 1,
                 (const char *)rc->rp.prog_id[i] + 32);
    else if (keyed(s) && err == -ENOKEY)
        snprintf(buf, size, "key %u is gone with the client's session", s->key_id);
    else
        snprintf(buf, size, "%s", strerror((int)-err));
    return buf;
}

/* Step i's output for the recovery record (F_OUT_ARENA: the client had
 * asked for it), in hex, or why it is not there. */
static void report_output(FILE *out, const char *name, const struct recovered *rc, unsigned i)
{
    const uint8_t *p = NULL;
    uint64_t n = rc->v.res[i].out_len;
    if (rc->rp.done >> i & 1) {   /* copied before the replay (keep_outputs) */
        n = rc->rp.out_len[i];
        p = rc->rp.out[i] && n <= FOP_REC_OUT_MAX ? rc->kept[i] : NULL;
    } else if (rc->v.res[i].ret >= 0 && n <= FOP_REC_OUT_MAX) {
        p = rc->kept[i];
    }
    if (rc->v.res[i].ret < 0)
        return;
    fprintf(out, "recovery op %s step %u output %" PRIu64 " bytes", name, i, n);
    if (!p && n)
        fprintf(out, " not kept (over %u)", FOP_REC_OUT_MAX);
    for (uint64_t k = 0; p && k < n; k++)
        fprintf(out, "%s%02x", k ? "" : " ", p[k]);
    fputc('\n', out);
}

static void report(FILE *out, const char *name, const struct recovered *rc, int64_t status)
{
    unsigned done = 0;
    char why[160];
    for (unsigned i = 0; i < rc->v.n; i++)
        done += (unsigned)(rc->rp.done >> i & 1);
    fprintf(out, "recovery op %s uid %u steps %u committed %u status %" PRId64 "%s%s\n", name,
            rc->cred.uid, rc->v.n, done, status,
            status < 0 ? " " : "", status < 0 ? strerror((int)-status) : "");
    for (unsigned i = 0; i < rc->v.n && status < 0; i++)
        if (rc->v.res[i].ret < 0)
            fprintf(out, "recovery op %s step %u error %s\n", name, i,
                    step_why(rc, i, why, sizeof(why)));
    for (unsigned i = 0; i < rc->v.n; i++)
        if (rc->v.st[i].flags & WIRE_STEP_F_OUT_ARENA)
            report_output(out, name, rc, i);
}

/* Recovery delivers F_OUT_ARENA outputs into the record, not an arena. */
static void keep_outputs(struct recovered *rc)
{
    for (unsigned i = 0; i < rc->v.n; i++) {
        struct fop_step *s = &rc->v.st[i];
        s->dst = s->flags & WIRE_STEP_F_OUT_ARENA ? rc->kept[i] : NULL;
        s->dst_cap = s->dst ? FOP_REC_OUT_MAX : 0;
        /* The log (and its mapping's blocks) goes when the replay ends. */
        if (s->dst && rc->rp.out[i] && rc->rp.out_len[i] <= FOP_REC_OUT_MAX)
            memcpy(rc->kept[i], rc->rp.out[i], rc->rp.out_len[i]);
    }
}

/* ---- recovery records ---------------------------------------------------- */

#define REC_SUB "recovery"

/* Keeps text as the recovery record of op name, owned by uid (the
 * file's owner is the record's owner). */
static void keep_record(struct engine *e, const char *name, uint32_t uid, const char *text,
                        size_t len)
{
    uint64_t dir;
    struct sfs_attr a;
    int r = sysdir_open(e->fs, REC_SUB, &dir);
    if (!r && sfs_lookup(e->fs, dir, name, &a) == 0)
        r = sfs_unlink(e->fs, NULL, dir, name);   /* a crash during recovery: the newer one */
    if (!r)
        r = sfs_mknod(e->fs, NULL, dir, name, S_IFREG | 0600, 0, uid, uid, &a);
    if (!r && sfs_write(e->fs, NULL, a.ino, 0, text, len) != (ssize_t)len)
        r = -EIO;
    if (r)
        fprintf(stderr, "cisc device: cannot keep the recovery record of %s: %s\n", name,
                strerror(-r));
}

struct rec_list {
    struct engine *e;
    uint32_t uid;
    char *buf;
    size_t size, len;
    int err;
};

static int list_one(void *arg, const struct sfs_dirent *de)
{
    struct rec_list *l = arg;
    struct sfs_attr a;
    if (de->name[0] == '.' || sfs_getattr(l->e->fs, de->ino, &a) || !S_ISREG(a.mode))
        return 0;
    if (l->uid != 0 && a.uid != l->uid)
        return 0;
    if (a.size > l->size - l->len) {
        l->err = -ENOSPC;
        return 1;
    }
    ssize_t n = sfs_read(l->e->fs, de->ino, 0, l->buf + l->len, a.size);
    l->len += n > 0 ? (size_t)n : 0;
    return 0;
}

int fop_recovery_list(struct engine *e, uint32_t uid, char *buf, size_t size)
{
    uint64_t dir;
    int r = sysdir_find(e->fs, REC_SUB, &dir);
    if (r)
        return r == -ENOENT ? 0 : r;
    struct rec_list l = { e, uid, buf, size, 0, 0 };
    r = sfs_readdir(e->fs, dir, 0, list_one, &l);
    r = r ? r : l.err;
    return r ? r : (int)l.len;
}

int fop_recovery_ack(struct engine *e, uint32_t uid, const char *name)
{
    uint64_t dir;
    struct sfs_attr a;
    if (!name[0] || name[0] == '.' || strchr(name, '/') || strlen(name) >= OPLOG_NAME_MAX)
        return -EINVAL;
    int r = sysdir_find(e->fs, REC_SUB, &dir);
    if (!r)
        r = sfs_lookup(e->fs, dir, name, &a);
    if (!r && uid != 0 && a.uid != uid)
        r = -ENOENT;   /* another user's record does not exist for you */
    return r ? r : sfs_unlink(e->fs, NULL, dir, name);
}

/* Reads and checks log (dir, name) into a new *out (the caller frees it
 * with free_recovered, also on failure). Returns NULL, or why nothing of
 * it may run (*bad_at: the byte of the log where the check failed). */
static const char *load(struct sfs *fs, uint64_t dir, const char *name, struct recovered **out,
                        uint64_t *ino, size_t *bad_at)
{
    struct sfs_attr a;
    struct recovered *rc = *out = calloc(1, sizeof(*rc));
    size_t len = 0;
    int r = rc ? sfs_lookup(fs, dir, name, &a) : -ENOMEM;
    if (!r)
        r = read_log(fs, a.ino, &rc->data, &rc->len);
    len = rc ? rc->len : 0;
    *bad_at = 0;
    if (r)
        return strerror(-r);
    *ino = a.ino;
    struct rd rd = { rc->data, len, 0, false };
    fop_res_fill(&rc->v, -ECANCELED);
    const char *why = parse_op(rc, &rd);
    *bad_at = rd.at;
    if (!why)
        parse_steps(rc, &rd);
    rc->rp.oplog_size = len;
    return why;
}

static void free_recovered(struct recovered *rc)
{
    if (rc) {
        fop_release(&rc->v);
        unmap_log(rc->data, rc->len);
    }
    free(rc);
}

/* Finishes the op logged in file (dir, name); reports to out (a memory
 * stream). Returns the owner of its recovery record: the op's uid, root
 * for a log that does not check. */
static uint32_t recover_one(struct engine *e, FILE *out, uint64_t dir, const char *name)
{
    struct recovered *rc;
    uint64_t ino = 0;
    size_t at;
    const char *why = load(e->fs, dir, name, &rc, &ino, &at);
    if (why) {
        fprintf(out, "recovery op %s unrecoverable (%s at byte %zu, log block %zu): nothing "
                "of it runs, the log is kept\n", name, why, at, at / SFS_BLOCK_SIZE);
    } else if (!pending(rc)) {
        sfs_unlink(e->fs, NULL, dir, name);   /* it had completed: no record */
    } else {
        settle_done_opens(rc);
        keep_outputs(rc);
        rc->rp.oplog = ino;
        memcpy(rc->rp.name, name, sizeof(rc->rp.name) - 1);
        rc->v.tx = WIRE_TX_AUTOREC;
        rc->v.replay = &rc->rp;
        int64_t st = fop_exec(e, &rc->cred, &rc->v);
        report(out, name, rc, st);
    }
    uint32_t owner = why || !rc ? 0 : rc->cred.uid;
    free_recovered(rc);
    return owner;
}

/* A recovery task: one log, its report. */
struct rtask {
    struct engine *e;
    uint64_t dir;
    const char *name;
    char *text;
    size_t len;
};

static void run_task(struct rtask *t)
{
    FILE *out = open_memstream(&t->text, &t->len);
    if (!out) {
        fprintf(stderr, "cisc device: out of memory recovering %s\n", t->name);
        return;
    }
    uint32_t owner = recover_one(t->e, out, t->dir, t->name);
    fclose(out);
    if (t->len)
        keep_record(t->e, t->name, owner, t->text, t->len);
}

#define RECOVER_MAX 4096u

struct names {
    char (*name)[OPLOG_NAME_MAX];
    unsigned n;
};

static int collect(void *arg, const struct sfs_dirent *de)
{
    struct names *ns = arg;
    if (de->name[0] == '.' || de->namelen >= OPLOG_NAME_MAX || ns->n == RECOVER_MAX)
        return 0;
    memcpy(ns->name[ns->n], de->name, de->namelen);
    ns->name[ns->n++][de->namelen] = '\0';
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

static int count_one(void *arg, const struct sfs_dirent *de)
{
    *(unsigned *)arg += de->name[0] != '.';
    return 0;
}

int fop_oplog_pending(struct sfs *fs)
{
    uint64_t dir;
    unsigned n = 0;
    int r = sysdir_find(fs, OPLOG_SUB, &dir);
    if (r == -ENOENT)
        return 0;
    if (!r)
        r = sfs_readdir(fs, dir, 0, count_one, &n);
    return r ? r : (int)n;
}

/* The logs recovery works through, claimed one at a time. */
struct rpool {
    struct rtask *t;
    unsigned n;
    unsigned next;               /* atomic */
};

static void *recover_worker(void *arg)
{
    struct rpool *p = arg;
    for (;;) {
        unsigned k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (k >= p->n)
            return NULL;
        fop_crash_point(FOP_CRASH_RECOVERY, k);
        run_task(&p->t[k]);
    }
}

/* Runs the tasks on up to `cores` threads at once: the logs of unfinished
 * ops name disjoint files (each was written with its op's stripes held,
 * exec.c), so their order does not matter; the reports keep log order. */
static void recover_all(struct rpool *p, unsigned cores)
{
    pthread_t th[SCHED_MAX_CORES];
    unsigned nt = 0, want = p->n < cores ? p->n : cores;
    while (nt + 1 < want && nt < SCHED_MAX_CORES &&
           thread_start_quiet(&th[nt], recover_worker, p) == 0)
        nt++;
    recover_worker(p);
    for (unsigned k = 0; k < nt; k++)
        pthread_join(th[k], NULL);
}

/* The names of the logs in dir, sorted (submission order). */
static int list_logs(struct sfs *fs, uint64_t dir, struct names *ns)
{
    ns->name = calloc(RECOVER_MAX, OPLOG_NAME_MAX);
    ns->n = 0;
    int r = ns->name ? sfs_readdir(fs, dir, 0, collect, ns) : -ENOMEM;
    if (!r)
        qsort(ns->name, ns->n, OPLOG_NAME_MAX, cmp_name);
    return r;
}

int fop_recover(struct engine *e, FILE *out)
{
    uint64_t dir;
    struct names ns = { NULL, 0 };
    int r = sysdir_find(e->fs, OPLOG_SUB, &dir);
    if (r == -ENOENT)
        return 0;
    if (!r)
        r = list_logs(e->fs, dir, &ns);
    struct rpool p = { calloc(ns.n ? ns.n : 1, sizeof(struct rtask)), ns.n, 0 };
    if (!r && !p.t)
        r = -ENOMEM;
    for (unsigned k = 0; !r && k < ns.n; k++)
        p.t[k] = (struct rtask){ e, dir, ns.name[k], NULL, 0 };
    if (!r)
        recover_all(&p, e->cores);
    for (unsigned k = 0; !r && k < ns.n; k++) {
        fwrite(p.t[k].text, 1, p.t[k].len, out);
        free(p.t[k].text);
    }
    free(p.t);
    free(ns.name);
    return r ? r : (int)ns.n;
}

/* ---- offline check (cisc fsck) ------------------------------------------- */

int fop_oplog_check(struct sfs *fs, void (*line)(void *arg, const char *msg), void *arg)
{
    uint64_t dir;
    struct names ns = { NULL, 0 };
    int r = sysdir_find(fs, OPLOG_SUB, &dir);
    if (r == -ENOENT)
        return 0;
    if (!r)
        r = list_logs(fs, dir, &ns);
    int bad = 0;
    for (unsigned k = 0; !r && k < ns.n; k++) {
        struct recovered *rc;
        uint64_t ino;
        size_t at;
        char msg[256];
        const char *why = load(fs, dir, ns.name[k], &rc, &ino, &at);
        if (why)
            snprintf(msg, sizeof(msg), "operational log /.cisc-system/" OPLOG_SUB "/%s: %s at "
                     "byte %zu (log block %zu): the op is unrecoverable, nothing of it runs",
                     ns.name[k], why, at, at / SFS_BLOCK_SIZE);
        else
            snprintf(msg, sizeof(msg), "operational log /.cisc-system/" OPLOG_SUB "/%s: op of "
                     "uid %u, %u steps: %s", ns.name[k], rc->cred.uid, rc->v.n,
                     pending(rc) ? "the next start finishes it" : "complete, the next start "
                     "removes its log");
        line(arg, msg);
        bad += why != NULL;
        free_recovered(rc);
    }
    free(ns.name);
    return r ? r : bad;
}
