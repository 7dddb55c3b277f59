/*
 * device/media/flash_ring.c - the single-producer single-consumer ring of
 * flash_ring.h. Each side keeps a private copy of the other's index and
 * reloads it only when the copy says full (producer) or empty (consumer),
 * so a side touches the other's cache line about once per batch.
 */
#include "device/media/flash_ring.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int flash_ring_init(struct flash_ring *r, uint32_t entries)
{
    if (entries < 2 || entries > FLASH_RING_MAX || (entries & (entries - 1)))
        return -EINVAL;
    memset(r, 0, sizeof(*r));
    r->slot = calloc(entries, sizeof(*r->slot));
    if (!r->slot)
        return -ENOMEM;
    r->mask = entries - 1;
    return 0;
}

void flash_ring_fini(struct flash_ring *r)
{
    free(r->slot);
    r->slot = NULL;
}

uint32_t flash_ring_entries(const struct flash_ring *r)
{
    return r->mask + 1;
}

unsigned flash_ring_push(struct flash_ring *r, const struct flash_sub *in, unsigned n)
{
    uint32_t entries = r->mask + 1, tail = r->tail;   /* ours: no order needed */
    if (tail - r->head_seen + n > entries)
        /* Pairs with the consumer's release store of head: the slots it
         * freed have been read, so we may overwrite them (invariant 5). */
        r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    uint32_t room = entries - (tail - r->head_seen);
    n = n < room ? n : room;
    for (unsigned i = 0; i < n; i++)
        r->slot[(tail + i) & r->mask] = in[i];
    /* Pairs with the consumer's acquire load of tail: the slots written
     * above are visible before the index that publishes them. */
    __atomic_store_n(&r->tail, tail + n, __ATOMIC_RELEASE);
    assert(flash_ring_check(r, FLASH_RING_PRODUCER));
    return n;
}

unsigned flash_ring_pop(struct flash_ring *r, struct flash_sub *out, unsigned max)
{
    uint32_t head = r->head;   /* ours */
    if (r->tail_seen - head < max)
        /* Pairs with the producer's release store of tail. */
        r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint32_t n = r->tail_seen - head;
    n = n < max ? n : max;
    for (uint32_t i = 0; i < n; i++)
        out[i] = r->slot[(head + i) & r->mask];
    /* Pairs with the producer's acquire load of head: the slots are
     * copied out before they are handed back. */
    __atomic_store_n(&r->head, head + n, __ATOMIC_RELEASE);
    assert(flash_ring_check(r, FLASH_RING_CONSUMER));
    return n;
}

bool flash_ring_empty(const struct flash_ring *r)
{
    /* Acquire, as a pop's reload: a caller that then pops sees the slots. */
    uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint32_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    return tail == head;
}

bool flash_ring_check(const struct flash_ring *r, enum flash_ring_side side)
{
    uint32_t entries = r->mask + 1;
    if (entries < 2 || entries > FLASH_RING_MAX || (entries & r->mask))
        return false;                                              /* 1 */
    if (side == FLASH_RING_PRODUCER) {
        uint32_t tail = r->tail, head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        return tail - head <= entries                              /* 2 */
               && head - r->head_seen <= tail - r->head_seen;      /* 4 */
    }
    uint32_t head = r->head, tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    return tail - head <= entries                                  /* 2 */
           && r->tail_seen - head <= tail - head;                  /* 4 */
}
