// The media seam: the file backend (whole-block I/O, short files read as
// -EIO, exclusive lock, hole punching, read-only), the same I/O through a
// mapping (MEDIA_MMAP), and the fault backend (failed, sticky, torn
// writes, power cuts, what survives a snapshot).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include "device/media/media.h"
#include "device/media/media_fault.h"
}

namespace {

std::string TempPath(const char *tag)
{
    const char *dir = getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/cisc-media-" + tag + "-" +
           std::to_string(getpid()) + ".img";
}

std::string Block(char c)
{
    return std::string(MEDIA_BLOCK_SIZE, c);
}

std::string ReadBlocks(struct media *m, uint64_t blk, uint32_t n)
{
    std::string s((size_t)n * MEDIA_BLOCK_SIZE, '\0');
    EXPECT_EQ(media_read(m, blk, n, &s[0]), 0);
    return s;
}

}  // namespace

TEST(MediaFile, CreateWriteReadFlushDiscard)
{
    std::string p = TempPath("rw");
    struct media *m;
    ASSERT_EQ(media_create_file(p.c_str(), 64 * MEDIA_BLOCK_SIZE + 100, 0, &m), 0);
    EXPECT_EQ(m->nblocks, 64u);
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 64 * MEDIA_BLOCK_SIZE);
    EXPECT_LT(st.st_blocks, 64);                 // sparse
    std::string two = Block('a') + Block('b');
    ASSERT_EQ(media_write(m, 10, 2, two.data()), 0);
    EXPECT_EQ(ReadBlocks(m, 10, 2), two);
    EXPECT_EQ(ReadBlocks(m, 0, 1), Block('\0'));
    EXPECT_EQ(media_flush(m), 0);
    ASSERT_EQ(media_discard(m, 10, 1), 0);
    EXPECT_EQ(ReadBlocks(m, 10, 2), Block('\0') + Block('b'));
    char buf[MEDIA_BLOCK_SIZE];
    EXPECT_EQ(media_read(m, 63, 2, buf), -EINVAL);   // past the end
    EXPECT_EQ(media_write(m, 64, 1, buf), -EINVAL);
    media_close(m);
    unlink(p.c_str());
}

TEST(MediaFile, SecondOpenerGetsEbusyAndReadOnlyRefusesWrites)
{
    std::string p = TempPath("lock");
    struct media *m, *m2;
    ASSERT_EQ(media_create_file(p.c_str(), 8 * MEDIA_BLOCK_SIZE, 0, &m), 0);
    EXPECT_EQ(media_open_file(p.c_str(), 0, &m2), -EBUSY);
    EXPECT_EQ(media_open_file(p.c_str(), MEDIA_RDONLY, &m2), -EBUSY);
    EXPECT_EQ(media_create_file(p.c_str(), 8 * MEDIA_BLOCK_SIZE, 0, &m2), -EBUSY);
    ASSERT_EQ(media_open_file(p.c_str(), MEDIA_RDONLY | MEDIA_NOLOCK, &m2), 0);
    char buf[MEDIA_BLOCK_SIZE] = {0};
    EXPECT_EQ(media_write(m2, 0, 1, buf), -EROFS);
    EXPECT_EQ(media_read(m2, 0, 1, buf), 0);
    media_close(m2);
    media_close(m);
    ASSERT_EQ(media_open_file(p.c_str(), 0, &m), 0);   // lock released on close
    media_close(m);
    EXPECT_EQ(media_create_file(p.c_str(), 4096, MEDIA_CREATE_EXCL, &m), -EEXIST);
    unlink(p.c_str());
    EXPECT_EQ(media_open_file(p.c_str(), 0, &m), -ENOENT);
}

TEST(MediaFile, ShortFileReadsAsEio)
{
    std::string p = TempPath("short");
    struct media *m;
    ASSERT_EQ(media_create_file(p.c_str(), 8 * MEDIA_BLOCK_SIZE, 0, &m), 0);
    ASSERT_EQ(truncate(p.c_str(), 3 * MEDIA_BLOCK_SIZE + 10), 0);   // shrunk under us
    char buf[2 * MEDIA_BLOCK_SIZE];
    EXPECT_EQ(media_read(m, 3, 2, buf), -EIO);
    EXPECT_EQ(media_read(m, 2, 1, buf), 0);
    media_close(m);
    unlink(p.c_str());
}

// Both ways of doing the image file's I/O (pread/pwrite, and the mapping
// of media_mmap.h) behave the same through the seam.
class MediaFileIo : public ::testing::TestWithParam<unsigned> {
protected:
    // A sparse image of nblk blocks, opened with the backend under test.
    struct media *Open(const std::string &p, uint64_t nblk, unsigned flags = 0)
    {
        struct media *m = nullptr;
        EXPECT_EQ(media_create_file(p.c_str(), nblk * MEDIA_BLOCK_SIZE, 0, &m), 0);
        media_close(m);
        m = nullptr;
        EXPECT_EQ(media_open_file(p.c_str(), GetParam() | flags, &m), 0);
        return m;
    }
};

TEST_P(MediaFileIo, WriteReadDiscardAndOtherOpenersSeeTheBytes)
{
    std::string p = TempPath("io");
    struct media *m = Open(p, 1024);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->nblocks, 1024u);
    std::string two = Block('a') + Block('b');
    ASSERT_EQ(media_write(m, 10, 2, two.data()), 0);
    ASSERT_EQ(media_write(m, 11, 1, Block('c').data()), 0);   // an overwrite
    EXPECT_EQ(ReadBlocks(m, 10, 2), Block('a') + Block('c'));
    EXPECT_EQ(ReadBlocks(m, 0, 1), Block('\0'));
    // The descriptor (zero-copy reads) sees what was written.
    std::string via_fd(MEDIA_BLOCK_SIZE, '\0');
    ASSERT_EQ(pread(media_fd(m), &via_fd[0], MEDIA_BLOCK_SIZE, 11 * MEDIA_BLOCK_SIZE),
              (ssize_t)MEDIA_BLOCK_SIZE);
    EXPECT_EQ(via_fd, Block('c'));
    EXPECT_EQ(media_flush(m), 0);
    ASSERT_EQ(media_discard(m, 10, 1), 0);
    EXPECT_EQ(ReadBlocks(m, 10, 2), Block('\0') + Block('c'));
    ASSERT_EQ(media_write(m, 10, 1, Block('d').data()), 0);   // into the punched hole
    char buf[MEDIA_BLOCK_SIZE];
    EXPECT_EQ(media_read(m, 1023, 2, buf), -EINVAL);   // past the end
    EXPECT_EQ(media_write(m, 1024, 1, buf), -EINVAL);
    EXPECT_EQ(media_discard(m, 1020, 5), -EINVAL);
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_LT(st.st_blocks, 1024 * 8 / 4);   // still sparse (st_blocks: 512-byte units)
    media_close(m);
    // The other backend, after a close, reads the same bytes.
    ASSERT_EQ(media_open_file(p.c_str(), GetParam() ^ MEDIA_MMAP, &m), 0);
    EXPECT_EQ(ReadBlocks(m, 10, 2), Block('d') + Block('c'));
    media_close(m);
    unlink(p.c_str());
}

TEST_P(MediaFileIo, ReadOnlyRefusesChanges)
{
    std::string p = TempPath("ro");
    struct media *m = Open(p, 8);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(media_write(m, 3, 1, Block('r').data()), 0);
    media_close(m);
    ASSERT_EQ(media_open_file(p.c_str(), GetParam() | MEDIA_RDONLY, &m), 0);
    EXPECT_EQ(media_write(m, 0, 1, Block('x').data()), -EROFS);
    EXPECT_EQ(media_discard(m, 0, 1), -EROFS);
    EXPECT_EQ(media_flush(m), 0);
    EXPECT_EQ(ReadBlocks(m, 3, 1), Block('r'));
    media_close(m);
    unlink(p.c_str());
}

// cisc resize grows a stopped image's file: the next open uses all of it.
TEST_P(MediaFileIo, GrownImageIsUsedWholeAtTheNextOpen)
{
    std::string p = TempPath("grow");
    struct media *m = Open(p, 8);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(media_write(m, 7, 1, Block('7').data()), 0);
    media_close(m);
    ASSERT_EQ(truncate(p.c_str(), 32 * MEDIA_BLOCK_SIZE), 0);
    ASSERT_EQ(media_open_file(p.c_str(), GetParam(), &m), 0);
    EXPECT_EQ(m->nblocks, 32u);
    ASSERT_EQ(media_write(m, 31, 1, Block('z').data()), 0);
    EXPECT_EQ(ReadBlocks(m, 7, 1), Block('7'));
    EXPECT_EQ(ReadBlocks(m, 20, 1), Block('\0'));
    ASSERT_EQ(media_flush(m), 0);
    media_close(m);
    ASSERT_EQ(media_open_file(p.c_str(), 0, &m), 0);   // pread sees the mapped write
    EXPECT_EQ(ReadBlocks(m, 31, 1), Block('z'));
    media_close(m);
    unlink(p.c_str());
}

// media_write_part changes its bytes and no other, into a block that
// holds data or into a hole (the rest of it reads as zeros).
TEST_P(MediaFileIo, PartOfABlockLeavesTheRestAsItIs)
{
    std::string p = TempPath("part");
    struct media *m = Open(p, 256);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(media_write(m, 3, 1, Block('o').data()), 0);
    ASSERT_EQ(media_write_part(m, 3, 100, 5, "HELLO"), 0);
    ASSERT_EQ(media_write_part(m, 3, MEDIA_BLOCK_SIZE - 2, 2, "ZZ"), 0);
    std::string want = Block('o');
    want.replace(100, 5, "HELLO");
    want.replace(MEDIA_BLOCK_SIZE - 2, 2, "ZZ");
    EXPECT_EQ(ReadBlocks(m, 3, 1), want);
    ASSERT_EQ(media_write_part(m, 200, 7, 3, "new"), 0);   // a block never written
    EXPECT_EQ(ReadBlocks(m, 200, 1), std::string(7, '\0') + "new" +
                                         std::string(MEDIA_BLOCK_SIZE - 10, '\0'));
    EXPECT_EQ(media_write_part(m, 3, MEDIA_BLOCK_SIZE - 1, 2, "xy"), -EINVAL);
    EXPECT_EQ(media_write_part(m, 256, 0, 1, "x"), -EINVAL);
    ASSERT_EQ(media_flush(m), 0);
    media_close(m);
    ASSERT_EQ(media_open_file(p.c_str(), GetParam() ^ MEDIA_MMAP, &m), 0);
    EXPECT_EQ(ReadBlocks(m, 3, 1), want);
    media_close(m);
    ASSERT_EQ(media_open_file(p.c_str(), GetParam() | MEDIA_RDONLY, &m), 0);
    EXPECT_EQ(media_write_part(m, 3, 0, 1, "r"), -EROFS);
    media_close(m);
    unlink(p.c_str());
}

INSTANTIATE_TEST_SUITE_P(Backends, MediaFileIo, ::testing::Values(0u, MEDIA_MMAP),
                         [](const ::testing::TestParamInfo<unsigned> &i) {
                             return std::string(i.param ? "mmap" : "pread");
                         });

TEST(MediaFault, FailNthWriteOnceOrForever)
{
    struct media *m;
    ASSERT_EQ(media_fault_create(16, &m), 0);
    std::string a = Block('a');
    media_fault_fail_write(m, 2, EIO, false);
    EXPECT_EQ(media_write(m, 0, 1, a.data()), 0);
    EXPECT_EQ(media_write(m, 1, 1, a.data()), -EIO);
    EXPECT_EQ(ReadBlocks(m, 1, 1), Block('\0'));       // not applied
    EXPECT_EQ(media_write(m, 1, 1, a.data()), 0);
    media_fault_fail_write(m, 5, ENOSPC, true);
    EXPECT_EQ(media_write(m, 2, 1, a.data()), 0);
    EXPECT_EQ(media_write(m, 3, 1, a.data()), -ENOSPC);
    EXPECT_EQ(media_write(m, 4, 1, a.data()), -ENOSPC);
    EXPECT_EQ(media_flush(m), -ENOSPC);
    EXPECT_EQ(media_fault_writes(m), 6u);
    media_fault_fail_read(m, media_fault_reads(m) + 1, EIO);
    char buf[MEDIA_BLOCK_SIZE];
    EXPECT_EQ(media_read(m, 0, 1, buf), -EIO);
    EXPECT_EQ(media_read(m, 0, 1, buf), 0);
    media_close(m);
}

TEST(MediaFault, PowerCutDropsLaterWritesAndUnflushedOnes)
{
    struct media *m;
    ASSERT_EQ(media_fault_create(16, &m), 0);
    ASSERT_EQ(media_write(m, 0, 1, Block('1').data()), 0);
    ASSERT_EQ(media_flush(m), 0);
    media_fault_cut_after(m, 3, UINT64_MAX);
    ASSERT_EQ(media_write(m, 1, 1, Block('2').data()), 0);   // write 2: unflushed
    ASSERT_EQ(media_write(m, 2, 1, Block('3').data()), 0);   // write 3: the last to land
    EXPECT_TRUE(media_fault_is_cut(m));
    ASSERT_EQ(media_write(m, 3, 1, Block('4').data()), 0);   // accepted, dropped
    EXPECT_EQ(ReadBlocks(m, 3, 1), Block('\0'));
    EXPECT_EQ(media_flush(m), 0);                            // power is off
    struct media *none, *all;
    ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_NONE, 0, &none), 0);
    ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_ALL, 0, &all), 0);
    EXPECT_EQ(ReadBlocks(none, 0, 3), Block('1') + Block('\0') + Block('\0'));
    EXPECT_EQ(ReadBlocks(all, 0, 4), Block('1') + Block('2') + Block('3') + Block('\0'));
    int kept = 0;
    for (uint64_t seed = 0; seed < 64; seed++) {
        struct media *r;
        ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_RANDOM, seed, &r), 0);
        std::string b = ReadBlocks(r, 1, 1);
        EXPECT_TRUE(b == Block('2') || b == Block('\0'));
        kept += b == Block('2');
        media_close(r);
    }
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, 64);
    media_close(none);
    media_close(all);
    media_close(m);
}

TEST(MediaFault, TornWriteKeepsTheOldTail)
{
    struct media *m;
    ASSERT_EQ(media_fault_create(8, &m), 0);
    std::string old = Block('o') + Block('o');
    ASSERT_EQ(media_write(m, 0, 2, old.data()), 0);
    ASSERT_EQ(media_flush(m), 0);
    media_fault_cut_after(m, 2, MEDIA_BLOCK_SIZE + 100);
    std::string nw = Block('n') + Block('n');
    ASSERT_EQ(media_write(m, 0, 2, nw.data()), 0);
    struct media *s;
    ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_ALL, 0, &s), 0);
    std::string want = Block('n') + std::string(100, 'n') + std::string(MEDIA_BLOCK_SIZE - 100, 'o');
    EXPECT_EQ(ReadBlocks(s, 0, 2), want);
    media_close(s);
    media_close(m);
}

// A part write is one write of the fault model: counted, dropped after a
// cut, torn to its first bytes; the rest of the block keeps its durable
// bytes (or zeros), also for blocks taken from prefaulted memory.
TEST(MediaFault, PartOfABlockIsOneWriteAndTearsLikeOne)
{
    for (uint64_t nblk : { uint64_t{64}, uint64_t{1} << 20 }) {
        struct media *m;
        ASSERT_EQ(media_fault_create(nblk, &m), 0);
        ASSERT_EQ(media_fault_prefault(m, 8), 0);   // ignored by the small one
        ASSERT_EQ(media_write(m, 1, 1, Block('o').data()), 0);
        ASSERT_EQ(media_flush(m), 0);
        uint64_t w = media_fault_writes(m);
        ASSERT_EQ(media_write_part(m, 1, 10, 4, "abcd"), 0);
        ASSERT_EQ(media_write_part(m, 2, 10, 4, "efgh"), 0);   // never written
        EXPECT_EQ(media_fault_writes(m), w + 2);
        std::string one = Block('o'), two = Block('\0');
        one.replace(10, 4, "abcd");
        two.replace(10, 4, "efgh");
        EXPECT_EQ(ReadBlocks(m, 1, 2), one + two);
        media_fault_cut_after(m, w + 3, 2);   // the next part lands torn, then power is off
        ASSERT_EQ(media_write_part(m, 1, 20, 4, "WXYZ"), 0);
        ASSERT_EQ(media_write_part(m, 2, 0, 4, "lost"), 0);
        struct media *s;
        ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_ALL, 0, &s), 0);
        one.replace(20, 2, "WX");
        EXPECT_EQ(ReadBlocks(s, 1, 2), one + two) << nblk;
        media_close(s);
        ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_NONE, 0, &s), 0);
        EXPECT_EQ(ReadBlocks(s, 1, 2), Block('o') + Block('\0')) << nblk;   // never flushed
        media_close(s);
        media_close(m);
    }
}

TEST(MediaFault, HandlesShareOneDisk)
{
    struct media *m, *h;
    ASSERT_EQ(media_fault_create(8, &m), 0);
    ASSERT_EQ(media_fault_open_again(m, &h), 0);
    ASSERT_EQ(media_write(h, 5, 1, Block('h').data()), 0);
    media_close(h);
    EXPECT_EQ(ReadBlocks(m, 5, 1), Block('h'));
    ASSERT_EQ(media_discard(m, 5, 1), 0);
    EXPECT_EQ(ReadBlocks(m, 5, 1), Block('\0'));
    media_close(m);
}

// Block buffers are reused after a flush (a small medium's from malloc, a
// large one's from slabs): every block keeps its own bytes through many
// rounds of overwrite + flush, and a snapshot copies what survives.
class MediaFaultReuse : public ::testing::TestWithParam<uint64_t> {};

TEST_P(MediaFaultReuse, OverwrittenAndFlushedBlocksKeepTheirOwnBytes)
{
    struct media *m;
    ASSERT_EQ(media_fault_create(GetParam(), &m), 0);
    const uint64_t n = 1200;   // more than one 2 MiB slab of blocks
    std::string b(MEDIA_BLOCK_SIZE, '\0');
    for (int round = 0; round < 3; round++) {
        for (uint64_t k = 0; k < n; k++) {
            std::fill(b.begin(), b.end(), (char)('a' + (k + round) % 26));
            b[0] = (char)round;
            ASSERT_EQ(media_write(m, k * 3, 1, b.data()), 0);
        }
        if (round < 2) {
            ASSERT_EQ(media_flush(m), 0);   // round 2 stays volatile
        }
    }
    struct media *dur, *all;
    ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_NONE, 0, &dur), 0);
    ASSERT_EQ(media_fault_snapshot(m, MEDIA_FAULT_KEEP_ALL, 0, &all), 0);
    for (uint64_t k = 0; k < n; k++) {
        std::string want(MEDIA_BLOCK_SIZE, (char)('a' + (k + 2) % 26)), flushed = want;
        want[0] = 2;
        std::fill(flushed.begin(), flushed.end(), (char)('a' + (k + 1) % 26));
        flushed[0] = 1;
        ASSERT_EQ(ReadBlocks(m, k * 3, 1), want) << k;
        ASSERT_EQ(ReadBlocks(all, k * 3, 1), want) << k;
        ASSERT_EQ(ReadBlocks(dur, k * 3, 1), flushed) << k;
        ASSERT_EQ(ReadBlocks(m, k * 3 + 1, 1), Block('\0')) << k;
    }
    media_close(dur);
    media_close(all);
    media_close(m);
}

INSTANTIATE_TEST_SUITE_P(SmallAndLarge, MediaFaultReuse,
                         ::testing::Values(uint64_t{4096}, uint64_t{1} << 20));
