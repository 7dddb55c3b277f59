/*
 * device/engine/stats.h - per-operation statistics: counts, errors, bytes and
 * latency histograms, always on and cheap.
 *
 * A `struct stats` holds one shard per device core plus one for other
 * threads. A core only ever writes its own shard (relaxed atomic stores of
 * load+1: no lock, no read-modify-write bus lock); readers sum the shards.
 * Latencies go into log-linear buckets: 4 sub-buckets per power of two,
 * so a percentile is exact to within 19%.
 *
 * Invariants:
 *   1. Only the thread that owns shard i writes shard i.
 *   2. A snapshot never blocks a writer; its totals may lag by the
 *      operations in flight while it is taken.
 *   3. stats_summary() of an op nobody ran is all zeros.
 *   4. The corruption counter is the one field every thread writes (an
 *      atomic add: corruption is rare, so it costs nothing).
 */
#ifndef CISC_DEVICE_STATS_H
#define CISC_DEVICE_STATS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STATS_SUB_BITS  2u
#define STATS_NBUCKETS  (64u << STATS_SUB_BITS)

struct stats;

/* What a reader gets for one operation, summed over shards. */
struct stats_summary {
    uint64_t count;
    uint64_t errors;          /* completions with a negative result */
    uint64_t bytes;           /* data moved (reads, writes) */
    uint64_t total_ns;        /* sum of latencies */
    uint64_t p50_ns, p99_ns, max_ns;
};

/* Allocates statistics for nops operations and nshards writers.
 * Returns 0 and sets *out, or -ENOMEM. */
int stats_create(unsigned nops, unsigned nshards, struct stats **out);

/* Frees st (NULL is fine). */
void stats_destroy(struct stats *st);

/* Records one completed operation op on shard `shard`: latency ns, bytes
 * moved, and whether it failed. Out-of-range op or shard is ignored. */
void stats_record(struct stats *st, unsigned shard, unsigned op, uint64_t ns,
                  uint64_t bytes, int failed);

/* Sums op over all shards into *out. */
void stats_summary(const struct stats *st, unsigned op, struct stats_summary *out);

/* Counts one encounter with corrupt metadata in the image: a command
 * that failed with -EUCLEAN, or a listed entry whose inode failed
 * verification. Any thread; st may be NULL. */
void stats_corrupt(struct stats *st);

/* Encounters counted by stats_corrupt so far. */
uint64_t stats_corrupt_count(const struct stats *st);

/* Bucket index for a latency and the smallest latency in a bucket
 * (exposed for tests). */
unsigned stats_bucket(uint64_t ns);
uint64_t stats_bucket_floor(unsigned bucket);

#ifdef __cplusplus
}
#endif

#endif
