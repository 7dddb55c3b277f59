// sfs_read_view (map_read.h) under each media backend: the bytes a view
// shows always equal sfs_read's; a view is given only on the mapped
// backend and only for written extents consecutive on the image, never
// for holes, unwritten extents or a file whose newest data is still in
// the journal (there sfs_read sees the newer bytes and the view must not
// show the media's older ones).
#include "sfs_fixture.h"

#include <unistd.h>

#include <random>

extern "C" {
#include "device/storagefs/map_read.h"
}

namespace {

std::string Pattern(size_t n, int seed)
{
    std::string s(n, '\0');
    std::mt19937 rng(seed);
    for (auto &c : s)
        c = (char)(rng() & 0xff);
    return s;
}

const char *const kBackends[] = {"pread", "mmap", "ram"};

}  // namespace

class MapRead : public SfsFixture, public ::testing::WithParamInterface<const char *> {
  protected:
    std::string path;

    bool Mapped() const { return std::string(GetParam()) == "mmap"; }

    void SetUp() override
    {
        if (std::string(GetParam()) == "ram") {
            Format(16384);
            return;
        }
        char tmpl[] = "/tmp/cisc-map-read-XXXXXX";
        int fd = mkstemp(tmpl);
        ASSERT_GE(fd, 0);
        close(fd);
        path = tmpl;
        struct media *m;
        ASSERT_EQ(media_create_file(path.c_str(), 16384ull * MEDIA_BLOCK_SIZE, 0, &m), 0);
        struct sfs_mkfs_opts o = {};
        ASSERT_EQ(sfs_mkfs(m, &o), 0);
        media_close(m);
        ASSERT_EQ(media_open_file(path.c_str(), Mapped() ? MEDIA_MMAP : 0, &m), 0);
        struct sfs_mount_opts mo = {};
        int r = sfs_mount(m, &mo, &fs);
        if (r)
            media_close(m);
        ASSERT_EQ(r, 0);
    }

    void TearDown() override
    {
        SfsFixture::TearDown();
        if (!path.empty())
            unlink(path.c_str());
    }

    // Views [off, off + len) of ino: the bytes shown, or the error.
    ssize_t View(uint64_t ino, uint64_t off, size_t len, std::string *out)
    {
        const uint8_t *p = nullptr;
        ssize_t n = sfs_read_view(fs, ino, off, len, &p);
        out->clear();
        if (n > 0)
            out->assign(reinterpret_cast<const char *>(p), (size_t)n);
        return n;
    }

    // Views the range: equal to sfs_read when shown; whether it was shown.
    bool ExpectViewMatches(uint64_t ino, uint64_t off, size_t len)
    {
        std::string v;
        ssize_t n = View(ino, off, len, &v);
        std::string want = Read(ino, off, len);
        if (n == -EAGAIN)
            return false;
        EXPECT_EQ((size_t)n, want.size()) << "at " << off << " len " << len;
        EXPECT_TRUE(v == want) << "bytes differ at " << off << " len " << len;
        return n > 0;
    }
};

// One extent: every range shown in place on the mapped backend (unaligned
// ends, clamped at EOF), refused elsewhere; at or past EOF 0.
TEST_P(MapRead, OneExtentShownOnlyWhenMapped)
{
    uint64_t ino = Create(SFS_ROOT_INO, "f");
    std::string d = Pattern(3 * 4096 * 64 + 123, 1);
    Write(ino, 0, d);
    const uint64_t cases[][2] = {{0, d.size()},      {1, 4095},  {4095, 2},
                                 {12345, 600000},    {0, 1},     {d.size() - 7, 4096},
                                 {100, d.size() * 2}};
    for (auto &c : cases)
        EXPECT_EQ(ExpectViewMatches(ino, c[0], c[1]), Mapped()) << c[0] << "+" << c[1];
    std::string v;
    EXPECT_EQ(View(ino, d.size(), 10, &v), Mapped() ? 0 : -EAGAIN);
    EXPECT_EQ(View(ino, d.size() + 5000, 10, &v), Mapped() ? 0 : -EAGAIN);
}

// Holes and unwritten (preallocated) extents read as zeros that are not on
// the media: a range touching one is refused, written parts around them
// are shown.
TEST_P(MapRead, HolesAndUnwrittenExtentsAreNotShown)
{
    uint64_t ino = Create(SFS_ROOT_INO, "sparse");
    std::string a = Pattern(5 * 4096, 2), b = Pattern(3 * 4096 + 10, 3);
    Write(ino, 0, a);
    Write(ino, 64 * 4096, b);   // a hole between
    ASSERT_EQ(sfs_fallocate(fs, nullptr, ino, SFS_FALLOC_KEEP_SIZE, 80 * 4096, 8 * 4096), 0);
    Write(ino, 100 * 4096, a);  // the unwritten extent is inside the file
    EXPECT_FALSE(ExpectViewMatches(ino, 0, 70 * 4096));            // across the hole
    EXPECT_FALSE(ExpectViewMatches(ino, 6 * 4096, 4096));          // inside it
    EXPECT_FALSE(ExpectViewMatches(ino, 81 * 4096, 100));          // unwritten
    EXPECT_FALSE(ExpectViewMatches(ino, 66 * 4096, 40 * 4096));    // across it
    EXPECT_EQ(ExpectViewMatches(ino, 10, 5 * 4096 - 20), Mapped());
    EXPECT_EQ(ExpectViewMatches(ino, 64 * 4096 + 1, b.size()), Mapped());
    EXPECT_EQ(ExpectViewMatches(ino, 100 * 4096, a.size()), Mapped());
}

// Two files written block by block in turns: their extents alternate on
// the image, so a range over two blocks is refused, one block is shown.
TEST_P(MapRead, ExtentsNotConsecutiveOnTheImageAreNotShown)
{
    uint64_t f = Create(SFS_ROOT_INO, "f"), g = Create(SFS_ROOT_INO, "g");
    for (int k = 0; k < 8; k++) {
        Write(f, (uint64_t)k * 4096, Pattern(4096, 10 + k));
        Write(g, (uint64_t)k * 4096, Pattern(4096, 20 + k));
    }
    struct sfs_attr a;
    ASSERT_EQ(sfs_getattr(fs, f, &a), 0);
    ASSERT_EQ(a.size, 8u * 4096);
    bool any_refused = false;
    for (int k = 0; k + 1 < 8; k++) {
        EXPECT_EQ(ExpectViewMatches(f, (uint64_t)k * 4096 + 7, 4000), Mapped());
        any_refused |= !ExpectViewMatches(f, (uint64_t)k * 4096 + 100, 4096);   // two blocks
    }
    EXPECT_TRUE(any_refused);
}

// Data journaled and not yet checkpointed is newer in the block cache than
// on the media: while so, the view is refused and sfs_read gives the new
// bytes; whenever a view is given it shows the new bytes too.
TEST_P(MapRead, JournaledNewerDataWins)
{
    uint64_t ino = Create(SFS_ROOT_INO, "j");
    std::string d = Pattern(16 * 4096, 4), n = Pattern(3 * 4096 + 5, 5);
    Write(ino, 0, d);
    ASSERT_EQ(sfs_sync(fs), 0);
    struct sfs_txn *tx;
    ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
    EXPECT_EQ(sfs_write(fs, tx, ino, 4096 + 9, n.data(), n.size()), (ssize_t)n.size());
    ASSERT_EQ(sfs_txn_commit(tx, false), 0);
    d.replace(4096 + 9, n.size(), n);
    ASSERT_TRUE(Read(ino, 0, d.size()) == d);
    std::string v;
    ssize_t r = View(ino, 0, d.size(), &v);
    EXPECT_TRUE(r == -EAGAIN || (r == (ssize_t)d.size() && v == d)) << r;
    ExpectViewMatches(ino, 4096, 8192);
    ExpectViewMatches(ino, 8 * 4096, 4096);   // a block the journal did not touch
}

TEST_P(MapRead, DirectoriesAreRefused)
{
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    std::string v;
    EXPECT_EQ(View(d, 0, 10, &v), Mapped() ? -EISDIR : -EAGAIN);
}

INSTANTIATE_TEST_SUITE_P(Backends, MapRead, ::testing::ValuesIn(kBackends),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                             return std::string(i.param);
                         });
