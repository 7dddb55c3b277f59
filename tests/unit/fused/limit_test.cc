// The per-op device-time limit (device/engine/fused/exec.c, `cisc up
// --op-time-limit-ms`): an op that has run past it stops at its next step
// with -ETIME, changes nothing, and its tenant is charged and counted.
#include "cisc_fixture.h"

extern "C" {
#include "device/sched/model.h"
}

namespace {

class CiscLimit : public CiscFixture {
protected:
    struct dm_model saved;

    void SetUp() override
    {
        op_time_ms = 1;
        saved = dm_get();
        // Slow device cores: a 1 MiB checksum takes well over 1 ms of
        // device time whatever the host's speed (the model spins it).
        struct dm_model slow = { 0, 200.0 };
        ASSERT_EQ(dm_configure(&slow), 0);
        CiscFixture::SetUp();
    }
    void TearDown() override
    {
        CiscFixture::TearDown();
        dm_configure(&saved);
    }
    struct sched_tenant_stats Tenant(uint32_t id)
    {
        struct sched_tenant_stats t[16];
        unsigned n = eng_tenant_stats(eng, t, 16);
        for (unsigned i = 0; i < n && i < 16; i++)
            if (t[i].id == id)
                return t[i];
        ADD_FAILURE() << "no tenant " << id;
        return {};
    }
};

}  // namespace

TEST_F(CiscLimit, RunawayOpStopsWithEtimeAndChangesNothing)
{
    Put("in", Pattern(1 << 20, 9));
    Put("keep", "old");
    Arena a;
    Vec v(a);
    auto o = v.Open("new", O_WRONLY | O_CREAT);
    auto w0 = v.Write(o, 0, -1, "created");
    auto k = v.Open("keep", O_WRONLY | O_TRUNC);
    auto f = v.Open("in", O_RDONLY);
    auto r = v.Read(f, 0, 1 << 20);
    auto c = v.Compute(WIRE_STEP_CRC32C, r);   // > 1 ms of device time
    auto w = v.Write(k, 0, c);
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -ETIME);
    // The limit passes during the checksum at the latest (a loaded host
    // may get there sooner): the step after it is refused with -ETIME at
    // the latest, every later one is cancelled, none before failed.
    unsigned stopped = v.st.size();
    for (unsigned i = 0; i < v.st.size(); i++)
        if (out.res[i].ret == -ETIME && stopped == v.st.size())
            stopped = i;
    ASSERT_LE(stopped, (unsigned)w);
    for (unsigned i = 0; i < stopped; i++)
        EXPECT_GE(out.res[i].ret, 0) << i;
    for (unsigned i = stopped + 1; i < v.st.size(); i++)
        EXPECT_EQ(out.res[i].ret, -ECANCELED) << i;
    EXPECT_FALSE(Exists("new"));             // rolled back like any failed op
    EXPECT_EQ(Get("keep"), "old");
    struct sched_tenant_stats t = Tenant(0);
    EXPECT_EQ(t.terminated, 1u);
    EXPECT_GE(t.core_ns, 1000000u);   // charged for what it used: past the limit
    (void)o, (void)f, (void)c, (void)w0;
}
