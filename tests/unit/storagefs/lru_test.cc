// tests/unit/storagefs/lru_test.cc - the hash + LRU skeleton under the
// block and inode caches (device/storagefs/lru.h).
#include <gtest/gtest.h>

#include <pthread.h>

#include <vector>

extern "C" {
#include "device/storagefs/lru.h"
}

namespace {

struct obj {
    int id;
    struct lru_node node;
};

obj *of(struct lru_node *n)
{
    return n ? LRU_ENTRY(n, obj, node) : nullptr;
}

int freed;

void free_obj(struct lru_node *n)
{
    freed++;
    delete of(n);
}

class Lru : public ::testing::Test {
  protected:
    struct lru_table t {};

    void SetUp() override
    {
        freed = 0;
        ASSERT_EQ(lru_init(&t, 4), 0);
    }
    void TearDown() override { lru_fini(&t, free_obj); }

    // Inserts a ready object for key (as the caches do, under the shard lock).
    obj *add(uint64_t key, bool loading = false)
    {
        struct lru_shard *s = lru_shard(&t, key);
        obj *o = new obj{ (int)key, {} };
        pthread_mutex_lock(&s->mu);
        EXPECT_EQ(lru_find(s, key), nullptr);
        lru_insert(s, &o->node, key, loading);
        pthread_mutex_unlock(&s->mu);
        return o;
    }

    // Adds objects for the first n keys from `first` on that share its
    // shard; returns them, their keys in *keys.
    std::vector<obj *> add_same_shard(uint64_t first, size_t n, std::vector<uint64_t> *keys)
    {
        struct lru_shard *s = lru_shard(&t, first);
        std::vector<obj *> objs;
        for (uint64_t k = first; objs.size() < n; k++) {
            if (lru_shard(&t, k) == s) {
                keys->push_back(k);
                objs.push_back(add(k));
            }
        }
        return objs;
    }
};

TEST_F(Lru, FindsEveryKeyAcrossShardsAndChains)
{
    // Many more keys than shards x chains: chains hold several nodes.
    for (uint64_t k = 1; k <= 2000; k++)
        add(k * 7);
    uint64_t total = 0;
    for (unsigned i = 0; i < LRU_NSHARDS; i++)
        total += t.shard[i].count;
    EXPECT_EQ(total, 2000u);
    for (uint64_t k = 1; k <= 2000; k++) {
        struct lru_shard *s = lru_shard(&t, k * 7);
        obj *o = of(lru_find(s, k * 7));
        ASSERT_NE(o, nullptr) << k;
        EXPECT_EQ(o->id, (int)(k * 7));
        EXPECT_EQ(lru_find(s, k * 7 + 1), nullptr) << "a key never inserted";
    }
}

TEST_F(Lru, RemoveUnhashesOnceAndLeavesTheRest)
{
    // Six keys of one shard over its four chains: some chains hold two,
    // so removal unlinks from the middle of a chain too.
    struct lru_shard *s = lru_shard(&t, 5);
    std::vector<uint64_t> same;
    std::vector<obj *> objs = add_same_shard(5, 6, &same);
    pthread_mutex_lock(&s->mu);
    lru_remove(s, &objs[2]->node);
    lru_remove(s, &objs[2]->node);   // idempotent: a freed inode is unhashed once
    EXPECT_FALSE(objs[2]->node.hashed);
    EXPECT_EQ(s->count, same.size() - 1);
    EXPECT_EQ(lru_find(s, same[2]), nullptr);
    for (size_t i = 0; i < same.size(); i++)
        if (i != 2) {
            EXPECT_EQ(of(lru_find(s, same[i])), objs[i]);
        }
    pthread_mutex_unlock(&s->mu);
    delete objs[2];
}

TEST_F(Lru, EvictsTheLeastRecentlyUnusedAndSkipsUsedOnes)
{
    struct lru_shard *s = lru_shard(&t, 9);
    std::vector<uint64_t> keys;
    std::vector<obj *> o = add_same_shard(9, 4, &keys);
    pthread_mutex_lock(&s->mu);
    for (obj *x : o)                 // unused in order 0, 1, 2, 3
        lru_unused(s, &x->node);
    lru_used(s, &o[0]->node);        // 0 is used again: not evictable
    lru_used(s, &o[0]->node);        // a second call changes nothing
    EXPECT_EQ(s->unused, 3u);
    EXPECT_EQ(of(lru_evict(s)), o[1]);
    EXPECT_EQ(lru_find(s, keys[1]), nullptr) << "an evicted node is unhashed";
    lru_unused(s, &o[0]->node);      // 0 becomes the most recent
    EXPECT_EQ(of(lru_evict(s)), o[2]);
    EXPECT_EQ(of(lru_evict(s)), o[3]);
    EXPECT_EQ(of(lru_evict(s)), o[0]);
    EXPECT_EQ(lru_evict(s), nullptr);
    EXPECT_EQ(s->count, 0u);
    EXPECT_EQ(s->unused, 0u);
    pthread_mutex_unlock(&s->mu);
    for (obj *x : o)
        delete x;
}

TEST_F(Lru, FailedLoadRemovesThePlaceholder)
{
    obj *o = add(42, true);
    struct lru_shard *s = lru_shard(&t, 42);
    pthread_mutex_lock(&s->mu);
    EXPECT_EQ(of(lru_find(s, 42)), o) << "a placeholder is findable";
    lru_load_done(s, &o->node, false);
    EXPECT_EQ(lru_find(s, 42), nullptr);
    EXPECT_EQ(s->count, 0u);
    pthread_mutex_unlock(&s->mu);
    delete o;
}

struct waiter {
    struct lru_table *t;
    uint64_t key;
    obj *found;
    bool was_loading;
};

void *wait_for_load(void *arg)
{
    waiter *w = (waiter *)arg;
    struct lru_shard *s = lru_shard(w->t, w->key);
    pthread_mutex_lock(&s->mu);
    w->found = of(lru_find_loaded(s, w->key));
    w->was_loading = w->found && w->found->node.loading;
    pthread_mutex_unlock(&s->mu);
    return nullptr;
}

TEST_F(Lru, LookupsWaitOutALoad)
{
    obj *o = add(77, true);
    struct lru_shard *s = lru_shard(&t, 77);
    waiter w = { &t, 77, nullptr, true };
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, nullptr, wait_for_load, &w), 0);
    // Whenever the waiter runs, it cannot return the placeholder: either
    // it sees the finished load, or it waits for lru_load_done.
    pthread_mutex_lock(&s->mu);
    lru_load_done(s, &o->node, true);
    pthread_mutex_unlock(&s->mu);
    pthread_join(th, nullptr);
    EXPECT_EQ(w.found, o);
    EXPECT_FALSE(w.was_loading);
}

TEST_F(Lru, FiniFreesEveryHashedNode)
{
    for (uint64_t k = 0; k < 100; k++)
        add(k);
    lru_fini(&t, free_obj);
    EXPECT_EQ(freed, 100);
    ASSERT_EQ(lru_init(&t, 4), 0);   // for TearDown
}

}  // namespace
