// tests/e2e/libcisc/internal_test.cc - libcisc's internal client API
// (libcisc/client_int.h, the base of the fused operations) against a real
// device: batches larger than the ring, completions out of order, waits
// by token in any order, discarded tokens, stale tokens.
#include "tests/e2e/fuse/mount_fixture.h"

extern "C" {
#include "libcisc/client_int.h"
}

#include <algorithm>
#include <map>
#include <unistd.h>

namespace e2e {
namespace {

class Internal : public MountTest {
protected:
    struct cisc_session *s = nullptr;
    struct cisc_queue *q = nullptr;

    void SetUp() override
    {
        MountTest::SetUp();
        if (HasFatalFailure())
            return;
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        struct cisc_queue_params p = {};
        p.sq_entries = 8;
        p.cq_entries = 16;
        ASSERT_EQ(cisc_queue_create_params(s, &p, &q), 0);
    }

    void TearDown() override
    {
        cisc_session_close(s);
        MountTest::TearDown();
    }
};

TEST_F(Internal, BatchLargerThanTheRingAnyWaitOrder)
{
    ASSERT_EQ(q->sq_entries, 8u);
    ASSERT_EQ(q->nslots, 16u);
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_CREAT | O_RDWR, 0644, &fh), 0);
    // 16 commands (two rings' worth) with one call: fsyncs and nops mixed,
    // so completions come back out of order.
    struct wire_sqe e[16] = {};
    for (int i = 0; i < 16; i++) {
        e[i].opcode = i % 3 ? WIRE_OP_NOP : WIRE_OP_FSYNC;
        e[i].fh = fh;
    }
    uint64_t tok[16];
    ASSERT_EQ(lc_submit(q, e, 16, tok), 16);
    for (int i = 15; i >= 0; i--) {   // taken in reverse order
        struct wire_cqe c;
        ASSERT_EQ(lc_wait(q, tok[i], &c), 0) << i;
        EXPECT_EQ(c.user_data, tok[i]);
        EXPECT_EQ(c.res, 0);
    }
    struct wire_cqe c;
    EXPECT_EQ(lc_wait(q, tok[3], &c), -EINVAL);   // already taken: stale
    EXPECT_EQ(lc_peek(q, 0, &c), -EINVAL);
    EXPECT_EQ(q->inflight, 0u);
    EXPECT_EQ(lc_submit(q, e, 17, tok), -EINVAL);   // more than the slots
}

TEST_F(Internal, DiscardedTokensFreeTheirSlots)
{
    struct wire_sqe nop = {};
    for (int i = 0; i < 200; i++) {
        uint64_t t;
        ASSERT_EQ(lc_submit(q, &nop, 1, &t), 1);
        lc_discard(q, t);
    }
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(cisc_nop(q), 0);
    // The device may complete commands out of order (a core preempted
    // while holding a discarded nop): its completion can come after the
    // last cisc_nop's. Every discarded slot must still come back.
    for (int i = 0; i < 10000 && q->inflight; i++) {
        lc_reap(q);
        usleep(1000);
    }
    EXPECT_EQ(q->inflight, 0u);
    // peek eventually sees a completion
    uint64_t t;
    ASSERT_EQ(lc_submit(q, &nop, 1, &t), 1);
    struct wire_cqe c;
    int r;
    while ((r = lc_peek(q, t, &c)) == -EAGAIN)
        ;
    EXPECT_EQ(r, 0);
    EXPECT_EQ(c.res, 0);
}

TEST_F(Internal, ArenaAllocationsAreDisjoint)
{
    std::map<uint64_t, uint64_t> got;
    uint64_t off;
    size_t sizes[] = { 1, 64, 100, 256, 4096, 5000, 65536, 300000 };
    for (int round = 0; round < 20; round++)
        for (size_t sz : sizes)
            if (lc_arena_alloc(q, sz, &off) == 0)
                got[off] = sz;
    uint64_t end = 0;
    for (auto &g : got) {
        EXPECT_GE(g.first, end);
        EXPECT_EQ(g.first % 64, 0u);
        end = g.first + g.second;
        EXPECT_LE(end, q->arena_size);
    }
    for (auto &g : got)
        lc_arena_free(q, g.first);
    EXPECT_EQ(q->alloc.used, 0u);
    ASSERT_EQ(lc_arena_alloc(q, q->arena_size, &off), 0);
    EXPECT_EQ(off, 0u);
    lc_arena_free(q, off);
}

TEST_F(Internal, DeviceGoneIsNotConnected)
{
    struct wire_sqe nop = {};
    uint64_t t;
    ASSERT_EQ(lc_submit(q, &nop, 1, &t), 1);
    struct wire_cqe c;
    ASSERT_EQ(lc_wait(q, t, &c), 0);
    Down();
    EXPECT_EQ(cisc_nop(q), -ENOTCONN);
    uint64_t fh;
    EXPECT_LT(cisc_open(q, "x", O_RDONLY, 0, &fh), 0);
}

}  // namespace
}  // namespace e2e
