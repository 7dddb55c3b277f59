/*
 * device/media/media_mmap.c - the mapped backend of the media seam (see
 * media_mmap.h): memcpy to and from a MAP_SHARED mapping of the image,
 * fdatasync for durability, backing store for a block's first write
 * taken by populating its group or by pwrite (so a full disk is -ENOSPC,
 * never SIGBUS), hole punching for discard.
 */
#include "device/media/media_mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct media_mmap {
    struct media m;     /* first: the media a caller sees */
    int fd;
    bool rdonly;
    uint8_t *base;      /* the mapping of blocks [0, m.nblocks); NULL when empty */
    uint64_t *backed;   /* bit per block: it has backing store (invariants 1-2; atomic) */
};

#define BS MEDIA_BLOCK_SIZE

static struct media_mmap *to_mm(struct media *m)
{
    return (struct media_mmap *)m;
}

static int range_ok(const struct media *m, uint64_t blk, uint64_t n)
{
    return blk <= m->nblocks && n <= m->nblocks - blk;
}

/* ---- the allocation bitmap ----------------------------------------------- */

/* Relaxed atomics: a bit only tells whether a store may go through the
 * mapping; the block's bytes are ordered by the page cache itself. */
static bool all_backed(const struct media_mmap *mm, uint64_t blk, uint64_t n)
{
    for (uint64_t b = blk; b < blk + n; b++)
        if (!(__atomic_load_n(&mm->backed[b / 64], __ATOMIC_RELAXED) >> (b % 64) & 1))
            return false;
    return true;
}

static void mark(struct media_mmap *mm, uint64_t blk, uint64_t n, bool on)
{
    for (uint64_t b = blk; b < blk + n; b++) {
        uint64_t bit = 1ull << (b % 64);
        if (on)
            __atomic_fetch_or(&mm->backed[b / 64], bit, __ATOMIC_RELAXED);
        else
            __atomic_fetch_and(&mm->backed[b / 64], ~bit, __ATOMIC_RELAXED);
    }
}

/* Marks the blocks the file already holds data for (SEEK_DATA/SEEK_HOLE;
 * a file system without them reports all data, which is then right). */
static void mark_existing(struct media_mmap *mm)
{
    off_t end = (off_t)(mm->m.nblocks * BS), pos = 0;
    while (pos < end) {
        off_t d = lseek(mm->fd, pos, SEEK_DATA);
        if (d < 0 || d >= end)
            return;
        off_t h = lseek(mm->fd, d, SEEK_HOLE);
        if (h < 0 || h > end)
            h = end;
        /* Only whole blocks inside [d, h) are surely backed. */
        uint64_t b0 = ((uint64_t)d + BS - 1) / BS, b1 = (uint64_t)h / BS;
        if (b1 > b0)
            mark(mm, b0, b1 - b0, true);
        pos = h;
    }
}

/* ---- I/O ------------------------------------------------------------------- */

static int mm_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    if (!range_ok(m, blk, n))
        return -EINVAL;
    if (n)
        memcpy(buf, to_mm(m)->base + blk * BS, (size_t)n * BS);
    return 0;
}

/* A write that may allocate: pwrite of len bytes at byte off of the
 * image, then blocks [blk, blk + n) are backed. */
static int write_alloc(struct media_mmap *mm, uint64_t blk, uint32_t n, off_t off,
                       const void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = pwrite(mm->fd, (const char *)buf + done, len - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        done += (size_t)r;
    }
    mark(mm, blk, n, true);
    return 0;
}

/* Gives blocks [blk, blk + n) backing store a bitmap word (64 blocks) at
 * a time, prefaulted writable (MADV_POPULATE_WRITE fails where a store
 * would raise SIGBUS): one call for a run of appends instead of a pwrite
 * or a page fault each. Returns 0, or -errno (then pwrite says why). */
static int populate(struct media_mmap *mm, uint64_t blk, uint64_t n)
{
    uint64_t a = blk / 64 * 64, e = (blk + n + 63) / 64 * 64;
    e = e < mm->m.nblocks ? e : mm->m.nblocks;
    if (madvise(mm->base + a * BS, (size_t)((e - a) * BS), MADV_POPULATE_WRITE) != 0)
        return -errno;
    mark(mm, a, e - a, true);
    return 0;
}

static int mm_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    struct media_mmap *mm = to_mm(m);
    if (!range_ok(m, blk, n))
        return -EINVAL;
    if (mm->rdonly)
        return -EROFS;
    if (!all_backed(mm, blk, n) && populate(mm, blk, n) != 0)
        return write_alloc(mm, blk, n, (off_t)(blk * BS), buf, (size_t)n * BS);
    if (n)
        memcpy(mm->base + blk * BS, buf, (size_t)n * BS);
    return 0;
}

static int mm_write_part(struct media *m, uint64_t blk, uint32_t off, uint32_t len,
                         const void *buf)
{
    struct media_mmap *mm = to_mm(m);
    if (!range_ok(m, blk, 1))
        return -EINVAL;
    if (mm->rdonly)
        return -EROFS;
    /* Invariant 1; a pwrite of part of a block marks nothing: on a file
     * system with blocks smaller than ours it backs only that part. */
    if (!all_backed(mm, blk, 1) && populate(mm, blk, 1) != 0)
        return write_alloc(mm, blk, 0, (off_t)(blk * BS + off), buf, len);
    memcpy(mm->base + blk * BS + off, buf, len);
    return 0;
}

static int mm_flush(struct media *m)
{
    if (to_mm(m)->rdonly)
        return 0;
    /* The mapping is the file's page cache: this writes back what was
     * stored through it, as msync(MS_SYNC) of the whole mapping would,
     * without walking the mapping's pages. */
    return fdatasync(to_mm(m)->fd) ? -errno : 0;
}

static int mm_discard(struct media *m, uint64_t blk, uint64_t n)
{
    struct media_mmap *mm = to_mm(m);
    if (!range_ok(m, blk, n))
        return -EINVAL;
    if (mm->rdonly)
        return -EROFS;
    if (n == 0)
        return 0;
    mark(mm, blk, n, false);   /* before the hole: no store may land in it (invariant 2) */
    int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    if (fallocate(mm->fd, mode, (off_t)(blk * BS), (off_t)(n * BS)) == 0)
        return 0;
    if (errno != EOPNOTSUPP && errno != ENOSYS)
        return -errno;
    /* No holes here: zeros through the mapping (the blocks stay backed). */
    mark(mm, blk, n, true);
    memset(mm->base + blk * BS, 0, (size_t)(n * BS));
    return 0;
}

static void mm_close(struct media *m)
{
    struct media_mmap *mm = to_mm(m);
    if (mm->base)
        munmap(mm->base, (size_t)(m->nblocks * BS));
    close(mm->fd);   /* also drops the flock */
    free(mm->backed);
    free(mm);
}

static int mm_fd(struct media *m)
{
    return to_mm(m)->fd;
}

/* Blocks in place: the mapping itself (media_mmap.h invariant 5). */
static const void *mm_view(struct media *m, uint64_t blk, uint64_t n)
{
    return range_ok(m, blk, n) && n ? to_mm(m)->base + blk * BS : NULL;
}

static const struct media_ops mmap_ops = {
    .read = mm_read,
    .write = mm_write,
    .flush = mm_flush,
    .discard = mm_discard,
    .close = mm_close,
    .fd = mm_fd,
    .view = mm_view,
    .write_part = mm_write_part,
};

int media_mmap_wrap(int fd, uint64_t size_bytes, bool rdonly, struct media **out)
{
    struct media_mmap *mm = calloc(1, sizeof(*mm));
    uint64_t nblk = size_bytes / BS;
    if (mm && nblk > SIZE_MAX / BS)
        free(mm), mm = NULL;   /* cannot be mapped in this address space */
    if (mm)
        mm->backed = calloc((size_t)(nblk / 64 + 1), sizeof(uint64_t));
    if (!mm || !mm->backed) {
        free(mm);
        close(fd);
        return -ENOMEM;
    }
    mm->m.ops = &mmap_ops;
    mm->m.nblocks = nblk;
    mm->fd = fd;
    mm->rdonly = rdonly;
    if (nblk) {
        int prot = PROT_READ | (rdonly ? 0 : PROT_WRITE);
        void *p = mmap(NULL, (size_t)(nblk * BS), prot, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            mm->m.nblocks = 0;
            mm_close(&mm->m);
            return -e;
        }
        mm->base = p;
        /* A child the device forks (the mount reaper, fusermount3) must not
         * inherit the mapping: a mapping holds the image's open file, and
         * with it the image's lock, until the last process mapping it ends
         * — "down" would return while the reaper still locks the image.
         * Only a kernel without MADV_DONTFORK refuses; then children keep
         * the lock a little longer, nothing worse. */
        (void)madvise(p, (size_t)(nblk * BS), MADV_DONTFORK);
    }
    mark_existing(mm);
    *out = &mm->m;
    return 0;
}
