// tests/e2e/acl/acl_test.cc - POSIX ACLs on a real mount: setfacl/getfacl
// work; the kernel (FUSE_POSIX_ACL) and the device (libcisc door) both
// grant and refuse by the ACL, for real second users; chmod and the ACL
// stay in step; default ACLs are inherited (and the umask ignored under
// one, applied without); malformed values are refused; cp -a and rsync -A
// keep ACLs; they survive a restart and fsck accepts the image.
#include "tests/e2e/fuse/mount_fixture.h"

#include <cisc/cisc.h>

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

namespace e2e {
namespace {

constexpr uid_t kAlice = 12345, kBob = 23456;
constexpr gid_t kTeam = 4242;

class Acl : public MountTest {
protected:
    void SetUp() override
    {
        MountTest::SetUp();
        if (Sh("which setfacl getfacl").status != 0)
            GTEST_SKIP() << "setfacl/getfacl not installed (package acl)";
    }

    // open(2) of path through the mount as uid (gid = uid, plus groups):
    // 0 or the errno.
    int MountOpen(uid_t uid, const std::string &path, int flags, std::vector<gid_t> groups = {})
    {
        return AsUser([&] {
            int fd = open(path.c_str(), flags);
            if (fd < 0)
                return errno;
            close(fd);
            return 0;
        }, uid, uid, groups);
    }

    // cisc_open of rel through libcisc as uid: 0 or the errno (the device's
    // own check, the kernel is not asked).
    int CiscOpen(uid_t uid, const std::string &rel, int flags, std::vector<gid_t> groups = {},
                 mode_t mode = 0)
    {
        return AsUser([&] {
            struct cisc_session *s;
            struct cisc_queue *q;
            uint64_t fh;
            if (cisc_session_open(mnt.c_str(), &s) || cisc_queue_create(s, &q))
                return 98;
            int r = cisc_open(q, rel.c_str(), flags, mode, &fh);
            if (r == 0)
                cisc_close(q, fh);
            cisc_session_close(s);
            return -r;
        }, uid, uid, groups);
    }

    std::string Getfacl(const std::string &path, const std::string &opts = "")
    {
        RunResult r = Sh("getfacl -cp " + opts + " " + path);
        EXPECT_EQ(r.status, 0) << r.out;
        return r.out;
    }

    void Setfacl(const std::string &args)
    {
        RunResult r = Sh("setfacl " + args);
        ASSERT_EQ(r.status, 0) << "setfacl " << args << ": " << r.out;
    }

    mode_t Mode(const std::string &path)
    {
        struct stat st = {};
        EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
        return st.st_mode & 07777;
    }

    bool Has(const std::string &hay, const std::string &needle)
    {
        return hay.find(needle) != std::string::npos;
    }
};

// A named user entry grants what the mode does not, through both doors;
// other users still get the mode's "other" bits (none).
TEST_F(Acl, NamedUserThroughTheMountAndLibcisc)
{
    ASSERT_TRUE(WriteFile(P("f"), "secret"));
    ASSERT_EQ(chmod(P("f").c_str(), 0600), 0);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDONLY), EACCES);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDONLY), EACCES);
    Setfacl("-m u:" + std::to_string(kAlice) + ":rw " + P("f"));
    EXPECT_EQ(Mode(P("f")), 0660u);   // the group bits are the mask
    EXPECT_TRUE(Has(Getfacl(P("f")), "user:" + std::to_string(kAlice) + ":rw-"));
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDWR), 0);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDWR), 0);
    EXPECT_EQ(MountOpen(kBob, P("f"), O_RDONLY), EACCES);
    EXPECT_EQ(CiscOpen(kBob, "f", O_RDONLY), EACCES);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDWR | O_APPEND), 0);
    // only the owner (or root) may change the ACL
    EXPECT_EQ(AsUser([&] {
                  return setxattr(P("f").c_str(), "system.posix_acl_access", "", 0, 0) == 0
                             ? 0
                             : errno;
              }, kAlice, kAlice),
              EPERM);
}

// The mask limits named entries and the owning group; chmod's group bits
// are the mask (both directions: chmod rewrites the ACL, setfacl the mode).
TEST_F(Acl, MaskAndChmodStayInStep)
{
    ASSERT_TRUE(WriteFile(P("f"), "x"));
    ASSERT_EQ(chmod(P("f").c_str(), 0600), 0);
    std::string a = std::to_string(kAlice);
    Setfacl("-m u:" + a + ":rwx,m::r " + P("f"));
    EXPECT_EQ(Mode(P("f")), 0640u);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDONLY), 0);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_WRONLY), EACCES);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDONLY), 0);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_WRONLY), EACCES);
    ASSERT_EQ(chmod(P("f").c_str(), 0670), 0);   // mask rwx
    std::string acl = Getfacl(P("f"));
    EXPECT_TRUE(Has(acl, "mask::rwx")) << acl;
    EXPECT_TRUE(Has(acl, "user::rw-")) << acl;
    EXPECT_TRUE(Has(acl, "user:" + a + ":rwx")) << acl;
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_WRONLY), 0);   // the kernel forgot its cached ACL
    EXPECT_EQ(CiscOpen(kAlice, "f", O_WRONLY), 0);
    ASSERT_EQ(chmod(P("f").c_str(), 0604), 0);   // mask ---: the named entry is void
    EXPECT_TRUE(Has(Getfacl(P("f")), "mask::---"));
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDONLY), EACCES);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDONLY), EACCES);
    EXPECT_EQ(MountOpen(kBob, P("f"), O_RDONLY), 0);   // other r--
    // removing the ACL leaves the mode
    Setfacl("-b " + P("f"));
    EXPECT_EQ(getxattr(P("f").c_str(), "system.posix_acl_access", nullptr, 0), -1);
    EXPECT_EQ(Mode(P("f")), 0604u);
}

// Group entries: the owning group and named groups the caller is in
// (supplementary groups count); a matching entry that does not grant
// denies even when "other" would.
TEST_F(Acl, GroupEntries)
{
    ASSERT_TRUE(WriteFile(P("f"), "x"));
    ASSERT_EQ(chmod(P("f").c_str(), 0604), 0);
    Setfacl("-m g:" + std::to_string(kTeam) + ":rw,g::-,m::rw " + P("f"));
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDWR, {kTeam}), 0);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDWR, {kTeam}), 0);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDWR), EACCES);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDWR), EACCES);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDONLY), 0);   // other r--
    ASSERT_EQ(chown(P("f").c_str(), 0, kTeam), 0);      // owning group: group:: ---
    Setfacl("-x g:" + std::to_string(kTeam) + " " + P("f"));
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDONLY, {kTeam}), EACCES);
    EXPECT_EQ(CiscOpen(kAlice, "f", O_RDONLY, {kTeam}), EACCES);
    EXPECT_EQ(MountOpen(kAlice, P("f"), O_RDONLY), 0);
}

// A default ACL is inherited by files and directories created under it,
// through the mount and through libcisc; the umask does not apply under
// it, and still applies elsewhere.
TEST_F(Acl, DefaultAclIsInherited)
{
    std::string a = std::to_string(kAlice);
    ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
    Setfacl("-d -m u:" + a + ":rwx " + P("d"));
    EXPECT_TRUE(Has(Getfacl(P("d")), "default:user:" + a + ":rwx"));
    mode_t old = umask(077);
    int fd = open(P("d/f").c_str(), O_CREAT | O_WRONLY, 0666);
    int made = mkdir(P("d/sub").c_str(), 0777);
    int plain = open(P("plain").c_str(), O_CREAT | O_WRONLY, 0666);
    umask(old);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(made, 0);
    ASSERT_GE(plain, 0);
    close(plain);
    EXPECT_EQ(Mode(P("plain")), 0600u);    // no default ACL: the umask applies
    EXPECT_EQ(Mode(P("d/f")), 0664u);      // user rw-, mask rwx&rw-, other r--&rw-
    std::string acl = Getfacl(P("d/f"));
    EXPECT_TRUE(Has(acl, "user:" + a + ":rwx")) << acl;
    EXPECT_TRUE(Has(acl, "mask::rw-")) << acl;
    EXPECT_TRUE(Has(Getfacl(P("d/sub")), "default:user:" + a + ":rwx"));
    EXPECT_EQ(Mode(P("d/sub")), 0775u);
    EXPECT_EQ(MountOpen(kAlice, P("d/f"), O_RDWR), 0);
    // libcisc creates inherit too (no umask on that door)
    ASSERT_EQ(CiscOpen(0, "d/sub/g", O_CREAT | O_WRONLY, {}, 0640), 0);
    EXPECT_EQ(Mode(P("d/sub/g")), 0640u);   // mask rwx & r--
    acl = Getfacl(P("d/sub/g"));
    EXPECT_TRUE(Has(acl, "user:" + a + ":rwx")) << acl;
    EXPECT_TRUE(Has(acl, "mask::r--")) << acl;
    EXPECT_EQ(CiscOpen(kAlice, "d/sub/g", O_RDONLY), 0);
    EXPECT_EQ(CiscOpen(kAlice, "d/sub/g", O_WRONLY), EACCES);
    // a file created by alice in a directory whose ACL lets her write
    Setfacl("-m u:" + a + ":rwx " + P("d"));
    EXPECT_EQ(AsUser([&] {
                  int f = open(P("d/alice").c_str(), O_CREAT | O_WRONLY, 0600);
                  return f < 0 ? errno : (close(f), 0);
              }, kAlice, kAlice),
              0);
    EXPECT_EQ(CiscOpen(kAlice, "d/alice2", O_CREAT | O_WRONLY, {}, 0600), 0);
    EXPECT_EQ(CiscOpen(kBob, "d/bob", O_CREAT | O_WRONLY, {}, 0600), EACCES);
}

// Malformed values are refused with EINVAL (the kernel parses them; the
// device validates again, tests/unit/storagefs/acl_test.cc, and through
// libcisc's door, which has no xattr call yet, nothing else reaches it),
// a default ACL on a file is refused, and the mode is untouched.
TEST_F(Acl, MalformedValuesAreRefused)
{
    ASSERT_TRUE(WriteFile(P("f"), "x"));
    ASSERT_EQ(chmod(P("f").c_str(), 0640), 0);
    // not version 2: the kernel answers as it does for ext4 (EOPNOTSUPP)
    EXPECT_EQ(setxattr(P("f").c_str(), "system.posix_acl_access", "junk", 4, 0), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    uint8_t torn[4 + 6] = {2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff};
    EXPECT_EQ(setxattr(P("f").c_str(), "system.posix_acl_access", torn, sizeof(torn), 0), -1);
    EXPECT_EQ(errno, EINVAL);
    uint8_t v[4 + 8] = {2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff};   // USER_OBJ only
    EXPECT_EQ(setxattr(P("f").c_str(), "system.posix_acl_access", v, sizeof(v), 0), -1);
    EXPECT_EQ(errno, EINVAL);
    RunResult r = Sh("setfacl -d -m u:1:r " + P("f"));
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_EQ(Mode(P("f")), 0640u);
}

// cp -a and rsync -A copy ACLs, access and default, inside the mount and
// out of it; ACLs survive a restart and fsck accepts the image.
TEST_F(Acl, CopiesKeepAclsAndTheyPersist)
{
    std::string a = std::to_string(kAlice);
    ASSERT_EQ(mkdir(P("src").c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(P("src/f"), "data"));
    Setfacl("-m u:" + a + ":r,g:" + std::to_string(kTeam) + ":rw " + P("src/f"));
    Setfacl("-d -m u:" + a + ":rx " + P("src"));
    std::string want_f = Getfacl(P("src/f")), want_d = Getfacl(P("src"));
    RunResult r = Sh("cp -a " + P("src") + " " + P("cp"));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Getfacl(P("cp/f")), want_f);
    EXPECT_EQ(Getfacl(P("cp")), want_d);
    if (Sh("which rsync").status == 0) {
        r = Sh("rsync -aA " + P("src") + "/ " + P("rs"));
        ASSERT_EQ(r.status, 0) << r.out;
        EXPECT_EQ(Getfacl(P("rs/f")), want_f);
        EXPECT_EQ(Getfacl(P("rs")), want_d);
    }
    Down();
    r = Sh(cisc + " fsck " + img);
    EXPECT_EQ(r.status, 0) << r.out;
    Up();
    EXPECT_EQ(Getfacl(P("src/f")), want_f);
    EXPECT_EQ(Getfacl(P("cp")), want_d);
    EXPECT_EQ(MountOpen(kAlice, P("src/f"), O_RDONLY), 0);
    EXPECT_EQ(MountOpen(kAlice, P("src/f"), O_WRONLY), EACCES);
    EXPECT_EQ(CiscOpen(kAlice, "src/f", O_RDONLY), 0);
    EXPECT_EQ(CiscOpen(kAlice, "cp/f", O_WRONLY), EACCES);
}

}  // namespace
}  // namespace e2e
