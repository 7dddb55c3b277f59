/* device/sched/heap.c - indexed binary min-heap (see heap.h). */
#include "device/sched/heap.h"

#include <errno.h>
#include <stdlib.h>

static bool before(const struct heap_node *a, const struct heap_node *b)
{
    return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static void put(struct heap *h, uint32_t i, struct heap_node *x)
{
    h->node[i] = x;
    x->idx = i;
}

static void sift_up(struct heap *h, uint32_t i)
{
    struct heap_node *x = h->node[i];
    while (i > 0 && before(x, h->node[(i - 1) / 2])) {
        put(h, i, h->node[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(h, i, x);
}

static void sift_down(struct heap *h, uint32_t i)
{
    struct heap_node *x = h->node[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(h->node[c + 1], h->node[c]))
            c++;
        if (!before(h->node[c], x))
            break;
        put(h, i, h->node[c]);
        i = c;
    }
    put(h, i, x);
}

int heap_insert(struct heap *h, struct heap_node *x)
{
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? 2 * h->cap : 8;
        struct heap_node **p = realloc(h->node, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        h->node = p;
        h->cap = cap;
    }
    put(h, h->n++, x);
    sift_up(h, h->n - 1);
    return 0;
}

void heap_remove(struct heap *h, struct heap_node *x)
{
    uint32_t i = x->idx;
    x->idx = HEAP_NONE;
    if (i == --h->n)
        return;
    put(h, i, h->node[h->n]);
    heap_fix(h, h->node[i]);
}

void heap_fix(struct heap *h, struct heap_node *x)
{
    uint32_t i = x->idx;
    if (i > 0 && before(x, h->node[(i - 1) / 2]))
        sift_up(h, i);
    else
        sift_down(h, i);
}

void heap_free(struct heap *h)
{
    free(h->node);
    h->node = NULL;
    h->n = h->cap = 0;
}

bool heap_check(const struct heap *h, uint32_t walk)
{
    if (h->n > h->cap)
        return false;
    for (uint32_t i = 0; i < h->n && i < walk; i++) {
        if (h->node[i]->idx != i)
            return false;
        if (i > 0 && before(h->node[i], h->node[(i - 1) / 2]))
            return false;
    }
    return true;
}
