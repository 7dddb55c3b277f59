// Moving data blocks between files without copying them (move.c,
// sfs_move_blocks): the destination shows the bytes, the source a hole,
// no block is allocated or freed and fsck is clean; every refusal
// changes nothing; and a power cut at every write of one move leaves the
// blocks with the source or with the destination, never both or neither.
#include "sfs_fixture.h"

#include <random>

namespace {

constexpr uint64_t B = SFS_BLOCK_SIZE;

class Move : public SfsFixture {
  protected:
    void SetUp() override { Format(16384); }   // 64 MiB disk

    std::string Bytes(size_t n, unsigned seed)
    {
        std::mt19937 rng(seed);
        return RandomBytes(n, rng);
    }

    uint64_t Blocks(uint64_t ino) { return DataBlocks(ino); }

    uint64_t Free()
    {
        struct sfs_statfs st = {};
        EXPECT_EQ(sfs_statfs(fs, &st), 0);
        return st.blocks_free;
    }
};

// An append at a block boundary takes the source's blocks: the bytes are
// the destination's, the source keeps its size with a hole, the counts
// move with the blocks, nothing is allocated; after a remount too.
TEST_F(Move, AppendTakesTheBlocks)
{
    uint64_t log = Create(SFS_ROOT_INO, "log"), f = Create(SFS_ROOT_INO, "f");
    std::string head = Bytes(2 * B, 1), data = Bytes(20 * B, 2), rest = Bytes(300, 3);
    Write(log, 0, head + data + rest);
    Write(f, 0, Bytes(3 * B, 4));
    ASSERT_EQ(sfs_sync(fs), 0);
    uint64_t free0 = Free(), lb = Blocks(log), fb = Blocks(f);
    ASSERT_EQ(sfs_move_blocks(fs, nullptr, log, 2 * B, f, 3 * B, 20 * B), 0);
    EXPECT_EQ(Size(f), 23 * B);
    EXPECT_TRUE(Read(f, 3 * B, 20 * B) == data);
    EXPECT_EQ(Size(log), head.size() + data.size() + rest.size());
    EXPECT_TRUE(Read(log, 2 * B, 20 * B) == std::string(20 * B, '\0'));   // a hole now
    EXPECT_TRUE(Read(log, 0, 2 * B) == head);
    EXPECT_TRUE(Read(log, 22 * B, 300) == rest);
    EXPECT_EQ(sfs_seek(fs, log, 2 * B, SFS_SEEK_DATA), (int64_t)(22 * B));
    EXPECT_EQ(Blocks(log), lb - 20);
    EXPECT_EQ(Blocks(f), fb + 20);
    ASSERT_EQ(sfs_sync(fs), 0);
    EXPECT_EQ(Free(), free0);   // no block allocated, none freed
    Remount();
    EXPECT_TRUE(Read(f, 3 * B, 20 * B) == data);
    Unmount();
    ExpectClean();
    Mount();
}

// A source in several extents, into a hole inside the destination (its
// size stays), then inside a transaction with a write after it.
TEST_F(Move, FragmentedSourceIntoAHoleAndInsideATransaction)
{
    uint64_t log = Create(SFS_ROOT_INO, "log"), g = Create(SFS_ROOT_INO, "g");
    uint64_t f = Create(SFS_ROOT_INO, "f");
    std::string data = Bytes(12 * B, 5);
    for (unsigned i = 0; i < 12; i++) {   // interleaved: 12 extents
        Write(log, i * B, data.substr(i * B, B));
        Write(g, i * B, "g");
    }
    Write(f, 40 * B, "end");
    ASSERT_EQ(sfs_move_blocks(fs, nullptr, log, 0, f, 8 * B, 12 * B), 0);
    EXPECT_EQ(Size(f), 40 * B + 3);
    EXPECT_TRUE(Read(f, 8 * B, 12 * B) == data);
    struct sfs_txn *tx;
    ASSERT_EQ(sfs_txn_begin(fs, &tx), 0);
    uint64_t h = Create(SFS_ROOT_INO, "h");
    ASSERT_EQ(sfs_move_blocks(fs, tx, f, 8 * B, h, 0, 4 * B), 0);
    ASSERT_EQ(sfs_write(fs, tx, h, 4 * B, "x", 1), 1);
    ASSERT_EQ(sfs_txn_commit(tx, true), 0);
    EXPECT_TRUE(Read(h, 0, 4 * B + 1) == data.substr(0, 4 * B) + "x");
    EXPECT_TRUE(Read(f, 12 * B, 8 * B) == data.substr(4 * B));
    Unmount();
    ExpectClean();
    Mount();
}

// Refusals change nothing: unaligned, same file, a hole or preallocated
// (unwritten) blocks in the source, a destination range that holds data
// or preallocation, past the source's end, a directory.
TEST_F(Move, RefusalsChangeNothing)
{
    uint64_t log = Create(SFS_ROOT_INO, "log"), f = Create(SFS_ROOT_INO, "f");
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    std::string data = Bytes(8 * B, 6);
    Write(log, 0, data);
    Write(log, 12 * B, data.substr(0, B));   // [8, 12) a hole
    Write(f, 0, Bytes(2 * B + 5, 7));
    ASSERT_EQ(sfs_fallocate(fs, nullptr, f, SFS_FALLOC_KEEP_SIZE, 4 * B, 2 * B), 0);
    std::string lbefore = Read(log, 0, 13 * B), fbefore = Read(f, 0, 8 * B);
    uint64_t lb = Blocks(log), fb = Blocks(f);
    struct { uint64_t src, soff, dst, doff, len; int want; } cases[] = {
        { log, 1, f, 8 * B, B, -EINVAL },            // unaligned source
        { log, 0, f, 8 * B + 1, B, -EINVAL },        // unaligned destination
        { log, 0, f, 8 * B, B + 1, -EINVAL },        // unaligned length
        { log, 0, f, 8 * B, 0, -EINVAL },            // nothing
        { log, 0, log, 20 * B, B, -EINVAL },         // one file
        { log, 6 * B, f, 8 * B, 4 * B, -EINVAL },    // a hole in the source
        { log, 0, f, 0, B, -EINVAL },                // the destination holds data
        { log, 0, f, 4 * B, B, -EINVAL },            // ... or preallocated blocks
        { log, 0, f, 16 * B, B, -EINVAL },           // past dst's unaligned end
        { log, 12 * B, f, 8 * B, 2 * B, -EINVAL },   // past the source's end
        { log, 0, d, 0, B, -EINVAL },                // a directory
        { d, 0, f, 8 * B, B, -EINVAL },
    };
    for (auto &c : cases) {
        SCOPED_TRACE(std::to_string(c.soff) + " " + std::to_string(c.doff) + " " +
                     std::to_string(c.len));
        EXPECT_EQ(sfs_move_blocks(fs, nullptr, c.src, c.soff, c.dst, c.doff, c.len), c.want);
    }
    EXPECT_TRUE(Read(log, 0, 13 * B) == lbefore);
    EXPECT_TRUE(Read(f, 0, 8 * B) == fbefore);
    EXPECT_EQ(Blocks(log), lb);
    EXPECT_EQ(Blocks(f), fb);
    Unmount();
    ExpectClean();
    Mount();
}

// Journaled data of the source not yet checkpointed (jdata.h) is never
// moved: refused, nothing changed; after the checkpoint it moves.
TEST_F(Move, JournaledSourceBlocksAreRefused)
{
    uint64_t log = Create(SFS_ROOT_INO, "log"), f = Create(SFS_ROOT_INO, "f");
    Write(log, 0, Bytes(4 * B, 8));
    ASSERT_EQ(sfs_sync(fs), 0);
    struct sfs_txn *tx;
    ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
    ASSERT_EQ(sfs_write(fs, tx, log, B, "new", 3), 3);   // an overwrite: journaled
    ASSERT_EQ(sfs_txn_commit(tx, true), 0);
    std::string want = Read(log, 0, 4 * B);
    EXPECT_EQ(sfs_move_blocks(fs, nullptr, log, 0, f, 0, 4 * B), -EBUSY);
    EXPECT_EQ(Size(f), 0u);
    EXPECT_TRUE(Read(log, 0, 4 * B) == want);
    Remount();   // checkpointed
    ASSERT_EQ(sfs_move_blocks(fs, nullptr, log, 0, f, 0, 4 * B), 0);
    EXPECT_TRUE(Read(f, 0, 4 * B) == want);
    Unmount();
    ExpectClean();
    Mount();
}

// A power cut at every write of one move (with a write after it in the
// same transaction): after recovery the blocks are the source's (as
// before) or the destination's (as after), and fsck is clean.
TEST_F(Move, PowerCutAtEveryWriteIsAllOrNothing)
{
    bool done = false;
    int as_before = 0, as_after = 0;
    for (uint64_t k = 0; !done && k < 400 && !HasFailure(); k++) {
        SCOPED_TRACE("cut after write " + std::to_string(k));
        if (fs)
            Unmount();
        media_close(disk);
        disk = nullptr;
        Format(16384);
        uint64_t log = Create(SFS_ROOT_INO, "log"), f = Create(SFS_ROOT_INO, "f");
        std::string data = Bytes(24 * B, 9), head = Bytes(B, 10);
        Write(log, 0, head + data + "tail");
        Write(f, 0, head);
        ASSERT_EQ(sfs_sync(fs), 0);
        media_fault_cut_after(disk, media_fault_writes(disk) + k, k % 3 ? UINT64_MAX : 2048);
        struct sfs_txn *tx = nullptr;
        int r = sfs_txn_begin(fs, &tx);
        if (!r)
            r = sfs_move_blocks(fs, tx, log, B, f, B, 24 * B);
        if (!r && sfs_write(fs, tx, f, 25 * B, "!", 1) != 1)
            r = -EIO;
        int c = tx ? sfs_txn_commit(tx, true) : -EIO;
        done = !media_fault_is_cut(disk);
        Crash(k % 2 ? MEDIA_FAULT_KEEP_NONE : MEDIA_FAULT_KEEP_RANDOM, k);
        for (auto &l : Fsck())
            ADD_FAILURE() << "fsck: " << l;
        Mount();
        std::string lg = Read(log, 0, 26 * B), fg = Read(f, 0, 27 * B);
        bool before = lg == head + data + "tail" && fg == head;
        bool after = lg == head + std::string(24 * B, '\0') + "tail" &&
                     fg == head + data + "!";
        as_before += before;
        as_after += after;
        EXPECT_TRUE(before || after) << "log " << lg.size() << " bytes, f " << fg.size();
        if (done) {
            EXPECT_EQ(r, 0);
            EXPECT_EQ(c, 0);
            EXPECT_TRUE(after);
        }
    }
    EXPECT_TRUE(done) << "the move never completed";
    EXPECT_GT(as_before, 0);
    EXPECT_GT(as_after, 0);
}

}  // namespace
