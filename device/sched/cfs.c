/*
 * device/sched/cfs.c - the fair policies: cfs (FusionFS §4.6.1 with the
 * memory key of §4.6.2), cfs-cpu (without it) and drf (dominant resource
 * fairness over core time and device memory). See sched.h for what each
 * promises; here is how.
 *
 * Two levels of heaps (heap.h): active tenants (those with waiting items)
 * by virtual time, and in each tenant its active queues by virtual time;
 * each queue keeps its waiting items in order. A pop takes the least
 * tenant, its least queue, and that queue's oldest item: O(log n).
 *
 * Virtual time. Items are charged when they finish, with the core time
 * they used. So that several cores freed at once do not all pick the
 * same tenant before any charge lands, a start pre-charges the queue's
 * recent cost per item (est_ns) and the finish corrects it: the net
 * charge is exactly the cost. An item's cost is its core time scaled by
 * the tenant's weight (cfs) or its dominant share in core-time units,
 * ns * max(1, mem * cores / budget), scaled likewise (drf).
 *
 * Start at the minimum. A tenant is live while it has items waiting or
 * running (Linux's "runnable"); min_vt follows the least virtual time of
 * the live tenants (less their running items' pre-charges, not used yet)
 * and never goes back. A tenant becoming live starts at max(its own,
 * min_vt - the wake credit), and a queue at max(its own, the least of its
 * tenant's live queues): idling saves no credit beyond the wake credit
 * (3 ms, as Linux places a waking task), and the virtual times of those
 * who stayed busy are never disturbed. Items run directly (never
 * queued) make their tenant live too, so min_vt moves with them. When the
 * last live tenant (queue) idles, the floor moves up to its virtual time,
 * as Linux's min_vruntime stays where the last task left: a newcomer after
 * an idle spell starts level with the last one to run, not behind it.
 *
 * Forgetting. An idle tenant (queue) at or below the floor holds no debt:
 * coming back, it would start at the floor (less the wake credit, which
 * any waking tenant gets) whether it kept its virtual time or started from
 * zero, within that credit, so its account may be freed (sched_int.h).
 *
 * The memory key (cfs only): while commands wait for device memory, or
 * the next command would not fit in it (sched.c's memory admission), the
 * next item comes from the active tenant with the least memory in use (a
 * second heap, by_mem), so a memory-hungry tenant cannot keep the cores
 * waiting for memory while others need little. drf admits too, but asked
 * again with memory tight it names the same tenant (progressive filling
 * waits for the least dominant share's command to fit).
 *
 * Invariants (cfs_check):
 *   1. A tenant is in by_vt (and, for cfs, by_mem) iff its queues heap is
 *      non-empty; a queue is in its tenant's heap iff it has items; a
 *      tenant (queue) with items waiting is live.
 *   2. Heap keys equal the vt (mem_use for by_mem) of their owners.
 *   3. The items in the queues add up to the scheduler's depth.
 */
#include "device/sched/sched_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#define CHECK_WALK 64u

enum cfs_mode { CFS_CPU, CFS_MEM, CFS_DRF };

struct cfs {
    enum cfs_mode mode;
    unsigned cores;
    uint64_t budget;
    struct heap by_vt, by_mem;   /* tenants with items waiting */
    struct heap live;            /* tenants with items waiting or running */
    uint64_t min_vt;
    uint64_t credit;             /* sched_env.wake_credit_ns */
    uint64_t seq;                /* tie-break: turns among equals */
};

#define TENANT_OF(n, field) \
    ((struct sched_tenant *)((char *)(n) - offsetof(struct sched_tenant, field)))
#define QUEUE_OF(n) ((struct sched_queue *)((char *)(n) - offsetof(struct sched_queue, node)))

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void *create(const struct sched_env *env, enum cfs_mode mode)
{
    struct cfs *c = calloc(1, sizeof(*c));
    if (c) {
        c->mode = mode;
        c->cores = env->cores ? env->cores : 1;
        c->budget = env->mem_budget ? env->mem_budget : 1;
        c->credit = env->wake_credit_ns;
    }
    return c;
}

static void *cfs_create(const struct sched_env *env)
{
    return create(env, CFS_MEM);
}

static void *cfs_cpu_create(const struct sched_env *env)
{
    return create(env, CFS_CPU);
}

static void *drf_create(const struct sched_env *env)
{
    return create(env, CFS_DRF);
}

static void cfs_destroy(void *p)
{
    struct cfs *c = p;
    heap_free(&c->by_vt);
    heap_free(&c->by_mem);
    heap_free(&c->live);
    free(c);
}

/* Virtual time for an item that held a core ns and mem bytes. */
static uint64_t cost(const struct cfs *c, const struct sched_tenant *t, uint64_t ns,
                     uint64_t mem)
{
    if (c->mode == CFS_DRF) {
        double f = (double)mem * c->cores / (double)c->budget;   /* memory vs one core */
        if (f > 1.0)
            ns = (uint64_t)((double)ns * f);
    }
    return sched_vt_scale(ns, t->weight);
}

/* ---- keeping the heaps' keys ---------------------------------------------- */

/* Sets x's key in h if it is there. */
static void rekey(struct heap *h, struct heap_node *x, uint64_t key)
{
    x->key = key;
    if (heap_has(x))
        heap_fix(h, x);
}

static void set_tenant_vt(struct cfs *c, struct sched_tenant *t, uint64_t vt)
{
    t->vt = vt;
    rekey(&c->by_vt, &t->by_vt, vt);
    rekey(&c->live, &t->live, vt);
}

static void set_queue_vt(struct sched_queue *q, uint64_t vt)
{
    q->vt = vt;
    rekey(&q->t->queues, &q->node, vt);
    rekey(&q->t->live_queues, &q->live, vt);
}

/* Raises *floor to the least key of live (if any); returns it. */
static uint64_t floor_of(uint64_t *floor, const struct heap *live)
{
    const struct heap_node *n = heap_min(live);
    if (n)
        *floor = max64(*floor, n->key);
    return *floor;
}

/* Raises min_vt to the least live tenant's virtual time less its running
 * items' pre-charges (time it has not used yet); returns it. A tenant
 * becoming live starts level with what the others really used: were the
 * pre-charges counted, it would start ahead of a tenant whose long item
 * has only begun, and could not preempt that item before it had used up
 * its estimate. */
static uint64_t tenant_floor(struct cfs *c)
{
    const struct heap_node *n = heap_min(&c->live);
    if (n)
        c->min_vt = max64(c->min_vt, n->key - TENANT_OF(n, live)->vt_pre);
    return c->min_vt;
}

/* Where a tenant becoming live starts at the least: the floor less the
 * wake credit (scaled by its weight), never below zero. */
static uint64_t wake_floor(struct cfs *c, const struct sched_tenant *t)
{
    uint64_t f = tenant_floor(c), cr = sched_vt_scale(c->credit, t->weight);
    return f > cr ? f - cr : 0;
}

/* Makes q and its tenant live if they are not, starting them at the
 * minimum. Returns 0 or -ENOMEM. */
static int make_live(struct cfs *c, struct sched_queue *q)
{
    struct sched_tenant *t = q->t;
    if (!heap_has(&q->live)) {
        q->vt = max64(q->vt, floor_of(&t->qmin, &t->live_queues));
        q->live = (struct heap_node){ q->vt, ++c->seq, HEAP_NONE };
        if (heap_insert(&t->live_queues, &q->live))
            return -ENOMEM;
    }
    if (!heap_has(&t->live)) {
        t->vt = max64(t->vt, wake_floor(c, t));
        t->live = (struct heap_node){ t->vt, ++c->seq, HEAP_NONE };
        if (heap_insert(&c->live, &t->live))
            return -ENOMEM;
    }
    return 0;
}

/* Drops q and its tenant from the live heaps once nothing of theirs waits
 * or runs. */
static void maybe_idle(struct cfs *c, struct sched_queue *q)
{
    struct sched_tenant *t = q->t;
    if (!q->head && !q->running && heap_has(&q->live)) {
        floor_of(&t->qmin, &t->live_queues);
        heap_remove(&t->live_queues, &q->live);
        if (!t->live_queues.n)   /* the last one idles: the floor is where it left */
            t->qmin = max64(t->qmin, q->vt);
    }
    if (!t->queues.n && !t->running && heap_has(&t->live)) {
        tenant_floor(c);
        heap_remove(&c->live, &t->live);
        if (!c->live.n)
            c->min_vt = max64(c->min_vt, t->vt);
    }
}

static void sync_mem(struct cfs *c, struct sched_tenant *t)
{
    t->by_mem.key = t->mem_use;
    if (heap_has(&t->by_mem))
        heap_fix(&c->by_mem, &t->by_mem);
}

/* ---- push and pop ----------------------------------------------------------- */

/* t gets items waiting: joins the heaps (live already). */
static int tenant_activate(struct cfs *c, struct sched_tenant *t)
{
    t->by_vt = (struct heap_node){ t->vt, ++c->seq, HEAP_NONE };
    t->by_mem = (struct heap_node){ t->mem_use, c->seq, HEAP_NONE };
    int r = heap_insert(&c->by_vt, &t->by_vt);
    if (!r && c->mode == CFS_MEM && (r = heap_insert(&c->by_mem, &t->by_mem)))
        heap_remove(&c->by_vt, &t->by_vt);
    return r;
}

static void tenant_deactivate(struct cfs *c, struct sched_tenant *t)
{
    heap_remove(&c->by_vt, &t->by_vt);
    if (heap_has(&t->by_mem))
        heap_remove(&c->by_mem, &t->by_mem);
}

static int cfs_push(void *p, struct sched_item *it)
{
    struct cfs *c = p;
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    if (!q->head) {   /* the queue gets items waiting */
        int r = make_live(c, q);
        if (!r) {
            q->node = (struct heap_node){ q->vt, ++c->seq, HEAP_NONE };
            r = heap_insert(&t->queues, &q->node);
        }
        if (!r && t->queues.n == 1 && (r = tenant_activate(c, t)))
            heap_remove(&t->queues, &q->node);
        if (r) {
            maybe_idle(c, q);
            return r;
        }
    }
    sq_push(q, it);
    return 0;
}

/* The tenant to serve: least memory in use while memory is tight (cfs),
 * else least virtual time. */
static struct sched_tenant *pick_tenant(struct cfs *c, bool mem_tight)
{
    struct heap_node *n = heap_min(&c->by_vt);
    if (!n)
        return NULL;
    tenant_floor(c);
    if (mem_tight && c->mode == CFS_MEM)
        return TENANT_OF(heap_min(&c->by_mem), by_mem);
    return TENANT_OF(n, by_vt);
}

static struct sched_item *cfs_peek(void *p, bool mem_tight)
{
    struct sched_tenant *t = pick_tenant(p, mem_tight);
    return t ? QUEUE_OF(heap_min(&t->queues))->head : NULL;
}

static struct sched_item *cfs_pop(void *p, bool mem_tight)
{
    struct cfs *c = p;
    struct sched_tenant *t = pick_tenant(c, mem_tight);
    if (!t)
        return NULL;
    struct sched_queue *q = QUEUE_OF(heap_min(&t->queues));
    floor_of(&t->qmin, &t->live_queues);
    struct sched_item *it = sq_pop(q);
    if (!q->head) {
        heap_remove(&t->queues, &q->node);
    } else {   /* to the back among its equals */
        q->node.seq = ++c->seq;
        heap_fix(&t->queues, &q->node);
    }
    if (!t->queues.n) {
        tenant_deactivate(c, t);
    } else {
        t->by_vt.seq = t->by_mem.seq = ++c->seq;
        heap_fix(&c->by_vt, &t->by_vt);
        if (heap_has(&t->by_mem))
            heap_fix(&c->by_mem, &t->by_mem);
    }
    return it;
}

/* ---- charging ------------------------------------------------------------------ */

/* Pre-charges the queue's recent cost per item (see the top). */
static void cfs_start(void *p, struct sched_item *it)
{
    struct cfs *c = p;
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    make_live(c, q);   /* run directly: never queued (-ENOMEM: min_vt lags a little) */
    it->vt_pre = cost(c, t, q->est_ns, it->mem);
    t->vt_pre += it->vt_pre;
    set_queue_vt(q, q->vt + it->vt_pre);
    set_tenant_vt(c, t, t->vt + it->vt_pre);
    sync_mem(c, t);
}

/* The real cost replaces the pre-charge: never below zero, as the
 * pre-charge was added to both before. */
static void cfs_charge(void *p, const struct sched_item *it, uint64_t ns)
{
    struct cfs *c = p;
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    uint64_t v = cost(c, t, ns, it->mem);
    t->vt_pre -= it->vt_pre;
    set_queue_vt(q, q->vt - it->vt_pre + v);
    set_tenant_vt(c, t, t->vt - it->vt_pre + v);
    q->est_ns = (3 * q->est_ns + ns + it->ran_ns) / 4;   /* its whole cost, parks too */
    sync_mem(c, t);
    maybe_idle(c, q);
}

/* ---- preemption -------------------------------------------------------------- */

/* Run's tenant's virtual time were its slice charged now (the pre-charge
 * replaced by the real cost so far). */
static uint64_t vt_with_slice(const struct cfs *c, const struct sched_item *run, uint64_t ns)
{
    const struct sched_tenant *t = run->sq->t;
    return t->vt - run->vt_pre + cost(c, t, ns, run->mem);
}

/* Preempt when another tenant with less virtual time waits: what a free
 * core would have served, had the running item's time been charged as it
 * went (Linux's CFS preempts so at its tick). */
static bool cfs_preempt(void *p, const struct sched_item *run, uint64_t slice_ns,
                        const struct sched_item *cand)
{
    const struct sched_tenant *o = cand->sq->t;
    return o != run->sq->t && o->vt < vt_with_slice(p, run, slice_ns);
}

static uint64_t cfs_key(void *p, const struct sched_item *it)
{
    return it->sq->t->vt;
}

/* The slice is charged like a finish (without the estimate's update), and
 * the pre-charge goes with it: the item pays as it goes. */
static void cfs_slice(void *p, struct sched_item *it, uint64_t ns)
{
    struct cfs *c = p;
    struct sched_queue *q = it->sq;
    struct sched_tenant *t = q->t;
    uint64_t v = cost(c, t, ns, it->mem);
    t->vt_pre -= it->vt_pre;
    set_queue_vt(q, q->vt - it->vt_pre + v);
    set_tenant_vt(c, t, t->vt - it->vt_pre + v);
    it->vt_pre = 0;
}

/* ---- recycling ------------------------------------------------------------------ */

/* An idle account at or below its floor changes no choice when forgotten,
 * but for the wake credit: a tenant between floor - credit and the floor,
 * forgotten, would come back at floor - credit, at most the credit below
 * where it stood, which a waking tenant is given anyway; its debt (any
 * virtual time above the floor) is never wiped. */
static bool cfs_forgettable(void *p, const struct sched_tenant *t, const struct sched_queue *q)
{
    struct cfs *c = p;
    if (q)
        return q->vt <= floor_of(&q->t->qmin, &q->t->live_queues);
    return t->vt <= tenant_floor(c);
}

/* ---- checking -------------------------------------------------------------------- */

/* Invariants 1-2 for tenant t (in by_vt); adds its items to *n (bounded). */
static bool tenant_ok(const struct cfs *c, const struct sched_tenant *t, uint64_t *n)
{
    if (!t->queues.n || t->by_vt.key != t->vt || !heap_check(&t->queues, CHECK_WALK) ||
        !heap_has(&t->live) || t->live.key != t->vt || !heap_check(&t->live_queues, CHECK_WALK))
        return false;
    if (c->mode == CFS_MEM && (!heap_has(&t->by_mem) || t->by_mem.key != t->mem_use))
        return false;
    for (uint32_t i = 0; i < t->queues.n && *n <= CHECK_WALK; i++) {
        const struct sched_queue *q = QUEUE_OF(t->queues.node[i]);
        if (!q->head || q->node.key != q->vt || q->t != t || !heap_has(&q->live))
            return false;
        for (const struct sched_item *it = q->head; it && *n <= CHECK_WALK; it = it->next)
            ++*n;
    }
    return true;
}

static bool cfs_check(const void *p, uint64_t depth)
{
    const struct cfs *c = p;
    if (!heap_check(&c->by_vt, CHECK_WALK) || !heap_check(&c->by_mem, CHECK_WALK) ||
        !heap_check(&c->live, CHECK_WALK))
        return false;
    if (c->mode == CFS_MEM ? c->by_mem.n != c->by_vt.n : c->by_mem.n != 0)
        return false;
    uint64_t n = 0;
    uint32_t i;
    for (i = 0; i < c->by_vt.n && n <= CHECK_WALK; i++)
        if (!tenant_ok(c, TENANT_OF(c->by_vt.node[i], by_vt), &n))
            return false;
    return n > CHECK_WALK ? depth > CHECK_WALK : n == depth;   /* 3 */
}

#define FAIR_POLICY(var, nm, mk, admit, hold)                                              \
    const struct sched_policy var = { .name = nm, .create = mk, .destroy = cfs_destroy,   \
                                      .push = cfs_push, .pop = cfs_pop, .peek = cfs_peek,     \
                                      .start = cfs_start,                                 \
                                      .charge = cfs_charge, .check = cfs_check,           \
                                      .forgettable = cfs_forgettable, .mem_admit = admit, \
                                      .mem_hold = hold, .preempt = cfs_preempt,           \
                                      .key = cfs_key, .slice = cfs_slice }

/* cfs: the memory key admits too. cfs-cpu: blind to memory, its choice
 * starts and a core stalls while it waits for memory. drf: the least
 * dominant share's command waits its turn to fit. */
FAIR_POLICY(sched_cfs, "cfs", cfs_create, true, false);
FAIR_POLICY(sched_cfs_cpu, "cfs-cpu", cfs_cpu_create, false, true);
FAIR_POLICY(sched_drf, "drf", drf_create, true, false);
