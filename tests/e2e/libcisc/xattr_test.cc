// tests/e2e/libcisc/xattr_test.cc - libcisc's extended-attribute calls
// (cisc_getxattr/setxattr/listxattr/removexattr) and cisc_fallocate's
// collapse and insert range (the mount's fallocate(2) of those modes is
// refused by the kernel: tests/e2e/fuse/features_test.cc), against a real
// device and its mount: the
// device checks them with the session's credentials (a second user is
// refused as the kernel would refuse it), their errors are the xattr(7)
// calls', and what one door changes the other sees.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <linux/falloc.h>
#include <sys/xattr.h>

#include <array>
#include <set>

namespace e2e {
namespace {

using Xattr = CiscTest;

std::set<std::string> Split(const char *buf, ssize_t n)
{
    std::set<std::string> out;
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
        out.insert(buf + i);
    return out;
}

// Runs fn(queue) in a child as uid/gid `uid` with its own session; the
// child's exit code is fn's result (98: no session).
template <typename Fn>
int AsCiscUser(const std::string &mnt, uid_t uid, Fn fn)
{
    return AsUser([&] {
        struct cisc_session *s;
        struct cisc_queue *q;
        if (cisc_session_open(mnt.c_str(), &s) || cisc_queue_create(s, &q))
            return 98;
        int r = fn(q);
        cisc_session_close(s);
        return r;
    }, uid, uid);
}

TEST_F(Xattr, SetGetListRemoveAndTheMountSeesThem)
{
    Put("f", "data");
    char v[64];
    EXPECT_EQ(cisc_getxattr(q, "f", "user.k", v, sizeof(v)), -ENODATA);
    ASSERT_EQ(cisc_setxattr(q, "f", "user.k", "value", 5, 0), 0);
    EXPECT_EQ(cisc_getxattr(q, "f", "user.k", nullptr, 0), 5);   // the size only
    EXPECT_EQ(cisc_getxattr(q, "f", "user.k", v, 4), -ERANGE);
    ASSERT_EQ(cisc_getxattr(q, "f", "user.k", v, sizeof(v)), 5);
    EXPECT_EQ(std::string(v, 5), "value");
    EXPECT_EQ(cisc_setxattr(q, "f", "user.k", "x", 1, XATTR_CREATE), -EEXIST);
    EXPECT_EQ(cisc_setxattr(q, "f", "user.new", "x", 1, XATTR_REPLACE), -ENODATA);
    ASSERT_EQ(cisc_setxattr(q, "/f", "trusted.t", "", 0, 0), 0);   // empty value, leading '/'
    // the mount sees what libcisc set (its caches were told)
    char m[64];
    ASSERT_EQ(getxattr(P("f").c_str(), "user.k", m, sizeof(m)), 5);
    EXPECT_EQ(std::string(m, 5), "value");
    ASSERT_EQ(setxattr(P("f").c_str(), "user.m", "mount", 5, 0), 0);
    char list[256];
    ssize_t n = cisc_listxattr(q, "f", list, sizeof(list));
    ASSERT_GT(n, 0);
    EXPECT_EQ(cisc_listxattr(q, "f", nullptr, 0), n);
    EXPECT_EQ(cisc_listxattr(q, "f", list, 3), -ERANGE);
    EXPECT_EQ(Split(list, n), (std::set<std::string>{ "user.k", "user.m", "trusted.t" }));
    EXPECT_EQ(cisc_removexattr(q, "f", "user.k"), 0);
    EXPECT_EQ(cisc_removexattr(q, "f", "user.k"), -ENODATA);
    EXPECT_EQ(getxattr(P("f").c_str(), "user.k", m, sizeof(m)), -1);
    EXPECT_EQ(errno, ENODATA);
    // xattr(7)'s errors for names, values, paths and flags
    EXPECT_EQ(cisc_getxattr(q, "f", "", v, sizeof(v)), -ERANGE);
    EXPECT_EQ(cisc_getxattr(q, "f", std::string(256, 'n').c_str(), v, sizeof(v)), -ERANGE);
    EXPECT_EQ(cisc_setxattr(q, "f", "bogus.k", "x", 1, 0), -EOPNOTSUPP);
    EXPECT_EQ(cisc_setxattr(q, "f", "user.big", v, 65537, 0), -E2BIG);
    EXPECT_EQ(cisc_setxattr(q, "f", "user.k", "x", 1, 0x40), -EINVAL);
    EXPECT_EQ(cisc_getxattr(q, "missing", "user.k", v, sizeof(v)), -ENOENT);
    EXPECT_EQ(cisc_getxattr(q, "", "user.k", v, sizeof(v)), -ENOENT);
    EXPECT_EQ(cisc_listxattr(q, "f/x", list, sizeof(list)), -ENOTDIR);
    // symlinks are followed, as getxattr(2)
    ASSERT_EQ(symlink("f", P("l").c_str()), 0);
    n = cisc_getxattr(q, "l", "user.m", v, sizeof(v));
    EXPECT_EQ(n, 5);
    // restart: the attributes are on the image (and fsck agrees)
    Down();
    RunResult f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 0) << f.out;
    Up();
    cisc_session_close(s);
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    EXPECT_EQ(cisc_getxattr(q, "f", "user.m", v, sizeof(v)), 5);
}

// A second user is checked by the device with its own credentials: user.*
// by the file's permissions, trusted.* never shown, security.* and ACLs
// changed only by root / the owner.
TEST_F(Xattr, SecondUserIsCheckedByTheDevice)
{
    Put("shared", "s");
    Put("private", "p");
    ASSERT_EQ(chmod(P("shared").c_str(), 0666), 0);
    ASSERT_EQ(chmod(P("private").c_str(), 0600), 0);
    ASSERT_EQ(cisc_setxattr(q, "private", "user.k", "v", 1, 0), 0);
    ASSERT_EQ(cisc_setxattr(q, "shared", "trusted.t", "v", 1, 0), 0);
    ASSERT_EQ(cisc_setxattr(q, "shared", "security.s", "v", 1, 0), 0);
    std::string m = mnt;
    EXPECT_EQ(AsCiscUser(m, 12345, [](struct cisc_queue *uq) {
                  char v[16], list[256];
                  if (cisc_getxattr(uq, "private", "user.k", v, sizeof(v)) != -EACCES)
                      return 1;
                  if (cisc_setxattr(uq, "private", "user.k", "x", 1, 0) != -EACCES)
                      return 2;
                  if (cisc_removexattr(uq, "private", "user.k") != -EACCES)
                      return 3;
                  if (cisc_setxattr(uq, "shared", "user.mine", "x", 1, 0) != 0)
                      return 4;
                  if (cisc_getxattr(uq, "shared", "trusted.t", v, sizeof(v)) != -EPERM)
                      return 5;
                  ssize_t n = cisc_listxattr(uq, "shared", list, sizeof(list));
                  if (n < 0 || Split(list, n) != std::set<std::string>{ "user.mine", "security.s" })
                      return 6;
                  if (cisc_getxattr(uq, "shared", "security.s", v, sizeof(v)) != 1)
                      return 7;
                  if (cisc_setxattr(uq, "shared", "security.s", "x", 1, 0) != -EPERM)
                      return 8;
                  if (cisc_setxattr(uq, "shared", "system.posix_acl_access", "", 0, 0) != -EPERM)
                      return 9;   // not the owner
                  return 0;
              }),
              0);
    char v[8];
    EXPECT_EQ(getxattr(P("shared").c_str(), "user.mine", v, sizeof(v)), 1);
}

// Linux's xattr form of an access ACL: header (version 2), then entries
// of tag (u16), perm (u16), id (u32).
std::string AclValue(std::initializer_list<std::array<uint32_t, 3>> entries)
{
    std::string v(4, '\0');
    v[0] = 2;
    for (auto &e : entries) {
        char b[8];
        b[0] = (char)(e[0] & 0xff), b[1] = (char)(e[0] >> 8);
        b[2] = (char)(e[1] & 0xff), b[3] = (char)(e[1] >> 8);
        memcpy(b + 4, &e[2], 4);
        v.append(b, 8);
    }
    return v;
}

// An ACL set through libcisc grants a named user what the mode does not,
// through the mount as well; getfacl reads it; a malformed one is refused.
TEST_F(Xattr, AclThroughLibciscGrantsOnBothDoors)
{
    Put("f", "secret");
    ASSERT_EQ(chmod(P("f").c_str(), 0600), 0);
    const uint32_t U_OBJ = 1, USER = 2, G_OBJ = 4, MASK = 0x10, OTHER = 0x20, NOID = ~0u;
    std::string acl = AclValue({ { U_OBJ, 6, NOID }, { USER, 4, 12345 }, { G_OBJ, 0, NOID },
                                 { MASK, 4, NOID }, { OTHER, 0, NOID } });
    std::string m = mnt, path = P("f");
    auto user_reads = [&] {
        return AsUser([&] {
            int fd = open(path.c_str(), O_RDONLY);
            int mount_ok = fd >= 0;
            if (fd >= 0)
                close(fd);
            struct cisc_session *us;
            struct cisc_queue *uq;
            uint64_t fh;
            if (cisc_session_open(m.c_str(), &us) || cisc_queue_create(us, &uq))
                return 98;
            int r = cisc_open(uq, "f", O_RDONLY, 0, &fh);
            cisc_session_close(us);
            return (mount_ok ? 1 : 0) + (r == 0 ? 2 : 0);
        });
    };
    EXPECT_EQ(user_reads(), 0);
    EXPECT_EQ(cisc_setxattr(q, "f", "system.posix_acl_access", "\x02\0\0\0\x01", 5, 0), -EINVAL);
    ASSERT_EQ(cisc_setxattr(q, "f", "system.posix_acl_access", acl.data(), acl.size(), 0), 0);
    struct stat st;
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u);   // the mask is the group bits
    EXPECT_EQ(user_reads(), 3);            // both doors grant it
    char back[128];
    ssize_t n = cisc_getxattr(q, "f", "system.posix_acl_access", back, sizeof(back));
    ASSERT_EQ(n, (ssize_t)acl.size());
    EXPECT_EQ(std::string(back, (size_t)n), acl);
    if (Sh("which getfacl").status == 0) {
        EXPECT_NE(Sh("getfacl -cpn " + P("f")).out.find("user:12345:r--"), std::string::npos);
    }
    ASSERT_EQ(cisc_removexattr(q, "f", "system.posix_acl_access"), 0);
    EXPECT_EQ(user_reads(), 0);
}

// ---- fallocate ------------------------------------------------------------

using Falloc = CiscTest;

std::string Pattern(size_t n)
{
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + (i / 4096 + i * 7) % 26);
    return s;
}

// Collapse and insert through libcisc move the data as Linux does; the
// mount reads the new contents (its page cache was told), fsck is clean.
TEST_F(Falloc, CollapseAndInsertRange)
{
    const size_t B = 4096;
    std::string data = Pattern(10 * B + 123);
    Put("f", data);
    ASSERT_TRUE(ReadFile(P("f")) == data);   // the kernel caches the pages
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, 2 * B, 3 * B), 0);
    data.erase(2 * B, 3 * B);
    EXPECT_TRUE(Get("f") == data);
    EXPECT_TRUE(ReadFile(P("f")) == data);
    ASSERT_EQ(cisc_fallocate(q, fh, FALLOC_FL_INSERT_RANGE, B, 2 * B), 0);
    data.insert(B, std::string(2 * B, '\0'));
    EXPECT_TRUE(Get("f") == data);
    EXPECT_TRUE(ReadFile(P("f")) == data);
    struct stat st;
    ASSERT_EQ(cisc_fstat(q, fh, &st), 0);
    EXPECT_EQ((size_t)st.st_size, data.size());
    // bad input -> EINVAL, as Linux: unaligned, past or touching EOF, mixed
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, 100, B), -EINVAL);
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, B, 100), -EINVAL);
    ASSERT_EQ(data.size(), 9 * B + 123);
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, 6 * B, 4 * B), -EINVAL);  // over EOF
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, 10 * B, B), -EINVAL);     // past
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_INSERT_RANGE, 10 * B, B), -EINVAL);       // past EOF
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_INSERT_RANGE | FALLOC_FL_KEEP_SIZE, B, B), -EINVAL);
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, B, 0), -EINVAL);
    EXPECT_TRUE(Get("f") == data);   // unchanged by the refusals
    // punch through libcisc too
    ASSERT_EQ(cisc_fallocate(q, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, B), 0);
    data.replace(0, B, B, '\0');
    EXPECT_TRUE(Get("f") == data);
    ASSERT_EQ(cisc_close(q, fh), 0);
    // a read-only handle may not
    ASSERT_EQ(cisc_open(q, "f", O_RDONLY, 0, &fh), 0);
    EXPECT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, 0, B), -EBADF);
    ASSERT_EQ(cisc_close(q, fh), 0);
    Down();
    RunResult f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 0) << f.out;
    Up();
    EXPECT_TRUE(ReadFile(P("f")) == data);
}

// With the mount's writeback cache the kernel keeps its own size of a
// cached file: a libcisc insert-range that grows the file raises it and a
// collapse-range that shrinks it lowers it (as a libcisc truncate does),
// so the mount reads the file as the device has it.
TEST_F(Falloc, InsertRangeGrowsTheSizeTheWritebackMountKeeps)
{
    const size_t B = 4096;
    cisc_session_close(s);
    s = nullptr;
    Down();
    Up("--writeback");
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    std::string data = Pattern(4 * B);
    ASSERT_TRUE(WriteFile(P("f"), data));
    ASSERT_TRUE(ReadFile(P("f")) == data);   // cached, size 4 blocks
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_fallocate(q, fh, FALLOC_FL_INSERT_RANGE, B, 3 * B), 0);
    ASSERT_EQ(cisc_close(q, fh), 0);
    data.insert(B, std::string(3 * B, '\0'));
    struct stat st;
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ((size_t)st.st_size, data.size());
    EXPECT_TRUE(ReadFile(P("f")) == data);
    // and a collapse-range that shrinks it lowers the kernel's size
    ASSERT_TRUE(ReadFile(P("f")) == data);   // cached again, 7 blocks
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_fallocate(q, fh, FALLOC_FL_COLLAPSE_RANGE, 2 * B, 4 * B), 0);
    ASSERT_EQ(cisc_close(q, fh), 0);
    data.erase(2 * B, 4 * B);
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ((size_t)st.st_size, data.size());
    EXPECT_TRUE(ReadFile(P("f")) == data);
}

}  // namespace
}  // namespace e2e
