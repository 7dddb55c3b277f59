/*
 * device/storagefs/bcache.c - sharded hash of metadata block buffers with
 * per-shard LRU eviction of clean, unreferenced buffers (see bcache.h).
 *
 * Lock order: a shard mutex is a leaf lock; nothing else is taken under
 * it, and no I/O happens while it is held (a miss inserts a LOADING
 * placeholder, drops the lock, reads, then publishes).
 */
#include "device/storagefs/bcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/corrupt.h"
#include "device/storagefs/format.h"

#define NSHARDS  64u
#define NBUCKETS 1024u       /* per shard */

enum { BB_LOADING = 1, BB_VALID = 2 };

struct shard {
    pthread_mutex_t mu;
    pthread_cond_t loaded;
    struct bbuf *buckets[NBUCKETS];
    struct bbuf lru;         /* sentinel: lru.lru_next is the most recent */
    uint64_t count, unused;
};

struct bcache {
    struct media *m;
    uint64_t cap_per_shard;
    struct shard shards[NSHARDS];
};

static struct shard *shard_of(struct bcache *c, uint64_t blk)
{
    return &c->shards[(blk * 0x9E3779B97F4A7C15ull) >> 58];
}

static struct bbuf **bucket_of(struct shard *s, uint64_t blk)
{
    return &s->buckets[(blk / NSHARDS) % NBUCKETS];
}

static void lru_unlink(struct shard *s, struct bbuf *b)
{
    if (!b->lru_next)
        return;
    b->lru_prev->lru_next = b->lru_next;
    b->lru_next->lru_prev = b->lru_prev;
    b->lru_prev = b->lru_next = NULL;
    s->unused--;
}

static void lru_push(struct shard *s, struct bbuf *b)
{
    b->lru_next = s->lru.lru_next;
    b->lru_prev = &s->lru;
    s->lru.lru_next->lru_prev = b;
    s->lru.lru_next = b;
    s->unused++;
}

static void hash_remove(struct shard *s, struct bbuf *b)
{
    struct bbuf **pp = bucket_of(s, b->blk);
    while (*pp != b)
        pp = &(*pp)->hnext;
    *pp = b->hnext;
    s->count--;
}

static void buf_free(struct bbuf *b)
{
    free(b->data);
    free(b->ckpt);
    free(b);
}

/* Evicts least recently used unreferenced buffers beyond the capacity. */
static void shard_trim(struct bcache *c, struct shard *s)
{
    while (s->unused && s->count > c->cap_per_shard) {
        struct bbuf *b = s->lru.lru_prev;
        lru_unlink(s, b);
        hash_remove(s, b);
        buf_free(b);
    }
}

int bcache_create(struct media *m, uint64_t capacity, struct bcache **out)
{
    struct bcache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->m = m;
    c->cap_per_shard = capacity / NSHARDS + 1;
    for (unsigned i = 0; i < NSHARDS; i++) {
        struct shard *s = &c->shards[i];
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->loaded, NULL);
        s->lru.lru_next = s->lru.lru_prev = &s->lru;
    }
    *out = c;
    return 0;
}

void bcache_destroy(struct bcache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < NSHARDS; i++) {
        struct shard *s = &c->shards[i];
        for (unsigned k = 0; k < NBUCKETS; k++) {
            for (struct bbuf *b = s->buckets[k], *n; b; b = n) {
                n = b->hnext;
                buf_free(b);
            }
        }
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->loaded);
    }
    free(c);
}

static struct bbuf *find(struct shard *s, uint64_t blk)
{
    for (struct bbuf *b = *bucket_of(s, blk); b; b = b->hnext)
        if (b->blk == blk)
            return b;
    return NULL;
}

static struct bbuf *buf_new(struct shard *s, uint64_t blk)
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
    struct bbuf **head = bucket_of(s, blk);
    b->hnext = *head;
    *head = b;
    s->count++;
    return b;
}

static void take_ref(struct shard *s, struct bbuf *b)
{
    if (b->refs++ == 0)
        lru_unlink(s, b);
}

/* Reads and verifies a LOADING buffer (shard unlocked), then publishes it
 * or removes it. */
static int load(struct bcache *c, struct shard *s, struct bbuf *b, uint32_t magic)
{
    int r = media_read(c->m, b->blk, 1, b->data);
    if (r == 0 && magic != SFS_MAGIC_NONE && magic != SFS_MAGIC_DATA)
        r = sfs_block_verify(b->data, magic, b->blk);
    pthread_mutex_lock(&s->mu);
    if (r == 0) {
        b->state = BB_VALID;
        b->magic = magic;
    } else {
        hash_remove(s, b);
    }
    pthread_cond_broadcast(&s->loaded);
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
    struct shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct bbuf *b = find(s, blk);
        if (!b)
            break;
        if (b->state == BB_LOADING) {
            pthread_cond_wait(&s->loaded, &s->mu);
            continue;
        }
        if (b->magic != magic) {
            pthread_mutex_unlock(&s->mu);
            return kind_mismatch(b, magic);
        }
        take_ref(s, b);
        pthread_mutex_unlock(&s->mu);
        *out = b;
        return 0;
    }
    struct bbuf *b = buf_new(s, blk);
    if (b) {
        b->state = BB_LOADING;
        shard_trim(c, s);
    }
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
    struct shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find(s, blk);
    while (b && b->state == BB_LOADING) {
        pthread_cond_wait(&s->loaded, &s->mu);
        b = find(s, blk);
    }
    if (b)
        take_ref(s, b);
    else if ((b = buf_new(s, blk)) != NULL)
        shard_trim(c, s);
    if (b) {
        b->state = BB_VALID;
        b->magic = magic;
        b->checked = false;
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
static int drop_stale(struct shard *s, struct bbuf *b)
{
    if (b->refs != 0)
        return kind_mismatch(b, SFS_MAGIC_DATA);
    lru_unlink(s, b);
    hash_remove(s, b);
    buf_free(b);
    return 0;
}

int bcache_get_data(struct bcache *c, uint64_t blk, bool whole, struct bbuf **out)
{
    struct shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b;
    while ((b = find(s, blk)) != NULL && b->state == BB_LOADING)
        pthread_cond_wait(&s->loaded, &s->mu);
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
    b = buf_new(s, blk);
    if (b) {
        b->state = whole ? BB_VALID : BB_LOADING;
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
    struct shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find(s, blk);
    bool hit = b && b->state == BB_VALID && (any_kind || b->magic == SFS_MAGIC_DATA);
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
    struct shard *s = shard_of(c, b->blk);
    pthread_mutex_lock(&s->mu);
    take_ref(s, b);
    pthread_mutex_unlock(&s->mu);
}

void bcache_put(struct bcache *c, struct bbuf *b)
{
    if (!b)
        return;
    struct shard *s = shard_of(c, b->blk);
    pthread_mutex_lock(&s->mu);
    if (--b->refs == 0) {
        lru_push(s, b);
        shard_trim(c, s);
    }
    pthread_mutex_unlock(&s->mu);
}

void bcache_forget(struct bcache *c, uint64_t blk)
{
    struct shard *s = shard_of(c, blk);
    pthread_mutex_lock(&s->mu);
    struct bbuf *b = find(s, blk);
    if (b && b->refs == 0 && b->state == BB_VALID) {
        lru_unlink(s, b);
        hash_remove(s, b);
        buf_free(b);
    }
    pthread_mutex_unlock(&s->mu);
}

uint64_t bcache_count(struct bcache *c)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < NSHARDS; i++) {
        pthread_mutex_lock(&c->shards[i].mu);
        n += c->shards[i].count;
        pthread_mutex_unlock(&c->shards[i].mu);
    }
    return n;
}
