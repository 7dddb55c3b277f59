// The block runner (bpf/blocks.h): what each invocation sees (offset, len,
// flags, block index, arguments, state kept across blocks), how outputs are
// delivered, and how a run stops (negative return, oversized return,
// callback, budget), using tests/bpf/loader/blocks_probe.c.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "bpf/blocks.h"
#include "bpf/interp.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"
}

namespace {

struct Seen {
    uint64_t offset, len, flags, block, arg0, calls, first;
};

struct Trace {
    std::vector<vm_block_result> results;
    std::vector<Seen> seen;
    int stop_after = -1;
};

int on_block(void *arg, const vm_block_result *r)
{
    auto *run = static_cast<Trace *>(arg);
    run->results.push_back(*r);
    if (r->rc == 0 && r->ret == 56) {
        Seen s;
        memcpy(&s, r->out, sizeof(s));
        run->seen.push_back(s);
    }
    if (run->stop_after >= 0 && run->results.size() == (size_t)run->stop_after)
        return -EINTR;
    return 0;
}

class Blocks : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        char err[256];
        std::string path = std::string(OBJS_DIR) + "/blocks_probe.o";
        ASSERT_EQ(vm_object_load_file(path.c_str(), nullptr, &obj_, err, sizeof(err)), 0) << err;
        for (const char *name : {"probe", "ret_arg", "spin"}) {
            vm_prog *p = vm_object_find(obj_, name);
            vm_verify_result res;
            ASSERT_EQ(vm_verify(p, nullptr, &res), 0) << res.msg;
            ASSERT_EQ(vm_prepare(p), 0);
        }
        probe_ = vm_object_find(obj_, "probe");
    }
    void TearDown() override { vm_object_free(obj_); }

    int run(const vm_prog *p, const std::string &in, vm_blocks_opts o, Trace &r,
            vm_blocks_stats *st = nullptr)
    {
        o.on_block = on_block;
        o.on_block_arg = &r;
        return vm_blocks_run(p, in.data(), in.size(), &o, st);
    }

    vm_object *obj_ = nullptr;
    vm_prog *probe_ = nullptr;
};

TEST_F(Blocks, EachBlockSeesItsPlace)
{
    std::string in(10000, 'a');
    in[4096] = 'B';
    in[8192] = 'C';
    vm_blocks_opts o{};
    o.offset = 1000000;
    o.arg[0] = 77;
    Trace r;
    vm_blocks_stats st;
    ASSERT_EQ(run(probe_, in, o, r, &st), 0);
    ASSERT_EQ(r.seen.size(), 3u);
    const uint64_t want_len[3] = {4096, 4096, 10000 - 8192};
    const uint64_t want_first[3] = {'a', 'B', 'C'};
    for (uint64_t k = 0; k < 3; k++) {
        EXPECT_EQ(r.seen[k].offset, 1000000 + k * 4096);
        EXPECT_EQ(r.seen[k].len, want_len[k]);
        EXPECT_EQ(r.seen[k].block, k);
        EXPECT_EQ(r.seen[k].arg0, 77u);
        EXPECT_EQ(r.seen[k].calls, k + 1) << "state not kept across blocks";
        EXPECT_EQ(r.seen[k].first, want_first[k]);
        EXPECT_EQ(r.results[k].offset, 1000000 + k * 4096);
    }
    EXPECT_EQ(r.seen[0].flags, (uint64_t)VM_F_FIRST_BLOCK);
    EXPECT_EQ(r.seen[1].flags, 0u);
    EXPECT_EQ(r.seen[2].flags, (uint64_t)VM_F_LAST_BLOCK);
    EXPECT_EQ(st.blocks, 3u);
    EXPECT_EQ(st.in_bytes, 10000u);
    EXPECT_EQ(st.out_bytes, 3 * 56u);
    EXPECT_GT(st.insns, 0u);
    EXPECT_GE(st.insns, st.insns_max);
}

TEST_F(Blocks, SingleAndEmptyInputsAreOneBlock)
{
    for (size_t n : {0, 1, 4096}) {
        Trace r;
        ASSERT_EQ(run(probe_, std::string(n, 'x'), {}, r), 0);
        ASSERT_EQ(r.seen.size(), 1u) << n;
        EXPECT_EQ(r.seen[0].flags, (uint64_t)(VM_F_FIRST_BLOCK | VM_F_LAST_BLOCK));
        EXPECT_EQ(r.seen[0].len, n);
        EXPECT_EQ(r.seen[0].first, n ? (uint64_t)'x' : 256u);
    }
}

TEST_F(Blocks, BlockSizeOption)
{
    vm_blocks_opts o{};
    o.block_size = 100;
    Trace r;
    ASSERT_EQ(run(probe_, std::string(250, 'x'), o, r), 0);
    ASSERT_EQ(r.seen.size(), 3u);
    EXPECT_EQ(r.seen[2].offset, 200u);
    EXPECT_EQ(r.seen[2].len, 50u);
}

TEST_F(Blocks, NegativeReturnStopsTheRun)
{
    vm_blocks_opts o{};
    o.arg[1] = 2;          // fail at block 1
    o.arg[2] = 5;          // with -5
    Trace r;
    vm_blocks_stats st;
    EXPECT_EQ(run(probe_, std::string(10000, 'x'), o, r, &st), -ECANCELED);
    ASSERT_EQ(r.results.size(), 2u);
    EXPECT_EQ(r.results[1].rc, 0);
    EXPECT_EQ(r.results[1].ret, -5);
    EXPECT_EQ(st.blocks, 2u);
    EXPECT_EQ(st.out_bytes, 56u);
}

TEST_F(Blocks, ReturnLargerThanTheOutputIsAnError)
{
    vm_prog *p = vm_object_find(obj_, "ret_arg");
    vm_blocks_opts o{};
    o.out_cap = 64;
    o.arg[0] = 64;
    Trace ok;
    EXPECT_EQ(run(p, "abc", o, ok), 0);
    o.arg[0] = 65;
    Trace bad;
    EXPECT_EQ(run(p, "abc", o, bad), -ERANGE);
    ASSERT_EQ(bad.results.size(), 1u);
    EXPECT_EQ(bad.results[0].ret, 65);
}

TEST_F(Blocks, CallbackCanStopTheRun)
{
    Trace r;
    r.stop_after = 2;
    EXPECT_EQ(run(probe_, std::string(5 * 4096, 'x'), {}, r), -EINTR);
    EXPECT_EQ(r.results.size(), 2u);
}

TEST_F(Blocks, InputIsNeverWritten)
{
    std::string in(5000, 'q');
    const std::string copy = in;
    Trace r;
    ASSERT_EQ(run(probe_, in, {}, r), 0);
    EXPECT_EQ(in, copy);
}

// in_place: blocks point into the caller's input instead of a copy; the
// program sees the same bytes, lengths and places either way.
TEST_F(Blocks, InPlaceSeesTheSameBlocks)
{
    std::string in;
    for (int i = 0; i < 5000; i++)
        in += (char)('a' + i % 26 + (i / 1000));   // first bytes differ per block
    const std::string copy = in;
    for (uint32_t bs : {1000u, 333u, 4096u}) {
        vm_blocks_opts o{};
        o.block_size = bs;
        Trace a, b;
        ASSERT_EQ(run(probe_, in, o, a), 0);
        o.in_place = true;
        ASSERT_EQ(run(probe_, in, o, b), 0);
        ASSERT_EQ(a.seen.size(), b.seen.size());
        ASSERT_EQ(a.seen.size(), (in.size() + bs - 1) / bs);
        for (size_t k = 0; k < a.seen.size(); k++) {
            EXPECT_EQ(0, memcmp(&a.seen[k], &b.seen[k], sizeof(Seen))) << "block " << k;
            EXPECT_EQ(b.seen[k].first, (uint64_t)(uint8_t)in[k * bs]) << "block " << k;
        }
    }
    EXPECT_EQ(in, copy);
}

TEST_F(Blocks, RefusesUnverifiedProgramsAndBadOptions)
{
    vm_prog copy = *probe_;
    copy.verified = false;
    Trace r;
    EXPECT_EQ(run(&copy, "x", {}, r), -EPERM);
    vm_blocks_opts o{};
    o.block_size = VM_BLOCK_SIZE_MAX + 1;
    EXPECT_EQ(run(probe_, "x", o, r), -EINVAL);
    EXPECT_TRUE(r.results.empty());
}

TEST_F(Blocks, BudgetIsPerBlock)
{
    vm_prog *spin = vm_object_find(obj_, "spin");
    vm_blocks_opts o{};
    Trace enough;
    vm_blocks_stats st;
    ASSERT_EQ(run(spin, std::string(3 * 4096, 'x'), o, enough, &st), 0);
    ASSERT_EQ(enough.results.size(), 3u);
    o.budget = st.insns_max;            // exactly enough for each block
    Trace exact;
    EXPECT_EQ(run(spin, std::string(3 * 4096, 'x'), o, exact), 0);
    o.budget = st.insns_max / 2;
    Trace short_;
    EXPECT_EQ(run(spin, std::string(3 * 4096, 'x'), o, short_), -ETIME);
    ASSERT_EQ(short_.results.size(), 1u);
    EXPECT_EQ(short_.results[0].rc, -ETIME);
    EXPECT_NE(short_.results[0].fault, nullptr);
}

}  // namespace
