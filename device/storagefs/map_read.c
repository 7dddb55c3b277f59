/*
 * device/storagefs/map_read.c - zero-copy reads inside the device (see
 * map_read.h): the extents of a range checked to be written and
 * consecutive on the image, then the media's view of those blocks.
 */
#include "device/storagefs/map_read.h"

#include <errno.h>
#include <sys/stat.h>

#include "common/minmax.h"
#include "device/media/media.h"
#include "device/storagefs/extent.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/jdata.h"
#include "device/storagefs/sfs_int.h"

#define BS ((uint64_t)SFS_BSIZE)

/* The first image block of logical blocks [lblk, last] when written
 * extents map them to consecutive image blocks; else -EAGAIN. */
static int consecutive(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, uint64_t last,
                       uint64_t *first)
{
    uint64_t next = 0;   /* the image block the run continues with */
    for (uint64_t b = lblk; b <= last;) {
        struct sfs_extent e;
        uint64_t hole;
        int r = ext_lookup(fs, ip, b, &e, &hole);
        if (r < 0)
            return r;
        if (r == 0 || (e.flags & SFS_EXT_UNWRITTEN))
            return -EAGAIN;   /* zeros that are not on the media */
        uint64_t p = e.pblk + (b - e.lblk);
        if (b == lblk)
            *first = p;
        else if (p != next)
            return -EAGAIN;
        next = p + (e.lblk + e.len - b);
        b = e.lblk + e.len;
    }
    return 0;
}

/* sfs_read_view with ip->rw held (shared). */
static ssize_t view_locked(struct sfs *fs, struct sfs_inode *ip, uint64_t off, size_t len,
                           const uint8_t **out)
{
    *out = NULL;
    if (S_ISDIR(ip->d.mode))
        return -EISDIR;
    if (!S_ISREG(ip->d.mode))
        return -EINVAL;
    if (off >= ip->d.size || len == 0)
        return 0;
    len = (size_t)min64(len, ip->d.size - off);
    if (jdata_hot(fs, ip))
        return -EAGAIN;   /* invariant 1: the cache may be newer */
    uint64_t lblk = off / BS, last = (off + len - 1) / BS, pblk = 0;
    int r = consecutive(fs, ip, lblk, last, &pblk);
    if (r)
        return r;
    const uint8_t *v = media_view(fs->m, pblk, last - lblk + 1);
    if (!v)
        return -EAGAIN;
    *out = v + off % BS;
    return (ssize_t)len;
}

ssize_t sfs_read_view(struct sfs *fs, uint64_t ino, uint64_t off, size_t len,
                      const uint8_t **out)
{
    *out = NULL;
    if (!media_view(fs->m, 0, 1))
        return -EAGAIN;   /* no views at all: spare the extent walk */
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_rwlock_rdlock(&ip->rw);
    ssize_t n = view_locked(fs, ip, off, len, out);
    pthread_rwlock_unlock(&ip->rw);
    inode_put(fs, ip);
    return n;
}
