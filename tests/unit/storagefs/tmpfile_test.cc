// Unnamed files (sfs_tmpfile, O_TMPFILE): no link and no entry, data like
// any file, freed at the last reference or at the next mount after a
// crash, and given a name by sfs_link once (not after they were named and
// unlinked again, as Linux's I_LINKABLE).
#include "sfs_fixture.h"

namespace {

class Tmpfile : public SfsFixture {
  protected:
    void SetUp() override { Format(8192); }

    uint64_t Free()
    {
        struct sfs_statfs st;
        EXPECT_EQ(sfs_statfs(fs, &st), 0);
        return st.blocks_free;
    }

    uint64_t Make(uint32_t mode = 0600)
    {
        struct sfs_attr a = {};
        EXPECT_EQ(sfs_tmpfile(fs, nullptr, SFS_ROOT_INO, mode, 1000, 1000, &a), 0);
        EXPECT_EQ(a.nlink, 0u);
        EXPECT_EQ(a.mode, S_IFREG | mode);
        return a.ino;
    }
};

TEST_F(Tmpfile, UnnamedUntilLinkedThenAnOrdinaryFile)
{
    uint64_t t = Make();
    EXPECT_TRUE(List(SFS_ROOT_INO).empty());
    std::string data(20000, 'd');
    Write(t, 0, data);
    EXPECT_EQ(Read(t, 0, data.size()), data);
    struct sfs_attr a;
    ASSERT_EQ(sfs_link(fs, nullptr, t, SFS_ROOT_INO, "named", &a), 0);
    EXPECT_EQ(a.nlink, 1u);
    sfs_iput(fs, t);   // the creator's reference
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "named"), t);
    Remount();
    EXPECT_EQ(Read(t, 0, data.size()), data);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Tmpfile, LastReferenceFreesIt)
{
    uint64_t before = Free();
    uint64_t t = Make();
    Write(t, 0, std::string(64 * 4096, 'x'));
    EXPECT_LE(Free() + 64, before);
    ASSERT_EQ(sfs_iget(fs, t), 0);   // a second holder (an open handle)
    sfs_iput(fs, t);
    struct sfs_attr a;
    EXPECT_EQ(sfs_getattr(fs, t, &a), 0);   // still alive
    sfs_iput(fs, t);
    EXPECT_EQ(sfs_getattr(fs, t, &a), -ENOENT);
    EXPECT_EQ(Free(), before);
    EXPECT_EQ(sfs_link(fs, nullptr, t, SFS_ROOT_INO, "late", &a), -ENOENT);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Tmpfile, CrashWithItOpenFreesItAtMount)
{
    uint64_t before = Free();
    uint64_t t = Make();
    Write(t, 0, std::string(64 * 4096, 'x'));
    ASSERT_EQ(sfs_sync(fs), 0);   // the file and its orphan entry are durable
    Crash();
    for (auto &l : Fsck())
        ADD_FAILURE() << "fsck before mount: " << l;
    Mount();
    struct sfs_attr a;
    EXPECT_EQ(sfs_getattr(fs, t, &a), -ENOENT);
    EXPECT_EQ(Free(), before);
    Unmount();
    ExpectClean();
    Mount();
}

// A named file that lost its names is an ordinary orphan again: no second
// first name (the kernel forbids it too), and it still dies at the end.
TEST_F(Tmpfile, NamedOnceOnly)
{
    uint64_t t = Make();
    struct sfs_attr a;
    ASSERT_EQ(sfs_link(fs, nullptr, t, SFS_ROOT_INO, "n", &a), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "n"), 0);
    EXPECT_EQ(sfs_link(fs, nullptr, t, SFS_ROOT_INO, "again", &a), -ENOENT);
    sfs_iput(fs, t);
    EXPECT_EQ(sfs_getattr(fs, t, &a), -ENOENT);
    EXPECT_EQ(sfs_tmpfile(fs, nullptr, SFS_ROOT_INO, S_IFDIR | 0700, 0, 0, &a), -EINVAL);
    uint64_t f = Create(SFS_ROOT_INO, "file");
    EXPECT_EQ(sfs_tmpfile(fs, nullptr, f, 0600, 0, 0, &a), -ENOTDIR);
    Unmount();
    ExpectClean();
    Mount();
}

}  // namespace
