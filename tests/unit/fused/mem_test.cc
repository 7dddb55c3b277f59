// Device memory of fused ops (device/engine/fused/mem.c): large step buffers are
// kept as spares and reused by the next op, spares count in the device
// memory budget and give way to reservations, and small or oversized
// requests do not use them. Ends with a stream of real READ ops that
// reuses one buffer instead of mapping a new one each time.
#include "cisc_fixture.h"

extern "C" {
#include "device/engine/fused/fused_int.h"
#include "device/sched/model.h"
}

#include <atomic>
#include <chrono>
#include <thread>

namespace {

constexpr uint64_t MiB = 1ull << 20;

class CiscMem : public CiscFixture
{
  protected:
    void SetUp() override
    {
        dev_ram = 16 * MiB;
        CiscFixture::SetUp();
    }
    uint64_t Used()
    {
        pthread_mutex_lock(&eng->mem_mu);
        uint64_t u = eng->mem_used;
        pthread_mutex_unlock(&eng->mem_mu);
        return u;
    }
    uint64_t Reserved()   // mem_used less the spares' bytes
    {
        pthread_mutex_lock(&eng->mem_mu);
        uint64_t u = eng->mem_used;
        for (unsigned i = 0; i < eng->nspare; i++)
            u -= eng->spare[i].size;
        pthread_mutex_unlock(&eng->mem_mu);
        return u;
    }
    unsigned Spares()
    {
        pthread_mutex_lock(&eng->mem_mu);
        unsigned n = eng->nspare;
        pthread_mutex_unlock(&eng->mem_mu);
        return n;
    }
};

TEST_F(CiscMem, LargeBuffersAreKeptAndReused)
{
    uint64_t size;
    uint8_t *p = fop_buf_get(eng, 2 * MiB, &size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(size, 2 * MiB);
    memset(p, 0x5a, size);
    fop_buf_put(eng, p, size);
    EXPECT_EQ(Spares(), 1u);
    EXPECT_EQ(Used(), 2 * MiB) << "a spare counts in the budget";

    uint64_t size2;
    uint8_t *q = fop_buf_get(eng, 2 * MiB - 100000, &size2);   // within 25%: reused
    EXPECT_EQ(q, p);
    EXPECT_EQ(size2, 2 * MiB);
    EXPECT_EQ(Spares(), 0u);
    EXPECT_EQ(Used(), 0u);
    fop_buf_put(eng, q, size2);

    uint64_t size3;
    uint8_t *r = fop_buf_get(eng, MiB, &size3);   // half the spare: not reused
    EXPECT_NE(r, p);
    EXPECT_EQ(size3, MiB);
    EXPECT_EQ(Spares(), 1u);
    fop_buf_put(eng, r, size3);
    EXPECT_EQ(Spares(), 2u);
}

TEST_F(CiscMem, SmallBuffersAreNotKept)
{
    uint64_t size;
    uint8_t *p = fop_buf_get(eng, 64 << 10, &size);
    ASSERT_NE(p, nullptr);
    fop_buf_put(eng, p, size);
    EXPECT_EQ(Spares(), 0u);
    EXPECT_EQ(Used(), 0u);
    uint8_t *z = fop_buf_get(eng, 0, &size);   // a zero-capacity step still gets a buffer
    ASSERT_NE(z, nullptr);
    EXPECT_EQ(size, 1u);
    fop_buf_put(eng, z, size);
    fop_buf_put(eng, nullptr, 0);
}

// Spares hold at most a quarter of the budget (16 MiB here: 4 MiB).
TEST_F(CiscMem, SparesStayWithinTheirShareOfTheBudget)
{
    uint8_t *b[3];
    uint64_t s[3];
    for (int i = 0; i < 3; i++)
        ASSERT_NE(b[i] = fop_buf_get(eng, 2 * MiB, &s[i]), nullptr);
    for (int i = 0; i < 3; i++)
        fop_buf_put(eng, b[i], s[i]);
    EXPECT_EQ(Spares(), 2u);
    EXPECT_EQ(Used(), 4 * MiB);
}

// A reservation that does not fit beside the spares drops them instead of
// waiting for ever (nothing else holds memory).
TEST_F(CiscMem, ReservationsDropSpares)
{
    uint64_t s1, s2;
    uint8_t *a = fop_buf_get(eng, 2 * MiB, &s1), *b = fop_buf_get(eng, 2 * MiB, &s2);
    fop_buf_put(eng, a, s1);
    fop_buf_put(eng, b, s2);
    ASSERT_EQ(Used(), 4 * MiB);
    fop_mem_reserve(eng, 13 * MiB);   // 13 + 4 > 16: one spare must go
    EXPECT_EQ(Spares(), 1u);
    EXPECT_EQ(Used(), 15 * MiB);
    fop_mem_release(eng, 13 * MiB);
    fop_mem_reserve(eng, 16 * MiB);   // the whole budget: every spare goes
    EXPECT_EQ(Spares(), 0u);
    EXPECT_EQ(Used(), 16 * MiB);
    fop_mem_release(eng, 16 * MiB);
    EXPECT_EQ(Used(), 0u);
}

// Fused ops of a stream (READ 2 MiB to the arena, again and again) reuse
// one device buffer, and the data is right every time.
TEST_F(CiscMem, ReadOpsReuseTheirBuffer)
{
    std::string data(3 * MiB, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 131 + (i >> 12));
    Put("big", data);
    uint8_t *spare = nullptr;
    for (int k = 0; k < 3; k++) {
        Arena a(4 * MiB);
        Vec v(a);
        auto f = v.Open("big", O_RDONLY);
        auto r = v.Read(f, (uint64_t)k * 512 * 1024, 2 * MiB);
        uint64_t out = v.OutTo(r, 2 * MiB);
        struct eng_cisc res;
        ASSERT_EQ(Run(v, &res), 0);
        EXPECT_EQ(a.Get(out, 2 * MiB), data.substr((size_t)k * 512 * 1024, 2 * MiB));
        ASSERT_EQ(Spares(), 1u) << "op " << k;
        if (k == 0)
            spare = (uint8_t *)eng->spare[0].p;
        EXPECT_EQ(eng->spare[0].p, spare) << "op " << k << " mapped a new buffer";
    }
}

// On a slow core (core speed > 1) an op holds its reservation for its
// whole time on the core, the model's sleep after its work included, as
// the scheduler counts it: a READ op's data is already in the arena (its
// work is done) while its 2 MiB still count, until it completes.
TEST_F(CiscMem, AReservationIsHeldUntilTheOpLeavesItsCore)
{
    std::string data(2 * MiB, 'd');
    Put("slow", data);
    struct dm_model slow = { 0, 200.0 }, fast = { DM_DEFAULT_LINK_NS, 1.0 };
    ASSERT_EQ(dm_configure(&slow), 0);
    Arena a(4 * MiB);
    Vec v(a);
    auto f = v.Open("slow", O_RDONLY);
    auto r = v.Read(f, 0, 2 * MiB);
    uint64_t out = v.OutTo(r, 2 * MiB);
    struct eng_cisc res;
    std::atomic<bool> done{ false };
    std::thread t([&] {
        EXPECT_EQ(Run(v, &res), 0);
        done = true;
    });
    bool seen = false;
    uint64_t held = 0;
    for (int i = 0; i < 5000 && !done && !seen; i++) {
        if (a.Get(out, 16) == data.substr(0, 16)) {
            held = Reserved();
            seen = !done;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    t.join();
    ASSERT_EQ(dm_configure(&fast), 0);
    ASSERT_TRUE(seen) << "the op's data reached the arena before it completed";
    EXPECT_GE(held, 2 * MiB) << "its reservation still counted during the model's sleep";
    EXPECT_EQ(Reserved(), 0u) << "given back when it left its core";
}

} // namespace
