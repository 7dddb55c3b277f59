/* device/engine/fused/mem.c - device memory of fused ops: the budget (reserve,
 * release) and the step buffers, with large idle buffers kept for the
 * next op instead of being returned to the system.
 *
 * A stream of fused ops (cisc run: READ 8 MiB -> BPF -> ...) would
 * otherwise map, fault in and unmap every buffer once per op: the page
 * faults cost more than the program. Spares fix that:
 *
 * Invariants (the spares under e->mem_mu; mem_used changes atomically,
 * with a compare-and-swap where it grows, so a reservation that fits
 * takes no lock):
 *   1. mem_used counts the reservations of running ops plus the bytes of
 *      the spares, so idle buffers stay inside the device memory budget.
 *      An op's reservation counts until it leaves its core (fop_mem_done,
 *      after the core-speed model's sleep, model.h), as the scheduler
 *      counts it: on the slow core the model stands for, the op holds its
 *      buffers for its whole time there, not only while the host runs it.
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
 *
 * Small buffers (up to SMALL_MAX bytes: the 4 KiB blocks and checksums of
 * most ops) come from a cache per thread instead: sizes rounded up to a
 * power of two from SMALL_MIN, at most SMALL_KEEP idle buffers per size,
 * no lock. They are not counted in mem_used (like malloc slack: at most
 * SMALL_KEEP * 2 * SMALL_MAX idle bytes per thread that runs ops), and a
 * thread's cache is freed when it exits.
 */
#include "device/engine/fused/fused_int.h"

#include <pthread.h>
#include <stdlib.h>

#define FOP_SPARE_MIN (1ull << 20)
#define FOP_SPARE_SHARE 4   /* spares hold at most budget / 4 */

#define SMALL_MIN_SHIFT 12u                  /* 4 KiB */
#define SMALL_MAX_SHIFT 16u                  /* 64 KiB */
#define SMALL_MAX (1ull << SMALL_MAX_SHIFT)
#define SMALL_CLASSES (SMALL_MAX_SHIFT - SMALL_MIN_SHIFT + 1)
#define SMALL_KEEP 4u

struct small_cache {
    unsigned n[SMALL_CLASSES];
    void *p[SMALL_CLASSES][SMALL_KEEP];
};

static pthread_key_t small_key;
static pthread_once_t small_once = PTHREAD_ONCE_INIT;

static void small_cache_free(void *arg)
{
    struct small_cache *c = arg;
    for (unsigned k = 0; k < SMALL_CLASSES; k++)
        while (c->n[k])
            free(c->p[k][--c->n[k]]);
    free(c);
}

static void make_small_key(void)
{
    pthread_key_create(&small_key, small_cache_free);
}

/* The calling thread's cache (the key only frees it at thread exit), or
 * NULL (out of memory: plain malloc). */
static struct small_cache *small_cache(void)
{
    static __thread struct small_cache *mine;
    if (mine)
        return mine;
    pthread_once(&small_once, make_small_key);
    struct small_cache *c = calloc(1, sizeof(*c));
    if (c && pthread_setspecific(small_key, c) == 0)
        mine = c;
    else
        free(c);
    return mine;
}

/* The size class of a small request: want <= 1 << (class + SMALL_MIN_SHIFT). */
static unsigned small_class(uint64_t want)
{
    unsigned k = 0;
    while ((1ull << (k + SMALL_MIN_SHIFT)) < want)
        k++;
    return k;
}

/* A buffer of want's class (at least want bytes); fop_buf_put gets want
 * back, which names the same class. */
static uint8_t *small_get(uint64_t want)
{
    unsigned k = small_class(want);
    struct small_cache *c = small_cache();
    if (c && c->n[k])
        return c->p[k][--c->n[k]];
    return malloc(1ull << (k + SMALL_MIN_SHIFT));
}

static void small_put(uint8_t *p, uint64_t size)
{
    unsigned k = small_class(size);
    struct small_cache *c = small_cache();
    if (c && c->n[k] < SMALL_KEEP)
        c->p[k][c->n[k]++] = p;
    else
        free(p);
}

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
    __atomic_sub_fetch(&e->mem_used, e->spare[i].size, __ATOMIC_SEQ_CST);
    e->spare[i] = e->spare[--e->nspare];
    return p;
}

/* Adds n to mem_used when it fits the budget, or when nothing is held (an
 * op larger than the budget runs alone). Lock-free; false when it does
 * not fit. Sequentially consistent: see fop_mem_release. */
static bool mem_try_add(struct engine *e, uint64_t n)
{
    uint64_t cur = __atomic_load_n(&e->mem_used, __ATOMIC_SEQ_CST);
    do {
        if (cur + n > e->mem_budget && cur > 0)
            return false;
    } while (!__atomic_compare_exchange_n(&e->mem_used, &cur, cur + n, true, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    return true;
}

void fop_mem_reserve(struct engine *e, uint64_t n)
{
    if (mem_try_add(e, n))
        return;   /* it fits: no lock */
    bool waited = false;
    pthread_mutex_lock(&e->mem_mu);
    __atomic_add_fetch(&e->mem_waiters, 1, __ATOMIC_SEQ_CST);
    while (!mem_try_add(e, n)) {
        if (e->nspare) {
            free(spare_take(e, e->nspare - 1));   /* invariant 3 */
            continue;
        }
        if (!waited)   /* lock order: mem_mu, then the scheduler's (a leaf) */
            sched_mem_wait(e->sched, +1);   /* invariant 5 */
        waited = true;
        pthread_cond_wait(&e->mem_cv, &e->mem_mu);
    }
    __atomic_sub_fetch(&e->mem_waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&e->mem_mu);
    if (waited)
        sched_mem_wait(e->sched, -1);
}

void fop_mem_release(struct engine *e, uint64_t n)
{
    /* Sequentially consistent with the waiter's count and its look at
     * mem_used (fop_mem_reserve): either the waiter sees this release,
     * or this sees the waiter and wakes it under the lock it waits with. */
    __atomic_sub_fetch(&e->mem_used, n, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&e->mem_waiters, __ATOMIC_SEQ_CST) == 0)
        return;
    pthread_mutex_lock(&e->mem_mu);
    pthread_cond_broadcast(&e->mem_cv);
    pthread_mutex_unlock(&e->mem_mu);
}

uint8_t *fop_buf_get(struct engine *e, uint64_t cap, uint64_t *size)
{
    uint64_t want = cap ? cap : 1;
    *size = want;
    if (want <= SMALL_MAX)
        return small_get(want);
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
    if (size <= SMALL_MAX) {
        small_put(p, size);
        return;
    }
    bool kept = false;
    if (size >= FOP_SPARE_MIN) {
        pthread_mutex_lock(&e->mem_mu);
        if (e->nspare < ENG_SPARES &&
            spare_bytes(e) + size <= e->mem_budget / FOP_SPARE_SHARE &&
            __atomic_load_n(&e->mem_used, __ATOMIC_SEQ_CST) + size <= e->mem_budget &&
            mem_try_add(e, size)) {
            e->spare[e->nspare++] = (struct eng_spare){ p, size };
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
