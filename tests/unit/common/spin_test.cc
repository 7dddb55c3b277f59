// Pins down the spin governor (common/spin.h) on a clock of our own: a
// gap between two rounds starts a hold-off that cuts the budget to a
// brief spin; hold-offs double while contention keeps coming back and
// fall back to the minimum after a calm spell; rests are never gaps.
#include <gtest/gtest.h>

extern "C" {
#include "common/spin.h"
}

namespace {

constexpr uint64_t kFull = 50000;   // a poller's default budget, ns
constexpr uint64_t kT0 = 1000000000;

// Spins from `at` in 100 ns rounds for `ns`; returns whether a gap was seen.
bool Spin(spin_gov *g, uint64_t at, uint64_t ns)
{
    bool gap = false;
    for (uint64_t t = at; t <= at + ns; t += 100)
        gap |= spin_round(g, t);
    return gap;
}

}  // namespace

TEST(Spin, SteadyRoundsAreNoGapAndKeepTheFullBudget)
{
    spin_gov g = {};
    EXPECT_FALSE(Spin(&g, kT0, 1000000));
    EXPECT_EQ(spin_budget(&g, kT0 + 1000000, kFull), kFull);
    EXPECT_EQ(g.gaps, 0u);
}

TEST(Spin, AGapStartsAHoldOffWithABriefBudget)
{
    spin_gov g = {};
    EXPECT_FALSE(spin_round(&g, kT0));
    EXPECT_TRUE(spin_round(&g, kT0 + SPIN_GAP_NS + 1));
    uint64_t t = kT0 + SPIN_GAP_NS + 1;
    EXPECT_TRUE(spin_held(&g, t));
    EXPECT_EQ(spin_budget(&g, t, kFull), SPIN_BRIEF_NS);
    EXPECT_EQ(spin_budget(&g, t, 500), 500u);   // never more than asked (invariant 1)
    EXPECT_EQ(spin_budget(&g, t + SPIN_HOLD_MIN_NS, kFull), kFull);
    EXPECT_EQ(g.gaps, 1u);
    // The round after a gap starts a new spin: no second gap from it.
    EXPECT_FALSE(spin_round(&g, t + 100));
}

TEST(Spin, ARestIsNeverAGap)
{
    spin_gov g = {};
    EXPECT_FALSE(spin_round(&g, kT0));
    spin_rest(&g);   // slept for a second
    EXPECT_FALSE(spin_round(&g, kT0 + 1000000000));
    EXPECT_EQ(g.gaps, 0u);
    EXPECT_FALSE(spin_held(&g, kT0 + 1000000000));
}

TEST(Spin, HoldOffsDoubleWhileContentionComesBackAndResetAfterCalm)
{
    spin_gov g = {};
    uint64_t t = kT0;
    uint64_t expect = SPIN_HOLD_MIN_NS;
    for (int i = 0; i < 12; i++) {
        spin_rest(&g);
        spin_round(&g, t);
        ASSERT_TRUE(spin_round(&g, t + SPIN_GAP_NS + 1)) << i;
        EXPECT_EQ(g.hold, expect) << i;
        t = g.calm_at + 1000;   // contention again just after the hold-off ends
        expect = expect * 2 < SPIN_HOLD_MAX_NS ? expect * 2 : SPIN_HOLD_MAX_NS;
    }
    EXPECT_EQ(g.hold, SPIN_HOLD_MAX_NS);
    // A calm spell as long as the hold-off: back to the minimum.
    t = g.calm_at + g.hold + 1;
    spin_rest(&g);
    spin_round(&g, t);
    ASSERT_TRUE(spin_round(&g, t + SPIN_GAP_NS + 1));
    EXPECT_EQ(g.hold, SPIN_HOLD_MIN_NS);
}

TEST(Spin, ContentionInsideAHoldOffExtendsItWithoutDoubling)
{
    spin_gov g = {};
    spin_round(&g, kT0);
    ASSERT_TRUE(spin_round(&g, kT0 + SPIN_GAP_NS + 1));
    uint64_t t = kT0 + SPIN_GAP_NS + 1 + SPIN_HOLD_MIN_NS / 2;
    spin_rest(&g);
    spin_round(&g, t);
    ASSERT_TRUE(spin_round(&g, t + SPIN_GAP_NS + 1));
    EXPECT_EQ(g.hold, SPIN_HOLD_MIN_NS);
    EXPECT_EQ(g.calm_at, t + SPIN_GAP_NS + 1 + SPIN_HOLD_MIN_NS);
    EXPECT_EQ(g.gaps, 2u);
}
