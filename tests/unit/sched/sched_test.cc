// tests/unit/sched/sched_test.cc - device cores and the FIFO policy.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "device/sched/sched_int.h"

#include <errno.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

struct Item {
    struct sched_item it;
    int id;
    std::atomic<int> runs{ 0 };
};

struct Log {
    std::atomic<int> total{ 0 };
    std::vector<int> order;   // only with one core
};

void RunItem(void *arg, struct sched_item *it, unsigned core)
{
    auto *log = static_cast<Log *>(arg);
    auto *item = reinterpret_cast<Item *>(it);
    item->runs++;
    log->order.push_back(item->id);
    log->total++;
}

void RunItemMt(void *arg, struct sched_item *it, unsigned core)
{
    reinterpret_cast<Item *>(it)->runs++;
    static_cast<Log *>(arg)->total++;
}

}  // namespace

TEST(Sched, PolicyLookup)
{
    EXPECT_EQ(sched_policy_find("fifo"), &sched_fifo);
    EXPECT_EQ(sched_policy_find("cfs-not-yet"), nullptr);
    EXPECT_EQ(sched_policy_find("drf"), &sched_drf);
    struct sched *s;
    Log log;
    struct sched_config none = { 0, false }, many = { SCHED_MAX_CORES + 1, false };
    EXPECT_EQ(sched_create(&sched_fifo, &none, RunItem, &log, &s), -EINVAL);
    EXPECT_EQ(sched_create(&sched_fifo, &many, RunItem, &log, &s), -EINVAL);
}

TEST(Sched, OneCoreRunsInSubmissionOrder)
{
    Log log;
    struct sched *s;
    struct sched_config one = { 1, false };
    ASSERT_EQ(sched_create(&sched_fifo, &one, RunItem, &log, &s), 0);
    std::vector<Item> items(200);
    for (int i = 0; i < 200; i++) {
        items[i].id = i;
        ASSERT_EQ(sched_submit(s, &items[i].it), 0);
    }
    sched_destroy(s);   // drains: every queued item still runs
    ASSERT_EQ(log.order.size(), 200u);
    for (int i = 0; i < 200; i++)
        EXPECT_EQ(log.order[i], i);
}

TEST(Sched, ManyCoresRunEachItemExactlyOnce)
{
    Log log;
    struct sched *s;
    struct sched_config four = { 4, false };
    ASSERT_EQ(sched_create(&sched_fifo, &four, RunItemMt, &log, &s), 0);
    std::vector<Item> items(5000);
    for (auto &it : items)
        ASSERT_EQ(sched_submit(s, &it.it), 0);
    struct sched_stats st;
    sched_get_stats(s, &st);
    EXPECT_EQ(st.cores, 4u);
    EXPECT_STREQ(st.policy, "fifo");
    EXPECT_EQ(st.submitted, 5000u);
    sched_destroy(s);
    EXPECT_EQ(log.total.load(), 5000);
    for (auto &it : items)
        EXPECT_EQ(it.runs.load(), 1);
}

namespace {

struct Conc {
    std::atomic<int> running{ 0 }, max{ 0 }, total{ 0 };
    std::atomic<int> slot_users[SCHED_MAX_CORES] = {};
    std::atomic<bool> clash{ false };
};

void RunConc(void *arg, struct sched_item *it, unsigned slot)
{
    auto *c = static_cast<Conc *>(arg);
    if (c->slot_users[slot]++ != 0)
        c->clash = true;   // two items in one slot at once
    int now = ++c->running;
    int m = c->max;
    while (now > m && !c->max.compare_exchange_weak(m, now))
        ;
    for (volatile int i = 0; i < 2000; i++)
        ;
    c->running--;
    c->slot_users[slot]--;
    c->total++;
    delete reinterpret_cast<Item *>(it);
}

}  // namespace

TEST(Sched, DirectDispatchRunsOnSubmitterWithinCoreLimit)
{
    Conc c;
    struct sched *s;
    struct sched_config cfg = { 2, true };
    ASSERT_EQ(sched_create(&sched_fifo, &cfg, RunConc, &c, &s), 0);
    // idle device: the submitter runs the item before sched_submit returns
    ASSERT_EQ(sched_submit(s, &(new Item())->it), 0);
    EXPECT_EQ(c.total.load(), 1);
    // many submitters: never more than 2 at once, never two in one slot
    std::vector<std::thread> ts;
    for (int t = 0; t < 6; t++)
        ts.emplace_back([&] {
            for (int i = 0; i < 2000; i++)
                ASSERT_EQ(sched_submit(s, &(new Item())->it), 0);
        });
    for (auto &t : ts)
        t.join();
    sched_drain(s);
    struct sched_stats st;
    sched_get_stats(s, &st);
    EXPECT_TRUE(st.direct);
    EXPECT_GT(st.direct_runs, 0u);
    EXPECT_EQ(st.completed, 12001u);
    sched_destroy(s);
    EXPECT_EQ(c.total.load(), 12001);
    EXPECT_LE(c.max.load(), 2);
    EXPECT_FALSE(c.clash.load());
}

namespace {

struct TItem {
    struct sched_item it;
    int id;
};

struct TLog {
    std::vector<uint32_t> tenants;   // one core: runs are serial
    std::atomic<int> total{ 0 };
};

void RunTagged(void *arg, struct sched_item *it, unsigned core)
{
    auto *log = static_cast<TLog *>(arg);
    log->tenants.push_back(it->tenant);
    for (volatile int i = 0; i < 20000; i++)
        ;
    log->total++;
}

bool AllMine(void *, const struct sched_item *)
{
    return true;
}

}  // namespace

TEST(Sched, BatchRunsInThePolicysOrderNotFetchOrder)
{
    TLog log;
    struct sched *s;
    struct sched_config one = { 1, true };
    ASSERT_EQ(sched_create(&sched_cfs, &one, RunTagged, &log, &s), 0);
    // a poller fetched ten commands of tenant 1, then one of tenant 2
    std::vector<TItem> items(11);
    std::vector<struct sched_item *> ptr;
    for (int i = 0; i < 11; i++) {
        items[i].it.tenant = i < 10 ? 1 : 2;
        items[i].it.queue = i < 10 ? 1 : 2;
        ptr.push_back(&items[i].it);
    }
    int err[11];
    sched_submit_batch(s, ptr.data(), 11, err, AllMine, nullptr);
    sched_drain(s);
    for (int e : err)
        EXPECT_EQ(e, 0);
    ASSERT_EQ(log.tenants.size(), 11u);
    // tenant 2 does not wait behind all of tenant 1's: it goes second
    EXPECT_EQ(log.tenants[1], 2u);
    struct sched_tenant_stats ts[4];
    ASSERT_EQ(sched_tenant_stats(s, ts, 4), 2u);
    for (auto &t : ts)
        if (t.id == 1) {
            EXPECT_EQ(t.done, 10u);
            EXPECT_GT(t.core_ns, 0u);
        }
    sched_destroy(s);
}

// Queue dispatch (cisc up --dispatch queue) means what it says for a
// poller's batch too: every item runs on a core thread, none on the
// submitter, though mine() would take them all; with direct dispatch the
// submitter runs them (the poller's shortcut).
void RunNoteThread(void *arg, struct sched_item *it, unsigned core)
{
    auto *on = static_cast<std::vector<std::thread::id> *>(arg);
    on->push_back(std::this_thread::get_id());   // one core: no race
}

TEST(Sched, QueueDispatchRunsNoBatchItemOnTheSubmitter)
{
    for (bool direct : { false, true }) {
        std::vector<std::thread::id> on;
        struct sched *s;
        struct sched_config one = { 1, direct };
        ASSERT_EQ(sched_create(&sched_cfs, &one, RunNoteThread, &on, &s), 0);
        std::vector<TItem> items(4);
        std::vector<struct sched_item *> ptr;
        for (auto &i : items) {
            i.it.tenant = 1;
            i.it.queue = 1;
            ptr.push_back(&i.it);
        }
        int err[4];
        sched_submit_batch(s, ptr.data(), 4, err, AllMine, nullptr);
        sched_drain(s);
        ASSERT_EQ(on.size(), 4u);
        size_t mine = 0;
        for (auto id : on)
            mine += id == std::this_thread::get_id();
        struct sched_stats st;
        sched_get_stats(s, &st);
        if (direct) {
            EXPECT_GT(mine, 0u) << "direct dispatch: the submitter takes the shortcut";
        } else {
            EXPECT_EQ(mine, 0u) << "queue dispatch: only core threads run items";
            EXPECT_EQ(st.direct_runs, 0u);
        }
        sched_destroy(s);
    }
}

TEST(Sched, QueueCapPerTenant)
{
    TLog log;
    struct sched *s;
    struct sched_config cfg = { 1, false, 0, 2 };
    ASSERT_EQ(sched_create(&sched_cfs, &cfg, RunTagged, &log, &s), 0);
    EXPECT_EQ(sched_queue_open(s, 7), 0);
    EXPECT_EQ(sched_queue_open(s, 7), 0);
    EXPECT_EQ(sched_queue_open(s, 7), -EDQUOT);
    EXPECT_EQ(sched_queue_open(s, 8), 0);   // another tenant has its own cap
    sched_queue_close(s, 7);
    EXPECT_EQ(sched_queue_open(s, 7), 0);
    EXPECT_EQ(sched_tenant_weight(s, 7, 0), -EINVAL);
    EXPECT_EQ(sched_tenant_weight(s, 7, SCHED_WEIGHT_MAX + 1), -EINVAL);
    EXPECT_EQ(sched_tenant_weight(s, 7, 500), 0);
    struct sched_tenant_stats ts[4];
    unsigned n = sched_tenant_stats(s, ts, 4);
    ASSERT_EQ(n, 2u);
    for (unsigned i = 0; i < n; i++)
        if (ts[i].id == 7) {
            EXPECT_EQ(ts[i].queues, 2u);
            EXPECT_EQ(ts[i].weight, 500u);
        }
    sched_destroy(s);
}

namespace {

// Items of two tenants; A blocks on its core until released.
struct MemWorld {
    std::atomic<bool> release{ false }, a_running{ false }, b_started{ false },
        c_done{ false }, b_after_c{ false }, b_after_a{ false };
    std::atomic<bool> a_done{ false };
    Item a, b, c;
};

void RunMem(void *arg, struct sched_item *it, unsigned core)
{
    auto *w = static_cast<MemWorld *>(arg);
    if (it == &w->a.it) {
        w->a_running = true;
        while (!w->release)
            std::this_thread::yield();
        w->a_done = true;
    } else if (it == &w->b.it) {
        w->b_after_c = w->c_done.load();
        w->b_after_a = w->a_done.load();
        w->b_started = true;
    } else {
        w->c_done = true;
    }
}

}  // namespace

// A command whose memory does not fit beside the running ones waits in its
// queue, not on a core: the free core runs another tenant's small command
// meanwhile (cfs: the tenant holding the least memory), and the big one
// starts once the running one has freed its memory.
TEST(Sched, MemoryThatDoesNotFitWaitsInTheQueueNotOnACore)
{
    MemWorld w;
    struct sched *s;
    struct sched_config cfg = { 2, false, 100, 0 };
    ASSERT_EQ(sched_create(&sched_cfs, &cfg, RunMem, &w, &s), 0);
    w.a.it = { .tenant = 1, .queue = 1, .mem = 60 };
    w.b.it = { .tenant = 1, .queue = 1, .mem = 60 };
    w.c.it = { .tenant = 2, .queue = 1, .mem = 0 };
    ASSERT_EQ(sched_submit(s, &w.a.it), 0);
    while (!w.a_running)
        std::this_thread::yield();
    ASSERT_EQ(sched_submit(s, &w.b.it), 0);   // 60 + 60 > 100: waits queued
    ASSERT_EQ(sched_submit(s, &w.c.it), 0);
    while (!w.c_done)
        std::this_thread::yield();   // ran on the core b did not take
    EXPECT_FALSE(w.b_started.load()) << "b started before a freed its memory";
    w.release = true;
    sched_drain(s);
    EXPECT_TRUE(w.b_started.load());
    EXPECT_TRUE(w.b_after_c.load());
    EXPECT_TRUE(w.b_after_a.load()) << "b ran beside a: 120 > 100";
    sched_destroy(s);
}

// drf admits like Ghodsi et al.'s progressive filling: the least dominant
// share's command that does not fit in memory waits in its queue (not on
// a core, to take one back ahead of everyone once memory frees), and only
// once it fits does it start. cfs-cpu, the memory-blind baseline, starts
// it at once (its wait for memory is the engine's).
TEST(Sched, DrfStartsNothingThatDoesNotFitInMemory)
{
    for (const struct sched_policy *pol : { &sched_drf, &sched_cfs_cpu }) {
        MemWorld w;
        struct sched *s;
        struct sched_config cfg = { 2, false, 100, 0 };
        ASSERT_EQ(sched_create(pol, &cfg, RunMem, &w, &s), 0);
        w.a.it = { .tenant = 1, .queue = 1, .mem = 60 };
        w.b.it = { .tenant = 1, .queue = 1, .mem = 60 };
        ASSERT_EQ(sched_submit(s, &w.a.it), 0);
        while (!w.a_running)
            std::this_thread::yield();
        ASSERT_EQ(sched_submit(s, &w.b.it), 0);   // 60 + 60 > 100
        uint64_t end = now_ns() + 20000000;        // 20 ms: a core is free all along
        while (!w.b_started && now_ns() < end)
            std::this_thread::yield();
        bool admits = pol == &sched_drf;
        EXPECT_EQ(w.b_started.load(), !admits) << pol->name;
        w.release = true;
        sched_drain(s);
        EXPECT_TRUE(w.b_started.load()) << pol->name;
        if (admits) {
            EXPECT_TRUE(w.b_after_a.load()) << "b started once a had freed its memory";
        }
        sched_destroy(s);
    }
}

// cfs-cpu is blind to memory: a command that waits for device memory
// keeps its core meanwhile (the core stalls, FusionFS's CFScpu), while
// another core stays free of such waiters; on one core, or under a policy
// that knows memory, it gives the core up (sched_block) and is counted as
// blocked.
struct HoldWorld {
    struct sched *s = nullptr;
    std::atomic<bool> waiting{ false }, release{ false };
};

void RunHold(void *arg, struct sched_item *it, unsigned core)
{
    auto *w = static_cast<HoldWorld *>(arg);
    sched_mem_wait(w->s, +1);
    w->waiting = true;
    while (!w->release)
        std::this_thread::yield();
    sched_mem_wait(w->s, -1);
}

TEST(Sched, AMemoryBlindPolicyStallsACoreOnMemory)
{
    struct Case {
        const struct sched_policy *pol;
        unsigned cores;
        bool holds;
    } cases[] = { { &sched_cfs_cpu, 2, true }, { &sched_cfs_cpu, 1, false },
                  { &sched_cfs, 2, false }, { &sched_drf, 2, false } };
    for (const Case &k : cases) {
        HoldWorld w;
        struct sched_config cfg = { k.cores, false };
        ASSERT_EQ(sched_create(k.pol, &cfg, RunHold, &w, &w.s), 0);
        Item a{};
        a.it.tenant = 1;
        a.it.queue = 1;
        ASSERT_EQ(sched_submit(w.s, &a.it), 0);
        while (!w.waiting)
            std::this_thread::yield();
        struct sched_stats st;
        sched_get_stats(w.s, &st);
        EXPECT_EQ(st.busy, k.holds ? 1u : 0u) << k.pol->name << " on " << k.cores;
        EXPECT_EQ(st.blocks, k.holds ? 0u : 1u) << k.pol->name << " on " << k.cores;
        w.release = true;
        sched_drain(w.s);
        sched_destroy(w.s);
    }
}
