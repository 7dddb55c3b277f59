// tests/e2e/libcisc/cisc_door_test.cc - fused (CISC) ops through the queue
// pair door, driven with the internal client API: a step vector in the
// arena, one SQE, per-step results written back to the arena, the CQE's
// status and steps-completed count, the change seen through the mount at
// once, session handles in F_FH steps, keys registered per session.
#include "tests/e2e/libcisc/cisc_fixture.h"

extern "C" {
#include "libcisc/client_int.h"
}

namespace e2e {
namespace {

class CiscDoor : public CiscTest {
protected:
    uint64_t Stage(const void *p, size_t n)
    {
        uint64_t off = 0;
        int r = lc_arena_alloc(q, n, &off);
        if (r) {                 // no room: nothing may be copied
            ADD_FAILURE() << "lc_arena_alloc(" << n << "): " << r;
            return 0;
        }
        memcpy(lc_arena_ptr(q, off), p, n);
        return off;
    }

    static struct wire_step Step(uint8_t kind)
    {
        struct wire_step st = {};
        st.kind = kind;
        st.in_step = st.in2_step = st.file_step = WIRE_NO_STEP;
        return st;
    }

    // Runs a vector; returns the CQE and the step results.
    struct wire_cqe Run(std::vector<struct wire_step> v, std::vector<struct wire_step_res> *res)
    {
        uint64_t steps = Stage(v.data(), v.size() * sizeof(v[0]));
        uint64_t roff;
        EXPECT_EQ(lc_arena_alloc(q, v.size() * sizeof(struct wire_step_res), &roff), 0);
        struct wire_sqe e = {};
        e.opcode = WIRE_OP_CISC;
        e.nsteps = (uint16_t)v.size();
        e.addr = steps;
        e.len = v.size() * sizeof(struct wire_step);
        e.res_off = roff;
        e.res_len = (uint32_t)(v.size() * sizeof(struct wire_step_res));
        struct wire_cqe c = {};
        EXPECT_EQ(lc_call(q, &e, &c), c.res);
        res->resize(v.size());
        memcpy(res->data(), lc_arena_ptr(q, roff), v.size() * sizeof(struct wire_step_res));
        lc_arena_free(q, steps);
        lc_arena_free(q, roff);
        return c;
    }
};

TEST_F(CiscDoor, AppendCrcWriteIsOneCommand)
{
    ASSERT_TRUE(WriteFile(P("log"), "old\n"));
    ASSERT_EQ(ReadFile(P("log")), "old\n");   // cached by the kernel
    const char path[] = "log", data[] = "record one\n";
    uint64_t p = Stage(path, 3), d = Stage(data, 11);
    std::vector<struct wire_step> v(5);
    v[0] = Step(WIRE_STEP_OPEN);
    v[0].addr = p;
    v[0].alen = 3;
    v[0].flags2 = O_RDWR;
    v[1] = Step(WIRE_STEP_APPEND);
    v[1].file_step = 0;
    v[1].addr = d;
    v[1].alen = 11;
    v[2] = Step(WIRE_STEP_CRC32C);
    v[2].addr = d;
    v[2].alen = 11;
    v[3] = Step(WIRE_STEP_APPEND);
    v[3].file_step = 0;
    v[3].in_step = 2;
    v[4] = Step(WIRE_STEP_CLOSE);
    v[4].file_step = 0;
    std::vector<struct wire_step_res> res;
    struct wire_cqe c = Run(v, &res);
    ASSERT_EQ(c.res, 0);
    EXPECT_EQ(c.aux, 5u);
    EXPECT_EQ(res[1].ret, 11);
    EXPECT_EQ(res[1].out_len, 4u);   // APPEND's out_len: where it landed
    EXPECT_EQ(res[2].ret, 4);
    EXPECT_EQ(res[3].ret, 4);
    std::string f = ReadFile(P("log"));   // through the mount, at once
    ASSERT_EQ(f.size(), 4u + 11 + 4);
    EXPECT_EQ(f.substr(0, 15), "old\nrecord one\n");
}

TEST_F(CiscDoor, FailingStepChangesNothingAndReportsEachStep)
{
    ASSERT_TRUE(WriteFile(P("f"), "unchanged"));
    const char path[] = "f", data[] = "XXXX";
    uint64_t p = Stage(path, 1), d = Stage(data, 4);
    std::vector<struct wire_step> v(3);
    v[0] = Step(WIRE_STEP_OPEN);
    v[0].addr = p;
    v[0].alen = 1;
    v[0].flags2 = O_RDWR;
    v[1] = Step(WIRE_STEP_WRITE);
    v[1].file_step = 0;
    v[1].addr = d;
    v[1].alen = 4;
    v[2] = Step(WIRE_STEP_ZSTD_DECOMPRESS);   // of garbage: fails
    v[2].addr = d;
    v[2].alen = 4;
    v[2].out_cap = 4096;
    std::vector<struct wire_step_res> res;
    struct wire_cqe c = Run(v, &res);
    EXPECT_LT(c.res, 0);
    EXPECT_LT(res[2].ret, 0);
    EXPECT_EQ(ReadFile(P("f")), "unchanged");
    // a reference to a later step: refused at decode, nothing runs
    v[1].in_step = 2;
    c = Run(v, &res);
    EXPECT_EQ(c.res, -EINVAL);
    EXPECT_EQ(c.aux, 0u);
    EXPECT_EQ(res[1].ret, -EINVAL);
    EXPECT_EQ(res[0].ret, -ECANCELED);
}

TEST_F(CiscDoor, SessionHandlesAndKeys)
{
    ASSERT_TRUE(WriteFile(P("f"), "secret text"));
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDONLY, 0, &fh), 0);
    // READ through the session handle, ENCRYPT with a registered key,
    // DECRYPT, VERIFY against the original: all in the device.
    uint8_t req[8 + 32];
    le32_put(req, 1);
    le32_put(req + 4, 32);
    memset(req + 8, 0x5a, 32);
    int32_t st = 1;
    uint8_t idb[4] = {};
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call(s->fd, CTL_KEY_ADD, req, sizeof(req), &st, idb, sizeof(idb));
    pthread_mutex_unlock(&s->lock);
    ASSERT_EQ(n, 4);
    ASSERT_EQ(st, 0);
    uint32_t key = le32_get(idb);
    std::vector<struct wire_step> v(4);
    v[0] = Step(WIRE_STEP_READ);
    v[0].flags = WIRE_STEP_F_FH;
    v[0].fh = fh;
    v[0].len = 11;
    v[1] = Step(WIRE_STEP_ENCRYPT);
    v[1].in_step = 0;
    v[1].key_id = key;
    v[2] = Step(WIRE_STEP_DECRYPT);
    v[2].in_step = 1;
    v[2].key_id = key;
    v[3] = Step(WIRE_STEP_VERIFY);
    v[3].in_step = 2;
    v[3].in2_step = 0;
    std::vector<struct wire_step_res> res;
    struct wire_cqe c = Run(v, &res);
    EXPECT_EQ(c.res, 0);
    EXPECT_EQ(res[0].ret, 11);
    EXPECT_EQ(res[2].ret, 11);
    // another session neither has the key nor the handle
    struct cisc_session *s2;
    struct cisc_queue *q2;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s2), 0);
    ASSERT_EQ(cisc_queue_create(s2, &q2), 0);
    std::swap(q, q2);
    c = Run(v, &res);
    EXPECT_EQ(res[0].ret == -EBADF || res[1].ret == -ENOKEY, true) << res[0].ret;
    EXPECT_LT(c.res, 0);
    std::swap(q, q2);
    cisc_session_close(s2);
    EXPECT_EQ(cisc_close(q, fh), 0);
}

}  // namespace
}  // namespace e2e
