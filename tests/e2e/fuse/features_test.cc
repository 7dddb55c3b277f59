// tests/e2e/fuse/features_test.cc - file-system features people expect,
// on a real mount with real tools: security.* extended attributes
// (setcap/getcap), trusted.* for root, O_TMPFILE, and what the
// collapse/insert-range fallocate modes do.
#include "tests/e2e/fuse/mount_fixture.h"

#include <errno.h>
#include <linux/falloc.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include <set>

using e2e::AsUser;
using e2e::MountTest;
using e2e::RunResult;
using e2e::Sh;

namespace {

std::set<std::string> Names(const std::string &path)
{
    char buf[4096];
    ssize_t n = listxattr(path.c_str(), buf, sizeof(buf));
    std::set<std::string> names;
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
        names.insert(buf + i);
    return names;
}

// Waits (bounded, in tenths of a second) until cond() holds.
template <typename Fn>
bool WaitFor(Fn cond, int tenths)
{
    for (int i = 0; i < tenths && !cond(); i++)
        usleep(100000);
    return cond();
}

// Free blocks, from statfs on the mount.
uint64_t FreeBlocks(const std::string &mnt)
{
    struct statvfs v;
    return statvfs(mnt.c_str(), &v) == 0 ? v.f_bfree : 0;
}

}  // namespace

class Features : public MountTest {
protected:
    // Unmounts, checks the image with `cisc fsck`, mounts again.
    void Remount()
    {
        Down();
        RunResult f = Sh(cisc + " fsck " + img);
        EXPECT_EQ(f.status, 0) << f.out;
        Up();
    }
};

// setcap/getcap work and the capability survives a restart; anyone may
// read security.* (getcap as a user), only root may set it.
TEST_F(Features, SetcapGetcapAndSecurityNamespace)
{
    ASSERT_TRUE(e2e::WriteFile(P("ping"), "#!/bin/sh\n"));
    ASSERT_EQ(chmod(P("ping").c_str(), 0755), 0);
    RunResult r = Sh("setcap cap_net_raw,cap_net_admin+ep " + P("ping"));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Sh("getcap " + P("ping")).out, P("ping") + " cap_net_admin,cap_net_raw=ep\n");
    EXPECT_EQ(setxattr(P("ping").c_str(), "security.label", "lbl", 3, 0), 0);
    EXPECT_EQ(Names(P("ping")), (std::set<std::string>{ "security.capability", "security.label" }));
    Remount();
    EXPECT_EQ(Sh("getcap " + P("ping")).out, P("ping") + " cap_net_admin,cap_net_raw=ep\n");
    char v[8] = { 0 };
    EXPECT_EQ(getxattr(P("ping").c_str(), "security.label", v, sizeof(v)), 3);
    EXPECT_EQ(std::string(v, 3), "lbl");
    std::string f = P("ping");
    EXPECT_EQ(AsUser([&] {
                  char b[64];
                  if (getxattr(f.c_str(), "security.label", b, sizeof(b)) != 3)
                      return 1;
                  if (setxattr(f.c_str(), "security.label", "x", 1, 0) == 0 || errno != EPERM)
                      return 2;
                  if (removexattr(f.c_str(), "security.capability") == 0 || errno != EPERM)
                      return 3;
                  return 0;
              }),
              0);
    EXPECT_EQ(Sh("setcap -r " + P("ping")).status, 0);
    EXPECT_EQ(Sh("getcap " + P("ping")).out, "");
    EXPECT_EQ(removexattr(P("ping").c_str(), "security.label"), 0);
    EXPECT_TRUE(Names(P("ping")).empty());
}

// Changing a capable file's owner or (as anyone, root too, through the
// mount) its data drops its capabilities, as Linux's chown and
// file_remove_privs do; a change of mode or times keeps them.
TEST_F(Features, ChownAndWriteDropCapabilities)
{
    for (const char *n : { "chowned", "written", "truncated", "chmodded" }) {
        ASSERT_TRUE(e2e::WriteFile(P(n), "#!/bin/sh\n"));
        RunResult r = Sh(std::string("setcap cap_net_raw+ep ") + P(n));
        ASSERT_EQ(r.status, 0) << r.out;
    }
    ASSERT_EQ(chown(P("chowned").c_str(), 1, 1), 0);
    int fd = open(P("written").c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(write(fd, "#\n", 2), 2);
    close(fd);
    ASSERT_EQ(truncate(P("truncated").c_str(), 3), 0);
    ASSERT_EQ(chmod(P("chmodded").c_str(), 0700), 0);
    for (const char *n : { "chowned", "written", "truncated" })
        EXPECT_EQ(getxattr(P(n).c_str(), "security.capability", nullptr, 0), -1) << n;
    EXPECT_GT(getxattr(P("chmodded").c_str(), "security.capability", nullptr, 0), 0);
}

// A large security.* value (an SELinux-sized label is small, but an IMA
// signature or a test's value may not be) goes to value blocks and back.
TEST_F(Features, LargeSecurityValueRoundTrips)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    std::string big(9000, 's');
    ASSERT_EQ(setxattr(P("f").c_str(), "security.big", big.data(), big.size(), 0), 0);
    Remount();
    std::string got(big.size(), '\0');
    EXPECT_EQ(getxattr(P("f").c_str(), "security.big", &got[0], got.size()), (ssize_t)big.size());
    EXPECT_EQ(got, big);
    ASSERT_EQ(unlink(P("f").c_str()), 0);   // frees the value blocks
    Remount();
}

// trusted.* is root's: kept across a restart, invisible to others.
TEST_F(Features, TrustedNamespaceIsRootOnly)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    ASSERT_EQ(chmod(P("f").c_str(), 0644), 0);
    ASSERT_EQ(setxattr(P("f").c_str(), "trusted.overlay.opaque", "y", 1, 0), 0);
    ASSERT_EQ(setxattr(P("f").c_str(), "user.note", "n", 1, 0), 0);
    Remount();
    char v[4] = { 0 };
    EXPECT_EQ(getxattr(P("f").c_str(), "trusted.overlay.opaque", v, sizeof(v)), 1);
    EXPECT_EQ(v[0], 'y');
    std::string f = P("f");
    EXPECT_EQ(AsUser([&] {
                  if (Names(f) != std::set<std::string>{ "user.note" })
                      return 1;
                  char b[4];
                  if (getxattr(f.c_str(), "trusted.overlay.opaque", b, sizeof(b)) != -1)
                      return 2;
                  return 0;
              }),
              0);
}

// O_TMPFILE: the kernel sends FUSE_TMPFILE, which libfuse 3.14 does not
// know; the mount answers it (fusefs/tmpfile.c) with an unnamed file in
// the device. It reads back what was written, has no name and no link,
// and linkat through /proc/self/fd gives it one with its data.
TEST_F(Features, TmpfileWritesReadsAndLinkatNamesIt)
{
    int fd = open(mnt.c_str(), O_TMPFILE | O_RDWR, 0640);
    ASSERT_GE(fd, 0) << strerror(errno);
    std::string data(3 * 4096 + 5, 'q');
    ASSERT_EQ(write(fd, data.data(), data.size()), (ssize_t)data.size());
    std::string back(data.size(), '\0');
    ASSERT_EQ(pread(fd, &back[0], back.size(), 0), (ssize_t)back.size());
    EXPECT_EQ(back, data);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_nlink, 0u);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0640u);
    EXPECT_EQ((size_t)st.st_size, data.size());
    EXPECT_EQ(Sh("ls -A " + mnt).out, "");
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    ASSERT_EQ(linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, P("named").c_str(), AT_SYMLINK_FOLLOW), 0)
        << strerror(errno);
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_nlink, 1u);
    EXPECT_EQ(e2e::ReadFile(P("named")), data);
    ASSERT_EQ(write(fd, "tail", 4), 4);   // still the same file
    close(fd);
    Remount();   // fsck clean: named, off the orphan list
    EXPECT_EQ(e2e::ReadFile(P("named")), data + "tail");
    ASSERT_EQ(stat(P("named").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1u);
}

// AT_EMPTY_PATH names it too; O_EXCL makes it unlinkable (the kernel's
// rule), O_RDONLY is refused, and a user without write permission on
// the directory may not make one there.
TEST_F(Features, TmpfileLinkRulesAndPermissions)
{
    int fd = open(mnt.c_str(), O_TMPFILE | O_WRONLY, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(write(fd, "abc", 3), 3);
    ASSERT_EQ(linkat(fd, "", AT_FDCWD, P("viaempty").c_str(), AT_EMPTY_PATH), 0) << strerror(errno);
    close(fd);
    EXPECT_EQ(e2e::ReadFile(P("viaempty")), "abc");
    fd = open(mnt.c_str(), O_TMPFILE | O_RDWR | O_EXCL, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    EXPECT_EQ(linkat(fd, "", AT_FDCWD, P("excl").c_str(), AT_EMPTY_PATH), -1);
    EXPECT_EQ(errno, ENOENT);
    close(fd);
    EXPECT_EQ(open(mnt.c_str(), O_TMPFILE | O_RDONLY, 0600), -1);
    EXPECT_EQ(errno, EINVAL);
    ASSERT_EQ(mkdir(P("closed").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("open").c_str(), 0777), 0);
    ASSERT_EQ(chmod(P("open").c_str(), 0777), 0);   // past the umask
    std::string closed = P("closed"), opened = P("open");
    EXPECT_EQ(AsUser([&] {
                  if (open(closed.c_str(), O_TMPFILE | O_RDWR, 0600) != -1 || errno != EACCES)
                      return 1;
                  int f = open(opened.c_str(), O_TMPFILE | O_RDWR, 0600);
                  if (f < 0)
                      return 10 + errno;
                  struct stat s;
                  if (fstat(f, &s) || s.st_uid != 12345 || s.st_gid != 12345)
                      return 2;
                  return 0;
              }),
              0);
    EXPECT_EQ(Sh("ls -A " + mnt + " " + P("open")).out, mnt + ":\nclosed\nopen\nviaempty\n\n" +
                                                           P("open") + ":\n");
}

// An unnamed file's space comes back when it is closed, and a clean
// image after it.
TEST_F(Features, TmpfileClosedGivesSpaceBack)
{
    uint64_t before = FreeBlocks(mnt);
    int fd = open(mnt.c_str(), O_TMPFILE | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    std::string mb(1 << 20, 'z');
    for (int i = 0; i < 8; i++)
        ASSERT_EQ(write(fd, mb.data(), mb.size()), (ssize_t)mb.size());
    ASSERT_EQ(fsync(fd), 0);
    EXPECT_LE(FreeBlocks(mnt) + 2048, before);   // 8 MiB = 2048 blocks in use
    close(fd);
    // the kernel forgets the inode after the close: FORGET frees it
    EXPECT_TRUE(WaitFor([&] { return FreeBlocks(mnt) >= before; }, 200))
        << FreeBlocks(mnt) << " free, " << before << " before";
    Remount();
    EXPECT_GE(FreeBlocks(mnt), before);
}

// On one CPU the mount runs libfuse's own loop (fusefs_loop.c pins
// workers only with two or more): O_TMPFILE goes through the same read
// hook there.
TEST_F(Features, TmpfileWithLibfusesOwnLoop)
{
    if (Sh("which taskset").status != 0)
        GTEST_SKIP() << "taskset not installed";
    Down();
    RunResult r = Sh("taskset -c 0 " + UpCmd());
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    int fd = open(mnt.c_str(), O_TMPFILE | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(write(fd, "one cpu", 7), 7);
    ASSERT_EQ(linkat(fd, "", AT_FDCWD, P("n").c_str(), AT_EMPTY_PATH), 0) << strerror(errno);
    close(fd);
    EXPECT_EQ(e2e::ReadFile(P("n")), "one cpu");
}

// A device that dies with an unnamed file open frees it when it starts
// again (the file was on the orphan list from its creation); fsck is clean.
TEST_F(Features, TmpfileOpenAtCrashIsReapedAtStart)
{
    uint64_t before = FreeBlocks(mnt);
    int fd = open(mnt.c_str(), O_TMPFILE | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    std::string mb(1 << 20, 'z');
    for (int i = 0; i < 8; i++)
        ASSERT_EQ(write(fd, mb.data(), mb.size()), (ssize_t)mb.size());
    ASSERT_EQ(fsync(fd), 0);   // the file and its blocks are durable
    ASSERT_LE(FreeBlocks(mnt) + 2048, before);
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    ASSERT_EQ(kill(dev, SIGKILL), 0);
    up = false;
    ASSERT_TRUE(WaitFor([&] { return !e2e::IsCiscMount(mnt); }, 600))
        << "auto_unmount: " << e2e::DeadMountReport(dev, mnt);
    ASSERT_TRUE(WaitFor([&] { return e2e::ProcessEnded(dev); }, 600));
    close(fd);
    Up();   // replays the journal, reaps the orphan
    EXPECT_GE(FreeBlocks(mnt), before);
    EXPECT_EQ(Sh("ls -A " + mnt).out, "");
    Down();
    RunResult f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 0) << f.out;
    Up();
}

// Collapse-range and insert-range never reach the device: the kernel's
// FUSE client refuses every fallocate mode beyond KEEP_SIZE, PUNCH_HOLE
// and ZERO_RANGE with EOPNOTSUPP before it asks the file system, so the
// file stays as it was (programs fall back to rewriting it).
TEST_F(Features, CollapseAndInsertRangeAreReportedUnsupported)
{
    std::string data(3 * 4096, 'a');
    ASSERT_TRUE(e2e::WriteFile(P("f"), data));
    int fd = open(P("f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 4096, 4096), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    EXPECT_EQ(fallocate(fd, FALLOC_FL_INSERT_RANGE, 4096, 4096), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    close(fd);
    EXPECT_EQ(e2e::ReadFile(P("f")), data);
}
