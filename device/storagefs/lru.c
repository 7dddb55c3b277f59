/*
 * device/storagefs/lru.c - sharded hash chains and per-shard LRU lists of
 * cached objects (see lru.h).
 */
#include "device/storagefs/lru.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

/* Fibonacci hashing: the top bits of key * 2^64/phi pick the shard, so
 * consecutive numbers (blocks of one file, inodes of one directory) land
 * on different shards and their locks. */
struct lru_shard *lru_shard(struct lru_table *t, uint64_t key)
{
    return &t->shard[(key * 0x9E3779B97F4A7C15ull) >> (64 - LRU_SHARD_BITS)];
}

/* Within a shard, the key's remaining bits spread it over the chains. */
static struct lru_node **bucket(struct lru_shard *s, uint64_t key)
{
    return &s->buckets[(key / LRU_NSHARDS) % s->nbuckets];
}

int lru_init(struct lru_table *t, unsigned nbuckets)
{
    for (unsigned i = 0; i < LRU_NSHARDS; i++) {
        struct lru_shard *s = &t->shard[i];
        s->buckets = calloc(nbuckets, sizeof(*s->buckets));
        if (!s->buckets) {
            while (i--)
                free(t->shard[i].buckets);
            return -ENOMEM;
        }
        s->nbuckets = nbuckets;
        s->lru.next = s->lru.prev = &s->lru;
        s->count = s->unused = 0;
    }
    for (unsigned i = 0; i < LRU_NSHARDS; i++) {
        pthread_mutex_init(&t->shard[i].mu, NULL);
        pthread_cond_init(&t->shard[i].loaded, NULL);
    }
    return 0;
}

void lru_fini(struct lru_table *t, void (*free_obj)(struct lru_node *n))
{
    for (unsigned i = 0; i < LRU_NSHARDS; i++) {
        struct lru_shard *s = &t->shard[i];
        for (unsigned k = 0; k < s->nbuckets; k++) {
            for (struct lru_node *n = s->buckets[k], *next; n; n = next) {
                next = n->hnext;
                free_obj(n);
            }
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->loaded);
    }
}

struct lru_node *lru_find(struct lru_shard *s, uint64_t key)
{
    for (struct lru_node *n = *bucket(s, key); n; n = n->hnext)
        if (n->key == key)
            return n;
    return NULL;
}

struct lru_node *lru_find_loaded(struct lru_shard *s, uint64_t key)
{
    struct lru_node *n;
    while ((n = lru_find(s, key)) != NULL && n->loading)
        pthread_cond_wait(&s->loaded, &s->mu);
    return n;
}

void lru_insert(struct lru_shard *s, struct lru_node *n, uint64_t key, bool loading)
{
    struct lru_node **head = bucket(s, key);
    n->key = key;
    n->hashed = true;
    n->loading = loading;
    n->prev = n->next = NULL;
    n->hnext = *head;
    *head = n;
    s->count++;
}

void lru_remove(struct lru_shard *s, struct lru_node *n)
{
    if (!n->hashed)
        return;
    lru_used(s, n);
    struct lru_node **pp = bucket(s, n->key);
    while (*pp != n)
        pp = &(*pp)->hnext;
    *pp = n->hnext;
    n->hashed = false;
    s->count--;
}

void lru_load_done(struct lru_shard *s, struct lru_node *n, bool ok)
{
    if (ok)
        n->loading = false;
    else
        lru_remove(s, n);
    pthread_cond_broadcast(&s->loaded);
}

void lru_unused(struct lru_shard *s, struct lru_node *n)
{
    assert(n->hashed && !n->next && !n->loading);
    n->next = s->lru.next;
    n->prev = &s->lru;
    s->lru.next->prev = n;
    s->lru.next = n;
    s->unused++;
}

void lru_used(struct lru_shard *s, struct lru_node *n)
{
    if (!n->next)
        return;
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
    s->unused--;
}

struct lru_node *lru_evict(struct lru_shard *s)
{
    if (!s->unused)
        return NULL;
    struct lru_node *n = s->lru.prev;
    lru_remove(s, n);
    return n;
}
