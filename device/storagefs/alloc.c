/*
 * device/storagefs/alloc.c - bitmap allocators for blocks and inodes with
 * deferred reuse of freed blocks (see alloc.h).
 */
#include "device/storagefs/alloc.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/corrupt.h"
#include "device/media/media.h"
#include "device/storagefs/sfs_int.h"

#define MAX_RUN (1u << 20)
#define ALLOC_WINDOW 64u   /* blocks; see data_start() */

struct pending {
    uint64_t start, n, seq;
    bool meta;
};

struct sfs_alloc {
    pthread_mutex_t mu;
    uint64_t *busy;              /* per block: in use or not yet reusable */
    uint64_t *ibusy;             /* per inode number */
    struct bbuf **bmb, **imb;    /* pinned bitmap buffers */
    uint64_t nbmb, nimb;
    uint64_t lo, hi;             /* allocatable blocks: [lo, hi) */
    uint64_t avail;              /* zero bits of busy in [lo, hi) */
    uint64_t reserve;            /* kept for alloc_meta */
    uint64_t free_blocks, free_inodes;   /* clear bits of the on-image bitmaps, counted
                                            as they flip (an inconsistent image that
                                            frees a block twice cannot skew them) */
    uint64_t usable_now, inodes_now;   /* free_blocks less the reserve and free_inodes,
                                          stored after each change for lock-free
                                          readers (alloc_counts_now) */
    uint64_t hint, ihint;
    struct pending *pend;
    size_t npend, pcap;
    uint32_t nchecks;            /* alloc_check calls (debug builds): samples its scans */
};

/* Stores the counts lock-free readers see (a->mu held). */
static void publish(struct sfs_alloc *a)
{
    uint64_t usable = a->free_blocks > a->reserve ? a->free_blocks - a->reserve : 0;
    __atomic_store_n(&a->usable_now, usable, __ATOMIC_RELAXED);
    __atomic_store_n(&a->inodes_now, a->free_inodes, __ATOMIC_RELAXED);
}

/* ---- bit helpers --------------------------------------------------------- */

static bool bit(const uint64_t *m, uint64_t i)
{
    return (m[i / 64] >> (i % 64)) & 1;
}

static uint64_t word_mask(uint64_t i, uint64_t n, uint64_t *k)
{
    *k = 64 - i % 64 < n ? 64 - i % 64 : n;   /* bits of [i, i+n) in i's word */
    return (*k == 64 ? ~0ull : (1ull << *k) - 1) << (i % 64);
}

/* Sets bits [i, i+n) of m. */
static void set_range(uint64_t *m, uint64_t i, uint64_t n)
{
    for (uint64_t k; n; i += k, n -= k)
        m[i / 64] |= word_mask(i, n, &k);
}

/* Clears bits [i, i+n) of m; returns how many were set. */
static uint64_t clear_range(uint64_t *m, uint64_t i, uint64_t n)
{
    uint64_t was = 0;
    for (uint64_t k; n; i += k, n -= k) {
        uint64_t mask = word_mask(i, n, &k);
        was += (uint64_t)__builtin_popcountll(m[i / 64] & mask);
        m[i / 64] &= ~mask;
    }
    return was;
}

/* First clear bit in [from, to), or `to`. */
static uint64_t find_clear(const uint64_t *m, uint64_t from, uint64_t to)
{
    uint64_t i = from;
    while (i < to) {
        uint64_t w = ~m[i / 64] & (~0ull << (i % 64));
        if (w) {
            uint64_t r = (i & ~63ull) + (uint64_t)__builtin_ctzll(w);
            return r < to ? r : to;
        }
        i = (i & ~63ull) + 64;
    }
    return to;
}

/* Length of the clear run at i, at most max, not beyond to. */
static uint64_t run_len(const uint64_t *m, uint64_t i, uint64_t to, uint64_t max)
{
    uint64_t n = 0;
    while (i + n < to && n < max) {
        uint64_t p = i + n;
        uint64_t w = m[p / 64] >> (p % 64);
        uint64_t k = w ? (uint64_t)__builtin_ctzll(w) : 64 - p % 64;
        n += k;
        if (w)
            break;
    }
    if (i + n > to)
        n = to - i;
    return n < max ? n : max;
}

/* Sets or clears on-image bits [i, i+n) in the pinned bitmap buffers.
 * Returns how many bits changed: n, unless the image is inconsistent (a
 * block freed twice), which the free counts must not follow. */
static uint64_t image_bits(struct jnl_handle *h, struct bbuf **bufs, uint64_t i, uint64_t n,
                           bool v)
{
    uint64_t flipped = 0;
    while (n) {
        uint64_t k = i / SFS_BITMAP_BITS;
        uint32_t off = (uint32_t)(i % SFS_BITMAP_BITS);
        uint64_t cnt = SFS_BITMAP_BITS - off < n ? SFS_BITMAP_BITS - off : n;
        jnl_dirty_buf(h, bufs[k]);
        for (uint64_t b = 0; b < cnt; b++) {
            flipped += sfs_bit_get(bufs[k]->data, off + (uint32_t)b) != v;
            sfs_bit_set(bufs[k]->data, off + (uint32_t)b, v);
        }
        i += cnt;
        n -= cnt;
    }
    return flipped;
}

/* ---- load / unload --------------------------------------------------------- */

static int load_map(struct sfs *fs, uint64_t start, uint64_t nblk, uint32_t magic,
                    uint64_t nbits, struct bbuf **bufs, uint64_t *map)
{
    for (uint64_t k = 0; k < nblk; k++) {
        int r = bcache_get(fs->bc, start + k, magic, &bufs[k]);
        if (r)
            return r;
        for (uint32_t b = 0; b < SFS_BITMAP_BITS; b++) {
            uint64_t i = k * SFS_BITMAP_BITS + b;
            if (i < nbits && sfs_bit_get(bufs[k]->data, b))
                map[i / 64] |= 1ull << (i % 64);
        }
    }
    return 0;
}

/* Metadata regions and reserved inodes must be marked in use. */
static int check_reserved(struct sfs *fs, struct sfs_alloc *a)
{
    uint64_t fr = find_clear(a->busy, 0, fs->sb.data_start);
    if (fr < fs->sb.data_start)
        return CISC_CORRUPT("block %llu (block bitmap): metadata block %llu marked free",
                            (unsigned long long)(fs->sb.bbitmap_start + fr / SFS_BITMAP_BITS),
                            (unsigned long long)fr);
    if (!bit(a->busy, fs->sb.backup_blkno))
        return CISC_CORRUPT("block %llu (block bitmap): backup superblock marked free",
                            (unsigned long long)(fs->sb.bbitmap_start +
                                                 fs->sb.backup_blkno / SFS_BITMAP_BITS));
    if (!bit(a->ibusy, 0) || !bit(a->ibusy, SFS_ROOT_INO))
        return CISC_CORRUPT("block %llu (inode bitmap): reserved or root inode marked free",
                            (unsigned long long)fs->sb.ibitmap_start);
    return 0;
}

static uint64_t count_clear(const uint64_t *m, uint64_t from, uint64_t to)
{
    uint64_t n = 0, i = from;
    for (; i < to && i % 64; i++)
        n += !bit(m, i);
    for (; i + 64 <= to; i += 64)
        n += 64 - (uint64_t)__builtin_popcountll(m[i / 64]);
    for (; i < to; i++)
        n += !bit(m, i);
    return n;
}

#ifndef NDEBUG
#define ALLOC_FULL_CHECK 256u   /* alloc_check calls between full scans */

/* Clear bits of the on-image bitmap held in bufs, in [from, to). */
static uint64_t image_clear(struct bbuf *const *bufs, uint64_t from, uint64_t to)
{
    uint64_t n = 0;
    for (uint64_t i = from; i < to; i++)
        n += !sfs_bit_get(bufs[i / SFS_BITMAP_BITS]->data, (uint32_t)(i % SFS_BITMAP_BITS));
    return n;
}

/* The allocator's invariants that hold whenever mu is held, checked from
 * assert() after each state change in debug and sanitizer builds: O(1),
 * and a full scan of the maps every ALLOC_FULL_CHECK calls. The counts
 * are kept as counts of bits (never of what the image claims), so no
 * image, however inconsistent, can make these fail. Numbers are alloc.h's
 * (1, 2 and 4 are orders of operations; 2 also depends on the image). */
static bool alloc_check(struct sfs *fs)
{
    struct sfs_alloc *a = fs->al;
    assert(a->lo < a->hi && a->hi <= fs->sb.nblocks);
    assert(a->hint >= a->lo && a->hint < a->hi);                /* 3: the window hint */
    assert(a->ihint >= 1 && a->ihint <= fs->sb.ninodes);
    assert(a->avail <= a->hi - a->lo && a->free_blocks <= a->hi - a->lo);   /* 5 */
    assert(a->free_inodes < fs->sb.ninodes);
    assert(a->npend <= a->pcap);
    if (a->nchecks++ % ALLOC_FULL_CHECK == 0) {
        assert(a->avail == count_clear(a->busy, a->lo, a->hi));          /* 5 */
        assert(a->free_blocks == image_clear(a->bmb, a->lo, a->hi));     /* 5 */
        assert(a->free_inodes == count_clear(a->ibusy, 1, fs->sb.ninodes));   /* 5 */
    }
    return true;
}
#endif

static struct sfs_alloc *alloc_new(const struct sfs_sb *sb)
{
    struct sfs_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->busy = calloc(sb->nblocks / 64 + 1, 8);
    a->ibusy = calloc(sb->ninodes / 64 + 1, 8);
    a->bmb = calloc(sb->bbitmap_blocks, sizeof(*a->bmb));
    a->imb = calloc(sb->ibitmap_blocks, sizeof(*a->imb));
    a->nbmb = sb->bbitmap_blocks;
    a->nimb = sb->ibitmap_blocks;
    if (!a->busy || !a->ibusy || !a->bmb || !a->imb) {
        free(a->busy), free(a->ibusy), free(a->bmb), free(a->imb), free(a);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

int alloc_load(struct sfs *fs)
{
    const struct sfs_sb *sb = &fs->sb;
    struct sfs_alloc *a = alloc_new(sb);
    if (!a)
        return -ENOMEM;
    fs->al = a;
    int r = load_map(fs, sb->bbitmap_start, sb->bbitmap_blocks, SFS_MAGIC_BBITMAP,
                     sb->nblocks, a->bmb, a->busy);
    if (!r)
        r = load_map(fs, sb->ibitmap_start, sb->ibitmap_blocks, SFS_MAGIC_IBITMAP,
                     sb->ninodes, a->imb, a->ibusy);
    if (!r)
        r = check_reserved(fs, a);
    if (r)
        return r;                /* caller runs alloc_unload */
    a->lo = sb->data_start;
    a->hi = sb->backup_blkno;
    a->avail = a->free_blocks = count_clear(a->busy, a->lo, a->hi);
    a->free_inodes = count_clear(a->ibusy, 1, sb->ninodes);
    a->hint = a->lo;
    a->ihint = SFS_ROOT_INO + 1;
    a->reserve = (a->hi - a->lo) / 64;
    a->reserve = a->reserve < 16 ? 16 : a->reserve > 1024 ? 1024 : a->reserve;
    assert(alloc_check(fs));
    publish(a);
    return 0;
}

void alloc_unload(struct sfs *fs)
{
    struct sfs_alloc *a = fs->al;
    if (!a)
        return;
    for (uint64_t k = 0; k < a->nbmb; k++)
        bcache_put(fs->bc, a->bmb[k]);
    for (uint64_t k = 0; k < a->nimb; k++)
        bcache_put(fs->bc, a->imb[k]);
    pthread_mutex_destroy(&a->mu);
    free(a->busy), free(a->ibusy), free(a->bmb), free(a->imb), free(a->pend);
    free(a);
    fs->al = NULL;
}

/* ---- blocks ----------------------------------------------------------------- */

/* Start of the first clear run of at least need blocks in [from, to), or
 * `to`. */
static uint64_t find_run(const uint64_t *m, uint64_t from, uint64_t to, uint64_t need)
{
    uint64_t s = find_clear(m, from, to);
    while (s < to) {
        uint64_t len = run_len(m, s, to, need);
        if (len >= need)
            return s;
        s = find_clear(m, s + len, to);
    }
    return to;
}

/* Where a data allocation starts, and whether it follows its goal. A file
 * that finds the block after its last one taken (several files growing
 * at once) moves to the start of a free window of ALLOC_WINDOW blocks
 * rather than to the next free block, which would sit right behind the
 * other file's tail and interleave the two block by block (an extent per
 * block); the hint then skips the window, so that files without a goal
 * start elsewhere. */
static uint64_t data_start(struct sfs_alloc *a, uint64_t goal, bool *at_goal)
{
    *at_goal = !bit(a->busy, goal);
    if (*at_goal)
        return goal;
    uint64_t from = goal > a->hint ? goal : a->hint;
    uint64_t s = find_run(a->busy, from, a->hi, ALLOC_WINDOW);
    if (s == a->hi)
        s = find_run(a->busy, a->lo, a->hi, ALLOC_WINDOW);
    return s < a->hi ? s : find_clear(a->busy, goal, a->hi);
}

static int take(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t want,
                uint64_t keep, bool data, uint64_t *start, uint64_t *got)
{
    struct sfs_alloc *a = fs->al;
    if (want == 0)
        want = 1;
    if (want > MAX_RUN)
        want = MAX_RUN;
    pthread_mutex_lock(&a->mu);
    if (a->avail <= keep) {
        pthread_mutex_unlock(&a->mu);
        return -ENOSPC;
    }
    if (want > a->avail - keep)
        want = a->avail - keep;
    bool has_goal = goal >= a->lo && goal < a->hi, at_goal = false;
    uint64_t s = has_goal && data ? data_start(a, goal, &at_goal)
                                  : find_clear(a->busy, has_goal ? goal : a->hint, a->hi);
    if (s == a->hi)
        s = find_clear(a->busy, a->lo, a->hi);
    uint64_t n = run_len(a->busy, s, a->hi, want);
    assert(n > 0);               /* avail counts clear bits: one exists */
    set_range(a->busy, s, n);
    a->free_blocks -= image_bits(h, a->bmb, s, n, true);
    a->avail -= n;
    if (!at_goal) {   /* a file extending its own run leaves the hint alone */
        uint64_t end = s + (has_goal && data && n < ALLOC_WINDOW ? ALLOC_WINDOW : n);
        a->hint = end < a->hi ? end : a->lo;
    }
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
    *start = s;
    *got = n;
    return 0;
}

int alloc_blocks(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t want,
                 uint64_t *start, uint64_t *got)
{
    return take(fs, h, goal, want, fs->al->reserve, true, start, got);
}

int alloc_meta(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t *blk)
{
    uint64_t got;
    return take(fs, h, goal, 1, 0, false, blk, &got);
}

int alloc_run(struct sfs *fs, struct jnl_handle *h, uint64_t n, uint64_t *start)
{
    struct sfs_alloc *a = fs->al;
    pthread_mutex_lock(&a->mu);
    uint64_t s = find_clear(a->busy, a->lo, a->hi);
    while (s < a->hi && run_len(a->busy, s, a->hi, n) < n) {
        uint64_t len = run_len(a->busy, s, a->hi, n);
        s = find_clear(a->busy, s + len, a->hi);
    }
    if (s >= a->hi || a->avail < n + a->reserve) {
        pthread_mutex_unlock(&a->mu);
        return -ENOSPC;
    }
    set_range(a->busy, s, n);
    a->free_blocks -= image_bits(h, a->bmb, s, n, true);
    a->avail -= n;
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
    *start = s;
    return 0;
}

static int add_pending(struct sfs_alloc *a, uint64_t start, uint64_t n, uint64_t seq,
                       bool meta)
{
    if (a->npend && a->pend[a->npend - 1].seq == seq && a->pend[a->npend - 1].meta == meta &&
        a->pend[a->npend - 1].start + a->pend[a->npend - 1].n == start) {
        a->pend[a->npend - 1].n += n;
        return 0;
    }
    if (a->npend == a->pcap) {
        size_t cap = a->pcap ? a->pcap * 2 : 64;
        struct pending *p = realloc(a->pend, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        a->pend = p;
        a->pcap = cap;
    }
    a->pend[a->npend++] = (struct pending){start, n, seq, meta};
    return 0;
}

void alloc_free_blocks(struct sfs *fs, struct jnl_handle *h, uint64_t start, uint64_t n,
                       bool meta)
{
    struct sfs_alloc *a = fs->al;
    if (n == 0)
        return;
    assert(alloc_in_data(fs, start, n));   /* callers check image-supplied runs */
    pthread_mutex_lock(&a->mu);
    a->free_blocks += image_bits(h, a->bmb, start, n, false);
    /* Without memory for the pending record the blocks simply stay busy
     * until the next mount: a leak in memory, never a reuse hazard. */
    (void)add_pending(a, start, n, h->seq, meta);
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
    if (meta)
        for (uint64_t i = 0; i < n; i++)
            bcache_forget(fs->bc, start + i);
}

static void release(struct sfs *fs, uint64_t seq, bool meta)
{
    struct sfs_alloc *a = fs->al;
    pthread_mutex_lock(&a->mu);
    size_t k = 0;
    for (size_t i = 0; i < a->npend; i++) {
        struct pending *p = &a->pend[i];
        if (p->seq <= seq && p->meta == meta) {
            a->avail += clear_range(a->busy, p->start, p->n);   /* 2: reusable now */
            media_trim(fs->m, p->start, p->n);   /* dead for good: a flash model's TRIM */
        } else
            a->pend[k++] = *p;
    }
    a->npend = k;
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
}

void alloc_txn_committed(struct sfs *fs, uint64_t seq)
{
    release(fs, seq, false);
}

void alloc_txn_checkpointed(struct sfs *fs, uint64_t seq)
{
    release(fs, seq, true);
    release(fs, seq, false);
}

bool alloc_has_pending(struct sfs *fs)
{
    pthread_mutex_lock(&fs->al->mu);
    bool p = fs->al->npend > 0;
    pthread_mutex_unlock(&fs->al->mu);
    return p;
}

void alloc_counts(struct sfs *fs, uint64_t *free_blocks, uint64_t *free_inodes)
{
    pthread_mutex_lock(&fs->al->mu);
    *free_blocks = fs->al->free_blocks;
    *free_inodes = fs->al->free_inodes;
    pthread_mutex_unlock(&fs->al->mu);
}

void alloc_counts_now(struct sfs *fs, uint64_t *usable_blocks, uint64_t *free_inodes)
{
    *usable_blocks = __atomic_load_n(&fs->al->usable_now, __ATOMIC_RELAXED);
    *free_inodes = __atomic_load_n(&fs->al->inodes_now, __ATOMIC_RELAXED);
}

uint64_t alloc_usable_blocks(struct sfs *fs)
{
    pthread_mutex_lock(&fs->al->mu);
    uint64_t f = fs->al->free_blocks, keep = fs->al->reserve;
    pthread_mutex_unlock(&fs->al->mu);
    return f > keep ? f - keep : 0;
}

bool alloc_in_data(const struct sfs *fs, uint64_t start, uint64_t n)
{
    return start >= fs->sb.data_start && start < fs->sb.backup_blkno &&
           n <= fs->sb.backup_blkno - start;
}

/* ---- inodes ------------------------------------------------------------------ */

int alloc_inode(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint64_t *ino)
{
    struct sfs_alloc *a = fs->al;
    uint64_t n = fs->sb.ninodes;
    pthread_mutex_lock(&a->mu);
    if (a->free_inodes == 0) {
        pthread_mutex_unlock(&a->mu);
        return -ENOSPC;
    }
    /* Near the goal (the parent directory) if that is cheap, else from
     * where the last allocation ended: never a long scan per inode. */
    uint64_t near_end = goal && goal < n ? (goal + 64 < n ? goal + 64 : n) : 0;
    uint64_t i = near_end ? find_clear(a->ibusy, goal, near_end) : n;
    if (i >= near_end)
        i = find_clear(a->ibusy, a->ihint, n);
    if (i == n)
        i = find_clear(a->ibusy, 1, n);
    assert(i > 0 && i < n);      /* free_inodes counts clear bits: one exists */
    set_range(a->ibusy, i, 1);
    image_bits(h, a->imb, i, 1, true);
    a->free_inodes--;
    a->ihint = i + 1 < n ? i + 1 : 1;
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
    *ino = i;
    return 0;
}

void alloc_free_inode(struct sfs *fs, struct jnl_handle *h, uint64_t ino)
{
    struct sfs_alloc *a = fs->al;
    assert(ino > 0 && ino < fs->sb.ninodes);   /* inode_get refuses others */
    pthread_mutex_lock(&a->mu);
    a->free_inodes += clear_range(a->ibusy, ino, 1);   /* 0 if already free */
    image_bits(h, a->imb, ino, 1, false);
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
}

bool alloc_inode_used(struct sfs *fs, uint64_t ino)
{
    struct sfs_alloc *a = fs->al;
    if (ino >= fs->sb.ninodes)
        return false;
    pthread_mutex_lock(&a->mu);
    bool used = bit(a->ibusy, ino);
    pthread_mutex_unlock(&a->mu);
    return used;
}

/* ---- repair (repair.c: offline, the only user of the mount) ----------------- */

void alloc_repair_block(struct sfs *fs, struct jnl_handle *h, uint64_t blk, bool used)
{
    struct sfs_alloc *a = fs->al;
    if (blk < a->lo || blk >= a->hi)
        return;
    pthread_mutex_lock(&a->mu);
    bool was = bit(a->busy, blk);
    if (used) {
        if (!was) {
            set_range(a->busy, blk, 1);
            a->avail--;
        }
        a->free_blocks -= image_bits(h, a->bmb, blk, 1, true);
    } else {
        a->free_blocks += image_bits(h, a->bmb, blk, 1, false);
        a->avail += clear_range(a->busy, blk, 1);   /* nothing references it */
    }
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
}

void alloc_repair_inode(struct sfs *fs, struct jnl_handle *h, uint64_t ino)
{
    struct sfs_alloc *a = fs->al;
    if (ino == 0 || ino >= fs->sb.ninodes)
        return;
    pthread_mutex_lock(&a->mu);
    if (!bit(a->ibusy, ino)) {
        set_range(a->ibusy, ino, 1);
        a->free_inodes--;
    }
    image_bits(h, a->imb, ino, 1, true);
    assert(alloc_check(fs));
    publish(a);
    pthread_mutex_unlock(&a->mu);
}
