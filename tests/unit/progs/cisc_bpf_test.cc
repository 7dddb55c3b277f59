// Decoding of bpf steps (device/engine/fused/bpfstep.c through fop_decode): every
// field a client controls is checked, the argument block is read from the
// arena once, and the output capacity follows the block geometry.
#include <gtest/gtest.h>

#include <errno.h>
#include <string.h>

#include <vector>

extern "C" {
#include "device/engine/fused/fused.h"
#include "device/progs/progs.h"
}

namespace {

struct Vec {
    std::vector<uint8_t> arena = std::vector<uint8_t>(1 << 16);
    struct eng_arena a = { arena.data(), arena.size() };
    struct fop_limits lim = { 64ull << 20, 256ull << 20 };
    std::vector<struct wire_step> st;
    struct eng_cisc v;

    struct wire_step &Bpf(uint32_t id = 7)
    {
        struct wire_step w = {};
        w.kind = WIRE_STEP_BPF;
        w.in_step = w.in2_step = w.file_step = WIRE_NO_STEP;
        w.key_id = id;
        w.addr = 0;
        w.alen = 10000;   // input: 10000 arena bytes
        st.push_back(w);
        return st.back();
    }

    struct wire_bpf_args &Args(struct wire_step &w, uint64_t off = 1 << 15)
    {
        w.flags2 |= WIRE_BPF_ARGS;
        w.fh = off;
        return *reinterpret_cast<struct wire_bpf_args *>(arena.data() + off);
    }

    int Decode()
    {
        int r = fop_decode(&v, st.data(), (unsigned)st.size(), &a, &lim, nullptr);
        fop_release(&v);
        return r;
    }
};

}  // namespace

TEST(CiscBpfDecode, DefaultsAndAutomaticCapacity)
{
    Vec t;
    struct wire_step &w = t.Bpf();
    w.arg[0] = 11;
    w.arg[1] = 22;
    ASSERT_EQ(t.Decode(), 0);
    EXPECT_EQ(t.v.st[0].cap, 3u * 8192);   // 3 blocks of 4096, 8192 out each
    EXPECT_EQ(t.v.st[0].arg[0], 11u);
    EXPECT_EQ(t.v.st[0].arg[2], 0u);
    EXPECT_EQ(t.v.st[0].stream, 0u);
    t.st[0].len = 1000;                    // block size
    t.st[0].out_cap = 123;                 // explicit capacity wins
    ASSERT_EQ(t.Decode(), 0);
    EXPECT_EQ(t.v.st[0].cap, 123u);
}

TEST(CiscBpfDecode, ArgumentBlockIsCopiedAndChecked)
{
    Vec t;
    struct wire_step &w = t.Bpf();
    struct wire_bpf_args &b = t.Args(w);
    b.arg[3] = 0x55;
    b.stream = 99;
    b.block_out = 100;
    w.flags2 |= WIRE_BPF_MORE;
    ASSERT_EQ(t.Decode(), 0);
    EXPECT_EQ(t.v.st[0].arg[3], 0x55u);
    EXPECT_EQ(t.v.st[0].stream, 99u);
    EXPECT_EQ(t.v.st[0].block_out, 100u);
    EXPECT_EQ(t.v.st[0].cap, 300u);        // 3 blocks * 100
    EXPECT_EQ(t.v.st[0].fh, 0u);
    b.arg[3] = 0x66;                       // the client changes it afterwards: no effect
    EXPECT_EQ(t.v.st[0].arg[3], 0x55u);
    b.reserved = 1;
    EXPECT_EQ(t.Decode(), -EINVAL);
    b.reserved = 0;
    b.reserved2[1] = 1;
    EXPECT_EQ(t.Decode(), -EINVAL);
    b.reserved2[1] = 0;
    t.st[0].fh = t.arena.size() - 8;       // block outside the arena
    EXPECT_EQ(t.Decode(), -EFAULT);
}

TEST(CiscBpfDecode, BadFieldsAreRefused)
{
    struct Case {
        const char *what;
        void (*set)(struct wire_step &w);
        int err;
    } cases[] = {
        { "program id 0", [](struct wire_step &w) { w.key_id = 0; }, -EINVAL },
        { "unknown flag", [](struct wire_step &w) { w.flags2 = 1u << 5; }, -EINVAL },
        { "more without a stream", [](struct wire_step &w) { w.flags2 = WIRE_BPF_MORE; },
          -EINVAL },
        { "fh without an argument block", [](struct wire_step &w) { w.fh = 64; }, -EINVAL },
        { "mode", [](struct wire_step &w) { w.mode = 0644; }, -EINVAL },
        { "block over 64 MiB", [](struct wire_step &w) { w.len = (64ull << 20) + 1; }, -EINVAL },
        { "second input", [](struct wire_step &w) { w.in2_step = 0; }, -EINVAL },
        { "file handle flag", [](struct wire_step &w) { w.flags = WIRE_STEP_F_FH; }, -EINVAL },
        { "capacity over the step limit",
          [](struct wire_step &w) { w.out_cap = 2u << 20; }, -E2BIG },
        { "input outside the arena", [](struct wire_step &w) { w.addr = 1 << 20; }, -EFAULT },
    };
    for (const Case &c : cases) {
        Vec t;
        t.lim.step_bytes = 1 << 20;
        c.set(t.Bpf());
        EXPECT_EQ(t.Decode(), c.err) << c.what;
        EXPECT_EQ(t.v.bad_step, 0u) << c.what;
    }
}

TEST(CiscBpfDecode, TakesAnEarlierStepsOutput)
{
    Vec t;
    struct wire_step r = {};
    r.kind = WIRE_STEP_READ;
    r.flags = WIRE_STEP_F_FH;
    r.in_step = r.in2_step = r.file_step = WIRE_NO_STEP;
    r.fh = 1;
    r.len = 1 << 20;
    t.st.push_back(r);
    struct wire_step &w = t.Bpf();
    w.in_step = 0;
    ASSERT_EQ(t.Decode(), 0);
    EXPECT_EQ(t.v.st[1].cap, 256u * 8192);   // from the READ's capacity
}
