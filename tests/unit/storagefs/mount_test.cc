// Mount validates everything before writing: zeroed, random, truncated,
// foreign-version and feature-flagged images are refused with a message
// and no write; read-only mounts replay the journal in memory only.
#include "sfs_fixture.h"

extern "C" {
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
