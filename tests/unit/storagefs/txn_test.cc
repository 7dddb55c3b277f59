// Multi-call transactions: several calls commit atomically, even when
// power is cut at any write of the commit; abort is not supported yet
// and leaves the transaction open; sync inside one is refused.
#include "sfs_fixture.h"

class Txn : public SfsFixture {
  protected:
    // A transaction that creates a file with data, a directory, and
    // renames an existing file into it.
    void RunTxn(bool durable)
    {
        struct sfs_txn *tx;
        ASSERT_EQ(sfs_txn_begin(fs, &tx), 0);
        struct sfs_attr a = {}, d = {};
        // EXPECT, not ASSERT: the transaction must be committed whatever
        // happens, or the journal would wait for it forever.
        EXPECT_EQ(sfs_mknod(fs, tx, SFS_ROOT_INO, "t-file", S_IFREG | 0644, 0, 0, 0, &a), 0);
        EXPECT_EQ(sfs_write(fs, tx, a.ino, 0, "payload", 7), 7);
        EXPECT_EQ(sfs_mkdir(fs, tx, SFS_ROOT_INO, "t-dir", 0755, 0, 0, &d), 0);
        EXPECT_EQ(sfs_rename(fs, tx, SFS_ROOT_INO, "old", d.ino, "moved", 0), 0);
        EXPECT_EQ(sfs_setxattr(fs, tx, a.ino, "user.t", "1", 1, 0), 0);
        for (int i = 0; i < 50; i++)    // many calls: credits must not pile up
            EXPECT_EQ(sfs_setxattr(fs, tx, a.ino, "user.u", "2", 1, 0), 0);
        EXPECT_EQ(sfs_sync(fs), -EDEADLK);
        EXPECT_EQ(sfs_txn_abort(tx), -EOPNOTSUPP);
        EXPECT_EQ(sfs_txn_commit(tx, durable), 0);
    }

    // 0: nothing of the transaction is visible; 1: all of it; -1: mixed.
    int Visible()
    {
        bool f = Lookup(SFS_ROOT_INO, "t-file") != 0;
        uint64_t d = Lookup(SFS_ROOT_INO, "t-dir");
        bool moved = d && Lookup(d, "moved") != 0;
        bool old = Lookup(SFS_ROOT_INO, "old") != 0;
        if (!f && !d && !moved && old)
            return 0;
        if (f && d && moved && !old)
            return Read(Lookup(SFS_ROOT_INO, "t-file"), 0, 7) == "payload" ? 1 : -1;
        return -1;
    }
};

TEST_F(Txn, CommitsTogether)
{
    Format();
    Create(SFS_ROOT_INO, "old");
    ASSERT_NO_FATAL_FAILURE(RunTxn(true));
    EXPECT_EQ(Visible(), 1);
    Crash(MEDIA_FAULT_KEEP_NONE);
    Mount();
    EXPECT_EQ(Visible(), 1);
    Unmount();
    ExpectClean();
}

TEST_F(Txn, AllOrNothingAtEveryCutPoint)
{
    // Count the writes of setup and of the transaction's commit.
    Format(4096);
    Unmount();
    media_close(disk);
    disk = nullptr;
    uint64_t total = 0, base = 0;
    for (uint64_t k = 0;; k++) {
        ASSERT_EQ(media_fault_create(4096, &disk), 0);
        ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
        ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
        Create(SFS_ROOT_INO, "old");
        ASSERT_EQ(sfs_sync(fs), 0);
        base = media_fault_writes(disk);
        if (k)
            media_fault_cut_after(disk, base + k, k % 2 ? UINT64_MAX : 1500);
        ASSERT_NO_FATAL_FAILURE(RunTxn(true));
        if (k == 0)
            total = media_fault_writes(disk) - base;
        Crash(k % 3 ? MEDIA_FAULT_KEEP_RANDOM : MEDIA_FAULT_KEEP_NONE, k);
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        int v = Visible();
        EXPECT_NE(v, -1) << "partial transaction visible after cut at write " << k;
        if (k == 0 || k > total) {
            EXPECT_EQ(v, 1);
        }
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
        if (k > total)
            break;
    }
}
