/*
 * device/media/flash_ring.h - the lock-free request buffer between the
 * flash model's host interface controller and one FTL core (ScalaCache
 * ATC '24, 5.2: "a lock-free request buffer between the host interface
 * controller and each core"), and the completion buffer back.
 *
 * A single-producer single-consumer ring of struct flash_sub: one thread
 * pushes, one thread pops, and neither ever waits for the other inside
 * the ring (push returns how many fitted, pop how many it found; sleeping
 * when there is nothing to do is the caller's business, flash_cores.c).
 * Indices are free-running u32 (slot = index & mask), so a full ring and
 * an empty one differ (tail - head == entries vs 0) without a spare slot,
 * and wrap-around of the u32 is harmless.
 *
 * Layout: the producer's index and its private copy of the consumer's
 * index share one cache line, the consumer's another, the read-only
 * geometry a third, so that each side writes only its own line.
 *
 * Invariants (flash_ring_check, asserted at every push and pop in debug
 * and sanitizer builds):
 *   1. entries is a power of two in [2, FLASH_RING_MAX]; mask == entries-1.
 *   2. 0 <= tail - head <= entries (u32 arithmetic), as either side sees
 *      it: only the producer advances tail, only the consumer head, and
 *      the producer never passes head + entries.
 *   3. Slots [head, tail) hold entries the producer published and the
 *      consumer has not taken; only the producer writes slots, and only
 *      those in [tail, head + entries); only the consumer reads them, and
 *      only those in [head, tail).
 *   4. The private copies are values the other side's index had:
 *      head_seen <= head <= tail in circular order (head - head_seen <=
 *      tail - head_seen), and head <= tail_seen <= tail (tail_seen - head
 *      <= tail - head).
 *   5. Memory order: a slot is written before the release store of tail
 *      that publishes it, and read after the acquire load of tail that
 *      saw it; a slot is read before the release store of head that frees
 *      it, and overwritten only after the acquire load of head that saw
 *      it freed. Nothing else is shared.
 */
#ifndef CISC_DEVICE_FLASH_RING_H
#define CISC_DEVICE_FLASH_RING_H

#include <stdbool.h>
#include <stdint.h>

#define FLASH_RING_MAX 65536u

/* One sub-request (the host interface controller to a core) or its
 * completion (back): the same entry, rewritten by the core. */
enum flash_sub_op {
    FLASH_SUB_READ = 0,
    FLASH_SUB_WRITE = 1,
    FLASH_SUB_TRIM = 2,
    FLASH_SUB_IDLE = 3,     /* background GC of the core's partition (page: any of it) */
};

#define FLASH_SUB_GC 1u     /* completion: GC was running on the die (IDLE: it erased) */

struct flash_sub {
    uint64_t page;      /* logical page of the core's model */
    uint64_t at_ns;     /* request: issue time; completion: done time */
    uint32_t op;        /* enum flash_sub_op */
    uint32_t tag;       /* the controller's id, returned unchanged */
    uint32_t flags;     /* completion: FLASH_SUB_* */
    uint32_t core;      /* completion: the core that served it */
};

/* One cache line per side (C and C++ alike); a struct holding a ring
 * must itself be allocated 64-byte aligned. */
#define FLASH_LINE_ALIGNED __attribute__((aligned(64)))

struct flash_ring {
    /* The producer's line: tail (shared) and its copy of head. */
    FLASH_LINE_ALIGNED uint32_t tail;
    uint32_t head_seen;
    /* The consumer's line: head (shared) and its copy of tail. */
    FLASH_LINE_ALIGNED uint32_t head;
    uint32_t tail_seen;
    /* Read-only after flash_ring_init. */
    FLASH_LINE_ALIGNED uint32_t mask;
    struct flash_sub *slot;
};

/* Which side calls flash_ring_check (each reads the other's index). */
enum flash_ring_side { FLASH_RING_PRODUCER, FLASH_RING_CONSUMER };

/* Makes r an empty ring of entries slots (a power of two, 2 to
 * FLASH_RING_MAX). Returns 0, -EINVAL or -ENOMEM. Not thread-safe: before
 * the two sides start. */
int flash_ring_init(struct flash_ring *r, uint32_t entries);

/* Frees r's slots (both sides stopped). */
void flash_ring_fini(struct flash_ring *r);

/* The number of slots. */
uint32_t flash_ring_entries(const struct flash_ring *r);

/* Producer: copies up to n entries from in into the ring, publishing them
 * together. Returns how many fitted (0 when full). */
unsigned flash_ring_push(struct flash_ring *r, const struct flash_sub *in, unsigned n);

/* Consumer: takes up to max entries into out, oldest first, freeing their
 * slots together. Returns how many (0 when empty). */
unsigned flash_ring_pop(struct flash_ring *r, struct flash_sub *out, unsigned max);

/* Either side: true when the ring holds nothing the consumer could pop
 * (a fresh load of the other index). */
bool flash_ring_empty(const struct flash_ring *r);

/* Checks invariants 1, 2 and 4 from one side's view (the other index is
 * loaded with acquire). Returns true when they hold. */
bool flash_ring_check(const struct flash_ring *r, enum flash_ring_side side);

#endif
