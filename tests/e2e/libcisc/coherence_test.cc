// tests/e2e/libcisc/coherence_test.cc - a change made through libcisc is
// visible through the FUSE mount at once (the device invalidates the
// kernel's dentry, attribute and page caches before the change completes),
// and the reverse. Every check reads through the mount right after the
// libcisc call returns, with caches warmed first.
#include "tests/e2e/libcisc/cisc_fixture.h"

namespace e2e {
namespace {

using Coherence = CiscTest;

TEST_F(Coherence, LibciscWriteThenMountRead)
{
    ASSERT_TRUE(WriteFile(P("f"), "old contents, cached by the kernel"));
    ASSERT_EQ(ReadFile(P("f")), "old contents, cached by the kernel");   // page cache
    struct stat st;
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);   // attribute cache
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_pwrite(q, fh, "NEW", 3, 0), 3);
    EXPECT_EQ(ReadFile(P("f")), "NEW contents, cached by the kernel");
    ASSERT_EQ(cisc_append(q, fh, " and more", 9, nullptr), 9);
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 43);
    EXPECT_EQ(ReadFile(P("f")), "NEW contents, cached by the kernel and more");
    ASSERT_EQ(cisc_truncate(q, fh, 3), 0);
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 3);
    EXPECT_EQ(ReadFile(P("f")), "NEW");
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Coherence, LibciscWriteSeenByAnOpenMountFile)
{
    ASSERT_TRUE(WriteFile(P("f"), std::string(8192, 'a')));
    int fd = open(P("f").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    char buf[8192];
    ASSERT_EQ(pread(fd, buf, sizeof(buf), 0), 8192);
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_pwrite(q, fh, "bbbb", 4, 4096), 4);
    ASSERT_EQ(pread(fd, buf, sizeof(buf), 0), 8192);
    EXPECT_EQ(std::string(buf + 4096, 5), "bbbba");
    EXPECT_EQ(buf[0], 'a');
    close(fd);
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Coherence, NamespaceChangesThroughLibcisc)
{
    struct stat st;
    ASSERT_NE(stat(P("n").c_str(), &st), 0);   // a negative entry, cached
    Put("n", "born in libcisc");
    ASSERT_EQ(stat(P("n").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 15);
    EXPECT_EQ(ReadFile(P("n")), "born in libcisc");
    ASSERT_EQ(cisc_rename(q, "n", "m", 0), 0);
    EXPECT_NE(stat(P("n").c_str(), &st), 0);
    EXPECT_EQ(ReadFile(P("m")), "born in libcisc");
    ASSERT_EQ(cisc_unlink(q, "m"), 0);
    EXPECT_NE(stat(P("m").c_str(), &st), 0);
    ASSERT_NE(stat(P("d").c_str(), &st), 0);
    ASSERT_EQ(cisc_mkdir(q, "d", 0755), 0);
    ASSERT_EQ(stat(P("d").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    ASSERT_NE(stat(P("d/x").c_str(), &st), 0);
    Put("d/x", "deep");
    EXPECT_EQ(ReadFile(P("d/x")), "deep");
    ASSERT_EQ(cisc_unlink(q, "d/x"), 0);
    ASSERT_EQ(cisc_rmdir(q, "d"), 0);
    EXPECT_NE(stat(P("d").c_str(), &st), 0);
    EXPECT_GT(Status("qp", "invalidated"), 0);
}

TEST_F(Coherence, MountChangesSeenByLibcisc)
{
    Put("f", "first");
    EXPECT_EQ(Get("f"), "first");
    ASSERT_TRUE(WriteFile(P("f"), "second, longer"));
    EXPECT_EQ(Get("f"), "second, longer");
    struct stat st;
    ASSERT_EQ(truncate(P("f").c_str(), 6), 0);
    ASSERT_EQ(cisc_stat(q, "f", &st), 0);
    EXPECT_EQ(st.st_size, 6);
    ASSERT_EQ(rename(P("f").c_str(), P("g").c_str()), 0);
    EXPECT_EQ(cisc_stat(q, "f", &st), -ENOENT);
    EXPECT_EQ(Get("g"), "second");
    ASSERT_EQ(mkdir(P("dir").c_str(), 0700), 0);
    ASSERT_EQ(cisc_stat(q, "dir", &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
}

}  // namespace
}  // namespace e2e
