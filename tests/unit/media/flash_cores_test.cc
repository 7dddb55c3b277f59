// The FTL's device cores (device/media/flash_cores.h) and their lock-free
// rings (flash_ring.h): ring bounds, order and wrap-around, the invariant
// checker, two real threads through a small ring; partitioned cores give
// exactly the serial model's answers (each partition's sub-requests in
// order, by its owner only), single-lock cores serve everything once,
// batches take core-speed times their CPU time on the cores' timelines
// (disjoint under the single lock), bad configurations are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <sched.h>
#include <thread>
#include <time.h>
#include <vector>

extern "C" {
#include "device/media/flash.h"
#include "device/media/flash_cores.h"
#include "device/media/flash_ring.h"
}

namespace {

struct RingBox {
    alignas(64) struct flash_ring r;
};

struct flash_sub Sub(uint64_t page, uint32_t tag)
{
    struct flash_sub s = {};
    s.page = page;
    s.tag = tag;
    return s;
}

}  // namespace

TEST(FlashRing, SizesMustBePowersOfTwo)
{
    RingBox b;
    for (uint32_t bad : {0u, 1u, 3u, 100u, FLASH_RING_MAX * 2})
        EXPECT_EQ(flash_ring_init(&b.r, bad), -EINVAL) << bad;
    for (uint32_t good : {2u, 64u, FLASH_RING_MAX}) {
        ASSERT_EQ(flash_ring_init(&b.r, good), 0) << good;
        EXPECT_EQ(flash_ring_entries(&b.r), good);
        flash_ring_fini(&b.r);
    }
}

TEST(FlashRing, FullEmptyOrderAndWrapAroundOfTheIndices)
{
    RingBox b;
    ASSERT_EQ(flash_ring_init(&b.r, 8), 0);
    // Free-running indices just below 2^32: pushes and pops cross the wrap.
    b.r.tail = b.r.head = b.r.head_seen = b.r.tail_seen = UINT32_MAX - 5;
    std::vector<struct flash_sub> in, out(16);
    for (uint32_t i = 0; i < 10; i++)
        in.push_back(Sub(i, i));
    EXPECT_TRUE(flash_ring_empty(&b.r));
    EXPECT_EQ(flash_ring_push(&b.r, in.data(), 10), 8u);   // only 8 fit
    EXPECT_EQ(flash_ring_push(&b.r, in.data(), 1), 0u);    // full
    EXPECT_EQ(flash_ring_pop(&b.r, out.data(), 3), 3u);
    for (uint32_t i = 0; i < 3; i++)
        EXPECT_EQ(out[i].tag, i);
    EXPECT_EQ(flash_ring_push(&b.r, in.data() + 8, 2), 2u);
    EXPECT_EQ(flash_ring_pop(&b.r, out.data(), 16), 7u);
    uint32_t want[] = {3, 4, 5, 6, 7, 8, 9};
    for (uint32_t i = 0; i < 7; i++)
        EXPECT_EQ(out[i].tag, want[i]);
    EXPECT_TRUE(flash_ring_empty(&b.r));
    EXPECT_EQ(flash_ring_pop(&b.r, out.data(), 16), 0u);
    EXPECT_LT(b.r.tail, 16u);   // it did wrap
    EXPECT_TRUE(flash_ring_check(&b.r, FLASH_RING_PRODUCER));
    EXPECT_TRUE(flash_ring_check(&b.r, FLASH_RING_CONSUMER));
    flash_ring_fini(&b.r);
}

TEST(FlashRing, TheCheckerCatchesBrokenIndices)
{
    RingBox b;
    ASSERT_EQ(flash_ring_init(&b.r, 8), 0);
    EXPECT_TRUE(flash_ring_check(&b.r, FLASH_RING_PRODUCER));
    b.r.tail = 9;   // more than the ring holds
    EXPECT_FALSE(flash_ring_check(&b.r, FLASH_RING_PRODUCER));
    EXPECT_FALSE(flash_ring_check(&b.r, FLASH_RING_CONSUMER));
    b.r.tail = 4;
    b.r.head = 2;
    b.r.head_seen = 3;   // the producer's copy ahead of the real head
    EXPECT_FALSE(flash_ring_check(&b.r, FLASH_RING_PRODUCER));
    b.r.head_seen = 2;
    b.r.tail_seen = 5;   // the consumer's copy ahead of the real tail
    EXPECT_FALSE(flash_ring_check(&b.r, FLASH_RING_CONSUMER));
    b.r.tail_seen = 4;
    EXPECT_TRUE(flash_ring_check(&b.r, FLASH_RING_PRODUCER));
    EXPECT_TRUE(flash_ring_check(&b.r, FLASH_RING_CONSUMER));
    b.r.mask = 6;   // not a power of two less one
    EXPECT_FALSE(flash_ring_check(&b.r, FLASH_RING_CONSUMER));
    b.r.mask = 7;
    flash_ring_fini(&b.r);
}

// A producer and a consumer thread through a 64-slot ring, in batches of
// random sizes: every entry arrives once, in order (a producer that
// overwrote unread slots, or a consumer that read unpublished ones, would
// show a gap or a repeat).
TEST(FlashRing, TwoThreadsPassEveryEntryOnceInOrder)
{
    RingBox b;
    ASSERT_EQ(flash_ring_init(&b.r, 64), 0);
    const uint32_t total = 40000;
    std::thread prod([&] {
        std::mt19937 rng(1);
        std::vector<struct flash_sub> batch(24);
        for (uint32_t next = 0; next < total;) {
            unsigned n = 1 + rng() % 24;
            n = n < total - next ? n : total - next;
            for (unsigned i = 0; i < n; i++)
                batch[i] = Sub(next + i, next + i);
            unsigned put = flash_ring_push(&b.r, batch.data(), n);
            next += put;
            if (!put)
                sched_yield();
        }
    });
    std::mt19937 rng(2);
    std::vector<struct flash_sub> out(24);
    uint32_t expect = 0, bad = 0;
    while (expect < total) {
        unsigned got = flash_ring_pop(&b.r, out.data(), 1 + rng() % 24);
        for (unsigned i = 0; i < got; i++, expect++)
            bad += out[i].tag != expect || out[i].page != expect;
        if (!got)
            sched_yield();
    }
    prod.join();
    EXPECT_EQ(bad, 0u);
    EXPECT_TRUE(flash_ring_empty(&b.r));
    flash_ring_fini(&b.r);
}

namespace {

struct flash *Model(uint32_t partitions)
{
    struct flash_geom g = {};
    g.channels = 4;
    g.dies_per_channel = 2;
    g.pages_per_block = 64;
    g.op_permille = 150;
    g.partitions = partitions;
    const uint64_t n = 16384;
    flash_geom_default(&g, n);
    struct flash *f = nullptr;
    EXPECT_EQ(flash_create(&g, n, &f), 0);
    return f;
}

// Random reads, writes and trims over the whole space, issued 300 ns apart,
// after a first write of every page (so GC runs).
std::vector<struct flash_sub> Workload(uint64_t n, uint32_t count, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<struct flash_sub> w;
    uint64_t t = 1000;
    for (uint64_t l = 0; l < n; l++, t += 300) {
        struct flash_sub s = Sub(l, (uint32_t)w.size());
        s.op = FLASH_SUB_WRITE;
        s.at_ns = t;
        w.push_back(s);
    }
    for (uint32_t i = 0; i < count; i++, t += 300) {
        struct flash_sub s = Sub(rng() % n, (uint32_t)w.size());
        unsigned r = rng() % 100;
        s.op = r < 60 ? FLASH_SUB_WRITE : r < 95 ? FLASH_SUB_READ : FLASH_SUB_TRIM;
        s.at_ns = t;
        w.push_back(s);
    }
    return w;
}

// Runs w through cores as their one controller; returns the completions
// by tag (at_ns = done time) and each core's stats.
std::vector<struct flash_sub> RunCores(struct flash *f, const struct flash_cores_cfg &cfg,
                                       const std::vector<struct flash_sub> &w,
                                       std::vector<struct flash_core_stats> *st)
{
    struct flash_cores *c = nullptr;
    char err[128] = "";
    EXPECT_EQ(flash_cores_start(f, &cfg, err, sizeof err, &c), 0) << err;
    std::vector<struct flash_sub> done(w.size());
    std::vector<int> seen(w.size(), 0);
    std::vector<struct flash_sub> got(256);
    size_t next = 0, reaped = 0;
    while (reaped < w.size()) {
        next += flash_cores_submit(c, w.data() + next, (unsigned)(w.size() - next));
        unsigned m = flash_cores_reap(c, got.data(), (unsigned)got.size());
        for (unsigned i = 0; i < m; i++) {
            done[got[i].tag] = got[i];
            seen[got[i].tag]++;
        }
        reaped += m;
        if (!m)
            flash_cores_wait(c);
    }
    EXPECT_EQ(flash_cores_outstanding(c), 0u);
    st->resize(cfg.cores);
    flash_cores_stop(c, st->data());
    for (size_t i = 0; i < w.size(); i++)
        EXPECT_EQ(seen[i], 1) << "sub-request " << i << " completed " << seen[i] << " times";
    return done;
}

struct flash_io Serial(struct flash *f, const struct flash_sub &s)
{
    if (s.op == FLASH_SUB_READ)
        return flash_read(f, s.page, s.at_ns);
    if (s.op == FLASH_SUB_WRITE)
        return flash_write(f, s.page, s.at_ns);
    flash_trim(f, s.page, 1);
    return {s.at_ns, false};
}

}  // namespace

// Four cores, each owning its partition, fed through rings by one
// controller: every done time and GC flag equals what the locked model
// gives the same sub-requests one by one, and so do the FTL's counters.
TEST(FlashCores, PartitionedCoresGiveTheSerialModelsAnswers)
{
    struct flash *f = Model(4), *ref = Model(4);
    auto w = Workload(flash_nlog(f), 60000, 3);
    struct flash_cores_cfg cfg = {};
    cfg.cores = 4;
    std::vector<struct flash_core_stats> st;
    auto done = RunCores(f, cfg, w, &st);
    uint32_t mismatched = 0, misrouted = 0, gc_flags = 0;
    for (const auto &s : w) {
        struct flash_io io = Serial(ref, s);
        mismatched += done[s.tag].at_ns != io.done_ns ||
                      (done[s.tag].flags & FLASH_SUB_GC) != (io.gc ? FLASH_SUB_GC : 0u);
        misrouted += done[s.tag].core != flash_part_of(f, s.page);
        gc_flags += io.gc;
    }
    EXPECT_EQ(mismatched, 0u);
    EXPECT_EQ(misrouted, 0u);
    EXPECT_GT(gc_flags, 0u);   // the workload did reach GC
    uint64_t served = 0;
    for (const auto &k : st) {
        EXPECT_GT(k.served, w.size() / 8);   // every core had a share
        served += k.served;
    }
    EXPECT_EQ(served, w.size());
    struct flash_stats a, b;
    flash_stats(f, &a);
    flash_stats(ref, &b);
    EXPECT_EQ(a.host_writes, b.host_writes);
    EXPECT_EQ(a.pages_moved, b.pages_moved);
    EXPECT_EQ(a.erases, b.erases);
    EXPECT_EQ(a.mapped, b.mapped);
    EXPECT_GT(a.pages_moved, 0u);
    EXPECT_EQ(flash_check(f), 0);
    flash_destroy(f);
    flash_destroy(ref);
}

// The baseline: four cores serving one FTL under its lock. The order
// between cores is theirs, so only counts are compared with the serial
// model; the invariants hold and each sub-request went to its stripe's core.
TEST(FlashCores, SingleLockCoresServeEverySubRequestOnce)
{
    struct flash *f = Model(1), *ref = Model(1);
    auto w = Workload(flash_nlog(f), 40000, 4);
    struct flash_cores_cfg cfg = {};
    cfg.cores = 4;
    cfg.single_lock = true;
    std::vector<struct flash_core_stats> st;
    auto done = RunCores(f, cfg, w, &st);
    uint32_t misrouted = 0;
    for (const auto &s : w) {
        Serial(ref, s);
        misrouted += done[s.tag].core != (s.page / flash_geom(f)->stripe_pages) % 4;
    }
    EXPECT_EQ(misrouted, 0u);
    struct flash_stats a, b;
    flash_stats(f, &a);
    flash_stats(ref, &b);
    EXPECT_EQ(a.host_writes, b.host_writes);
    EXPECT_EQ(a.host_reads, b.host_reads);
    EXPECT_EQ(flash_check(f), 0);
    flash_destroy(f);
    flash_destroy(ref);
}

// Core speed 20: each batch takes 20 times its measured CPU time on its
// core's timeline, or with a modelled FTL time exactly that per
// sub-request; a core's batches follow each other, and under the single
// lock no two cores' batches overlap in device time. With 50 us per
// sub-request (100 ms a core, beyond the 20 ms a timeline may lag) the
// cores run ahead of the host and sleep. (The sub-requests arrive now,
// on the cores' clock.)
TEST(FlashCores, BatchesTakeTheirFtlTimeOnTheCoresTimelines)
{
    for (uint64_t ftl_ns : {0u, 50000u})
        for (bool single : {false, true}) {
            struct flash *f = Model(single ? 1 : 2);
            auto w = Workload(flash_nlog(f) / 8, 2000, 5);
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            for (auto &s : w)
                s.at_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            struct flash_cores_cfg cfg = {};
            cfg.cores = 2;
            cfg.single_lock = single;
            cfg.core_speed = 20.0;
            cfg.ftl_ns = ftl_ns;
            std::vector<struct flash_core_stats> st;
            RunCores(f, cfg, w, &st);
            uint64_t busy = 0, first = UINT64_MAX, last = 0;
            for (const auto &k : st) {
                EXPECT_GT(k.cpu_ns, 0u);
                if (ftl_ns) {
                    EXPECT_EQ(k.busy_ns, k.served * ftl_ns);
                    EXPECT_GT(k.slept_ns, 0u);
                } else {
                    EXPECT_LE(k.busy_ns, 20 * k.cpu_ns);
                    EXPECT_GE(k.busy_ns + k.batches, 20 * k.cpu_ns);
                }
                EXPECT_GE(k.last_ns - k.first_ns, k.busy_ns);
                busy += k.busy_ns;
                first = std::min(first, k.first_ns);
                last = std::max(last, k.last_ns);
            }
            if (single) {
                EXPECT_LE(busy, last - first) << "single-lock batches overlapped";
            }
            flash_destroy(f);
        }
}

TEST(FlashCores, BadConfigurationsAreRefusedWithAReason)
{
    struct flash *four = Model(4), *one = Model(1);
    struct Case {
        const char *what;
        struct flash *f;
        struct flash_cores_cfg cfg;
    } cases[] = {
        {"no cores", four, {0, false, 1.0, 0, 0}},
        {"too many cores", one, {65, true, 1.0, 0, 0}},
        {"partitions are not the cores", four, {2, false, 1.0, 0, 0}},
        {"single lock over four partitions", four, {4, true, 1.0, 0, 0}},
        {"core faster than the host", four, {4, false, 0.5, 0, 0}},
        {"ring not a power of two", four, {4, false, 1.0, 100, 0}},
        {"ring smaller than a batch", four, {4, false, 1.0, 32, 0}},
        {"FTL time above 1 ms", four, {4, false, 1.0, 0, 2000000}},
    };
    for (const auto &c : cases) {
        char err[128] = "";
        struct flash_cores *out = nullptr;
        EXPECT_EQ(flash_cores_start(c.f, &c.cfg, err, sizeof err, &out), -EINVAL) << c.what;
        EXPECT_NE(err[0], '\0') << c.what;
        EXPECT_EQ(out, nullptr) << c.what;
    }
    flash_destroy(four);
    flash_destroy(one);
}

// Ports (the device's many producers, flash_cores.h invariant 7): eight
// threads share four ports of untimed partitioned cores, each taking a
// port for every "call" of up to 100 sub-requests (more than a core's ring
// holds) and waiting for them with a brief spin and then a futex. Every
// sub-request comes back once, to the port that sent it, served by its
// partition's owner; meanwhile a ninth thread passes the owners' gate
// again and again (stats and the checker under every partition's lock):
// no deadlock, and the owners did every operation.
TEST(FlashCores, PortsServeManyProducersThroughTheGate)
{
    struct flash *f = Model(4);
    struct flash_cores_cfg cfg = {};
    cfg.cores = 4;
    cfg.ports = 4;
    cfg.untimed = true;
    cfg.ring_entries = 64;
    struct flash_cores *c = nullptr;
    char err[128] = "";
    ASSERT_EQ(flash_cores_start(f, &cfg, err, sizeof err, &c), 0) << err;
    std::atomic<bool> stop{false};
    std::atomic<int> gates{0}, bad_checks{0};
    std::thread gate([&] {
        while (!stop.load()) {
            struct flash_stats st;
            flash_stats(f, &st);
            bad_checks += flash_check(f) != 0;
            gates++;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    const uint64_t n = flash_nlog(f);
    std::vector<std::thread> th;
    std::vector<uint64_t> lost(8, 0), wrong(8, 0), done(8, 0);
    for (uint32_t t = 0; t < 8; t++)
        th.emplace_back([&, t] {
            std::mt19937_64 rng(t);
            std::vector<struct flash_sub> subs(100), got(64);
            for (int call = 0; call < 300; call++) {
                unsigned p = flash_cores_port_get(c);
                unsigned k = 1 + (unsigned)(rng() % 100), sent = 0, back = 0;
                for (unsigned i = 0; i < k; i++) {
                    subs[i] = Sub(rng() % n, t << 16 | i);
                    subs[i].op = rng() % 2 ? FLASH_SUB_WRITE : FLASH_SUB_READ;
                    subs[i].at_ns = 1000;
                }
                std::vector<int> seen(k, 0);
                while (back < k) {
                    sent += flash_cores_port_submit(c, p, subs.data() + sent, k - sent);
                    unsigned m = flash_cores_port_reap(c, p, got.data(), (unsigned)got.size());
                    for (unsigned i = 0; i < m; i++) {
                        uint32_t tag = got[i].tag;
                        bool mine = tag >> 16 == t && (tag & 0xffff) < k;
                        wrong[t] += !mine || got[i].core != flash_part_of(f, got[i].page);
                        if (mine)
                            seen[tag & 0xffff]++;
                    }
                    back += m;
                    if (!m)
                        flash_cores_port_wait(c, p, 2000);
                }
                EXPECT_EQ(flash_cores_port_outstanding(c, p), 0u);
                flash_cores_port_put(c, p);
                for (int s : seen)
                    lost[t] += s != 1;
                done[t] += k;
            }
        });
    for (auto &x : th)
        x.join();
    stop = true;
    gate.join();
    std::vector<struct flash_core_stats> st(4);
    flash_cores_stop(c, st.data());
    uint64_t total = 0, served = 0;
    for (uint32_t t = 0; t < 8; t++) {
        EXPECT_EQ(lost[t], 0u) << "producer " << t;
        EXPECT_EQ(wrong[t], 0u) << "producer " << t;
        total += done[t];
    }
    for (const auto &k : st)
        served += k.served;
    EXPECT_EQ(served, total);
    EXPECT_GT(gates.load(), 0);
    EXPECT_EQ(bad_checks.load(), 0);
    struct flash_stats fs;
    flash_stats(f, &fs);   // after stop: the plain locks again
    EXPECT_EQ(fs.ftl_owned, total);
    EXPECT_EQ(fs.ftl_locked, 0u);
    EXPECT_EQ(fs.ftl_foreign, 0u);
    EXPECT_EQ(flash_check(f), 0);
    flash_destroy(f);
}

// IDLE sub-requests: each core collects its own partition's dies in the
// background (flash_idle_owned), as flash_idle does for all of them.
TEST(FlashCores, IdleSubRequestsCollectOnTheOwnersDies)
{
    struct flash *f = Model(2), *ref = Model(2);
    auto w = Workload(flash_nlog(f), 40000, 9);
    for (const auto &s : w)
        Serial(ref, s);
    struct flash_cores_cfg cfg = {};
    cfg.cores = 2;
    cfg.untimed = true;
    std::vector<struct flash_core_stats> st;
    RunCores(f, cfg, w, &st);   // the same state as ref
    struct flash_stats a, b;
    flash_stats(f, &a);
    uint64_t t = a.now_ns + 1000000000ull;
    struct flash_cores *c = nullptr;
    ASSERT_EQ(flash_cores_start(f, &cfg, nullptr, 0, &c), 0);
    std::vector<struct flash_sub> idle = {Sub(0, 0), Sub(flash_geom(f)->stripe_pages, 1)};
    unsigned erased_parts = 0;
    for (auto &s : idle) {
        s.op = FLASH_SUB_IDLE;
        s.at_ns = t;
    }
    ASSERT_EQ(flash_cores_submit(c, idle.data(), 2), 2u);
    std::vector<struct flash_sub> got(2);
    for (unsigned back = 0; back < 2;) {
        unsigned m = flash_cores_reap(c, got.data() + back, 2 - back);
        for (unsigned i = back; i < back + m; i++) {
            EXPECT_EQ(got[i].core, got[i].tag);   // IDLE of stripe p: core p
            erased_parts += (got[i].flags & FLASH_SUB_GC) != 0;
        }
        back += m;
        if (!m)
            flash_cores_wait(c);
    }
    flash_cores_stop(c, nullptr);
    unsigned ref_erased = flash_idle(ref, t);
    flash_stats(f, &a);
    flash_stats(ref, &b);
    EXPECT_GT(ref_erased, 0u);
    EXPECT_GT(erased_parts, 0u);
    EXPECT_EQ(a.gc_bg_runs, b.gc_bg_runs);
    EXPECT_EQ(a.erases, b.erases);
    EXPECT_EQ(a.free_blocks, b.free_blocks);
    EXPECT_EQ(flash_check(f), 0);
    flash_destroy(f);
    flash_destroy(ref);
}
