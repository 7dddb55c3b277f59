// tests/unit/compute/compute_test.cc - the built-in compute steps: known
// answers, round trips, bounds, and hostile inputs (corrupt zstd, forged
// ciphertext) that must fail cleanly.
#include <gtest/gtest.h>

#include "device/compute/compute.h"
#include "device/compute/keys.h"
#include "proto/steps.h"
#include "proto/wire.h"

#include <errno.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

namespace {

struct Io {
    std::vector<uint8_t> out;
    struct cmp_io io = {};
    Io(const void *in, size_t n, size_t cap) : out(cap)
    {
        io.in = static_cast<const uint8_t *>(in);
        io.in_len = n;
        io.out = out.data();
        io.out_cap = cap;
    }
    std::string str() const { return std::string(out.begin(), out.begin() + io.out_len); }
};

std::vector<uint8_t> Text(size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(n);
    const char words[] = "the quick brown fox jumps over the lazy dog ";
    for (size_t i = 0; i < n; i++)
        v[i] = (rng() % 8) ? static_cast<uint8_t>(words[i % (sizeof(words) - 1)])
                           : static_cast<uint8_t>(rng());
    return v;
}

}  // namespace

TEST(Compute, Crc32cKnownAnswerAndSeed)
{
    Io a("123456789", 9, 4);
    ASSERT_EQ(cmp_run(WIRE_STEP_CRC32C, &a.io), 0);
    ASSERT_EQ(a.io.out_len, 4u);
    uint32_t v;
    memcpy(&v, a.out.data(), 4);
    EXPECT_EQ(v, 0xE3069283u);
    // Chaining through the seed equals one pass.
    Io b("1234", 4, 4);
    ASSERT_EQ(cmp_run(WIRE_STEP_CRC32C, &b.io), 0);
    uint32_t part;
    memcpy(&part, b.out.data(), 4);
    Io c("56789", 5, 4);
    c.io.arg[0] = part;
    ASSERT_EQ(cmp_run(WIRE_STEP_CRC32C, &c.io), 0);
    EXPECT_EQ(memcmp(c.out.data(), a.out.data(), 4), 0);
}

TEST(Compute, FixedOutputsRefuseSmallBuffers)
{
    Io a("x", 1, 3);
    EXPECT_EQ(cmp_run(WIRE_STEP_CRC32C, &a.io), -EOVERFLOW);
    Io b("x", 1, 7);
    EXPECT_EQ(cmp_run(WIRE_STEP_XXH3, &b.io), -EOVERFLOW);
}

TEST(Compute, Xxh3SeedsDiffer)
{
    Io a("abc", 3, 8), b("abc", 3, 8);
    b.io.arg[0] = 1;
    ASSERT_EQ(cmp_run(WIRE_STEP_XXH3, &a.io), 0);
    ASSERT_EQ(cmp_run(WIRE_STEP_XXH3, &b.io), 0);
    EXPECT_EQ(a.io.out_len, 8u);
    EXPECT_NE(a.str(), b.str());
}

TEST(Compute, ZstdRoundTripAtSeveralLevels)
{
    auto data = Text(100000, 1);
    for (int level : {-5, 1, 3, 19}) {
        uint64_t args[4] = { (uint64_t)(int64_t)level };
        ASSERT_EQ(cmp_check_args(WIRE_STEP_ZSTD_COMPRESS, args), 0);
        int64_t cap = cmp_out_cap(WIRE_STEP_ZSTD_COMPRESS, data.size(), 0, 0, args);
        ASSERT_GT(cap, 0);
        Io z(data.data(), data.size(), (size_t)cap);
        z.io.arg[0] = args[0];
        ASSERT_EQ(cmp_run(WIRE_STEP_ZSTD_COMPRESS, &z.io), 0);
        EXPECT_LT(z.io.out_len, data.size());
        Io d(z.out.data(), z.io.out_len, data.size());
        ASSERT_EQ(cmp_run(WIRE_STEP_ZSTD_DECOMPRESS, &d.io), 0);
        ASSERT_EQ(d.io.out_len, data.size());
        EXPECT_EQ(memcmp(d.out.data(), data.data(), data.size()), 0);
    }
}

TEST(Compute, ZstdLevelOutOfRangeRefused)
{
    uint64_t args[4] = { 1000 };
    EXPECT_EQ(cmp_check_args(WIRE_STEP_ZSTD_COMPRESS, args), -EINVAL);
    args[0] = (uint64_t)(int64_t)-1000000;
    EXPECT_EQ(cmp_check_args(WIRE_STEP_ZSTD_COMPRESS, args), -EINVAL);
}

TEST(Compute, ZstdDecompressBoundedByOutCap)
{
    auto data = Text(50000, 2);
    Io z(data.data(), data.size(), cmp_zstd_bound(data.size()));
    z.io.arg[0] = 3;
    ASSERT_EQ(cmp_run(WIRE_STEP_ZSTD_COMPRESS, &z.io), 0);
    Io d(z.out.data(), z.io.out_len, data.size() - 1);
    EXPECT_EQ(cmp_run(WIRE_STEP_ZSTD_DECOMPRESS, &d.io), -EOVERFLOW);
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_ZSTD_DECOMPRESS, 10, 0, 0, d.io.arg), -EINVAL);
}

TEST(Compute, ZstdCorruptInputIsBadMessage)
{
    auto data = Text(20000, 3);
    Io z(data.data(), data.size(), cmp_zstd_bound(data.size()));
    z.io.arg[0] = 3;
    ASSERT_EQ(cmp_run(WIRE_STEP_ZSTD_COMPRESS, &z.io), 0);
    std::vector<uint8_t> bad(z.out.begin(), z.out.begin() + z.io.out_len);
    bad[bad.size() / 2] ^= 0x5a;
    bad[bad.size() - 2] ^= 0xff;   // the content checksum, if the payload survived
    Io d(bad.data(), bad.size(), data.size());
    EXPECT_EQ(cmp_run(WIRE_STEP_ZSTD_DECOMPRESS, &d.io), -EBADMSG);
    Io t(z.out.data(), z.io.out_len / 2, data.size());   // truncated frame
    EXPECT_EQ(cmp_run(WIRE_STEP_ZSTD_DECOMPRESS, &t.io), -EBADMSG);
    Io e(z.out.data(), 0, data.size());                   // empty input
    EXPECT_EQ(cmp_run(WIRE_STEP_ZSTD_DECOMPRESS, &e.io), -EBADMSG);
}

TEST(Compute, ZstdRandomGarbageNeverCrashes)
{
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; i++) {
        std::vector<uint8_t> junk(rng() % 300);
        for (auto &b : junk)
            b = static_cast<uint8_t>(rng());
        if (junk.size() >= 4 && (i & 1)) {   // a valid magic, garbage after it
            junk[0] = 0x28, junk[1] = 0xb5, junk[2] = 0x2f, junk[3] = 0xfd;
        }
        Io d(junk.data(), junk.size(), 4096);
        int r = cmp_run(WIRE_STEP_ZSTD_DECOMPRESS, &d.io);
        EXPECT_TRUE(r == -EBADMSG || r == -EOVERFLOW || r == 0) << r;
        EXPECT_LE(d.io.out_len, 4096u);
    }
}

class Crypt : public ::testing::Test {
protected:
    struct ckey_table *keys = nullptr;
    uint32_t id = 0;
    void SetUp() override
    {
        ASSERT_EQ(ckey_table_create(&keys), 0);
        uint8_t k[CKEY_BYTES];
        for (unsigned i = 0; i < sizeof(k); i++)
            k[i] = static_cast<uint8_t>(i * 7 + 1);
        ASSERT_EQ(ckey_add(keys, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id), 0);
    }
    void TearDown() override { ckey_table_destroy(keys); }

    std::vector<uint8_t> Seal(const std::vector<uint8_t> &m)
    {
        Io e(m.data(), m.size(), m.size() + CMP_SEAL_BYTES);
        e.io.keys = keys;
        e.io.key_id = id;
        EXPECT_EQ(cmp_run(WIRE_STEP_ENCRYPT, &e.io), 0);
        EXPECT_EQ(e.io.out_len, m.size() + CMP_SEAL_BYTES);
        return std::vector<uint8_t>(e.out.begin(), e.out.begin() + e.io.out_len);
    }
    int Open(const std::vector<uint8_t> &c, std::vector<uint8_t> *m)
    {
        Io d(c.data(), c.size(), c.size());
        d.io.keys = keys;
        d.io.key_id = id;
        int r = cmp_run(WIRE_STEP_DECRYPT, &d.io);
        if (!r)
            m->assign(d.out.begin(), d.out.begin() + d.io.out_len);
        return r;
    }
};

TEST_F(Crypt, RoundTripWithFreshNonces)
{
    auto m = Text(5000, 4);
    auto c1 = Seal(m), c2 = Seal(m);
    EXPECT_NE(c1, c2);   // a new random nonce each time
    EXPECT_NE(memcmp(c1.data(), c2.data(), CMP_NONCE_BYTES), 0);
    std::vector<uint8_t> back;
    ASSERT_EQ(Open(c1, &back), 0);
    EXPECT_EQ(back, m);
    ASSERT_EQ(Open(c2, &back), 0);
    EXPECT_EQ(back, m);
}

TEST_F(Crypt, EmptyMessage)
{
    std::vector<uint8_t> m, back{1};
    auto c = Seal(m);
    ASSERT_EQ(c.size(), CMP_SEAL_BYTES);
    ASSERT_EQ(Open(c, &back), 0);
    EXPECT_TRUE(back.empty());
}

TEST_F(Crypt, ForgedOrTruncatedIsBadMessage)
{
    auto c = Seal(Text(100, 5));
    std::vector<uint8_t> back;
    for (size_t i : {size_t(0), size_t(CMP_NONCE_BYTES), c.size() / 2, c.size() - 1}) {
        auto f = c;
        f[i] ^= 1;
        EXPECT_EQ(Open(f, &back), -EBADMSG) << "flipped byte " << i;
    }
    std::vector<uint8_t> shortc(c.begin(), c.begin() + CMP_SEAL_BYTES - 1);
    EXPECT_EQ(Open(shortc, &back), -EBADMSG);
    std::vector<uint8_t> cut(c.begin(), c.end() - 1);
    EXPECT_EQ(Open(cut, &back), -EBADMSG);
}

TEST_F(Crypt, UnknownOrRemovedKeyIsNoKey)
{
    auto m = Text(10, 6);
    Io e(m.data(), m.size(), m.size() + CMP_SEAL_BYTES);
    e.io.keys = keys;
    e.io.key_id = id + 1;
    EXPECT_EQ(cmp_run(WIRE_STEP_ENCRYPT, &e.io), -ENOKEY);
    e.io.keys = nullptr;
    e.io.key_id = id;
    EXPECT_EQ(cmp_run(WIRE_STEP_ENCRYPT, &e.io), -ENOKEY);
    auto c = Seal(m);
    ASSERT_EQ(ckey_remove(keys, id), 0);
    std::vector<uint8_t> back;
    EXPECT_EQ(Open(c, &back), -ENOKEY);
}

TEST_F(Crypt, SmallOutputRefused)
{
    auto m = Text(10, 7);
    Io e(m.data(), m.size(), m.size() + CMP_SEAL_BYTES - 1);
    e.io.keys = keys;
    e.io.key_id = id;
    EXPECT_EQ(cmp_run(WIRE_STEP_ENCRYPT, &e.io), -EOVERFLOW);
}

TEST(Compute, VerifyPatchConcat)
{
    Io v("abc", 3, 0);
    v.io.in2 = (const uint8_t *)"abc";
    v.io.in2_len = 3;
    EXPECT_EQ(cmp_run(WIRE_STEP_VERIFY, &v.io), 0);
    v.io.in2 = (const uint8_t *)"abd";
    EXPECT_EQ(cmp_run(WIRE_STEP_VERIFY, &v.io), -EBADMSG);
    v.io.in2_len = 2;
    EXPECT_EQ(cmp_run(WIRE_STEP_VERIFY, &v.io), -EBADMSG);

    uint64_t args[4] = { 2 };
    Io p("hello", 5, (size_t)cmp_out_cap(WIRE_STEP_PATCH, 5, 2, 0, args));
    p.io.in2 = (const uint8_t *)"XY";
    p.io.in2_len = 2;
    p.io.arg[0] = 2;
    ASSERT_EQ(cmp_run(WIRE_STEP_PATCH, &p.io), 0);
    EXPECT_EQ(p.str(), "heXYo");
    args[0] = 7;   // past the end: the gap reads as zeros
    Io g("hello", 5, (size_t)cmp_out_cap(WIRE_STEP_PATCH, 5, 2, 0, args));
    g.io.in2 = (const uint8_t *)"XY";
    g.io.in2_len = 2;
    g.io.arg[0] = 7;
    ASSERT_EQ(cmp_run(WIRE_STEP_PATCH, &g.io), 0);
    EXPECT_EQ(g.str(), std::string("hello\0\0XY", 9));
    g.io.arg[0] = 8;   // does not fit the capacity computed for offset 7
    EXPECT_EQ(cmp_run(WIRE_STEP_PATCH, &g.io), -EOVERFLOW);

    Io c("ab", 2, 5);
    c.io.in2 = (const uint8_t *)"cde";
    c.io.in2_len = 3;
    ASSERT_EQ(cmp_run(WIRE_STEP_CONCAT, &c.io), 0);
    EXPECT_EQ(c.str(), "abcde");
    c.io.out_cap = 4;
    EXPECT_EQ(cmp_run(WIRE_STEP_CONCAT, &c.io), -EOVERFLOW);
}

TEST(Compute, OutCapBoundsAndKinds)
{
    uint64_t a[4] = {};
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_ENCRYPT, 100, 0, 0, a), 100 + (int64_t)CMP_SEAL_BYTES);
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_DECRYPT, 100, 0, 0, a), 100 - (int64_t)CMP_SEAL_BYTES);
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_DECRYPT, 10, 0, 0, a), 0);
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_CONCAT, 10, 20, 0, a), 30);
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_CONCAT, 10, 20, 25, a), 25);
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_READ, 10, 0, 0, a), -EINVAL);
    a[0] = 1ull << 50;
    EXPECT_EQ(cmp_out_cap(WIRE_STEP_PATCH, 10, 20, 0, a), -EINVAL);
    EXPECT_FALSE(cmp_is_compute(WIRE_STEP_OPEN));
    EXPECT_FALSE(cmp_is_compute(200));
    EXPECT_TRUE(cmp_is_compute(WIRE_STEP_CRC32C));
    // The bpf step is engine/fused/bpfstep.c's, not a built-in.
    EXPECT_EQ(cmp_check_args(WIRE_STEP_BPF, a), -EINVAL);
    Io x("a", 1, 8);
    EXPECT_EQ(cmp_run(200, &x.io), -EINVAL);
    EXPECT_EQ(cmp_run(WIRE_STEP_BPF, &x.io), -EINVAL);
}

// The built-in kinds are the compute kinds of the table of step kinds
// (proto/steps.h) but BPF, and their output capacities follow its rows.
TEST(Compute, KindsFollowTheStepTable)
{
    uint64_t a[4] = {};
    for (unsigned k = 0; k < 256; k++) {
        bool compute = step_has(k, STEP_COMPUTE) && k != WIRE_STEP_BPF;
        EXPECT_EQ(cmp_is_compute(k) != 0, compute) << "kind " << k;
        if (!compute)
            continue;
        const struct step_kind *row = step_kind(k);
        int64_t cap = cmp_out_cap(k, 100, 100, 1000, a);
        if (!(row->props & STEP_OUTPUT))
            EXPECT_EQ(cap, 0) << row->name;
        else if (row->out_size)
            EXPECT_EQ(cap, row->out_size) << row->name;
        else
            EXPECT_GT(cap, 0) << row->name;
    }
}
