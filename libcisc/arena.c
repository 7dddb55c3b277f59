/* libcisc/arena.c - buddy allocator for a queue's arena (see arena.h). */
#include "libcisc/arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static unsigned log2_up(uint64_t v)
{
    unsigned k = 0;
    while ((1ull << k) < v)
        k++;
    return k;
}

static void push(struct lc_arena *a, unsigned order, uint32_t u)
{
    uint32_t h = a->free_head[order];
    a->freeo[u] = (uint8_t)(order + 1);
    a->next[u] = h;
    a->prev[u] = 0;
    if (h)
        a->prev[h - 1] = u + 1;
    a->free_head[order] = u + 1;
}

static void unlink_free(struct lc_arena *a, unsigned order, uint32_t u)
{
    uint32_t n = a->next[u], p = a->prev[u];
    if (p)
        a->next[p - 1] = n;
    else
        a->free_head[order] = n;
    if (n)
        a->prev[n - 1] = p;
    a->freeo[u] = 0;
}

int lc_arena_init(struct lc_arena *a, uint64_t size)
{
    memset(a, 0, sizeof(*a));
    if (size < LC_ARENA_MIN || (size & (size - 1)))
        return -EINVAL;
    a->size = size;
    a->unit = size / LC_ARENA_UNITS > LC_ARENA_MIN ? size / LC_ARENA_UNITS : LC_ARENA_MIN;
    a->units = (uint32_t)(size / a->unit);
    a->top = log2_up(a->units);
    a->head = calloc(a->units, 2);
    a->next = calloc(a->units, 2 * sizeof(uint32_t));
    if (!a->head || !a->next) {
        lc_arena_fini(a);
        return -ENOMEM;
    }
    a->freeo = a->head + a->units;
    a->prev = a->next + a->units;
    push(a, a->top, 0);
    return 0;
}

void lc_arena_fini(struct lc_arena *a)
{
    free(a->head);
    free(a->next);
    memset(a, 0, sizeof(*a));
}

int lc_arena_get(struct lc_arena *a, uint64_t len, uint64_t *off)
{
    if (len == 0 || len > a->size)
        return -EINVAL;
    unsigned order = log2_up((len + a->unit - 1) / a->unit), k = order;
    while (k <= a->top && !a->free_head[k])
        k++;
    if (k > a->top)
        return -ENOMEM;
    uint32_t u = a->free_head[k] - 1;
    unlink_free(a, k, u);
    while (k > order) {   /* split: the upper half goes back */
        k--;
        push(a, k, u + (1u << k));
    }
    a->head[u] = (uint8_t)(order + 1);
    a->used += a->unit << order;
    *off = (uint64_t)u * a->unit;
    return 0;
}

bool lc_arena_release(struct lc_arena *a, uint64_t off)
{
    if (off >= a->size || off % a->unit)
        return false;
    uint32_t u = (uint32_t)(off / a->unit);
    if (!a->head[u])
        return false;
    unsigned order = a->head[u] - 1u;
    a->head[u] = 0;
    a->used -= a->unit << order;
    while (order < a->top) {   /* merge with a free buddy of the same order */
        uint32_t b = u ^ (1u << order);
        if (a->freeo[b] != order + 1)
            break;
        unlink_free(a, order, b);
        u = u < b ? u : b;
        order++;
    }
    push(a, order, u);
    return true;
}
