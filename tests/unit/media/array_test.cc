// Arrays of member media (device/media/media_array.c): labels written by
// media_array_format and checked by media_array_check (each kind of wrong
// member named), array block b at member (b / 16) % N, member block
// 1 + (b / 16 / N) * 16 + b % 16 (block 0 is the label), runs split at
// stripe edges, and a flash model per member with its own timelines.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

extern "C" {
#include "device/media/flash_media.h"
#include "device/media/media.h"
}

namespace {

class Array : public ::testing::Test {
protected:
    std::string dir;
    std::vector<std::string> names;

    void SetUp() override
    {
        char t[] = "/tmp/cisc-array-XXXXXX";
        ASSERT_NE(mkdtemp(t), nullptr);
        dir = t;
    }
    void TearDown() override { (void)system(("rm -rf " + dir).c_str()); }

    // n fresh member files of blocks blocks each, opened.
    std::vector<struct media *> Members(unsigned n, uint64_t blocks, const std::string &tag = "m")
    {
        std::vector<struct media *> m(n);
        for (unsigned i = 0; i < n; i++) {
            std::string p = dir + "/" + tag + std::to_string(i);
            names.push_back(p);
            EXPECT_EQ(media_create_file(p.c_str(), blocks * MEDIA_BLOCK_SIZE, 0, &m[i]), 0);
        }
        return m;
    }

    // Each member of m under its own one-die flash model (on clock when
    // given), the way `cisc up --media flash --members` stacks them.
    static void OneDieFlash(std::vector<struct media *> &m,
                            uint64_t (*clock)(void *) = nullptr)
    {
        for (auto &x : m) {
            struct flash_geom g = {};
            g.channels = 1;
            g.dies_per_channel = 1;
            ASSERT_EQ(flash_media_open(x, &g, nullptr, 0, &x), 0);
            if (clock)
                flash_media_set_clock(x, clock, nullptr);
        }
    }
};

void Fill(std::vector<char> &b, uint64_t first)
{
    for (size_t i = 0; i < b.size() / MEDIA_BLOCK_SIZE; i++)
        memset(&b[i * MEDIA_BLOCK_SIZE], (int)((first + i) % 251), MEDIA_BLOCK_SIZE);
}

TEST_F(Array, StripesBlocksAcrossMembersAfterTheirLabels)
{
    auto m = Members(3, 1 + 4 * MEDIA_ARRAY_STRIPE + 5);   // 5 blocks past the last stripe
    ASSERT_EQ(media_array_format(m.data(), 3), 0);
    std::vector<const char *> nm;
    for (auto &s : names)
        nm.push_back(s.c_str());
    char err[256] = "";
    ASSERT_EQ(media_array_check(m.data(), nm.data(), 3, err, sizeof err), 0) << err;
    struct media *a = nullptr;
    ASSERT_EQ(media_array_open(m.data(), 3, &a), 0);
    ASSERT_EQ(a->nblocks, 3u * 4 * MEDIA_ARRAY_STRIPE);
    EXPECT_EQ(media_array_members(a), 3u);
    EXPECT_EQ(media_fd(a), -EOPNOTSUPP);
    // One write across several stripe edges, read back whole and per member.
    uint64_t first = 7, n = 3 * MEDIA_ARRAY_STRIPE + 3;
    std::vector<char> w(n * MEDIA_BLOCK_SIZE), r(w.size());
    Fill(w, first);
    ASSERT_EQ(media_write(a, first, (uint32_t)n, w.data()), 0);
    ASSERT_EQ(media_read(a, first, (uint32_t)n, r.data()), 0);
    EXPECT_EQ(r, w);
    std::vector<char> one(MEDIA_BLOCK_SIZE);
    for (uint64_t b = first; b < first + n; b++) {
        uint64_t s = b / MEDIA_ARRAY_STRIPE;
        struct media *mm = media_array_member(a, (unsigned)(s % 3));
        uint64_t local = 1 + s / 3 * MEDIA_ARRAY_STRIPE + b % MEDIA_ARRAY_STRIPE;
        ASSERT_EQ(media_read(mm, local, 1, one.data()), 0);
        EXPECT_EQ(one[0], (char)(b % 251)) << "block " << b;
    }
    EXPECT_EQ(media_read(a, a->nblocks - 1, 2, r.data()), -EINVAL);   // past the end
    struct media_array_label l;
    ASSERT_EQ(media_array_label_read(media_array_member(a, 2), &l), 0);
    EXPECT_EQ(l.index, 2u);
    EXPECT_EQ(l.members, 3u);
    EXPECT_EQ(l.member_blocks, 4u * MEDIA_ARRAY_STRIPE);
    media_close(a);   // closes the members
}

TEST_F(Array, EachWrongMemberIsNamed)
{
    auto m = Members(2, 1 + 2 * MEDIA_ARRAY_STRIPE);
    auto other = Members(2, 1 + 2 * MEDIA_ARRAY_STRIPE, "o");
    auto plain = Members(1, 1 + 2 * MEDIA_ARRAY_STRIPE, "p");
    ASSERT_EQ(media_array_format(m.data(), 2), 0);
    ASSERT_EQ(media_array_format(other.data(), 2), 0);
    char err[256];
    auto check = [&](std::vector<struct media *> v, std::vector<std::string> n) {
        std::vector<const char *> c;
        for (auto &s : n)
            c.push_back(s.c_str());
        err[0] = '\0';
        return media_array_check(v.data(), c.data(), (unsigned)v.size(), err, sizeof err);
    };
    EXPECT_EQ(check({ m[1], m[0] }, { "B", "A" }), -EINVAL);
    EXPECT_STREQ(err, "B is member 1 of its array, given as member 0");
    EXPECT_EQ(check({ m[0] }, { "A" }), -EINVAL);
    EXPECT_STREQ(err, "A belongs to an array of 2 members, 1 given");
    EXPECT_EQ(check({ m[0], other[1] }, { "A", "X" }), -EINVAL);
    EXPECT_STREQ(err, "X belongs to another array than member 0");
    EXPECT_EQ(check({ m[0], plain[0] }, { "A", "P" }), -EINVAL);
    EXPECT_NE(std::string(err).find("P is not a ciscfs array member"), std::string::npos) << err;
    // A damaged label.
    std::vector<char> b(MEDIA_BLOCK_SIZE);
    ASSERT_EQ(media_read(m[1], 0, 1, b.data()), 0);
    b[40] ^= 1;
    ASSERT_EQ(media_write(m[1], 0, 1, b.data()), 0);
    EXPECT_EQ(check({ m[0], m[1] }, { "A", "B" }), -EUCLEAN);
    EXPECT_STREQ(err, "B: its array label is damaged");
    for (auto *x : { m[0], m[1], other[0], other[1], plain[0] })
        media_close(x);
}

// Growing an array (media.h media_array_relabel): member files extended,
// labels rewritten one by one. Cut short between labels, the members still
// check as one array, which opens at the smallest size; once all labels
// say the new size, it opens larger with every old block in its place.
TEST_F(Array, GrowingKeepsBlocksInPlaceAndACutShortGrowOpensAtTheOldSize)
{
    const uint64_t S = MEDIA_ARRAY_STRIPE;
    auto m = Members(2, 1 + 2 * S);
    ASSERT_EQ(media_array_format(m.data(), 2), 0);
    struct media *a = nullptr;
    ASSERT_EQ(media_array_open(m.data(), 2, &a), 0);
    std::vector<char> w(4 * S * MEDIA_BLOCK_SIZE), r(w.size());
    Fill(w, 0);
    ASSERT_EQ(media_write(a, 0, (uint32_t)(4 * S), w.data()), 0);
    media_close(a);
    std::vector<const char *> nm;
    for (auto &x : names)
        nm.push_back(x.c_str());
    auto reopen = [&](std::vector<struct media *> &v) {
        for (unsigned i = 0; i < 2; i++)
            ASSERT_EQ(media_open_file(nm[i], 0, &v[i]), 0);
    };
    std::vector<struct media *> v(2);
    reopen(v);
    EXPECT_EQ(media_array_relabel(v.data(), 2, 4 * S), -EINVAL);   // files not extended
    EXPECT_EQ(media_array_relabel(v.data(), 2, 2 * S + 1), -EINVAL);   // not whole stripes
    for (auto *x : v)
        media_close(x);
    for (auto &p : names)
        ASSERT_EQ(truncate(p.c_str(), (off_t)((1 + 4 * S) * MEDIA_BLOCK_SIZE)), 0);
    reopen(v);
    ASSERT_EQ(media_array_relabel(v.data(), 1, 4 * S), 0);   // member 0 only: cut short
    char err[256] = "";
    ASSERT_EQ(media_array_check(v.data(), nm.data(), 2, err, sizeof err), 0) << err;
    ASSERT_EQ(media_array_open(v.data(), 2, &a), 0);
    EXPECT_EQ(a->nblocks, 4 * S);   // the old size
    EXPECT_TRUE(media_array_uneven(a));
    ASSERT_EQ(media_read(a, 0, (uint32_t)(4 * S), r.data()), 0);
    EXPECT_EQ(r, w);
    media_close(a);
    reopen(v);
    ASSERT_EQ(media_array_relabel(v.data(), 2, 4 * S), 0);
    ASSERT_EQ(media_array_check(v.data(), nm.data(), 2, err, sizeof err), 0) << err;
    ASSERT_EQ(media_array_open(v.data(), 2, &a), 0);
    EXPECT_EQ(a->nblocks, 8 * S);
    EXPECT_FALSE(media_array_uneven(a));
    ASSERT_EQ(media_read(a, 0, (uint32_t)(4 * S), r.data()), 0);
    EXPECT_EQ(r, w);   // old blocks where they were
    ASSERT_EQ(media_write(a, 4 * S, (uint32_t)(4 * S), w.data()), 0);   // new stripes
    ASSERT_EQ(media_read(a, 4 * S, (uint32_t)(4 * S), r.data()), 0);
    EXPECT_EQ(r, w);
    media_close(a);
}

// Each member its own flash model: writes spread over both members' dies,
// and each model's clock only sees its own members' pages.
TEST_F(Array, EachMemberHasItsOwnFlashModel)
{
    auto m = Members(2, 1 + 64 * MEDIA_ARRAY_STRIPE);
    ASSERT_EQ(media_array_format(m.data(), 2), 0);
    OneDieFlash(m);
    if (HasFatalFailure())
        return;
    struct media *a = nullptr;
    ASSERT_EQ(media_array_open(m.data(), 2, &a), 0);
    std::vector<char> w(4 * MEDIA_ARRAY_STRIPE * MEDIA_BLOCK_SIZE, 'x');
    ASSERT_EQ(media_write(a, 0, 4 * MEDIA_ARRAY_STRIPE, w.data()), 0);
    for (unsigned i = 0; i < 2; i++) {
        struct flash_stats st;
        flash_stats(flash_media_model(media_array_member(a, i)), &st);
        EXPECT_EQ(st.host_writes, 2u * MEDIA_ARRAY_STRIPE) << "member " << i;
    }
    EXPECT_GT(flash_media_deadline_take(nullptr), 0u);
    media_close(a);
}

// flash_media.h invariant 9 across members: the log on member 0, the
// commit record on member 1 (whose dies are idle) after the array's flush:
// the record completes after the log's latest program.
namespace {
uint64_t fake_now;
uint64_t FakeClock(void *) { return fake_now; }
}  // namespace

TEST_F(Array, AFlushOrdersTheCommitAfterTheLogOnAnotherMember)
{
    auto m = Members(2, 1 + 64 * MEDIA_ARRAY_STRIPE);
    ASSERT_EQ(media_array_format(m.data(), 2), 0);
    OneDieFlash(m, FakeClock);
    if (HasFatalFailure())
        return;
    struct media *a = nullptr;
    ASSERT_EQ(media_array_open(m.data(), 2, &a), 0);
    const struct flash_geom *k = flash_geom(flash_media_model(m[1]));
    fake_now = 1000;
    (void)flash_media_deadline_take(nullptr);
    std::vector<char> w(4 * MEDIA_BLOCK_SIZE, 'l');
    ASSERT_EQ(media_write(a, 0, 4, w.data()), 0);              // the log: member 0
    uint64_t log_done = flash_media_deadline_take(nullptr);
    ASSERT_EQ(media_flush(a), 0);
    ASSERT_EQ(media_write(a, MEDIA_ARRAY_STRIPE, 1, w.data()), 0);   // member 1
    uint64_t commit_done = flash_media_deadline_take(nullptr);
    EXPECT_GE(commit_done, log_done + k->t_xfer_ns + k->t_prog_ns);
    media_close(a);
}

}  // namespace
