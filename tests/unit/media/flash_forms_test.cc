// The two forms of the device's FTL path (flash_media.h invariant 10):
// `locks` (the caller takes its page's partition lock) and `cores` (one
// FTL core per partition owns it; media calls hand their pages to the
// owners through per-core rings). The cores form gives exactly the locks
// form's answers (done times, GC flags, counters) for the same calls;
// under concurrent callers, stats, checker and background GC, only the
// owners touch the partitions (no lock on the FTL path, nobody foreign);
// state is saved and rebuilt; a bad cores configuration is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" {
#include "device/media/flash.h"
#include "device/media/flash_media.h"
#include "device/media/media.h"
}

namespace {

uint64_t fake_now;
uint64_t FakeClock(void *) { return fake_now; }

std::string TmpPath(const std::string &what)
{
    const char *dir = getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/cisc-flash-forms-" + what + "-" +
           std::to_string(getpid()) + ".img";
}

// 4 channels x 2 dies, 16-page blocks, 10% spare, 4 partitions, two
// members in one image: GC runs soon, and every member has four cores.
struct flash_geom Geom(enum flash_ftl_form form)
{
    struct flash_geom g = {};
    g.channels = 4;
    g.dies_per_channel = 2;
    g.pages_per_block = 16;
    g.op_permille = 100;
    g.partitions = 4;
    g.members = 2;
    g.ftl = form;
    return g;
}

struct media *Open(const std::string &path, const struct flash_geom &g, uint64_t blocks)
{
    struct media *lower = nullptr, *m = nullptr;
    unlink(path.c_str());
    EXPECT_EQ(media_create_file(path.c_str(), blocks * MEDIA_BLOCK_SIZE, 0, &lower), 0);
    char err[160] = "";
    EXPECT_EQ(flash_media_open(lower, &g, err, sizeof err, &m), 0) << err;
    return m;
}

// Both members' counters, summed.
struct flash_stats Stats(struct media *m)
{
    struct flash_stats sum = {};
    for (unsigned i = 0; i < flash_media_members(m); i++) {
        struct flash_stats st;
        flash_stats(flash_media_member(m, i), &st);
        sum.host_reads += st.host_reads;
        sum.host_writes += st.host_writes;
        sum.trims += st.trims;
        sum.gc_runs += st.gc_runs;
        sum.gc_bg_runs += st.gc_bg_runs;
        sum.pages_moved += st.pages_moved;
        sum.erases += st.erases;
        sum.mapped += st.mapped;
        sum.free_blocks += st.free_blocks;
        sum.ftl_owned += st.ftl_owned;
        sum.ftl_locked += st.ftl_locked;
        sum.ftl_foreign += st.ftl_foreign;
    }
    return sum;
}

int Check(struct media *m)
{
    int r = 0;
    for (unsigned i = 0; i < flash_media_members(m); i++)
        r |= flash_check(flash_media_member(m, i));
    return r;
}

}  // namespace

// One call on m: op 0-5 a write, 6-8 a read, 9 a trim of [b, b + n), a
// flush every 50th. Returns the call's completion time (the thread's
// deadline) and whether GC ran on a die that served it.
std::pair<uint64_t, bool> Call(struct media *m, int i, uint32_t op, uint64_t b, uint32_t n,
                               std::vector<char> &buf)
{
    (void)flash_media_deadline_take(nullptr);
    int r = 0;
    if (op < 6)
        r = media_write(m, b, n, buf.data());
    else if (op < 9)
        r = media_read(m, b, n, buf.data());
    else
        media_trim(m, b, n);
    if (i % 50 == 0)
        r |= media_flush(m);
    EXPECT_EQ(r, 0);
    bool gc = false;
    uint64_t t = flash_media_deadline_take(&gc);
    return {t, gc};
}

// One thread, a fake clock: the same sequence of multi-block writes,
// reads, trims and flushes through both forms gives the same completion
// time and GC flag for every call and the same counters at the end; the
// cores form did every page operation as the partition's owner, the
// locks form none.
TEST(FlashForms, CoresGiveTheLocksFormsAnswers)
{
    const uint64_t blocks = 8192;
    std::string pl = TmpPath("locks"), pc = TmpPath("cores");
    struct media *ml = Open(pl, Geom(FLASH_FTL_LOCKS), blocks);
    struct media *mc = Open(pc, Geom(FLASH_FTL_CORES), blocks);
    ASSERT_TRUE(ml && mc);
    flash_media_set_clock(ml, FakeClock, nullptr);
    flash_media_set_clock(mc, FakeClock, nullptr);
    std::mt19937_64 rng(7);
    std::vector<char> buf(96 * MEDIA_BLOCK_SIZE, 'd');
    uint32_t differ = 0, gc_calls = 0;
    fake_now = 1000;
    for (int i = 0; i < 6000; i++, fake_now += 20000) {
        uint64_t b = rng() % (blocks - 96);
        uint32_t n = 1 + (uint32_t)(rng() % 96), op = (uint32_t)(rng() % 10);
        auto l = Call(ml, i, op, b, n, buf);
        auto c = Call(mc, i, op, b, n, buf);
        differ += l != c;
        gc_calls += l.second;
    }
    EXPECT_EQ(differ, 0u);
    EXPECT_GT(gc_calls, 0u);   // the sequence reached foreground GC
    struct flash_stats a = Stats(ml), b = Stats(mc);
    EXPECT_EQ(a.host_writes, b.host_writes);
    EXPECT_EQ(a.host_reads, b.host_reads);
    EXPECT_EQ(a.trims, b.trims);
    EXPECT_EQ(a.pages_moved, b.pages_moved);
    EXPECT_EQ(a.erases, b.erases);
    EXPECT_EQ(a.mapped, b.mapped);
    EXPECT_GT(a.pages_moved, 0u);
    EXPECT_EQ(a.ftl_owned, 0u);          // locks: the callers, under the locks
    EXPECT_GT(a.ftl_locked, 0u);
    EXPECT_EQ(b.ftl_owned, a.ftl_locked);   // cores: every one by its owner
    EXPECT_EQ(b.ftl_locked, 0u);
    EXPECT_EQ(b.ftl_foreign, 0u);
    EXPECT_EQ(Check(ml), 0);
    EXPECT_EQ(Check(mc), 0);
    media_close(ml);
    media_close(mc);
    unlink(pl.c_str());
    unlink(pc.c_str());
}

// The device's path under load: four threads write, read back and trim
// their own regions (multi-block calls that cross both members), a fifth
// takes stats and runs the checker (the owners' gate), background GC
// ticks every millisecond, on the real clock. Every byte reads back; in
// the cores form no FTL operation took a lock and none was made by a
// thread other than its partition's owner; in the locks form (the
// contrast that shows the counters can tell) all of them took a lock.
class FlashFormsLoad : public ::testing::TestWithParam<enum flash_ftl_form> {};

TEST_P(FlashFormsLoad, OnlyTheOwnersTouchThePartitions)
{
    const uint64_t blocks = 8192, region = 1536;
    std::string path = TmpPath(GetParam() == FLASH_FTL_CORES ? "load-cores" : "load-locks");
    struct media *m = Open(path, Geom(GetParam()), blocks);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(flash_media_idle_gc(m, 1000000), 0);
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0}, checks{0};
    std::thread watcher([&] {
        while (!stop.load()) {
            bad += Check(m) != 0;
            (void)Stats(m);
            checks++;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    });
    std::vector<std::thread> th;
    for (int t = 0; t < 4; t++)
        th.emplace_back([&, t] {
            std::mt19937_64 rng(100 + t);
            std::vector<char> w(64 * MEDIA_BLOCK_SIZE), r(w.size());
            for (int i = 0; i < 1500; i++) {
                uint64_t b = t * region + rng() % (region - 64);
                uint32_t n = 1 + (uint32_t)(rng() % 64);
                for (uint32_t k = 0; k < n; k++)   // each block says where it is
                    memset(&w[k * MEDIA_BLOCK_SIZE], (int)((b + k + i) & 0x7f), MEDIA_BLOCK_SIZE);
                bad += media_write(m, b, n, w.data()) != 0;
                bad += media_read(m, b, n, r.data()) != 0;
                bad += memcmp(w.data(), r.data(), n * MEDIA_BLOCK_SIZE) != 0;
                if (i % 7 == 0)
                    media_trim(m, b, n / 2);
                (void)flash_media_deadline_take(nullptr);
            }
        });
    for (auto &x : th)
        x.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));   // idle: background GC
    stop = true;
    watcher.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GT(checks.load(), 0);
    struct flash_stats st = Stats(m);
    EXPECT_GT(st.gc_runs, 0u);
    EXPECT_GE(st.ftl_owned + st.ftl_locked, st.host_reads + st.host_writes);
    EXPECT_EQ(st.ftl_foreign, 0u);
    if (GetParam() == FLASH_FTL_CORES) {
        EXPECT_EQ(st.ftl_locked, 0u) << "a media call took a partition lock";
        EXPECT_GT(st.ftl_owned, 0u);
    } else {
        EXPECT_EQ(st.ftl_owned, 0u);
        EXPECT_GT(st.ftl_locked, 0u);
    }
    EXPECT_EQ(Check(m), 0);
    media_close(m);
    unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Forms, FlashFormsLoad,
                         ::testing::Values(FLASH_FTL_LOCKS, FLASH_FTL_CORES),
                         [](const ::testing::TestParamInfo<enum flash_ftl_form> &i) {
                             return std::string(i.param == FLASH_FTL_CORES ? "cores" : "locks");
                         });

// Background GC in the cores form: after rewrites empty the pools, an
// idle media collects through IDLE sub-requests to the owners (free
// blocks rise, background runs counted, still no lock taken).
TEST(FlashForms, IdleGcRunsOnTheOwners)
{
    std::string path = TmpPath("idle");
    struct flash_geom g = Geom(FLASH_FTL_CORES);
    g.members = 1;
    g.op_permille = 20;
    struct media *m = Open(path, g, 4096);
    ASSERT_NE(m, nullptr);
    std::vector<char> w(64 * MEDIA_BLOCK_SIZE, 'g');
    for (int pass = 0; pass < 8; pass++)
        for (uint64_t b = 0; b + 64 <= 4096; b += 64)
            ASSERT_EQ(media_write(m, b, 64, w.data()), 0);
    struct flash_stats before = Stats(m);
    ASSERT_GT(before.gc_runs, 0u);
    ASSERT_EQ(before.gc_bg_runs, 0u);
    ASSERT_EQ(flash_media_idle_gc(m, 1000000), 0);
    struct flash_stats after = before;
    for (int i = 0; i < 400 && after.gc_bg_runs == 0; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        after = Stats(m);
    }
    EXPECT_GT(after.gc_bg_runs, 0u);
    EXPECT_GT(after.free_blocks, before.free_blocks);
    EXPECT_EQ(after.host_writes, before.host_writes);
    EXPECT_EQ(after.ftl_locked, 0u);
    media_close(m);
    unlink(path.c_str());
}

// State across restarts in the cores form: saved at close (the cores
// stopped first), restored at the next open, rebuilt without it; the
// cores serve the restored or rebuilt model (their counters grow, no lock).
TEST(FlashForms, StateIsSavedAndRebuiltUnderCores)
{
    std::string path = TmpPath("state"), state = path + ".ftl";
    unlink(state.c_str());
    struct flash_geom g = Geom(FLASH_FTL_CORES);
    struct media *m = Open(path, g, 4096);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(flash_media_state(m, state.c_str()), 0);
    std::vector<char> w(64 * MEDIA_BLOCK_SIZE, 's');
    for (int pass = 0; pass < 200; pass++)   // past the dies' pools: GC erases
        ASSERT_EQ(media_write(m, 64, 64, w.data()), 0);
    struct flash_stats a = Stats(m);
    ASSERT_GT(a.erases, 0u);
    media_close(m);
    ASSERT_EQ(access(state.c_str(), F_OK), 0);

    for (bool crash : {false, true}) {
        if (crash)
            unlink(state.c_str());
        struct media *lower = nullptr;
        char err[160] = "";
        ASSERT_EQ(media_open_file(path.c_str(), 0, &lower), 0);
        ASSERT_EQ(flash_media_open(lower, &g, err, sizeof err, &m), 0) << err;
        ASSERT_EQ(flash_media_state(m, state.c_str()), 0);
        EXPECT_EQ(flash_media_origin(m), crash ? FLASH_STATE_REBUILT : FLASH_STATE_RESTORED);
        struct flash_stats b = Stats(m);
        EXPECT_EQ(b.erases, crash ? 0u : a.erases);
        EXPECT_GE(b.mapped, 64u);
        ASSERT_EQ(media_write(m, 64, 64, w.data()), 0);
        struct flash_stats c = Stats(m);
        EXPECT_EQ(c.host_writes, b.host_writes + 64);
        EXPECT_EQ(c.ftl_locked, b.ftl_locked);   // restored counters, none new
        EXPECT_EQ(Check(m), 0);
        media_close(m);
    }
    unlink(state.c_str());
    unlink(path.c_str());
}

// More FTL cores than a flash_cores may have: refused with the reason,
// the lower media released (the image opens again).
TEST(FlashForms, TooManyCoresAreRefused)
{
    std::string path = TmpPath("bad");
    struct media *lower = nullptr, *m = nullptr;
    ASSERT_EQ(media_create_file(path.c_str(), 65536ull * MEDIA_BLOCK_SIZE, 0, &lower), 0);
    struct flash_geom g = {};
    g.channels = 128;
    g.dies_per_channel = 1;
    g.partitions = 128;
    g.ftl = FLASH_FTL_CORES;
    char err[160] = "";
    EXPECT_EQ(flash_media_open(lower, &g, err, sizeof err, &m), -EINVAL);
    EXPECT_NE(std::string(err).find("FTL cores: 1 to 64"), std::string::npos) << err;
    EXPECT_EQ(m, nullptr);
    ASSERT_EQ(media_open_file(path.c_str(), 0, &lower), 0);
    media_close(lower);
    g = {};
    g.ftl = (enum flash_ftl_form)7;
    flash_geom_default(&g, 4096);
    EXPECT_EQ(flash_geom_check(&g, 4096, err, sizeof err), -EINVAL);
    EXPECT_NE(std::string(err).find("FTL form"), std::string::npos) << err;
    unlink(path.c_str());
}
