// examples/bpf/grep.c through the runtime (bpf/blocks.h, as the device
// runs it): the same lines as a reference grep -F for every block size,
// texts built to put matches, line ends and long lines at block edges,
// adjacent matching lines, the carried-line limit, bad patterns, and the
// instruction cost of matching lines (it must not depend on line length).
#include <gtest/gtest.h>

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

using Bytes = std::string;

Bytes grep_ref(const Bytes &in, const Bytes &pat)
{
    Bytes out;
    size_t pos = 0;
    while (pos < in.size()) {
        size_t nl = in.find('\n', pos);
        size_t end = nl == Bytes::npos ? in.size() : nl + 1;
        if (in.substr(pos, end - pos).find(pat) != Bytes::npos)
            out += in.substr(pos, end - pos);
        pos = end;
    }
    return out;
}

uint64_t rng(uint64_t &s)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

// Lines of 0 to ~3000 bytes (some over 512, to use every copy size),
// runs of adjacent matches, the pattern at line starts and ends, partial
// patterns, and a last line without '\n' that matches.
Bytes text(uint64_t seed, const Bytes &pat, size_t lines)
{
    static const char *const words[] = {"alpha", "beta", "ERR", "disk", "42", "x", "ok",
                                        "ERR_DISK", "FULL", "\t"};
    uint64_t s = seed;
    Bytes t;
    for (size_t l = 0; l < lines; l++) {
        uint64_t r = rng(s) % 100;
        size_t words_n = r < 5 ? 0 : r < 10 ? 300 + rng(s) % 300 : rng(s) % 20;
        Bytes line;
        if (r % 7 == 0)
            line += pat;
        for (size_t w = 0; w < words_n; w++)
            line += Bytes(words[rng(s) % 10]) + " ";
        if (r % 11 == 0)
            line += pat;
        if (r % 13 == 0 && line.size() > 4)
            line.insert(line.size() / 2, pat);
        t += line + "\n";
    }
    return t + "tail " + pat;
}

class GrepExample : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        char err[512] = "";
        std::string path = std::string(EXAMPLE_DIR) + "/grep.o";
        ASSERT_EQ(vm_object_load_file(path.c_str(), nullptr, &obj_, err, sizeof(err)), 0) << err;
        prog_ = vm_object_find(obj_, "grep");
        ASSERT_NE(prog_, nullptr);
        vm_verify_result res;
        std::memset(&res, 0, sizeof(res));
        ASSERT_EQ(vm_verify(prog_, nullptr, &res), 0) << res.msg;
        ASSERT_EQ(vm_prepare(prog_), 0);
    }
    void TearDown() override { vm_object_free(obj_); }

    struct Out {
        Bytes out;
        uint64_t insns = 0;
        int rc = 0;
        int32_t last_ret = 0;   // the last block's return value
    };

    static int collect(void *arg, const vm_block_result *r)
    {
        auto *o = static_cast<Out *>(arg);
        o->last_ret = r->ret;
        if (r->rc == 0 && r->ret > 0)
            o->out.append(reinterpret_cast<const char *>(r->out), (size_t)r->ret);
        return 0;
    }

    // Runs grep over in with the pattern in arg[0..3], fast or checked.
    Out run(const Bytes &in, const Bytes &pat, uint32_t bs, bool checked = false,
            uint32_t out_cap = 0)
    {
        vm_blocks_opts o{};
        o.block_size = bs;
        o.out_cap = out_cap ? out_cap : bs + 8192;
        std::memcpy(o.arg, pat.data(), std::min<size_t>(pat.size(), 32));
        o.checked = checked;
        Out res;
        o.on_block = collect;
        o.on_block_arg = &res;
        vm_blocks_stats st{};
        res.rc = vm_blocks_run(prog_, in.data(), in.size(), &o, &st);
        res.insns = st.insns;
        return res;
    }

    vm_object *obj_ = nullptr;
    vm_prog *prog_ = nullptr;
};

TEST_F(GrepExample, SameLinesAsReferenceAtEveryBlockSize)
{
    for (Bytes pat : {"ERR_DISK_FULL", "x", "ERR", "alpha beta", "\t"}) {
        Bytes in = text(pat.size() * 7919, pat, 400);
        Bytes want = grep_ref(in, pat);
        ASSERT_FALSE(want.empty());
        for (uint32_t bs : {1u, 7u, 64u, 333u, 4096u, 65536u, (uint32_t)in.size()}) {
            for (bool checked : {false, true}) {
                if (checked && bs < 64)
                    continue;   // slow and adds nothing
                Out r = run(in, pat, bs, checked);
                ASSERT_EQ(r.rc, 0) << "pattern '" << pat << "' block " << bs;
                ASSERT_EQ(r.out.size(), want.size()) << "pattern '" << pat << "' block " << bs;
                EXPECT_TRUE(r.out == want) << "pattern '" << pat << "' block " << bs;
            }
        }
    }
}

TEST_F(GrepExample, EdgesOfLinesAndInput)
{
    struct {
        Bytes in, pat;
    } cases[] = {
        {"", "a"},
        {"a", "a"},                        // one line, no '\n'
        {"\n\n\n", "a"},
        {"aaa\n", "aa"},                   // overlapping occurrences
        {"ab\nba\nab", "ab"},              // first and last line
        {"xx\nab\nab\nab\nxx\nab\n", "ab"},// a run of adjacent lines, then another
        {Bytes(32, 'p') + "\n", Bytes(32, 'p')},   // the longest pattern, whole line
        {"a" + Bytes(31, 'p') + "\n" + Bytes(31, 'p') + "\n", Bytes(32, 'p')},
        {"ERR_DIS\nK_FULL\n", "ERR_DISK_FULL"},   // split by a line end: no match
    };
    for (auto &c : cases)
        for (uint32_t bs : {1u, 2u, 3u, 4096u}) {
            Out r = run(c.in, c.pat, bs);
            ASSERT_EQ(r.rc, 0) << "'" << c.in << "' block " << bs;
            EXPECT_EQ(r.out, grep_ref(c.in, c.pat)) << "'" << c.in << "' block " << bs;
        }
}

TEST_F(GrepExample, BadPatternsAreRefused)
{
    for (Bytes pat : {"", "a\nb"}) {
        Out r = run("abc\n", pat, 4096);
        EXPECT_EQ(r.rc, -ECANCELED);   // the program returned an errno ...
        EXPECT_EQ(r.last_ret, -EINVAL) << "'" << pat << "'";
    }
}

// A line crossing a block edge is carried in the state area; one longer
// than the area fails the run instead of giving a wrong answer. Lines in
// one block have no such limit.
TEST_F(GrepExample, CarriedLineLimit)
{
    Bytes ok = Bytes(3900, 'a') + "needle\n";
    EXPECT_TRUE(run(ok + ok, "needle", 1000).out == ok + ok);
    Bytes big = Bytes(5000, 'a') + "needle\n";
    Out r = run(big, "needle", 1000);
    EXPECT_EQ(r.rc, -ECANCELED);
    EXPECT_EQ(r.last_ret, -E2BIG);
    EXPECT_TRUE(run(big + big, "needle", 65536).out == big + big);
}

// The cost of a matching line does not grow with its length (the copies
// are helpers), and a non-matching megabyte costs the helper charge only.
TEST_F(GrepExample, CostPerMatchingLineNotPerByte)
{
    Bytes short_lines, long_lines;
    for (int i = 0; i < 1000; i++) {
        short_lines += "needle " + Bytes(20, 'a') + "\n";
        long_lines += "needle " + Bytes(2000, 'a') + "\n";
    }
    uint32_t bs = 4 << 20;
    Out s = run(short_lines, "needle", bs), l = run(long_lines, "needle", bs);
    ASSERT_EQ(s.rc, 0);
    ASSERT_EQ(l.rc, 0);
    EXPECT_TRUE(l.out == long_lines);
    EXPECT_LT(l.insns, s.insns + long_lines.size() / 16) << "cost grows with line length";
    EXPECT_LT(s.insns / 1000, 100u) << "more than 100 instructions per matching line";

    Bytes none(1 << 20, 'a');
    none += "\n";
    Out n = run(none, "needle", bs, false, 64);
    ASSERT_EQ(n.rc, 0);
    EXPECT_TRUE(n.out.empty());
    EXPECT_LT(n.insns, 200 + 2 * none.size() / VM_HELPER_COST_BYTES);
}

} // namespace
