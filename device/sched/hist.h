/*
 * device/sched/hist.h - a small latency histogram: log-linear buckets (four
 * per power of two, so a bucket is at most 25% wide and its midpoint at
 * most 12.5% off), recorded in O(1) per op, percentiles read off in
 * O(buckets). The scheduler keeps one per tenant and per queue (cisc top);
 * `cisc top` reads the buckets from the device's report and takes the
 * difference of two snapshots to get an interval's percentiles, so both
 * sides use the bucket bounds defined here.
 *
 * Bucket 0 holds everything under 1 us; bucket i >= 1 holds
 * [(4 + s) << (e - 2), (5 + s) << (e - 2)) ns with e = 10 + (i - 1) / 4 and
 * s = (i - 1) % 4; the last bucket also holds everything above (> 2^40 ns,
 * about 18 minutes).
 *
 * Invariants:
 *   1. hist_bucket(ns) is the bucket whose bounds contain ns (clamped).
 *   2. hist_low(i) < hist_high(i) == hist_low(i + 1) for i < last.
 */
#ifndef CISC_DEVICE_SCHED_HIST_H
#define CISC_DEVICE_SCHED_HIST_H

#include <stdint.h>

#define HIST_BUCKETS 125u   /* 1 + 4 per power of two from 2^10 to 2^40 ns */

struct hist {
    uint64_t n[HIST_BUCKETS];
};

/* The bucket ns falls in (invariant 1). */
static inline unsigned hist_bucket(uint64_t ns)
{
    if (ns < 1024)
        return 0;
    unsigned e = 63u - (unsigned)__builtin_clzll(ns);
    if (e > 40)
        return HIST_BUCKETS - 1;
    unsigned i = 1 + (e - 10) * 4 + (unsigned)((ns >> (e - 2)) & 3);
    return i < HIST_BUCKETS ? i : HIST_BUCKETS - 1;
}

/* The least ns in bucket i. */
static inline uint64_t hist_low(unsigned i)
{
    if (i == 0)
        return 0;
    unsigned e = 10 + (i - 1) / 4, s = (i - 1) % 4;
    return (uint64_t)(4 + s) << (e - 2);
}

/* One past the greatest ns in bucket i (the last bucket: its nominal bound). */
static inline uint64_t hist_high(unsigned i)
{
    if (i == 0)
        return 1024;
    unsigned e = 10 + (i - 1) / 4, s = (i - 1) % 4;
    return (uint64_t)(5 + s) << (e - 2);
}

static inline void hist_add(struct hist *h, uint64_t ns)
{
    h->n[hist_bucket(ns)]++;
}

/* The q-quantile (0 < q <= 1) of the counts n[0..HIST_BUCKETS): the
 * midpoint of the bucket holding it; 0 if there are none. */
static inline uint64_t hist_quantile(const uint64_t *n, double q)
{
    uint64_t total = 0, seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        total += n[i];
    if (!total)
        return 0;
    uint64_t want = (uint64_t)((double)total * q + 0.999999);
    if (want < 1)
        want = 1;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += n[i];
        if (seen >= want)
            return (hist_low(i) + hist_high(i)) / 2;
    }
    return hist_high(HIST_BUCKETS - 1);
}

#endif
