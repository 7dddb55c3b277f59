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
        op_limit_ms = 1;
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
    EXPECT_EQ(out.res[c].ret, 4);            // it ran; the limit passed during it
    EXPECT_EQ(out.res[w].ret, -ETIME);       // the next step was refused
    EXPECT_GE(out.res[w0].ret, 0);
    EXPECT_FALSE(Exists("new"));             // rolled back like any failed op
    EXPECT_EQ(Get("keep"), "old");
    struct sched_tenant_stats t = Tenant(0);
    EXPECT_EQ(t.terminated, 1u);
    EXPECT_GT(t.core_ns, 1000000u);          // charged for what it used
    (void)o, (void)f;
}
