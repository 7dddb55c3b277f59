/*
 * device/sched/heap.h - an indexed binary min-heap of nodes embedded in the
 * scheduler's tenants and queues: the "red-black tree sorted by virtual
 * time" of FusionFS §4.6.1, as a heap because the scheduler only ever
 * needs the least element and to move one element whose key changed.
 *
 * A node's order is (key, seq): equal keys go oldest seq first, so
 * tenants or queues with the same virtual time take turns (round robin).
 * Insert, remove and fix are O(log n); min is O(1).
 *
 * Invariants:
 *   1. For every node at index i > 0: node[(i-1)/2] orders before node[i].
 *   2. node[i]->idx == i for every node in the heap; a node outside any
 *      heap has idx == HEAP_NONE.
 */
#ifndef CISC_DEVICE_SCHED_HEAP_H
#define CISC_DEVICE_SCHED_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HEAP_NONE UINT32_MAX

struct heap_node {
    uint64_t key;
    uint64_t seq;      /* tie-break: lower first */
    uint32_t idx;      /* position in its heap, HEAP_NONE when outside */
};

struct heap {
    struct heap_node **node;
    uint32_t n, cap;
};

/* Marks a node as outside any heap. */
static inline void heap_node_init(struct heap_node *x)
{
    x->key = x->seq = 0;
    x->idx = HEAP_NONE;
}

static inline bool heap_has(const struct heap_node *x)
{
    return x->idx != HEAP_NONE;
}

/* The least node, or NULL when empty. */
static inline struct heap_node *heap_min(const struct heap *h)
{
    return h->n ? h->node[0] : (struct heap_node *)0;
}

/* Adds x (not in any heap). Returns 0 or -ENOMEM (then x stays outside). */
int heap_insert(struct heap *h, struct heap_node *x);

/* Removes x, which is in h. */
void heap_remove(struct heap *h, struct heap_node *x);

/* Restores the order after x's key or seq changed (x in h). */
void heap_fix(struct heap *h, struct heap_node *x);

/* Frees the array (the nodes belong to their owners). */
void heap_free(struct heap *h);

/* True if invariants 1 and 2 hold, checking at most `walk` nodes. */
bool heap_check(const struct heap *h, uint32_t walk);

#ifdef __cplusplus
}
#endif

#endif
