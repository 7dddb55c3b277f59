// Running registered programs (the bpf step's executor): blocks and their
// outputs, errors with distinct codes, the budget, counters, traces, and
// streams that continue one input across several runs.
#include "tests/unit/progs/progs_fixture.h"

#include <errno.h>
#include <string.h>

namespace {

struct BlockRec {
    uint64_t block, offset, len, flags;
};

std::vector<BlockRec> Records(const std::vector<uint8_t> &out, size_t n)
{
    std::vector<BlockRec> v(n / 32);
    memcpy(v.data(), out.data(), v.size() * 32);
    return v;
}

}  // namespace

class Run : public ProgsFixture {
  protected:
    struct progs_prog *Get(const char *obj, bool corpus = false)
    {
        struct progs_info i;
        std::string o = corpus ? CorpusObj(obj) : DevObj(obj);
        EXPECT_EQ(Load(o, nullptr, 1000, false, nullptr, &i), 0);
        struct progs_prog *pp = nullptr;
        EXPECT_EQ(progs_get(reg, 1000, i.id, &pp), 0);
        return pp;
    }

    int Go(struct progs_prog *pp, const std::string &in, std::vector<uint8_t> &out,
           struct progs_run &run, struct progs_stream *s = nullptr)
    {
        run.in = reinterpret_cast<const uint8_t *>(in.data());
        run.in_len = in.size();
        run.out = out.data();
        run.out_cap = out.size();
        run.uid = 1000;
        return progs_run(pp, s, &run);
    }
};

TEST_F(Run, BlocksAreCutAndOutputsAppended)
{
    struct progs_prog *pp = Get("upper");
    ASSERT_NE(pp, nullptr);
    std::string in(10000, 'a');
    in[4095] = 'z';
    std::vector<uint8_t> out(20000);
    struct progs_run run = {};
    ASSERT_EQ(Go(pp, in, out, run), 0);
    EXPECT_EQ(run.out_len, in.size());
    EXPECT_EQ(run.blocks, 3u);   // 4096 + 4096 + 1808
    EXPECT_EQ(std::string(out.begin(), out.begin() + 10000), std::string(4095, 'A') + "Z" +
                                                                    std::string(5904, 'A'));
    struct progs_info i;
    ASSERT_TRUE(Show("upper", &i));
    EXPECT_EQ(i.runs, 1u);
    EXPECT_EQ(i.invocations, 3u);
    EXPECT_EQ(i.insns_run, run.insns);
    EXPECT_EQ(i.bytes_in, 10000u);
    EXPECT_EQ(i.bytes_out, 10000u);
    progs_put(pp);
}

TEST_F(Run, BlockSizeAndContextFields)
{
    struct progs_prog *pp = Get("blockinfo");
    ASSERT_NE(pp, nullptr);
    std::string in(2500, 'x');
    std::vector<uint8_t> out(1000);
    struct progs_run run = {};
    run.block_size = 1000;
    run.offset = 1 << 20;
    ASSERT_EQ(Go(pp, in, out, run), 0);
    auto r = Records(out, run.out_len);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].block, 0u);
    EXPECT_EQ(r[2].block, 2u);
    EXPECT_EQ(r[1].offset, (1u << 20) + 1000u);
    EXPECT_EQ(r[2].len, 500u);
    EXPECT_EQ(r[0].flags, 1u);   // FIRST
    EXPECT_EQ(r[1].flags, 0u);
    EXPECT_EQ(r[2].flags, 2u);   // LAST
    std::string text;
    struct progs_info i;
    ASSERT_TRUE(Show("blockinfo", &i, &text));
    EXPECT_NE(text.find("uid 1000 block 2: blockinfo: 3 blocks"), std::string::npos) << text;
    progs_put(pp);
}

TEST_F(Run, EmptyInputIsOneEmptyBlock)
{
    struct progs_prog *pp = Get("blockinfo");
    ASSERT_NE(pp, nullptr);
    std::vector<uint8_t> out(64);
    struct progs_run run = {};
    ASSERT_EQ(Go(pp, "", out, run), 0);
    auto r = Records(out, run.out_len);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].flags, 3u);
    EXPECT_EQ(r[0].len, 0u);
    progs_put(pp);
}

TEST_F(Run, ProgramErrorIsPassedThroughAndCounted)
{
    struct progs_prog *pp = Get("upper");
    ASSERT_NE(pp, nullptr);
    std::string in(3 * 4096, 'q');
    std::vector<uint8_t> out(in.size());
    struct progs_run run = {};
    run.arg[0] = 1;
    run.arg[1] = 2;   // fail at block 2
    EXPECT_EQ(Go(pp, in, out, run), -EIO);
    EXPECT_EQ(run.fail_block, 2u);
    EXPECT_EQ(run.out_len, 2u * 4096);   // earlier blocks' outputs
    struct progs_info i;
    ASSERT_TRUE(Show("upper", &i));
    EXPECT_EQ(i.errors, 1u);
    EXPECT_EQ(i.budget_hits, 0u);
    progs_put(pp);
}

TEST_F(Run, BudgetIsPerInvocationAndGivesEtime)
{
    progs_close(reg);
    lim.budget = 5000;
    Open();
    struct progs_prog *pp = Get("spin");
    ASSERT_NE(pp, nullptr);
    std::string in(3 * 4096, 0);
    std::vector<uint8_t> out(64);
    struct progs_run run = {};
    run.arg[0] = 1;   // spins at block 1
    EXPECT_EQ(Go(pp, in, out, run), -ETIME);
    EXPECT_EQ(run.fail_block, 1u);
    EXPECT_EQ(run.blocks, 2u);
    EXPECT_GE(run.insns, 5000u);
    EXPECT_LT(run.insns, 5100u);   // stopped close to the budget
    struct progs_info i;
    ASSERT_TRUE(Show("spin", &i));
    EXPECT_EQ(i.budget_hits, 1u);
    EXPECT_EQ(i.errors, 0u);
    progs_put(pp);
}

// The engine's floor on a whole step (engine.h): instructions summed over
// blocks, a deadline, a cancel flag; each stops the run at the block
// boundary where it is seen, with its own errno, and a program that stays
// under its per-invocation budget in every block cannot outrun them.
TEST_F(Run, StepBoundsStopAtABlockBoundary)
{
    progs_close(reg);
    lim.budget = 20000;
    Open();
    struct progs_prog *pp = Get("burn");
    std::string in(200, 0);
    std::vector<uint8_t> out(400);
    struct progs_run run = {};
    run.block_size = 1;
    run.arg[0] = 1000;                 // well under the budget in every block
    ASSERT_EQ(Go(pp, in, out, run), 0);
    ASSERT_EQ(run.blocks, 200u);
    uint64_t per_block = run.insns / run.blocks;
    EXPECT_LT(per_block, 20000u);
    run = {};
    run.block_size = 1;
    run.arg[0] = 1000;
    run.insns_max = 10 * per_block + per_block / 2;
    EXPECT_EQ(Go(pp, in, out, run), -ETIME);
    EXPECT_EQ(run.blocks, 11u);        // the block that went past it ran, no more
    EXPECT_EQ(run.fail_block, 10u);
    run = {};
    run.block_size = 1;
    run.arg[0] = 1000;
    run.deadline_ns = 1;               // long past
    EXPECT_EQ(Go(pp, in, out, run), -ETIME);
    EXPECT_EQ(run.blocks, 1u);
    uint32_t cancel = 1;
    run = {};
    run.block_size = 1;
    run.arg[0] = 1000;
    run.cancel = &cancel;
    EXPECT_EQ(Go(pp, in, out, run), -ECANCELED);
    EXPECT_EQ(run.blocks, 1u);
    cancel = 0;
    run.cancel = &cancel;
    EXPECT_EQ(Go(pp, in, out, run), 0);
    struct progs_info i;
    ASSERT_TRUE(Show("burn", &i));
    EXPECT_EQ(i.budget_hits, 2u);      // the step bounds count as budget hits
    EXPECT_EQ(i.errors, 1u);           // the cancel as an error
    progs_put(pp);
}

TEST_F(Run, OutputLargerThanTheStepFails)
{
    struct progs_prog *pp = Get("upper");
    ASSERT_NE(pp, nullptr);
    std::string in(5000, 'a');
    std::vector<uint8_t> out(4500);
    struct progs_run run = {};
    EXPECT_EQ(Go(pp, in, out, run), -EOVERFLOW);
    EXPECT_EQ(run.out_len, 4096u);
    // a per-block buffer too small: upper itself fails with -ENOSPC
    run = {};
    run.block_out = 100;
    EXPECT_EQ(Go(pp, in, out, run), -ENOSPC);
    progs_put(pp);
}

TEST_F(Run, OutCapCoversEveryBlock)
{
    EXPECT_EQ(progs_out_cap(0, 0, 0), 8192);
    EXPECT_EQ(progs_out_cap(4096, 0, 0), 8192);
    EXPECT_EQ(progs_out_cap(4097, 0, 0), 16384);
    EXPECT_EQ(progs_out_cap(10, 4, 1), 3);
    EXPECT_EQ(progs_out_cap(10, (64u << 20) + 1, 0), -EINVAL);
}

// One input split over several runs of a stream gives what one run gives.
TEST_F(Run, StreamContinuesStateAndBlocks)
{
    struct progs_prog *pp = Get("wc", true);
    ASSERT_NE(pp, nullptr);
    std::string text;
    for (int i = 0; i < 3000; i++)
        text += "word" + std::to_string(i) + (i % 7 ? " " : "\n");
    std::vector<uint8_t> whole(64), part(64);
    struct progs_run run = {};
    ASSERT_EQ(Go(pp, text, whole, run), 0);
    ASSERT_EQ(run.out_len, 24u);

    uint64_t token;
    int owner;
    ASSERT_EQ(progs_stream_open(reg, &owner, 1000, &token), 0);
    struct progs_stream *s;
    size_t chunk = 3 * 4096, off = 0;
    while (true) {
        ASSERT_EQ(progs_stream_get(reg, 1000, token, &s), 0);
        size_t n = std::min(chunk, text.size() - off);
        run = {};
        run.more = off + n < text.size();
        run.offset = off;
        ASSERT_EQ(Go(pp, text.substr(off, n), part, run, s), 0);
        progs_stream_put(s);
        off += n;
        if (!run.more)
            break;
        EXPECT_EQ(run.out_len, 0u);   // wc writes only at the last block
    }
    ASSERT_EQ(run.out_len, 24u);
    EXPECT_EQ(memcmp(whole.data(), part.data(), 24), 0);
    ASSERT_EQ(progs_stream_close(reg, &owner, token), 0);
    progs_put(pp);
}

TEST_F(Run, StreamsBelongToTheirOwnerAndOneStep)
{
    int a = 0, b = 0;             // owners: only their addresses matter
    uint64_t t;
    ASSERT_EQ(progs_stream_open(reg, &a, 1000, &t), 0);
    EXPECT_NE(t, 0u);
    struct progs_stream *s, *s2;
    EXPECT_EQ(progs_stream_get(reg, 1001, t, &s), -ENOENT);   // another uid
    ASSERT_EQ(progs_stream_get(reg, 1000, t, &s), 0);
    EXPECT_EQ(progs_stream_get(reg, 1000, t, &s2), -EBUSY);   // one step at a time
    EXPECT_EQ(progs_stream_close(reg, &b, t), -ENOENT);       // another connection
    progs_owner_gone(reg, &a);                                // closed while in use
    EXPECT_EQ(progs_stream_get(reg, 1000, t, &s2), -ENOENT);
    progs_stream_put(s);                                      // freed now
    // a stream is bound to the first program that ran in it
    struct progs_prog *p1 = Get("upper"), *p2 = Get("blockinfo");
    ASSERT_NE(p1, nullptr);
    ASSERT_NE(p2, nullptr);
    ASSERT_EQ(progs_stream_open(reg, &a, 1000, &t), 0);
    ASSERT_EQ(progs_stream_get(reg, 1000, t, &s), 0);
    std::vector<uint8_t> out(100);
    struct progs_run run = {};
    run.more = true;
    ASSERT_EQ(Go(p1, "abc", out, run, s), 0);
    run = {};
    EXPECT_EQ(Go(p2, "abc", out, run, s), -EINVAL);
    progs_stream_put(s);
    run = {};
    run.more = true;
    EXPECT_EQ(Go(p1, "abc", out, run, nullptr), -EINVAL);   // more needs a stream
    progs_put(p1);
    progs_put(p2);
}

// A program unloaded while a step holds it still runs to the end.
TEST_F(Run, UnloadDuringRunIsSafe)
{
    struct progs_prog *pp = Get("upper");
    ASSERT_NE(pp, nullptr);
    ASSERT_EQ(progs_unload(reg, 1000, pp->info.id, nullptr), 0);
    std::vector<uint8_t> out(16);
    struct progs_run run = {};
    EXPECT_EQ(Go(pp, "hello", out, run), 0);
    EXPECT_EQ(std::string(out.begin(), out.begin() + 5), "HELLO");
    progs_put(pp);
}
