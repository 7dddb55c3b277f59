// tests/unit/engine/engine_path_test.cc - the engine's path operations
// (the libcisc door) on a real StorageFS: resolution with search
// permission on every directory, symlinks, O_CREAT/O_EXCL/O_TRUNC, a
// session's own handle table, and the change records kept for the FUSE
// front end's caches.
#include <gtest/gtest.h>

#include "device/engine/engine.h"
#include "tests/unit/engine/eng_image.h"
#include "device/engine/handle.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace {

class EnginePath : public ::testing::Test {
protected:
    std::string path;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct hdl_table *tbl = nullptr;   // a session's handles
    struct eng_cred root = {}, user = {};
    struct eng_chg chg = {};

    void SetUp() override
    {
        MakeMountedImage("/tmp/ciscfs-engpath-XXXXXX", &path, &fs);
        if (HasFatalFailure())
            return;
        struct eng_config cfg = { 2, "fifo" };
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
        ASSERT_EQ(hdl_table_create(&tbl), 0);
        root.ngroups = 0;
        user.uid = user.gid = 12345;
        user.ngroups = 0;
    }

    void TearDown() override
    {
        eng_chg_release(&chg);
        eng_release_handles(eng, tbl);
        hdl_table_destroy(tbl);
        eng_destroy(eng);
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        unlink(path.c_str());
    }

    // A command of the libcisc door: path, the session's table, change records.
    void Init(struct eng_cmd &c, unsigned op, const struct eng_cred &cr, const char *p = nullptr)
    {
        eng_cmd_init(&c, op, &cr);
        c.path = p;
        c.hdl = tbl;
        eng_chg_release(&chg);
        chg = {};
        c.chg = &chg;
    }

    int64_t Open(const char *p, uint32_t flags, uint32_t mode, uint64_t *fh,
                 const struct eng_cred &cr)
    {
        struct eng_cmd c;
        Init(c, ENG_OP_OPEN_PATH, cr, p);
        c.flags = flags;
        c.mode = mode;
        int64_t r = eng_call(eng, &c);
        if (!r && fh)
            *fh = c.out_fh;
        return r;
    }

    int64_t Simple(unsigned op, const char *p, const struct eng_cred &cr, uint32_t mode = 0)
    {
        struct eng_cmd c;
        Init(c, op, cr, p);
        c.mode = mode;
        return eng_call(eng, &c);
    }

    int64_t Close(uint64_t fh)
    {
        struct eng_cmd c;
        Init(c, ENG_OP_RELEASE, root);
        c.fh = fh;
        return eng_call(eng, &c);
    }

    int64_t Chmod(const char *p, uint32_t mode)
    {
        struct eng_cmd c;
        Init(c, ENG_OP_STAT_PATH, root, p);
        if (eng_call(eng, &c))
            return -1;
        uint64_t ino = c.attr.ino;
        eng_cmd_init(&c, ENG_OP_SETATTR, &root);
        c.ino = ino;
        c.sattr.mode = mode;
        c.valid = SFS_SET_MODE;
        return eng_call(eng, &c);
    }
};

TEST_F(EnginePath, CreateOpenAndTheirFlags)
{
    uint64_t fh = 0;
    ASSERT_EQ(Open("f", O_CREAT | O_RDWR, 0640, &fh, root), 0);
    ASSERT_EQ(chg.nentries, 1u);   // created: the entry, and the root's attributes
    EXPECT_EQ(chg.entry[0].parent, (uint64_t)SFS_ROOT_INO);
    EXPECT_STREQ(chg.entry[0].name, "f");
    EXPECT_EQ(hdl_count(tbl), 1u);
    EXPECT_EQ(eng_open_handles(eng), 0u) << "the session's handles are its own";
    EXPECT_EQ(Close(fh), 0);
    EXPECT_EQ(Open("f", O_CREAT | O_EXCL | O_RDWR, 0640, &fh, root), -EEXIST);
    ASSERT_EQ(Open("f", O_CREAT | O_RDWR, 0640, &fh, root), 0);   // exists: opened
    EXPECT_EQ(chg.nentries, 0u);
    struct eng_cmd c;
    Init(c, ENG_OP_WRITE, root);
    c.fh = fh;
    c.in = "abcdef";
    c.size = 6;
    c.off = 10;
    ASSERT_EQ(eng_call(eng, &c), 6);
    ASSERT_EQ(chg.ninodes, 1u);   // the data range it wrote
    EXPECT_EQ(chg.inode[0].off, 10);
    EXPECT_EQ(chg.inode[0].len, 6);
    Init(c, ENG_OP_APPEND, root);
    c.fh = fh;
    c.in = "xyz";
    c.size = 3;
    ASSERT_EQ(eng_call(eng, &c), 3);
    EXPECT_EQ(c.out_off, 16u);
    Init(c, ENG_OP_FSTAT, root);
    c.fh = fh;
    ASSERT_EQ(eng_call(eng, &c), 0);
    EXPECT_EQ(c.attr.size, 19u);
    EXPECT_EQ(c.attr.mode & 07777, 0640u);
    EXPECT_EQ(Close(fh), 0);
    ASSERT_EQ(Open("f", O_WRONLY | O_TRUNC, 0, &fh, root), 0);
    EXPECT_EQ(chg.ninodes, 1u);
    Init(c, ENG_OP_FTRUNCATE, root);
    c.fh = fh;
    c.off = 5;
    EXPECT_EQ(eng_call(eng, &c), 0);
    Init(c, ENG_OP_STAT_PATH, root, "/f");
    ASSERT_EQ(eng_call(eng, &c), 0);
    EXPECT_EQ(c.attr.size, 5u);
    EXPECT_EQ(Close(fh), 0);
    ASSERT_EQ(Open("f", O_RDONLY, 0, &fh, root), 0);
    Init(c, ENG_OP_FTRUNCATE, root);
    c.fh = fh;
    EXPECT_EQ(eng_call(eng, &c), -EINVAL);   // read-only handle
    EXPECT_EQ(Close(fh), 0);
}

TEST_F(EnginePath, SearchPermissionOnEveryComponent)
{
    ASSERT_EQ(Simple(ENG_OP_MKDIR_PATH, "a", root, 0755), 0);
    ASSERT_EQ(Simple(ENG_OP_MKDIR_PATH, "a/b", root, 0700), 0);   // closed to others
    ASSERT_EQ(Simple(ENG_OP_MKDIR_PATH, "a/b/c", root, 0777), 0);
    uint64_t fh = 0;
    ASSERT_EQ(Open("a/b/c/f", O_CREAT | O_RDWR, 0666, &fh, root), 0);
    EXPECT_EQ(Close(fh), 0);
    EXPECT_EQ(Open("a/b/c/f", O_RDONLY, 0, &fh, user), -EACCES);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "a/b/c/f", user), -EACCES);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "a/b", user), 0) << "a is searchable";
    EXPECT_EQ(Simple(ENG_OP_UNLINK_PATH, "a/b/c/f", user), -EACCES);
    ASSERT_EQ(Chmod("a/b", 0711), 0);   // search but not read
    ASSERT_EQ(Open("a/b/c/f", O_RDONLY, 0, &fh, user), 0);
    EXPECT_EQ(Close(fh), 0);
    struct eng_cmd c;
    Init(c, ENG_OP_READDIR_PATH, user, "a/b");
    c.fill = [](void *, const struct sfs_dirent *, const struct sfs_attr *) { return 0; };
    EXPECT_EQ(eng_call(eng, &c), -EACCES);
    EXPECT_EQ(hdl_count(tbl), 0u) << "readdir's temporary handle is gone";
}

TEST_F(EnginePath, SymlinksDotsAndNames)
{
    ASSERT_EQ(Simple(ENG_OP_MKDIR_PATH, "d", root, 0755), 0);
    uint64_t fh = 0;
    ASSERT_EQ(Open("d/f", O_CREAT | O_RDWR, 0644, &fh, root), 0);
    EXPECT_EQ(Close(fh), 0);
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_SYMLINK, &root);
    c.ino = SFS_ROOT_INO;
    c.name = "l";
    c.in = "d/./f";
    ASSERT_EQ(eng_call(eng, &c), 0);
    uint64_t lino = c.attr.ino;
    eng_cmd_init(&c, ENG_OP_FORGET, &root);
    c.ino = lino;
    c.len = 1;
    EXPECT_EQ(eng_call(eng, &c), 0);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "l", root), 0);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "d/../../d/f", root), 0);
    EXPECT_EQ(Open("l", O_RDONLY | O_NOFOLLOW, 0, &fh, root), -ELOOP);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, std::string(300, 'x').c_str(), root), -ENAMETOOLONG);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "", root), -ENOENT);
    EXPECT_EQ(Simple(ENG_OP_UNLINK_PATH, "d/f/", root), -ENOTDIR);
    EXPECT_EQ(Simple(ENG_OP_UNLINK_PATH, "..", root), -EISDIR);
    EXPECT_EQ(Simple(ENG_OP_RMDIR_PATH, "d/..", root), -ENOTEMPTY);
    EXPECT_EQ(Simple(ENG_OP_MKDIR_PATH, ".", root), -EEXIST);
    EXPECT_EQ(Simple(ENG_OP_UNLINK_PATH, "l", root), 0);   // the link, not its target
    EXPECT_EQ(chg.nentries, 1u);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "d/f", root), 0);
}

TEST_F(EnginePath, RenameRecordsBothEntries)
{
    uint64_t fh = 0;
    ASSERT_EQ(Open("a", O_CREAT | O_RDWR, 0644, &fh, root), 0);
    EXPECT_EQ(Close(fh), 0);
    ASSERT_EQ(Simple(ENG_OP_MKDIR_PATH, "d", root, 0755), 0);
    struct eng_cmd c;
    Init(c, ENG_OP_RENAME_PATH, root, "a");
    c.path2 = "d/b";
    ASSERT_EQ(eng_call(eng, &c), 0);
    ASSERT_EQ(chg.nentries, 2u);
    EXPECT_STREQ(chg.entry[0].name, "a");
    EXPECT_STREQ(chg.entry[1].name, "b");
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "d/b", root), 0);
    EXPECT_EQ(Simple(ENG_OP_STAT_PATH, "a", root), -ENOENT);
    Init(c, ENG_OP_RENAME_PATH, root, "d/b");
    c.path2 = "d/b/x";
    EXPECT_EQ(eng_call(eng, &c), -ENOTDIR);
}

TEST_F(EnginePath, NopAndWatcher)
{
    EXPECT_EQ(Simple(ENG_OP_NOP, nullptr, root), 0);
    struct W {
        int inodes = 0, entries = 0;
    } w;
    struct eng_watch ew = {
        [](void *, uint64_t ino) { return ino == SFS_ROOT_INO; },
        [](void *a, uint64_t, int64_t, int64_t) { ((W *)a)->inodes++; },
        [](void *a, uint64_t, const char *) { ((W *)a)->entries++; },
        &w,
    };
    eng_set_watch(eng, &ew);
    uint64_t fh = 0;
    ASSERT_EQ(Open("f", O_CREAT | O_RDWR, 0644, &fh, root), 0);
    EXPECT_TRUE(eng_chg_pending(eng, &chg));   // an entry of the root, which is known
    eng_chg_flush(eng, &chg);
    EXPECT_EQ(w.entries, 1);
    EXPECT_EQ(w.inodes, 1);   // the root's attributes
    struct eng_cmd c;
    Init(c, ENG_OP_WRITE, root);
    c.fh = fh;
    c.in = "x";
    c.size = 1;
    ASSERT_EQ(eng_call(eng, &c), 1);
    EXPECT_FALSE(eng_chg_pending(eng, &chg)) << "the file itself is not known";
    eng_set_watch(eng, nullptr);
    EXPECT_EQ(Close(fh), 0);
}

// Two data ranges of one inode in one command are recorded as the range
// covering both (its end is where a watcher raises a cached size); a change
// to the end of the file stays one (the size may have dropped).
TEST(EngineChg, RangesOfOneInodeWidenToTheirCover)
{
    struct eng_chg chg;
    memset(&chg, 0, sizeof(chg));
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_NOP, nullptr);
    c.chg = &chg;
    eng_chg_inode(&c, 7, 100, 10);
    eng_chg_inode(&c, 7, 4000, 96);
    ASSERT_EQ(chg.ninodes, 1u);
    EXPECT_EQ(chg.inode[0].off, 100);
    EXPECT_EQ(chg.inode[0].len, 3996);
    eng_chg_inode(&c, 7, 50, 10);
    EXPECT_EQ(chg.inode[0].off, 50);
    EXPECT_EQ(chg.inode[0].len, 4046);
    eng_chg_inode(&c, 7, 0, 0);   // a truncate
    EXPECT_EQ(chg.inode[0].off, 0);
    EXPECT_EQ(chg.inode[0].len, 0);
    eng_chg_inode(&c, 7, 10, 5);  // still to the end
    EXPECT_EQ(chg.inode[0].len, 0);
    eng_chg_inode(&c, 7, -1, 0);  // attributes only: the data range stays
    EXPECT_EQ(chg.inode[0].off, 0);
    eng_chg_release(&chg);
}

}  // namespace
