// tests/unit/fused/decode_test.cc - validation of hostile step vectors:
// bad kinds and flags, forward and self references, references to steps
// of the wrong kind, ranges outside the arena, huge lengths, memory
// limits; plus random vectors that must never crash the decoder.
#include "cisc_fixture.h"

#include <random>

namespace {

struct Dec {
    Arena a{1 << 20};
    Vec v{a};
    struct eng_cisc out = {};
    struct fop_limits lim = { 1 << 20, 4 << 20 };

    int Decode()
    {
        struct eng_arena view = a.View();
        int r = fop_decode(&out, v.st.data(), (unsigned)v.st.size(), &view, &lim, nullptr);
        fop_release(&out);
        return r;
    }
    // Decoding fails at step `bad` with err; every other step is canceled.
    void ExpectBad(unsigned bad, int err)
    {
        int r = Decode();
        EXPECT_EQ(r, err);
        EXPECT_EQ(out.status, err);
        EXPECT_EQ(out.bad_step, bad);
        for (unsigned i = 0; i < v.st.size(); i++)
            EXPECT_EQ(out.res[i].ret, i == bad ? err : -ECANCELED) << "step " << i;
    }
};

}  // namespace

TEST(Decode, ValidVectorComputesCapacities)
{
    Dec d;
    auto f = d.v.Open("/f", O_RDWR | O_CREAT);
    auto r = d.v.Read(f, 0, 4096);
    auto c = d.v.Compute(WIRE_STEP_CRC32C, r);
    auto z = d.v.Compute(WIRE_STEP_ZSTD_COMPRESS, r, "", 3);
    d.v.Append(f, c);
    d.v.OutTo(c, 4);
    ASSERT_EQ(d.Decode(), 0);
    EXPECT_EQ(d.out.n, 5u);
    EXPECT_EQ(d.out.st[r].cap, 4096u);
    EXPECT_EQ(d.out.st[c].cap, 4u);
    EXPECT_GE(d.out.st[z].cap, 4096u);
    EXPECT_EQ(d.out.mem, d.out.st[r].cap + d.out.st[c].cap + d.out.st[z].cap);
}

TEST(Decode, CountOutOfRange)
{
    Dec d;
    struct eng_arena view = d.a.View();
    struct wire_step s[WIRE_MAX_STEPS + 1] = {};
    EXPECT_EQ(fop_decode(&d.out, s, 0, &view, &d.lim, nullptr), -EINVAL);
    fop_release(&d.out);
    EXPECT_EQ(fop_decode(&d.out, s, WIRE_MAX_STEPS + 1, &view, &d.lim, nullptr), -EINVAL);
    fop_release(&d.out);
}

TEST(Decode, BadKinds)
{
    for (uint8_t k : {0, 19, 63, 64, 255}) {
        Dec d;
        d.v.Compute(WIRE_STEP_CRC32C, -1, "abc");
        d.v.Add(k);
        d.ExpectBad(1, -EINVAL);
    }
    Dec b;   /* bpf steps decode now (tests/unit/progs/cisc_bpf_test.cc); program id 0 is bad */
    b.v.Compute(WIRE_STEP_BPF, -1, "abc", 0, 16);
    b.ExpectBad(0, -EINVAL);
}

TEST(Decode, UnknownFlagsAndReservedFields)
{
    Dec d;
    d.v.Compute(WIRE_STEP_CRC32C, -1, "abc");
    d.v.st[0].flags = 0x80;
    d.ExpectBad(0, -EINVAL);
    Dec e;
    e.v.Compute(WIRE_STEP_CRC32C, -1, "abc");
    e.v.st[0].reserved = 1;
    e.ExpectBad(0, -EINVAL);
}

TEST(Decode, ForwardSelfAndWrongKindReferences)
{
    {
        Dec d;   // self
        d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.st[0].in_step = 0;
        d.ExpectBad(0, -EINVAL);
    }
    {
        Dec d;   // forward
        d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.Compute(WIRE_STEP_CRC32C, -1, "y");
        d.v.st[0].in_step = 1;
        d.ExpectBad(0, -EINVAL);
    }
    {
        Dec d;   // input from a step that produces nothing (OPEN)
        auto f = d.v.Open("f", O_RDONLY);
        d.v.Compute(WIRE_STEP_CRC32C, f);
        d.ExpectBad(1, -EINVAL);
    }
    {
        Dec d;   // input from VERIFY (no output)
        auto a = d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        auto b = d.v.Two(WIRE_STEP_VERIFY, a, a);
        d.v.Compute(WIRE_STEP_XXH3, b);
        d.ExpectBad(2, -EINVAL);
    }
    {
        Dec d;   // second input on a one-input kind
        auto a = d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.Compute(WIRE_STEP_XXH3, a);
        d.v.st[1].in2_step = 0;
        d.ExpectBad(1, -EINVAL);
    }
    {
        Dec d;   // input on a step that takes none (READ)
        auto f = d.v.Open("f", O_RDONLY);
        auto a = d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.Read(f, 0, 10);
        d.v.st[2].in_step = a;
        d.ExpectBad(2, -EINVAL);
    }
    {
        Dec d;   // VERIFY needs its first operand from a step
        d.v.Two(WIRE_STEP_VERIFY, 0, -1, "x");
        d.v.st[0].in_step = WIRE_NO_STEP;
        d.ExpectBad(0, -EINVAL);
    }
}

TEST(Decode, FileReferences)
{
    {
        Dec d;   // file step naming a compute step
        auto a = d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.Read(a, 0, 10);
        d.ExpectBad(1, -EINVAL);
    }
    {
        Dec d;   // file step naming itself / a later step / none
        d.v.Read(0, 0, 10);
        d.ExpectBad(0, -EINVAL);
        Dec e;
        e.v.Read(1, 0, 10);
        e.v.Open("f", O_RDONLY);
        e.ExpectBad(0, -EINVAL);
        Dec n;
        n.v.Add(WIRE_STEP_FSYNC);
        n.ExpectBad(0, -EINVAL);
    }
    {
        Dec d;   // both a session handle and a file step
        auto f = d.v.Open("f", O_RDONLY);
        d.v.Read(f, 0, 10);
        d.v.st[1].flags |= WIRE_STEP_F_FH;
        d.ExpectBad(1, -EINVAL);
    }
    {
        Dec d;   // a file on a non-file step
        auto f = d.v.Open("f", O_RDONLY);
        d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.st[1].file_step = f;
        d.ExpectBad(1, -EINVAL);
        Dec e;
        e.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        e.v.st[0].flags |= WIRE_STEP_F_FH;
        e.ExpectBad(0, -EINVAL);
    }
}

TEST(Decode, ArenaRangesAndPaths)
{
    {
        Dec d;   // input past the arena
        d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.st[0].addr = d.a.mem.size() - 2;
        d.v.st[0].alen = 3;
        d.ExpectBad(0, -EFAULT);
    }
    {
        Dec d;   // offset + length overflows
        d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.st[0].addr = UINT64_MAX - 1;
        d.v.st[0].alen = 16;
        d.ExpectBad(0, -EFAULT);
    }
    {
        Dec d;   // output range past the arena
        auto c = d.v.Compute(WIRE_STEP_CRC32C, -1, "x");
        d.v.OutTo(c, 4);
        d.v.st[0].out_off = d.a.mem.size() - 3;
        d.ExpectBad(0, -EFAULT);
    }
    {
        Dec d;   // output range too small for the output
        auto c = d.v.Compute(WIRE_STEP_XXH3, -1, "x");
        d.v.OutTo(c, 7);
        d.ExpectBad(0, -EINVAL);
        Dec e;
        auto f = e.v.Open("f", O_RDONLY);
        auto r = e.v.Read(f, 0, 100);
        e.v.OutTo(r, 99);
        e.ExpectBad(1, -EINVAL);
    }
    {
        Dec d;   // output to the arena from a step without output
        auto f = d.v.Open("f", O_RDWR);
        auto w = d.v.Write(f, 0, -1, "x");
        d.v.OutTo(w, 16);
        d.ExpectBad(1, -EINVAL);
    }
    {
        Dec d;   // paths: empty, embedded NUL, outside, too long
        d.v.Open("", O_RDONLY);
        d.ExpectBad(0, -EINVAL);
        Dec e;
        e.v.Open(std::string("a\0b", 3), O_RDONLY);
        e.ExpectBad(0, -EINVAL);
        Dec o;
        o.v.Open("abc", O_RDONLY);
        o.v.st[0].addr = o.a.mem.size();
        o.ExpectBad(0, -EFAULT);
        Dec l;
        l.v.Open(std::string(5000, 'a'), O_RDONLY);
        l.ExpectBad(0, -ENAMETOOLONG);
    }
}

TEST(Decode, OpenFlagsAndModes)
{
    Dec d;
    d.v.Open("f", O_RDONLY | O_DIRECTORY);
    d.ExpectBad(0, -EINVAL);
    Dec e;
    e.v.Open("f", O_ACCMODE);
    e.ExpectBad(0, -EINVAL);
    Dec m;
    m.v.Open("f", O_CREAT | O_RDWR, 0170000);
    m.ExpectBad(0, -EINVAL);
    Dec s;
    auto f = s.v.Open("f", O_RDWR);
    s.v.Fsync(f);
    s.v.st[1].flags2 = 7;
    s.ExpectBad(1, -EINVAL);
}

TEST(Decode, HugeLengthsAndMemoryLimits)
{
    {
        Dec d;   // one READ longer than a step may be
        auto f = d.v.Open("f", O_RDONLY);
        d.v.Read(f, 0, (1 << 20) + 1);
        d.ExpectBad(1, -E2BIG);
        Dec e;
        auto g = e.v.Open("f", O_RDONLY);
        e.v.Read(g, 0, UINT64_MAX);
        e.ExpectBad(1, -E2BIG);
    }
    {
        Dec d;   // the op's total crosses the op limit at step 5
        auto f = d.v.Open("f", O_RDONLY);
        for (int i = 0; i < 5; i++)
            d.v.Read(f, 0, 1 << 20);
        d.ExpectBad(5, -E2BIG);
    }
    {
        Dec d;   // capacities grow along a chain: concat of concats
        auto f = d.v.Open("f", O_RDONLY);
        auto r = d.v.Read(f, 0, 300 << 10);
        int prev = r;
        for (int i = 0; i < 3; i++)
            prev = d.v.Two(WIRE_STEP_CONCAT, prev, prev);
        d.ExpectBad(3, -E2BIG);   // 1.2 MiB > the 1 MiB step limit
    }
    {
        Dec d;   // decompress needs a bound; compress level checked
        d.v.Compute(WIRE_STEP_ZSTD_DECOMPRESS, -1, "xx");
        d.ExpectBad(0, -EINVAL);
        Dec e;
        e.v.Compute(WIRE_STEP_ZSTD_COMPRESS, -1, "xx", 99);
        e.ExpectBad(0, -EINVAL);
        Dec t;
        auto f = t.v.Open("f", O_RDWR);
        t.v.Truncate(f, 1ull << 62);
        t.ExpectBad(1, -EFBIG);
    }
}

// Random step arrays: decoding either refuses them or yields a vector
// whose every reference is backward and every range inside the arena.
TEST(Decode, RandomVectorsNeverBreakInvariants)
{
    std::mt19937_64 rng(12345);
    Dec d;
    struct eng_arena view = d.a.View();
    int accepted = 0;
    for (int iter = 0; iter < 100000; iter++) {
        unsigned n = 1 + rng() % (iter % 2 ? 3 : 8);
        std::vector<struct wire_step> st(n);
        for (auto &s : st) {
            // Plausible values, so that deeper checks are reached ...
            auto ref = [&]() { return (uint16_t)(rng() % 3 == 0 ? WIRE_NO_STEP : rng() % n); };
            s = {};
            s.kind = (uint8_t)(1 + rng() % 17);
            s.flags = (uint8_t)((rng() % 2 ? WIRE_STEP_F_OUT_ARENA : 0) |
                                (rng() % 4 ? 0 : WIRE_STEP_F_INDEPENDENT));
            s.in_step = ref();
            s.in2_step = ref();
            s.file_step = ref();
            s.fh = rng();
            s.off = rng() % 100000;
            s.len = rng() % 8192;
            s.addr = rng() % ((1 << 20) - 4096);
            s.alen = (uint32_t)(1 + rng() % 256);
            s.key_id = (uint32_t)(rng() % 3);
            s.out_off = rng() % ((1 << 20) - 65536);
            s.out_cap = (uint32_t)(rng() % 65536);
            s.flags2 = rng() % 2 ? O_RDONLY : O_RDWR | O_CREAT;
            s.mode = 0644;
            s.arg[0] = rng() % 5;
            // ... then one random byte anywhere, half of the time.
            if (rng() % 2)
                reinterpret_cast<uint8_t *>(&s)[rng() % sizeof(s)] = (uint8_t)rng();
        }
        int r = fop_decode(&d.out, st.data(), n, &view, &d.lim, nullptr);
        if (r == 0) {
            accepted++;
            for (unsigned i = 0; i < n; i++) {
                const struct fop_step &s = d.out.st[i];
                EXPECT_TRUE(s.in == WIRE_NO_STEP || s.in < i);
                EXPECT_TRUE(s.in2 == WIRE_NO_STEP || s.in2 < i);
                EXPECT_TRUE((s.flags & WIRE_STEP_F_FH) || s.file == WIRE_NO_STEP || s.file < i);
                if (s.src) {
                    EXPECT_LE(s.src + s.src_len, d.a.mem.data() + d.a.mem.size());
                }
                if (s.dst) {
                    EXPECT_LE(s.dst + s.dst_cap, d.a.mem.data() + d.a.mem.size());
                }
                EXPECT_LE(s.cap, d.lim.step_bytes);
            }
            EXPECT_LE(d.out.mem, d.lim.op_bytes);
        } else {
            EXPECT_LT(r, 0);
            EXPECT_LT(d.out.bad_step, n);
        }
        fop_release(&d.out);
    }
    EXPECT_GT(accepted, 100);
}
