// Extended attributes: namespaces, CREATE/REPLACE, sizes from inline to
// 64 KiB value blocks, ERANGE, listing, removal, persistence, ENOSPC.
#include "sfs_fixture.h"

extern "C" {
#include "device/storagefs/format.h"
}

#include <set>

class Xattr : public SfsFixture {
  protected:
    uint64_t f = 0;
    void SetUp() override
    {
        Format();
        f = Create(SFS_ROOT_INO, "f");
    }
    int Set(const char *name, const std::string &v, unsigned flags = 0)
    {
        return sfs_setxattr(fs, nullptr, f, name, v.data(), v.size(), flags);
    }
    std::string Get(const char *name)
    {
        ssize_t n = sfs_getxattr(fs, f, name, nullptr, 0);
        if (n < 0)
            return "<" + std::to_string(n) + ">";
        std::string v((size_t)n, '\0');
        EXPECT_EQ(sfs_getxattr(fs, f, name, &v[0], v.size()), n);
        return v;
    }
    // The names listed, in *out (left empty when listing fails: the
    // buffer is sized by the first call, so it must have succeeded).
    void ListNames(std::set<std::string> *out)
    {
        ssize_t n = sfs_listxattr(fs, f, nullptr, 0);
        ASSERT_GE(n, 0);
        std::string buf((size_t)n, '\0');
        ASSERT_EQ(sfs_listxattr(fs, f, &buf[0], buf.size()), n);
        for (size_t i = 0; i < buf.size(); i += strlen(&buf[i]) + 1)
            out->insert(&buf[i]);
    }
    std::set<std::string> Names()
    {
        std::set<std::string> out;
        ListNames(&out);
        return out;
    }
};

TEST_F(Xattr, NamespacesAndFlags)
{
    EXPECT_EQ(Set("user.a", "1"), 0);
    EXPECT_EQ(Set("trusted.b", "2"), 0);
    EXPECT_EQ(Set("security.c", "3"), 0);
    EXPECT_EQ(Set("system.posix_acl_access", "3"), -EINVAL);   // acl_test.cc
    EXPECT_EQ(Set("system.other", "3"), -EOPNOTSUPP);
    EXPECT_EQ(Set("other.x", "3"), -EOPNOTSUPP);
    EXPECT_EQ(Set("user.", "3"), -EINVAL);
    EXPECT_EQ(Set("user.a", "x", SFS_XATTR_CREATE), -EEXIST);
    EXPECT_EQ(Set("user.z", "x", SFS_XATTR_REPLACE), -ENODATA);
    EXPECT_EQ(Set("user.a", "one", SFS_XATTR_REPLACE), 0);
    EXPECT_EQ(Get("user.a"), "one");
    EXPECT_EQ(Get("trusted.b"), "2");
    EXPECT_EQ(Get("security.c"), "3");
    EXPECT_EQ(Get("user.b"), "<" + std::to_string(-ENODATA) + ">");
    EXPECT_EQ(Names(), (std::set<std::string>{"user.a", "trusted.b", "security.c"}));
    EXPECT_EQ(sfs_removexattr(fs, nullptr, f, "user.a"), 0);
    EXPECT_EQ(sfs_removexattr(fs, nullptr, f, "user.a"), -ENODATA);
    EXPECT_EQ(Names(), (std::set<std::string>{"trusted.b", "security.c"}));
    std::string longname = "user." + std::string(251, 'n');
    EXPECT_EQ(Set(longname.c_str(), "v"), -ERANGE);
}

TEST_F(Xattr, SizesAndRange)
{
    const size_t sizes[] = {0, 1, 50, 100, 1000, 2048, 2049, 4064, 4065, 20000, 65536};
    for (size_t s : sizes) {
        std::string name = "user.s" + std::to_string(s);
        std::string v(s, '\0');
        for (size_t i = 0; i < s; i++)
            v[i] = (char)(i * 7 + s);
        ASSERT_EQ(Set(name.c_str(), v), 0) << s;
    }
    EXPECT_EQ(Set("user.toobig", std::string(65537, 'x')), -E2BIG);
    char small[10];
    EXPECT_EQ(sfs_getxattr(fs, f, "user.s1000", small, sizeof(small)), -ERANGE);
    EXPECT_EQ(sfs_listxattr(fs, f, small, sizeof(small)), -ERANGE);
    Remount();
    for (size_t s : sizes) {
        std::string name = "user.s" + std::to_string(s);
        std::string v = Get(name.c_str());
        ASSERT_EQ(v.size(), s);
        for (size_t i = 0; i < s; i++)
            ASSERT_EQ(v[i], (char)(i * 7 + s)) << s << " " << i;
    }
    // Replace a large value by a small one and back.
    EXPECT_EQ(Set("user.s65536", "tiny"), 0);
    EXPECT_EQ(Get("user.s65536"), "tiny");
    EXPECT_EQ(Set("user.s1", std::string(30000, 'B')), 0);
    EXPECT_EQ(Get("user.s1"), std::string(30000, 'B'));
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Xattr, FullBlockIsEnospcAndChangesNothing)
{
    int n = 0;
    for (;; n++) {
        std::string name = "user.k" + std::to_string(n);
        int r = Set(name.c_str(), std::string(200, 'v'));
        if (r == -ENOSPC)
            break;
        ASSERT_EQ(r, 0);
        ASSERT_LT(n, 1000);
    }
    EXPECT_GT(n, 10);
    EXPECT_EQ(Get("user.k0"), std::string(200, 'v'));
    EXPECT_EQ(Names().size(), (size_t)n);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Xattr, FreedWithTheInode)
{
    ASSERT_EQ(Set("user.big", std::string(50000, 'x')), 0);
    ASSERT_EQ(Set("user.mid", std::string(3000, 'y')), 0);
    struct sfs_statfs a, b;
    sfs_statfs(fs, &a);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);
    sfs_statfs(fs, &b);
    EXPECT_EQ(b.blocks_free, a.blocks_free + 13 + 1 + 1);   // value blocks + the xattr block
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Xattr, OnDirectoriesAndSymlinks)
{
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    EXPECT_EQ(sfs_setxattr(fs, nullptr, d, "user.dir", "1", 1, 0), 0);
    struct sfs_attr a;
    ASSERT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "s", "t", 0, 0, &a), 0);
    EXPECT_EQ(sfs_setxattr(fs, nullptr, a.ino, "trusted.link", "2", 1, 0), 0);
    char buf[4];
    EXPECT_EQ(sfs_getxattr(fs, a.ino, "trusted.link", buf, 4), 1);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, SFS_ROOT_INO, "d"), 0);
    Unmount();
    ExpectClean();
    Mount();
}

// The first security.* attribute marks the image (incompatible feature
// XSECURITY) so that older code, which would misread namespace 3, does not
// mount it; an image without one stays unmarked. The mark is journaled and
// survives a crash; fsck accepts the image.
TEST_F(Xattr, SecurityNamespaceSetsTheFeatureBit)
{
    auto incompat = [this] {
        uint8_t b[SFS_BSIZE];
        EXPECT_EQ(media_read(disk, 0, 1, b), 0);
        struct sfs_sb sb;
        sfs_sb_decode(b, &sb);
        return sb.feat_incompat;
    };
    ASSERT_EQ(Set("user.a", "1"), 0);
    ASSERT_EQ(Set("trusted.a", "1"), 0);
    Remount();
    EXPECT_EQ(incompat(), 0u);
    ASSERT_EQ(Set("security.capability", std::string(20, 'c')), 0);
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash();
    Mount();
    EXPECT_EQ(Get("security.capability"), std::string(20, 'c'));
    Unmount();
    EXPECT_EQ(incompat(), SFS_FEAT_INCOMPAT_XSECURITY);
    EXPECT_TRUE(Fsck().empty());
    Mount();
}
