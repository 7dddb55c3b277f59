/* device/engine/fused/apply.c - phase 4 of a fused op (cisc.h): the deferred
 * mutations applied in step order inside one StorageFS transaction, with
 * an undo log applied in reverse on failure, and copy-on-write overwrites
 * so that a crash before the commit leaves no trace of the op. */
#include "device/engine/fused/fused_int.h"
#include "device/engine/fused/crash.h"
#include "device/engine/fused/oplog.h"
#include "device/engine/perm.h"

#include "common/minmax.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define BS ((uint64_t)SFS_BLOCK_SIZE)
#define COW_SPARE_BLOCKS 64u      /* metadata room kept free by a shadow write */

struct undo {
    bool armed;                 /* the mutation may have changed something */
    bool scratch;               /* old is the thread's scratch buffer */
    bool killed;                /* it cleared set-id bits: old_mode goes back */
    uint8_t caps_len;           /* > 0: it removed these file capabilities */
    uint32_t old_mode;
    uint8_t caps[24];           /* (a valid PERM_XATTR_CAPS value: 20 or 24 bytes) */
    uint64_t old_size;
    uint8_t *old;               /* old bytes [old_off, old_off + old_len) */
    uint64_t old_off, old_len;
    uint64_t adopted;           /* bytes of the write taken from the op's log, */
    uint64_t adopt_from;        /* from there (oplog.h "Adoption") */
};

struct apply {
    struct fop_run *x;
    struct sfs_txn *tx;
    unsigned k0;                /* the mutations applied: muts[k0, nmuts) */
    unsigned cstep;             /* the step whose commit this is (crash points) */
    unsigned bad;               /* on failure: the step that failed */
    bool cow;                   /* overwrites below base sizes are shadowed */
    bool scratch_used;          /* an undo holds the thread's scratch buffer */
    bool lone;                  /* the one mutation, an in-place write in one block
                                 * with nothing after it that can fail: no undo */
    const struct iovec *run;    /* apply_run: the bytes of the write being applied, */
    unsigned nrun;              /* in pieces (its mutation's data is unused) */
    uint64_t size[WIRE_MAX_STEPS];  /* per files[] entry: its size as the transaction
                                     * has it (track_sizes), no getattr needed */
    struct undo u[FOP_MAX_MUTS];
};

static int size_of(struct sfs *fs, struct sfs_inode *ip, uint64_t *size)
{
    struct sfs_attr a = { 0 };
    int r = sfs_getattr_ino(fs, ip, &a);
    *size = a.size;
    return r;
}

/* The size mutation m leaves a file of size `size` with: a write of n > 0
 * bytes extends it to its end (write_shadow too: it rewrites no further
 * than max(end, size)), a truncate sets it, the rest keep it. */
static uint64_t size_after(const struct fop_mut *m, uint64_t size)
{
    if (m->kind == MUT_WRITE && m->len)
        return max64(size, m->off + m->len);
    if (m->kind == MUT_TRUNC)
        return m->off;
    return m->kind == MUT_CREATE ? 0 : size;
}

/* Sizes of the op's files as this transaction starts: their base sizes
 * (read under the exclusive stripes, which every size change elsewhere
 * takes: engine_ops.c stripe_lock) changed by the mutations that earlier
 * micro steps committed, muts[0, k0). */
static void track_sizes(struct apply *ap)
{
    const struct fop_run *x = ap->x;
    for (unsigned i = 0; i < x->nfiles; i++)
        ap->size[i] = x->files[i].base_size;
    for (unsigned k = 0; k < ap->k0; k++)
        if (x->muts[k].kind != MUT_CLOSE_FH)
            ap->size[x->muts[k].file] = size_after(&x->muts[k], ap->size[x->muts[k].file]);
}

/* The size of files[fi] before the next mutation; checked against the
 * inode in debug builds. */
static uint64_t cur_size(const struct apply *ap, unsigned fi)
{
#ifndef NDEBUG
    uint64_t real = 0;
    int r = size_of(ap->x->e->fs, ap->x->files[fi].ip, &real);
    assert(r || real == ap->size[fi]);
#endif
    return ap->size[fi];
}

static int set_size(struct apply *ap, struct sfs_inode *ip, uint64_t size)
{
    struct sfs_attr in = { .size = size };
    return sfs_setattr_ino(ap->x->e->fs, ap->tx, ip, &in, SFS_SET_SIZE, NULL);
}

static int write_all(struct apply *ap, struct sfs_inode *ip, uint64_t off, const void *p,
                     uint64_t n)
{
    if (n == 0)
        return 0;
    ssize_t w = sfs_write_ino(ap->x->e->fs, ap->tx, ip, off, p, (size_t)n);
    return w == (ssize_t)n ? 0 : w < 0 ? (int)w : -ENOSPC;
}

/* The bytes of write m: its data, or the pieces of the run apply_run
 * applies as m. */
static int write_mut(struct apply *ap, struct sfs_inode *ip, const struct fop_mut *m)
{
    if (!ap->run)
        return write_all(ap, ip, m->off, m->data, m->len);
    ssize_t w = sfs_writev_ino(ap->x->e->fs, ap->tx, ip, m->off, ap->run, ap->nrun);
    return w == (ssize_t)m->len ? 0 : w < 0 ? (int)w : -ENOSPC;
}

/* Each thread that applies ops keeps one scratch buffer, freed when the
 * thread exits, instead of a malloc/free per op: it holds the first undo
 * of an op (most ops save one block or nothing). */
#define SCRATCH_BYTES (64u << 10)

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void make_scratch_key(void)
{
    pthread_key_create(&scratch_key, free);
}

/* The thread's scratch buffer, or NULL (out of memory). */
static uint8_t *scratch(void)
{
    pthread_once(&scratch_once, make_scratch_key);
    uint8_t *p = pthread_getspecific(scratch_key);
    if (!p && (p = malloc(SCRATCH_BYTES)) != NULL)
        pthread_setspecific(scratch_key, p);
    return p;
}

/* Saves bytes [off, end) of ip into u (the undo of a change to them). */
static int save_old(struct apply *ap, struct sfs_inode *ip, uint64_t off, uint64_t end,
                    struct undo *u)
{
    u->old_off = off;
    u->old_len = end > off ? end - off : 0;
    if (!u->old_len)
        return 0;
    if (!ap->scratch_used && u->old_len <= SCRATCH_BYTES && (u->old = scratch()) != NULL)
        u->scratch = ap->scratch_used = true;
    else
        u->old = malloc(u->old_len);
    if (!u->old)
        return -ENOMEM;
    ssize_t n = sfs_read_ino(ap->x->e->fs, ip, off, u->old, (size_t)u->old_len);
    if (n < 0)
        return (int)n;
    memset(u->old + n, 0, u->old_len - (uint64_t)n);
    return 0;
}

/* Enough free blocks for a shadow copy of nblk blocks (its old blocks
 * are not reusable before the commit). */
static int shadow_room(struct apply *ap, uint64_t nblk)
{
    struct sfs_statfs st;
    int r = sfs_statfs(ap->x->e->fs, &st);
    if (!r && st.blocks_free < nblk + COW_SPARE_BLOCKS)
        r = -ENOSPC;
    return r;
}

/* Copy-on-write overwrite: whole blocks [A, E) below the base size are
 * read, merged with the new bytes, punched out and written anew. */
static int write_shadow(struct apply *ap, const struct cfile *f, const struct fop_mut *m,
                        uint64_t size, struct undo *u)
{
    uint64_t end = m->off + m->len, a = m->off / BS * BS;
    uint64_t e = (min64(end, f->base_size) + BS - 1) / BS * BS;
    uint64_t old_end = min64(max64(e, end), size), wend = max64(end, old_end);
    int r = save_old(ap, f->ip, a, old_end, u);
    uint8_t *buf = r ? NULL : malloc(wend - a);
    if (!r && !buf)
        r = -ENOMEM;
    if (!r)
        r = shadow_room(ap, (e - a) / BS);
    if (!r) {
        if (u->old_len)
            memcpy(buf, u->old, u->old_len);
        memset(buf + u->old_len, 0, wend - a - u->old_len);
        memcpy(buf + (m->off - a), m->data, m->len);
        u->armed = true;
        r = sfs_fallocate_ino(ap->x->e->fs, ap->tx, f->ip,
                              SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE, a, e - a);
    }
    if (!r)
        r = write_all(ap, f->ip, a, buf, wend - a);
    free(buf);
    return r;
}

/* A writer that is not root removes the file's capabilities with its
 * change (PERM_XATTR_CAPS), in the op's transaction; the undo puts them
 * back. A value too large to keep for the undo is refused (-E2BIG). */
static int kill_caps(struct apply *ap, const struct cfile *f, struct undo *u)
{
    struct sfs *fs = ap->x->e->fs;
    ssize_t n = sfs_getxattr(fs, f->ino, PERM_XATTR_CAPS, u->caps, sizeof(u->caps));
    if (n == -ENODATA)
        return 0;
    if (n < 0)
        return n == -ERANGE ? -E2BIG : (int)n;
    int r = sfs_removexattr(fs, ap->tx, f->ino, PERM_XATTR_CAPS);
    u->caps_len = r ? 0 : (uint8_t)n;
    return r;
}

/* A writer without CAP_FSETID clears the file's set-id bits with its
 * change (perm_setid_kill), in the op's transaction; the undo puts them
 * back. Root clears nothing (perm_setid_kill, kill_caps' callers): no
 * attribute read. The mode is read here, not kept from the op's start:
 * mode changes do not take the stripes. */
static int kill_setid(struct apply *ap, const struct cfile *f, struct undo *u)
{
    if (ap->x->cred->uid == 0)
        return 0;
    struct sfs_attr a = { 0 };
    int r = sfs_getattr_ino(ap->x->e->fs, f->ip, &a);
    uint32_t kill = r ? 0 : perm_setid_kill(ap->x->cred, &a);
    if (!r && ap->x->cred->uid != 0 && S_ISREG(a.mode))
        r = kill_caps(ap, f, u);
    if (!kill || r)
        return r;
    struct sfs_attr in = { .mode = a.mode & ~kill };
    r = sfs_setattr_ino(ap->x->e->fs, ap->tx, f->ip, &in, SFS_SET_MODE, NULL);
    u->killed = r == 0;
    u->old_mode = a.mode;
    return r;
}

/* Writes m; autorec: its whole blocks taken from the op's log where its
 * operand is instead (oplog.h "Adoption"; nothing to copy, the bytes are
 * on the media already), then the rest written. A move the file system
 * refuses changed nothing: then the whole write is written. */
static int adopt_or_write(struct apply *ap, const struct cfile *f, const struct fop_mut *m,
                          struct undo *u)
{
    struct fop_run *x = ap->x;
    uint64_t from = ap->run ? 0 : fop_oplog_adopt_from(x, m->step, m->off, m->data, m->len);
    uint64_t n = m->len / BS * BS;
    int r = from ? sfs_move_blocks(x->e->fs, ap->tx, x->oplog, from, f->ino, m->off, n)
                 : -EINVAL;
    if (r == -EINVAL || r == -EBUSY || r == -E2BIG)
        return write_mut(ap, f->ip, m);
    if (r)
        return r;
    u->adopted = n;
    u->adopt_from = from;
    __atomic_add_fetch(&x->e->oplog_adopted, n, __ATOMIC_RELAXED);
    return write_all(ap, f->ip, m->off + n, m->data + n, m->len - n);
}

static int apply_write(struct apply *ap, const struct fop_mut *m, struct undo *u)
{
    const struct cfile *f = &ap->x->files[m->file];
    uint64_t size = cur_size(ap, m->file);
    int r = m->len ? kill_setid(ap, f, u) : 0;
    if (r)
        return r;
    u->old_size = size;
    if (ap->cow && m->off < f->base_size && m->len)
        r = write_shadow(ap, f, m, size, u);
    else if (ap->lone)
        r = write_mut(ap, f->ip, m);   /* nothing to undo */
    else if ((r = save_old(ap, f->ip, m->off, min64(m->off + m->len, size), u)) == 0) {
        u->armed = true;
        r = adopt_or_write(ap, f, m, u);
    }
    if (!r)
        ap->size[m->file] = size_after(m, size);
    return r;
}

/* A shrink to t inside a block the committed file holds: that block is
 * shadowed, since a later extension would zero its tail in place. */
static int apply_trunc(struct apply *ap, const struct fop_mut *m, struct undo *u)
{
    const struct cfile *f = &ap->x->files[m->file];
    uint64_t size = cur_size(ap, m->file), t = m->off, hb = t / BS * BS;
    int r = kill_setid(ap, f, u);
    if (r)
        return r;
    bool shadow = ap->cow && t < size && t % BS && t < f->base_size;
    u->old_size = size;
    r = save_old(ap, f->ip, shadow ? hb : t, size, u);   /* the head too if shadowed */
    if (!r && shadow)
        r = shadow_room(ap, 1);
    if (r)
        return r;
    u->armed = true;
    r = set_size(ap, f->ip, t);
    if (!r && shadow)
        r = sfs_fallocate_ino(ap->x->e->fs, ap->tx, f->ip,
                              SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE, hb, BS);
    if (!r && shadow)
        r = write_all(ap, f->ip, hb, u->old, t - hb);
    if (!r)
        ap->size[m->file] = t;
    return r;
}

static int apply_create(struct apply *ap, const struct fop_mut *m, struct undo *u)
{
    struct cfile *f = &ap->x->files[m->file];
    struct sfs *fs = ap->x->e->fs;
    struct sfs_attr a;
    int r = sfs_mknod(fs, ap->tx, f->parent, f->name, f->cmode, 0, f->cuid, f->cgid, &a);
    if (r == -EEXIST)
        return f->excl ? -EEXIST : -EAGAIN;   /* someone else created it meanwhile */
    if (r)
        return r;
    u->armed = true;
    f->ino = a.ino;
    f->base_size = 0;
    ap->size[m->file] = 0;
    return sfs_iget_ino(fs, a.ino, &f->ip);
}

static int apply_unlink(struct apply *ap, const struct fop_mut *m, struct undo *u)
{
    const struct cfile *f = &ap->x->files[m->file];
    struct sfs_attr a;
    int r = sfs_lookup(ap->x->e->fs, m->parent, m->name, &a);
    if (!r && a.ino != f->ino)
        r = -EAGAIN;   /* the name was replaced after the check */
    if (!r)
        r = sfs_unlink(ap->x->e->fs, ap->tx, m->parent, m->name);
    u->armed = r == 0;
    return r;
}

/* Whether mutation k is a write that apply_write does in place (not a
 * shadow copy). */
static bool plain_write(const struct apply *ap, unsigned k)
{
    const struct fop_mut *m = &ap->x->muts[k];
    return m->kind == MUT_WRITE && m->len &&
           !(ap->cow && m->off < ap->x->files[m->file].base_size);
}

/* How many mutations from seq[i] are plain writes of one file, each
 * starting where the one before ends (an append and the append of its
 * checksum): at least 1. */
static unsigned write_run(const struct apply *ap, const unsigned *seq, unsigned i, unsigned n)
{
    const struct fop_mut *m = ap->x->muts;
    unsigned j = i + 1;
    if (ap->lone || !plain_write(ap, seq[i]))
        return 1;
    while (j < n && plain_write(ap, seq[j]) && m[seq[j]].file == m[seq[i]].file &&
           m[seq[j]].off == m[seq[j - 1]].off + m[seq[j - 1]].len)
        j++;
    return j - i;
}

/* Applies the run of `count` contiguous writes seq[0..count) as one
 * vectored write of their bytes where they are (one pass over the file's
 * mapping and its partial blocks instead of one per write, no gathering
 * copy); seq[0]'s undo covers them all, the others stay unarmed. */
static int apply_run(struct apply *ap, const unsigned *seq, unsigned count)
{
    struct fop_mut one = ap->x->muts[seq[0]];
    struct iovec iov[FOP_MAX_MUTS];
    one.len = 0;
    for (unsigned k = 0; k < count; k++) {
        const struct fop_mut *m = &ap->x->muts[seq[k]];
        iov[k] = (struct iovec){ (void *)m->data, m->len };
        one.len += m->len;
    }
    one.data = NULL;   /* write_mut takes the pieces */
    ap->run = iov;
    ap->nrun = count;
    int r = apply_write(ap, &one, &ap->u[seq[0]]);
    ap->run = NULL;
    return r;
}

static int apply_one(struct apply *ap, unsigned k)
{
    const struct fop_mut *m = &ap->x->muts[k];
    switch (m->kind) {
    case MUT_CREATE: return apply_create(ap, m, &ap->u[k]);
    case MUT_WRITE: return apply_write(ap, m, &ap->u[k]);
    case MUT_TRUNC: return apply_trunc(ap, m, &ap->u[k]);
    case MUT_UNLINK: return apply_unlink(ap, m, &ap->u[k]);
    default: return 0;   /* CLOSE_FH: after the commit */
    }
}

/* Removes the file the op created; its reference is dropped after the
 * transaction (an inode is freed outside any handle). */
static int undo_create(struct apply *ap, unsigned fi)
{
    struct fop_run *x = ap->x;
    struct cfile *f = &x->files[fi];
    int r = sfs_unlink(x->e->fs, ap->tx, f->parent, f->name);
    if (f->ip && x->ndead < WIRE_MAX_STEPS) {
        x->dead[x->ndead++] = f->ip;
        f->ip = NULL;
    }
    f->ino = 0;
    return r;
}

/* Gives an adopting write's blocks back to the op's log, then restores
 * the size, then the saved bytes. */
static int undo_data(struct apply *ap, const struct cfile *f, const struct fop_mut *m,
                     const struct undo *u)
{
    uint64_t size;
    int r = u->adopted ? sfs_move_blocks(ap->x->e->fs, ap->tx, f->ino, m->off, ap->x->oplog,
                                         u->adopt_from, u->adopted)
                       : 0;
    if (!r)
        r = size_of(ap->x->e->fs, f->ip, &size);
    if (!r && size != u->old_size)
        r = set_size(ap, f->ip, u->old_size);
    if (!r)
        r = write_all(ap, f->ip, u->old_off, u->old, u->old_len);
    return r;
}

static int undo_change(struct apply *ap, unsigned k)
{
    const struct fop_mut *m = &ap->x->muts[k];
    const struct undo *u = &ap->u[k];
    const struct cfile *f = &ap->x->files[m->file];
    if (!u->armed)
        return 0;
    switch (m->kind) {
    case MUT_CREATE: return undo_create(ap, m->file);
    case MUT_WRITE: case MUT_TRUNC: return undo_data(ap, f, m, u);
    case MUT_UNLINK: return sfs_link(ap->x->e->fs, ap->tx, f->ino, m->parent, m->name, NULL);
    default: return 0;
    }
}

/* The change, then the set-id bits it cleared (the reverse of apply). */
static int undo_one(struct apply *ap, unsigned k)
{
    const struct undo *u = &ap->u[k];
    const struct cfile *f = &ap->x->files[ap->x->muts[k].file];
    uint64_t ino = f->ino;
    int r = undo_change(ap, k);
    if (!r && u->killed) {
        struct sfs_attr in = { .mode = u->old_mode };
        r = sfs_setattr_ino(ap->x->e->fs, ap->tx, f->ip, &in, SFS_SET_MODE, NULL);
    }
    if (!r && u->caps_len > 0)
        r = sfs_setxattr(ap->x->e->fs, ap->tx, ino, PERM_XATTR_CAPS, u->caps,
                         (size_t)u->caps_len, 0);
    return r;
}

/* Undoes seq[upto], seq[upto - 1], ..., seq[0]. */
static void undo_all(struct apply *ap, const unsigned *seq, unsigned upto)
{
    for (unsigned i = upto + 1; i-- > 0;) {
        int r = undo_one(ap, seq[i]);
        if (r)
            fprintf(stderr, "cisc device: undo of step %u failed (%s); the fused op may be "
                            "partly applied\n", ap->x->muts[seq[i]].step, strerror(-r));
    }
}

/* Whether a mutation clears set-id bits or capabilities (kill_setid): its data must then
 * not reach the media before the transaction that clears them commits. */
static bool kills_setid(const struct fop_run *x, unsigned k0)
{
    if (x->cred->uid == 0)
        return false;   /* root clears nothing (perm_setid_kill, kill_caps) */
    for (unsigned k = k0; k < x->nmuts; k++) {
        const struct fop_mut *m = &x->muts[k];
        const struct cfile *f = &x->files[m->file];
        struct sfs_attr a;
        if ((m->kind == MUT_WRITE || m->kind == MUT_TRUNC) && f->ip &&
            !sfs_getattr_ino(x->e->fs, f->ip, &a) &&
            (perm_setid_kill(x->cred, &a) ||
             (x->cred->uid != 0 && S_ISREG(a.mode) &&
              sfs_getxattr(x->e->fs, f->ino, PERM_XATTR_CAPS, NULL, 0) >= 0)))
            return true;
    }
    return false;
}

/* Copy-on-write unless the op is one overwrite inside one block of what
 * the file already holds (one block write is atomic on the media), or it
 * clears set-id bits. */
static bool need_cow(const struct fop_run *x, unsigned k0, unsigned nreal)
{
    if (nreal == 1 && kills_setid(x, k0))
        return true;
    if (nreal != 1)
        return nreal > 1;
    for (unsigned k = k0; k < x->nmuts; k++) {
        const struct fop_mut *m = &x->muts[k];
        if (m->kind == MUT_WRITE) {
            const struct cfile *f = &x->files[m->file];
            bool inside = m->off + m->len <= f->base_size;
            return !(inside && (m->len == 0 || m->off / BS == (m->off + m->len - 1) / BS));
        }
    }
    return false;   /* one create, truncate or unlink: one metadata change */
}

static uint64_t blocks_of(uint64_t bytes)
{
    return (bytes + BS - 1) / BS;
}

/* Refuses up front (-ENOSPC at the step that crosses the line) an op
 * whose mutations and their undo could need more blocks or inodes than
 * are free: blocks freed inside the transaction are not reusable before
 * it commits, so space must not run out halfway. An upper bound:
 * every write may allocate its blocks twice (new data, then its undo
 * after a failed copy-on-write), every shrink may have to rewrite its
 * tail. Other writers may still take the space meanwhile (then the
 * mutation fails and is undone). */
static int space_check(struct apply *ap)
{
    struct fop_run *x = ap->x;
    struct sfs_statfs st;
    int r = sfs_statfs(x->e->fs, &st);
    if (r)
        return r;
    uint64_t blocks = COW_SPARE_BLOCKS, inodes = 0;
    for (unsigned k = ap->k0; k < x->nmuts; k++) {
        const struct fop_mut *m = &x->muts[k];
        if (m->kind == MUT_WRITE)
            blocks += 2 * blocks_of(m->len) + 2;
        else if (m->kind == MUT_TRUNC)
            blocks += blocks_of(m->len > m->off ? m->len - m->off : 0) + 1;
        inodes += m->kind == MUT_CREATE;
        if (blocks > st.blocks_free || inodes > st.inodes_free) {
            ap->bad = m->step;
            return -ENOSPC;
        }
    }
    return 0;
}

/* Records what the op changed, for the FUSE mount's caches (a watcher
 * that invalidates them; engine.h eng_chg). Files beyond the record's
 * capacity widen its first entry only. */
static void note_changes(struct fop_run *x)
{
    for (unsigned k = 0; k < x->nmuts; k++) {
        const struct fop_mut *m = &x->muts[k];
        const struct cfile *f = &x->files[m->file];
        if (m->kind == MUT_CREATE)
            eng_chg_entry(x->cmd, f->parent, f->name);
        else if (m->kind == MUT_UNLINK)
            eng_chg_entry(x->cmd, m->parent, m->name);
        if (m->kind == MUT_WRITE)
            eng_chg_inode(x->cmd, f->ino, (int64_t)m->off, (int64_t)m->len);
        else if (m->kind != MUT_CLOSE_FH)
            eng_chg_inode(x->cmd, f->ino, m->kind == MUT_TRUNC ? 0 : -1, 0);
    }
}

/* After success: durability without a transaction, session handles. */
static int finish(struct fop_run *x, bool had_tx)
{
    int r = 0;
    note_changes(x);
    for (unsigned i = 0; !had_tx && !r && i < x->nfiles; i++)
        if (x->files[i].fsync && x->files[i].ino)
            r = sfs_fsync(x->e->fs, x->files[i].ino, x->files[i].datasync);
    for (unsigned k = 0; k < x->nmuts; k++) {
        struct hdl h;
        if (x->muts[k].kind == MUT_CLOSE_FH && !hdl_close(x->hdl, x->muts[k].fh, &h))
            sfs_iput(x->e->fs, h.ino);
    }
    return r;
}

/* The first FSYNC step (to carry a durability error). */
static unsigned fsync_step(const struct fop_run *x)
{
    for (unsigned i = 0; i < x->v->n; i++)
        if (x->v->st[i].kind == WIRE_STEP_FSYNC)
            return i;
    return x->v->n - 1;
}

/* Application order: every mutation in step order, except unlinks,
 * which come last (StorageFS cannot link back an inode whose last name
 * is gone, so nothing may fail after an unlink but another unlink).
 * Moving them is invisible: the op's own later OPENs already saw the
 * name as removed, and its handles keep the inode. */
static unsigned order(const struct fop_run *x, unsigned k0, unsigned *seq)
{
    unsigned n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (unsigned k = k0; k < x->nmuts; k++)
            if (x->muts[k].kind != MUT_CLOSE_FH &&
                (x->muts[k].kind == MUT_UNLINK) == (pass == 1))
                seq[n++] = k;
    return n;
}

/* Bytes the mutations seq[0, n) write. */
static uint64_t bytes_written(const struct fop_run *x, const unsigned *seq, unsigned n)
{
    uint64_t b = 0;
    for (unsigned i = 0; i < n; i++)
        if (x->muts[seq[i]].kind == MUT_WRITE)
            b += x->muts[seq[i]].len;
    return b;
}

/* Whether the commit of muts seq[0, n) is flushed, in an op with an FSYNC
 * step. Macro: its one commit. Micro (fused.h "Transaction modes"): the
 * commit of its last step that may mutate (the journal commits in order:
 * it makes the earlier steps durable too; fop_apply flushes at the end
 * when that step committed nothing), and a step too large to redo
 * cheaply. Autorec: the durable receipt (oplog.h) already guarantees
 * the step after a crash (recovery redoes a step whose commit was lost):
 * only a step too large to redo cheaply (oplog.h "Flushes"). */
static bool flushed(const struct apply *ap, const unsigned *seq, unsigned n)
{
    const struct fop_run *x = ap->x;
    if (x->tx == WIRE_TX_MACRO)
        return true;
    if (x->tx == WIRE_TX_MICRO && ap->cstep == x->commit_step)
        return true;
    return bytes_written(x, seq, n) >= FOP_REDO_FLUSH_BYTES;
}

/* Micro: whether muts seq[0, n) shrink a file. Such a step's commit is
 * flushed whatever the op asked: until the smaller size is on the media,
 * a later step's in-place write past the new end (an append into the
 * same block, or the zeroing of its tail when the file grows) would land
 * in bytes the media still shows as the file's, and a power cut before
 * the later commit would leave them there. With it flushed, what a later
 * step writes past the end is invisible until that step commits. */
static bool shrinks(const struct apply *ap, const unsigned *seq, unsigned n)
{
    const struct fop_run *x = ap->x;
    if (x->tx != WIRE_TX_MICRO)
        return false;
    for (unsigned i = 0; i < n; i++) {
        const struct fop_mut *m = &x->muts[seq[i]];
        if (m->kind == MUT_TRUNC && m->off < x->files[m->file].base_size)
            return true;
    }
    return false;
}

/* Applies muts[k0, nmuts) in one transaction and commits it (durably
 * when the op asked for durability: flushed()). On failure the undo runs inside the
 * transaction and ap->bad names the failing step. */
static int apply_tx(struct apply *ap)
{
    struct fop_run *x = ap->x;
    unsigned seq[FOP_MAX_MUTS], n = order(x, ap->k0, seq), i = 0;
    /* Before the transaction, not inside it: a crash here leaves what a
     * crash before the commit leaves, and a thread held at an "@K" point
     * (crash.h) holds no handle that others' commits would wait for. */
    fop_crash_point(FOP_CRASH_BEFORE_COMMIT, ap->cstep);
    int r = space_check(ap);
    if (r)
        return r;
    /* A micro step that writes in place (not copy-on-write: one overwrite
     * inside one block) journals that block, so that its commit is the
     * step's commit: a crash before it leaves the old bytes. */
    unsigned flags = x->tx != WIRE_TX_MACRO && !ap->cow ? SFS_TXN_DATA_JOURNAL : 0;
    /* A durable commit is written by this thread, not handed to the
     * journal's thread and back (two sleeps and wake-ups per op: on an
     * idle host each wake-up costs tens of microseconds, most of a small
     * macro op's time); a micro op commits once per mutating step. */
    flags |= SFS_TXN_COMMIT_HERE;
    /* A macro op's lone overwrite (attempt(): one write inside one block
     * the file holds, nothing after it that can fail) is one media write
     * under a journal handle of its own, as a RISC write is: it needs no
     * transaction to begin and commit around it. */
    bool bare = ap->lone && x->tx == WIRE_TX_MACRO && x->muts[seq[0]].kind == MUT_WRITE;
    r = bare ? 0 : sfs_txn_begin_flags(x->e->fs, flags, &ap->tx);
    for (; !r && i < n; i++) {
        unsigned run = write_run(ap, seq, i, n);
        if ((r = run > 1 ? apply_run(ap, seq + i, run) : apply_one(ap, seq[i])) != 0)
            break;   /* a run's failure is its first step's */
        i += run - 1;
    }
    if (!r && x->oplog && (r = fop_oplog_step(x, ap->tx, ap->cstep)) != 0)
        i = n - 1;   /* the step's record joins its commit, or the step is undone */
    if (r && (ap->tx || bare))
        undo_all(ap, seq, i < n ? i : n - 1);
    bool durable = (x->fsync && flushed(ap, seq, n)) || shrinks(ap, seq, n);
    int c = ap->tx ? sfs_txn_commit(ap->tx, durable && !r)
                   : bare && durable && !r ? sfs_sync(x->e->fs) : 0;
    if (r) {
        ap->bad = x->muts[seq[i < n ? i : 0]].step;
        return r;
    }
    if (c) {
        ap->bad = x->tx == WIRE_TX_MACRO ? fsync_step(x) : ap->cstep;
        return c;
    }
    x->unsynced = x->tx == WIRE_TX_MICRO && !durable;
    fop_crash_after(x, ap->cstep);
    return 0;
}

/* One attempt: a transaction for muts[k0, nmuts), undo on failure; the
 * failing step in *bad. */
static int attempt(struct fop_run *x, unsigned k0, unsigned cstep, unsigned *bad)
{
    struct apply on_stack, *ap = &on_stack;   /* a few KiB: no allocation per op */
    ap->tx = NULL;
    ap->run = NULL;
    ap->scratch_used = false;
    memset(ap->u, 0, x->nmuts * sizeof(ap->u[0]));
    unsigned nreal = 0;
    for (unsigned k = k0; k < x->nmuts; k++)
        nreal += x->muts[k].kind != MUT_CLOSE_FH;
    ap->x = x;
    ap->k0 = k0;
    ap->cstep = cstep;
    ap->bad = cstep;
    ap->cow = need_cow(x, k0, nreal);
    /* A write of one block either happens or changes nothing (one media
     * write; a new block is mapped only after its data is written), so
     * when no later mutation or log record of the transaction can fail,
     * its undo (a read of the old bytes) is never needed. */
    ap->lone = nreal == 1 && !ap->cow && !x->oplog;
    track_sizes(ap);
    int r = apply_tx(ap);
    *bad = ap->bad;
    for (unsigned k = 0; k < x->nmuts; k++)
        if (!ap->u[k].scratch)
            free(ap->u[k].old);
    return r;
}

/* Whether muts[k0, nmuts) change anything (CLOSE_FH waits for the end). */
static bool any_real(const struct fop_run *x, unsigned k0)
{
    for (unsigned k = k0; k < x->nmuts; k++)
        if (x->muts[k].kind != MUT_CLOSE_FH)
            return true;
    return false;
}

/* Applies muts[k0, nmuts) as the commit of step cstep, or nothing;
 * -errno with the failing step in *bad. */
static int apply_range(struct fop_run *x, unsigned k0, unsigned cstep, unsigned *bad)
{
    int r = attempt(x, k0, cstep, bad);
    if (r == -ENOSPC) {
        /* Blocks freed by transactions not committed yet are not
         * reusable: commit everything once (the mutations were undone)
         * and try again. */
        int s = sfs_sync(x->e->fs);
        r = s ? r : attempt(x, k0, cstep, bad);
    }
    return r;
}

int fop_apply_step(struct fop_run *x, unsigned i, unsigned k0, bool *applied)
{
    *applied = any_real(x, k0);
    if (!*applied)
        return 0;
    unsigned bad;
    int r = apply_range(x, k0, i, &bad);
    if (!r)
        x->applied = true;
    return r;
}

/* Micro, in an op with an FSYNC step: the steps' commits not flushed
 * yet (flushed()) are made durable with one commit of the journal's
 * running transaction, written by this thread. Returns 0 or -errno. */
static int flush_steps(struct fop_run *x)
{
    if (x->tx != WIRE_TX_MICRO || !x->fsync || !x->unsynced)
        return 0;
    struct sfs_txn *tx;
    int r = sfs_txn_begin_flags(x->e->fs, SFS_TXN_COMMIT_HERE, &tx);
    if (!r)
        r = sfs_txn_commit(tx, true);
    x->unsynced = r != 0;
    return r;
}

int fop_apply(struct fop_run *x)
{
    bool any = x->tx == WIRE_TX_MACRO ? any_real(x, 0) : x->applied;
    int r = 0;
    if (x->tx == WIRE_TX_MACRO && any) {
        unsigned bad;
        r = apply_range(x, 0, x->commit_step, &bad);
        if (r)
            fop_fail(x->v, bad, r);
    } else if (x->tx == WIRE_TX_MACRO) {
        fop_crash_point(FOP_CRASH_BEFORE_COMMIT, x->commit_step);
        fop_crash_point(FOP_CRASH_AFTER_COMMIT, x->commit_step);
    }
    if (r)
        return r;
    if ((r = flush_steps(x)) == 0)
        r = finish(x, any);
    if (r) {
        if (x->tx == WIRE_TX_MACRO)
            fop_fail(x->v, fsync_step(x), r);
        else
            fop_fail_one(x->v, fsync_step(x), r);
    }
    return r;
}
