// File data: extents, holes, sparse growth, truncate, fallocate, punch
// hole, zero range, SEEK_DATA/SEEK_HOLE, big and fragmented files.
#include "sfs_fixture.h"
#include "sfs_probe.h"

#include <random>
#include <sys/uio.h>

class File : public SfsFixture {
  protected:
    void SetUp() override { Format(16384); }   // 64 MiB disk
    uint64_t f = 0;

    std::string Pattern(size_t n, int seed)
    {
        std::string s(n, '\0');
        std::mt19937 rng(seed);
        for (auto &c : s)
            c = (char)(rng() & 0xff);
        return s;
    }

    uint64_t Blocks(uint64_t ino)
    {
        struct sfs_attr a = {};   // zeros if getattr fails (the test has failed then)
        EXPECT_EQ(sfs_getattr(fs, ino, &a), 0);
        return a.blocks / 8;
    }
};

TEST_F(File, UnalignedWritesAndReads)
{
    f = Create(SFS_ROOT_INO, "f");
    std::string data = Pattern(3 * 4096 + 123, 1);
    Write(f, 100, data);
    EXPECT_EQ(Size(f), 100 + data.size());
    EXPECT_EQ(Read(f, 0, 100), std::string(100, '\0'));
    EXPECT_EQ(Read(f, 100, data.size()), data);
    Write(f, 5000, "abc");
    data.replace(4900, 3, "abc");
    EXPECT_EQ(Read(f, 100, data.size()), data);
    EXPECT_EQ(Read(f, Size(f), 10), "");
    EXPECT_EQ(Read(f, Size(f) - 2, 10).size(), 2u);
    Remount();
    EXPECT_EQ(Read(f, 100, data.size()), data);
}

TEST_F(File, HolesReadAsZerosAndTakeNoSpace)
{
    f = Create(SFS_ROOT_INO, "sparse");
    Write(f, 0, "head");
    Write(f, 10 * 4096 + 7, "tail");
    EXPECT_EQ(Blocks(f), 2u);
    EXPECT_EQ(Read(f, 4, 10 * 4096), std::string(10 * 4096, '\0'));
    EXPECT_EQ(Read(f, 10 * 4096 + 7, 4), "tail");
}

TEST_F(File, DataAtZeroAndSixtyGiB)
{
    f = Create(SFS_ROOT_INO, "big");
    const uint64_t far = 60ull << 30;
    Write(f, 0, "start");
    Write(f, far, "sixty");
    EXPECT_EQ(Size(f), far + 5);
    EXPECT_EQ(Blocks(f), 2u);
    EXPECT_EQ(Read(f, far - 3, 8), std::string("\0\0\0sixty", 8));
    struct sfs_attr in = {};
    in.size = 64ull << 30;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
    EXPECT_EQ(Size(f), 64ull << 30);
    EXPECT_EQ(sfs_seek(fs, f, 4096, SFS_SEEK_DATA), (int64_t)(far & ~4095ull));
    Remount();
    EXPECT_EQ(Read(f, far, 5), "sixty");
    EXPECT_EQ(Read(f, 0, 5), "start");
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(File, TruncateDownAndUpShowsZeros)
{
    f = Create(SFS_ROOT_INO, "t");
    std::string data = Pattern(10000, 2);
    Write(f, 0, data);
    struct sfs_attr in = {};
    in.size = 5000;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
    EXPECT_EQ(Blocks(f), 2u);
    in.size = 12000;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
    EXPECT_EQ(Read(f, 0, 5000), data.substr(0, 5000));
    EXPECT_EQ(Read(f, 5000, 7000), std::string(7000, '\0'));
    in.size = 0;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
    EXPECT_EQ(Blocks(f), 0u);
    Write(f, 8000, "x");       // extension past a truncated tail
    EXPECT_EQ(Read(f, 0, 8001), std::string(8000, '\0') + "x");
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(File, WritePastEofZeroesStaleTail)
{
    f = Create(SFS_ROOT_INO, "t");
    Write(f, 0, std::string(4096, 'a'));
    struct sfs_attr in = {};
    in.size = 10;                  // bytes 10..4095 of block 0 stay on the media
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
    Write(f, 3000, "b");
    EXPECT_EQ(Read(f, 0, 3001), std::string(10, 'a') + std::string(2990, '\0') + "b");
}

TEST_F(File, FallocateReservesAndReadsZeros)
{
    f = Create(SFS_ROOT_INO, "fa");
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, 0, 0, 1 << 20), 0);
    EXPECT_EQ(Size(f), 1u << 20);
    EXPECT_EQ(Blocks(f), 256u);
    EXPECT_EQ(Read(f, 0, 8192), std::string(8192, '\0'));
    Write(f, 4096 * 10 + 5, "mid");
    EXPECT_EQ(Read(f, 4096 * 10, 10), std::string(5, '\0') + "mid" + std::string(2, '\0'));
    EXPECT_EQ(Blocks(f), 256u);
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_KEEP_SIZE, 1 << 20, 1 << 20), 0);
    EXPECT_EQ(Size(f), 1u << 20);
    EXPECT_EQ(Blocks(f), 512u);
    Remount();
    EXPECT_EQ(Read(f, 4096 * 10 + 5, 3), "mid");
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(File, PunchHoleAndZeroRange)
{
    f = Create(SFS_ROOT_INO, "p");
    std::string data = Pattern(20 * 4096, 3);
    Write(f, 0, data);
    EXPECT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_PUNCH_HOLE, 0, 10), -EOPNOTSUPP);
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
                            4096 + 100, 5 * 4096), 0);
    data.replace(4096 + 100, 5 * 4096, 5 * 4096, '\0');
    EXPECT_EQ(Read(f, 0, data.size()), data);
    EXPECT_EQ(Blocks(f), 16u);     // blocks 2..5 freed, 1 and 6 partly zeroed
    EXPECT_EQ(Size(f), data.size());
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_ZERO_RANGE, 10 * 4096 - 1, 3 * 4096 + 2), 0);
    data.replace(10 * 4096 - 1, 3 * 4096 + 2, 3 * 4096 + 2, '\0');
    EXPECT_EQ(Read(f, 0, data.size()), data);
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_ZERO_RANGE, data.size(), 8192), 0);
    EXPECT_EQ(Size(f), data.size() + 8192);
    Remount();
    data += std::string(8192, '\0');
    EXPECT_EQ(Read(f, 0, data.size()), data);
    Unmount();
    ExpectClean();
    Mount();
}

// The block holding the end of the file is preallocated (unwritten): a
// write past the end must not count its zeroing as a written byte, and a
// hole punched with an edge in such a block must end (both did not).
TEST_F(File, UnwrittenTailBlockNeitherEatsAByteNorStopsAPunch)
{
    f = Create(SFS_ROOT_INO, "u");
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, 0, 0, 5000), 0);   // blocks 0-1 unwritten
    EXPECT_EQ(Size(f), 5000u);
    Write(f, 6000, "abc");
    EXPECT_EQ(Read(f, 4990, 1013), std::string(1010, '\0') + "abc");
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_ZERO_RANGE, 9000, 8000), 0);
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
                            9942, 6802), 0);   // both edges inside unwritten blocks
    EXPECT_EQ(Read(f, 5990, 13), std::string(10, '\0') + "abc");
    EXPECT_EQ(Size(f), 17000u);
}

// Appends that continue a partial last block merge into the file's copy
// of that block (sfs_int.h tail_pblk) instead of reading it back.
TEST_F(File, AppendsIntoAPartialBlockReadNothingBack)
{
    f = Create(SFS_ROOT_INO, "log");
    std::string data = Pattern(100, 7);
    Write(f, 0, data);   // the first touches metadata blocks into the cache
    uint64_t reads = media_fault_reads(disk);
    for (int i = 1; i < 200; i++) {
        std::string rec = Pattern(100 + i % 7, i);
        Write(f, data.size(), rec);
        data += rec;
    }
    EXPECT_EQ(media_fault_reads(disk), reads);
    EXPECT_EQ(Read(f, 0, data.size()), data);
    Remount();
    EXPECT_EQ(Read(f, 0, data.size()), data);
}

// A write into a fresh block writes only its own bytes when the media
// can (media_write_part) and the rest of the block lies past the end of
// the file (file.c DW_PAST_EOF): a reused block keeps its old bytes
// there. They never show: every extension zeroes them, and a fresh block
// inside the file (a hole, an unwritten extent) or written from inside
// is still zeroed around the new bytes.
TEST_F(File, OldBytesOfAReusedBlockNeverShow)
{
    uint64_t junk = Create(SFS_ROOT_INO, "junk");
    std::string x(1 << 20, 'X');
    for (uint64_t i = 0; i < 40; i++)   // most of the free blocks hold X now
        Write(junk, i << 20, x);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "junk"), 0);
    ASSERT_EQ(sfs_probe_checkpoint(fs), 0);   // its blocks reusable
    auto grow = [&](uint64_t ino, uint64_t size) {
        struct sfs_attr in = {};
        in.size = size;
        ASSERT_EQ(sfs_setattr(fs, nullptr, ino, &in, SFS_SET_SIZE, nullptr), 0);
    };
    uint64_t t = Create(SFS_ROOT_INO, "truncated-up");
    Write(t, 0, "abc");
    grow(t, 8192);
    uint64_t g = Create(SFS_ROOT_INO, "written-past-the-end");
    Write(g, 0, "abc");
    Write(g, 5000, "d");
    uint64_t h = Create(SFS_ROOT_INO, "hole");
    grow(h, 3 * 4096);
    Write(h, 4096, "mid");   // a fresh block inside the file: zeros after
    Write(h, 2 * 4096 + 100, "end");   // and before
    uint64_t u = Create(SFS_ROOT_INO, "unwritten");
    ASSERT_EQ(sfs_fallocate(fs, nullptr, u, 0, 0, 8192), 0);
    Write(u, 0, "abc");
    uint64_t a = Create(SFS_ROOT_INO, "appended");
    std::string log;
    for (int i = 0; i < 50; i++) {   // appends ending inside fresh blocks
        std::string rec = Pattern(700 + i, i);
        Write(a, log.size(), rec);
        log += rec;
    }
    grow(a, log.size() + 5000);
    for (int pass = 0; pass < 2; pass++) {
        EXPECT_EQ(Read(t, 0, 8192), "abc" + std::string(8189, '\0'));
        EXPECT_EQ(Read(g, 0, 5001), "abc" + std::string(4997, '\0') + "d");
        EXPECT_EQ(Read(h, 0, 3 * 4096), std::string(4096, '\0') + "mid" +
                                            std::string(4096 + 97, '\0') + "end" +
                                            std::string(4096 - 103, '\0'));
        EXPECT_EQ(Read(u, 0, 8192), "abc" + std::string(8189, '\0'));
        EXPECT_EQ(Read(a, 0, log.size() + 5000), log + std::string(5000, '\0'));
        Remount();
    }
    Unmount();
    ExpectClean();
    Mount();
}

// Writes into a preallocated (unwritten) range split it: inside it (one
// cut, one insert: extent.c ext_convert), at its edges and beside earlier
// writes (merged with them). Every block reads back what was written or
// zeros, SEEK_DATA/SEEK_HOLE see exactly the written runs, fsck agrees
// (extents, block counts).
TEST_F(File, WritesIntoPreallocatedSpaceSplitItExactly)
{
    f = Create(SFS_ROOT_INO, "prealloc");
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, 0, 0, 64 * 4096), 0);
    std::string want(64 * 4096, '\0');
    for (int b : { 10, 20, 11, 30, 0, 63, 21, 9, 40, 41, 42, 12 }) {
        std::string blk = Pattern(4096, b);
        Write(f, (uint64_t)b * 4096, blk);
        want.replace((size_t)b * 4096, 4096, blk);
    }
    Write(f, 50 * 4096 + 100, "part");   // a part of a block inside the range
    want.replace(50 * 4096 + 100, 4, "part");
    std::vector<std::pair<int64_t, int64_t>> runs;   // [data, hole) in blocks
    for (int64_t pos = 0;;) {
        int64_t d = sfs_seek(fs, f, (uint64_t)pos, SFS_SEEK_DATA);
        if (d < 0)
            break;
        int64_t h = sfs_seek(fs, f, (uint64_t)d, SFS_SEEK_HOLE);
        ASSERT_GT(h, d);
        runs.push_back({ d / 4096, h / 4096 });
        pos = h;
    }
    std::vector<std::pair<int64_t, int64_t>> expect = {
        { 0, 1 }, { 9, 13 }, { 20, 22 }, { 30, 31 }, { 40, 43 }, { 50, 51 }, { 63, 64 } };
    EXPECT_EQ(runs, expect);
    for (int pass = 0; pass < 2; pass++) {
        EXPECT_EQ(Read(f, 0, want.size()), want);
        EXPECT_EQ(Size(f), 64u * 4096);
        Remount();
    }
    Unmount();
    ExpectClean();
    Mount();
}

// Whatever else changes a block or the mapping under the tail copy
// (overwrites in and around it, in place or journaled, truncation, hole
// punching, zeroing, a write past the end), later appends still leave the
// file's true bytes.
TEST_F(File, TailCopyFollowsEveryChangeOfTheBlock)
{
    f = Create(SFS_ROOT_INO, "t");
    std::string model;
    std::mt19937 rng(11);
    for (int i = 0; i < 600; i++) {
        unsigned what = rng() % 8;
        uint64_t size = model.size();
        uint64_t at = size ? rng() % size : 0;
        if (what <= 2 || size == 0) {   // append
            std::string d = Pattern(1 + rng() % 5000, i);
            Write(f, size, d);
            model += d;
        } else if (what == 3) {         // overwrite somewhere, maybe through the journal
            std::string d = Pattern(1 + rng() % 300, i);
            struct sfs_txn *tx = nullptr;
            if (rng() % 2) {
                ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
            }
            ASSERT_EQ(sfs_write(fs, tx, f, at, d.data(), d.size()), (ssize_t)d.size());
            if (tx) {
                ASSERT_EQ(sfs_txn_commit(tx, false), 0);
            }
            if (model.size() < at + d.size())
                model.resize(at + d.size(), '\0');
            model.replace(at, d.size(), d);
        } else if (what == 4) {         // shrink or grow
            uint64_t to = rng() % 2 ? at : size + rng() % 6000;
            struct sfs_attr in = {};
            in.size = to;
            ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
            model.resize(to, '\0');
        } else if (what == 5) {         // punch a hole
            uint64_t len = 1 + rng() % 9000;
            ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
                                    at, len), 0);
            if (at < model.size())
                model.replace(at, std::min<uint64_t>(len, model.size() - at),
                              std::min<uint64_t>(len, model.size() - at), '\0');
        } else if (what == 6) {         // zero a range (may extend)
            uint64_t len = 1 + rng() % 9000;
            ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_ZERO_RANGE, at, len), 0);
            if (model.size() < at + len)
                model.resize(at + len, '\0');
            model.replace(at, len, len, '\0');
        } else {                        // a write past the end leaves a gap
            std::string d = Pattern(1 + rng() % 200, i);
            uint64_t off = size + rng() % 9000;
            Write(f, off, d);
            model.resize(off, '\0');
            model += d;
        }
        ASSERT_EQ(Size(f), model.size()) << "op " << i;
        if (i % 50 == 0) {
            ASSERT_EQ(Read(f, 0, model.size()), model) << "op " << i;
        }
    }
    EXPECT_EQ(Read(f, 0, model.size()), model);
    Remount();
    EXPECT_EQ(Read(f, 0, model.size()), model);
    Unmount();
    ExpectClean();
    Mount();
}

// sfs_writev_ino writes what a write of its pieces gathered writes: pieces
// of 0 to 6000 bytes (blocks straddling two pieces, pieces inside one
// block) appended, over data, into preallocated (unwritten) blocks, past
// the end and through a data-journaled transaction, against a model.
TEST_F(File, VectoredWritesMatchTheirBytesGathered)
{
    f = Create(SFS_ROOT_INO, "v");
    struct sfs_inode *ip = nullptr;
    ASSERT_EQ(sfs_iget_ino(fs, f, &ip), 0);
    std::string model;
    std::mt19937 rng(29);
    for (int i = 0; i < 400; i++) {
        unsigned what = rng() % 6;
        uint64_t size = model.size();
        if (what == 5) {                // preallocate past the end: unwritten blocks
            uint64_t len = 1 + rng() % 20000;
            ASSERT_EQ(sfs_fallocate_ino(fs, nullptr, ip, 0, size, len), 0);
            model.resize(size + len, '\0');
            continue;
        }
        uint64_t off = what <= 1 ? size : what == 2 ? size + rng() % 9000
                                                    : (size ? rng() % size : 0);
        std::vector<std::string> parts(1 + rng() % 6);
        std::vector<struct iovec> iov;
        std::string all;
        for (size_t k = 0; k < parts.size(); k++) {
            parts[k] = Pattern(rng() % 4 == 0 ? rng() % 8 : rng() % 6000, i * 8 + (int)k);
            iov.push_back({ (void *)parts[k].data(), parts[k].size() });
            all += parts[k];
        }
        struct sfs_txn *tx = nullptr;
        if (what == 4) {
            ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
        }
        ASSERT_EQ(sfs_writev_ino(fs, tx, ip, off, iov.data(), (unsigned)iov.size()),
                  (ssize_t)all.size()) << "op " << i;
        if (tx) {
            ASSERT_EQ(sfs_txn_commit(tx, false), 0);
        }
        if (!all.empty()) {
            if (model.size() < off)
                model.resize(off, '\0');
            if (model.size() < off + all.size())
                model.resize(off + all.size(), '\0');
            model.replace(off, all.size(), all);
        }
        ASSERT_EQ(Size(f), model.size()) << "op " << i;
        if (i % 25 == 0) {
            ASSERT_EQ(Read(f, 0, model.size()), model) << "op " << i;
        }
    }
    EXPECT_EQ(Read(f, 0, model.size()), model);
    sfs_iput_ino(fs, ip);
    Remount();
    EXPECT_EQ(Read(f, 0, model.size()), model);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(File, SeekDataAndHole)
{
    f = Create(SFS_ROOT_INO, "s");
    Write(f, 4 * 4096, std::string(2 * 4096, 'x'));      // data in blocks 4-5
    Write(f, 20 * 4096, std::string(100, 'y'));          // block 20
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_KEEP_SIZE, 8 * 4096, 4096), 0);
    EXPECT_EQ(sfs_seek(fs, f, 0, SFS_SEEK_DATA), 4 * 4096);
    EXPECT_EQ(sfs_seek(fs, f, 4 * 4096 + 10, SFS_SEEK_DATA), 4 * 4096 + 10);
    EXPECT_EQ(sfs_seek(fs, f, 0, SFS_SEEK_HOLE), 0);
    EXPECT_EQ(sfs_seek(fs, f, 4 * 4096, SFS_SEEK_HOLE), 6 * 4096);
    EXPECT_EQ(sfs_seek(fs, f, 6 * 4096, SFS_SEEK_DATA), 20 * 4096);   // unwritten = hole
    EXPECT_EQ(sfs_seek(fs, f, 20 * 4096 + 5, SFS_SEEK_HOLE), 20 * 4096 + 100);
    EXPECT_EQ(sfs_seek(fs, f, 20 * 4096 + 100, SFS_SEEK_DATA), -ENXIO);
    EXPECT_EQ(sfs_seek(fs, f, 1 << 30, SFS_SEEK_HOLE), -ENXIO);
}

TEST_F(File, SequentialWriteStaysOneExtent)
{
    f = Create(SFS_ROOT_INO, "seq");
    std::string chunk = Pattern(1 << 20, 4);
    for (int i = 0; i < 16; i++)
        Write(f, (uint64_t)i << 20, chunk);
    EXPECT_EQ(Blocks(f), 16u * 256);   // no tree node needed: contiguous
    EXPECT_EQ(Read(f, 7ull << 20, 1 << 20), chunk);
}

TEST_F(File, FragmentedFileGrowsAnExtentTree)
{
    f = Create(SFS_ROOT_INO, "frag");
    uint64_t g = Create(SFS_ROOT_INO, "other");
    // Interleave two files: each grows in runs of an allocation window,
    // more extents than the inode's root holds.
    for (int i = 0; i < 600; i++) {
        Write(f, (uint64_t)i * 4096, std::string(4096, (char)('a' + i % 26)));
        Write(g, (uint64_t)i * 4096, "g");
    }
    EXPECT_GT(Blocks(f), 600u);        // data plus extent-tree nodes
    for (int i = 0; i < 600; i += 37)
        EXPECT_EQ(Read(f, (uint64_t)i * 4096, 1), std::string(1, (char)('a' + i % 26)));
    Remount();
    for (int i = 0; i < 600; i += 41)
        EXPECT_EQ(Read(f, (uint64_t)i * 4096 + 4095, 1), std::string(1, (char)('a' + i % 26)));
    // Punch every other block: splits hundreds of extents.
    for (int i = 1; i < 600; i += 2)
        ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
                                (uint64_t)i * 4096, 4096), 0);
    EXPECT_EQ(Read(f, 4096, 4096), std::string(4096, '\0'));
    EXPECT_EQ(Read(f, 2 * 4096, 1), "c");
    Unmount();
    ExpectClean();
    Mount();
    struct sfs_attr in = {};
    in.size = 0;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_SIZE, nullptr), 0);
    EXPECT_EQ(Blocks(f), 0u);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(File, WrongTypesAreRefused)
{
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    char buf[4];
    EXPECT_EQ(sfs_read(fs, d, 0, buf, 4), -EISDIR);
    EXPECT_EQ(sfs_write(fs, nullptr, d, 0, buf, 4), -EISDIR);
    EXPECT_EQ(sfs_read(fs, 12345, 0, buf, 4), -ENOENT);
    f = Create(SFS_ROOT_INO, "f");
    EXPECT_EQ(sfs_write(fs, nullptr, f, (1ull << 62), buf, 4), -EFBIG);
    EXPECT_EQ(sfs_fallocate(fs, nullptr, f, 0, 0, 0), -EINVAL);
    EXPECT_EQ(sfs_seek(fs, f, 0, 7), -EINVAL);
}

// sfs_read_map: the pieces it describes, read back (image ranges with
// pread, zeros, memory), give exactly what sfs_read copies, for ranges
// over data, holes, unwritten extents and EOF; fn runs once per call.
namespace {

struct MapResult {
    int calls = 0;
    unsigned nsegs = 0;
    std::string bytes;
    bool fd_seen = false, mem_seen = false;
};

int Collect(void *arg, const struct sfs_seg *segs, unsigned n, size_t total)
{
    auto *m = static_cast<MapResult *>(arg);
    m->calls++;
    m->nsegs = n;
    for (unsigned i = 0; i < n; i++) {
        std::string part(segs[i].len, '\0');
        if (segs[i].kind == SFS_SEG_FD) {
            m->fd_seen = true;
            if (pread(segs[i].fd, &part[0], part.size(), (off_t)segs[i].pos) !=
                (ssize_t)part.size())
                return -EIO;
        } else if (segs[i].kind == SFS_SEG_MEM) {
            m->mem_seen = true;
            memcpy(&part[0], segs[i].mem, part.size());
        }
        m->bytes += part;
    }
    return m->bytes.size() == total ? 0 : -EPROTO;
}

}  // namespace

class ReadMap : public File {
  protected:
    // Checks every range in `ranges` against sfs_read.
    void ExpectSameAsRead(uint64_t ino, const std::vector<std::pair<uint64_t, size_t>> &ranges,
                          bool want_fd)
    {
        for (auto [off, len] : ranges) {
            MapResult m;
            ssize_t n = sfs_read_map(fs, ino, off, len, Collect, &m);
            std::string want = Read(ino, off, len);
            ASSERT_EQ(n, (ssize_t)want.size()) << off << "+" << len;
            EXPECT_EQ(m.calls, 1);
            EXPECT_EQ(m.bytes, want) << off << "+" << len;
            if (!want.empty() && want != std::string(want.size(), '\0')) {
                EXPECT_EQ(want_fd ? m.fd_seen : m.mem_seen, true);
            }
        }
    }

    uint64_t Build()
    {
        uint64_t ino = Create(SFS_ROOT_INO, "m");
        Write(ino, 100, Pattern(3 * 4096, 2));            // blocks 0-3, partial ends
        Write(ino, 10 * 4096 + 7, Pattern(5000, 3));      // after a hole
        EXPECT_EQ(sfs_fallocate(fs, nullptr, ino, 0, 20 * 4096, 3 * 4096), 0);  // unwritten
        Write(ino, 30 * 4096, Pattern(2 * 4096 + 1, 4));  // EOF mid-block
        return ino;
    }

    // Replaces the fixture's device with a fresh StorageFS on a real image
    // file (in a new temporary directory), whose path goes to *path.
    void MountImageFile(std::string *path)
    {
        TearDown();
        char tmpl[] = "/tmp/sfs-readmap-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        *path = std::string(tmpl) + "/img";
        struct media *m;
        ASSERT_EQ(media_create_file(path->c_str(), 64ull << 20, MEDIA_CREATE_EXCL, &m), 0);
        struct sfs_mkfs_opts o = {};
        ASSERT_EQ(sfs_mkfs(m, &o), 0);
        struct sfs_mount_opts mo = {};
        ASSERT_EQ(sfs_mount(m, &mo, &fs), 0);
    }

    std::vector<std::pair<uint64_t, size_t>> Ranges(uint64_t size)
    {
        return { {0, 1 << 20}, {0, 100}, {99, 2}, {4096, 4096}, {5000, 40000},
                 {10 * 4096, 9000}, {19 * 4096, 5 * 4096}, {size - 3, 100}, {size, 10},
                 {size + 4096, 10}, {123, 0} };
    }
};

TEST_F(ReadMap, FaultMediaGivesOneMemoryPiece)
{
    uint64_t ino = Build();
    ExpectSameAsRead(ino, Ranges(Size(ino)), false);
    MapResult m;
    ASSERT_EQ(sfs_read_map(fs, ino, 0, 1 << 20, Collect, &m), (ssize_t)Size(ino));
    EXPECT_EQ(m.nsegs, 1u);
}

TEST_F(ReadMap, ImageFileGivesImageRangesAndZeros)
{
    std::string path;
    ASSERT_NO_FATAL_FAILURE(MountImageFile(&path));
    uint64_t ino = Build();
    ExpectSameAsRead(ino, Ranges(Size(ino)), true);
    MapResult r;
    ASSERT_EQ(sfs_read_map(fs, ino, 0, 1 << 20, Collect, &r), (ssize_t)Size(ino));
    EXPECT_EQ(r.nsegs, 5u);   // data, hole, data, hole+unwritten+hole merged, data
    EXPECT_EQ(sfs_read_map(fs, SFS_ROOT_INO, 0, 10, Collect, &r), -EISDIR);
    EXPECT_EQ(r.calls, 1);    // not called again on error
    ASSERT_EQ(sfs_unmount(fs), 0);
    fs = nullptr;
    unlink(path.c_str());
    rmdir(path.substr(0, path.rfind('/')).c_str());
}

// Two files growing a block at a time, in turns (two appenders on one
// device): each gets runs of blocks from a window of its own instead of
// every other block, so a file is a few image ranges, not one per block.
TEST_F(ReadMap, FilesGrowingAtOnceGetRunsOfBlocks)
{
    std::string path;
    ASSERT_NO_FATAL_FAILURE(MountImageFile(&path));
    uint64_t a = Create(SFS_ROOT_INO, "a"), b = Create(SFS_ROOT_INO, "b");
    std::string da, db;
    for (int i = 0; i < 256; i++) {
        std::string pa = Pattern(4096, 10 + i), pb = Pattern(4096, 1000 + i);
        Write(a, (uint64_t)i * 4096, pa);
        Write(b, (uint64_t)i * 4096, pb);
        da += pa;
        db += pb;
    }
    for (auto [ino, want] : { std::make_pair(a, &da), std::make_pair(b, &db) }) {
        MapResult r;
        ASSERT_EQ(sfs_read_map(fs, ino, 0, 1 << 20, Collect, &r), (ssize_t)want->size());
        EXPECT_TRUE(r.bytes == *want);
        EXPECT_LE(r.nsegs, 8u);   // block by block would be 256
    }
    ASSERT_EQ(sfs_unmount(fs), 0);
    fs = nullptr;
    unlink(path.c_str());
    rmdir(path.substr(0, path.rfind('/')).c_str());
}
