/*
 * libcisc/arena.h - the allocator of a queue's data arena: a buddy
 * allocator whose metadata lives in private memory, never in the shared
 * arena (whatever lands in the arena - device output, a stray write by
 * the application - cannot corrupt the allocator).
 *
 * The arena (a power of two, 64 KiB .. 1 GiB) is split into blocks of
 * 2^k units; a unit is LC_ARENA_MIN bytes, or size / LC_ARENA_UNITS for
 * large arenas (so the metadata stays under 1 MiB). A free block of order
 * k is on free list k; a block handed out is recorded in `head` with its
 * order.
 *
 * Invariants:
 *   1. Every byte of the arena is in exactly one block, free or in use.
 *   2. Two free buddies of the same order never coexist: freeing merges.
 *   3. head[i] != 0 exactly for the first unit of a block in use
 *      (value order + 1); lc_arena_release of anything else is ignored.
 *   4. Not thread-safe: its queue's one-thread rule covers it.
 */
#ifndef CISC_LIBCISC_ARENA_H
#define CISC_LIBCISC_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LC_ARENA_MIN 256u          /* smallest unit (block) in bytes */
#define LC_ARENA_UNITS 65536u      /* at most this many units */
#define LC_ARENA_MAX_ORDER 16u     /* log2(LC_ARENA_UNITS) */

struct lc_arena {
    uint64_t size;                 /* arena bytes (power of two) */
    uint64_t unit;                 /* bytes per unit (power of two) */
    uint32_t units;                /* size / unit */
    uint32_t top;                  /* order of the whole arena */
    uint8_t *head;                 /* per unit: order + 1 of a used block starting here */
    uint8_t *freeo;                /* per unit: order + 1 of a free block starting here */
    uint32_t *next, *prev;         /* per unit: free-list links (unit index + 1) */
    uint32_t free_head[LC_ARENA_MAX_ORDER + 1];   /* unit index + 1, 0 = empty */
    uint64_t used;                 /* bytes in blocks in use */
};

/* Sets up an allocator for `size` bytes (a power of two >= LC_ARENA_MIN).
 * Returns 0 or -ENOMEM / -EINVAL. */
int lc_arena_init(struct lc_arena *a, uint64_t size);

/* Frees the allocator's metadata. */
void lc_arena_fini(struct lc_arena *a);

/* Allocates len bytes; sets *off. Returns 0, -EINVAL (len 0 or above
 * the arena) or -ENOMEM. */
int lc_arena_get(struct lc_arena *a, uint64_t len, uint64_t *off);

/* Returns the block starting at off; anything else is ignored. Returns
 * true if a block was freed. */
bool lc_arena_release(struct lc_arena *a, uint64_t off);

#endif
