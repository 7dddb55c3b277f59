/* device/engine/fused/mem.c - device memory of fused ops: the budget (reserve,
 * release) and the step buffers, with large idle buffers kept for the
 * next op instead of being returned to the system.
 *
 * A stream of fused ops (cisc run: READ 8 MiB -> BPF -> ...) would
 * otherwise map, fault in and unmap every buffer once per op: the page
 * faults cost more than the program. Spares fix that:
 *
 * Invariants (all under e->mem_mu):
 *   1. mem_used counts the reservations of running ops plus the bytes of
 *      the spares, so idle buffers stay inside the device memory budget.
 *   2. A spare is reused only for a request of at least 4/5 of its size
 *      (an op may so hold up to 25% more than it reserved, like allocator
 *      slack); only buffers of at least FOP_SPARE_MIN bytes are kept,
 *      at most ENG_SPARES of them and FOP_SPARE_SHARE of the budget.
 *   3. A reservation that does not fit drops spares before it waits, so
 *      spares never make an op wait.
 *   5. While a reservation waits, the scheduler knows (sched_mem_wait):
 *      memory is then the bottleneck, and the cfs policy serves the
 *      tenants that hold the least memory first (sched.h).
 *   4. Spare contents are stale bytes of an earlier op: every consumer
 *      reads only the bytes a step produced (its out_len), as with
 *      malloc'd memory, never the rest.
 */
#include "device/engine/fused/fused_int.h"

#include <stdlib.h>

#define FOP_SPARE_MIN (1ull << 20)
#define FOP_SPARE_SHARE 4   /* spares hold at most budget / 4 */

static uint64_t spare_bytes(const struct engine *e)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < e->nspare; i++)
        n += e->spare[i].size;
    return n;
}

/* Removes spare i (under mem_mu); returns its buffer. */
static void *spare_take(struct engine *e, unsigned i)
{
    void *p = e->spare[i].p;
    e->mem_used -= e->spare[i].size;
    e->spare[i] = e->spare[--e->nspare];
    return p;
}

void fop_mem_reserve(struct engine *e, uint64_t n)
{
    bool waited = false;
    pthread_mutex_lock(&e->mem_mu);
    while (e->mem_used + n > e->mem_budget && e->mem_used > 0) {
        if (e->nspare) {
            free(spare_take(e, e->nspare - 1));   /* invariant 3 */
            continue;
        }
        if (!waited)   /* lock order: mem_mu, then the scheduler's (a leaf) */
            sched_mem_wait(e->sched, +1);   /* invariant 5 */
        waited = true;
        pthread_cond_wait(&e->mem_cv, &e->mem_mu);
    }
    e->mem_used += n;
    pthread_mutex_unlock(&e->mem_mu);
    if (waited)
        sched_mem_wait(e->sched, -1);
}

void fop_mem_release(struct engine *e, uint64_t n)
{
    pthread_mutex_lock(&e->mem_mu);
    e->mem_used -= n;
    pthread_cond_broadcast(&e->mem_cv);
    pthread_mutex_unlock(&e->mem_mu);
}

uint8_t *fop_buf_get(struct engine *e, uint64_t cap, uint64_t *size)
{
    uint64_t want = cap ? cap : 1;
    *size = want;
    if (want < FOP_SPARE_MIN)
        return malloc(want);
    void *p = NULL;
    pthread_mutex_lock(&e->mem_mu);
    unsigned best = e->nspare;
    for (unsigned i = 0; i < e->nspare; i++) {
        uint64_t s = e->spare[i].size;
        if (s >= want && s - want <= s / 5 && (best == e->nspare || s < e->spare[best].size))
            best = i;
    }
    if (best < e->nspare) {
        *size = e->spare[best].size;
        p = spare_take(e, best);
    }
    pthread_mutex_unlock(&e->mem_mu);
    return p ? p : malloc(want);
}

void fop_buf_put(struct engine *e, uint8_t *p, uint64_t size)
{
    if (!p)
        return;
    bool kept = false;
    if (size >= FOP_SPARE_MIN) {
        pthread_mutex_lock(&e->mem_mu);
        if (e->nspare < ENG_SPARES && e->mem_used + size <= e->mem_budget &&
            spare_bytes(e) + size <= e->mem_budget / FOP_SPARE_SHARE) {
            e->spare[e->nspare++] = (struct eng_spare){ p, size };
            e->mem_used += size;
            kept = true;
        }
        pthread_mutex_unlock(&e->mem_mu);
    }
    if (!kept)
        free(p);
}

void eng_spares_drain(struct engine *e)
{
    pthread_mutex_lock(&e->mem_mu);
    while (e->nspare)
        free(spare_take(e, e->nspare - 1));
    pthread_mutex_unlock(&e->mem_mu);
}
