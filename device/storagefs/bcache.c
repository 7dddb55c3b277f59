/*
 * device/storagefs/bcache.c - metadata block buffers in a sharded hash
 * with per-shard LRU eviction of clean, unreferenced buffers (lru.h;
 * see bcache.h).
 *
 * Lock order: a shard mutex is a leaf lock; nothing else is taken under
 * it, and no I/O happens while it is held (a miss inserts a loading
 * placeholder, drops the lock, reads, then publishes).
 */
#include "device/storagefs/bcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/corrupt.h"
#include "device/storagefs/format.h"

#define NBUCKETS 1024u       /* hash chains per shard */

struct bcache {
    struct media *m;
    uint64_t cap_per_shard;
    struct lru_table t;
};

static struct bbuf *buf_of(struct lru_node *n)
{
    return n ? LRU_ENTRY(n, struct bbuf, cache) : NULL;
}

static struct lru_shard *shard_of(struct bcache *c, uint64_t blk)
{
    return lru_shard(&c->t, blk);
}

static void buf_free(struct bbuf *b)
{
    free(b->data);
    free(b->ckpt);
    free(b);
}

static void node_free(struct lru_node *n)
{
    buf_free(buf_of(n));
}

/* Evicts least recently used unreferenced buffers beyond the capacity. */
static void shard_trim(struct bcache *c, struct lru_shard *s)
{
    struct lru_node *n;
    while (s->count > c->cap_per_shard && (n = lru_evict(s)) != NULL)
        node_free(n);
}

int bcache_create(struct media *m, uint64_t capacity, struct bcache **out)
{
    struct bcache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (lru_init(&c->t, NBUCKETS)) {
        free(c);
        return -ENOMEM;
    }
    c->m = m;
    c->cap_per_shard = capacity / LRU_NSHARDS + 1;
    *out = c;
    return 0;
}

void bcache_destroy(struct bcache *c)
{
    if (!c)
        return;
    lru_fini(&c->t, node_free);
    free(c);
}

static struct bbuf *find(struct lru_shard *s, uint64_t blk)
{
    return buf_of(lru_find(s, blk));
}

/* Waits out a load of blk (shard locked): the loaded buffer or NULL. */
static struct bbuf *find_loaded(struct lru_shard *s, uint64_t blk)
{
    return buf_of(lru_find_loaded(s, blk));
}

/* A new buffer for blk with one reference, hashed (shard locked). */
static struct bbuf *buf_new(struct lru_shard *s, uint64_t blk, bool loading)
{
    struct bbuf *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->data = aligned_alloc(SFS_BSIZE, SFS_BSIZE);
    if (!b->data) {
        free(b);
        return NULL;
    }
    b->blk = blk;
    b->refs = 1;
    lru_insert(s, &b->cache, blk, loading);
    return b;
}

static void take_ref(struct lru_shard *s, struct bbuf *b)
{
    if (b->refs++ == 0)
        lru_used(s, &b->cache);
}

/* Reads and verifies a loading buffer (shard unlocked), then publishes it
 * or removes it. */
static int load(struct bcache *c, struct lru_shard *s, struct bbuf *b, uint32_t magic)
{
    int r = media_read(c->m, b->blk, 1, b->data);
    if (r == 0 && magic != SFS_MAGIC_NONE && magic != SFS_MAGIC_DATA)
        r = sfs_block_verify(b->data, magic, b->blk);
    pthread_mutex_lock(&s->mu);
    if (r == 0)
        b->magic = magic;
    lru_load_done(s, &b->cache, r == 0);
    pthread_mutex_unlock(&s->mu);
    if (r)
        buf_free(b);
    return r;
}

static int kind_mismatch(const struct bbuf *b, uint32_t magic)
{
    return CISC_CORRUPT("block %llu: referenced as %s but it is a %s",
                        (unsigned long long)b->blk, sfs_kind_name(magic),
                        sfs_kind_name(b->magic));
}

int bcache_get(struct bcache *c, uint64_t blk, uint32_t magic, struct bbuf **out)
{
    struct lru_shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find_loaded(s, blk);
    if (b) {
        int r = b->magic == magic ? 0 : kind_mismatch(b, magic);
        if (r == 0)
            take_ref(s, b);
        pthread_mutex_unlock(&s->mu);
        if (r == 0)
            *out = b;
        return r;
    }
    b = buf_new(s, blk, true);
    if (b)
        shard_trim(c, s);
    pthread_mutex_unlock(&s->mu);
    if (!b)
        return -ENOMEM;
    int r = load(c, s, b, magic);
    if (r == 0)
        *out = b;
    return r;
}

int bcache_get_new(struct bcache *c, uint64_t blk, uint32_t magic, struct bbuf **out)
{
    struct lru_shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find_loaded(s, blk);
    if (b)
        take_ref(s, b);
    else if ((b = buf_new(s, blk, false)) != NULL)
        shard_trim(c, s);
    if (b) {
        b->magic = magic;
        /* Relaxed: no load pairs with this store. The caller builds the
         * new contents under the lock of the structure they belong to
         * (invariant 4), whose release publishes them and `checked`. */
        __atomic_store_n(&b->checked, false, __ATOMIC_RELAXED);
        memset(b->data, 0, SFS_BSIZE);
    }
    pthread_mutex_unlock(&s->mu);
    if (!b)
        return -ENOMEM;
    *out = b;
    return 0;
}

/* A cached copy of blk as another kind than data (shard locked): drops it
 * if nobody uses it (0), or reports the conflict. */
static int drop_stale(struct lru_shard *s, struct bbuf *b)
{
    if (b->refs != 0)
        return kind_mismatch(b, SFS_MAGIC_DATA);
    lru_remove(s, &b->cache);
    buf_free(b);
    return 0;
}

int bcache_get_data(struct bcache *c, uint64_t blk, bool whole, struct bbuf **out)
{
    struct lru_shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find_loaded(s, blk);
    if (b && b->magic != SFS_MAGIC_DATA) {
        int r = drop_stale(s, b);
        if (r) {
            pthread_mutex_unlock(&s->mu);
            return r;
        }
        b = NULL;
    }
    if (b) {
        take_ref(s, b);
        pthread_mutex_unlock(&s->mu);
        *out = b;
        return 0;
    }
    b = buf_new(s, blk, !whole);
    if (b) {
        b->magic = SFS_MAGIC_DATA;
        if (whole)
            memset(b->data, 0, SFS_BSIZE);
        shard_trim(c, s);
    }
    pthread_mutex_unlock(&s->mu);
    if (!b)
        return -ENOMEM;
    int r = whole ? 0 : load(c, s, b, SFS_MAGIC_DATA);
    if (r == 0)
        *out = b;
    return r;
}

bool bcache_read_cached(struct bcache *c, uint64_t blk, uint32_t off, void *dst, size_t len,
                        bool any_kind)
{
    struct lru_shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find(s, blk);
    bool hit = b && !b->cache.loading && (any_kind || b->magic == SFS_MAGIC_DATA);
    if (hit)
        memcpy(dst, b->data + off, len);
    pthread_mutex_unlock(&s->mu);
    return hit;
}

int bcache_install(struct bcache *c, uint64_t blk, uint32_t magic, const uint8_t *data,
                   struct bbuf **out)
{
    int r = bcache_get_new(c, blk, magic, out);
    if (r == 0)
        memcpy((*out)->data, data, SFS_BSIZE);
    return r;
}

void bcache_hold(struct bcache *c, struct bbuf *b)
{
    struct lru_shard *s = shard_of(c, b->blk);
    pthread_mutex_lock(&s->mu);
    take_ref(s, b);
    pthread_mutex_unlock(&s->mu);
}

void bcache_put(struct bcache *c, struct bbuf *b)
{
    if (!b)
        return;
    struct lru_shard *s = shard_of(c, b->blk);
    pthread_mutex_lock(&s->mu);
    if (--b->refs == 0) {
        lru_unused(s, &b->cache);
        shard_trim(c, s);
    }
    pthread_mutex_unlock(&s->mu);
}

void bcache_forget(struct bcache *c, uint64_t blk)
{
    struct lru_shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find(s, blk);
    if (b && b->refs == 0 && !b->cache.loading) {
        lru_remove(s, &b->cache);
        buf_free(b);
    }
    pthread_mutex_unlock(&s->mu);
}
