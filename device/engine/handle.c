/* device/engine/handle.c - open-file table with generation-checked handles. */
#include "device/engine/handle.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define HDL_MAX (1u << 24)

struct slot {
    struct hdl h;
    uint32_t gen;
    bool used;
    uint32_t next_free;   /* index + 1, 0 = end */
};

struct hdl_table {
    pthread_mutex_t lock;   /* protects everything below */
    struct slot *slots;
    uint32_t nslots, cap;
    uint32_t free_head;     /* index + 1 of the first free slot, 0 = none */
    uint64_t count;
    uint32_t limit;         /* max open entries, 0 = HDL_MAX */
    uint32_t nchecks;       /* hdl_check calls (debug builds): samples its walk */
};

#ifndef NDEBUG
#define HDL_FULL_CHECK 256u  /* hdl_check calls between walks of a large table */

/* The table's invariants (handle.h; the free list and the open count
 * are what invariant 1 rests on), checked from assert() after each
 * change in debug and sanitizer builds (lock held): O(1), plus a walk of
 * every slot and of the free list when the table is small or every
 * HDL_FULL_CHECK calls. */
static bool hdl_check(struct hdl_table *t)
{
    assert(t->nslots <= t->cap && t->cap <= HDL_MAX);
    assert(t->count <= t->nslots && t->free_head <= t->nslots);
    assert(!t->free_head || !t->slots[t->free_head - 1].used);
    if (t->nslots > 64 && t->nchecks++ % HDL_FULL_CHECK != 0)
        return true;
    uint64_t used = 0, nfree = 0;
    for (uint32_t i = 0; i < t->nslots; i++) {
        assert(t->slots[i].gen != 0);        /* 1: no handle has generation 0 */
        used += t->slots[i].used;
    }
    for (uint32_t f = t->free_head; f && nfree <= t->nslots; f = t->slots[f - 1].next_free) {
        assert(f <= t->nslots && !t->slots[f - 1].used);
        nfree++;
    }
    assert(used == t->count);
    assert(nfree == t->nslots - t->count);   /* every free slot once, no cycle */
    return true;
}
#endif

int hdl_table_create(struct hdl_table **out)
{
    struct hdl_table *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_mutex_init(&t->lock, NULL);
    assert(hdl_check(t));
    *out = t;
    return 0;
}

void hdl_table_destroy(struct hdl_table *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->slots);
    free(t);
}

void hdl_table_set_limit(struct hdl_table *t, uint32_t max)
{
    pthread_mutex_lock(&t->lock);
    t->limit = max;
    pthread_mutex_unlock(&t->lock);
}

static int grow(struct hdl_table *t)
{
    if (t->cap >= HDL_MAX)
        return -EMFILE;
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    struct slot *s = realloc(t->slots, cap * sizeof(*s));
    if (!s)
        return -ENOMEM;
    t->slots = s;
    t->cap = cap;
    return 0;
}

static int alloc_slot(struct hdl_table *t, uint32_t *idx)
{
    if (t->limit && t->count >= t->limit)
        return -EMFILE;
    if (t->free_head) {
        *idx = t->free_head - 1;
        assert(!t->slots[*idx].used);
        t->free_head = t->slots[*idx].next_free;
        return 0;
    }
    if (t->nslots == t->cap) {
        int r = grow(t);
        if (r)
            return r;
    }
    *idx = t->nslots++;
    t->slots[*idx] = (struct slot){ .gen = 1 };
    return 0;
}

int hdl_open(struct hdl_table *t, const struct hdl *h, uint64_t *fh)
{
    uint32_t idx;
    pthread_mutex_lock(&t->lock);
    int r = alloc_slot(t, &idx);
    if (!r) {
        struct slot *s = &t->slots[idx];
        s->h = *h;
        s->used = true;
        t->count++;
        *fh = ((uint64_t)s->gen << 32) | (idx + 1u);
    }
    assert(hdl_check(t));
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* The slot fh names, or NULL; caller holds the lock. */
static struct slot *find(struct hdl_table *t, uint64_t fh)
{
    uint32_t idx = (uint32_t)fh, gen = (uint32_t)(fh >> 32);
    if (idx == 0 || idx > t->nslots)
        return NULL;
    struct slot *s = &t->slots[idx - 1];
    return s->used && s->gen == gen ? s : NULL;
}

int hdl_get(struct hdl_table *t, uint64_t fh, struct hdl *out)
{
    pthread_mutex_lock(&t->lock);
    struct slot *s = find(t, fh);
    if (s)
        *out = s->h;
    pthread_mutex_unlock(&t->lock);
    return s ? 0 : -EBADF;
}

static void free_slot(struct hdl_table *t, struct slot *s)
{
    assert(s->used && t->count > 0);
    uint32_t gen = s->gen + 1 ? s->gen + 1 : 1;   /* 0 is never a generation */
    assert(gen != s->gen);                        /* 2 */
    s->used = false;
    s->gen = gen;
    s->next_free = t->free_head;
    t->free_head = (uint32_t)(s - t->slots) + 1;
    t->count--;
}

int hdl_close(struct hdl_table *t, uint64_t fh, struct hdl *out)
{
    pthread_mutex_lock(&t->lock);
    struct slot *s = find(t, fh);
    if (s) {
        *out = s->h;
        free_slot(t, s);
    }
    assert(hdl_check(t));
    pthread_mutex_unlock(&t->lock);
    return s ? 0 : -EBADF;
}

int hdl_drain(struct hdl_table *t, struct hdl *out)
{
    int found = 0;
    pthread_mutex_lock(&t->lock);
    for (uint32_t i = 0; i < t->nslots && !found; i++) {
        if (t->slots[i].used) {
            *out = t->slots[i].h;
            free_slot(t, &t->slots[i]);
            found = 1;
        }
    }
    assert(hdl_check(t));
    pthread_mutex_unlock(&t->lock);
    return found;
}

uint64_t hdl_count(struct hdl_table *t)
{
    pthread_mutex_lock(&t->lock);
    uint64_t n = t->count;
    pthread_mutex_unlock(&t->lock);
    return n;
}
