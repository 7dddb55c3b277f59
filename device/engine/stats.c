/* device/engine/stats.c - sharded per-op counters and latency histograms. */
#include "device/engine/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct stats_op {
    uint64_t count, errors, bytes, total_ns, max_ns;
    uint64_t hist[STATS_NBUCKETS];
};

struct stats {
    unsigned nops, nshards;
    uint64_t corrupt;         /* invariant 4: every thread adds to it */
    struct stats_op ops[];    /* nshards * nops, shard-major */
};

int stats_create(unsigned nops, unsigned nshards, struct stats **out)
{
    size_t n = (size_t)nops * nshards;
    struct stats *st = calloc(1, sizeof(*st) + n * sizeof(struct stats_op));
    if (!st)
        return -ENOMEM;
    st->nops = nops;
    st->nshards = nshards;
    *out = st;
    return 0;
}

void stats_destroy(struct stats *st)
{
    free(st);
}

unsigned stats_bucket(uint64_t ns)
{
    if (ns < (1u << STATS_SUB_BITS))
        return (unsigned)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned sub = (unsigned)(ns >> (msb - STATS_SUB_BITS)) & ((1u << STATS_SUB_BITS) - 1);
    return ((msb - STATS_SUB_BITS + 1) << STATS_SUB_BITS) + sub;
}

uint64_t stats_bucket_floor(unsigned bucket)
{
    if (bucket < (1u << STATS_SUB_BITS))
        return bucket;
    unsigned msb = (bucket >> STATS_SUB_BITS) + STATS_SUB_BITS - 1;
    uint64_t sub = bucket & ((1u << STATS_SUB_BITS) - 1);
    return ((uint64_t)1 << msb) | (sub << (msb - STATS_SUB_BITS));
}

/* Single writer per shard (invariant 1): a relaxed load and store is
 * enough and avoids a locked instruction; readers use relaxed loads. */
static inline void bump(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

void stats_record(struct stats *st, unsigned shard, unsigned op, uint64_t ns,
                  uint64_t bytes, int failed)
{
    if (!st || op >= st->nops || shard >= st->nshards)
        return;
    struct stats_op *o = &st->ops[(size_t)shard * st->nops + op];
    bump(&o->count, 1);
    if (failed)
        bump(&o->errors, 1);
    bump(&o->bytes, bytes);
    bump(&o->total_ns, ns);
    if (ns > __atomic_load_n(&o->max_ns, __ATOMIC_RELAXED))
        __atomic_store_n(&o->max_ns, ns, __ATOMIC_RELAXED);
    bump(&o->hist[stats_bucket(ns)], 1);
}

static uint64_t percentile(const uint64_t *hist, uint64_t count, unsigned pct)
{
    uint64_t rank = (count * pct + 99) / 100, seen = 0;
    for (unsigned b = 0; b < STATS_NBUCKETS; b++) {
        seen += hist[b];
        if (seen >= rank && hist[b])
            return stats_bucket_floor(b);
    }
    return 0;
}

void stats_summary(const struct stats *st, unsigned op, struct stats_summary *out)
{
    uint64_t h[STATS_NBUCKETS];
    memset(out, 0, sizeof(*out));
    memset(h, 0, sizeof(h));
    if (!st || op >= st->nops)
        return;
    for (unsigned s = 0; s < st->nshards; s++) {
        const struct stats_op *o = &st->ops[(size_t)s * st->nops + op];
        out->count += __atomic_load_n(&o->count, __ATOMIC_RELAXED);
        out->errors += __atomic_load_n(&o->errors, __ATOMIC_RELAXED);
        out->bytes += __atomic_load_n(&o->bytes, __ATOMIC_RELAXED);
        out->total_ns += __atomic_load_n(&o->total_ns, __ATOMIC_RELAXED);
        uint64_t m = __atomic_load_n(&o->max_ns, __ATOMIC_RELAXED);
        if (m > out->max_ns)
            out->max_ns = m;
        for (unsigned b = 0; b < STATS_NBUCKETS; b++)
            h[b] += __atomic_load_n(&o->hist[b], __ATOMIC_RELAXED);
    }
    uint64_t n = 0;
    for (unsigned b = 0; b < STATS_NBUCKETS; b++)
        n += h[b];
    out->p50_ns = percentile(h, n, 50);
    out->p99_ns = percentile(h, n, 99);
}

void stats_corrupt(struct stats *st)
{
    if (st)
        __atomic_add_fetch(&st->corrupt, 1, __ATOMIC_RELAXED);
}

uint64_t stats_corrupt_count(const struct stats *st)
{
    return st ? __atomic_load_n(&st->corrupt, __ATOMIC_RELAXED) : 0;
}
