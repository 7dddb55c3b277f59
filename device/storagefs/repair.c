/*
 * device/storagefs/repair.c - sfs_repair: fixes the kinds of damage the
 * checker marks fixable (fck_fixable), on an unmounted image.
 *
 * Each round runs the whole checker (fck_run), and when every problem it
 * found is fixable, mounts the image read-write and makes the fixes as
 * ordinary journaled operations, then unmounts cleanly. Rounds repeat
 * until the checker finds nothing (a fix can reveal the next: a lost
 * inode brought back owns blocks the previous round saw as leaked).
 *
 * Invariants:
 *   1. Every change goes through the journal (a handle per fix), so a
 *      crash during repair leaves the image as it was before some fix:
 *      running repair again goes on from there.
 *   2. Nothing is repaired while the checker reports a problem it cannot
 *      fix (corrupt blocks, broken trees, blocks claimed twice): fixing
 *      around a broken structure could make it worse.
 *   3. Bits are set before anything allocates (lost+found), and bits
 *      are cleared (leaks) only in a round that brought no inode back.
 *   4. No data is thrown away that a name or link count still claims:
 *      an inode with links but no entry goes to /lost+found; only an
 *      inode with no links (a deletion that lost its orphan record) is
 *      freed, through the orphan list.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/dir.h"
#include "device/storagefs/fsck_int.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"

#define REPAIR_ROUNDS 6
#define FIX_CREDITS 16u          /* a fix dirties at most an entry's path and 2 inodes */

struct rep {
    struct sfs *fs;
    const struct fck *f;
    sfs_problem_fn fn;
    void *arg;
    uint64_t fixed;
    uint64_t lf;                 /* lost+found, 0 until needed */
    int err;                     /* first failure */
};

static void say(struct rep *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct rep *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof(msg), "repaired: ");
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    r->fixed++;
    if (r->fn)
        r->fn(r->arg, msg);
}

static void fail(struct rep *r, int err)
{
    if (!r->err)
        r->err = err;
}

static bool bit(const uint8_t *map, uint64_t i)
{
    return (map[i / 8] >> (i % 8)) & 1;
}

/* ---- bitmaps ------------------------------------------------------------------ */

/* Sets (want = true: referenced but marked free) or clears (leaked) the
 * bits of data blocks whose bitmap block verified; reports runs. */
static void fix_block_bits(struct rep *r, bool want)
{
    const struct fck *f = r->f;
    uint64_t run = 0, start = 0;
    for (uint64_t b = f->sb.data_start; b <= f->sb.backup_blkno; b++) {
        bool wrong = b < f->sb.backup_blkno && f->bbm_ok[b / SFS_BITMAP_BITS] &&
                     bit(f->claimed, b) == want && bit(f->bbm, b) != want;
        if (wrong) {
            struct jnl_handle *h;
            int e = sfs_op_begin(r->fs, NULL, FIX_CREDITS, &h);
            if (e) {
                fail(r, e);
                return;
            }
            alloc_repair_block(r->fs, h, b, want);
            sfs_op_end(r->fs, h);
            if (run++ == 0)
                start = b;
            continue;
        }
        if (run)
            say(r, "blocks %" PRIu64 "-%" PRIu64 " marked %s in the block bitmap", start,
                start + run - 1, want ? "in use (they are referenced)"
                                      : "free (nothing references them)");
        run = 0;
    }
}

/* ---- directory entries naming free inodes ------------------------------------- */

static int del_entry(struct rep *r, const struct fck_dangling *d)
{
    struct jnl_handle *h;
    struct sfs_inode *dp;
    int e = inode_get(r->fs, d->dir, &dp);
    if (e)
        return e;
    if ((e = sfs_op_begin(r->fs, NULL, FIX_CREDITS, &h)) == 0) {
        pthread_rwlock_wrlock(&dp->rw);
        e = dir_del(r->fs, h, dp, d->key);
        pthread_rwlock_unlock(&dp->rw);
        sfs_op_end(r->fs, h);
    }
    inode_put(r->fs, dp);
    return e;
}

/* Returns how many inodes were brought back (their bit restored). */
static uint64_t fix_dangling(struct rep *r)
{
    uint64_t back = 0;
    for (size_t i = 0; i < r->f->ndang && !r->err; i++) {
        const struct fck_dangling *d = &r->f->dang[i];
        if (d->restore) {
            if (alloc_inode_used(r->fs, d->ino))
                continue;        /* another entry brought it back */
            struct jnl_handle *h;
            int e = sfs_op_begin(r->fs, NULL, FIX_CREDITS, &h);
            if (e) {
                fail(r, e);
                break;
            }
            alloc_repair_inode(r->fs, h, d->ino);
            sfs_op_end(r->fs, h);
            say(r, "inode %" PRIu64 " marked in use in the inode bitmap (directory %" PRIu64
                " names it and its slot holds a valid inode)", d->ino, d->dir);
            back++;
            continue;
        }
        int e = del_entry(r, d);
        if (e)
            fail(r, e);
        else
            say(r, "directory %" PRIu64 ": removed the entry naming inode %" PRIu64
                " (not in use, and its slot holds no valid inode)", d->dir, d->ino);
    }
    return back;
}

/* Frees the numbers of allocated inodes whose slot is corrupt (nothing
 * of them can be read back). Returns how many. */
static uint64_t fix_bad_slots(struct rep *r)
{
    uint64_t n = 0;
    for (uint64_t i = 2; i < r->f->sb.ninodes && !r->err; i++) {
        if (r->f->in[i].bad != 2 || !alloc_inode_used(r->fs, i))
            continue;
        struct jnl_handle *h;
        int e = sfs_op_begin(r->fs, NULL, FIX_CREDITS, &h);
        if (e) {
            fail(r, e);
            break;
        }
        alloc_free_inode(r->fs, h, i);
        sfs_op_end(r->fs, h);
        say(r, "inode %" PRIu64 " freed: its slot is corrupt (entries naming it and its "
            "blocks are cleaned up next)", i);
        n++;
    }
    return n;
}

/* ---- link counts, lost inodes ------------------------------------------------------ */

static int set_nlink(struct rep *r, uint64_t ino, uint32_t nlink)
{
    struct sfs_inode *ip;
    struct jnl_handle *h;
    int e = inode_get(r->fs, ino, &ip);
    if (e)
        return e;
    if ((e = sfs_op_begin(r->fs, NULL, FIX_CREDITS, &h)) == 0) {
        pthread_rwlock_wrlock(&ip->rw);
        ip->d.nlink = nlink;
        e = inode_dirty(h, ip);
        if (!e && nlink == 0 && !ip->orphan)
            e = orphan_add(r->fs, h, ip);   /* freed when the repair unmounts */
        pthread_rwlock_unlock(&ip->rw);
        sfs_op_end(r->fs, h);
    }
    inode_put(r->fs, ip);
    return e;
}

static int lost_found(struct rep *r)
{
    if (r->lf)
        return 0;
    struct sfs_attr a;
    int e = sfs_lookup(r->fs, SFS_ROOT_INO, "lost+found", &a);
    if (e == -ENOENT)
        e = sfs_mkdir(r->fs, NULL, SFS_ROOT_INO, "lost+found", 0700, 0, 0, &a);
    if (!e && !S_ISDIR(a.mode))
        e = -ENOTDIR;
    if (!e)
        r->lf = a.ino;
    return e;
}

/* Links ino into lost+found as "#ino", with one link (directories: its
 * parent becomes lost+found, which gains a subdirectory). */
static int link_lost(struct rep *r, struct sfs_inode *lp, struct sfs_inode *ip)
{
    char name[32];
    int len = snprintf(name, sizeof(name), "#%" PRIu64, ip->ino);
    struct jnl_handle *h;
    int e = sfs_op_begin(r->fs, NULL, FIX_CREDITS, &h);
    if (e)
        return e;
    struct sfs_inode *first = lp->ino < ip->ino ? lp : ip, *second = first == lp ? ip : lp;
    pthread_rwlock_wrlock(&first->rw);
    pthread_rwlock_wrlock(&second->rw);
    bool isdir = S_ISDIR(ip->d.mode);
    e = dir_add(r->fs, h, lp, name, (size_t)len, ip->ino, dir_type_of(ip->d.mode));
    if (!e && isdir) {
        ip->d.parent = lp->ino;
        lp->d.nlink++;
        e = inode_dirty(h, lp);
    } else if (!e) {
        ip->d.nlink = 1;
    }
    if (!e)
        e = inode_dirty(h, ip);
    pthread_rwlock_unlock(&second->rw);
    pthread_rwlock_unlock(&first->rw);
    sfs_op_end(r->fs, h);
    return e;
}

static int move_lost(struct rep *r, uint64_t ino)
{
    int e = lost_found(r);
    struct sfs_inode *lp = NULL, *ip = NULL;
    if (!e)
        e = inode_get(r->fs, r->lf, &lp);
    if (!e)
        e = inode_get(r->fs, ino, &ip);
    if (!e)
        e = link_lost(r, lp, ip);
    if (ip)
        inode_put(r->fs, ip);
    if (lp)
        inode_put(r->fs, lp);
    return e;
}

static void fix_inode(struct rep *r, uint64_t ino)
{
    const struct fck_inode *in = &r->f->in[ino];
    int e = 0;
    if (in->refs == 0 && in->nlink > 0 && ino != SFS_ROOT_INO) {
        if ((e = move_lost(r, ino)) == 0)
            say(r, "inode %" PRIu64 " moved to /lost+found/#%" PRIu64 ": it has %u link(s) "
                "but no directory entry names it", ino, ino, in->nlink);
    } else if (S_ISDIR(in->mode) && in->nlink && in->nlink != 2 + in->subdirs) {
        if ((e = set_nlink(r, ino, 2 + in->subdirs)) == 0)
            say(r, "directory %" PRIu64 ": link count %u set to %u", ino, in->nlink,
                2 + in->subdirs);
    } else if (!S_ISDIR(in->mode) && in->refs && in->nlink != in->refs) {
        if ((e = set_nlink(r, ino, in->refs)) == 0)
            say(r, "inode %" PRIu64 ": link count %u set to %u (its directory entries)",
                ino, in->nlink, in->refs);
    } else if (in->refs == 0 && in->nlink == 0) {
        struct sfs_inode *ip;
        if (inode_get(r->fs, ino, &ip) != 0)
            return;              /* freed by the mount (it was on the orphan list) */
        bool listed = ip->orphan;
        inode_put(r->fs, ip);
        if (!listed && (e = set_nlink(r, ino, 0)) == 0)
            say(r, "inode %" PRIu64 " freed: it has no links and no entry (a deletion "
                "that lost its orphan record)", ino);
    }
    if (e)
        fail(r, e);
}

static void fix_links(struct rep *r)
{
    for (uint64_t i = 1; i < r->f->sb.ninodes && !r->err; i++)
        if (r->f->in[i].mode && !r->f->in[i].bad)
            fix_inode(r, i);
}

/* ---- the driver ----------------------------------------------------------------------- */

/* One round of fixes on the mounted fs, in the order of invariant 3. */
static void fix_round(struct rep *r)
{
    fix_block_bits(r, true);
    uint64_t changed = r->err ? 0 : fix_dangling(r);
    if (!r->err)
        changed += fix_bad_slots(r);
    if (changed || r->err)
        return;                  /* the next round sees what they own */
    fix_links(r);
    if (!r->err)
        fix_block_bits(r, false);
}

static int mount_rw(sfs_media_open_fn open, void *oarg, struct sfs **fs)
{
    struct media *m;
    int e = open(oarg, &m);
    if (e)
        return e;
    struct sfs_mount_opts mo = {0};
    e = sfs_mount(m, &mo, fs);
    if (e)
        media_close(m);
    return e;
}

/* Checks (reporting through fn only when fn is given). Returns the
 * check's result; *f holds its state when 0. */
static int check(sfs_media_open_fn open, void *oarg, sfs_problem_fn fn, void *arg,
                 struct fck *f, struct sfs_fsck_result *res)
{
    struct media *m;
    int e = open(oarg, &m);
    if (e)
        return e;
    e = fck_run(f, m, fn, arg, res);
    media_close(m);
    if (e)
        fck_free(f);
    return e;
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

int sfs_repair(sfs_media_open_fn open, void *oarg, sfs_problem_fn fn, void *arg,
               struct sfs_repair_result *res)
{
    memset(res, 0, sizeof(*res));
    for (unsigned round = 0; round < REPAIR_ROUNDS; round++) {
        struct fck f;
        struct sfs_fsck_result cr;
        int e = check(open, oarg, round ? quiet : fn, arg, &f, &cr);
        if (e)
            return e;
        if (round == 0)
            res->check = cr;
        res->rounds = round;
        if (cr.problems == 0) {
            fck_free(&f);
            return 0;
        }
        if (cr.problems > f.fixable) {
            res->unfixable = cr.problems - f.fixable;
            fck_free(&f);
            return -EUCLEAN;
        }
        struct rep r = {.f = &f, .fn = fn, .arg = arg};
        e = mount_rw(open, oarg, &r.fs);
        if (!e) {
            fix_round(&r);
            e = sfs_unmount(r.fs);
            e = r.err ? r.err : e;
        }
        res->fixed += r.fixed;
        fck_free(&f);
        if (e)
            return e;
    }
    return -EUCLEAN;             /* did not converge: report what is left */
}
