/*
 * device/storagefs/move.c - moving whole data blocks from one file to
 * another without copying them (sfs_move_blocks): the source's extents
 * over the range are unmapped and the same physical blocks mapped into
 * the destination, both block counts and the destination's size
 * adjusted. AutoRec's append of a logged input adopts the log's blocks
 * this way instead of writing the bytes a second time (oplog.h
 * "Adoption").
 *
 * Invariants:
 *   1. One operation is one journal handle: both files' maps, counts and
 *      the new size commit together, so after a crash the blocks belong
 *      to the source or to the destination, never to both or neither.
 *   2. Everything is checked before anything changes (the arguments, the
 *      kinds, the source range all written data, the destination range a
 *      hole, room for the handle): a refusal leaves both files as they
 *      were, so a caller may fall back to copying.
 *   3. No moved block has journaled data waiting for its checkpoint
 *      (jdata.h): the destination may then write it in place, and no
 *      older image is ever checkpointed over it. A hot source with such a
 *      block cached is refused.
 *   4. Both inodes are locked, in ascending inode order (sfs_int.h 2).
 */
#include "device/storagefs/extent.h"
#include "device/storagefs/file.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/jdata.h"
#include "device/storagefs/sfs_int.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#define BS SFS_BSIZE
#define MOVE_RUNS_MAX 64u   /* source extents one move takes at most */

/* The source range as runs of physical blocks, in logical order. */
struct runs {
    unsigned n;
    struct sfs_extent e[MOVE_RUNS_MAX];   /* lblk: from the range's start */
};

/* The runs of [lblk, lblk + n) of ip: all written data, at most
 * MOVE_RUNS_MAX extents. -EINVAL for a hole or an unwritten extent,
 * -E2BIG for too many extents. */
static int collect(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, uint64_t n,
                   struct runs *rs)
{
    rs->n = 0;
    for (uint64_t at = lblk; at < lblk + n;) {
        struct sfs_extent e;
        uint64_t hole;
        int r = ext_lookup(fs, ip, at, &e, &hole);
        if (r <= 0)
            return r < 0 ? r : -EINVAL;
        if (e.flags & SFS_EXT_UNWRITTEN)
            return -EINVAL;
        if (rs->n == MOVE_RUNS_MAX)
            return -E2BIG;
        uint64_t end = e.lblk + e.len < lblk + n ? e.lblk + e.len : lblk + n;
        rs->e[rs->n++] = (struct sfs_extent){ at - lblk, e.pblk + (at - e.lblk),
                                              (uint32_t)(end - at), 0 };
        at = end;
    }
    return 0;
}

/* Invariant 3: no moved block of a hot source is in the cache. */
static int no_pending_images(struct sfs *fs, struct sfs_inode *src, const struct runs *rs)
{
    if (!jdata_hot(fs, src))
        return 0;
    for (unsigned k = 0; k < rs->n; k++)
        for (uint32_t b = 0; b < rs->e[k].len; b++) {
            uint8_t one;
            if (bcache_read_cached(fs->bc, rs->e[k].pblk + b, 0, &one, 1, false))
                return -EBUSY;
        }
    return 0;
}

/* The destination: a regular file whose range [lblk, lblk + n) is a
 * hole, starting at or below its size unless the size is a block
 * multiple (the bytes between would need zeroing). */
static int check_dst(struct sfs *fs, struct sfs_inode *dst, uint64_t off, uint64_t n)
{
    if (!S_ISREG(dst->d.mode))
        return -EINVAL;
    if (off > dst->d.size && dst->d.size % BS)
        return -EINVAL;
    struct sfs_extent e;
    uint64_t hole;
    int r = ext_lookup(fs, dst, off / BS, &e, &hole);
    if (r != 0)
        return r < 0 ? r : -EINVAL;
    return hole >= n ? 0 : -EINVAL;
}

struct move {
    struct sfs_inode *src, *dst;
    uint64_t src_off, dst_off, len;
    struct runs rs;
};

/* Every check of invariant 2 (both inodes locked); *credits: what the
 * handle needs for the runs found. */
static int move_check(struct sfs *fs, struct move *mv, uint32_t *credits)
{
    uint64_t n = mv->len / BS;
    if (!S_ISREG(mv->src->d.mode) || mv->src_off + mv->len > mv->src->d.size)
        return -EINVAL;
    int r = collect(fs, mv->src, mv->src_off / BS, n, &mv->rs);
    if (!r)
        r = check_dst(fs, mv->dst, mv->dst_off, n);
    if (!r)
        r = no_pending_images(fs, mv->src, &mv->rs);
    *credits = ext_credits(mv->src, 2 * mv->rs.n + 2) + ext_credits(mv->dst, 2 * mv->rs.n + 2) + 8;
    return r;
}

static void touch(struct sfs_inode *ip)
{
    struct timespec now = sfs_now();
    ip->d.mtime = ip->d.ctime = now.tv_sec;
    ip->d.mtime_ns = ip->d.ctime_ns = (uint32_t)now.tv_nsec;
}

/* Maps the runs into ip at lblk (+ each run's offset); on failure the
 * runs mapped so far are unmapped again. */
static int map_runs(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t lblk,
                    const struct runs *rs)
{
    for (unsigned k = 0; k < rs->n; k++) {
        struct sfs_extent e = rs->e[k];
        e.lblk += lblk;
        int r = ext_insert(fs, h, ip, &e);
        if (r) {
            if (k > 0)
                ext_remove(fs, h, ip, lblk, rs->e[k - 1].lblk + rs->e[k - 1].len, false,
                           UINT32_MAX);
            return r;
        }
    }
    return 0;
}

/* The change (both inodes locked, checked, inside h). */
static int move_locked(struct sfs *fs, struct jnl_handle *h, struct move *mv)
{
    uint64_t n = mv->len / BS, sl = mv->src_off / BS, dl = mv->dst_off / BS;
    int r = ext_remove(fs, h, mv->src, sl, n, false, UINT32_MAX);
    if (r)
        return r;
    r = map_runs(fs, h, mv->dst, dl, &mv->rs);
    if (r) {   /* the blocks go back where they were (they left room) */
        int b = map_runs(fs, h, mv->src, sl, &mv->rs);
        if (b)
            fprintf(stderr, "storagefs: cannot map blocks back into inode %llu (%d): fsck "
                    "finds them unused\n", (unsigned long long)mv->src->ino, b);
        return r;
    }
    mv->src->d.blocks -= n;
    mv->dst->d.blocks += n;
    if (mv->dst_off + mv->len > mv->dst->d.size)
        mv->dst->d.size = mv->dst_off + mv->len;
    touch(mv->src);
    touch(mv->dst);
    r = inode_dirty(h, mv->src);
    return r ? r : inode_dirty(h, mv->dst);
}

static void lock_both(struct move *mv, bool write)
{
    struct sfs_inode *a = mv->src->ino < mv->dst->ino ? mv->src : mv->dst;
    struct sfs_inode *b = a == mv->src ? mv->dst : mv->src;
    if (write) {
        pthread_rwlock_wrlock(&a->rw);
        pthread_rwlock_wrlock(&b->rw);
    } else {
        pthread_rwlock_rdlock(&a->rw);
        pthread_rwlock_rdlock(&b->rw);
    }
}

static void unlock_both(struct move *mv)
{
    pthread_rwlock_unlock(&mv->src->rw);
    pthread_rwlock_unlock(&mv->dst->rw);
}

/* Checks under the read locks, starts a handle with the credits found,
 * and moves if the checks still hold under the write locks with no more
 * credits needed (another writer may have changed a file meanwhile:
 * then again). */
static int move_run(struct sfs *fs, struct sfs_txn *tx, struct move *mv)
{
    for (;;) {
        uint32_t have = 0, need = 0;
        lock_both(mv, false);
        int r = move_check(fs, mv, &have);
        unlock_both(mv);
        struct jnl_handle *h;
        if (r || (r = sfs_op_begin(fs, tx, have, &h)) != 0)
            return r;
        lock_both(mv, true);
        r = move_check(fs, mv, &need);
        bool fits = !r && need <= have;
        if (fits)
            r = move_locked(fs, h, mv);
        unlock_both(mv);
        sfs_op_end(fs, h);
        if (r || fits)
            return r;
    }
}

int sfs_move_blocks(struct sfs *fs, struct sfs_txn *tx, uint64_t src, uint64_t src_off,
                    uint64_t dst, uint64_t dst_off, uint64_t len)
{
    if (src == dst || len == 0 || src_off % BS || dst_off % BS || len % BS)
        return -EINVAL;
    if (src_off > SFS_MAX_FILE_SIZE || dst_off > SFS_MAX_FILE_SIZE ||
        len > SFS_MAX_FILE_SIZE - src_off || len > SFS_MAX_FILE_SIZE - dst_off)
        return -EFBIG;
    struct move mv = { NULL, NULL, src_off, dst_off, len, { 0 } };
    int r = inode_get(fs, src, &mv.src);
    if (r)
        return r;
    r = inode_get(fs, dst, &mv.dst);
    if (!r) {
        r = move_run(fs, tx, &mv);
        inode_put(fs, mv.dst);
    }
    inode_put(fs, mv.src);
    return r;
}
