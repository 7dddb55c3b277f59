// tests/unit/sched/preempt_test.cc - preemption points and blocking on real
// core threads: a long item is parked for a lighter tenant under cfs (never
// under fifo), a lock's waiter gives its core to the parked holder, a
// blocked item gives its core up, and a parked item is charged only its
// time on the core.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "device/sched/sched_int.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

constexpr uint64_t kBound = 3000000000ull;   // a loop's safety bound (ns): never reached when it passes

struct Item {
    struct sched_item it;
    int id;
};

struct World {
    pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
    std::atomic<bool> a_running{ false }, a_holds{ false }, b_started{ false }, b_done{ false };
    std::atomic<bool> b_during_a{ false }, b_locked_after_a{ false }, a_done{ false };
    std::atomic<bool> release{ false };
    uint64_t b_spin_ns = 0;
    uint64_t bound = kBound;
    bool a_locks = false;   // a holds `lock` (exclusive) while it runs; b takes it too
    bool a_done_points = false;   // a's points are sched_preempt_point_done (work done)
};

// a (id 1): preemption points until b has run, or the bound. b (id 2): as
// the world says, not preemptible.
void RunPair(void *arg, struct sched_item *si, unsigned core)
{
    auto *w = static_cast<World *>(arg);
    auto *item = reinterpret_cast<Item *>(si);
    if (item->id == 1) {
        if (w->a_locks)
            pthread_rwlock_wrlock(&w->lock);
        w->a_holds = w->a_locks;
        w->a_running = true;
        uint64_t end = now_ns() + w->bound;
        while (!w->b_started && now_ns() < end) {
            if (w->a_done_points) {
                sched_preempt_point_done();
            } else {
                sched_preempt_point();
            }
        }
        w->b_during_a = w->b_started.load();
        w->a_done = true;   // before the unlock: b sees it once it has the lock
        if (w->a_locks)
            pthread_rwlock_unlock(&w->lock);
        return;
    }
    w->b_started = true;
    if (w->a_locks) {
        if (pthread_rwlock_trywrlock(&w->lock) != 0) {
            sched_block(true);
            pthread_rwlock_wrlock(&w->lock);
            sched_unblock();
        }
        w->b_locked_after_a = w->a_done.load();
        pthread_rwlock_unlock(&w->lock);
    }
    uint64_t end = now_ns() + w->b_spin_ns;
    while (now_ns() < end) {
    }
    w->b_done = true;
}

struct Pair {
    Item a{}, b{};
    Pair()
    {
        a.it.tenant = 1;
        a.it.queue = 1;
        a.it.preemptible = true;
        a.id = 1;
        b.it.tenant = 2;
        b.it.queue = 1;
        b.id = 2;
    }
};

// a runs alone on the one core, then b is submitted.
void Start(struct sched *s, World &w, Pair &p)
{
    ASSERT_EQ(sched_submit(s, &p.a.it), 0);
    while (!w.a_running)
        std::this_thread::yield();
    ASSERT_EQ(sched_submit(s, &p.b.it), 0);
}

struct sched_tenant_stats TenantOf(struct sched *s, uint32_t id)
{
    struct sched_tenant_stats t[8];
    unsigned n = sched_tenant_stats(s, t, 8);
    for (unsigned i = 0; i < n && i < 8; i++)
        if (t[i].id == id)
            return t[i];
    return {};
}

}  // namespace

TEST(Preempt, ALongItemIsParkedForALighterTenant)
{
    for (const struct sched_policy *pol : { &sched_cfs, &sched_cfs_cpu, &sched_drf }) {
        World w;
        Pair p;
        struct sched *s;
        struct sched_config one = { 1, false };
        ASSERT_EQ(sched_create(pol, &one, RunPair, &w, &s), 0);
        Start(s, w, p);
        sched_drain(s);
        EXPECT_TRUE(w.b_during_a.load()) << pol->name << ": b ran while a was on the only core";
        struct sched_stats st;
        sched_get_stats(s, &st);
        EXPECT_GE(st.preemptions, 1u) << pol->name;
        EXPECT_GE(TenantOf(s, 1).preempted, 1u) << pol->name;
        EXPECT_EQ(TenantOf(s, 2).preempted, 0u) << pol->name;
        EXPECT_EQ(TenantOf(s, 1).done, 1u);
        EXPECT_EQ(TenantOf(s, 2).done, 1u);
        sched_destroy(s);
    }
}

TEST(Preempt, FifoAndRoundRobinNeverPark)
{
    for (const struct sched_policy *pol : { &sched_fifo, &sched_rr }) {
        World w;
        w.bound = 200000000;
        Pair p;
        struct sched *s;
        struct sched_config one = { 1, false };
        ASSERT_EQ(sched_create(pol, &one, RunPair, &w, &s), 0);
        // a gives up after a while; b cannot start before (one core)
        Start(s, w, p);
        sched_drain(s);
        EXPECT_FALSE(w.b_during_a.load()) << pol->name;
        struct sched_stats st;
        sched_get_stats(s, &st);
        EXPECT_EQ(st.preemptions, 0u) << pol->name;
        sched_destroy(s);
    }
}

// a holds a lock b needs and is parked for b: b, waiting for the lock,
// gives the one core back, a resumes (before anything else: a lock's
// waiter is waiting), lets the lock go, and b goes on. Without the
// hand-back both would wait forever.
TEST(Preempt, ALocksWaiterGivesItsCoreToTheParkedHolder)
{
    World w;
    w.a_locks = true;
    Pair p;
    struct sched *s;
    struct sched_config one = { 1, false };
    ASSERT_EQ(sched_create(&sched_cfs, &one, RunPair, &w, &s), 0);
    Start(s, w, p);
    sched_drain(s);
    EXPECT_TRUE(w.b_during_a.load());
    EXPECT_TRUE(w.b_locked_after_a.load()) << "b took the lock only after a let it go";
    EXPECT_TRUE(w.b_done.load());
    struct sched_stats st;
    sched_get_stats(s, &st);
    EXPECT_GE(st.preemptions, 1u);
    EXPECT_GE(st.blocks, 1u);
    sched_destroy(s);
}

// Once its work is done (the core-speed model's sleep), any item may be
// parked, not only a preemptible one on a worker thread: here a is not
// preemptible and runs on its submitter's thread (direct dispatch, as a
// FUSE worker's request). Its ordinary points never park it; its
// work-done points do, under cfs, cfs-cpu and drf, and never under fifo
// or rr.
//
// SubmitDirect runs a on a thread of its own that submits it (so a runs
// there, directly), and once a runs, and `after` more, queues b.
template <class W>
void SubmitDirect(struct sched *s, W &w, Pair &p, std::thread &t,
                  std::chrono::milliseconds after = std::chrono::milliseconds(0))
{
    t = std::thread([s, &p] { EXPECT_EQ(sched_submit(s, &p.a.it), 0); });
    while (!w.a_running)
        std::this_thread::yield();
    std::this_thread::sleep_for(after);
    ASSERT_EQ(sched_submit(s, &p.b.it), 0);
}

// On one core under pol: a on its submitter's thread, b queued `after` a
// started (SubmitDirect); returns once both ran, s still to be destroyed
// (NULL if it could not be made).
template <class W>
struct sched *RunDirectPair(const struct sched_policy *pol, sched_run_fn run, W &w, Pair &p,
                            std::chrono::milliseconds after)
{
    struct sched *s;
    struct sched_config one = { 1, true };
    if (sched_create(pol, &one, run, &w, &s) != 0)
        return nullptr;
    std::thread t;
    SubmitDirect(s, w, p, t, after);
    t.join();
    sched_drain(s);
    return s;
}

TEST(Preempt, AnyItemIsParkedOnceItsWorkIsDone)
{
    for (const struct sched_policy *pol :
         { &sched_cfs, &sched_cfs_cpu, &sched_drf, &sched_fifo, &sched_rr }) {
        bool parks = pol->preempt != nullptr;
        for (bool done_points : { false, true }) {
            World w;
            w.bound = 200000000;
            w.a_done_points = done_points;
            Pair p;
            p.a.it.preemptible = false;
            struct sched *s;
            struct sched_config one = { 1, true };
            ASSERT_EQ(sched_create(pol, &one, RunPair, &w, &s), 0);
            std::thread t;
            SubmitDirect(s, w, p, t);
            t.join();
            sched_drain(s);
            bool want = parks && done_points;
            EXPECT_EQ(w.b_during_a.load(), want) << pol->name << " done points " << done_points;
            struct sched_stats st;
            sched_get_stats(s, &st);
            EXPECT_EQ(st.preemptions > 0, want) << pol->name << " done points " << done_points;
            EXPECT_EQ(st.direct_runs, 1u) << "a ran on its submitter's thread";
            EXPECT_EQ(TenantOf(s, 1).done, 1u);
            EXPECT_EQ(TenantOf(s, 2).done, 1u);
            sched_destroy(s);
        }
    }
}

// A blocked item holds no core: on one core, the item it waits for runs.
struct BlockWorld {
    std::atomic<bool> waiting{ false }, given{ false };
};

void RunBlock(void *arg, struct sched_item *si, unsigned core)
{
    auto *w = static_cast<BlockWorld *>(arg);
    if (reinterpret_cast<Item *>(si)->id == 1) {
        sched_block(false);
        w->waiting = true;
        uint64_t end = now_ns() + kBound;
        while (!w->given && now_ns() < end)
            std::this_thread::yield();
        sched_unblock();
        return;
    }
    w->given = true;
}

TEST(Preempt, ABlockedItemGivesItsCoreUp)
{
    for (const struct sched_policy *pol : { &sched_fifo, &sched_cfs }) {
        BlockWorld w;
        Pair p;
        struct sched *s;
        struct sched_config one = { 1, false };
        ASSERT_EQ(sched_create(pol, &one, RunBlock, &w, &s), 0);
        ASSERT_EQ(sched_submit(s, &p.a.it), 0);
        while (!w.waiting)
            std::this_thread::yield();
        uint64_t t0 = now_ns();
        ASSERT_EQ(sched_submit(s, &p.b.it), 0);
        sched_drain(s);
        EXPECT_LT(now_ns() - t0, kBound) << pol->name << ": b ran while a waited off its core";
        EXPECT_TRUE(w.given.load());
        struct sched_stats st;
        sched_get_stats(s, &st);
        EXPECT_EQ(st.blocks, 1u) << pol->name;
        EXPECT_EQ(st.completed, 2u) << pol->name;
        sched_destroy(s);
    }
}

// A parked item is charged its time on the core, not the time it waited:
// b holds the core 50 ms while a is parked, and the two charges together
// fit in the time that passed (one core).
TEST(Preempt, AParkedItemIsChargedOnlyItsTimeOnTheCore)
{
    World w;
    w.b_spin_ns = 50000000;
    Pair p;
    struct sched *s;
    struct sched_config one = { 1, false };
    ASSERT_EQ(sched_create(&sched_cfs, &one, RunPair, &w, &s), 0);
    uint64_t t0 = now_ns();
    Start(s, w, p);
    sched_drain(s);
    uint64_t wall = now_ns() - t0;
    ASSERT_TRUE(w.b_during_a.load());
    uint64_t a = TenantOf(s, 1).core_ns, b = TenantOf(s, 2).core_ns;
    EXPECT_GE(b, w.b_spin_ns);
    EXPECT_LE(a + b, wall) << "a " << a << " ns, b " << b << " ns in " << wall << " ns";
    sched_destroy(s);
}

// Worker threads started for parked items do not stay forever: once idle
// for worker_idle_ns, the extra ones exit, down to the cores' own number,
// and parking starts one again when it needs it.
TEST(Preempt, ExtraWorkersExitWhenIdle)
{
    World w;
    struct sched *s;
    struct sched_config one = { 1, false };
    one.worker_idle_ns = 20000000;   // 20 ms
    ASSERT_EQ(sched_create(&sched_cfs, &one, RunPair, &w, &s), 0);
    for (int round = 0; round < 2; round++) {
        w.a_running = w.b_started = w.b_during_a = w.a_done = w.b_done = false;
        Pair p;
        Start(s, w, p);
        sched_drain(s);
        // b ran on a second worker while a's thread was parked (one worker
        // to start with; in round 1, after the extra one had exited)
        ASSERT_TRUE(w.b_during_a.load()) << "round " << round;
        struct sched_stats st;
        sched_get_stats(s, &st);
        uint64_t end = now_ns() + kBound;
        while (st.threads > 1 && now_ns() < end) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            sched_get_stats(s, &st);
        }
        EXPECT_EQ(st.threads, 1u) << "round " << round << ": the extra worker exited once idle";
    }
    sched_destroy(s);
}

// The model's sleep after an item's work (sched_sleep_done): the sleeping
// item is parked for a lighter tenant's item, here one run on its
// submitter's thread that is not preemptible; the other item runs while it
// sleeps, and the sleep returns the core time slept, not the time parked.
// Under fifo nothing parks it: the other item runs after.
struct SleepWorld {
    std::atomic<bool> a_running{ false }, b_done{ false }, b_during_a{ false };
    std::atomic<uint64_t> a_on{ 0 };
    uint64_t sleep_ns = 100000000, b_spin_ns = 50000000;
};

void RunSleep(void *arg, struct sched_item *si, unsigned core)
{
    auto *w = static_cast<SleepWorld *>(arg);
    if (reinterpret_cast<Item *>(si)->id == 1) {
        w->a_running = true;
        w->a_on = sched_sleep_done(w->sleep_ns);
        w->b_during_a = w->b_done.load();
        return;
    }
    uint64_t end = now_ns() + w->b_spin_ns;
    while (now_ns() < end) {
    }
    w->b_done = true;
}

TEST(Preempt, ASleepingItemIsParkedAndSleepsOnlyOnTheCore)
{
    for (const struct sched_policy *pol : { &sched_cfs, &sched_drf, &sched_fifo }) {
        SleepWorld w;
        Pair p;
        p.a.it.preemptible = false;
        struct sched *s = RunDirectPair(pol, RunSleep, w, p, std::chrono::milliseconds(2));
        ASSERT_NE(s, nullptr);   // b came past a's sleep slice
        bool parks = pol->preempt != nullptr;
        EXPECT_EQ(w.b_during_a.load(), parks) << pol->name;
        EXPECT_GE(w.a_on.load(), w.sleep_ns) << pol->name;
        if (parks) {
            EXPECT_GE(TenantOf(s, 1).preempted, 1u) << pol->name;
            EXPECT_GE(TenantOf(s, 2).core_ns, w.b_spin_ns) << pol->name;
        }
        sched_destroy(s);
    }
}

// A parked item competes with the running one, not only with queued ones:
// on one core, a's command (tenant 1) sleeps its model time and is parked
// for b (tenant 2, new: it starts below tenant 1's virtual time), a long
// preemptible item; once b has used more core time than tenant 1, b's
// next preemption point hands the core back to the parked a, which
// finishes its sleep while b is still unfinished. Were parked items no
// candidates at a point, a would wait for b's end (its bound, 3 s).
struct BackWorld {
    std::atomic<bool> a_running{ false }, a_done{ false }, b_running{ false };
    std::atomic<bool> a_before_b{ false };
    uint64_t sleep_ns = 30000000;
};

void RunBack(void *arg, struct sched_item *si, unsigned core)
{
    auto *w = static_cast<BackWorld *>(arg);
    if (reinterpret_cast<Item *>(si)->id == 1) {
        w->a_running = true;
        sched_sleep_done(w->sleep_ns);
        w->a_done = true;
        return;
    }
    w->b_running = true;
    uint64_t end = now_ns() + kBound;
    while (!w->a_done && now_ns() < end)
        sched_preempt_point();
    w->a_before_b = w->a_done.load();
}

TEST(Preempt, AParkedLighterItemTakesTheCoreBackFromARunningOne)
{
    for (const struct sched_policy *pol : { &sched_cfs, &sched_drf }) {
        BackWorld w;
        Pair p;
        p.a.it.preemptible = false;   // parked only in its sleep
        p.b.it.preemptible = true;
        struct sched *s = RunDirectPair(pol, RunBack, w, p, std::chrono::milliseconds(3));
        ASSERT_NE(s, nullptr);   // b came past a's sleep slice
        EXPECT_TRUE(w.b_running.load()) << pol->name << ": b ran while a was parked";
        EXPECT_TRUE(w.a_before_b.load()) << pol->name << ": a finished before b";
        EXPECT_GE(TenantOf(s, 1).preempted, 1u) << pol->name << ": a was parked for b";
        EXPECT_GE(TenantOf(s, 2).preempted, 1u) << pol->name << ": b was parked for a";
        sched_destroy(s);
    }
}
