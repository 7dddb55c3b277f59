/*
 * device/storagefs/super.c - making, mounting and unmounting StorageFS,
 * sync, statfs and the transaction calls.
 *
 * Mount order (nothing is written before everything is validated):
 *   superblock -> journal header and ring scan (in memory) -> replayed
 *   images installed in the block cache -> bitmaps -> root inode and its
 *   directory index -> [defer_writes: the caller's own checks, read-only,
 *   until sfs_mount_finish] -> [read-write only] replayed images written
 *   in place, superblock marked mounted, journal restarted past the
 *   replayed sequence (skipping one, so a torn transaction's number is
 *   never reused), orphans freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/btree.h"
#include "device/storagefs/file.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/jreplay.h"
#include "device/storagefs/sfs_int.h"

#define CACHE_BLOCKS 65536u      /* about 256 MiB of metadata blocks */

static uint64_t clamp64(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int random_bytes(void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0)
            return -errno;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* ---- mkfs ------------------------------------------------------------------- */

static int geometry(struct sfs_sb *sb, uint64_t nblocks, const struct sfs_mkfs_opts *o)
{
    uint64_t ninodes = o->inodes ? o->inodes + 1 : nblocks * SFS_BSIZE / 16384;
    ninodes = clamp64(ninodes, 16, 1ull << 32);
    ninodes = (ninodes + SFS_INODES_PER_BLOCK - 1) / SFS_INODES_PER_BLOCK *
              SFS_INODES_PER_BLOCK;
    uint64_t jb = o->journal_blocks ? o->journal_blocks : clamp64(nblocks / 32, 256, 32768);
    return sfs_sb_layout(sb, nblocks, ninodes, jb);
}

static int init_sb(struct sfs_sb *sb, const struct sfs_mkfs_opts *o)
{
    struct timespec now = sfs_now();
    sb->version = SFS_FORMAT_VERSION;
    sb->block_size = SFS_BSIZE;
    sb->inode_size = SFS_INODE_SIZE;
    sb->state = SFS_STATE_CLEAN;
    sb->root_ino = SFS_ROOT_INO;
    sb->mkfs_time = sb->write_time = now.tv_sec;
    sb->free_blocks = sb->backup_blkno - sb->data_start;
    sb->free_inodes = sb->ninodes - 2;
    int r = random_bytes(&sb->hash_seed, 8);
    if (!r)
        r = random_bytes(&sb->journal_id, 8);
    if (!r && o->uuid)
        memcpy(sb->uuid, o->uuid, 16);
    else if (!r)
        r = random_bytes(sb->uuid, 16);
    return r;
}

/* Writes one bitmap region: bits [0, used_below) and `extra` set, and
 * the padding past nbits. */
static int write_bitmap(struct media *m, uint8_t *b, uint64_t start, uint64_t nblk,
                        uint32_t magic, uint64_t nbits, uint64_t used_below, uint64_t extra)
{
    for (uint64_t k = 0; k < nblk; k++) {
        memset(b, 0, SFS_BSIZE);
        for (uint32_t i = 0; i < SFS_BITMAP_BITS; i++) {
            uint64_t bit = k * SFS_BITMAP_BITS + i;
            if (bit < used_below || bit == extra || bit >= nbits)
                sfs_bit_set(b, i, true);
        }
        sfs_block_seal(b, magic, start + k);
        int r = media_write(m, start + k, 1, b);
        if (r)
            return r;
    }
    return 0;
}

static int write_root(struct media *m, const struct sfs_sb *sb, const struct sfs_mkfs_opts *o,
                      uint8_t *b)
{
    struct sfs_dinode d;
    struct timespec now = sfs_now();
    memset(&d, 0, sizeof(d));
    d.ino = d.parent = SFS_ROOT_INO;
    d.mode = S_IFDIR | 0755;
    d.nlink = 2;
    d.uid = o->root_uid;
    d.gid = o->root_gid;
    d.atime = d.mtime = d.ctime = d.btime = now.tv_sec;
    d.atime_ns = d.mtime_ns = d.ctime_ns = d.btime_ns = (uint32_t)now.tv_nsec;
    bt_root_init(d.data, SFS_ROOT_INO);
    memset(b, 0, SFS_BSIZE);
    sfs_inode_encode(&d, b + SFS_ROOT_INO * SFS_INODE_SIZE);
    return media_write(m, sb->itable_start, 1, b);
}

static int write_fresh(struct media *m, const struct sfs_sb *sb, const struct sfs_mkfs_opts *o,
                       uint8_t *b)
{
    int r = write_bitmap(m, b, sb->bbitmap_start, sb->bbitmap_blocks, SFS_MAGIC_BBITMAP,
                         sb->nblocks, sb->data_start, sb->backup_blkno);
    if (!r)
        r = write_bitmap(m, b, sb->ibitmap_start, sb->ibitmap_blocks, SFS_MAGIC_IBITMAP,
                         sb->ninodes, SFS_ROOT_INO + 1, UINT64_MAX);
    if (!r)
        r = write_root(m, sb, o, b);
    struct sfs_jhdr h = {sb->journal_id, 1, 0, (uint32_t)(sb->journal_blocks - 1)};
    if (!r) {
        sfs_jhdr_encode(&h, b, sb->journal_start);
        r = media_write(m, sb->journal_start, 1, b);
    }
    return r;
}

int sfs_mkfs(struct media *m, const struct sfs_mkfs_opts *o)
{
    static const struct sfs_mkfs_opts defaults;
    struct sfs_sb sb;
    memset(&sb, 0, sizeof(sb));
    o = o ? o : &defaults;
    uint64_t nblocks = m->nblocks;
    if (o->size_bytes && o->size_bytes / SFS_BSIZE < nblocks)
        nblocks = o->size_bytes / SFS_BSIZE;
    int r = geometry(&sb, nblocks, o);
    if (!r)
        r = init_sb(&sb, o);
    uint8_t *b = aligned_alloc(SFS_BSIZE, SFS_BSIZE);
    if (!b)
        return -ENOMEM;
    if (!r)
        r = write_fresh(m, &sb, o, b);
    if (!r) {                    /* superblocks last: the image is valid only now */
        sfs_sb_encode(&sb, b, sb.backup_blkno);
        r = media_write(m, sb.backup_blkno, 1, b);
    }
    if (!r) {
        sfs_sb_encode(&sb, b, 0);
        r = media_write(m, 0, 1, b);
    }
    free(b);
    return r ? r : media_flush(m);
}

/* ---- mount ------------------------------------------------------------------ */

int sfs_read_super(struct media *m, uint64_t blk, struct sfs_sb *sb)
{
    uint8_t *b = malloc(SFS_BSIZE);
    if (!b)
        return -ENOMEM;
    int r = m->nblocks > blk ? media_read(m, blk, 1, b) : -EIO;
    if (r == -EIO)
        r = CISC_CORRUPT("image too small to hold a superblock at block %llu",
                         (unsigned long long)blk);
    else if (r == 0 && le32_get(b + BH_MAGIC) != SFS_MAGIC_SUPER)
        r = CISC_CORRUPT("not a ciscfs image: no StorageFS superblock at block %llu",
                         (unsigned long long)blk);
    else if (r == 0)
        r = sfs_block_verify(b, SFS_MAGIC_SUPER, blk);
    if (r == 0) {
        sfs_sb_decode(b, sb);
        r = sfs_sb_check(sb, m->nblocks);
    }
    free(b);
    return r;
}

static int check_features(const struct sfs_sb *sb, bool rdonly)
{
    if (sb->feat_incompat & ~SFS_FEAT_INCOMPAT_SUPP)
        return CISC_CORRUPT("superblock: unsupported incompatible features 0x%x",
                            sb->feat_incompat & ~SFS_FEAT_INCOMPAT_SUPP);
    if (!rdonly && (sb->feat_ro_compat & ~SFS_FEAT_RO_COMPAT_SUPP))
        return -EROFS;
    return 0;
}

static uint32_t region_magic(const struct sfs_sb *sb, uint64_t blk, const uint8_t *img)
{
    if (blk == 0)
        return SFS_MAGIC_SUPER;
    if (blk >= sb->itable_start && blk < sb->data_start)
        return SFS_MAGIC_NONE;
    return le32_get(img + BH_MAGIC);
}

/* Puts the replayed images into the cache (each keeps a reference). */
static int install_overlay(struct sfs *fs, const struct jscan *s, struct bbuf ***out)
{
    struct bbuf **v = calloc(s->nimg + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    *out = v;
    for (size_t i = 0; i < s->nimg; i++) {
        uint64_t blk = s->img[i].blk;
        int r = bcache_install(fs->bc, blk, region_magic(&fs->sb, blk, s->img[i].data),
                               s->img[i].data, &v[i]);
        if (r)
            return r;
        /* A read-only mount keeps the overlay: images in the data area may
         * be file data (data-journaled transactions), which reads must see. */
        if (blk >= fs->sb.data_start && blk < fs->sb.backup_blkno)
            fs->overlay_data = fs->rdonly;
    }
    return 0;
}

/* The superblock as replayed (the journal may hold a newer copy). */
static int load_sb_buffer(struct sfs *fs)
{
    int r = bcache_get(fs->bc, 0, SFS_MAGIC_SUPER, &fs->sbb);
    if (r)
        return r;
    struct sfs_sb sb;
    sfs_sb_decode(fs->sbb->data, &sb);
    r = sfs_sb_check(&sb, fs->m->nblocks);
    if (!r && (sb.nblocks != fs->sb.nblocks || sb.ninodes != fs->sb.ninodes ||
               sb.journal_id != fs->sb.journal_id))
        r = CISC_CORRUPT("journal: replayed superblock changes the geometry");
    if (!r)
        fs->sb = sb;
    return r;
}

/* The root directory's index reads: its inline root node and the path to
 * its first entry are valid (every lookup in the root starts there). */
static int check_root_index(struct sfs *fs, struct sfs_inode *ip)
{
    struct bt t = { fs, ip, SFS_MAGIC_DIR, NULL };
    struct bt_rec rec;
    pthread_rwlock_rdlock(&ip->rw);
    int r = bt_find_ge(&t, 0, &rec);
    pthread_rwlock_unlock(&ip->rw);
    return r == -ENOENT ? 0 : r;
}

static int check_root(struct sfs *fs)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, SFS_ROOT_INO, &ip);
    if (r == -ENOENT)
        return CISC_CORRUPT("root inode is not allocated");
    if (r)
        return r;
    if (!S_ISDIR(ip->d.mode) || ip->d.nlink < 2)
        r = CISC_CORRUPT("block %llu (inode table): root inode is not a directory",
                         (unsigned long long)sfs_itable_blk(fs, SFS_ROOT_INO));
    if (!r)
        r = check_root_index(fs, ip);
    inode_put(fs, ip);
    return r;
}

/* What sfs_mount_finish needs of a mount whose writes wait for it. */
struct sfs_deferred {
    struct jscan scan;
    struct bbuf **overlay;
    struct sfs_mount_opts opts;
};

static void deferred_free(struct sfs *fs)
{
    if (!fs->deferred)
        return;
    jscan_free(&fs->deferred->scan);
    free(fs->deferred->overlay);   /* its buffers go with the block cache */
    free(fs->deferred);
    fs->deferred = NULL;
}

static struct sfs *fs_new(struct media *m, bool rdonly)
{
    struct sfs *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return NULL;
    fs->m = m;
    fs->rdonly = rdonly;
    pthread_mutex_init(&fs->orphan_mu, NULL);
    pthread_mutex_init(&fs->rename_mu, NULL);
    fs->orphans.onext = fs->orphans.oprev = &fs->orphans;
    return fs;
}

/* Frees an sfs without writing anything; the media is left open. */
static void fs_teardown(struct sfs *fs)
{
    deferred_free(fs);
    alloc_unload(fs);
    if (fs->sbb)
        bcache_put(fs->bc, fs->sbb);
    icache_destroy(fs);
    bcache_destroy(fs->bc);
    pthread_mutex_destroy(&fs->orphan_mu);
    pthread_mutex_destroy(&fs->rename_mu);
    free(fs);
}

/* Everything that only reads: superblock, journal scan, overlay,
 * bitmaps, root. */
static int mount_validate(struct sfs *fs, struct jscan *s, struct bbuf ***overlay)
{
    int r = sfs_read_super(fs->m, 0, &fs->sb);
    if (!r)
        r = check_features(&fs->sb, fs->rdonly && !fs->deferred);
    /* A grow cut short (grow.c) is finished first: the one write before
     * validation, and only what `cisc resize` had committed to. Read-only,
     * its new blocks stay marked used. */
    if (!r && !fs->rdonly && fs->sb.grow_from)
        r = sfs_grow_finish(fs->m, &fs->sb);
    if (!r)
        r = jscan_run(fs->m, &fs->sb, s);
    if (!r)
        r = bcache_create(fs->m, CACHE_BLOCKS, &fs->bc);
    if (!r)
        r = install_overlay(fs, s, overlay);
    if (!r)
        r = load_sb_buffer(fs);
    if (!r)
        r = icache_create(fs);
    if (!r)
        r = alloc_load(fs);
    return r ? r : check_root(fs);
}

static int write_sb_direct(struct sfs *fs)
{
    sfs_sb_encode(&fs->sb, fs->sbb->data, 0);
    int r = media_write(fs->m, 0, 1, fs->sbb->data);
    return r ? r : media_flush(fs->m);
}

/* Frees orphans nobody holds open (at mount: all of them). One that
 * cannot be freed (corrupt, I/O error) stays on the list for fsck and the
 * next mount; the first error is returned. */
static int reap_orphans(struct sfs *fs)
{
    struct sfs_inode *ip;
    int first = 0;
    while ((ip = orphan_next_unopened(fs, NULL)) != NULL) {
        int r = inode_claim_reap(fs, ip) ? file_reap(fs, ip) : 0;
        first = first ? first : r;
        inode_put(fs, ip);
    }
    return first;
}

static int mount_write(struct sfs *fs, const struct sfs_mount_opts *o, const struct jscan *s,
                       struct bbuf **overlay)
{
    int r = jscan_apply(fs->m, s);
    for (size_t i = 0; i < s->nimg; i++) {
        bcache_put(fs->bc, overlay[i]);     /* in place now: ordinary cached blocks */
        overlay[i] = NULL;
    }
    if (r)
        return r;
    fs->sb.state = SFS_STATE_MOUNTED;
    fs->sb.mount_count++;
    fs->sb.mount_time = sfs_now().tv_sec;
    r = write_sb_direct(fs);
    if (r)
        return r;
    fs->gen_next = (uint64_t)fs->sb.mount_count << 32;   /* before any handle */
    r = jnl_open(fs, s->next_seq + 1, s->end_pos, o ? o->commit_interval_ms : 0, &fs->j);
    if (!r)
        r = orphan_load(fs);
    if (!r)
        reap_orphans(fs);        /* a bad orphan must not make the image unmountable */
    return r;
}

/* mount_write, undone as far as it goes when it fails. */
static int mount_write_all(struct sfs *fs, const struct sfs_mount_opts *o,
                           const struct jscan *s, struct bbuf **overlay)
{
    int r = mount_write(fs, o, s, overlay);
    if (r && fs->j) {
        jnl_close(fs->j);
        fs->j = NULL;
    }
    return r;
}

/* A mount with defer_writes: read-only until sfs_mount_finish, which
 * needs the scan and the overlay. */
static struct sfs *fs_new_deferred(struct media *m, const struct sfs_mount_opts *o)
{
    struct sfs_deferred *d = calloc(1, sizeof(*d));
    struct sfs *fs = d ? fs_new(m, true) : NULL;
    if (!fs) {
        free(d);
        return NULL;
    }
    d->opts = *o;
    fs->deferred = d;
    return fs;
}

int sfs_mount(struct media *m, const struct sfs_mount_opts *o, struct sfs **out)
{
    cisc_corrupt_clear();
    bool defer = o && o->defer_writes && !o->read_only;
    struct sfs *fs = defer ? fs_new_deferred(m, o) : fs_new(m, o && o->read_only);
    if (!fs)
        return -ENOMEM;
    struct jscan s;
    struct bbuf **overlay = NULL;
    memset(&s, 0, sizeof(s));
    int r = mount_validate(fs, &s, &overlay);
    if (!r && defer) {
        fs->deferred->scan = s;    /* sfs_mount_finish writes them */
        fs->deferred->overlay = overlay;
        *out = fs;
        return 0;
    }
    if (!r && !fs->rdonly)
        r = mount_write_all(fs, o, &s, overlay);
    jscan_free(&s);
    free(overlay);
    if (r) {
        fs_teardown(fs);
        return r;
    }
    *out = fs;
    return 0;
}

int sfs_mount_finish(struct sfs *fs)
{
    struct sfs_deferred *d = fs->deferred;
    if (!d)
        return 0;
    fs->rdonly = false;
    fs->overlay_data = false;      /* the images go in place: no overlay to read */
    int r = mount_write_all(fs, &d->opts, &d->scan, d->overlay);
    fs->rdonly = r != 0;
    deferred_free(fs);
    return r;
}

/* ---- unmount, sync ------------------------------------------------------------ */

static int mark_clean(struct sfs *fs)
{
    uint8_t *b = malloc(SFS_BSIZE);
    if (!b)
        return -ENOMEM;
    fs->sb.state = SFS_STATE_CLEAN;
    fs->sb.write_time = sfs_now().tv_sec;
    alloc_counts(fs, &fs->sb.free_blocks, &fs->sb.free_inodes);
    sfs_sb_encode(&fs->sb, b, fs->sb.backup_blkno);
    int r = media_write(fs->m, fs->sb.backup_blkno, 1, b);
    free(b);
    return r ? r : write_sb_direct(fs);
}

int sfs_unmount(struct sfs *fs)
{
    if (!fs)
        return 0;
    int r = 0;
    if (!fs->rdonly) {
        r = reap_orphans(fs);
        int rj = jnl_close(fs->j);
        fs->j = NULL;
        r = rj ? rj : r;
        if (!rj) {
            int rc = mark_clean(fs);
            r = rc ? rc : r;
        }
    }
    struct media *m = fs->m;
    fs_teardown(fs);
    media_close(m);
    return r;
}

int sfs_feature_incompat_set(struct sfs *fs, struct jnl_handle *h, uint32_t bit)
{
    pthread_mutex_lock(&fs->orphan_mu);
    if (!(fs->sb.feat_incompat & bit)) {
        fs->sb.feat_incompat |= bit;
        le32_put(fs->sbb->data + SB_FEAT_INCOMPAT, fs->sb.feat_incompat);
        jnl_dirty_buf(h, fs->sbb);
    }
    pthread_mutex_unlock(&fs->orphan_mu);
    return 0;
}

int sfs_sync(struct sfs *fs)
{
    return fs->rdonly ? 0 : jnl_sync(fs->j);
}

int sfs_fsync(struct sfs *fs, uint64_t ino, bool datasync)
{
    (void)datasync;              /* one journal: a commit covers both */
    struct sfs_attr a;
    int r = sfs_getattr(fs, ino, &a);
    return r ? r : sfs_sync(fs);
}

/* ---- handles and transactions ---------------------------------------------------- */

int sfs_op_begin(struct sfs *fs, struct sfs_txn *tx, uint32_t credits,
                 struct jnl_handle **h)
{
    if (fs->rdonly)
        return -EROFS;
    if (!tx)
        return jnl_start(fs->j, credits, h);
    if (tx->fs != fs)
        return -EINVAL;
    int r = jnl_join(tx->h, credits);
    if (r == 0)
        *h = tx->h;
    return r;
}

void sfs_op_end(struct sfs *fs, struct jnl_handle *h)
{
    (void)fs;
    jnl_stop(h);
}

int sfs_txn_begin_flags(struct sfs *fs, unsigned flags, struct sfs_txn **out)
{
    if (flags & ~(SFS_TXN_DATA_JOURNAL | SFS_TXN_COMMIT_HERE))
        return -EINVAL;
    if (fs->rdonly)
        return -EROFS;
    struct sfs_txn *tx = malloc(sizeof(*tx));   /* malloc: glibc's per-thread cache */
    if (!tx)
        return -ENOMEM;
    *tx = (struct sfs_txn){ 0 };
    int r = jnl_start(fs->j, 16, &tx->h);
    if (r) {
        free(tx);
        return r;
    }
    if (flags & SFS_TXN_DATA_JOURNAL)
        tx->h->flags |= JNL_DATA;   /* a joined outer handle keeps it too */
    tx->fs = fs;
    tx->commit_here = (flags & SFS_TXN_COMMIT_HERE) != 0;
    *out = tx;
    return 0;
}

int sfs_txn_begin(struct sfs *fs, struct sfs_txn **out)
{
    return sfs_txn_begin_flags(fs, 0, out);
}

int sfs_txn_commit(struct sfs_txn *tx, bool durable)
{
    struct sfs *fs = tx->fs;
    bool here = tx->commit_here;
    jnl_stop(tx->h);
    free(tx);
    return !durable ? 0 : here ? jnl_sync_here(fs->j) : jnl_sync(fs->j);
}

int sfs_txn_abort(struct sfs_txn *tx)
{
    (void)tx;
    return -EOPNOTSUPP;          /* see the report: undo log + locks held to commit */
}
