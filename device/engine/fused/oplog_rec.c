/* device/engine/fused/oplog_rec.c - the operational log's records
 * (oplog_int.h): the op record and step records encoded for the writer
 * and decoded, with every check, for recovery and the offline check
 * (docs/FORMAT.md "Operational log"). */
#include "device/engine/fused/oplog_int.h"

#include "common/crc32c.h"
#include "common/le.h"
#include "proto/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- encoding ------------------------------------------------------------ */

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

int oplog_same_src(const struct eng_cisc *v, unsigned i)
{
    const struct fop_step *s = &v->st[i];
    for (unsigned j = 0; s->src && j < i; j++)
        if (v->st[j].src && v->st[j].src_len == s->src_len &&
            (v->st[j].src == s->src || !memcmp(v->st[j].src, s->src, s->src_len)))
            return (int)j;
    return -1;
}

/* Whether step i's operand goes to whole log blocks: its own (not
 * another step's again), longer than a log entry. */
static bool in_blocks(const struct fop_run *x, unsigned i, int same)
{
    const struct fop_step *s = &x->v->st[i];
    return s->src && same < 0 && s->src_len > x->e->tx_log_entry;
}

/* A block operand's locator (FORMAT.md "Block operands"), its offset
 * and CRC filled in later (oplog_encode_op, oplog_seal_op). */
static void put_opnd(struct obuf *b, const struct fop_step *s, unsigned i, struct opnds *ops)
{
    ops->o[ops->n++] = (struct opnd){ .step = i, .p = s->src, .len = s->src_len, .at = b->len };
    ob_u64(b, 0);
    ob_u32(b, 0);
}

static void put_step(struct obuf *b, const struct fop_run *x, unsigned i, struct opnds *ops)
{
    const struct eng_cisc *v = x->v;
    const struct fop_step *s = &v->st[i];
    int same = oplog_same_src(v, i);
    bool blocks = in_blocks(x, i, same);
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
    ob_u64(b, same >= 0 ? SRC_SAME | (uint64_t)same
              : blocks  ? SRC_BLOCKS | s->src_len
              : s->src  ? s->src_len : 0);
    ob_u32(b, s->kind == WIRE_STEP_BPF ? PROG_ID_BYTES : 0);   /* trailer */
    if (!b->err && b->len - l0 != STEP_FIXED)
        b->err = -EINVAL;   /* programmer error: the layout and STEP_FIXED disagree */
    ob_bytes(b, s->path, plen);
    if (blocks)
        put_opnd(b, s, i, ops);
    else if (s->src && same < 0)
        ob_bytes(b, s->src, s->src_len);
    if (s->kind == WIRE_STEP_BPF)
        put_prog_id(b, x->e, s);
}

static uint64_t block_up(uint64_t n)
{
    return (n + SFS_BLOCK_SIZE - 1) & ~(uint64_t)(SFS_BLOCK_SIZE - 1);
}

/* The block operands go after the record (whose CRC is still to come),
 * each from the next block boundary on, in step order. */
static void place_opnds(struct obuf *b, struct opnds *ops)
{
    uint64_t at = b->len + 4;
    ops->end = at;
    if (!b->err && ops->n)
        le32_put(b->p + 4, OP_VERSION);   /* a record without any is version 3 */
    for (unsigned k = 0; !b->err && k < ops->n; k++) {
        struct opnd *o = &ops->o[k];
        o->off = block_up(at);
        le64_put(b->p + o->at, o->off);
        at = ops->end = o->off + o->len;
    }
}

void oplog_op_name(char *name, uint64_t stamp, uint32_t seq)
{
    snprintf(name, OPLOG_NAME_MAX, "%016" PRIx64 "-%08" PRIx32, stamp, seq);
}

int oplog_encode_op(const struct fop_run *x, uint64_t stamp, uint32_t seq, struct obuf *b,
                    struct opnds *ops)
{
    ops->n = 0;
    const struct eng_cred *c = x->cred;
    unsigned ng = c->ngroups > 0 ? (unsigned)c->ngroups : 0;
    ob_u32(b, OP_MAGIC);
    ob_u32(b, OP_VERSION_PLAIN);
    ob_u32(b, x->v->n);
    ob_u32(b, c->uid);
    ob_u32(b, c->gid);
    ob_u32(b, ng);
    ob_u64(b, x->v->mem);
    ob_u64(b, stamp);   /* v3: the op's name (the file is a reused slot) */
    ob_u32(b, seq);
    for (unsigned g = 0; g < ng; g++)
        ob_u32(b, c->groups[g]);
    for (unsigned i = 0; i < x->v->n; i++)
        put_step(b, x, i, ops);
    place_opnds(b, ops);
    return b->err;
}

int oplog_seal_op(struct obuf *b, const struct opnds *ops)
{
    for (unsigned k = 0; !b->err && k < ops->n; k++)
        le32_put(b->p + ops->o[k].at + 8, ops->o[k].crc);
    if (!b->err)
        ob_u32(b, crc32c(0, b->p, b->len));
    return b->err;
}

/* Step i's record (FORMAT.md "Step record"), to go at log offset at: its
 * result, and its output when a later step takes it or the recovery
 * record keeps it: inline up to the log entry size, else in whole log
 * blocks after the record (*ext: where; the caller writes them). */
void oplog_encode_step(const struct fop_run *x, unsigned i, uint64_t at, struct obuf *b,
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

void oplog_encode_end(struct obuf *b)
{
    size_t b0 = b->len;
    ob_u32(b, END_MAGIC);
    if (!b->err)
        ob_u32(b, crc32c(0, b->p + b0, 4));
}

/* An upper bound of the log bytes step i's record takes. */
uint64_t oplog_step_need(const struct fop_run *x, unsigned i)
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

/* ---- decoding ------------------------------------------------------------ */

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

/* Step i's operand in whole log blocks (v4): its locator. Its bytes
 * are checked later, and only when a step that will run reads them
 * (check_opnds). */
static const char *get_block_opnd(struct rd *r, struct recovered *rc, unsigned i, uint64_t len,
                                  uint32_t version)
{
    uint64_t off = rd_u64(r);
    uint32_t crc = rd_u32(r);
    if (r->bad)
        return "step vector past the log's end";
    if (version < 4 || len == 0 || off % SFS_BLOCK_SIZE)
        return "impossible step vector";
    if (off > r->len || len > r->len - off)
        return "inputs past the log's end";
    rc->v.st[i].src = r->p + off;
    rc->v.st[i].src_len = len;
    rc->rp.opnd_off[i] = off;
    rc->rp.opnd_crc[i] = crc;
    return NULL;
}

/* One step's fields; "impossible" vectors (bad kinds, forward references,
 * lengths past the end) make the whole log unrecoverable. */
static const char *get_step(struct rd *r, struct recovered *rc, unsigned i, uint32_t version)
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
        rc->rp.opnd_off[i] = rc->rp.opnd_off[j];
        rc->rp.opnd_crc[i] = rc->rp.opnd_crc[j];
    } else if (slen & SRC_BLOCKS) {
        const char *why = get_block_opnd(r, rc, i, slen & ~SRC_BLOCKS, version);
        if (why)
            return why;
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

/* Whether step i has a block operand of its own (not another's again). */
static bool own_opnd(const struct recovered *rc, unsigned i)
{
    if (!rc->rp.opnd_off[i])
        return false;
    for (unsigned j = 0; j < i; j++)
        if (rc->rp.opnd_off[j] == rc->rp.opnd_off[i])
            return false;
    return true;
}

/* The block operands follow the record in step order, none overlapping
 * it or another; the step records start after the last one. */
static const char *opnds_after(struct recovered *rc, struct rd *r)
{
    uint64_t end = r->at;
    for (unsigned i = 0; i < rc->v.n; i++) {
        if (!own_opnd(rc, i))
            continue;
        if (rc->rp.opnd_off[i] < end)
            return "impossible step vector";
        end = rc->rp.opnd_off[i] + rc->v.st[i].src_len;
    }
    r->at = (size_t)end;   /* within r->len: get_block_opnd */
    return NULL;
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
    if (version >= 3) {   /* the op's name; before, the file's name was */
        uint64_t stamp = rd_u64(r);
        uint32_t seq = rd_u32(r);
        oplog_op_name(rc->name, stamp, seq);
    }
    if (r->bad || n == 0 || n > WIRE_MAX_STEPS || ng > ENG_GROUPS_MAX)
        return "impossible step vector";
    rc->cred.ngroups = (int32_t)ng;
    for (unsigned g = 0; g < ng; g++)
        rc->cred.groups[g] = rd_u32(r);
    rc->v.n = n;
    for (unsigned i = 0; i < n; i++) {
        const char *why = get_step(r, rc, i, version);
        if (why)
            return why;
    }
    size_t body = r->at;
    uint32_t crc = rd_u32(r);
    if (r->bad || crc != crc32c(0, r->p, body))
        return "checksum mismatch";
    return opnds_after(rc, r);
}

/* Step records after the op record, up to the first that does not check
 * (a transaction that did not commit leaves none: the file's size is
 * journaled with it). */
static void parse_steps(struct recovered *rc, struct rd *r)
{
    while (r->at < r->len) {
        size_t at = r->at;
        uint32_t magic = rd_u32(r);
        if (magic == END_MAGIC) {   /* the op completed; nothing follows */
            uint32_t crc = rd_u32(r);
            rc->ended = !r->bad && crc == crc32c(0, r->p + at, 4);
            return;
        }
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
bool oplog_pending(const struct recovered *rc)
{
    if (rc->ended)
        return false;
    for (unsigned i = 0; i < rc->v.n; i++) {
        bool needed = false;
        for (unsigned j = i + 1; j < rc->v.n; j++)
            needed |= rc->v.st[j].in == i || rc->v.st[j].in2 == i;
        if (!(rc->rp.done >> i & 1) && (needed || fop_step_may_mutate(&rc->v.st[i])))
            return true;
    }
    return false;
}

bool oplog_is_slot(const char *name)
{
    return strncmp(name, SLOT_PREFIX, strlen(SLOT_PREFIX)) == 0;
}

/* A committed OPEN is opened again without creating or truncating. */
void oplog_settle_done_opens(struct recovered *rc)
{
    for (unsigned i = 0; i < rc->v.n; i++)
        if (rc->v.st[i].kind == WIRE_STEP_OPEN && (rc->rp.done >> i & 1))
            rc->v.st[i].oflags &= ~(uint32_t)(O_EXCL | O_TRUNC);
}

/* Whether a step of rc that is still to run reads the block operand at
 * off (oplog_parse). */
static bool opnd_read(const struct recovered *rc, uint64_t off)
{
    for (unsigned i = 0; i < rc->v.n; i++)
        if (rc->rp.opnd_off[i] == off && !(rc->rp.done >> i & 1) &&
            !fop_oplog_crc_known(&rc->v.st[i], off))
            return true;
    return false;
}

static const char *check_opnds(const struct recovered *rc, size_t *bad_at)
{
    for (unsigned i = 0; i < rc->v.n; i++) {
        uint64_t off = rc->rp.opnd_off[i];
        if (!own_opnd(rc, i) || !opnd_read(rc, off))
            continue;
        if (crc32c(0, rc->data + off, rc->v.st[i].src_len) != rc->rp.opnd_crc[i]) {
            *bad_at = (size_t)off;
            return "input checksum mismatch";
        }
    }
    return NULL;
}

const char *oplog_parse(struct recovered *rc, size_t *bad_at)
{
    struct rd rd = { rc->data, rc->len, 0, false };
    const char *why = parse_op(rc, &rd);
    *bad_at = rd.at;
    if (!why)
        parse_steps(rc, &rd);
    if (!why && oplog_pending(rc))
        why = check_opnds(rc, bad_at);
    return why;
}
