// Data-journaled transactions (SFS_TXN_DATA_JOURNAL): several overwrites
// of existing data commit together with the metadata, at every power-cut
// point; reads see the journaled data before the checkpoint; later writes
// to the same blocks are never lost to an old image at replay or
// checkpoint; blocks freed meanwhile are not reused under a pending image;
// a read-only mount after a crash reads the replayed data.
#include "sfs_fixture.h"

#include <atomic>
#include <random>
#include <thread>

#include "sfs_probe.h"

namespace {

std::string Pattern(size_t n, int seed)
{
    std::string s(n, '\0');
    std::mt19937 rng(seed);
    for (auto &c : s)
        c = (char)('a' + rng() % 26);
    return s;
}

// What the fused op below changes in each file.
struct Change {
    const char *name;
    size_t size;          // file size before
    uint64_t off;         // overwrite at
    size_t len;
};

const Change kChanges[] = {
    {"a", 3 * 4096 + 500, 100, 2 * 4096 + 7},   // spans three blocks, partial ends
    {"b", 4096, 0, 4096},                       // one whole block
    {"c", 5 * 4096, 4 * 4096 + 4000, 96},       // the tail of the last block
};

}  // namespace

class JData : public SfsFixture {
  protected:
    std::string Old(int i) { return Pattern(kChanges[i].size, 10 + i); }

    std::string New(int i)
    {
        std::string s = Old(i);
        s.replace(kChanges[i].off, kChanges[i].len, Pattern(kChanges[i].len, 20 + i));
        return s;
    }

    void MakeFiles()
    {
        for (int i = 0; i < 3; i++)
            Write(Create(SFS_ROOT_INO, kChanges[i].name), 0, Old(i));
        ASSERT_EQ(sfs_sync(fs), 0);
    }

    // The fused op: three overwrites and an xattr, one transaction.
    void RunTxn(unsigned flags, bool durable)
    {
        struct sfs_txn *tx;
        ASSERT_EQ(sfs_txn_begin_flags(fs, flags, &tx), 0);
        for (int i = 0; i < 3; i++) {
            const Change &c = kChanges[i];
            std::string d = Pattern(c.len, 20 + i);
            EXPECT_EQ(sfs_write(fs, tx, Lookup(SFS_ROOT_INO, c.name), c.off, d.data(), c.len),
                      (ssize_t)c.len);
            // read-your-writes inside the transaction
            EXPECT_EQ(Read(Lookup(SFS_ROOT_INO, c.name), 0, c.size), New(i));
        }
        EXPECT_EQ(sfs_setxattr(fs, tx, Lookup(SFS_ROOT_INO, "a"), "user.op", "done", 4, 0), 0);
        EXPECT_EQ(sfs_txn_commit(tx, durable), 0);
    }

    // 0: the op left no trace; 1: all of it is there; -1: mixed.
    int State()
    {
        int olds = 0, news = 0;
        for (int i = 0; i < 3; i++) {
            std::string s = Read(Lookup(SFS_ROOT_INO, kChanges[i].name), 0, 1 << 20);
            olds += s == Old(i);
            news += s == New(i);
        }
        char v[8];
        bool x = sfs_getxattr(fs, Lookup(SFS_ROOT_INO, "a"), "user.op", v, sizeof(v)) == 4;
        if (olds == 3 && !x)
            return 0;
        if (news == 3 && x)
            return 1;
        return -1;
    }
};

TEST_F(JData, UnknownFlagsAreRefused)
{
    Format();
    struct sfs_txn *tx;
    EXPECT_EQ(sfs_txn_begin_flags(fs, 0x80, &tx), -EINVAL);
}

// Power cut at every write of the commit and of the checkpoint and
// unmount that follow (each write whole or torn, unflushed blocks kept
// at random or not at all): the files are all old or all new, and all new
// once the commit record is durable.
TEST_F(JData, OverwritesCommitTogetherAtEveryCutPoint)
{
    uint64_t total = 0, commit = 0;
    for (uint64_t k = 0;; k++) {
        ASSERT_EQ(media_fault_create(4096, &disk), 0);
        ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
        ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
        ASSERT_NO_FATAL_FAILURE(MakeFiles());
        uint64_t base = media_fault_writes(disk);
        if (k)
            media_fault_cut_after(disk, base + k, k % 2 ? UINT64_MAX : 1000);
        ASSERT_NO_FATAL_FAILURE(RunTxn(SFS_TXN_DATA_JOURNAL, true));
        if (k == 0)
            commit = media_fault_writes(disk) - base;
        sfs_unmount(fs);          /* the checkpoint writes in place */
        fs = nullptr;
        if (k == 0)
            total = media_fault_writes(disk) - base;
        struct media *snap;
        ASSERT_EQ(media_fault_snapshot(disk, k % 3 ? MEDIA_FAULT_KEEP_RANDOM
                                                   : MEDIA_FAULT_KEEP_NONE, k, &snap), 0);
        media_close(disk);
        disk = snap;
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        int st = State();
        EXPECT_NE(st, -1) << "half a transaction after a cut at write " << k << " of " << total;
        if (k == 0 || k > commit) {
            EXPECT_EQ(st, 1) << "cut at write " << k << ", commit took " << commit;
        }
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
        if (k > total)
            break;
    }
    EXPECT_GE(commit, 2u);
    EXPECT_GT(total, commit + 3);   // in-place data, header, superblocks
}

// Nothing is written in place before the commit: a crash that keeps every
// unflushed write still shows the old data. (Ordered mode, the default,
// overwrites in place: the same crash shows the new bytes under old
// metadata, which is why fused ops need the flag.)
TEST_F(JData, UncommittedOverwritesLeaveNoTrace)
{
    for (unsigned flags : {SFS_TXN_DATA_JOURNAL, 0u}) {
        ASSERT_EQ(media_fault_create(4096, &disk), 0);
        ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
        ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
        ASSERT_NO_FATAL_FAILURE(MakeFiles());
        ASSERT_NO_FATAL_FAILURE(RunTxn(flags, false));
        EXPECT_EQ(State(), 1);   // visible before any commit reaches the media
        Crash(MEDIA_FAULT_KEEP_ALL);
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        EXPECT_EQ(State(), flags ? 0 : -1) << "flags " << flags;
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
    }
}

TEST_F(JData, ReadsSeeJournaledDataUntilAndAfterTheCheckpoint)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    ASSERT_NO_FATAL_FAILURE(MakeFiles());
    ASSERT_NO_FATAL_FAILURE(RunTxn(SFS_TXN_DATA_JOURNAL, false));
    EXPECT_EQ(State(), 1);
    ASSERT_EQ(sfs_sync(fs), 0);      // committed, not checkpointed
    EXPECT_EQ(State(), 1);
    Remount();                       // checkpointed in place
    EXPECT_EQ(State(), 1);
    Unmount();
    ExpectClean();
}

// A file with journaled blocks is hot: ordinary writes, truncation and
// growth of it are journaled too, so replay (newest image wins) and the
// checkpoint never put the op's older bytes back over them.
TEST_F(JData, LaterChangesToAHotFileSurviveReplay)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    ASSERT_NO_FATAL_FAILURE(MakeFiles());
    ASSERT_NO_FATAL_FAILURE(RunTxn(SFS_TXN_DATA_JOURNAL, true));
    uint64_t a = Lookup(SFS_ROOT_INO, "a"), c = Lookup(SFS_ROOT_INO, "c");
    std::string later = Pattern(3000, 99);
    Write(a, 50, later);                          // plain write over the op's bytes
    struct sfs_attr in = {};
    in.size = 4 * 4096 + 4010;                    // cut inside the op's tail ...
    ASSERT_EQ(sfs_setattr(fs, nullptr, c, &in, SFS_SET_SIZE, nullptr), 0);
    in.size = 5 * 4096;                           // ... and grow: the tail reads zeros
    ASSERT_EQ(sfs_setattr(fs, nullptr, c, &in, SFS_SET_SIZE, nullptr), 0);
    std::string wa = New(0), wc = New(2);
    wa.replace(50, later.size(), later);
    std::fill(wc.begin() + 4 * 4096 + 4010, wc.end(), '\0');
    EXPECT_EQ(Read(a, 0, 1 << 20), wa);
    EXPECT_EQ(Read(c, 0, 1 << 20), wc);
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash(MEDIA_FAULT_KEEP_NONE);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0) << cisc_corrupt_last();
    EXPECT_EQ(Read(Lookup(SFS_ROOT_INO, "a"), 0, 1 << 20), wa);
    EXPECT_EQ(Read(Lookup(SFS_ROOT_INO, "c"), 0, 1 << 20), wc);
    Unmount();
    ExpectClean();
}

// Blocks freed while their journaled image is pending are not given to
// another file before the checkpoint: replay would overwrite its data.
TEST_F(JData, FreedBlocksWithPendingImagesAreNotReused)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    ASSERT_NO_FATAL_FAILURE(MakeFiles());
    // Fill the disk, so that the blocks the op's files free are the only
    // ones a new file can get.
    struct sfs_statfs st;
    ASSERT_EQ(sfs_statfs(fs, &st), 0);
    std::string fill(st.blocks_free * 4096, 'f');
    EXPECT_GT(sfs_write(fs, nullptr, Create(SFS_ROOT_INO, "filler"), 0, fill.data(),
                        fill.size()), 0);
    ASSERT_EQ(sfs_sync(fs), 0);
    ASSERT_NO_FATAL_FAILURE(RunTxn(SFS_TXN_DATA_JOURNAL, true));
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, kChanges[i].name), 0);
    ASSERT_EQ(sfs_sync(fs), 0);   // the frees are committed, not checkpointed
    EXPECT_TRUE(sfs_probe_has_pending(fs)) << "freed blocks reusable before the checkpoint";
    std::string d = Pattern(8 * 4096, 7);
    uint64_t f = Create(SFS_ROOT_INO, "fresh");
    ssize_t n = sfs_write(fs, nullptr, f, 0, d.data(), d.size());
    ASSERT_GT(n, 0);
    d.resize((size_t)n);
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash(MEDIA_FAULT_KEEP_NONE);
    ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
    EXPECT_EQ(Read(Lookup(SFS_ROOT_INO, "fresh"), 0, d.size() + 1), d);
    Unmount();
    ExpectClean();
}

TEST_F(JData, ReadOnlyMountAfterACrashReadsReplayedData)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    ASSERT_NO_FATAL_FAILURE(MakeFiles());
    ASSERT_NO_FATAL_FAILURE(RunTxn(SFS_TXN_DATA_JOURNAL, true));
    Crash(MEDIA_FAULT_KEEP_NONE);
    Mount(true);
    EXPECT_EQ(State(), 1);
    Unmount();
    Mount();
    EXPECT_EQ(State(), 1);
}

// A transaction too big for the journal fails cleanly: a short write or
// -ENOSPC, the rest of the transaction commits, the image stays clean.
TEST_F(JData, TooBigForTheJournalFailsCleanly)
{
    Format(8192, 0, 256);
    uint64_t f = Create(SFS_ROOT_INO, "big");
    std::string old = Pattern(2 << 20, 1), upd = Pattern(2 << 20, 2);
    Write(f, 0, old);
    ASSERT_EQ(sfs_sync(fs), 0);
    struct sfs_txn *tx;
    ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
    ssize_t n = sfs_write(fs, tx, f, 0, upd.data(), upd.size());
    EXPECT_TRUE(n == -ENOSPC || (n > 0 && (size_t)n < upd.size())) << n;
    EXPECT_EQ(sfs_txn_commit(tx, true), 0);
    std::string got = Read(f, 0, old.size());
    size_t done = n > 0 ? (size_t)n : 0;
    EXPECT_EQ(got.substr(0, done), upd.substr(0, done));
    EXPECT_EQ(got.substr(done), old.substr(done));
    Remount();
    EXPECT_EQ(Read(f, 0, old.size()), got);
    Unmount();
    ExpectClean();
}

// After the checkpoint the cached images are dropped: an in-place write
// made while the file is cold, then a partial journaled overwrite, must
// build on the media's bytes, not on a stale cached copy.
TEST_F(JData, CheckpointDropsCachedImages)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    uint64_t f = Create(SFS_ROOT_INO, "f");
    Write(f, 0, std::string(4096, 'o'));
    auto journaled = [&](uint64_t off, const std::string &d) {
        struct sfs_txn *tx;
        ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
        EXPECT_EQ(sfs_write(fs, tx, f, off, d.data(), d.size()), (ssize_t)d.size());
        EXPECT_EQ(sfs_txn_commit(tx, false), 0);
    };
    journaled(0, std::string(4096, 'x'));
    ASSERT_EQ(sfs_probe_checkpoint(fs), 0);     // in place; the file is cold again
    Write(f, 0, std::string(4096, 'y'));          // in place
    journaled(100, "zz");
    std::string want(4096, 'y');
    want.replace(100, 2, "zz");
    EXPECT_EQ(Read(f, 0, 4096), want);
    Remount();
    EXPECT_EQ(Read(f, 0, 4096), want);
}

// Data-journaled transactions, plain writes and checkpoints racing on one
// file (each writer owns its range): every writer reads back its own bytes
// at every step, and they are all there after a remount.
TEST_F(JData, ConcurrentJournaledAndPlainWritersOnOneFile)
{
    Format(16384);
    uint64_t f = Create(SFS_ROOT_INO, "shared");
    Write(f, 0, std::string(4 * 64 * 1024, '.'));
    const size_t region = 64 * 1024;
    std::vector<std::string> last(3);
    std::atomic<bool> stop{false};
    auto writer = [&](int w) {
        std::mt19937 rng(w);
        for (int i = 0; i < 150; i++) {
            uint64_t off = w * region + rng() % (region - 9000);
            std::string d = Pattern(1 + rng() % 9000, w * 1000 + i);
            struct sfs_txn *tx = nullptr;
            if (w != 1) {  // writers 0 and 2 journal their data, 1 writes in place
                EXPECT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
            }
            EXPECT_EQ(sfs_write(fs, tx, f, off, d.data(), d.size()), (ssize_t)d.size());
            if (tx) {
                EXPECT_EQ(sfs_txn_commit(tx, false), 0);
            }
            std::string back(d.size(), '\0');
            EXPECT_EQ(sfs_read(fs, f, off, &back[0], back.size()), (ssize_t)back.size());
            EXPECT_EQ(back, d) << "writer " << w << " step " << i;
        }
        std::string mine(region, '\0');
        EXPECT_EQ(sfs_read(fs, f, w * region, &mine[0], region), (ssize_t)region);
        last[w] = mine;
    };
    std::thread ck([&] {
        while (!stop.load())
            EXPECT_EQ(sfs_probe_checkpoint(fs), 0);
    });
    std::vector<std::thread> ts;
    for (int w = 0; w < 3; w++)
        ts.emplace_back(writer, w);
    for (auto &t : ts)
        t.join();
    stop = true;
    ck.join();
    Remount();
    for (int w = 0; w < 3; w++)
        EXPECT_EQ(Read(f, w * region, region), last[w]) << "writer " << w;
    Unmount();
    ExpectClean();
}
