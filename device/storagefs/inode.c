/*
 * device/storagefs/inode.c - inode cache (hash + LRU), loading and
 * encoding inode slots, inode creation and the orphan list (see inode.h).
 */
#include "device/storagefs/inode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/btree.h"
#include "device/storagefs/sfs_int.h"

#define NBUCKETS   512u          /* hash chains per shard */
#define MAX_UNUSED 512u          /* per shard: 32768 cached unused inodes */

/* The cache: inodes hashed by number over the shards of `t`. A shard's
 * mutex protects, besides its chains and LRU (lru.h), each of its inodes'
 * refs, opens and reaping fields. A leaf lock: nothing else is taken
 * under it, and no I/O. */
struct icache {
    struct lru_table t;
    pthread_mutex_t slot_mu;     /* encode/decode of inode slots */
};

static struct sfs_inode *inode_of(struct lru_node *n)
{
    return n ? LRU_ENTRY(n, struct sfs_inode, cache) : NULL;
}

static struct lru_shard *shard(const struct sfs *fs, uint64_t ino)
{
    return lru_shard(&fs->ic->t, ino);
}

/* Frees file.c's copy of a partial block (no one holds ip). */
static void drop_tail(struct sfs_inode *ip)
{
    free(ip->tail);
    ip->tail = NULL;
    ip->tail_pblk = 0;
}

static void inode_free_struct(struct sfs_inode *ip)
{
    pthread_rwlock_destroy(&ip->rw);
    drop_tail(ip);
    free(ip);
}

static void node_free(struct lru_node *n)
{
    inode_free_struct(inode_of(n));
}

static void trim(struct lru_shard *c)
{
    while (c->unused > MAX_UNUSED)
        node_free(lru_evict(c));
}

int icache_create(struct sfs *fs)
{
    struct icache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (lru_init(&c->t, NBUCKETS)) {
        free(c);
        return -ENOMEM;
    }
    pthread_mutex_init(&c->slot_mu, NULL);
    fs->ic = c;
    return 0;
}

void icache_destroy(struct sfs *fs)
{
    struct icache *c = fs->ic;
    if (!c)
        return;
    lru_fini(&c->t, node_free);
    pthread_mutex_destroy(&c->slot_mu);
    free(c);
    fs->ic = NULL;
}

/* A new inode struct for ino with one ref, hashed (shard locked). */
static struct sfs_inode *new_struct(struct lru_shard *c, uint64_t ino, bool loading)
{
    struct sfs_inode *ip = calloc(1, sizeof(*ip));
    if (!ip)
        return NULL;
    ip->ino = ino;
    ip->refs = 1;
    pthread_rwlock_init(&ip->rw, NULL);
    lru_insert(c, &ip->cache, ino, loading);
    return ip;
}

/* Decodes ip's slot from its inode-table block. */
static int read_slot(struct sfs *fs, struct sfs_inode *ip)
{
    uint64_t blk = sfs_itable_blk(fs, ip->ino);
    struct bbuf *b;
    int r = bcache_get(fs->bc, blk, SFS_MAGIC_NONE, &b);
    if (r)
        return r;
    pthread_mutex_lock(&fs->ic->slot_mu);
    const uint8_t *p = b->data + (ip->ino % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE;
    r = sfs_inode_decode(p, ip->ino, blk, &ip->d);
    pthread_mutex_unlock(&fs->ic->slot_mu);
    bcache_put(fs->bc, b);
    return r;
}

static int finish_load(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    int r = read_slot(fs, ip);
    /* It may have journaled data from before it left the cache: assume
     * the newest data-journaled transaction covers it (jdata.h). */
    __atomic_store_n(&ip->jdata_seq, __atomic_load_n(&fs->jdata_last, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
    pthread_mutex_lock(&c->mu);
    lru_load_done(c, &ip->cache, r == 0);
    pthread_mutex_unlock(&c->mu);
    if (r)
        inode_free_struct(ip);
    return r;
}

static void take_ref(struct lru_shard *c, struct sfs_inode *ip)
{
    if (ip->refs++ == 0 && ip->opens == 0)
        lru_used(c, &ip->cache);
}

/* Cache hit (waiting out a load): the inode with a ref, or NULL. */
static struct sfs_inode *lookup_cached(struct lru_shard *c, uint64_t ino)
{
    pthread_mutex_lock(&c->mu);
    struct sfs_inode *ip = inode_of(lru_find_loaded(c, ino));
    if (ip)
        take_ref(c, ip);
    pthread_mutex_unlock(&c->mu);
    return ip;
}

int inode_get(struct sfs *fs, uint64_t ino, struct sfs_inode **out)
{
    if (ino == 0 || ino >= fs->sb.ninodes)
        return -ENOENT;
    struct lru_shard *c = shard(fs, ino);
    struct sfs_inode *ip = lookup_cached(c, ino);
    if (ip) {
        *out = ip;
        return 0;
    }
    if (!alloc_inode_used(fs, ino))
        return -ENOENT;
    pthread_mutex_lock(&c->mu);
    if (lru_find(c, ino)) {       /* raced with another loader or creator */
        pthread_mutex_unlock(&c->mu);
        return inode_get(fs, ino, out);
    }
    ip = new_struct(c, ino, true);
    pthread_mutex_unlock(&c->mu);
    if (!ip)
        return -ENOMEM;
    int r = finish_load(fs, ip);
    if (r == 0)
        *out = ip;
    return r;
}

void inode_hold(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    pthread_mutex_lock(&c->mu);
    take_ref(c, ip);
    pthread_mutex_unlock(&c->mu);
}

void inode_put(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    bool free_it = false;
    pthread_mutex_lock(&c->mu);
    if (--ip->refs == 0 && ip->opens == 0) {
        if (!ip->cache.hashed) {
            free_it = true;
        } else {
            drop_tail(ip);   /* memory for files in use only */
            lru_unused(c, &ip->cache);
            trim(c);
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (free_it)
        inode_free_struct(ip);
}

int inode_open(struct sfs *fs, uint64_t ino, struct sfs_inode **out)
{
    if (ino == 0 || ino >= fs->sb.ninodes)
        return -ENOENT;
    /* A cached inode: one lock round instead of inode_get, the count and
     * inode_put (three); the net effect is theirs. */
    struct lru_shard *c = shard(fs, ino);
    pthread_mutex_lock(&c->mu);
    struct sfs_inode *hit = inode_of(lru_find_loaded(c, ino));
    if (hit) {
        if (hit->refs == 0 && hit->opens == 0)
            lru_used(c, &hit->cache);
        hit->opens++;
    }
    pthread_mutex_unlock(&c->mu);
    if (hit) {
        if (out)
            *out = hit;
        return 0;
    }
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_mutex_lock(&c->mu);
    ip->opens++;
    pthread_mutex_unlock(&c->mu);
    inode_put(fs, ip);
    if (out)
        *out = ip;
    return 0;
}

bool inode_close(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    pthread_mutex_lock(&c->mu);
    bool last = ip->opens > 0 && --ip->opens == 0;
    pthread_mutex_unlock(&c->mu);
    return last;
}

bool inode_close_unless_last(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    pthread_mutex_lock(&c->mu);
    bool done = ip->opens > 1;
    if (done)
        ip->opens--;
    pthread_mutex_unlock(&c->mu);
    return done;
}

bool inode_opened(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    pthread_mutex_lock(&c->mu);
    bool live = ip->opens > 0 && !ip->reaping;
    pthread_mutex_unlock(&c->mu);
    return live;
}

bool inode_claim_reap(struct sfs *fs, struct sfs_inode *ip)
{
    struct lru_shard *c = shard(fs, ip->ino);
    pthread_mutex_lock(&c->mu);
    bool mine = ip->opens == 0 && !ip->reaping;
    if (mine)
        ip->reaping = true;
    pthread_mutex_unlock(&c->mu);
    return mine;
}

/* ---- creation, encoding, freeing --------------------------------------------- */

struct timespec sfs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts;
}

static void init_dinode(struct sfs *fs, struct sfs_dinode *d, uint64_t ino, uint32_t mode,
                        uint32_t uid, uint32_t gid, uint64_t rdev)
{
    struct timespec now = sfs_now();
    memset(d, 0, sizeof(*d));
    d->ino = ino;
    d->mode = mode;
    d->uid = uid;
    d->gid = gid;
    d->rdev = rdev;
    d->nlink = S_ISDIR(mode) ? 2 : 1;
    d->generation = __atomic_fetch_add(&fs->gen_next, 1, __ATOMIC_RELAXED);  /* unique only */
    d->atime = d->mtime = d->ctime = d->btime = now.tv_sec;
    d->atime_ns = d->mtime_ns = d->ctime_ns = d->btime_ns = (uint32_t)now.tv_nsec;
    if (S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode))
        bt_root_init(d->data, ino);
}

int inode_create(struct sfs *fs, struct jnl_handle *h, uint64_t goal, uint32_t mode,
                 uint32_t uid, uint32_t gid, uint64_t rdev, struct sfs_inode **out)
{
    uint64_t ino;
    int r = alloc_inode(fs, h, goal, &ino);
    if (r)
        return r;
    struct lru_shard *c = shard(fs, ino);
    pthread_mutex_lock(&c->mu);
    struct sfs_inode *ip = new_struct(c, ino, false);
    pthread_mutex_unlock(&c->mu);
    if (!ip) {
        alloc_free_inode(fs, h, ino);
        return -ENOMEM;
    }
    init_dinode(fs, &ip->d, ino, mode, uid, gid, rdev);
    r = inode_dirty(h, ip);
    if (r) {
        inode_free_number(fs, h, ip);
        inode_put(fs, ip);
        return r;
    }
    *out = ip;
    return 0;
}

int inode_dirty(struct jnl_handle *h, struct sfs_inode *ip)
{
    return jnl_dirty_inode(h, ip);
}

void inode_commit_encode(struct sfs *fs, struct sfs_inode *ip)
{
    struct bbuf *b;
    /* The block is pinned by the transaction: this is a cache hit. */
    if (bcache_get(fs->bc, sfs_itable_blk(fs, ip->ino), SFS_MAGIC_NONE, &b))
        return;
    uint8_t *p = b->data + (ip->ino % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE;
    pthread_mutex_lock(&fs->ic->slot_mu);
    if (ip->deleted)
        memset(p, 0, SFS_INODE_SIZE);
    else
        sfs_inode_encode(&ip->d, p);
    pthread_mutex_unlock(&fs->ic->slot_mu);
    bcache_put(fs->bc, b);
}

int inode_free_number(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip)
{
    int r = inode_dirty(h, ip);
    if (r)
        return r;
    struct lru_shard *c = shard(fs, ip->ino);
    pthread_mutex_lock(&c->mu);
    ip->deleted = true;
    lru_remove(c, &ip->cache);
    pthread_mutex_unlock(&c->mu);
    alloc_free_inode(fs, h, ip->ino);
    return 0;
}

/* ---- orphan list ------------------------------------------------------------- */

static void set_orphan_head(struct sfs *fs, struct jnl_handle *h, uint64_t ino)
{
    fs->sb.orphan_head = ino;
    le64_put(fs->sbb->data + SB_ORPHAN_HEAD, ino);
    jnl_dirty_buf(h, fs->sbb);
}

static void list_insert_after(struct sfs_inode *pos, struct sfs_inode *ip)
{
    ip->oprev = pos;
    ip->onext = pos->onext;
    pos->onext->oprev = ip;
    pos->onext = ip;
    ip->orphan = true;
}

int orphan_add(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip)
{
    int r = inode_dirty(h, ip);
    if (r || ip->orphan)
        return r;
    inode_hold(fs, ip);
    pthread_mutex_lock(&fs->orphan_mu);
    ip->d.orphan_next = fs->sb.orphan_head;
    set_orphan_head(fs, h, ip->ino);
    list_insert_after(&fs->orphans, ip);
    pthread_mutex_unlock(&fs->orphan_mu);
    return 0;
}

int orphan_remove(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip)
{
    if (!ip->orphan)
        return 0;
    pthread_mutex_lock(&fs->orphan_mu);
    struct sfs_inode *prev = ip->oprev;
    int r = prev == &fs->orphans ? 0 : inode_dirty(h, prev);
    if (r == 0)
        r = inode_dirty(h, ip);
    if (r == 0) {
        if (prev == &fs->orphans)
            set_orphan_head(fs, h, ip->d.orphan_next);
        else
            prev->d.orphan_next = ip->d.orphan_next;
        ip->d.orphan_next = 0;
        prev->onext = ip->onext;
        ip->onext->oprev = prev;
        ip->onext = ip->oprev = NULL;
        ip->orphan = false;
    }
    pthread_mutex_unlock(&fs->orphan_mu);
    if (r == 0)
        inode_put(fs, ip);
    return r;
}

int orphan_load(struct sfs *fs)
{
    uint64_t ino = fs->sb.orphan_head, n = 0;
    while (ino) {
        struct sfs_inode *ip;
        int r = inode_get(fs, ino, &ip);
        if (r == -ENOENT)
            return CISC_CORRUPT("orphan list: inode %llu is not in use",
                                (unsigned long long)ino);
        if (r)
            return r;
        if (ip->d.nlink != 0 || ip->orphan || ++n > fs->sb.ninodes) {
            inode_put(fs, ip);
            return CISC_CORRUPT("orphan list: inode %llu %s", (unsigned long long)ino,
                                ip->orphan ? "appears twice (cycle)" : "still has links");
        }
        list_insert_after(fs->orphans.oprev, ip);    /* keep on-image order */
        ino = ip->d.orphan_next;
        if (ino >= fs->sb.ninodes)
            return CISC_CORRUPT("orphan list: inode %llu points to %llu, out of range",
                                (unsigned long long)ip->ino, (unsigned long long)ino);
    }
    return 0;
}

struct sfs_inode *orphan_next_unopened(struct sfs *fs, struct sfs_inode *after)
{
    struct sfs_inode *found = NULL;
    pthread_mutex_lock(&fs->orphan_mu);
    struct sfs_inode *ip = after ? after->onext : fs->orphans.onext;
    for (; !found && ip && ip != &fs->orphans; ip = ip->onext) {
        struct lru_shard *c = shard(fs, ip->ino);
        pthread_mutex_lock(&c->mu);
        if (ip->opens == 0 && !ip->reaping) {
            found = ip;
            take_ref(c, ip);     /* on the list: already referenced */
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&fs->orphan_mu);
    return found;
}
