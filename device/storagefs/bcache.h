/*
 * device/storagefs/bcache.h - the metadata block cache.
 *
 * Every metadata block StorageFS reads or changes lives in a struct bbuf
 * here, so a hot directory or bitmap costs memory accesses, not I/O. File
 * data goes straight to the media, except blocks changed by a
 * data-journaled transaction, which live here until checkpointed.
 *
 * Invariants:
 *   1. At most one bbuf per block number; lookups of a block being loaded
 *      wait for the load (one media read per miss).
 *   2. A block is verified (crc, magic, self number via sfs_block_verify)
 *      when it is read from the media; a block that fails is not cached
 *      and the caller gets -EUCLEAN. Asking for a cached block as another
 *      kind than it was loaded as is corruption too.
 *   3. A bbuf with refs > 0 is never evicted. The journal holds a ref on
 *      every buffer dirty in a transaction or waiting for checkpoint, so
 *      only clean, unused buffers are evicted (LRU, per shard).
 *   4. bbuf.data is changed only by the holder of the lock that protects
 *      the structure it belongs to (inode lock, allocator lock, ...), and
 *      only inside a journal handle; `tseq`, `ckpt` and `ckpt_seq` belong
 *      to the journal.
 *   5. File data is cached only while a data-journaled transaction holds
 *      it (kind SFS_MAGIC_DATA, never verified or sealed): from the change
 *      until its checkpoint, after which the journal forgets it, so a
 *      cached data block is never older than the media.
 */
#ifndef CISC_SFS_BCACHE_H
#define CISC_SFS_BCACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/media/media.h"

struct bbuf {
    uint64_t blk;
    uint8_t *data;               /* SFS_BSIZE bytes */
    uint32_t magic;              /* kind it was loaded or created as */
    _Atomic bool checked;        /* node structure validated since load */
    /* journal-owned */
    uint64_t tseq;               /* running transaction it is dirty in, 0 = none (__atomic) */
    uint8_t *ckpt;               /* committed image awaiting checkpoint */
    uint64_t ckpt_seq;
    /* cache-owned (shard lock) */
    int refs;
    int state;
    struct bbuf *hnext, *lru_prev, *lru_next;
};

struct bcache;

/* Creates a cache over m keeping about `capacity` unused buffers.
 * Returns 0 or -ENOMEM. */
int bcache_create(struct media *m, uint64_t capacity, struct bcache **out);

/* Frees every buffer, referenced or not (at unmount). */
void bcache_destroy(struct bcache *c);

/* Returns block blk with a reference, reading and verifying it on a miss
 * (magic SFS_MAGIC_NONE: no verification, e.g. inode-table blocks).
 * Returns 0 or -errno (-EUCLEAN: corrupt, message via cisc_corrupt_last). */
int bcache_get(struct bcache *c, uint64_t blk, uint32_t magic, struct bbuf **out);

/* Returns block blk with a reference and zeroed contents, without reading
 * it: for a block just allocated as metadata of kind magic. */
int bcache_get_new(struct bcache *c, uint64_t blk, uint32_t magic, struct bbuf **out);

/* Returns file data block blk (kind SFS_MAGIC_DATA) with a reference:
 * the cached copy, or read from the media, or zeroed without reading when
 * `whole` (the caller overwrites all of it). A clean, unused copy cached
 * as another kind is stale (the block was freed and reused) and is
 * replaced; one in use is corruption. Returns 0 or -errno. */
int bcache_get_data(struct bcache *c, uint64_t blk, bool whole, struct bbuf **out);

/* Copies len bytes at off of blk into dst if blk is cached and valid as
 * a data block (any_kind: as any kind, for a read-only mount whose journal
 * overlay holds data blocks under the kind their first bytes suggest).
 * Returns true if it copied. */
bool bcache_read_cached(struct bcache *c, uint64_t blk, uint32_t off, void *dst, size_t len,
                        bool any_kind);

/* Installs contents of kind magic for blk without reading (the journal
 * replay overlay of a read-only mount); the buffer keeps a reference until
 * bcache_destroy. Returns 0 or -errno. */
int bcache_install(struct bcache *c, uint64_t blk, uint32_t magic, const uint8_t *data,
                   struct bbuf **out);

/* Takes one more reference on b. */
void bcache_hold(struct bcache *c, struct bbuf *b);

/* Drops a reference. */
void bcache_put(struct bcache *c, struct bbuf *b);

/* Forgets a clean, unreferenced cached copy of blk (the block was freed). */
void bcache_forget(struct bcache *c, uint64_t blk);

/* Number of cached buffers (statistics). */
uint64_t bcache_count(struct bcache *c);

#endif
