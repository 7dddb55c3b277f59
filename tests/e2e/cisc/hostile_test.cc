// tests/e2e/cisc/hostile_test.cc - hostile fused ops through a raw queue
// pair: refused vectors report the bad step in the result array; random
// step arrays and a client that scribbles over its own arena while the
// device executes its ops get errors (or run on garbage data), never
// crash the device, and a well-behaved client keeps getting correct
// results meanwhile.
#include "tests/e2e/libcisc/cisc_fixture.h"

extern "C" {
#include "common/crc32c.h"
}

#include <atomic>
#include <random>

namespace e2e {
namespace {

class HostileCisc : public CiscTest {
protected:
    std::atomic<bool> stop{false};
    std::atomic<int> good_ops{0}, good_errors{0};
    std::thread good;

    // A second client appending checksummed records and reading them back.
    void StartGoodClient()
    {
        std::string m = mnt;
        good = std::thread([this, m] {
            struct cisc_session *gs;
            struct cisc_queue *gq;
            uint64_t fh;
            if (cisc_session_open(m.c_str(), &gs) || cisc_queue_create(gs, &gq) ||
                cisc_open(gq, "good", O_RDWR | O_CREAT | O_TRUNC, 0644, &fh)) {
                good_errors++;
                return;
            }
            char rec[512], back[512];
            for (int i = 0; !stop; i++) {
                memset(rec, 'a' + i % 26, sizeof(rec));
                uint64_t off = 0;
                if (cisc_append_crc_write(gq, fh, rec, sizeof(rec), &off) != sizeof(rec) ||
                    cisc_read_verify_crc(gq, fh, off, back, sizeof(back)) != sizeof(back) ||
                    memcmp(rec, back, sizeof(rec)))
                    good_errors++;
                good_ops++;
            }
            cisc_session_close(gs);
        });
    }

    void StopGoodClient()
    {
        stop = true;
        if (good.joinable())
            good.join();
        EXPECT_EQ(good_errors.load(), 0);
        EXPECT_GT(good_ops.load(), 0);
    }

    void TearDown() override
    {
        stop = true;
        if (good.joinable())
            good.join();
        CiscTest::TearDown();
    }
};

struct wire_step Step(uint8_t kind)
{
    struct wire_step s = {};
    s.kind = kind;
    s.in_step = s.in2_step = s.file_step = WIRE_NO_STEP;
    return s;
}

TEST_F(HostileCisc, RefusedVectorNamesTheBadStep)
{
    RawQp r;
    ASSERT_EQ(r.Open(mnt), 0);
    const uint64_t S = sizeof(struct wire_step), R = sizeof(struct wire_step_res);
    struct wire_step st[4] = { Step(WIRE_STEP_CRC32C), Step(WIRE_STEP_XXH3),
                               Step(WIRE_STEP_CRC32C), Step(WIRE_STEP_CRC32C) };
    st[0].addr = 4096;
    st[0].alen = 10;
    st[1].in_step = 0;
    st[2].in_step = 3;        // forward: step 2 is the bad one
    st[3].in_step = 0;
    memcpy(r.arena, st, sizeof(st));
    memset(r.arena + 8192, 0x5a, 4 * R);
    struct wire_sqe e = {};
    e.opcode = WIRE_OP_CISC;
    e.nsteps = 4;
    e.len = 4 * S;
    e.res_off = 8192;
    e.res_len = 4 * R;
    EXPECT_EQ(r.Call(e), -EINVAL);
    struct wire_step_res res[4];
    memcpy(res, r.arena + 8192, sizeof(res));
    EXPECT_EQ(res[0].ret, -ECANCELED);
    EXPECT_EQ(res[1].ret, -ECANCELED);
    EXPECT_EQ(res[2].ret, -EINVAL);
    EXPECT_EQ(res[3].ret, -ECANCELED);
    // An output range that overlaps the step array itself is the client's
    // business: the op runs (the steps were copied before it started).
    st[2].in_step = 1;
    st[3].flags = WIRE_STEP_F_OUT_ARENA;
    st[3].out_off = 0;
    st[3].out_cap = 4;
    memcpy(r.arena, st, sizeof(st));
    EXPECT_EQ(r.Call(e), 0);
    ExpectDeviceUp();
}

TEST_F(HostileCisc, RandomVectorsAndScribblingNeverHurtOthers)
{
    Put("victim", std::string(8192, 'v'));
    StartGoodClient();
    RawQp r;
    ASSERT_EQ(r.Open(mnt, 64, 1 << 20), 0);
    const uint64_t A = r.hdr->arena_size, S = sizeof(struct wire_step);
    std::mt19937_64 rng(4242);
    // Paths the random OPEN/UNLINK steps may name.
    const char *paths[] = { "victim", "good", "nothere", "/", "a/b/c" };
    std::atomic<bool> scribble{true};
    std::thread scribbler([&] {   // rewrites data and steps while the device works
        std::mt19937_64 g(7);
        while (scribble) {
            uint64_t off = 65536 + g() % (A - 65536 - 8);
            uint64_t v = g();
            memcpy(r.arena + off, &v, 8);
        }
    });
    int submitted = 0, completed = 0;
    for (int round = 0; round < 300; round++) {
        unsigned n = 1 + rng() % 8;
        struct wire_step st[8];
        for (unsigned i = 0; i < n; i++) {
            st[i] = Step((uint8_t)(1 + rng() % 17));
            if (rng() % 2) st[i].in_step = (uint16_t)(rng() % (n + 1));
            if (rng() % 4 == 0) st[i].in2_step = (uint16_t)(rng() % (n + 1));
            if (rng() % 2) st[i].file_step = (uint16_t)(rng() % (n + 1));
            if (rng() % 8 == 0) st[i].flags = WIRE_STEP_F_FH, st[i].fh = rng();
            if (rng() % 3 == 0) st[i].flags |= WIRE_STEP_F_OUT_ARENA;
            st[i].off = rng() % 16384;
            st[i].len = rng() % 16384;
            st[i].out_off = 65536 + rng() % (A / 2);
            st[i].out_cap = (uint32_t)(rng() % 65536);
            st[i].arg[0] = rng() % 4;
            st[i].flags2 = (uint32_t)(rng() % 2 ? O_RDONLY : O_RDWR);
            if (st[i].kind == WIRE_STEP_OPEN || st[i].kind == WIRE_STEP_UNLINK) {
                const char *p = paths[rng() % 5];
                uint64_t at = 32768 + i * 256;
                memcpy(r.arena + at, p, strlen(p));
                st[i].addr = at;
                st[i].alen = (uint32_t)strlen(p);
            } else {
                st[i].addr = 65536 + rng() % (A / 2);
                st[i].alen = (uint32_t)(rng() % 8192);
            }
        }
        memcpy(r.arena, st, n * S);
        struct wire_sqe e = {};
        e.opcode = WIRE_OP_CISC;
        e.user_data = (uint64_t)round;
        e.nsteps = (uint16_t)n;
        e.len = n * S;
        e.res_off = 16384;
        e.res_len = 8 * sizeof(struct wire_step_res);
        int64_t res = r.Call(e);
        submitted++;
        completed += res != 1;   // 1: no completion within 10 s
        EXPECT_NE(res, 1) << "round " << round;
    }
    scribble = false;
    scribbler.join();
    EXPECT_EQ(completed, submitted);
    StopGoodClient();
    ExpectDeviceUp();
    // "victim" may have been changed by a random op (the raw client owns
    // it), but the device still serves it coherently.
    struct stat st;
    EXPECT_EQ(stat(P("victim").c_str(), &st) == 0 || errno == ENOENT, true);
}

}  // namespace
}  // namespace e2e
