// tests/e2e/fuse/features_test.cc - file-system features people expect,
// on a real mount with real tools: security.* extended attributes
// (setcap/getcap), trusted.* for root, and what O_TMPFILE and the
// collapse/insert-range fallocate modes do.
#include "tests/e2e/fuse/mount_fixture.h"

#include <errno.h>
#include <linux/falloc.h>
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

// O_TMPFILE needs the FUSE tmpfile operation, which the installed
// libfuse (3.14) does not have: the kernel asks, libfuse answers ENOSYS
// and the kernel reports EOPNOTSUPP, which programs (and glibc's
// tmpfile()) take as "fall back to a named file". Nothing is left behind.
TEST_F(Features, TmpfileIsReportedUnsupported)
{
    int fd = open(mnt.c_str(), O_TMPFILE | O_RDWR, 0600);
    int err = errno;
    if (fd >= 0)
        close(fd);
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(err, EOPNOTSUPP);
    EXPECT_EQ(Sh("ls -A " + mnt).out, "");
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
