/*
 * device/storagefs/grow.c - sfs_grow: makes an unmounted, clean file
 * system larger in place (`cisc resize`).
 *
 * The layout (docs/FORMAT.md) puts the inode bitmap, the inode table and
 * the data area right after the block bitmap, and block numbers are
 * stored everywhere (extents, tree nodes, xattr blocks): a block bitmap
 * that needs more blocks would have to move all of those. So the file
 * system grows only as far as its block bitmap reaches: up to
 * bbitmap_blocks × 32640 blocks (the padding bits of its last block
 * become real bits). sfs_grow_max says how far that is.
 *
 * Invariants:
 *   1. Only a cleanly unmounted image (state clean, empty journal) grows;
 *      inode count, journal and every region but the data area's end are
 *      unchanged.
 *   2. Write order: the new backup superblock (past the old end), then
 *      the primary superblock with grow_from = the old backup block (the
 *      commit point), then the bitmap blocks, then the primary again with
 *      grow_from = 0, each flushed. Before the commit point nothing the
 *      old geometry reads has changed: the image is the old size. After
 *      it the image is the new size, and while grow_from is set the bits
 *      [grow_from, backup_blkno) may still be set (padding of the old
 *      geometry): fsck accepts that, and the next read-write mount or
 *      sfs_grow finishes the grow (sfs_grow_finish) before anything
 *      else. So a crash at any point leaves the old or the new size,
 *      fsck-clean. Nothing is ever marked free that something uses.
 */
#include <errno.h>
#include <string.h>

#include "common/corrupt.h"
#include "device/storagefs/jreplay.h"
#include "device/storagefs/sfs_int.h"

static uint64_t grow_max(const struct sfs_sb *sb)
{
    return sb->bbitmap_blocks * SFS_BITMAP_BITS;
}

/* The image must be clean with nothing to replay (invariant 1). */
static int check_clean(struct media *m, const struct sfs_sb *sb)
{
    if (sb->state != SFS_STATE_CLEAN)
        return -EAGAIN;
    struct jscan js;
    int r = jscan_run(m, sb, &js);
    if (!r && js.ntxn)
        r = -EAGAIN;
    jscan_free(&js);
    return r;
}

static int write_super(struct media *m, const struct sfs_sb *sb, uint64_t blk)
{
    uint8_t b[SFS_BSIZE];
    memset(b, 0, sizeof(b));
    sfs_sb_encode(sb, b, blk);
    int r = media_write(m, blk, 1, b);
    return r ? r : media_flush(m);
}

/* Clears bits [from, to) and sets bit `to` (the new backup) in the block
 * bitmap, one bitmap block at a time. */
static int mark_grown(struct media *m, const struct sfs_sb *sb, uint64_t from, uint64_t to)
{
    uint8_t b[SFS_BSIZE];
    for (uint64_t k = from / SFS_BITMAP_BITS; k <= to / SFS_BITMAP_BITS; k++) {
        uint64_t blk = sb->bbitmap_start + k;
        int r = media_read(m, blk, 1, b);
        if (r)
            return r;
        if ((r = sfs_block_verify(b, SFS_MAGIC_BBITMAP, blk)) != 0)
            return r;
        for (uint64_t i = from > k * SFS_BITMAP_BITS ? from : k * SFS_BITMAP_BITS;
             i <= to && i < (k + 1) * SFS_BITMAP_BITS; i++)
            sfs_bit_set(b, (uint32_t)(i % SFS_BITMAP_BITS), i == to);
        sfs_block_seal(b, SFS_MAGIC_BBITMAP, blk);
        if ((r = media_write(m, blk, 1, b)) != 0)
            return r;
    }
    return media_flush(m);
}

int sfs_grow_finish(struct media *m, struct sfs_sb *sb)
{
    if (!sb->grow_from)
        return 0;
    int r = mark_grown(m, sb, sb->grow_from, sb->backup_blkno);
    if (r)
        return r;
    sb->grow_from = 0;
    return write_super(m, sb, 0);
}

int sfs_grow(struct media *m, uint64_t nblocks)
{
    struct sfs_sb sb;
    int r = sfs_read_super(m, 0, &sb);
    if (!r)
        r = sfs_grow_finish(m, &sb);   /* one cut short first (invariant 2) */
    if (r)
        return r;
    if (nblocks < sb.nblocks)
        return -EINVAL;
    if (nblocks > m->nblocks || nblocks > grow_max(&sb))
        return -EFBIG;
    if ((r = check_clean(m, &sb)) != 0)
        return r;
    if (nblocks == sb.nblocks)
        return 0;
    struct sfs_sb n = sb;
    n.nblocks = nblocks;
    n.backup_blkno = nblocks - 1;
    n.free_blocks = sb.free_blocks + (nblocks - sb.nblocks);
    if ((r = sfs_sb_check(&n, m->nblocks)) != 0)
        return r;
    if ((r = write_super(m, &n, n.backup_blkno)) != 0)
        return r;
    n.grow_from = sb.backup_blkno;
    if ((r = write_super(m, &n, 0)) != 0)   /* the commit point */
        return r;
    return sfs_grow_finish(m, &n);
}

int sfs_grow_limit(struct media *m, uint64_t *nblocks, uint64_t *max)
{
    struct sfs_sb sb;
    int r = sfs_read_super(m, 0, &sb);
    if (r)
        return r;
    *nblocks = sb.nblocks;
    *max = grow_max(&sb);
    return 0;
}
