// tests/unit/engine/stats_test.cc - latency buckets and summaries.
#include <gtest/gtest.h>

#include "device/engine/stats.h"

TEST(Stats, BucketsAreMonotonicAndFloorsFit)
{
    unsigned prev = 0;
    for (uint64_t ns = 0; ns < (1ull << 40); ns = ns * 3 / 2 + 1) {
        unsigned b = stats_bucket(ns);
        EXPECT_GE(b, prev) << ns;
        EXPECT_LT(b, STATS_NBUCKETS);
        EXPECT_LE(stats_bucket_floor(b), ns) << ns;
        EXPECT_EQ(stats_bucket(stats_bucket_floor(b)), b) << ns;
        prev = b;
    }
    EXPECT_LT(stats_bucket(UINT64_MAX), STATS_NBUCKETS);
}

TEST(Stats, SummaryAcrossShards)
{
    struct stats *st;
    ASSERT_EQ(stats_create(3, 2, &st), 0);
    for (int i = 0; i < 98; i++)
        stats_record(st, i % 2, 1, 1000, 10, 0);
    stats_record(st, 0, 1, 1000000, 0, 1);
    stats_record(st, 1, 1, 1000000, 0, 1);
    stats_record(st, 7, 1, 5, 5, 0);   // bad shard: ignored
    stats_record(st, 0, 9, 5, 5, 0);   // bad op: ignored
    struct stats_summary s;
    stats_summary(st, 1, &s);
    EXPECT_EQ(s.count, 100u);
    EXPECT_EQ(s.errors, 2u);
    EXPECT_EQ(s.bytes, 980u);
    EXPECT_EQ(s.max_ns, 1000000u);
    EXPECT_LE(s.p50_ns, 1000u);
    EXPECT_GT(s.p50_ns, 800u);
    EXPECT_GT(s.p99_ns, 800000u);
    stats_summary(st, 0, &s);
    EXPECT_EQ(s.count, 0u);
    EXPECT_EQ(s.p99_ns, 0u);
    stats_destroy(st);
}
