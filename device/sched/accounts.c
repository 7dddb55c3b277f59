/* device/sched/accounts.c - the accounts of tenants and queues (see
 * sched_int.h): two open-addressing hash maps, the bookkeeping every
 * policy shares, and the recycling of idle accounts. All calls are made
 * under the scheduler lock. */
#include "device/sched/sched_int.h"

#include "common/clock.h"

#include <errno.h>
#include <stddef.h>
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

/* True if slot h lies cyclically in (i, j]. */
static bool between(size_t h, size_t i, size_t j)
{
    return i < j ? h > i && h <= j : h > i || h <= j;
}

/* Removes key (present): backward-shift deletion, so no tombstones and
 * every other key stays reachable from its home slot. */
static void map_del(struct acct_map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = slot_of(key, m->cap);
    while (m->key[i] != key || !m->val[i])
        i = (i + 1) & mask;
    m->n--;
    for (size_t j = i;;) {
        m->val[i] = NULL;
        do {
            j = (j + 1) & mask;
            if (!m->val[j])
                return;
        } while (between(slot_of(m->key[j], m->cap), i, j));
        m->key[i] = m->key[j];   /* its home is at or before i: it moves up */
        m->val[i] = m->val[j];
        i = j;
    }
}

/* ---- idle lists ------------------------------------------------------------ */

static void link_init(struct acct_link *head)
{
    head->prev = head->next = head;
}

static void link_add_tail(struct acct_link *head, struct acct_link *x)
{
    x->prev = head->prev;
    x->next = head;
    head->prev->next = x;
    head->prev = x;
}

static void link_del(struct acct_link *x)
{
    if (!x->next)
        return;
    x->prev->next = x->next;
    x->next->prev = x->prev;
    x->prev = x->next = NULL;
}

#define OWNER(p, type, field) ((type *)((char *)(p) - offsetof(type, field)))

/* ---- accounts ------------------------------------------------------------- */

void sched_acct_init(struct sched_accts *a, unsigned cores, uint64_t mem_budget)
{
    *a = (struct sched_accts){ .cores = cores ? cores : 1,
                               .mem_budget = mem_budget ? mem_budget : 1 };
    link_init(&a->idle_tenants);
    link_init(&a->idle_queues);
}

void sched_acct_bind(struct sched_accts *a, const struct sched_policy *pol, void *pq)
{
    a->pol = pol;
    a->pq = pq;
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
    link_init(&a->idle_tenants);
    link_init(&a->idle_queues);
}

/* ---- recycling (sched_int.h) --------------------------------------------------- */

static bool forgettable(const struct sched_accts *a, const struct sched_tenant *t,
                        const struct sched_queue *q)
{
    return !a->pol || !a->pol->forgettable || a->pol->forgettable(a->pq, t, q);
}

static bool tenant_idle(const struct sched_tenant *t)
{
    return !t->queues_open && !t->nqueues && !t->queued && !t->running &&
           t->weight == SCHED_WEIGHT_DEFAULT;
}

void sched_acct_idle_check(struct sched_accts *a, struct sched_tenant *t)
{
    if (!tenant_idle(t))
        link_del(&t->idle);
    else if (!t->idle.next)
        link_add_tail(&a->idle_tenants, &t->idle);
}

static void tenant_free(struct sched_accts *a, struct sched_tenant *t)
{
    link_del(&t->idle);
    map_del(&a->tenants, t->id);
    heap_free(&t->queues);
    heap_free(&t->live_queues);
    free(t);
    a->freed_tenants++;
}

static void queue_free(struct sched_accts *a, struct sched_queue *q)
{
    struct sched_tenant *t = q->t;
    link_del(&q->idle);
    map_del(&a->queues, (uint64_t)t->id << 32 | q->id);
    free(q);
    a->freed_queues++;
    t->nqueues--;
    sched_acct_idle_check(a, t);
}

/* Frees up to SCHED_RECYCLE_STEP of the oldest idle accounts on list
 * while the map holds more than keep; one that may not be freed yet goes
 * to the back. */
static void recycle(struct sched_accts *a, struct acct_link *list, const struct acct_map *m,
                    size_t keep, bool queues)
{
    for (unsigned k = 0; k < SCHED_RECYCLE_STEP && m->n > keep && list->next != list; k++) {
        struct acct_link *x = list->next;
        struct sched_queue *q = queues ? OWNER(x, struct sched_queue, idle) : NULL;
        struct sched_tenant *t = queues ? q->t : OWNER(x, struct sched_tenant, idle);
        if (!forgettable(a, t, q)) {
            link_del(x);
            link_add_tail(list, x);
        } else if (q) {
            queue_free(a, q);
        } else {
            tenant_free(a, t);
        }
    }
}

struct sched_tenant *sched_acct_find(const struct sched_accts *a, uint32_t tenant)
{
    return map_get(&a->tenants, tenant);
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
    recycle(a, &a->idle_tenants, &a->tenants, SCHED_KEEP_TENANTS, false);
    return t;
}

/* A new queue account for it (its tenant's created if need be). */
static struct sched_queue *queue_new(struct sched_accts *a, const struct sched_item *it)
{
    struct sched_tenant *t = sched_acct_tenant(a, it->tenant);
    struct sched_queue *q = t ? calloc(1, sizeof(*q)) : NULL;
    if (!q)
        return NULL;
    q->t = t;
    q->id = it->queue;
    q->tailp = &q->head;
    heap_node_init(&q->node);
    heap_node_init(&q->live);
    if (map_put(&a->queues, (uint64_t)it->tenant << 32 | it->queue, q)) {
        free(q);
        sched_acct_idle_check(a, t);
        return NULL;
    }
    t->nqueues++;
    sched_acct_idle_check(a, t);
    return q;
}

int sched_acct_resolve(struct sched_accts *a, struct sched_item *it)
{
    uint64_t key = (uint64_t)it->tenant << 32 | it->queue;
    struct sched_queue *q = map_get(&a->queues, key);
    if (!q) {
        if (!(q = queue_new(a, it)))
            return -ENOMEM;
        recycle(a, &a->idle_queues, &a->queues, SCHED_KEEP_QUEUES, true);
    }
    link_del(&q->idle);   /* busy again (an item on its way) */
    it->sq = q;
    return 0;
}

/* The busy integral at now, without moving it (now before busy_at, as a
 * test's fake clock may be: busy_at). */
static uint64_t busy_until(const struct sched_accts *a, uint64_t now)
{
    return a->busy_ns + (now > a->busy_at ? (now - a->busy_at) * a->busy : 0);
}

void sched_acct_busy(struct sched_accts *a, int delta, uint64_t now)
{
    a->busy_ns = busy_until(a, now);
    a->busy_at = now > a->busy_at ? now : a->busy_at;
    a->busy += (unsigned)delta;
}

uint64_t sched_acct_backlog(const struct sched_accts *a, const struct sched_tenant *t,
                            uint64_t now)
{
    bool live = t->queued || t->running;
    return t->backlog_ns + (live ? busy_until(a, now) - t->backlog_mark : 0);
}

/* t is about to have its first item waiting or running at `now`: a
 * spell of its backlog begins. */
static void backlog_begin(struct sched_accts *a, struct sched_tenant *t, uint64_t now)
{
    if (!t->queued && !t->running)
        t->backlog_mark = busy_until(a, now);
}

/* t's last item finished at `now`: the spell ends. */
static void backlog_end(struct sched_accts *a, struct sched_tenant *t, uint64_t now)
{
    if (!t->queued && !t->running)
        t->backlog_ns += busy_until(a, now) - t->backlog_mark;
}

void sched_acct_queued(struct sched_accts *a, struct sched_item *it)
{
    it->starts_at_push = a->starts;
    backlog_begin(a, it->sq->t, now_ns());
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
    } else {
        backlog_begin(a, t, now);
    }
    a->starts++;
    t->running++;
    q->running++;
    q->mem_use += it->mem;
    t->mem_use += it->mem;
    if (t->mem_use > t->mem_peak)
        t->mem_peak = t->mem_use;
    if (q->mem_use > q->mem_peak)
        q->mem_peak = q->mem_use;
}

void sched_acct_slice(struct sched_accts *a, const struct sched_item *it, uint64_t ns)
{
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    q->core_ns += ns;
    t->core_ns += ns;
    a->core_ns += ns;
    double bns = (double)it->mem * (double)ns;
    t->mem_bns += bns;
    a->mem_bns += bns;
}

void sched_acct_preempted(struct sched_accts *a, const struct sched_item *it)
{
    it->sq->t->preempted++;
}

void sched_acct_finish(struct sched_accts *a, const struct sched_item *it, uint64_t ns,
                       uint64_t lat_ns)
{
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    t->running--;
    q->running--;
    t->done++;
    q->done++;
    hist_add(&t->lat, lat_ns);
    hist_add(&q->lat, lat_ns);
    q->mem_use -= it->mem;
    t->mem_use -= it->mem;
    sched_acct_slice(a, it, ns);
    backlog_end(a, t, it->t_submit_ns + lat_ns);   /* the finish: no clock read */
}

void sched_acct_settled(struct sched_accts *a, struct sched_queue *q)
{
    if (!q->queued && !q->running && !q->idle.next)
        link_add_tail(&a->idle_queues, &q->idle);
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
        if (t->idle.next && !tenant_idle(t))                    /* 4 */
            return false;
    }
    seen = 0;
    for (const struct acct_link *x = a->idle_queues.next; x != &a->idle_queues && seen < walk;
         x = x->next, seen++) {
        const struct sched_queue *q = OWNER(x, const struct sched_queue, idle);
        if (q->queued || q->running || q->head)                  /* 4 */
            return false;
    }
    return true;
}
