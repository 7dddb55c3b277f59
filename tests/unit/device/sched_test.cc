// tests/unit/device/sched_test.cc - device cores and the FIFO policy.
#include <gtest/gtest.h>

#include "device/sched.h"

#include <errno.h>

#include <atomic>
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
    struct sched *s;
    Log log;
    EXPECT_EQ(sched_create(&sched_fifo, 0, RunItem, &log, &s), -EINVAL);
    EXPECT_EQ(sched_create(&sched_fifo, SCHED_MAX_CORES + 1, RunItem, &log, &s), -EINVAL);
}

TEST(Sched, OneCoreRunsInSubmissionOrder)
{
    Log log;
    struct sched *s;
    ASSERT_EQ(sched_create(&sched_fifo, 1, RunItem, &log, &s), 0);
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
    ASSERT_EQ(sched_create(&sched_fifo, 4, RunItemMt, &log, &s), 0);
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
