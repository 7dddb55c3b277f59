// POSIX ACLs: the value codec and validation, the POSIX.1e check, the mode
// rules (chmod <-> ACL both ways, the minimal ACL not stored), default ACL
// inheritance at create and mkdir, the feature bit, crash and fsck.
#include "sfs_fixture.h"

extern "C" {
#include "device/storagefs/acl.h"
#include "device/storagefs/format.h"
}

#include <set>
#include <vector>

namespace {

struct Ent {
    uint16_t tag, perm;
    uint32_t id;
};

std::string Value(const std::vector<Ent> &es, uint32_t version = 2)
{
    std::string v(4 + 8 * es.size(), '\0');
    uint8_t *p = (uint8_t *)&v[0];
    memcpy(p, &version, 4);   // little-endian host
    for (size_t i = 0; i < es.size(); i++) {
        memcpy(p + 4 + 8 * i, &es[i].tag, 2);
        memcpy(p + 6 + 8 * i, &es[i].perm, 2);
        memcpy(p + 8 + 8 * i, &es[i].id, 4);
    }
    return v;
}

const uint32_t U = 0xffffffffu;

// user::rw- user:2000:r-x group::r-- group:3000:rw- mask::rwx other::---
std::vector<Ent> Full()
{
    return {{SFS_ACL_USER_OBJ, 6, U}, {SFS_ACL_USER, 5, 2000}, {SFS_ACL_GROUP_OBJ, 4, U},
            {SFS_ACL_GROUP, 6, 3000}, {SFS_ACL_MASK, 7, U},    {SFS_ACL_OTHER, 0, U}};
}

struct Groups {
    std::set<uint32_t> g;
    static bool In(void *arg, uint32_t gid)
    {
        return ((Groups *)arg)->g.count(gid) != 0;
    }
};

}  // namespace

TEST(AclCodec, DecodesWhatItEncodes)
{
    std::string v = Value(Full());
    struct sfs_acl a;
    ASSERT_EQ(acl_decode(v.data(), v.size(), &a), 0);
    EXPECT_EQ(a.n, 6u);
    std::string out(SFS_ACL_SIZE(a.n), '\0');
    EXPECT_EQ(acl_encode(&a, &out[0]), v.size());
    EXPECT_EQ(out, v);
}

TEST(AclCodec, RefusesMalformedValues)
{
    struct sfs_acl a;
    auto bad = [&](const std::string &v) { return acl_decode(v.data(), v.size(), &a); };
    auto without = [](unsigned drop) {
        auto es = Full();
        es.erase(es.begin() + drop);
        return Value(es);
    };
    EXPECT_EQ(bad(Value(Full(), 1)), -EINVAL);            // version
    EXPECT_EQ(bad(Value(Full()).substr(0, 13)), -EINVAL); // torn entry
    EXPECT_EQ(bad(Value({})), -EINVAL);                   // no entries
    EXPECT_EQ(bad(without(0)), -EINVAL);                  // no USER_OBJ
    EXPECT_EQ(bad(without(2)), -EINVAL);                  // no GROUP_OBJ
    EXPECT_EQ(bad(without(4)), -EINVAL);                  // named entries, no mask
    EXPECT_EQ(bad(without(5)), -EINVAL);                  // no OTHER
    auto es = Full();
    es[1].perm = 8;
    EXPECT_EQ(bad(Value(es)), -EINVAL);                   // perm bit
    es = Full();
    std::swap(es[0], es[1]);
    EXPECT_EQ(bad(Value(es)), -EINVAL);                   // order
    es = Full();
    es.insert(es.begin() + 1, {SFS_ACL_USER, 4, 2000});
    EXPECT_EQ(bad(Value(es)), -EINVAL);                   // duplicate id
    es = Full();
    es[3].tag = 0x40;
    EXPECT_EQ(bad(Value(es)), -EINVAL);                   // unknown tag
    std::vector<Ent> many = {{SFS_ACL_USER_OBJ, 7, U}};
    for (uint32_t i = 0; i < SFS_ACL_MAX; i++)
        many.push_back({SFS_ACL_USER, 4, 100 + i});
    many.insert(many.end(), {{SFS_ACL_GROUP_OBJ, 4, U}, {SFS_ACL_MASK, 7, U}, {SFS_ACL_OTHER, 0, U}});
    EXPECT_EQ(bad(Value(many)), -EINVAL);                 // more than SFS_ACL_MAX
    // a MASK without named entries is valid (Linux accepts it)
    EXPECT_EQ(bad(Value({{1, 7, U}, {4, 5, U}, {0x10, 5, U}, {0x20, 0, U}})), 0);
}

// The POSIX.1e order: owner, named user (masked), groups (masked; one
// granting entry suffices, matching entries that do not grant deny),
// other only when no group entry matched.
TEST(AclCheck, Posix1eAlgorithm)
{
    std::string v = Value(Full());
    struct sfs_acl a;
    ASSERT_EQ(acl_decode(v.data(), v.size(), &a), 0);
    Groups none, g100{{100}}, g3000{{3000}}, both{{100, 3000}};
    auto ok = [&](uint32_t uid, Groups &g, unsigned want) {
        return acl_permits(&a, uid, 1000, 100, Groups::In, &g, want);
    };
    EXPECT_TRUE(ok(1000, none, 6));      // owner: rw-
    EXPECT_FALSE(ok(1000, none, 1));
    EXPECT_TRUE(ok(2000, none, 5));      // named user r-x (mask rwx)
    EXPECT_FALSE(ok(2000, none, 2));
    EXPECT_TRUE(ok(2001, g100, 4));      // owning group r--
    EXPECT_FALSE(ok(2001, g100, 2));     // ... and not other (---) either
    EXPECT_TRUE(ok(2001, g3000, 6));     // named group rw-
    EXPECT_TRUE(ok(2001, both, 6));      // one granting group entry suffices
    EXPECT_FALSE(ok(2001, both, 1));
    EXPECT_FALSE(ok(2001, none, 4));     // other ---
    // the mask limits named entries and the owning group, not the owner
    a.e[4].perm = 4;   // mask r--
    EXPECT_FALSE(ok(2000, none, 1));
    EXPECT_TRUE(ok(2000, none, 4));
    EXPECT_FALSE(ok(2001, g3000, 2));
    EXPECT_TRUE(ok(1000, none, 6));
    // other applies when no group entry matches
    a.e[5].perm = 7;
    EXPECT_TRUE(ok(2001, none, 7));
    EXPECT_FALSE(ok(2001, g100, 2));    // a matching group entry denies
}

TEST(AclMode, ModeChmodAndInherit)
{
    std::string v = Value(Full());
    struct sfs_acl a;
    ASSERT_EQ(acl_decode(v.data(), v.size(), &a), 0);
    bool minimal = true;
    EXPECT_EQ(acl_mode(&a, &minimal), 0670u);   // group bits are the mask
    EXPECT_FALSE(minimal);
    acl_chmod(&a, 0751);
    EXPECT_EQ(a.e[0].perm, 7);   // user::
    EXPECT_EQ(a.e[1].perm, 5);   // named entries stay
    EXPECT_EQ(a.e[2].perm, 4);   // group:: stays (the mask takes the bits)
    EXPECT_EQ(a.e[4].perm, 5);   // mask
    EXPECT_EQ(a.e[5].perm, 1);   // other
    // without a mask the group bits are group::
    std::string m = Value({{1, 6, U}, {4, 4, U}, {0x20, 4, U}});
    ASSERT_EQ(acl_decode(m.data(), m.size(), &a), 0);
    EXPECT_EQ(acl_mode(&a, &minimal), 0644u);
    EXPECT_TRUE(minimal);
    acl_chmod(&a, 0750);
    EXPECT_EQ(acl_mode(&a, &minimal), 0750u);
    // inheritance masks the default ACL with the create mode
    ASSERT_EQ(acl_decode(v.data(), v.size(), &a), 0);
    uint32_t mode = S_IFREG | 0640;
    EXPECT_TRUE(acl_inherit(&a, &mode));
    EXPECT_EQ(mode, (uint32_t)S_IFREG | 0640);   // user rw- & rw-, mask rwx & r--, other
    EXPECT_EQ(a.e[4].perm, 4);
    EXPECT_EQ(a.e[1].perm, 5);   // named entries kept (the mask limits them)
}

class AclFs : public SfsFixture {
  protected:
    uint64_t f = 0, d = 0;
    void SetUp() override
    {
        Format();
        f = Create(SFS_ROOT_INO, "f", 0644);
        d = Mkdir(SFS_ROOT_INO, "d");
    }
    int Set(uint64_t ino, const char *name, const std::string &v, unsigned fl = 0)
    {
        return sfs_setxattr(fs, nullptr, ino, name, v.data(), v.size(), fl);
    }
    uint32_t Mode(uint64_t ino)
    {
        struct sfs_attr a = {};
        EXPECT_EQ(sfs_getattr(fs, ino, &a), 0);
        return a.mode;
    }
    std::string Get(uint64_t ino, const char *name)
    {
        char buf[2048];
        ssize_t n = sfs_getxattr(fs, ino, name, buf, sizeof(buf));
        return n < 0 ? "<" + std::to_string(n) + ">" : std::string(buf, (size_t)n);
    }
    uint32_t Incompat()
    {
        uint8_t b[SFS_BSIZE];
        EXPECT_EQ(media_read(disk, 0, 1, b), 0);
        struct sfs_sb sb;
        sfs_sb_decode(b, &sb);
        return sb.feat_incompat;
    }
};

TEST_F(AclFs, SettingAnAccessAclSetsTheModeAndChmodTheAcl)
{
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value(Full())), 0);
    EXPECT_EQ(Mode(f) & 07777, 0670u);
    EXPECT_EQ(Get(f, "system.posix_acl_access"), Value(Full()));
    struct sfs_attr in = {};
    in.mode = 0704;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_MODE, nullptr), 0);
    struct sfs_acl a;
    ASSERT_EQ(sfs_acl_get(fs, f, SFS_ACL_ACCESS, &a), 0);
    EXPECT_EQ(a.e[0].perm, 7);
    EXPECT_EQ(a.e[4].perm, 0);   // mask ---: named user 2000 gets nothing now
    EXPECT_EQ(a.e[5].perm, 4);
    EXPECT_EQ(a.e[1].perm, 5);
    Remount();
    ASSERT_EQ(sfs_acl_get(fs, f, SFS_ACL_ACCESS, &a), 0);
    EXPECT_EQ(a.e[4].perm, 0);
    EXPECT_EQ(Mode(f) & 07777, 0704u);
}

TEST_F(AclFs, MinimalAclIsTheModeAndNotStored)
{
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value(Full())), 0);
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value({{1, 7, U}, {4, 5, U}, {0x20, 1, U}})), 0);
    EXPECT_EQ(Mode(f) & 0777, 0751u);
    EXPECT_EQ(Get(f, "system.posix_acl_access"), "<" + std::to_string(-ENODATA) + ">");
    EXPECT_EQ(sfs_listxattr(fs, f, nullptr, 0), 0);
}

TEST_F(AclFs, MalformedAndMisplacedAcls)
{
    EXPECT_EQ(Set(f, "system.posix_acl_access", "junk"), -EINVAL);
    EXPECT_EQ(Set(f, "system.posix_acl_access", Value(Full(), 3)), -EINVAL);
    EXPECT_EQ(Set(f, "system.posix_acl_default", Value(Full())), -EACCES);   // not a dir
    EXPECT_EQ(Set(f, "system.other", "x"), -EOPNOTSUPP);
    EXPECT_EQ(Mode(f) & 07777, 0644u);
    EXPECT_EQ(Incompat(), 0u);   // nothing stored, no mark
    struct sfs_attr a;
    ASSERT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "l", "f", 0, 0, &a), 0);
    EXPECT_EQ(Set(a.ino, "system.posix_acl_access", Value(Full())), -EOPNOTSUPP);
}

TEST_F(AclFs, KillSgidFlag)
{
    struct sfs_attr in = {};
    in.mode = 02755;
    ASSERT_EQ(sfs_setattr(fs, nullptr, f, &in, SFS_SET_MODE, nullptr), 0);
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value(Full())), 0);
    EXPECT_EQ(Mode(f) & 07777, 02670u);
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value(Full()), SFS_XATTR_KILL_SGID), 0);
    EXPECT_EQ(Mode(f) & 07777, 0670u);
}

// A default ACL is inherited: files get it as their access ACL masked by
// the create mode, directories also as their default; the mode says the
// masked ACL. Without a default ACL nothing is added.
TEST_F(AclFs, DefaultAclIsInheritedAtCreateAndMkdir)
{
    ASSERT_EQ(Set(d, "system.posix_acl_default", Value(Full())), 0);
    EXPECT_EQ(Mode(d) & 0777, 0755u);   // a default ACL leaves the mode
    uint64_t g = Create(d, "g", 0666);
    EXPECT_EQ(Mode(g) & 0777, 0660u);   // user rw-, mask rwx&rw-, other ---
    struct sfs_acl a;
    ASSERT_EQ(sfs_acl_get(fs, g, SFS_ACL_ACCESS, &a), 0);
    EXPECT_EQ(a.n, 6u);
    EXPECT_EQ(a.e[4].perm, 6);
    EXPECT_EQ(sfs_acl_get(fs, g, SFS_ACL_DEFAULT, &a), -ENODATA);
    uint64_t sub = Mkdir(d, "sub");
    EXPECT_EQ(Get(sub, "system.posix_acl_default"), Value(Full()));
    ASSERT_EQ(sfs_acl_get(fs, sub, SFS_ACL_ACCESS, &a), 0);
    EXPECT_EQ(Mode(sub) & 0777, 0650u);   // 0755 masked: user rw-, mask r-x, other ---
    uint64_t deeper = Create(sub, "h", 0600);
    EXPECT_EQ(Mode(deeper) & 0777, 0600u);
    uint64_t plain = Create(SFS_ROOT_INO, "plain", 0640);
    EXPECT_EQ(sfs_acl_get(fs, plain, SFS_ACL_ACCESS, &a), -ENODATA);
    // removing the default ACL stops inheritance
    ASSERT_EQ(sfs_removexattr(fs, nullptr, d, "system.posix_acl_default"), 0);
    uint64_t after = Create(d, "after", 0640);
    EXPECT_EQ(sfs_acl_get(fs, after, SFS_ACL_ACCESS, &a), -ENODATA);
    EXPECT_EQ(Mode(after) & 0777, 0640u);
    ExpectClean();
    Mount();
}

// The first ACL marks the image (XACL) so older code, which would ignore
// the ACL and grant the group bits (the mask), does not mount it; the
// mark and the ACL survive a crash; fsck accepts the image.
TEST_F(AclFs, FirstAclSetsTheFeatureBitAndSurvivesACrash)
{
    Remount();
    EXPECT_EQ(Incompat(), 0u);
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value(Full())), 0);
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash();
    Mount();
    EXPECT_EQ(Get(f, "system.posix_acl_access"), Value(Full()));
    EXPECT_EQ(Mode(f) & 0777, 0670u);
    Unmount();
    EXPECT_EQ(Incompat() & SFS_FEAT_INCOMPAT_XACL, SFS_FEAT_INCOMPAT_XACL);
    EXPECT_TRUE(Fsck().empty());
    Mount();
}

// fsck knows ACLs: an ACL entry on an image without the XACL bit, and an
// access ACL that disagrees with the mode, are reported.
TEST_F(AclFs, FsckReportsAclProblems)
{
    ASSERT_EQ(Set(f, "system.posix_acl_access", Value(Full())), 0);
    Unmount();
    uint8_t b[SFS_BSIZE];
    ASSERT_EQ(media_read(disk, 0, 1, b), 0);
    struct sfs_sb sb;
    sfs_sb_decode(b, &sb);
    uint64_t iblk = sb.itable_start + f / SFS_INODES_PER_BLOCK;
    uint8_t ib[SFS_BSIZE];
    ASSERT_EQ(media_read(disk, iblk, 1, ib), 0);
    uint8_t *slot = ib + (f % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE;
    struct sfs_dinode d;
    ASSERT_EQ(sfs_inode_decode(slot, f, iblk, &d), 0);
    d.mode = (d.mode & ~0777u) | 0644;   // the ACL says 0670
    sfs_inode_encode(&d, slot);
    ASSERT_EQ(media_write(disk, iblk, 1, ib), 0);
    sb.feat_incompat &= ~SFS_FEAT_INCOMPAT_XACL;
    sfs_sb_encode(&sb, b, 0);
    ASSERT_EQ(media_write(disk, 0, 1, b), 0);
    auto problems = Fsck();
    std::string all;
    for (auto &p : problems)
        all += p + "\n";
    EXPECT_NE(all.find("without its feature bit"), std::string::npos) << all;
    EXPECT_NE(all.find("disagrees with the mode 0644"), std::string::npos) << all;
    // put it back so the fixture's teardown finds a clean image
    d.mode = (d.mode & ~0777u) | 0670;
    sfs_inode_encode(&d, slot);
    ASSERT_EQ(media_write(disk, iblk, 1, ib), 0);
    sb.feat_incompat |= SFS_FEAT_INCOMPAT_XACL;
    sfs_sb_encode(&sb, b, 0);
    ASSERT_EQ(media_write(disk, 0, 1, b), 0);
    EXPECT_TRUE(Fsck().empty());
    Mount();
}
