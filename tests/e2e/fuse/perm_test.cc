// tests/e2e/fuse/perm_test.cc - permission denials for a non-root caller
// (a forked child with uid/gid 12345): the kernel's default_permissions and
// the device's own check must both let exactly the POSIX cases through.
#include "tests/e2e/fuse/mount_fixture.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/xattr.h>

using e2e::AsUser;
using e2e::MountTest;

namespace {

// Child helper: 0 if call failed with errno `want`, else a code naming what went wrong.
int Expect(int rc, int want)
{
    if (rc == 0)
        return 10;
    return errno == want ? 0 : 20;
}

}  // namespace

class PermTest : public MountTest {
protected:
    void SetUp() override
    {
        MountTest::SetUp();
        ASSERT_EQ(chmod(mnt.c_str(), 0755), 0);
        ASSERT_TRUE(e2e::WriteFile(P("secret"), "root only"));
        ASSERT_EQ(chmod(P("secret").c_str(), 0600), 0);
        ASSERT_TRUE(e2e::WriteFile(P("public"), "everyone reads"));
        ASSERT_EQ(chmod(P("public").c_str(), 0644), 0);
        ASSERT_EQ(mkdir(P("tmp").c_str(), 01777), 0);
        ASSERT_EQ(chmod(P("tmp").c_str(), 01777), 0);
    }
};

TEST_F(PermTest, ReadWriteDenied)
{
    std::string secret = P("secret"), pub = P("public");
    EXPECT_EQ(AsUser([&] { return Expect(open(secret.c_str(), O_RDONLY), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(open(pub.c_str(), O_WRONLY), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return open(pub.c_str(), O_RDONLY) >= 0 ? 0 : 1; }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(truncate(pub.c_str(), 0), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(access(pub.c_str(), W_OK), EACCES); }), 0);
}

TEST_F(PermTest, NamespaceDenied)
{
    std::string root_new = P("new"), pub = P("public"), d = P("tmp");
    EXPECT_EQ(AsUser([&] { return Expect(open(root_new.c_str(), O_CREAT | O_WRONLY, 0644), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(mkdir(root_new.c_str(), 0755), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(unlink(pub.c_str()), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(symlink("x", root_new.c_str()), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(rename(pub.c_str(), (d + "/stolen").c_str()), EACCES); }), 0);
}

TEST_F(PermTest, StickyDirectory)
{
    std::string mine = P("tmp/roots");
    ASSERT_TRUE(e2e::WriteFile(mine, "root's file in /tmp-like dir"));
    ASSERT_EQ(chmod(mine.c_str(), 0666), 0);
    // others may create in a sticky world-writable dir, but not delete root's file
    EXPECT_EQ(AsUser([&] {
        std::string own = P("tmp/users");
        int fd = open(own.c_str(), O_CREAT | O_WRONLY, 0644);
        if (fd < 0)
            return 1;
        close(fd);
        if (Expect(unlink(mine.c_str()), EPERM))
            return 2;
        if (Expect(rename(mine.c_str(), P("tmp/x").c_str()), EPERM))
            return 3;
        return unlink(own.c_str()) == 0 ? 0 : 4;   // own file: fine
    }), 0);
    struct stat st;
    EXPECT_EQ(stat(mine.c_str(), &st), 0);
}

TEST_F(PermTest, OwnershipRules)
{
    std::string pub = P("public");
    EXPECT_EQ(AsUser([&] { return Expect(chmod(pub.c_str(), 0777), EPERM); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(chown(pub.c_str(), 12345, 12345), EPERM); }), 0);
    struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
    EXPECT_EQ(AsUser([&] { return Expect(utimensat(AT_FDCWD, pub.c_str(), ts, 0), EPERM); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(utimensat(AT_FDCWD, pub.c_str(), nullptr, 0), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(setxattr(pub.c_str(), "user.a", "b", 1, 0), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return Expect(setxattr(pub.c_str(), "trusted.a", "b", 1, 0), EPERM); }), 0);
    // the owner may chmod, and chown to a group it belongs to
    std::string own = P("owned");
    ASSERT_TRUE(e2e::WriteFile(own, ""));
    ASSERT_EQ(chown(own.c_str(), 12345, 12345), 0);
    EXPECT_EQ(AsUser([&] {
        if (chmod(own.c_str(), 0600))
            return 1;
        if (chown(own.c_str(), (uid_t)-1, 777))
            return 2;   // supplementary group 777
        return Expect(chown(own.c_str(), (uid_t)-1, 778), EPERM) ? 3 : 0;
    }, 12345, 12345, { 777 }), 0);
    struct stat st;
    ASSERT_EQ(stat(own.c_str(), &st), 0);
    EXPECT_EQ(st.st_gid, 777u);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(PermTest, SupplementaryGroupGrantsAccess)
{
    std::string g = P("grp");
    ASSERT_TRUE(e2e::WriteFile(g, "group data"));
    ASSERT_EQ(chown(g.c_str(), 0, 4242), 0);
    ASSERT_EQ(chmod(g.c_str(), 0640), 0);
    EXPECT_EQ(AsUser([&] { return Expect(open(g.c_str(), O_RDONLY), EACCES); }), 0);
    EXPECT_EQ(AsUser([&] { return open(g.c_str(), O_RDONLY) >= 0 ? 0 : 1; }, 12345, 12345, { 4242 }), 0);
    EXPECT_EQ(AsUser([&] { return open(g.c_str(), O_RDONLY) >= 0 ? 0 : 1; }, 12345, 4242), 0);
}

TEST_F(PermTest, WriterClearsSetidBits)
{
    std::string f = P("setid");
    ASSERT_TRUE(e2e::WriteFile(f, "0123"));
    ASSERT_EQ(chmod(f.c_str(), 06777), 0);
    EXPECT_EQ(AsUser([&] {
        int fd = open(f.c_str(), O_WRONLY);
        return fd >= 0 && write(fd, "ab", 2) == 2 && close(fd) == 0 ? 0 : 1;
    }), 0);
    struct stat st;
    ASSERT_EQ(stat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0777u) << "a write by another user kills set-id bits";
    EXPECT_EQ(e2e::ReadFile(f), "ab23");
}

// A file capability goes when the data changes, whoever writes (Linux's
// file_remove_privs). The mount lets the device do it (killpriv.c asks
// the kernel for FUSE_HANDLE_KILLPRIV_V2; the engine removes it), once
// the file system can hold one.
TEST_F(PermTest, WriterClearsFileCapability)
{
    struct vfs_cap_data cap;
    memset(&cap, 0, sizeof(cap));
    cap.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
    cap.data[0].permitted = 1u << CAP_NET_BIND_SERVICE;
    char got[sizeof(cap)];
    for (int root = 0; root < 2; root++) {
        std::string f = P(root ? "capped-root" : "capped-user");
        ASSERT_TRUE(e2e::WriteFile(f, "0123"));
        ASSERT_EQ(chmod(f.c_str(), 0666), 0);
        ASSERT_EQ(setxattr(f.c_str(), "security.capability", &cap, sizeof(cap), 0), 0)
            << strerror(errno);
        ASSERT_EQ(getxattr(f.c_str(), "security.capability", got, sizeof(got)),
                  (ssize_t)sizeof(cap));
        auto writer = [&] {
            int fd = open(f.c_str(), O_WRONLY);
            return fd >= 0 && pwrite(fd, "ab", 2, 1) == 2 && close(fd) == 0 ? 0 : 1;
        };
        if (root) {
            EXPECT_EQ(writer(), 0);
        } else {
            EXPECT_EQ(AsUser(writer), 0);
        }
        errno = 0;
        EXPECT_EQ(getxattr(f.c_str(), "security.capability", got, sizeof(got)), -1)
            << "a write (root " << root << ") removes the file capability";
        EXPECT_EQ(errno, ENODATA);
        EXPECT_EQ(e2e::ReadFile(f), "0ab3");
    }
}
