/*
 * device/sched/sched_int.h - private to device/sched/: the accounts of
 * tenants and queues that every policy orders, and the policies' list.
 *
 * The framework (sched.c) resolves each item's queue account when it is
 * submitted (sched_acct_resolve) and keeps the policy-independent numbers
 * (core time, memory in use and its peak, waiting, throttled time); a
 * policy keeps its own fields (virtual time, heap positions) in the same
 * structs, written only under the scheduler lock like everything here.
 *
 * Accounts live until the scheduler is destroyed: a tenant's virtual
 * time must outlast its idle spells, or going idle would wipe a debt.
 *
 * Invariants (checked by sched_acct_check):
 *   1. A tenant's queued count is the sum of its queues' (a policy that
 *      keeps items in the queues' lists checks their lengths itself).
 *   2. mem_use of a tenant is the sum of the mem of its running items and
 *      never exceeds mem_peak.
 *   3. queues_open <= max_queues (when a cap is set).
 */
#ifndef CISC_DEVICE_SCHED_INT_H
#define CISC_DEVICE_SCHED_INT_H

#include "device/sched/heap.h"
#include "device/sched/sched.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sched_tenant {
    uint32_t id;
    uint32_t weight;              /* SCHED_WEIGHT_MIN..MAX */
    uint32_t queues_open;         /* queue pairs open now (the cap counts these) */
    uint32_t nqueues;             /* queue accounts it has */
    uint64_t queued, running, done;
    uint64_t core_ns;             /* device-core time charged */
    double mem_bns;               /* memory held x time, byte-ns (DRF's share) */
    uint64_t mem_use, mem_peak;   /* reservations of its running items */
    uint64_t throttled_ns;        /* time its items waited while queued */
    uint64_t overtaken;           /* starts of other items while one of its waited */
    uint64_t terminated;          /* ops stopped for their time limit */
    /* the policy's */
    uint64_t vt;                  /* virtual time, weighted ns */
    struct heap_node by_vt, by_mem;   /* while it has items waiting */
    struct heap_node live;        /* while it has items waiting or running */
    struct heap queues;           /* its queues with items waiting, by virtual time */
    struct heap live_queues;      /* its queues with items waiting or running */
    uint64_t qmin;                /* least virtual time of its live queues (monotonic) */
};

struct sched_queue {
    struct sched_tenant *t;
    uint32_t id;
    uint64_t queued, running, mem_use, core_ns;
    struct sched_item *head, **tailp;   /* FIFO of its waiting items */
    /* the policy's */
    uint64_t vt;
    uint64_t est_ns;              /* recent cost per item (pre-charged at start) */
    struct heap_node node, live;  /* as the tenant's two */
    struct sched_queue *rr_next;  /* ring of queues with items (rr) */
};

struct acct_map {
    uint64_t *key;
    void **val;                   /* NULL: empty slot */
    size_t cap, n;
};

struct sched_accts {
    struct acct_map tenants, queues;
    uint32_t max_queues;          /* per tenant; 0 = no cap */
    uint64_t core_ns;             /* all tenants' */
    uint64_t starts;              /* items started, queued or direct */
    double mem_bns;
    unsigned cores;
    uint64_t mem_budget;
};

/* Sets up empty accounts for `cores` cores and a memory budget. */
void sched_acct_init(struct sched_accts *a, unsigned cores, uint64_t mem_budget);

/* Frees every account. */
void sched_acct_free(struct sched_accts *a);

/* The tenant's account, created (weight default) if new; NULL on -ENOMEM. */
struct sched_tenant *sched_acct_tenant(struct sched_accts *a, uint32_t tenant);

/* Sets it->sq to the account of (it->tenant, it->queue), creating it.
 * Returns 0 or -ENOMEM. */
int sched_acct_resolve(struct sched_accts *a, struct sched_item *it);

/* Bookkeeping when an item is queued, starts running, and finishes after
 * `ns` on a core. `now` is the clock (tests pass a fake one). */
void sched_acct_queued(struct sched_accts *a, struct sched_item *it);
void sched_acct_start(struct sched_accts *a, struct sched_item *it, bool was_queued,
                      uint64_t now);
void sched_acct_finish(struct sched_accts *a, const struct sched_item *it, uint64_t ns);

/* Invariants 1-3 over at most `walk` accounts. */
bool sched_acct_check(const struct sched_accts *a, size_t walk);

/* The item FIFO of one queue account. */
static inline void sq_push(struct sched_queue *q, struct sched_item *it)
{
    it->next = NULL;
    if (!q->tailp)
        q->tailp = &q->head;
    *q->tailp = it;
    q->tailp = &it->next;
}

static inline struct sched_item *sq_pop(struct sched_queue *q)
{
    struct sched_item *it = q->head;
    if (it) {
        q->head = it->next;
        if (!q->head)
            q->tailp = &q->head;
    }
    return it;
}

/* Virtual time for ns of work at weight w: ns scaled to the default weight. */
static inline uint64_t sched_vt_scale(uint64_t ns, uint32_t w)
{
    return ns * SCHED_WEIGHT_DEFAULT / (w ? w : SCHED_WEIGHT_DEFAULT);
}

extern const struct sched_policy sched_rr, sched_cfs, sched_cfs_cpu, sched_drf;

#ifdef __cplusplus
}
#endif

#endif
