// tests/unit/sched/model_test.cc - the device model's knobs.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "device/engine/engine.h"
#include "device/sched/model.h"
#include "tests/unit/engine/eng_image.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <string>
#include <vector>

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
    EXPECT_GE(now_ns() - t0, 200000u) << "it holds the core the extra time";
    m.core_speed = 1.0;
    ASSERT_EQ(dm_configure(&m), 0);
    EXPECT_EQ(dm_compute_charge(100000), 0u);
    m = { DM_DEFAULT_LINK_NS, 1.0 };
    ASSERT_EQ(dm_configure(&m), 0);
    t0 = now_ns();
    dm_link_cross();
    EXPECT_GE(now_ns() - t0, (uint64_t)DM_DEFAULT_LINK_NS);
}

// Burns about ns of this thread's CPU time.
void Burn(uint64_t ns)
{
    uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    volatile uint64_t x = 0;
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 1000; i++)
            x = x + (uint64_t)i;
}

void SetSpeed(double s)
{
    struct dm_model m = { 0, s };
    ASSERT_EQ(dm_configure(&m), 0);
}

TEST(DeviceModel, MeterChargesTheSlowdownOfItsCpuTimeLessComputeSteps)
{
    SetSpeed(4.0);
    struct dm_meter m;
    dm_meter_begin(&m);
    Burn(300000);                  // "StorageFS work"
    struct dm_step st;
    dm_step_begin(&st);
    Burn(3000000);                 // a compute step: stretched apart, not metered
    EXPECT_GT(dm_step_end(&st), 0u);
    uint64_t measured = 0;
    uint64_t extra = dm_meter_end(&m, &measured);
    EXPECT_GE(measured, 300000u);
    EXPECT_LT(measured, 3000000u) << "the compute step's CPU time is not metered again";
    EXPECT_NEAR((double)extra, 3.0 * (double)measured, 1.0);

    SetSpeed(1.0);                 // invariant 6: nothing metered, nothing added
    uint64_t m0, x0, m1, x1;
    dm_meter_totals(&m0, &x0);
    dm_meter_begin(&m);
    Burn(100000);
    EXPECT_EQ(dm_meter_end(&m, &measured), 0u);
    EXPECT_EQ(measured, 0u);
    dm_meter_totals(&m1, &x1);
    EXPECT_EQ(m1, m0);
    EXPECT_EQ(x1, x0);
    SetSpeed(1.0);
}

// A write-only command on a slow core: the scheduler charges its tenant
// about core_speed times the CPU time the command's StorageFS work used.
class SlowCoreWrites : public ::testing::Test {
protected:
    std::string path;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct eng_cred user = {};

    void Start(double speed)
    {
        SetSpeed(speed);           // set before the device starts, as `cisc up` does
        MakeMountedImage("/tmp/ciscfs-dmodel-XXXXXX", &path, &fs);
        if (HasFatalFailure())
            return;
        struct eng_config cfg = {};
        cfg.cores = 1;
        cfg.sched = "cfs";
        cfg.direct = true;
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
        user.ngroups = -1;   // root: the tenant is uid 0
    }
    void TearDown() override
    {
        eng_destroy(eng);
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        unlink(path.c_str());
        SetSpeed(1.0);
    }
    struct sched_tenant_stats Tenant()
    {
        struct sched_tenant_stats t[16];
        unsigned n = eng_tenant_stats(eng, t, 16);
        for (unsigned i = 0; i < n && i < 16; i++)
            if (t[i].id == user.uid)
                return t[i];
        return {};
    }
    // Creates a file and writes n random 4 KiB blocks to it; returns the
    // tenant's charged core time for the writes and the metered work.
    void Writes(unsigned n, uint64_t *charged, uint64_t *measured, uint64_t *extra)
    {
        *charged = *measured = *extra = 0;
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_CREATE, &user);
        c.ino = SFS_ROOT_INO;
        c.name = "w";
        c.mode = 0644;
        c.flags = O_RDWR;
        ASSERT_EQ(eng_call(eng, &c), 0);
        uint64_t fh = c.out_fh;
        std::vector<char> buf(4096, 'w');
        struct sched_tenant_stats t0 = Tenant();
        uint64_t m0, x0, m1, x1;
        dm_meter_totals(&m0, &x0);
        uint64_t seed = 7;
        for (unsigned i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            eng_cmd_init(&c, ENG_OP_WRITE, &user);
            c.fh = fh;
            c.in = buf.data();
            c.size = buf.size();
            c.off = (seed >> 33) % 1024 * 4096;
            ASSERT_EQ(eng_call(eng, &c), 4096);
        }
        struct sched_tenant_stats t1 = Tenant();
        for (int i = 0; i < 1000 && t1.done < t0.done + n; i++) {   // charged at finish
            usleep(1000);
            t1 = Tenant();
        }
        ASSERT_EQ(t1.done, t0.done + n);
        dm_meter_totals(&m1, &x1);
        *charged = t1.core_ns - t0.core_ns;
        *measured = m1 - m0;
        *extra = x1 - x0;
    }
};

TEST_F(SlowCoreWrites, AreChargedCoreSpeedTimesTheirMeasuredWork)
{
    Start(8.0);
    if (HasFatalFailure())
        return;
    uint64_t charged, measured, extra;
    Writes(200, &charged, &measured, &extra);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_GT(measured, 0u) << "a write's StorageFS work is metered";
    printf("200 writes at core speed 8: measured %llu ns, extra %llu ns, charged %llu ns "
           "(%.2fx measured)\n", (unsigned long long)measured, (unsigned long long)extra,
           (unsigned long long)charged, measured ? (double)charged / (double)measured : 0.0);
    EXPECT_NEAR((double)extra, 7.0 * (double)measured, 200.0) << "one ns of rounding per write";
    // Each write held its core for its work (wall >= CPU) plus its sleep;
    // the sleeps of one thread add up to what was planned, less at most
    // the oversleep owed from before: at least 8x the measured work.
    EXPECT_GE(charged + DM_OVERSLEEP_MAX_NS, measured + extra);
    EXPECT_GE(charged + DM_OVERSLEEP_MAX_NS, 8 * measured);
}

TEST_F(SlowCoreWrites, AtCoreSpeedOneNothingIsMetered)
{
    Start(1.0);
    if (HasFatalFailure())
        return;
    uint64_t charged, measured, extra;
    Writes(50, &charged, &measured, &extra);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(measured, 0u);
    EXPECT_EQ(extra, 0u);
    EXPECT_GT(charged, 0u);
}

}  // namespace
