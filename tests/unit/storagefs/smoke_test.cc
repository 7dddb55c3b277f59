// First end-to-end pass over the StorageFS API on a RAM disk.
#include "sfs_fixture.h"

#include <algorithm>

class Smoke : public SfsFixture {};

TEST_F(Smoke, FormatMountCreateWriteReadRemount)
{
    Format();
    uint64_t f = Create(SFS_ROOT_INO, "hello");
    ASSERT_NE(f, 0u);
    Write(f, 0, "hello, world");
    EXPECT_EQ(Read(f, 0, 100), "hello, world");
    uint64_t d = Mkdir(SFS_ROOT_INO, "dir");
    ASSERT_NE(d, 0u);
    uint64_t g = Create(d, "inner");
    Write(g, 5000, "x");
    EXPECT_EQ(Size(g), 5001u);
    auto names = List(SFS_ROOT_INO);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"dir", "hello"}));
    Remount();
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "hello"), f);
    EXPECT_EQ(Read(f, 0, 100), "hello, world");
    EXPECT_EQ(Read(g, 4999, 10), std::string("\0x", 2));
    EXPECT_EQ(sfs_unlink(fs, nullptr, d, "inner"), 0);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, SFS_ROOT_INO, "dir"), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "dir"), 0u);
    Remount();
    EXPECT_EQ(List(SFS_ROOT_INO), (std::vector<std::string>{"hello"}));
}

TEST_F(Smoke, FreshImageIsClean)
{
    Format();
    Unmount();
    struct sfs_fsck_result r;
    auto p = Fsck(&r);
    EXPECT_TRUE(p.empty()) << p[0];
    EXPECT_EQ(r.files, 1u);
    Mount();
    uint64_t f = Create(SFS_ROOT_INO, "a");
    Write(f, 0, std::string(100000, 'z'));
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    Mkdir(d, "e");
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Smoke, TinyImageSupportsEveryOperation)
{
    Format(512);          // 2 MiB: the journal takes half of it
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    uint64_t f = Create(d, "f");
    Write(f, 0, std::string(20000, 't'));
    EXPECT_EQ(sfs_rename(fs, nullptr, d, "f", SFS_ROOT_INO, "g", 0), 0);
    EXPECT_EQ(sfs_setxattr(fs, nullptr, f, "user.x", "1", 1, 0), 0);
    EXPECT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "g"), 0);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, SFS_ROOT_INO, "d"), 0);
    Unmount();
    ExpectClean();
    Mount();
}
