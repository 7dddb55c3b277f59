// tests/unit/sched/policy_test.cc - each policy's choice, driven directly with
// a fake clock and fake charges: least virtual time first, new tenants and
// queues at the minimum, weights, the memory key, DRF's dominant shares,
// queue caps, round robin; and the heap under them.
#include <gtest/gtest.h>

#include "device/sched/heap.h"
#include "device/sched/sched_int.h"

#include <errno.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <vector>

namespace {

struct Item {
    struct sched_item it = {};
    int id = 0;
};

// Accounts + one policy, stepped by hand the way sched.c drives them.
class Harness {
public:
    explicit Harness(const struct sched_policy *p, unsigned cores = 1,
                     uint64_t budget = 1ull << 30, uint64_t wake_credit = 0)
        : pol_(p)
    {
        sched_acct_init(&a_, cores, budget);
        struct sched_env env = { cores, budget, wake_credit };
        q_ = pol_->create(&env);
        sched_acct_bind(&a_, pol_, q_);
    }
    ~Harness()
    {
        pol_->destroy(q_);
        sched_acct_free(&a_);
    }

    Item *Push(uint32_t tenant, uint32_t queue, uint64_t mem = 0)
    {
        items_.emplace_back();
        Item *x = &items_.back();
        x->id = (int)items_.size() - 1;
        x->it.tenant = tenant;
        x->it.queue = queue;
        x->it.mem = mem;
        x->it.t_submit_ns = clock_;
        EXPECT_EQ(sched_acct_resolve(&a_, &x->it), 0);
        EXPECT_EQ(pol_->push(q_, &x->it), 0);
        sched_acct_queued(&a_, &x->it);
        depth_++;
        Check();
        return x;
    }

    void PushMany(uint32_t tenant, uint32_t queue, int n, uint64_t mem = 0)
    {
        for (int i = 0; i < n; i++)
            Push(tenant, queue, mem);
    }

    // Pops the policy's choice and starts it; nullptr when empty.
    Item *Pop(bool mem_tight = false)
    {
        struct sched_item *it = pol_->pop(q_, mem_tight);
        if (!it)
            return nullptr;
        depth_--;
        sched_acct_start(&a_, it, true, clock_);
        if (pol_->start)
            pol_->start(q_, it);
        Check();
        return reinterpret_cast<Item *>(it);
    }

    // A direct run: never queued, started and charged.
    void Direct(uint32_t tenant, uint32_t queue, uint64_t ns)
    {
        items_.emplace_back();
        Item *x = &items_.back();
        x->it.tenant = tenant;
        x->it.queue = queue;
        ASSERT_EQ(sched_acct_resolve(&a_, &x->it), 0);
        sched_acct_start(&a_, &x->it, false, clock_);
        if (pol_->start)
            pol_->start(q_, &x->it);
        Finish(x, ns);
    }

    void Finish(Item *x, uint64_t ns)
    {
        clock_ += ns;
        sched_acct_finish(&a_, &x->it, ns, clock_ - x->it.t_submit_ns);
        pol_->charge(q_, &x->it, ns);
        sched_acct_settled(&a_, x->it.sq);
        Check();
    }

    // Pops, runs for cost(tenant) ns, finishes; returns the tenant.
    template <class Cost> uint32_t Step(Cost cost, bool mem_tight = false)
    {
        Item *x = Pop(mem_tight);
        EXPECT_NE(x, nullptr);
        if (!x)
            return UINT32_MAX;
        uint32_t t = x->it.tenant;
        Finish(x, cost(x));
        return t;
    }

    struct sched_tenant *Tenant(uint32_t id) { return sched_acct_find(&a_, id); }
    struct sched_accts *accts() { return &a_; }
    void Weight(uint32_t id, uint32_t w)
    {
        struct sched_tenant *t = sched_acct_tenant(&a_, id);
        ASSERT_NE(t, nullptr);
        t->weight = w;
        sched_acct_idle_check(&a_, t);
    }
    uint64_t depth() const { return depth_; }

private:
    void Check()
    {
        if (pol_->check) {
            EXPECT_TRUE(pol_->check(q_, depth_));
        }
        EXPECT_TRUE(sched_acct_check(&a_, 1000));
    }

    const struct sched_policy *pol_;
    void *q_;
    struct sched_accts a_;
    std::deque<Item> items_;   // stable addresses
    uint64_t clock_ = 0, depth_ = 0;
};

uint64_t Flat(Item *) { return 1000; }

}  // namespace

TEST(Heap, MatchesASortedReference)
{
    std::mt19937 rng(7);
    std::vector<struct heap_node> nodes(200);
    struct heap h = {};
    for (auto &n : nodes)
        heap_node_init(&n);
    for (int round = 0; round < 5000; round++) {
        auto &n = nodes[rng() % nodes.size()];
        switch (rng() % 3) {
        case 0:
            if (!heap_has(&n)) {
                n.key = rng() % 50;
                n.seq = round;
                ASSERT_EQ(heap_insert(&h, &n), 0);
            }
            break;
        case 1:
            if (heap_has(&n))
                heap_remove(&h, &n);
            break;
        default:
            if (heap_has(&n)) {
                n.key = rng() % 50;
                heap_fix(&h, &n);
            }
        }
        ASSERT_TRUE(heap_check(&h, UINT32_MAX));
        if (h.n) {
            auto least = std::min_element(h.node, h.node + h.n, [](auto *a, auto *b) {
                return a->key < b->key || (a->key == b->key && a->seq < b->seq);
            });
            ASSERT_EQ(*least, heap_min(&h));
        }
    }
    heap_free(&h);
}

TEST(PolicyFind, KnowsEveryName)
{
    for (const char *n : { "fifo", "rr", "cfs", "cfs-cpu", "drf" })
        EXPECT_STREQ(sched_policy_find(n)->name, n);
    EXPECT_EQ(sched_policy_find("cfs "), nullptr);
    EXPECT_EQ(sched_policy_find(""), nullptr);
    EXPECT_STREQ(sched_policy_names, "fifo|rr|cfs|cfs-cpu|drf");
}

TEST(RoundRobin, OneItemPerQueueInTurn)
{
    Harness h(&sched_rr);
    h.PushMany(1, 1, 3);
    h.PushMany(1, 2, 3);
    h.PushMany(2, 3, 1);
    std::vector<uint32_t> order;
    while (Item *x = h.Pop()) {
        order.push_back(x->it.queue);
        h.Finish(x, 1000);
    }
    EXPECT_EQ(order, (std::vector<uint32_t>{ 1, 2, 3, 1, 2, 1, 2 }));
    // a queue that comes back joins behind those waiting
    h.PushMany(1, 1, 2);
    h.PushMany(1, 2, 1);
    h.PushMany(1, 1, 0);
    Item *x = h.Pop();
    EXPECT_EQ(x->it.queue, 1u);
    h.Finish(x, 1);
    h.Push(2, 9);
    order.clear();
    while ((x = h.Pop()) != nullptr) {
        order.push_back(x->it.queue);
        h.Finish(x, 1);
    }
    EXPECT_EQ(order, (std::vector<uint32_t>{ 2, 1, 9 }));
}

TEST(Cfs, LeastVirtualTimeFirst)
{
    Harness h(&sched_cfs);
    h.PushMany(1, 1, 200);
    h.PushMany(2, 1, 200);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 120; i++) {
        // the choice is always the tenant with the least virtual time
        uint64_t v1 = h.Tenant(1)->vt, v2 = h.Tenant(2)->vt;
        uint32_t t = h.Step([](Item *x) { return x->it.tenant == 1 ? 3000u : 1000u; });
        EXPECT_TRUE(t == 1 ? v1 <= v2 : v2 <= v1) << i;
        n[t]++;
    }
    // tenant 1's items cost three times as much: it gets a quarter of the picks
    EXPECT_EQ(n[1], 30);
    EXPECT_EQ(n[2], 90);
    EXPECT_NEAR((double)h.Tenant(1)->core_ns, (double)h.Tenant(2)->core_ns, 3000);
}

TEST(Cfs, EqualTenantsTakeTurns)
{
    Harness h(&sched_cfs_cpu);
    for (uint32_t t = 1; t <= 3; t++)
        h.PushMany(t, 0, 4);
    std::vector<uint32_t> order;
    for (int i = 0; i < 12; i++)
        order.push_back(h.Step(Flat));
    EXPECT_EQ(order, (std::vector<uint32_t>{ 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3 }));
}

TEST(Cfs, NewTenantStartsAtTheMinimum)
{
    Harness h(&sched_cfs);
    h.PushMany(1, 1, 300);
    for (int i = 0; i < 100; i++)
        EXPECT_EQ(h.Step(Flat), 1u);
    // tenant 2 was idle all along: it saved up no credit, so it does not
    // get the next 100 picks; the two share from here on
    h.PushMany(2, 1, 100);
    EXPECT_GE(h.Tenant(2)->vt + 2000, h.Tenant(1)->vt);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 40; i++)
        n[h.Step(Flat)]++;
    EXPECT_NEAR(n[1], 20, 1);
    EXPECT_NEAR(n[2], 20, 1);
}

// A tenant that becomes live while another's long item has only begun
// starts level with what that tenant really used, not with its item's
// pre-charge (the estimate it has not used yet): so it can preempt that
// item after one slice instead of after the whole estimate.
TEST(Cfs, ANewcomerStartsBelowARunningItemsPreCharge)
{
    for (const struct sched_policy *pol : { &sched_cfs, &sched_cfs_cpu, &sched_drf }) {
        Harness h(pol);
        h.PushMany(1, 1, 20);
        for (int i = 0; i < 10; i++)
            h.Step([](Item *) { return uint64_t{ 5000000 }; });   // 5 ms items: est 5 ms
        uint64_t used = h.Tenant(1)->vt;
        Item *x = h.Pop();   // tenant 1's next item starts: pre-charged
        ASSERT_NE(x, nullptr);
        EXPECT_GT(h.Tenant(1)->vt, used + 1000000) << pol->name;
        h.Push(2, 1);
        EXPECT_LE(h.Tenant(2)->vt, used) << pol->name << ": level with what tenant 1 used";
        EXPECT_GE(h.Tenant(2)->vt, used - 5000000) << pol->name << ": no credit either";
        h.Finish(x, 5000000);
    }
}

// With a wake credit, a tenant becoming live starts that much below the
// floor (scaled by its weight), never more: a light tenant that sleeps
// between commands gets ahead of a busy one by the credit only.
TEST(Cfs, AWakingTenantStartsItsCreditBelowTheFloor)
{
    for (const struct sched_policy *pol : { &sched_cfs, &sched_drf }) {
        Harness h(pol, 1, 1ull << 30, 3000);
        h.PushMany(1, 1, 300);
        for (int i = 0; i < 100; i++)
            h.Step(Flat);
        uint64_t busy = h.Tenant(1)->vt;
        h.Push(2, 1);
        EXPECT_EQ(h.Tenant(2)->vt, busy - 3000) << pol->name;
        std::map<uint32_t, int> n;
        for (int i = 0; i < 5; i++)
            n[h.Step(Flat)]++;
        EXPECT_EQ(n[2], 1) << pol->name << ": its one item first";
        h.Push(2, 1);   // live again at once: its own vt, no new credit
        EXPECT_GE(h.Tenant(2)->vt, busy - 3000 + 1000) << pol->name;
    }
}

TEST(Cfs, DirectRunsMoveTheMinimumToo)
{
    Harness h(&sched_cfs);
    for (int i = 0; i < 100; i++)
        h.Direct(1, 1, 1000);   // never queued: a poller or FUSE thread ran them
    h.PushMany(1, 1, 50);
    h.PushMany(2, 1, 50);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 40; i++)
        n[h.Step(Flat)]++;
    EXPECT_NEAR(n[1], 20, 1);
    EXPECT_NEAR(n[2], 20, 1);
}

TEST(Cfs, NewQueueStartsAtItsTenantsMinimum)
{
    Harness h(&sched_cfs);
    h.PushMany(1, 1, 200);
    for (int i = 0; i < 50; i++)
        h.Step(Flat);
    h.PushMany(1, 2, 100);
    std::map<uint32_t, int> q;
    for (int i = 0; i < 20; i++) {
        Item *x = h.Pop();
        q[x->it.queue]++;
        h.Finish(x, 1000);
    }
    EXPECT_NEAR(q[1], 10, 1);
    EXPECT_NEAR(q[2], 10, 1);
}

TEST(Cfs, MoreQueuesBuyNoShare)
{
    Harness h(&sched_cfs);
    for (uint32_t q = 1; q <= 10; q++)
        h.PushMany(1, q, 20);
    h.PushMany(2, 1, 200);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 100; i++)
        n[h.Step(Flat)]++;
    EXPECT_EQ(n[1], 50);
    EXPECT_EQ(n[2], 50);
}

TEST(Cfs, WeightsDivideTheCores)
{
    Harness h(&sched_cfs);
    h.Weight(1, 2 * SCHED_WEIGHT_DEFAULT);
    h.PushMany(1, 1, 200);
    h.PushMany(2, 1, 200);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 90; i++)
        n[h.Step(Flat)]++;
    EXPECT_NEAR(n[1], 60, 1);
    EXPECT_NEAR(n[2], 30, 1);
}

TEST(Cfs, MemoryKeyServesTheTenantHoldingLeast)
{
    const uint64_t gib = 1ull << 30;
    for (const struct sched_policy *p : { &sched_cfs, &sched_cfs_cpu }) {
        Harness h(p, 2, gib);
        h.Push(2, 1, 4096);
        Item *first = h.Pop();
        h.PushMany(1, 1, 3, gib / 2);   // memory-hungry, waiting meanwhile
        h.Finish(first, 50000);   // tenant 2 is well ahead in virtual time
        ASSERT_EQ(h.Pop()->it.tenant, 1u);   // runs on, holding half the budget
        h.PushMany(2, 1, 2, 4096);
        EXPECT_EQ(h.Pop(false)->it.tenant, 1u) << p->name;   // least virtual time
        EXPECT_EQ(h.Tenant(1)->mem_use, gib);
        // memory tight: cfs serves the tenant holding the least memory
        EXPECT_EQ(h.Pop(true)->it.tenant, p == &sched_cfs ? 2u : 1u) << p->name;
    }
}

TEST(Drf, EqualisesDominantShares)
{
    const uint64_t budget = 1ull << 30;
    Harness h(&sched_drf, 4, budget);
    // tenant 1 holds half the memory per item: with 4 cores its dominant
    // share is memory, 2x its core share; tenant 2 uses cores only
    h.PushMany(1, 1, 200, budget / 2);
    h.PushMany(2, 1, 200, 0);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 90; i++)
        n[h.Step(Flat)]++;
    EXPECT_NEAR(n[1], 30, 1);
    EXPECT_NEAR(n[2], 60, 1);
    // cfs-cpu would split the picks evenly
    Harness c(&sched_cfs_cpu, 4, budget);
    c.PushMany(1, 1, 200, budget / 2);
    c.PushMany(2, 1, 200, 0);
    n.clear();
    for (int i = 0; i < 90; i++)
        n[c.Step(Flat)]++;
    EXPECT_NEAR(n[1], 45, 1);
}

TEST(Drf, SmallMemoryCostsLikeCoreTime)
{
    Harness h(&sched_drf, 2, 1ull << 30);
    h.PushMany(1, 1, 100, 1 << 20);   // 1 MiB of 1 GiB: core time dominates
    h.PushMany(2, 1, 100, 0);
    std::map<uint32_t, int> n;
    for (int i = 0; i < 60; i++)
        n[h.Step(Flat)]++;
    EXPECT_NEAR(n[1], 30, 1);
}

TEST(Accounts, ChargeWhatRanAndTrackMemory)
{
    Harness h(&sched_fifo);
    h.Push(5, 1, 100);
    h.Push(5, 2, 300);
    Item *a = h.Pop(), *b = h.Pop();
    EXPECT_EQ(h.Tenant(5)->mem_use, 400u);
    EXPECT_EQ(h.Tenant(5)->running, 2u);
    h.Finish(a, 700);
    h.Finish(b, 300);
    EXPECT_EQ(h.Tenant(5)->mem_use, 0u);
    EXPECT_EQ(h.Tenant(5)->mem_peak, 400u);
    EXPECT_EQ(h.Tenant(5)->core_ns, 1000u);
    EXPECT_EQ(h.Tenant(5)->done, 2u);
    EXPECT_EQ(h.Tenant(5)->queued, 0u);
    EXPECT_EQ(h.Tenant(5)->nqueues, 2u);
}

// A storm of short-lived tenants (pids) each on a queue pair of its own
// (queue ids are never reused): the accounts of the idle ones are
// recycled, so the tables stay near their keep sizes under every policy.
TEST(Recycle, AStormOfShortLivedTenantsKeepsTheTablesSmall)
{
    for (const struct sched_policy *p : { &sched_fifo, &sched_rr, &sched_cfs, &sched_drf }) {
        Harness h(p);
        for (uint32_t i = 0; i < 3000; i++) {
            h.Push(1000 + i, 1 + i);
            h.Step(Flat);
        }
        const struct sched_accts *a = h.accts();
        // a tenant goes once its queue accounts have gone
        EXPECT_LE(a->queues.n, SCHED_KEEP_QUEUES + 1) << p->name;
        EXPECT_LE(a->tenants.n, SCHED_KEEP_QUEUES + SCHED_KEEP_TENANTS) << p->name;
        EXPECT_GE(a->freed_tenants, 3000u - SCHED_KEEP_QUEUES - SCHED_KEEP_TENANTS) << p->name;
        // every account left is reachable (deletion keeps the probe chains)
        size_t found = 0;
        for (uint32_t i = 0; i < 3000; i++) {
            const struct sched_tenant *t = h.Tenant(1000 + i);
            if (t) {
                EXPECT_EQ(t->id, 1000 + i);
                found++;
            }
        }
        EXPECT_EQ(found, a->tenants.n) << p->name;
        // the most recent ones are still shown, and a freed one comes back
        // as a fresh account
        ASSERT_NE(h.Tenant(1000 + 2999), nullptr) << p->name;
        EXPECT_EQ(h.Tenant(1000 + 2999)->done, 1u);
        EXPECT_EQ(h.Tenant(1000), nullptr) << p->name;
        h.Push(1000, 1);
        h.Step(Flat);
        ASSERT_NE(h.Tenant(1000), nullptr);
        EXPECT_EQ(h.Tenant(1000)->done, 1u);
    }
}

// An idle tenant that ran ahead of the others keeps its debt: cfs frees
// its account only once the others' virtual time has passed it, so going
// idle (or being recycled) never buys it credit.
TEST(Recycle, ADebtIsNotForgotten)
{
    Harness h(&sched_cfs);
    h.PushMany(2, 1, 2000);   // tenant 2 stays busy throughout
    h.Push(1, 1);
    Item *x;
    while ((x = h.Pop())->it.tenant != 1)
        h.Finish(x, 1000);
    h.Finish(x, 500000);   // tenant 1 ran far ahead, then idles
    uint32_t next = 1000;
    auto storm = [&](int n) {
        for (int i = 0; i < n; i++) {
            h.Push(next++, 1);
            h.Step(Flat);
            h.Step(Flat);
        }
    };
    storm(200);
    ASSERT_LT(h.Tenant(2)->vt, 500000u);
    ASSERT_NE(h.Tenant(1), nullptr) << "freed while others were behind it";
    EXPECT_GE(h.Tenant(1)->vt, 500000u);
    EXPECT_GT(h.accts()->freed_tenants, 50u) << "the others were recycled meanwhile";
    storm(500);
    ASSERT_GT(h.Tenant(2)->vt, 500000u);
    EXPECT_EQ(h.Tenant(1), nullptr) << "no debt left: recycled";
}

// Latencies land in the tenant's and the queue's histograms.
TEST(Accounts, LatencyHistogramPerTenantAndQueue)
{
    Harness h(&sched_fifo);
    for (int i = 0; i < 100; i++) {
        h.Push(7, 3);
        h.Step([i](Item *) { return i < 90 ? 10000 : 1000000; });
    }
    const struct sched_tenant *t = h.Tenant(7);
    ASSERT_NE(t, nullptr);
    uint64_t p50 = hist_quantile(t->lat.n, 0.5), p99 = hist_quantile(t->lat.n, 0.99);
    EXPECT_NEAR((double)p50, 10000, 1250);
    EXPECT_NEAR((double)p99, 1000000, 125000);
    uint64_t tq = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        tq += t->lat.n[i];
    }
    EXPECT_EQ(tq, 100u);
}

TEST(Hist, BucketsCoverEveryValueOnce)
{
    for (unsigned i = 0; i + 1 < HIST_BUCKETS; i++) {
        EXPECT_LT(hist_low(i), hist_high(i));
        EXPECT_EQ(hist_high(i), hist_low(i + 1)) << i;
    }
    std::mt19937_64 rng(7);
    for (int k = 0; k < 100000; k++) {
        uint64_t ns = rng() >> (rng() % 64);
        unsigned b = hist_bucket(ns);
        ASSERT_LT(b, HIST_BUCKETS);
        if (b + 1 < HIST_BUCKETS) {
            ASSERT_GE(ns, hist_low(b)) << ns;
            ASSERT_LT(ns, hist_high(b)) << ns;
        } else {
            ASSERT_GE(ns, hist_low(b)) << ns;
        }
    }
}
