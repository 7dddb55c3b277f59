/*
 * device/storagefs/file.c - file data paths and block lifetime (see
 * file.h): sfs_read, sfs_write, sfs_fallocate, sfs_seek, truncation and
 * reaping dead inodes.
 */
#include "device/storagefs/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common/minmax.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/btree.h"
#include "device/storagefs/extent.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/jdata.h"
#include "device/storagefs/sfs_int.h"
#include "device/storagefs/xattr.h"

#define BS SFS_BSIZE
#define MAX_NEW_EXTENTS 8u       /* extents changed per handle */
#define MAX_IO_BLOCKS (1u << 16) /* per media call */

bool file_has_tree(const struct sfs_inode *ip)
{
    uint32_t m = ip->d.mode;
    return S_ISREG(m) || S_ISDIR(m) || (S_ISLNK(m) && !(ip->d.flags & SFS_IFL_INLINE_DATA));
}

static void touch_mc(struct sfs_inode *ip)
{
    struct timespec now = sfs_now();
    ip->d.mtime = ip->d.ctime = now.tv_sec;
    ip->d.mtime_ns = ip->d.ctime_ns = (uint32_t)now.tv_nsec;
}

/* ---- a write's source bytes --------------------------------------------------- */

/* The bytes a write takes: the concatenation of iov[0, n) from byte at of
 * iov[0] on (a view passed by value; at < iov[0].iov_len unless every
 * byte is taken). A vectored write takes its pieces where they are,
 * without gathering them first. */
struct wsrc {
    const struct iovec *iov;
    unsigned n;
    size_t at;
};

/* The view k bytes further on. */
static struct wsrc src_adv(struct wsrc s, size_t k)
{
    s.at += k;
    while (s.n > 1 && s.at >= s.iov[0].iov_len) {
        s.at -= s.iov[0].iov_len;
        s.iov++, s.n--;
    }
    return s;
}

/* Bytes that follow each other in memory at the view's start. */
static size_t src_contig(struct wsrc s)
{
    return s.n ? s.iov[0].iov_len - s.at : 0;
}

static const uint8_t *src_ptr(struct wsrc s)
{
    return (const uint8_t *)s.iov[0].iov_base + s.at;
}

/* Copies k bytes of the view (it holds them) into dst. */
static void src_copy(struct wsrc s, uint8_t *dst, size_t k)
{
    while (k) {
        size_t c = (size_t)min64(k, src_contig(s));
        memcpy(dst, src_ptr(s), c);
        dst += c, k -= c;
        s = src_adv(s, c);
    }
}

/* A view of one buffer (*one is its iovec, which must outlive it). */
static struct wsrc src_one(struct iovec *one, const void *p, size_t n)
{
    *one = (struct iovec){ (void *)p, n };
    return (struct wsrc){ one, 1, 0 };
}

/* ---- raw block I/O ----------------------------------------------------------- */

/* Reads n bytes starting at byte boff of the run at pblk of ip. */
static int data_read(struct sfs *fs, struct sfs_inode *ip, uint64_t pblk, uint32_t boff,
                     uint8_t *dst, size_t n)
{
    if (jdata_hot(fs, ip))
        return jdata_read(fs, pblk, boff, dst, n);
    uint8_t bounce[BS];
    while (n) {
        if (boff || n < BS) {
            size_t k = min64(n, BS - boff);
            int r = media_read(fs->m, pblk, 1, bounce);
            if (r)
                return r;
            memcpy(dst, bounce + boff, k);
            dst += k, n -= k, pblk++, boff = 0;
            continue;
        }
        uint32_t nb = (uint32_t)min64(n / BS, MAX_IO_BLOCKS);
        int r = media_read(fs->m, pblk, nb, dst);
        if (r)
            return r;
        dst += (size_t)nb * BS, n -= (size_t)nb * BS, pblk += nb;
    }
    return 0;
}

/* The buffer a partial block at pblk is merged in: ip's tail copy
 * (sfs_int.h; allocated on first use), or the caller's bounce when there
 * is no ip or no memory. *have: it holds the block's bytes already. The
 * copy names no block until the merged block has been written. */
static uint8_t *merge_buf(struct sfs_inode *ip, uint64_t pblk, uint8_t *bounce, bool *have)
{
    *have = false;
    if (!ip || (!ip->tail && !(ip->tail = malloc(BS))))
        return bounce;
    *have = ip->tail_pblk == pblk;
    ip->tail_pblk = 0;
    return ip->tail;
}

/* How data_write finds the blocks it writes (flags). */
#define DW_FRESH 0x1u     /* they hold no data yet: what a partial block does
                           * not get from the write reads as zeros */
#define DW_PAST_EOF 0x2u  /* the bytes after the write's end in its last block
                           * lie past the end of the file (never read: every
                           * extension zeroes them first, file_set_size and
                           * write_chunk), so a fresh block need not zero them */

/* The part [boff, boff + k) of the block at pblk written alone, when the
 * media can (media_write_part) and the block's other bytes need no
 * change: it holds data, or it is fresh with nothing before the part and
 * only bytes past the end of the file after it. Returns 0, -errno, or
 * -EOPNOTSUPP when the block has to be merged and written whole. */
static int write_part_alone(struct sfs *fs, struct sfs_inode *ip, uint64_t pblk, uint32_t boff,
                            struct wsrc src, size_t k, unsigned how)
{
    if ((how & DW_FRESH) && (boff || (boff + k < BS && !(how & DW_PAST_EOF))))
        return -EOPNOTSUPP;
    uint8_t gather[BS];
    const uint8_t *p = src_ptr(src);
    if (src_contig(src) < k) {
        src_copy(src, gather, k);
        p = gather;
    }
    int r = media_write_part(fs->m, pblk, boff, (uint32_t)k, p);
    if (r != -EOPNOTSUPP && ip && ip->tail_pblk == pblk)
        ip->tail_pblk = 0;   /* the copy no longer holds what the media does */
    return r;
}

/* Writes the part [boff, boff + k) of the block at pblk: alone when it
 * can be (write_part_alone), else merged with its other bytes (zeros
 * when fresh; else ip's tail copy of it, or the media) and written whole;
 * the merged block becomes ip's tail copy. */
static int write_partial(struct sfs *fs, struct sfs_inode *ip, uint64_t pblk, uint32_t boff,
                         struct wsrc src, size_t k, unsigned how)
{
    int r = write_part_alone(fs, ip, pblk, boff, src, k, how);
    if (r != -EOPNOTSUPP)
        return r;
    uint8_t bounce[BS];
    bool have;
    uint8_t *b = merge_buf(ip, pblk, bounce, &have);
    r = 0;
    if (how & DW_FRESH) {        /* zeros around the new bytes only */
        memset(b, 0, boff);
        memset(b + boff + k, 0, BS - boff - k);
    } else if (!have) {
        r = media_read(fs->m, pblk, 1, b);
    }
    src_copy(src, b + boff, k);
    if (!r)
        r = media_write(fs->m, pblk, 1, b);
    if (!r && b != bounce)
        ip->tail_pblk = pblk;
    return r;
}

/* Writes n bytes at byte boff of the run at pblk of ip (NULL: a block of
 * no file's tail copy); how: DW_* above. Whole blocks go from where
 * their bytes are; only one that straddles two source pieces is
 * gathered. Callers hold ip->rw exclusively. */
static int data_write(struct sfs *fs, struct sfs_inode *ip, uint64_t pblk, uint32_t boff,
                      struct wsrc src, size_t n, unsigned how)
{
    uint8_t bounce[BS];
    while (n) {
        if (boff || n < BS) {
            size_t k = min64(n, BS - boff);
            int r = write_partial(fs, ip, pblk, boff, src, k, how);
            if (r)
                return r;
            src = src_adv(src, k), n -= k, pblk++, boff = 0;
            continue;
        }
        uint32_t nb = (uint32_t)min64(n / BS, MAX_IO_BLOCKS);
        const uint8_t *p = src_ptr(src);
        if (src_contig(src) >= BS) {
            nb = (uint32_t)min64(nb, src_contig(src) / BS);
        } else {
            nb = 1;
            src_copy(src, bounce, BS);
            p = bounce;
        }
        if (ip && ip->tail_pblk >= pblk && ip->tail_pblk < pblk + nb)
            ip->tail_pblk = 0;   /* overwritten whole */
        int r = media_write(fs->m, pblk, nb, p);
        if (r)
            return r;
        src = src_adv(src, (size_t)nb * BS), n -= (size_t)nb * BS, pblk += nb;
    }
    return 0;
}

/* jdata_write of n bytes of the view from byte boff of pblk on, one call
 * per source piece. */
static int jdata_write_src(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                           uint64_t pblk, uint64_t boff, struct wsrc src, size_t n)
{
    while (n) {
        size_t k = (size_t)min64(n, src_contig(src));
        int r = jdata_write(fs, h, ip, pblk + boff / BS, (uint32_t)(boff % BS), src_ptr(src), k);
        if (r)
            return r;
        boff += k, n -= k;
        src = src_adv(src, k);
    }
    return 0;
}

/* Zeroes bytes [from, to) (inside one block) where they are written data,
 * through the journal when h or ip asks for it (one credit). */
static int zero_range_in_block(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                               uint64_t from, uint64_t to)
{
    static const uint8_t zeros[BS];
    struct sfs_extent e;
    uint64_t hole;
    if (from >= to)
        return 0;
    int r = ext_lookup(fs, ip, from / BS, &e, &hole);
    if (r <= 0 || (e.flags & SFS_EXT_UNWRITTEN))
        return r < 0 ? r : 0;   /* a hole or unwritten: reads as zeros already */
    uint64_t pblk = e.pblk + (from / BS - e.lblk);
    uint32_t boff = (uint32_t)(from % BS);
    if (jdata_needed(fs, h, ip))
        return jdata_write(fs, h, ip, pblk, boff, NULL, to - from);
    struct iovec one;
    return data_write(fs, ip, pblk, boff, src_one(&one, zeros, to - from), to - from, 0);
}

/* ---- read ---------------------------------------------------------------------- */

/* The run of a file at byte p that one extent (or one hole) covers, at
 * most `left` bytes: n bytes of data from block pblk at offset boff, or
 * of zeros (a hole or an unwritten extent) when !data. */
struct piece {
    bool data;
    uint64_t pblk;
    uint32_t boff;
    size_t n;
};

static int piece_at(struct sfs *fs, struct sfs_inode *ip, uint64_t p, size_t left,
                    struct piece *pc)
{
    uint64_t lblk = p / BS, hole;
    struct sfs_extent e;
    int r = ext_lookup(fs, ip, lblk, &e, &hole);
    if (r < 0)
        return r;
    uint64_t run = r ? e.lblk + e.len - lblk : hole;
    pc->boff = (uint32_t)(p % BS);
    pc->n = (size_t)min64(left, run > (UINT64_MAX - BS) / BS ? UINT64_MAX
                                                            : run * BS - pc->boff);
    pc->data = r == 1 && !(e.flags & SFS_EXT_UNWRITTEN);
    pc->pblk = pc->data ? e.pblk + (lblk - e.lblk) : 0;
    return 0;
}

ssize_t file_read_locked(struct sfs *fs, struct sfs_inode *ip, uint64_t off, void *out,
                         size_t len)
{
    uint8_t *buf = out;
    if (off >= ip->d.size)
        return 0;
    len = (size_t)min64(len, ip->d.size - off);
    size_t done = 0;
    while (done < len) {
        struct piece pc;
        int r = piece_at(fs, ip, off + done, len - done, &pc);
        if (r < 0)
            return done ? (ssize_t)done : r;
        if (!pc.data)
            memset(buf + done, 0, pc.n);
        else if ((r = data_read(fs, ip, pc.pblk, pc.boff, buf + done, pc.n)) != 0)
            return done ? (ssize_t)done : r;
        done += pc.n;
    }
    return (ssize_t)done;
}

ssize_t sfs_read_ino(struct sfs *fs, struct sfs_inode *ip, uint64_t off, void *buf,
                     size_t len)
{
    pthread_rwlock_rdlock(&ip->rw);
    ssize_t n = S_ISDIR(ip->d.mode) ? -EISDIR
                : !S_ISREG(ip->d.mode) ? -EINVAL
                                       : file_read_locked(fs, ip, off, buf, len);
    pthread_rwlock_unlock(&ip->rw);
    return n;
}

ssize_t sfs_read(struct sfs *fs, uint64_t ino, uint64_t off, void *buf, size_t len)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    ssize_t n = sfs_read_ino(fs, ip, off, buf, len);
    inode_put(fs, ip);
    return n;
}

/* ---- zero-copy read ------------------------------------------------------------- */

struct segv {
    struct sfs_seg *v;
    unsigned n, cap;
    struct sfs_seg stack[32];
};

/* Appends a piece, merging it into the previous one when they continue
 * each other. Returns 0 or -ENOMEM. */
static int seg_push(struct segv *s, enum sfs_seg_kind kind, int fd, uint64_t pos, uint64_t len)
{
    struct sfs_seg *p = s->n ? &s->v[s->n - 1] : NULL;
    if (p && p->kind == kind && (kind == SFS_SEG_ZERO || p->pos + p->len == pos)) {
        p->len += len;
        return 0;
    }
    if (s->n == s->cap) {
        unsigned cap = s->cap * 2;
        struct sfs_seg *v = malloc(cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        memcpy(v, s->v, s->n * sizeof(*v));
        if (s->v != s->stack)
            free(s->v);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (struct sfs_seg){ kind, len, fd, pos, NULL };
    return 0;
}

/* Describes [off, off+len) (inside the file) as image ranges and zeros. */
static int map_range(struct sfs *fs, struct sfs_inode *ip, int fd, uint64_t off, size_t len,
                     struct segv *s)
{
    size_t done = 0;
    while (done < len) {
        struct piece pc;
        int r = piece_at(fs, ip, off + done, len - done, &pc);
        if (r < 0)
            return r;
        r = pc.data ? seg_push(s, SFS_SEG_FD, fd, pc.pblk * BS + pc.boff, pc.n)
                    : seg_push(s, SFS_SEG_ZERO, -1, 0, pc.n);
        if (r)
            return r;
        done += pc.n;
    }
    return 0;
}

/* Builds the pieces of [off, off+len) and hands them to fn (file locked). */
static ssize_t map_locked(struct sfs *fs, struct sfs_inode *ip, uint64_t off, size_t len,
                          sfs_map_fn fn, void *arg)
{
    struct segv s = { .cap = 32 };
    s.v = s.stack;
    len = off >= ip->d.size ? 0 : (size_t)min64(len, ip->d.size - off);
    int fd = jdata_hot(fs, ip) ? -1 : media_fd(fs->m);   /* hot: cached images */
    void *bounce = NULL;
    ssize_t r = 0;
    if (len && fd >= 0) {
        r = map_range(fs, ip, fd, off, len, &s);
    } else if (len) {            /* no descriptor: copy, hand over one piece */
        bounce = malloc(len);
        r = bounce ? file_read_locked(fs, ip, off, bounce, len) : -ENOMEM;
        if (r >= 0) {
            s.v[0] = (struct sfs_seg){ SFS_SEG_MEM, (uint64_t)r, -1, 0, bounce };
            s.n = 1;
            len = (size_t)r;
        }
    }
    if (r >= 0)
        r = fn(arg, s.v, s.n, len);
    if (s.v != s.stack)
        free(s.v);
    free(bounce);
    return r < 0 ? r : (ssize_t)len;
}

ssize_t sfs_read_map(struct sfs *fs, uint64_t ino, uint64_t off, size_t len, sfs_map_fn fn,
                     void *arg)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_rwlock_rdlock(&ip->rw);
    ssize_t n = S_ISDIR(ip->d.mode) ? -EISDIR
                : !S_ISREG(ip->d.mode) ? -EINVAL
                                       : map_locked(fs, ip, off, len, fn, arg);
    pthread_rwlock_unlock(&ip->rw);
    inode_put(fs, ip);
    return n;
}

/* ---- write --------------------------------------------------------------------- */

struct wctx {
    struct sfs *fs;
    struct jnl_handle *h;
    struct sfs_inode *ip;
    unsigned newext;             /* extent changes left in this handle */
    bool jdata;                  /* overwrites go through the journal (jdata.h) */
    unsigned jblocks;            /* data blocks this handle may still journal */
};

/* Overwrites n bytes at boff of existing blocks from pblk: in place, or
 * journaled within the handle's budget. Returns the bytes written (> 0),
 * 0 when the budget is spent, or -errno. */
static ssize_t overwrite(struct wctx *w, uint64_t pblk, uint32_t boff, struct wsrc src,
                         size_t n)
{
    if (!w->jdata) {
        int r = data_write(w->fs, w->ip, pblk, boff, src, n, 0);
        return r ? r : (ssize_t)n;
    }
    if (w->jblocks == 0)
        return 0;
    n = (size_t)min64(n, (uint64_t)w->jblocks * BS - boff);
    w->jblocks -= (unsigned)((boff + n + BS - 1) / BS);
    int r = jdata_write_src(w->fs, w->h, w->ip, pblk, boff, src, n);
    return r ? r : (ssize_t)n;
}

/* data_write's flags for n bytes at byte boff of fresh block lblk on:
 * whether the bytes after them lie past the end of the file (the size
 * before the write: the write itself only raises it). */
static unsigned fresh_how(const struct sfs_inode *ip, uint64_t lblk, uint32_t boff, size_t n)
{
    return DW_FRESH | (lblk * BS + boff + n >= ip->d.size ? DW_PAST_EOF : 0);
}

/* Fills a hole at lblk (nblk blocks wanted) with new blocks and data. */
static int write_hole(struct wctx *w, uint64_t lblk, uint64_t nblk, uint32_t boff,
                      struct wsrc src, size_t rem, size_t *n)
{
    uint64_t s, got;
    int r = alloc_blocks(w->fs, w->h, ext_goal(w->fs, w->ip, lblk), nblk, &s, &got);
    if (r)
        return r;
    *n = (size_t)min64(rem, got * BS - boff);
    r = data_write(w->fs, w->ip, s, boff, src, *n, fresh_how(w->ip, lblk, boff, *n));
    struct sfs_extent e = {lblk, s, (uint32_t)got, 0};
    if (!r)
        r = ext_insert(w->fs, w->h, w->ip, &e);
    if (r) {
        w->ip->tail_pblk = 0;   /* the block goes back unmapped */
        alloc_free_blocks(w->fs, w->h, s, got, false);
        return r;
    }
    w->ip->d.blocks += got;
    return 0;
}

/* Writes into an unwritten extent and converts the blocks written. */
static int write_unwritten(struct wctx *w, const struct sfs_extent *e, uint64_t lblk,
                           uint64_t nblk, uint32_t boff, struct wsrc src, size_t rem,
                           size_t *n)
{
    nblk = min64(nblk, e->lblk + e->len - lblk);
    uint64_t pblk = e->pblk + (lblk - e->lblk);
    *n = (size_t)min64(rem, nblk * BS - boff);
    nblk = (boff + *n + BS - 1) / BS;
    int r = data_write(w->fs, w->ip, pblk, boff, src, *n, fresh_how(w->ip, lblk, boff, *n));
    bool unmapped = false;
    if (!r)
        r = ext_convert(w->fs, w->h, w->ip, e, lblk, nblk, &unmapped);
    if (r && unmapped) {         /* unmapped now: give the blocks back */
        alloc_free_blocks(w->fs, w->h, pblk, nblk, false);
        w->ip->d.blocks -= nblk;
    }
    return r;
}

/* One step at pos: returns bytes written (> 0), 0 when this handle may
 * change no more extents, or -errno. */
static ssize_t write_step(struct wctx *w, uint64_t pos, struct wsrc src, size_t rem)
{
    uint64_t lblk = pos / BS, hole;
    uint32_t boff = (uint32_t)(pos % BS);
    uint64_t want = (boff + rem + BS - 1) / BS;
    struct sfs_extent e;
    size_t n = 0;
    int r = ext_lookup(w->fs, w->ip, lblk, &e, &hole);
    if (r < 0)
        return r;
    if (r == 1 && !(e.flags & SFS_EXT_UNWRITTEN)) {
        n = (size_t)min64(rem, (e.lblk + e.len - lblk) * BS - boff);
        return overwrite(w, e.pblk + (lblk - e.lblk), boff, src, n);
    }
    if (w->newext == 0)
        return 0;
    w->newext--;
    if (r == 1)
        r = write_unwritten(w, &e, lblk, want, boff, src, rem, &n);
    else
        r = write_hole(w, lblk, min64(hole, want), boff, src, rem, &n);
    return r ? r : (ssize_t)n;
}

/* Writes as much of src as one handle allows; grows the size. */
static ssize_t write_chunk(struct wctx *w, uint64_t off, struct wsrc src, size_t len)
{
    struct sfs_inode *ip = w->ip;
    if (off > ip->d.size && ip->d.size % BS) {
        uint64_t end = min64((ip->d.size / BS + 1) * BS, off);
        int r = zero_range_in_block(w->fs, w->h, ip, ip->d.size, end);
        if (r)
            return r;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = write_step(w, off + done, src_adv(src, done), len - done);
        if (n <= 0) {
            if (n < 0 && done == 0)
                return n;
            break;
        }
        done += (size_t)n;
    }
    if (done) {
        if (off + done > ip->d.size)
            ip->d.size = off + done;
        touch_mc(ip);
        int r = inode_dirty(w->h, ip);
        if (r)
            return r;
    }
    return (ssize_t)done;
}

/* One handle's worth of a write. Journaling overwrites (jdata.h) needs a
 * credit per block: reserved when the transaction asks for it or the file
 * is hot; if that only shows under the lock, the handle starts again. */
static ssize_t write_once(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip,
                          uint64_t off, struct wsrc src, size_t len)
{
    bool jd = jdata_needed(fs, tx ? tx->h : NULL, ip);
    for (;;) {
        struct wctx w = {fs, NULL, ip, MAX_NEW_EXTENTS, false, 0};
        uint32_t credits = ext_credits(ip, 2 * MAX_NEW_EXTENTS) + 8 + (jd ? JDATA_CHUNK + 1 : 0);
        int r = sfs_op_begin(fs, tx, credits, &w.h);
        if (r)
            return r;
        pthread_rwlock_wrlock(&ip->rw);
        w.jdata = jdata_needed(fs, w.h, ip);
        w.jblocks = w.jdata ? JDATA_CHUNK : 0;
        ssize_t n = w.jdata && !jd ? -EAGAIN
                    : !S_ISREG(ip->d.mode) ? (S_ISDIR(ip->d.mode) ? -EISDIR : -EINVAL)
                                           : write_chunk(&w, off, src, len);
        pthread_rwlock_unlock(&ip->rw);
        sfs_op_end(fs, w.h);
        if (n != -EAGAIN || jd)
            return n;
        jd = true;
    }
}

ssize_t sfs_writev_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip, uint64_t off,
                       const struct iovec *iov, unsigned iovcnt)
{
    size_t len = 0;
    for (unsigned i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > SFS_MAX_FILE_SIZE - len)
            return -EFBIG;
        len += iov[i].iov_len;
    }
    if (off > SFS_MAX_FILE_SIZE || len > SFS_MAX_FILE_SIZE - off)
        return -EFBIG;
    if (len == 0) {              /* only the checks a read does */
        ssize_t n = sfs_read_ino(fs, ip, 0, NULL, 0);
        return n < 0 ? n : 0;
    }
    struct wsrc src = src_adv((struct wsrc){ iov, iovcnt, 0 }, 0);
    size_t done = 0;
    bool retried = false;
    int r = 0;
    do {
        ssize_t n = write_once(fs, tx, ip, off + done, src_adv(src, done), len - done);
        /* Freed blocks become reusable after a checkpoint: retry once after
         * one. Not only when blocks are pending now: the commit thread may
         * have released them between the failure and a check. */
        if (n == -ENOSPC && !tx && !retried) {
            retried = true;
            if (jnl_sync_checkpoint(fs->j) == 0)
                continue;
        }
        if (n <= 0) {
            r = (int)n;
            break;
        }
        done += (size_t)n;
    } while (done < len);
    return done ? (ssize_t)done : r;
}

ssize_t sfs_write_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip, uint64_t off,
                      const void *buf, size_t len)
{
    struct iovec one = { (void *)buf, len };
    return sfs_writev_ino(fs, tx, ip, off, &one, 1);
}

ssize_t sfs_write(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t off,
                  const void *buf, size_t len)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    ssize_t n = sfs_write_ino(fs, tx, ip, off, buf, len);
    inode_put(fs, ip);
    return n;
}

/* ---- size changes -------------------------------------------------------------- */

int file_trim_tail(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                   unsigned max)
{
    uint64_t first = (ip->d.size + BS - 1) / BS;
    int r = ext_remove(fs, h, ip, first, UINT64_MAX - first, true, max);
    if (r >= 0) {
        int d = inode_dirty(h, ip);
        if (d)
            return d;
    }
    return r;
}

int file_set_size(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                  uint64_t size, unsigned max)
{
    uint64_t old = ip->d.size;
    if (size > SFS_MAX_FILE_SIZE)
        return -EFBIG;
    if (size > old && old % BS) {
        int r = zero_range_in_block(fs, h, ip, old, min64((old / BS + 1) * BS, size));
        if (r)
            return r;
    }
    ip->d.size = size;
    int r = inode_dirty(h, ip);
    if (r || size >= old)
        return r;
    return file_trim_tail(fs, h, ip, max);
}

/* ---- fallocate ------------------------------------------------------------------ */

/* Maps holes in [lblk, end) to unwritten blocks, at most `max` extents. */
static int prealloc(struct wctx *w, uint64_t lblk, uint64_t end, uint64_t *next)
{
    while (lblk < end) {
        struct sfs_extent e;
        uint64_t hole;
        int r = ext_lookup(w->fs, w->ip, lblk, &e, &hole);
        if (r < 0)
            return r;
        if (r == 1) {
            lblk = e.lblk + e.len;
            continue;
        }
        if (w->newext-- == 0)
            break;
        uint64_t s, got, want = min64(min64(hole, end - lblk), SFS_EXT_MAX_LEN);
        r = alloc_blocks(w->fs, w->h, ext_goal(w->fs, w->ip, lblk), want, &s, &got);
        struct sfs_extent ne = {lblk, s, (uint32_t)got, SFS_EXT_UNWRITTEN};
        if (!r && (r = ext_insert(w->fs, w->h, w->ip, &ne)) != 0)
            alloc_free_blocks(w->fs, w->h, s, got, false);
        if (r)
            return r;
        w->ip->d.blocks += got;
        lblk += got;
    }
    *next = lblk;
    return 0;
}

/* Zeroes the partial blocks at both ends of [off, end) and unmaps the
 * whole blocks [fb, lb) between, at most max extents. 1 if more remain. */
static int punch(struct wctx *w, uint64_t off, uint64_t end, unsigned max)
{
    uint64_t fb = (off + BS - 1) / BS, lb = end / BS;
    if (fb > lb)                 /* inside one block, touching neither edge */
        return zero_range_in_block(w->fs, w->h, w->ip, off, end);
    int r = zero_range_in_block(w->fs, w->h, w->ip, off, fb * BS);
    if (!r)
        r = zero_range_in_block(w->fs, w->h, w->ip, lb * BS, end);
    if (!r && fb < lb)
        r = ext_remove(w->fs, w->h, w->ip, fb, lb - fb, true, max);
    return r;
}

struct falloc {
    unsigned mode;
    uint64_t off, end;
    bool punched;                /* the unmapping phase is done */
    uint64_t cursor;             /* next block to preallocate */
};

/* One handle's worth: punch (for PUNCH_HOLE / ZERO_RANGE), then map
 * unwritten blocks. Returns 1 if more remain, 0 when done, or -errno. */
static int falloc_step(struct wctx *w, struct falloc *f)
{
    bool zero = f->mode & SFS_FALLOC_ZERO_RANGE;
    if (!f->punched && (f->mode & (SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_ZERO_RANGE))) {
        int r = punch(w, f->off, f->end, MAX_NEW_EXTENTS);
        if (r != 0)
            return r;
    }
    f->punched = true;
    if (f->mode & SFS_FALLOC_PUNCH_HOLE)
        return 0;
    uint64_t first = zero ? (f->off + BS - 1) / BS : f->off / BS;
    uint64_t last = zero ? f->end / BS : (f->end + BS - 1) / BS;
    if (f->cursor < first)
        f->cursor = first;
    int r = prealloc(w, f->cursor, last, &f->cursor);
    return r ? r : f->cursor < last;
}

static int falloc_locked(struct wctx *w, struct falloc *f)
{
    struct sfs_inode *ip = w->ip;
    if (!S_ISREG(ip->d.mode))
        return S_ISDIR(ip->d.mode) ? -EISDIR : -ENODEV;
    int more = falloc_step(w, f);
    if (more < 0)
        return more;
    if (!more && !(f->mode & SFS_FALLOC_KEEP_SIZE) && f->end > ip->d.size) {
        int r = file_set_size(w->fs, w->h, ip, f->end, 0);
        if (r < 0)
            return r;
    }
    struct timespec now = sfs_now();
    ip->d.ctime = now.tv_sec;
    ip->d.ctime_ns = (uint32_t)now.tv_nsec;
    if (f->mode & (SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_ZERO_RANGE))
        touch_mc(ip);
    int r = inode_dirty(w->h, ip);
    return r ? r : more;
}

#define FALLOC_SHIFT 1   /* falloc_check: a collapse or insert (shift.c) */

/* Checks a fallocate request; 0 when it may run as an allocation,
 * FALLOC_SHIFT when it is a valid-looking collapse or insert range (shift.c
 * checks the rest). */
static int falloc_check(unsigned mode, uint64_t off, uint64_t len)
{
    unsigned shifts = SFS_FALLOC_COLLAPSE_RANGE | SFS_FALLOC_INSERT_RANGE;
    if (mode & shifts)   /* alone, as Linux wants them */
        return (mode & ~shifts) || mode == shifts ? -EINVAL : FALLOC_SHIFT;
    unsigned known = SFS_FALLOC_KEEP_SIZE | SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_ZERO_RANGE;
    if ((mode & ~known) || ((mode & SFS_FALLOC_PUNCH_HOLE) &&
                            (!(mode & SFS_FALLOC_KEEP_SIZE) || (mode & SFS_FALLOC_ZERO_RANGE))))
        return -EOPNOTSUPP;
    if (len == 0)
        return -EINVAL;
    if (off > SFS_MAX_FILE_SIZE || len > SFS_MAX_FILE_SIZE - off)
        return -EFBIG;
    return 0;
}

int sfs_fallocate_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip, unsigned mode,
                      uint64_t off, uint64_t len)
{
    int r = falloc_check(mode, off, len);
    if (r == FALLOC_SHIFT)
        return file_shift_range(fs, tx, ip->ino, mode == SFS_FALLOC_COLLAPSE_RANGE, off, len);
    if (r)
        return r;
    struct falloc f = {mode, off, off + len, false, 0};
    do {
        struct wctx w = {fs, NULL, ip, MAX_NEW_EXTENTS, false, 0};
        r = sfs_op_begin(fs, tx, ext_credits(ip, 2 * MAX_NEW_EXTENTS) + 8 + 2, &w.h);
        if (r)
            break;
        pthread_rwlock_wrlock(&ip->rw);
        r = falloc_locked(&w, &f);
        pthread_rwlock_unlock(&ip->rw);
        sfs_op_end(fs, w.h);
    } while (r == 1);
    return r;
}

int sfs_fallocate(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, unsigned mode,
                  uint64_t off, uint64_t len)
{
    int r = falloc_check(mode, off, len);
    if (r == FALLOC_SHIFT)
        return file_shift_range(fs, tx, ino, mode == SFS_FALLOC_COLLAPSE_RANGE, off, len);
    struct sfs_inode *ip;
    if (r || (r = inode_get(fs, ino, &ip)) != 0)
        return r;
    r = sfs_fallocate_ino(fs, tx, ip, mode, off, len);
    inode_put(fs, ip);
    return r;
}

/* ---- seek ------------------------------------------------------------------------ */

static int64_t seek_locked(struct sfs *fs, struct sfs_inode *ip, uint64_t off, int whence)
{
    uint64_t size = ip->d.size, lblk = off / BS;
    if (off >= size)
        return -ENXIO;
    struct sfs_extent e;
    for (;;) {
        int r = ext_next(fs, ip, lblk, &e);
        if (r < 0)
            return r;
        bool data = r == 1 && !(e.flags & SFS_EXT_UNWRITTEN);
        bool here = r == 1 && e.lblk <= lblk;
        if (whence == SFS_SEEK_HOLE && !(here && data)) {
            uint64_t pos = lblk * BS > off ? lblk * BS : off;
            return (int64_t)min64(pos, size);
        }
        if (whence == SFS_SEEK_DATA && data) {
            uint64_t pos = e.lblk * BS > off ? e.lblk * BS : off;
            return pos < size ? (int64_t)pos : -ENXIO;
        }
        if (r == 0)
            return whence == SFS_SEEK_DATA ? -ENXIO : (int64_t)size;
        lblk = e.lblk + e.len;
    }
}

int64_t sfs_seek(struct sfs *fs, uint64_t ino, uint64_t off, int whence)
{
    if (whence != SFS_SEEK_DATA && whence != SFS_SEEK_HOLE)
        return -EINVAL;
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_rwlock_rdlock(&ip->rw);
    int64_t pos = S_ISREG(ip->d.mode) ? seek_locked(fs, ip, off, whence) : -EINVAL;
    pthread_rwlock_unlock(&ip->rw);
    inode_put(fs, ip);
    return pos;
}

/* ---- symlinks -------------------------------------------------------------------- */

int file_write_symlink(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                       const char *target, size_t len)
{
    struct wctx w = {fs, h, ip, 1, false, 0};
    struct iovec one;
    size_t n;
    int r = write_hole(&w, 0, 1, 0, src_one(&one, target, len), len, &n);
    if (r == 0)
        ip->d.size = len;
    return r;
}

/* ---- reaping -------------------------------------------------------------------- */

bool file_reap_is_small(struct sfs_inode *ip)
{
    struct bt t = {NULL, ip, SFS_MAGIC_EXTENT, NULL};
    return ip->d.xattr_blk == 0 && (!file_has_tree(ip) || bt_depth(&t) == 0);
}

int file_reap_small(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip)
{
    int r = 0;
    if (file_has_tree(ip) && !S_ISDIR(ip->d.mode))
        r = ext_remove(fs, h, ip, 0, UINT64_MAX, true, 2 * SFS_NODE_ROOT_CAP / 26);
    if (r == 0)
        r = xattr_free_all(fs, h, ip);
    if (r == 0)
        r = orphan_remove(fs, h, ip);
    return r ? (r > 0 ? -EAGAIN : r) : inode_free_number(fs, h, ip);
}

int file_reap(struct sfs *fs, struct sfs_inode *ip)
{
    bool tree = file_has_tree(ip) && !S_ISDIR(ip->d.mode);
    for (int more = tree; more > 0;) {
        struct jnl_handle *h;
        int r = sfs_op_begin(fs, NULL, ext_credits(ip, MAX_NEW_EXTENTS) + 8, &h);
        if (r)
            return r;
        pthread_rwlock_wrlock(&ip->rw);
        more = ext_remove(fs, h, ip, 0, UINT64_MAX, true, MAX_NEW_EXTENTS);
        int d = inode_dirty(h, ip);
        pthread_rwlock_unlock(&ip->rw);
        sfs_op_end(fs, h);
        if (more < 0 || d)
            return more < 0 ? more : d;
    }
    struct jnl_handle *h;
    int r = sfs_op_begin(fs, NULL, 48, &h);
    if (r)
        return r;
    pthread_rwlock_wrlock(&ip->rw);
    r = file_reap_small(fs, h, ip);
    pthread_rwlock_unlock(&ip->rw);
    sfs_op_end(fs, h);
    return r;
}
