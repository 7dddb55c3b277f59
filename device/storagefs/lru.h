/*
 * device/storagefs/lru.h - a sharded hash of cached objects with an LRU
 * list of the unused ones: the skeleton shared by the block cache
 * (bcache.c) and the inode cache (inode.c).
 *
 * Objects embed a struct lru_node and are found by a 64-bit key (block or
 * inode number). Keys spread over LRU_NSHARDS shards; each has its own
 * mutex, hash chains, LRU list, and a condition variable on which lookups
 * wait for an object that is still being loaded. The caches keep their
 * own reference counts and decide when an object is unused (lru_unused)
 * or used again (lru_used) and how far to trim (lru_evict); this module
 * only does the hash and list work, so each cache keeps its own policy.
 *
 * Invariants:
 *   1. A shard's fields and the lru_node of every object hashed in it (or
 *      on its LRU list) are protected by the shard's `mu`. Every function
 *      below except lru_init, lru_fini and lru_shard needs it held. It is
 *      a leaf lock: the caches take nothing else and do no I/O under it.
 *   2. At most one hashed node per key: callers insert only after
 *      lru_find found none, under the same hold of `mu`.
 *   3. A node is on the LRU list only while hashed; lru_remove takes it
 *      off both. `count` is the number of hashed nodes, `unused` the
 *      number on the LRU list.
 *   4. A `loading` node is a placeholder whose object is not usable yet;
 *      lru_load_done ends that state (or removes the node) and wakes the
 *      waiters of lru_find_loaded.
 */
#ifndef CISC_SFS_LRU_H
#define CISC_SFS_LRU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LRU_SHARD_BITS 6u
#define LRU_NSHARDS    (1u << LRU_SHARD_BITS)

/* The object that embeds `node` as its member `member`. */
#define LRU_ENTRY(node, type, member) ((type *)((char *)(node) - offsetof(type, member)))

struct lru_node {
    uint64_t key;
    bool hashed;                 /* findable by key */
    bool loading;                /* placeholder, contents not ready (4) */
    struct lru_node *hnext;      /* hash chain */
    struct lru_node *prev, *next; /* LRU list; NULL when not on it */
};

struct lru_shard {
    pthread_mutex_t mu;
    pthread_cond_t loaded;       /* broadcast by lru_load_done */
    struct lru_node **buckets;   /* nbuckets hash chains */
    unsigned nbuckets;
    struct lru_node lru;         /* sentinel: lru.next is the most recent */
    uint64_t count, unused;      /* (3) */
};

struct lru_table {
    struct lru_shard shard[LRU_NSHARDS];
};

/* Initialises an empty table with nbuckets hash chains per shard.
 * Returns 0 or -ENOMEM. */
int lru_init(struct lru_table *t, unsigned nbuckets);

/* Calls free_obj on every hashed node, whatever its use, then frees the
 * table's own memory (at unmount; nothing else may use t). */
void lru_fini(struct lru_table *t, void (*free_obj)(struct lru_node *n));

/* The shard that key belongs to. */
struct lru_shard *lru_shard(struct lru_table *t, uint64_t key);

/* The hashed node with key, loading or not, or NULL. */
struct lru_node *lru_find(struct lru_shard *s, uint64_t key);

/* The hashed node with key once it is no longer loading (waiting on
 * s->loaded, which drops mu meanwhile), or NULL. */
struct lru_node *lru_find_loaded(struct lru_shard *s, uint64_t key);

/* Hashes n under key (not on the LRU list: the inserter uses it), as a
 * placeholder when `loading`. */
void lru_insert(struct lru_shard *s, struct lru_node *n, uint64_t key, bool loading);

/* Unhashes n and takes it off the LRU list; nothing if it is not hashed. */
void lru_remove(struct lru_shard *s, struct lru_node *n);

/* Ends n's load: ready when ok, else removed (the caller frees it once it
 * drops mu); wakes every lookup waiting for a load in s. */
void lru_load_done(struct lru_shard *s, struct lru_node *n, bool ok);

/* Puts n at the most recent end of the LRU list (it became unused). */
void lru_unused(struct lru_shard *s, struct lru_node *n);

/* Takes n off the LRU list if it is on it (it is used again). */
void lru_used(struct lru_shard *s, struct lru_node *n);

/* Removes the least recently used unused node from the list and the hash
 * and returns it for the caller to free, or NULL when none is unused. */
struct lru_node *lru_evict(struct lru_shard *s);

#endif
