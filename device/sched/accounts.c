/* device/sched/accounts.c - the accounts of tenants and queues (see
 * sched_int.h): two open-addressing hash maps and the bookkeeping every
 * policy shares. All calls are made under the scheduler lock. */
#include "device/sched/sched_int.h"

#include <errno.h>
#include <stdlib.h>

/* ---- map: uint64 key -> pointer, linear probing, never shrinks ---------- */

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;   /* a 64-bit mixer: ids are dense */
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static void *map_get(const struct acct_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->val[i])
            return NULL;
        if (m->key[i] == key)
            return m->val[i];
    }
}

static void map_place(struct acct_map *m, uint64_t key, void *val)
{
    size_t i = slot_of(key, m->cap);
    while (m->val[i])
        i = (i + 1) & (m->cap - 1);
    m->key[i] = key;
    m->val[i] = val;
    m->n++;
}

/* Doubles the map (load stays under 1/2). Returns 0 or -ENOMEM. */
static int map_grow(struct acct_map *m)
{
    size_t cap = m->cap ? 2 * m->cap : 16;
    uint64_t *key = calloc(cap, sizeof(*key));
    void **val = calloc(cap, sizeof(*val));
    if (!key || !val) {
        free(key);
        free(val);
        return -ENOMEM;
    }
    struct acct_map old = *m;
    *m = (struct acct_map){ key, val, cap, 0 };
    for (size_t i = 0; i < old.cap; i++)
        if (old.val[i])
            map_place(m, old.key[i], old.val[i]);
    free(old.key);
    free(old.val);
    return 0;
}

static int map_put(struct acct_map *m, uint64_t key, void *val)
{
    if (2 * (m->n + 1) > m->cap && map_grow(m))
        return -ENOMEM;
    map_place(m, key, val);
    return 0;
}

/* ---- accounts ------------------------------------------------------------- */

void sched_acct_init(struct sched_accts *a, unsigned cores, uint64_t mem_budget)
{
    *a = (struct sched_accts){ .cores = cores ? cores : 1,
                               .mem_budget = mem_budget ? mem_budget : 1 };
}

void sched_acct_free(struct sched_accts *a)
{
    for (size_t i = 0; i < a->tenants.cap; i++) {
        struct sched_tenant *t = a->tenants.val[i];
        if (t) {
            heap_free(&t->queues);
            heap_free(&t->live_queues);
        }
        free(t);
    }
    for (size_t i = 0; i < a->queues.cap; i++)
        free(a->queues.val[i]);
    free(a->tenants.key);
    free(a->tenants.val);
    free(a->queues.key);
    free(a->queues.val);
    a->tenants = a->queues = (struct acct_map){ 0 };
}

struct sched_tenant *sched_acct_tenant(struct sched_accts *a, uint32_t tenant)
{
    struct sched_tenant *t = map_get(&a->tenants, tenant);
    if (t)
        return t;
    t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->id = tenant;
    t->weight = SCHED_WEIGHT_DEFAULT;
    heap_node_init(&t->by_vt);
    heap_node_init(&t->by_mem);
    heap_node_init(&t->live);
    if (map_put(&a->tenants, tenant, t)) {
        free(t);
        return NULL;
    }
    return t;
}

int sched_acct_resolve(struct sched_accts *a, struct sched_item *it)
{
    uint64_t key = (uint64_t)it->tenant << 32 | it->queue;
    struct sched_queue *q = map_get(&a->queues, key);
    if (!q) {
        struct sched_tenant *t = sched_acct_tenant(a, it->tenant);
        if (!t || !(q = calloc(1, sizeof(*q))))
            return -ENOMEM;
        q->t = t;
        q->id = it->queue;
        q->tailp = &q->head;
        heap_node_init(&q->node);
        heap_node_init(&q->live);
        if (map_put(&a->queues, key, q)) {
            free(q);
            return -ENOMEM;
        }
        t->nqueues++;
    }
    it->sq = q;
    return 0;
}

void sched_acct_queued(struct sched_accts *a, struct sched_item *it)
{
    it->starts_at_push = a->starts;
    it->sq->queued++;
    it->sq->t->queued++;
}

void sched_acct_start(struct sched_accts *a, struct sched_item *it, bool was_queued,
                      uint64_t now)
{
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    if (was_queued) {
        q->queued--;
        t->queued--;
        t->throttled_ns += now > it->t_submit_ns ? now - it->t_submit_ns : 0;
        t->overtaken += a->starts - it->starts_at_push;   /* counts its own too */
    }
    a->starts++;
    t->running++;
    q->running++;
    q->mem_use += it->mem;
    t->mem_use += it->mem;
    if (t->mem_use > t->mem_peak)
        t->mem_peak = t->mem_use;
}

void sched_acct_finish(struct sched_accts *a, const struct sched_item *it, uint64_t ns)
{
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    t->running--;
    q->running--;
    t->done++;
    q->mem_use -= it->mem;
    t->mem_use -= it->mem;
    q->core_ns += ns;
    t->core_ns += ns;
    a->core_ns += ns;
    double bns = (double)it->mem * (double)ns;
    t->mem_bns += bns;
    a->mem_bns += bns;
}

bool sched_acct_check(const struct sched_accts *a, size_t walk)
{
    if (a->tenants.n * 2 > a->tenants.cap + 1 || a->queues.n * 2 > a->queues.cap + 1)
        return false;
    size_t seen = 0;
    for (size_t i = 0; i < a->tenants.cap && seen < walk; i++) {
        const struct sched_tenant *t = a->tenants.val[i];
        if (!t)
            continue;
        seen++;
        if (t->mem_use > t->mem_peak)                           /* 2 */
            return false;
        if (a->max_queues && t->queues_open > a->max_queues)   /* 3 */
            return false;
    }
    return true;
}
