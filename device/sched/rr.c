/* device/sched/rr.c - the round-robin policy (FusionFS's RR baseline):
 * queues with waiting items form a ring; each pop takes one item from
 * the queue at the ring's head and moves on to the next queue. O(1). */
#include "device/sched/sched_int.h"

#include <stdlib.h>

struct rr {
    struct sched_queue *tail;   /* tail->rr_next is served next; NULL: ring empty */
};

static void *rr_create(const struct sched_env *env)
{
    (void)env;
    return calloc(1, sizeof(struct rr));
}

static void rr_destroy(void *q)
{
    free(q);
}

/* A queue with no items joins the ring behind everyone waiting. */
static int rr_push(void *p, struct sched_item *it)
{
    struct rr *r = p;
    struct sched_queue *q = it->sq;
    bool idle = !q->head;
    sq_push(q, it);
    if (idle) {
        q->rr_next = r->tail ? r->tail->rr_next : q;
        if (r->tail)
            r->tail->rr_next = q;
        r->tail = q;
    }
    return 0;
}

static struct sched_item *rr_pop(void *p, bool mem_tight)
{
    struct rr *r = p;
    (void)mem_tight;
    if (!r->tail)
        return NULL;
    struct sched_queue *q = r->tail->rr_next;
    struct sched_item *it = sq_pop(q);
    if (q->head)
        r->tail = q;   /* it goes to the back of the ring */
    else if (q == r->tail)
        r->tail = NULL;
    else
        r->tail->rr_next = q->rr_next;
    return it;
}

static struct sched_item *rr_peek(void *p, bool mem_tight)
{
    struct rr *r = p;
    return r->tail ? r->tail->rr_next->head : NULL;
}

static void rr_charge(void *q, const struct sched_item *it, uint64_t ns)
{
    (void)q, (void)it, (void)ns;
}

/* The ring is closed, every queue on it has items, and they add up to
 * depth (counted up to a bound). */
static bool rr_check(const void *p, uint64_t depth)
{
    const struct rr *r = p;
    const uint64_t walk = 64;
    uint64_t n = 0;
    const struct sched_queue *q = r->tail;
    if (!q)
        return depth == 0;
    do {
        q = q->rr_next;
        if (!q || !q->head)
            return false;
        for (const struct sched_item *it = q->head; it && n <= walk; it = it->next)
            n++;
    } while (q != r->tail && n <= walk);
    return depth > walk ? n > walk || q != r->tail : n == depth;
}

const struct sched_policy sched_rr = {
    .name = "rr",
    .create = rr_create,
    .destroy = rr_destroy,
    .push = rr_push,
    .pop = rr_pop,
    .peek = rr_peek,
    .charge = rr_charge,
    .check = rr_check,
};
