// tests/e2e/fuse/tools_test.cc - real programs on the mount: cp -a, tar,
// git, fio (O_DIRECT), compared byte for byte with the originals.
#include "tests/e2e/fuse/mount_fixture.h"

using e2e::MountTest;
using e2e::Sh;
using e2e::RunResult;

namespace {

// A small tree with files of several sizes, a symlink, a hard link,
// modes, an xattr and an empty directory.
void MakeTree(const std::string &root)
{
    ASSERT_EQ(Sh("mkdir -p " + root + "/a/b/c " + root + "/empty").status, 0);
    for (int i = 0; i < 20; i++) {
        std::string data((size_t)i * 9973, (char)('a' + i));
        ASSERT_TRUE(e2e::WriteFile(root + "/a/f" + std::to_string(i), data));
    }
    ASSERT_EQ(Sh("head -c 3000000 /dev/urandom > " + root + "/a/b/c/big").status, 0);
    ASSERT_EQ(Sh("ln -s ../f1 " + root + "/a/b/link").status, 0);
    ASSERT_EQ(Sh("ln " + root + "/a/f2 " + root +
                  "/a/b/hard && chmod 0600 " + root + "/a/f3 && chmod 0751 " + root +
                  "/a/b && setfattr -n user.tag -v hello " + root + "/a/f4")
                  .status,
              0);
}

}  // namespace

TEST_F(MountTest, CpArchiveTree)
{
    std::string src = dir + "/src";
    MakeTree(src);
    RunResult r = Sh("cp -a " + src + " " + P("copy"));
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh("diff -r --no-dereference " + src + " " + P("copy"));
    EXPECT_EQ(r.status, 0) << r.out;
    // modes, link targets, hard links and xattrs came along
    EXPECT_EQ(Sh("stat -c %a " + P("copy/a/f3")).out, "600\n");
    EXPECT_EQ(Sh("stat -c %a " + P("copy/a/b")).out, "751\n");
    EXPECT_EQ(Sh("readlink " + P("copy/a/b/link")).out, "../f1\n");
    EXPECT_EQ(Sh("stat -c %h " + P("copy/a/f2")).out, "2\n");
    EXPECT_EQ(Sh("getfattr --absolute-names --only-values -n user.tag " + P("copy/a/f4")).out, "hello");
    // and back out again
    r = Sh("cp -a " + P("copy") + " " + dir + "/back && diff -r " + src + " " + dir + "/back");
    EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(MountTest, TarExtract)
{
    std::string src = dir + "/src";
    MakeTree(src);
    ASSERT_EQ(Sh("tar -C " + src + " --xattrs -cf " + dir + "/t.tar .").status, 0);
    ASSERT_EQ(Sh("mkdir " + P("x")).status, 0);
    RunResult r = Sh("tar -C " + P("x") + " --xattrs -xf " + dir + "/t.tar");
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh("diff -r --no-dereference " + src + " " + P("x"));
    EXPECT_EQ(r.status, 0) << r.out;
    // tar of the mounted tree lists the same members
    r = Sh("tar -C " + P("x") + " -cf - . | tar -tf - | sort > " + dir + "/a.txt && tar -tf " +
            dir + "/t.tar | sort > " + dir + "/b.txt && cmp " + dir + "/a.txt " + dir + "/b.txt");
    EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(MountTest, GitInitCommitFsck)
{
    std::string repo = P("repo");
    std::string git = "cd " + repo +
                      " && git -c user.name=t -c user.email=t@e -c init.defaultBranch=main ";
    ASSERT_EQ(Sh("mkdir " + repo).status, 0);
    RunResult r = Sh(git + "init -q");
    ASSERT_EQ(r.status, 0) << r.out;
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(e2e::WriteFile(repo + "/file" + std::to_string(i), std::string(5000 * (i + 1), 'g')));
        r = Sh(git + "add -A && " + git + "commit -q -m c" + std::to_string(i));
        ASSERT_EQ(r.status, 0) << r.out;
    }
    r = Sh(git + "mv file0 renamed && " + git + "commit -q -m mv && " + git + "gc -q");
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh(git + "fsck --full --strict");
    EXPECT_EQ(r.status, 0) << r.out;
    r = Sh(git + "log --oneline | wc -l");
    EXPECT_EQ(r.out, "4\n");
}

TEST_F(MountTest, FioDirectSmoke)
{
    RunResult r = Sh("fio --name=smoke --directory=" + mnt +
                      " --rw=randrw --bs=4k --size=8M --direct=1 --ioengine=psync"
                      " --numjobs=2 --verify=crc32c --do_verify=1 --group_reporting");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.find("verify:"), std::string::npos) << r.out;
    r = Sh("fio --name=seq --directory=" + mnt +
            " --rw=write --bs=1M --size=16M --direct=1 --verify=md5 --do_verify=1");
    EXPECT_EQ(r.status, 0) << r.out;
}
