/*
 * device/storagefs/shift.c - fallocate's collapse-range and insert-range
 * (FALLOC_FL_COLLAPSE_RANGE / FALLOC_FL_INSERT_RANGE): remove a block-
 * aligned range from the middle of a file and close the gap, or open a
 * gap (a hole) in the middle, by moving the mapping of every block past
 * it (extent.h, ext_shift); no data block is read, written or copied.
 *
 * Invariants:
 *   1. One operation is one journal handle: the removal, every extent
 *      moved and the new size commit together, so after a crash the file
 *      is as before or as after, never shifted in part (unlike a punch,
 *      whose partial result is still a meaningful file). A file with too
 *      many extents past the offset for one transaction is refused
 *      (-E2BIG from the journal) and left unchanged.
 *   2. The arguments are checked as Linux checks them, before anything
 *      changes: offset and length multiples of the block size, length >
 *      0; collapse: the range ends before EOF; insert: the offset lies
 *      before EOF and the grown file stays within SFS_MAX_FILE_SIZE;
 *      otherwise -EINVAL (-EFBIG for the size).
 */
#include "device/storagefs/extent.h"
#include "device/storagefs/file.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#define BS SFS_BSIZE

struct shift {
    bool collapse;
    uint64_t off, len;            /* bytes */
};

/* Linux's checks against the file (caller holds ip->rw). */
static int shift_check(struct sfs *fs, struct sfs_inode *ip, const struct shift *s)
{
    if (!S_ISREG(ip->d.mode))
        return S_ISDIR(ip->d.mode) ? -EISDIR : -ENODEV;
    uint64_t size = ip->d.size;
    if (s->collapse)
        return s->off + s->len >= size ? -EINVAL : 0;
    if (s->off >= size)
        return -EINVAL;
    if (s->len > SFS_MAX_FILE_SIZE - size)
        return -EFBIG;
    uint64_t end;   /* preallocated blocks past EOF move too */
    int64_t n = ext_count_from(fs, ip, s->off / BS, &end);
    if (n < 0)
        return (int)n;
    return end + s->len / BS > SFS_MAX_FILE_SIZE / BS ? -EFBIG : 0;
}

/* The whole change inside h (caller holds ip->rw for writing). */
static int shift_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                        const struct shift *s)
{
    uint64_t ob = s->off / BS, lb = s->len / BS;
    int r;
    if (s->collapse) {
        r = ext_remove(fs, h, ip, ob, lb, true, UINT32_MAX);
        if (!r)
            r = ext_shift(fs, h, ip, ob + lb, lb, true);
        if (!r)
            ip->d.size -= s->len;
    } else {
        r = ext_shift(fs, h, ip, ob, lb, false);
        if (!r)
            ip->d.size += s->len;
    }
    if (r)
        return r;
    struct timespec now = sfs_now();
    ip->d.mtime = ip->d.ctime = now.tv_sec;
    ip->d.mtime_ns = ip->d.ctime_ns = (uint32_t)now.tv_nsec;
    return inode_dirty(h, ip);
}

/* Journal credits for the change as the file stands now (ip->rw held):
 * the extents removed and those moved, each cut and inserted again. */
static int shift_credits(struct sfs *fs, struct sfs_inode *ip, const struct shift *s,
                         uint32_t *credits)
{
    uint64_t end;
    int64_t n = ext_count_from(fs, ip, s->off / BS, &end);
    if (n < 0)
        return (int)n;
    if (n > (int64_t)(UINT32_MAX / 16))
        return -E2BIG;
    *credits = ext_credits(ip, 2 * (unsigned)n + 4) + 8;
    return 0;
}

/* Counts under the read lock, starts a handle with that many credits,
 * and runs the change if the count still holds under the write lock
 * (another writer may have added extents meanwhile: then again). */
static int shift_run(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip,
                     const struct shift *s)
{
    uint32_t have = 0;
    for (;;) {
        pthread_rwlock_rdlock(&ip->rw);
        int r = shift_check(fs, ip, s);
        if (!r)
            r = shift_credits(fs, ip, s, &have);
        pthread_rwlock_unlock(&ip->rw);
        struct jnl_handle *h;
        if (r || (r = sfs_op_begin(fs, tx, have, &h)) != 0)
            return r;
        uint32_t need = 0;
        pthread_rwlock_wrlock(&ip->rw);
        r = shift_check(fs, ip, s);
        if (!r)
            r = shift_credits(fs, ip, s, &need);
        bool fits = !r && need <= have;
        if (fits)
            r = shift_locked(fs, h, ip, s);
        pthread_rwlock_unlock(&ip->rw);
        sfs_op_end(fs, h);
        if (r || fits)
            return r;
    }
}

int file_shift_range(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, bool collapse,
                     uint64_t off, uint64_t len)
{
    if (len == 0 || off % BS || len % BS)
        return -EINVAL;
    if (off > SFS_MAX_FILE_SIZE || len > SFS_MAX_FILE_SIZE - off)
        return -EFBIG;
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    struct shift s = {collapse, off, len};
    r = shift_run(fs, tx, ip, &s);
    inode_put(fs, ip);
    return r;
}
