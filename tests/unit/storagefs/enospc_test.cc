// Running out of space and out of inodes: clean -ENOSPC, nothing lost or
// leaked, fsck clean afterwards, and the space comes back after deletes.
#include "sfs_fixture.h"

class Enospc : public SfsFixture {
  protected:
    void CheckClean()
    {
        Unmount();
        ExpectClean();
        Mount();
    }
};

TEST_F(Enospc, FillWithDataThenFreeAndReuse)
{
    Format(2048, 256);
    std::string chunk(256 * 1024, 'D');
    std::vector<uint64_t> files;
    uint64_t written = 0;
    ssize_t last = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t f = Create(SFS_ROOT_INO, ("f" + std::to_string(i)).c_str());
        files.push_back(f);
        last = sfs_write(fs, nullptr, f, 0, chunk.data(), chunk.size());
        if (last != (ssize_t)chunk.size())
            break;
        written += chunk.size();
    }
    ASSERT_TRUE(last == -ENOSPC || (last >= 0 && last < (ssize_t)chunk.size())) << last;
    EXPECT_GT(written, 4u << 20);
    // A partial write left a consistent, readable prefix.
    uint64_t lastf = files.back();
    EXPECT_EQ(Size(lastf), last > 0 ? (uint64_t)last : 0u);
    EXPECT_EQ(Read(lastf, 0, 100), std::string(last > 0 ? 100 : 0, 'D'));
    EXPECT_EQ(sfs_write(fs, nullptr, lastf, 1 << 20, "x", 1), -ENOSPC);
    CheckClean();
    // Delete two files; their space is reusable at once (freed blocks
    // become allocatable after a commit, which the write forces).
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f0"), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f1"), 0);
    uint64_t g = Create(SFS_ROOT_INO, "again");
    EXPECT_EQ(sfs_write(fs, nullptr, g, 0, chunk.data(), chunk.size()), (ssize_t)chunk.size());
    EXPECT_EQ(Read(g, chunk.size() - 5, 5), "DDDDD");
    CheckClean();
}

TEST_F(Enospc, FullDiskStillAllowsMetadataOnlyChangesOrFailsCleanly)
{
    Format(2048, 2000);
    uint64_t f = Create(SFS_ROOT_INO, "fill");
    std::string chunk(1 << 20, 'F');
    for (int i = 0; i < 20; i++)
        if (sfs_write(fs, nullptr, f, (uint64_t)i << 20, chunk.data(), chunk.size()) <= 0)
            break;
    // Directory growth needs blocks: some creates fail, cleanly.
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    int ok = 0, nospc = 0;
    for (int i = 0; i < 1500; i++) {
        struct sfs_attr a;
        int r = sfs_mknod(fs, nullptr, d, ("name-" + std::to_string(i)).c_str(),
                          S_IFREG | 0644, 0, 0, 0, &a);
        ASSERT_TRUE(r == 0 || r == -ENOSPC) << r;
        ok += r == 0;
        nospc += r == -ENOSPC;
    }
    EXPECT_GT(ok, 0);
    EXPECT_GT(nospc, 0);
    // Punching holes splits the big extent: the tree grows from the
    // metadata reserve, or the punch fails cleanly.
    for (int i = 1; i < 40; i += 2) {
        int r = sfs_fallocate(fs, nullptr, f, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
                              (uint64_t)i * 4096 * 3, 4096);
        ASSERT_TRUE(r == 0 || r == -ENOSPC) << r;
    }
    CheckClean();
}

TEST_F(Enospc, OutOfInodes)
{
    Format(4096, 40);
    struct sfs_statfs st;
    sfs_statfs(fs, &st);
    uint64_t avail = st.inodes_free;
    int made = 0, r = 0;
    for (int i = 0; i < 100; i++) {
        struct sfs_attr a;
        r = i % 5 ? sfs_mknod(fs, nullptr, SFS_ROOT_INO, ("i" + std::to_string(i)).c_str(),
                              S_IFREG | 0644, 0, 0, 0, &a)
                  : sfs_mkdir(fs, nullptr, SFS_ROOT_INO, ("i" + std::to_string(i)).c_str(),
                              0755, 0, 0, &a);
        if (r)
            break;
        made++;
    }
    EXPECT_EQ(r, -ENOSPC);
    EXPECT_EQ((uint64_t)made, avail);
    struct sfs_attr a;
    EXPECT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "s", "t", 0, 0, &a), -ENOSPC);
    CheckClean();
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "i1"), 0);
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "new", S_IFREG, 0, 0, 0, &a), 0);
    CheckClean();
}
