// Namespace: rename (all the cases), hard links, symlinks, special
// files, unlink while referenced and the orphan list.
#include "sfs_fixture.h"

class Namei : public SfsFixture {
  protected:
    void SetUp() override { Format(); }
    uint32_t Nlink(uint64_t ino)
    {
        struct sfs_attr a = {};   // zeros if getattr fails (the test has failed then)
        EXPECT_EQ(sfs_getattr(fs, ino, &a), 0);
        return a.nlink;
    }
    int Rename(uint64_t od, const char *on, uint64_t nd, const char *nn, unsigned fl = 0)
    {
        return sfs_rename(fs, nullptr, od, on, nd, nn, fl);
    }
    void CheckClean()
    {
        Unmount();
        ExpectClean();
        Mount();
    }
};

TEST_F(Namei, RenameFileWithinAndAcrossDirectories)
{
    uint64_t f = Create(SFS_ROOT_INO, "a");
    Write(f, 0, "data");
    ASSERT_EQ(Rename(SFS_ROOT_INO, "a", SFS_ROOT_INO, "b"), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "a"), 0u);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "b"), f);
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    ASSERT_EQ(Rename(SFS_ROOT_INO, "b", d, "c"), 0);
    EXPECT_EQ(Lookup(d, "c"), f);
    EXPECT_EQ(Rename(SFS_ROOT_INO, "missing", d, "x"), -ENOENT);
    EXPECT_EQ(Read(f, 0, 4), "data");
    CheckClean();
}

TEST_F(Namei, RenameOverExistingFileFreesIt)
{
    uint64_t a = Create(SFS_ROOT_INO, "a");
    uint64_t b = Create(SFS_ROOT_INO, "b");
    Write(b, 0, std::string(100000, 'b'));
    ASSERT_EQ(Rename(SFS_ROOT_INO, "a", SFS_ROOT_INO, "b"), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "b"), a);
    struct sfs_attr at;
    EXPECT_EQ(sfs_getattr(fs, b, &at), -ENOENT);    // freed
    CheckClean();
}

TEST_F(Namei, RenameNoreplaceAndExchange)
{
    uint64_t a = Create(SFS_ROOT_INO, "a");
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    uint64_t b = Create(d, "b");
    EXPECT_EQ(Rename(SFS_ROOT_INO, "a", d, "b", SFS_RENAME_NOREPLACE), -EEXIST);
    EXPECT_EQ(Rename(SFS_ROOT_INO, "a", d, "z", SFS_RENAME_EXCHANGE), -ENOENT);
    EXPECT_EQ(Rename(SFS_ROOT_INO, "a", d, "b", SFS_RENAME_NOREPLACE | SFS_RENAME_EXCHANGE),
              -EINVAL);
    ASSERT_EQ(Rename(SFS_ROOT_INO, "a", d, "b", SFS_RENAME_EXCHANGE), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "a"), b);
    EXPECT_EQ(Lookup(d, "b"), a);
    // Exchange a directory with a file across directories.
    uint64_t e = Mkdir(SFS_ROOT_INO, "e");
    ASSERT_EQ(Rename(SFS_ROOT_INO, "e", d, "b", SFS_RENAME_EXCHANGE), 0);
    EXPECT_EQ(Lookup(d, "b"), e);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "e"), a);
    struct sfs_attr at;
    ASSERT_EQ(sfs_lookup(fs, e, "..", &at), 0);
    EXPECT_EQ(at.ino, d);
    EXPECT_EQ(Nlink(d), 3u);
    EXPECT_EQ(Nlink(SFS_ROOT_INO), 3u);
    ASSERT_EQ(Rename(SFS_ROOT_INO, "a", SFS_ROOT_INO, "a2", SFS_RENAME_NOREPLACE), 0);
    CheckClean();
}

TEST_F(Namei, RenameDirectoryCases)
{
    uint64_t a = Mkdir(SFS_ROOT_INO, "a");
    uint64_t b = Mkdir(a, "b");
    uint64_t c = Mkdir(b, "c");
    // Into its own subtree.
    EXPECT_EQ(Rename(SFS_ROOT_INO, "a", c, "x"), -EINVAL);
    EXPECT_EQ(Rename(SFS_ROOT_INO, "a", a, "x"), -EINVAL);
    // Over a non-empty directory, over a file, file over directory.
    uint64_t t = Mkdir(SFS_ROOT_INO, "t");
    Create(t, "inside");
    EXPECT_EQ(Rename(a, "b", SFS_ROOT_INO, "t"), -ENOTEMPTY);
    uint64_t f = Create(SFS_ROOT_INO, "f");
    EXPECT_EQ(Rename(a, "b", SFS_ROOT_INO, "f"), -ENOTDIR);
    EXPECT_EQ(Rename(SFS_ROOT_INO, "f", SFS_ROOT_INO, "t"), -EISDIR);
    // Over an empty directory: allowed, link counts follow.
    uint64_t empty = Mkdir(SFS_ROOT_INO, "empty");
    EXPECT_EQ(Nlink(SFS_ROOT_INO), 5u);
    ASSERT_EQ(Rename(a, "b", SFS_ROOT_INO, "empty"), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "empty"), b);
    struct sfs_attr at;
    EXPECT_EQ(sfs_getattr(fs, empty, &at), -ENOENT);
    EXPECT_EQ(Nlink(SFS_ROOT_INO), 5u);   // a, t, empty(=b) + 2
    EXPECT_EQ(Nlink(a), 2u);
    ASSERT_EQ(sfs_lookup(fs, b, "..", &at), 0);
    EXPECT_EQ(at.ino, (uint64_t)SFS_ROOT_INO);
    EXPECT_EQ(Lookup(b, "c"), c);
    // Rename onto itself (same inode via hard link) is a no-op.
    ASSERT_EQ(sfs_link(fs, nullptr, f, SFS_ROOT_INO, "f2", &at), 0);
    EXPECT_EQ(Rename(SFS_ROOT_INO, "f", SFS_ROOT_INO, "f2"), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "f"), f);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "f2"), f);
    CheckClean();
}

TEST_F(Namei, HardLinks)
{
    uint64_t f = Create(SFS_ROOT_INO, "f");
    Write(f, 0, "shared");
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    struct sfs_attr a;
    ASSERT_EQ(sfs_link(fs, nullptr, f, d, "g", &a), 0);
    EXPECT_EQ(a.nlink, 2u);
    EXPECT_EQ(sfs_link(fs, nullptr, f, d, "g", &a), -EEXIST);
    EXPECT_EQ(sfs_link(fs, nullptr, d, SFS_ROOT_INO, "dl", &a), -EPERM);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);
    EXPECT_EQ(Nlink(f), 1u);
    EXPECT_EQ(Read(Lookup(d, "g"), 0, 6), "shared");
    CheckClean();
    ASSERT_EQ(sfs_unlink(fs, nullptr, d, "g"), 0);
    EXPECT_EQ(sfs_getattr(fs, f, &a), -ENOENT);
    CheckClean();
}

TEST_F(Namei, SymlinksShortAndLong)
{
    struct sfs_attr a;
    ASSERT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "s", "target/path", 0, 0, &a), 0);
    EXPECT_TRUE(S_ISLNK(a.mode));
    EXPECT_EQ(a.size, 11u);
    char buf[5000];
    EXPECT_EQ(sfs_readlink(fs, a.ino, buf, sizeof(buf)), 11);
    EXPECT_EQ(std::string(buf, 11), "target/path");
    EXPECT_EQ(sfs_readlink(fs, a.ino, buf, 4), 4);
    std::string longt(4000, 'L');
    ASSERT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "l", longt.c_str(), 0, 0, &a), 0);
    uint64_t l = a.ino;
    std::string huge(4096, 'H');
    EXPECT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "h", huge.c_str(), 0, 0, &a),
              -ENAMETOOLONG);
    Remount();
    EXPECT_EQ(sfs_readlink(fs, l, buf, sizeof(buf)), 4000);
    EXPECT_EQ(std::string(buf, 4000), longt);
    EXPECT_EQ(sfs_readlink(fs, SFS_ROOT_INO, buf, 10), -EINVAL);
    CheckClean();
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "l"), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "s"), 0);
    CheckClean();
}

// setattr on a symlink changes owner and times, whatever bytes the target
// starts with: an inline target is not an extent-tree root (its first two
// bytes once read as a tree depth and made setattr fail with -E2BIG). Data
// calls on symlinks fail with the errno POSIX gives, not E2BIG.
TEST_F(Namei, SetattrOnSymlinks)
{
    std::string maxinline(256, '\xff');
    std::vector<std::string> targets = {"x", "target", "../f1", maxinline,
                                        std::string(300, 'y')};
    std::vector<uint64_t> inos;
    for (size_t i = 0; i < targets.size(); i++) {
        struct sfs_attr a, in = {}, out;
        std::string name = "l" + std::to_string(i);
        ASSERT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, name.c_str(), targets[i].c_str(),
                              0, 0, &a), 0);
        inos.push_back(a.ino);
        in.uid = 5;
        in.gid = 6;
        in.atime = {1000, 1};
        in.mtime = {2000, 2};
        unsigned valid = SFS_SET_UID | SFS_SET_GID | SFS_SET_ATIME | SFS_SET_MTIME;
        ASSERT_EQ(sfs_setattr(fs, nullptr, a.ino, &in, valid, &out), 0) << targets[i];
        EXPECT_EQ(out.uid, 5u);
        EXPECT_EQ(out.gid, 6u);
        EXPECT_EQ(out.mtime.tv_sec, 2000);
        EXPECT_EQ(out.size, targets[i].size());
        EXPECT_EQ(sfs_setattr(fs, nullptr, a.ino, &in, SFS_SET_MTIME_NOW, &out), 0);
        EXPECT_EQ(sfs_setattr(fs, nullptr, a.ino, &in, SFS_SET_SIZE, &out), -EINVAL);
        EXPECT_EQ(sfs_write(fs, nullptr, a.ino, 0, "z", 1), -EINVAL);
        EXPECT_EQ(sfs_fallocate(fs, nullptr, a.ino, 0, 0, 4096), -ENODEV);
        EXPECT_EQ(sfs_seek(fs, a.ino, 0, SFS_SEEK_DATA), -EINVAL);
    }
    CheckClean();
    for (size_t i = 0; i < targets.size(); i++) {
        struct sfs_attr a;
        char buf[5000];
        ASSERT_EQ(sfs_getattr(fs, inos[i], &a), 0);
        EXPECT_EQ(a.uid, 5u);
        EXPECT_EQ(a.gid, 6u);
        EXPECT_EQ(a.atime.tv_sec, 1000);
        ssize_t n = sfs_readlink(fs, inos[i], buf, sizeof(buf));
        ASSERT_EQ(n, (ssize_t)targets[i].size());
        EXPECT_EQ(std::string(buf, (size_t)n), targets[i]);
    }
}

TEST_F(Namei, SpecialFilesAndAttributes)
{
    struct sfs_attr a;
    ASSERT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "fifo", S_IFIFO | 0600, 0, 5, 6, &a), 0);
    EXPECT_TRUE(S_ISFIFO(a.mode));
    EXPECT_EQ(a.uid, 5u);
    ASSERT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "dev", S_IFCHR | 0600, 0x0103, 0, 0, &a),
              0);
    EXPECT_EQ(a.rdev, 0x0103u);
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "x", S_IFDIR | 0600, 0, 0, 0, &a), -EINVAL);
    uint64_t ino = a.ino;
    struct sfs_attr in = {}, out;
    in.mode = 0751;
    in.uid = 42;
    in.gid = 43;
    in.atime = {1000, 5};
    in.mtime = {2000, 999999999};
    ASSERT_EQ(sfs_setattr(fs, nullptr, ino, &in,
                          SFS_SET_MODE | SFS_SET_UID | SFS_SET_GID | SFS_SET_ATIME | SFS_SET_MTIME,
                          &out), 0);
    EXPECT_EQ(out.mode, (uint32_t)(S_IFCHR | 0751));
    Remount();
    ASSERT_EQ(sfs_getattr(fs, ino, &a), 0);
    EXPECT_EQ(a.uid, 42u);
    EXPECT_EQ(a.gid, 43u);
    EXPECT_EQ(a.atime.tv_sec, 1000);
    EXPECT_EQ(a.atime.tv_nsec, 5);
    EXPECT_EQ(a.mtime.tv_nsec, 999999999);
    EXPECT_GT(a.btime.tv_sec, 0);
    EXPECT_NE(a.generation, 0u);
    in.mtime = {1, 1000000000};
    EXPECT_EQ(sfs_setattr(fs, nullptr, ino, &in, SFS_SET_MTIME, nullptr), -EINVAL);
    in.size = 10;
    EXPECT_EQ(sfs_setattr(fs, nullptr, SFS_ROOT_INO, &in, SFS_SET_SIZE, nullptr), -EISDIR);
    CheckClean();
}

TEST_F(Namei, UnlinkWhileReferencedKeepsDataUntilLastPut)
{
    uint64_t f = Create(SFS_ROOT_INO, "f");
    Write(f, 0, std::string(300000, 'q'));
    ASSERT_EQ(sfs_iget(fs, f), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "f"), 0u);
    EXPECT_EQ(Read(f, 299990, 10), std::string(10, 'q'));
    Write(f, 0, "still writable");
    EXPECT_EQ(Nlink(f), 0u);
    struct sfs_statfs before, after;
    sfs_statfs(fs, &before);
    sfs_iput(fs, f);
    sfs_statfs(fs, &after);
    EXPECT_GT(after.blocks_free, before.blocks_free);
    EXPECT_EQ(after.inodes_free, before.inodes_free + 1);
    struct sfs_attr a;
    EXPECT_EQ(sfs_getattr(fs, f, &a), -ENOENT);
    CheckClean();
}

// Held inodes (sfs_iget_ino): the *_ino calls act on the file like the
// calls by number; only the last of two held references frees an
// unlinked file, the first leaves it readable.
TEST_F(Namei, HeldInodeCallsAndLastPutOfUnlinkedFile)
{
    uint64_t f = Create(SFS_ROOT_INO, "f");
    struct sfs_inode *a = nullptr, *b = nullptr;
    ASSERT_EQ(sfs_iget_ino(fs, f, &a), 0);
    ASSERT_EQ(sfs_iget_ino(fs, f, &b), 0);
    ASSERT_EQ(a, b);
    EXPECT_EQ(sfs_ino_number(a), f);
    std::string d(9000, 'h');
    ASSERT_EQ(sfs_write_ino(fs, nullptr, a, 100, d.data(), d.size()), (ssize_t)d.size());
    struct sfs_attr at = {};
    ASSERT_EQ(sfs_getattr_ino(fs, a, &at), 0);
    EXPECT_EQ(at.size, 9100u);
    EXPECT_EQ(Read(f, 100, 9000), d);
    struct sfs_attr in = {};
    in.size = 5000;
    ASSERT_EQ(sfs_setattr_ino(fs, nullptr, a, &in, SFS_SET_SIZE, &at), 0);
    EXPECT_EQ(at.size, 5000u);
    ASSERT_EQ(sfs_fallocate_ino(fs, nullptr, a, SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE,
                                0, 4096), 0);
    char buf[5000];
    ASSERT_EQ(sfs_read_ino(fs, a, 0, buf, sizeof(buf)), 5000);
    EXPECT_EQ(std::string(buf, 4096), std::string(4096, '\0'));
    EXPECT_EQ(std::string(buf + 4096, 904), std::string(904, 'h'));
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);
    struct sfs_statfs before, mid, after;
    sfs_statfs(fs, &before);
    sfs_iput_ino(fs, b);                         // not the last: nothing freed
    sfs_statfs(fs, &mid);
    EXPECT_EQ(mid.inodes_free, before.inodes_free);
    EXPECT_EQ(Read(f, 4096, 904), std::string(904, 'h'));
    sfs_iput_ino(fs, a);                         // the last: the file goes
    sfs_statfs(fs, &after);
    EXPECT_EQ(after.inodes_free, before.inodes_free + 1);
    EXPECT_EQ(sfs_getattr(fs, f, &at), -ENOENT);
    CheckClean();
}

TEST_F(Namei, OrphanFreedAtMountAfterCrash)
{
    uint64_t f = Create(SFS_ROOT_INO, "f");
    Write(f, 0, std::string(200000, 'o'));
    ASSERT_EQ(sfs_iget(fs, f), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash();               // the device dies with the file still open
    {
        struct sfs_fsck_result r;
        auto p = Fsck(&r);  // an orphan on the list is consistent
        for (auto &l : p)
            ADD_FAILURE() << l;
    }
    Mount();               // mount frees the orphan
    struct sfs_attr a;
    EXPECT_EQ(sfs_getattr(fs, f, &a), -ENOENT);
    struct sfs_statfs st;
    sfs_statfs(fs, &st);
    EXPECT_EQ(st.inodes_free, st.inodes - 1);
    CheckClean();
}
