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
 * Recycling. An account whose owner is idle (nothing queued or running,
 * and for a tenant no queue pairs open, no queue accounts and the default
 * weight) joins an idle list, oldest first; it leaves the list when its
 * owner is busy again. While there are more than SCHED_KEEP_TENANTS
 * tenants (SCHED_KEEP_QUEUES queues), creating an account frees up to
 * SCHED_RECYCLE_STEP of the oldest idle ones the policy says hold nothing
 * it needs (sched_policy.forgettable: under cfs and drf a virtual time at
 * or below the minimum, so no debt is wiped). A storm of short-lived pids
 * or queue pairs thus costs a bounded table, O(1) per account; idle
 * accounts stay shown (cisc status) until then.
 *
 * Invariants (checked by sched_acct_check):
 *   1. A tenant's queued count is the sum of its queues' (a policy that
 *      keeps items in the queues' lists checks their lengths itself).
 *   2. mem_use of a tenant is the sum of the mem of its running items and
 *      never exceeds mem_peak.
 *   3. queues_open <= max_queues (when a cap is set).
 *   4. An account is on its idle list only while its owner is idle (see
 *      above); a freed account has no items, and a tenant is freed only
 *      once it has no queue accounts.
 */
#ifndef CISC_DEVICE_SCHED_INT_H
#define CISC_DEVICE_SCHED_INT_H

#include "device/sched/heap.h"
#include "device/sched/hist.h"
#include "device/sched/sched.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCHED_KEEP_TENANTS 64u    /* idle accounts kept for status */
#define SCHED_KEEP_QUEUES 128u
#define SCHED_RECYCLE_STEP 4u     /* idle accounts examined per new one */

/* A link of an idle list (circular, with a head); next == NULL: off it. */
struct acct_link {
    struct acct_link *prev, *next;
};

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
    uint64_t preempted;           /* its items parked for another tenant's */
    uint64_t backlog_ns;          /* busy core time of the device (everyone's) while
                                     it had items waiting or running: closed spells */
    uint64_t backlog_mark;        /* sched_accts.busy_ns when its spell began */
    struct hist lat;              /* submit-to-finish latency of its items */
    struct acct_link idle;        /* on the accounts' idle tenants while idle */
    /* the policy's */
    uint64_t vt;                  /* virtual time, weighted ns */
    uint64_t vt_pre;              /* the part of vt that is its running items'
                                     pre-charges (not yet used) */
    struct heap_node by_vt, by_mem;   /* while it has items waiting */
    struct heap_node live;        /* while it has items waiting or running */
    struct heap queues;           /* its queues with items waiting, by virtual time */
    struct heap live_queues;      /* its queues with items waiting or running */
    uint64_t qmin;                /* least virtual time of its live queues (monotonic) */
};

struct sched_queue {
    struct sched_tenant *t;
    uint32_t id;
    uint64_t queued, running, done, mem_use, mem_peak, core_ns;
    struct sched_item *head, **tailp;   /* FIFO of its waiting items */
    struct hist lat;              /* submit-to-finish latency of its items */
    struct acct_link idle;        /* on the accounts' idle queues while idle */
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
    uint64_t busy_ns;             /* busy core slots integrated over time, up to busy_at */
    uint64_t busy_at;             /* CLOCK_MONOTONIC ns */
    unsigned busy;                /* core slots in use now */
    uint64_t starts;              /* items started, queued or direct */
    double mem_bns;
    unsigned cores;
    uint64_t mem_budget;
    struct acct_link idle_tenants, idle_queues;   /* oldest idle first */
    uint64_t freed_tenants, freed_queues;         /* recycled so far */
    const struct sched_policy *pol;   /* judges what may be freed (NULL: all) */
    void *pq;                         /* its queue */
};

/* Sets up empty accounts for `cores` cores and a memory budget. */
void sched_acct_init(struct sched_accts *a, unsigned cores, uint64_t mem_budget);

/* The policy whose forgettable() decides which idle accounts may be
 * freed (without one, any idle account may). */
void sched_acct_bind(struct sched_accts *a, const struct sched_policy *pol, void *pq);

/* Frees every account. */
void sched_acct_free(struct sched_accts *a);

/* The tenant's account, created (weight default) if new; NULL on -ENOMEM.
 * The caller makes it busy (an open queue, a weight) or calls
 * sched_acct_idle_check, or it stays off the idle list. */
struct sched_tenant *sched_acct_tenant(struct sched_accts *a, uint32_t tenant);

/* The tenant's account if it has one, else NULL. */
struct sched_tenant *sched_acct_find(const struct sched_accts *a, uint32_t tenant);

/* Puts t on the idle list if it is idle (see the top), takes it off if
 * not. */
void sched_acct_idle_check(struct sched_accts *a, struct sched_tenant *t);

/* Sets it->sq to the account of (it->tenant, it->queue), creating it.
 * Returns 0 or -ENOMEM. */
int sched_acct_resolve(struct sched_accts *a, struct sched_item *it);

/* Bookkeeping when an item is queued, starts running, and finishes after
 * `ns` on a core, `lat_ns` after it was submitted. `now` is the clock
 * (tests pass a fake one). */
void sched_acct_queued(struct sched_accts *a, struct sched_item *it);
void sched_acct_start(struct sched_accts *a, struct sched_item *it, bool was_queued,
                      uint64_t now);
void sched_acct_finish(struct sched_accts *a, const struct sched_item *it, uint64_t ns,
                       uint64_t lat_ns);

/* An item leaves its core before it finishes (parked or blocked) after
 * ns on it: that time is charged now (the finish charges the rest). */
void sched_acct_slice(struct sched_accts *a, const struct sched_item *it, uint64_t ns);

/* delta core slots were taken (+) or given back (-) at `now`: the busy
 * time every tenant's backlog is measured in (sched_acct_backlog). */
void sched_acct_busy(struct sched_accts *a, int delta, uint64_t now);

/* Device-core time everyone used while t had items waiting or running,
 * up to now (CLOCK_MONOTONIC): its share of the device while it wanted
 * one is t->core_ns over this, whatever its client did in between. */
uint64_t sched_acct_backlog(const struct sched_accts *a, const struct sched_tenant *t,
                            uint64_t now);

/* An item of it's tenant was parked for another tenant's (counted). */
void sched_acct_preempted(struct sched_accts *a, const struct sched_item *it);

/* After the policy was charged for an item of q: q joins the idle list if
 * nothing of it is queued or running any more. */
void sched_acct_settled(struct sched_accts *a, struct sched_queue *q);

/* Invariants 1-4 over at most `walk` accounts. */
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
