// tests/unit/libcisc/arena_test.cc - the buddy allocator of a queue's
// arena against a model: allocations never overlap, stay inside, are
// aligned; frees coalesce back to one block; bad frees are ignored.
#include <gtest/gtest.h>

extern "C" {
#include "libcisc/arena.h"
}

#include <errno.h>

#include <map>
#include <random>

namespace {

TEST(LcArena, RandomModel)
{
    struct lc_arena a;
    ASSERT_EQ(lc_arena_init(&a, 1 << 20), 0);
    std::map<uint64_t, uint64_t> live;   // offset -> length
    std::mt19937 rng(7);
    for (int step = 0; step < 20000; step++) {
        if (live.empty() || rng() % 3) {
            uint64_t len = 1 + rng() % (rng() % 8 == 0 ? 200000 : 3000), off;
            int r = lc_arena_get(&a, len, &off);
            if (r) {
                EXPECT_EQ(r, -ENOMEM);
                continue;
            }
            EXPECT_EQ(off % 256, 0u);
            EXPECT_LE(off + len, a.size);
            auto next = live.lower_bound(off);
            if (next != live.end()) {
                EXPECT_LE(off + len, next->first) << "overlaps the next block";
            }
            if (next != live.begin()) {
                EXPECT_LE(std::prev(next)->first + std::prev(next)->second, off);
            }
            live[off] = len;
        } else {
            auto it = live.begin();
            std::advance(it, rng() % live.size());
            EXPECT_TRUE(lc_arena_release(&a, it->first));
            live.erase(it);
        }
    }
    for (auto &l : live)
        EXPECT_TRUE(lc_arena_release(&a, l.first));
    EXPECT_EQ(a.used, 0u);
    uint64_t off;
    ASSERT_EQ(lc_arena_get(&a, a.size, &off), 0) << "everything merged back";
    EXPECT_EQ(off, 0u);
    lc_arena_fini(&a);
}

TEST(LcArena, BadRequestsAndFrees)
{
    struct lc_arena a;
    EXPECT_EQ(lc_arena_init(&a, 1000), -EINVAL);   // not a power of two
    ASSERT_EQ(lc_arena_init(&a, 65536), 0);
    uint64_t off;
    EXPECT_EQ(lc_arena_get(&a, 0, &off), -EINVAL);
    EXPECT_EQ(lc_arena_get(&a, 65537, &off), -EINVAL);
    ASSERT_EQ(lc_arena_get(&a, 100, &off), 0);
    EXPECT_FALSE(lc_arena_release(&a, off + 256));   // not a block start
    EXPECT_FALSE(lc_arena_release(&a, off + 1));
    EXPECT_FALSE(lc_arena_release(&a, 1 << 20));     // outside
    EXPECT_TRUE(lc_arena_release(&a, off));
    EXPECT_FALSE(lc_arena_release(&a, off)) << "double free is ignored";
    lc_arena_fini(&a);
    // a large arena uses bigger units to bound its metadata
    ASSERT_EQ(lc_arena_init(&a, 1ull << 30), 0);
    EXPECT_EQ(a.units, 65536u);
    ASSERT_EQ(lc_arena_get(&a, 1, &off), 0);
    EXPECT_TRUE(lc_arena_release(&a, off));
    lc_arena_fini(&a);
}

}  // namespace
