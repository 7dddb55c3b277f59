// tests/unit/sched/model_test.cc - the device model's knobs.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "device/sched/model.h"

namespace {

TEST(DeviceModel, ConfigureChecksRanges)
{
    struct dm_model m = { 500, 2.0 };
    ASSERT_EQ(dm_configure(&m), 0);
    EXPECT_EQ(dm_get().link_latency_ns, 500u);
    struct dm_model bad[] = { { 0, 0.5 }, { DM_LINK_MAX_NS + 1, 1.0 }, { 0, 1e9 },
                              { 0, __builtin_nan("") } };
    for (auto &b : bad)
        EXPECT_EQ(dm_configure(&b), -EINVAL);
    EXPECT_EQ(dm_get().link_latency_ns, 500u) << "a refused model leaves the old one";
    m = { DM_DEFAULT_LINK_NS, 1.0 };
    ASSERT_EQ(dm_configure(&m), 0);
}

TEST(DeviceModel, ComputeChargeIsTheSlowdown)
{
    struct dm_model m = { 0, 3.0 };
    ASSERT_EQ(dm_configure(&m), 0);
    uint64_t t0 = now_ns();
    EXPECT_EQ(dm_compute_charge(100000), 200000u);
    EXPECT_GE(now_ns() - t0, 200000u) << "it spins the extra time";
    m.core_speed = 1.0;
    ASSERT_EQ(dm_configure(&m), 0);
    EXPECT_EQ(dm_compute_charge(100000), 0u);
    m = { DM_DEFAULT_LINK_NS, 1.0 };
    ASSERT_EQ(dm_configure(&m), 0);
    t0 = now_ns();
    dm_link_cross();
    EXPECT_GE(now_ns() - t0, (uint64_t)DM_DEFAULT_LINK_NS);
}

}  // namespace
