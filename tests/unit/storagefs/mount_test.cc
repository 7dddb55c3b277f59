// Mount validates everything before writing: zeroed, random, truncated,
// foreign-version and feature-flagged images are refused with a message
// and no write; read-only mounts replay the journal in memory only.
#include "sfs_fixture.h"

extern "C" {
#include "common/crc32c.h"
#include "common/le.h"
#include "device/storagefs/format.h"
}

#include <random>

class MountCheck : public SfsFixture {
  protected:
    void ExpectRefused(int want, const std::string &msg)
    {
        uint64_t w = media_fault_writes(disk);
        EXPECT_EQ(TryMount(), want);
        EXPECT_EQ(media_fault_writes(disk), w) << "mount wrote to a refused image";
        if (!msg.empty()) {
            EXPECT_NE(std::string(cisc_corrupt_last()).find(msg), std::string::npos)
                << cisc_corrupt_last();
        }
    }
    void RewriteSb(void (*edit)(struct sfs_sb *))
    {
        uint8_t b[4096];
        ASSERT_EQ(media_read(disk, 0, 1, b), 0);
        struct sfs_sb sb;
        sfs_sb_decode(b, &sb);
        edit(&sb);
        sfs_sb_encode(&sb, b, 0);
        ASSERT_EQ(media_write(disk, 0, 1, b), 0);
    }
};

TEST_F(MountCheck, ZeroedImage)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    ExpectRefused(-EUCLEAN, "not a ciscfs image");
}

TEST_F(MountCheck, RandomImage)
{
    ASSERT_EQ(media_fault_create(512, &disk), 0);
    std::mt19937 rng(7);
    uint8_t b[4096];
    for (uint64_t blk = 0; blk < 512; blk++) {
        for (auto &x : b)
            x = (uint8_t)rng();
        ASSERT_EQ(media_write(disk, blk, 1, b), 0);
    }
    ExpectRefused(-EUCLEAN, "not a ciscfs image");
    std::vector<std::string> lines;
    struct sfs_fsck_result r;
    EXPECT_EQ(sfs_fsck(disk, [](void *a, const char *m) {
        static_cast<std::vector<std::string> *>(a)->push_back(m);
    }, &lines, &r), -EUCLEAN);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines[0].find("not a ciscfs image"), std::string::npos) << lines[0];
}

TEST_F(MountCheck, TruncatedImage)
{
    Format(8192);
    Unmount();
    struct media *small;
    ASSERT_EQ(media_fault_create(5000, &small), 0);
    uint8_t b[4096];
    for (uint64_t blk = 0; blk < 5000; blk++) {
        ASSERT_EQ(media_read(disk, blk, 1, b), 0);
        ASSERT_EQ(media_write(small, blk, 1, b), 0);
    }
    media_close(disk);
    disk = small;
    ExpectRefused(-EUCLEAN, "image truncated");
}

TEST_F(MountCheck, FutureVersionAndFeatures)
{
    Format();
    Unmount();
    RewriteSb([](struct sfs_sb *sb) { sb->version = 2; });
    ExpectRefused(-EUCLEAN, "unsupported format version 2");
    RewriteSb([](struct sfs_sb *sb) {
        sb->version = 1;
        sb->feat_incompat = 0x10;
    });
    ExpectRefused(-EUCLEAN, "unsupported incompatible features");
    RewriteSb([](struct sfs_sb *sb) {
        sb->feat_incompat = 0;
        sb->feat_ro_compat = 0x4;
    });
    ExpectRefused(-EROFS, "");
    Mount(true);                  // read-only is fine
    Unmount();
    RewriteSb([](struct sfs_sb *sb) { sb->feat_ro_compat = 0; });
    Mount();
}

TEST_F(MountCheck, ReadOnlyMountReplaysInMemoryOnly)
{
    Format();
    uint64_t f = Create(SFS_ROOT_INO, "journaled");
    Write(f, 0, "in the journal");
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash(MEDIA_FAULT_KEEP_NONE);     // committed, never checkpointed
    uint64_t w = media_fault_writes(disk);
    Mount(true);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "journaled"), f);
    EXPECT_EQ(Read(f, 0, 100), "in the journal");
    struct sfs_attr a;
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "x", S_IFREG, 0, 0, 0, &a), -EROFS);
    Unmount();
    EXPECT_EQ(media_fault_writes(disk), w);
    Mount();
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "journaled"), f);
}

TEST_F(MountCheck, IoErrorsAreReportedNotFatal)
{
    Format();
    uint64_t f = Create(SFS_ROOT_INO, "f");
    media_fault_fail_write(disk, media_fault_writes(disk) + 1, EIO, true);
    EXPECT_EQ(sfs_write(fs, nullptr, f, 0, "data", 4), -EIO);
    EXPECT_EQ(sfs_sync(fs), -EIO);       // the journal cannot commit: sticky
    struct sfs_attr a;
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "g", S_IFREG, 0, 0, 0, &a), -EIO);
    EXPECT_NE(sfs_unmount(fs), 0);
    fs = nullptr;
    media_fault_fail_write(disk, 0, 0, false);
    Mount();                              // last consistent state
    Unmount();
    ExpectClean();
}

// A root inode whose directory index is damaged under a valid checksum is
// refused before the first write (every lookup in the root starts there).
TEST_F(MountCheck, DamagedRootIndexIsRefusedBeforeWriting)
{
    Format();
    Unmount();
    uint8_t b[4096];
    ASSERT_EQ(media_read(disk, 0, 1, b), 0);
    struct sfs_sb sb;
    sfs_sb_decode(b, &sb);
    uint64_t blk = sb.itable_start + SFS_ROOT_INO / SFS_INODES_PER_BLOCK;
    ASSERT_EQ(media_read(disk, blk, 1, b), 0);
    uint8_t *slot = b + (SFS_ROOT_INO % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE;
    le64_put(slot + DI_DATA + ND_OWNER, 999);
    le32_put(slot + DI_CRC, crc32c(0, slot + 4, SFS_INODE_SIZE - 4));
    ASSERT_EQ(media_write(disk, blk, 1, b), 0);
    ExpectRefused(-EUCLEAN, "wrong owner");
}

// defer_writes: the mount reads as replayed and writes nothing until
// sfs_mount_finish; unmounting before it leaves the image untouched.
TEST_F(MountCheck, DeferredWritesWaitForFinish)
{
    Format();
    uint64_t f = Create(SFS_ROOT_INO, "journaled");
    Write(f, 0, "in the journal");
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash(MEDIA_FAULT_KEEP_NONE);     // committed, never checkpointed
    uint64_t w = media_fault_writes(disk);
    struct sfs_mount_opts mo = {};
    mo.defer_writes = true;
    for (int finish = 0; finish < 2; finish++) {
        struct media *h;
        ASSERT_EQ(media_fault_open_again(disk, &h), 0);
        ASSERT_EQ(sfs_mount(h, &mo, &fs), 0) << cisc_corrupt_last();
        EXPECT_EQ(Lookup(SFS_ROOT_INO, "journaled"), f);
        EXPECT_EQ(Read(f, 0, 100), "in the journal");
        struct sfs_attr a;
        EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "x", S_IFREG, 0, 0, 0, &a), -EROFS);
        EXPECT_EQ(media_fault_writes(disk), w) << "a deferred mount wrote";
        if (finish) {
            ASSERT_EQ(sfs_mount_finish(fs), 0);
            EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "x", S_IFREG, 0, 0, 0, &a), 0);
            EXPECT_EQ(Read(f, 0, 100), "in the journal");
            EXPECT_EQ(sfs_mount_finish(fs), 0);   // nothing left to do
        }
        Unmount();
        if (!finish) {
            EXPECT_EQ(media_fault_writes(disk), w) << "unmount of a deferred mount wrote";
        }
    }
    Mount();
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "journaled"), f);
    EXPECT_NE(Lookup(SFS_ROOT_INO, "x"), 0u);
    Unmount();
    ExpectClean();
}
