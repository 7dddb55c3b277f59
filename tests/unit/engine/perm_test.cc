// tests/unit/engine/perm_test.cc - POSIX permission rules, table-driven.
#include <gtest/gtest.h>

#include "device/engine/perm.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <ctype.h>

#include <string>
#include <vector>

namespace {

struct eng_cred Cred(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups = {})
{
    struct eng_cred c = {};
    c.uid = uid;
    c.gid = gid;
    c.ngroups = (int32_t)groups.size();
    for (size_t i = 0; i < groups.size(); i++)
        c.groups[i] = groups[i];
    return c;
}

struct sfs_attr Attr(uint32_t mode, uint32_t uid, uint32_t gid)
{
    struct sfs_attr a = {};
    a.mode = mode;
    a.uid = uid;
    a.gid = gid;
    return a;
}

struct CheckCase {
    const char *what;
    uint32_t uid, gid;
    std::vector<uint32_t> groups;
    uint32_t mode, fuid, fgid;
    int mask, want;
};

class PermCheck : public ::testing::TestWithParam<CheckCase> {};

int fetched;
int CountingGroups(void *arg, uint32_t *g, unsigned max)
{
    fetched++;
    g[0] = 50;
    return 1;
}

}  // namespace

TEST_P(PermCheck, Matches)
{
    const CheckCase &c = GetParam();
    struct eng_cred cr = Cred(c.uid, c.gid, c.groups);
    struct sfs_attr a = Attr(c.mode, c.fuid, c.fgid);
    EXPECT_EQ(perm_check(&cr, &a, c.mask), c.want) << c.what;
}

INSTANTIATE_TEST_SUITE_P(Posix, PermCheck, ::testing::Values(
    CheckCase{ "owner reads 0600", 5, 5, {}, S_IFREG | 0600, 5, 9, R_OK, 0 },
    CheckCase{ "other denied 0600", 6, 6, {}, S_IFREG | 0600, 5, 9, R_OK, -EACCES },
    CheckCase{ "owner bits win over group", 5, 9, {}, S_IFREG | 0070, 5, 9, R_OK, -EACCES },
    CheckCase{ "group member", 6, 9, {}, S_IFREG | 0640, 5, 9, R_OK, 0 },
    CheckCase{ "supplementary group", 6, 6, { 9 }, S_IFREG | 0640, 5, 9, R_OK, 0 },
    CheckCase{ "group denied write", 6, 9, {}, S_IFREG | 0640, 5, 9, W_OK, -EACCES },
    CheckCase{ "other bits", 6, 6, {}, S_IFREG | 0604, 5, 9, R_OK, 0 },
    CheckCase{ "group bits deny member even if other allows", 6, 9, {}, S_IFREG | 0604, 5, 9, R_OK, -EACCES },
    CheckCase{ "root reads 0000", 0, 0, {}, S_IFREG | 0000, 5, 9, R_OK | W_OK, 0 },
    CheckCase{ "root exec needs an x bit", 0, 0, {}, S_IFREG | 0644, 5, 9, X_OK, -EACCES },
    CheckCase{ "root exec with any x bit", 0, 0, {}, S_IFREG | 0001, 5, 9, X_OK, 0 },
    CheckCase{ "root searches any dir", 0, 0, {}, S_IFDIR | 0000, 5, 9, X_OK, 0 },
    CheckCase{ "search dir", 6, 6, {}, S_IFDIR | 0751, 5, 9, X_OK, 0 },
    CheckCase{ "existence only", 6, 6, {}, S_IFREG | 0000, 5, 9, 0, 0 }),
    [](const ::testing::TestParamInfo<CheckCase> &i) {
        std::string n;
        for (const char *p = i.param.what; *p; p++)
            n += isalnum((unsigned char)*p) ? *p : '_';
        return n;
    });

TEST(Perm, GroupsFetchedOnlyWhenNeeded)
{
    struct eng_cred c = Cred(6, 6);
    c.ngroups = -1;
    c.groups_fn = CountingGroups;
    fetched = 0;
    struct sfs_attr same = Attr(S_IFREG | 0644, 5, 50);   // group == other bits
    EXPECT_EQ(perm_check(&c, &same, R_OK), 0);
    EXPECT_EQ(fetched, 0);
    struct sfs_attr grp = Attr(S_IFREG | 0640, 5, 50);
    EXPECT_EQ(perm_check(&c, &grp, R_OK), 0);
    EXPECT_EQ(perm_check(&c, &grp, R_OK), 0);
    EXPECT_EQ(fetched, 1);
}

TEST(Perm, StickyDelete)
{
    struct sfs_attr tmp = Attr(S_IFDIR | 01777, 0, 0);
    struct sfs_attr theirs = Attr(S_IFREG | 0666, 7, 7), mine = Attr(S_IFREG | 0600, 6, 6);
    struct eng_cred me = Cred(6, 6), root = Cred(0, 0), dirowner = Cred(0, 1);
    EXPECT_EQ(perm_may_delete(&me, &tmp, &theirs), -EPERM);
    EXPECT_EQ(perm_may_delete(&me, &tmp, &mine), 0);
    EXPECT_EQ(perm_may_delete(&root, &tmp, &theirs), 0);
    EXPECT_EQ(perm_may_delete(&dirowner, &tmp, &theirs), 0);
    struct sfs_attr ro = Attr(S_IFDIR | 0755, 0, 0);
    EXPECT_EQ(perm_may_delete(&me, &ro, &mine), -EACCES);
    struct sfs_attr file = Attr(S_IFREG | 0777, 6, 6);
    EXPECT_EQ(perm_may_create(&me, &file), -ENOTDIR);
}

TEST(Perm, SetattrRules)
{
    struct sfs_attr f = Attr(S_IFREG | 06755, 6, 6);
    struct eng_cred owner = Cred(6, 6, { 8 }), other = Cred(7, 7), root = Cred(0, 0);
    struct sfs_attr in = f;
    unsigned v = SFS_SET_MODE;
    EXPECT_EQ(perm_setattr(&other, &f, &in, &v, false), -EPERM);
    in.uid = 7;
    v = SFS_SET_UID;
    EXPECT_EQ(perm_setattr(&owner, &f, &in, &v, false), -EPERM);   // give away
    in = f;
    in.gid = 8;
    v = SFS_SET_GID;
    EXPECT_EQ(perm_setattr(&owner, &f, &in, &v, false), 0);   // to own group
    EXPECT_TRUE(v & SFS_SET_MODE);
    EXPECT_EQ(in.mode & (S_ISUID | S_ISGID), 0u) << "chown clears set-id bits";
    in = f;
    in.gid = 9;
    v = SFS_SET_GID;
    EXPECT_EQ(perm_setattr(&owner, &f, &in, &v, false), -EPERM);
    in = f;
    in.mode = 02755;
    v = SFS_SET_MODE;
    struct eng_cred nomember = Cred(6, 1);
    EXPECT_EQ(perm_setattr(&nomember, &f, &in, &v, false), 0);
    EXPECT_EQ(in.mode & S_ISGID, 0u) << "chmod g+s by a non-member drops it";
    v = SFS_SET_ATIME | SFS_SET_MTIME;
    EXPECT_EQ(perm_setattr(&other, &f, &in, &v, false), -EPERM);
    v = SFS_SET_ATIME_NOW | SFS_SET_MTIME_NOW;
    EXPECT_EQ(perm_setattr(&other, &f, &in, &v, false), -EACCES);
    struct sfs_attr w = Attr(S_IFREG | 0666, 6, 6);
    EXPECT_EQ(perm_setattr(&other, &w, &in, &v, false), 0);
    v = SFS_SET_SIZE;
    EXPECT_EQ(perm_setattr(&other, &f, &in, &v, false), -EACCES);
    EXPECT_EQ(perm_setattr(&other, &f, &in, &v, true), 0) << "ftruncate on a writable handle";
    in = f;
    in.uid = 1;
    v = SFS_SET_UID;
    EXPECT_EQ(perm_setattr(&root, &f, &in, &v, false), 0);
}

TEST(Perm, WriterMayKillSetidBitsOnly)
{
    struct sfs_attr f = Attr(S_IFREG | 06775, 0, 0);
    struct eng_cred writer = Cred(6, 0), reader = Cred(7, 7);
    struct sfs_attr in = f;
    in.mode = 0775;
    unsigned v = SFS_SET_MODE;
    EXPECT_EQ(perm_setattr(&writer, &f, &in, &v, false), 0);
    EXPECT_EQ(perm_setattr(&reader, &f, &in, &v, false), -EPERM);
    in.mode = 0777;   // more than clearing set-id bits
    EXPECT_EQ(perm_setattr(&writer, &f, &in, &v, false), -EPERM);
}

TEST(Perm, NewOwnerAndSetgidDirs)
{
    struct eng_cred c = Cred(6, 6);
    struct sfs_attr plain = Attr(S_IFDIR | 0777, 0, 0), sgid = Attr(S_IFDIR | 02777, 0, 44);
    uint32_t mode = S_IFREG | 0644, uid, gid;
    perm_new_owner(&c, &plain, &mode, &uid, &gid);
    EXPECT_EQ(uid, 6u);
    EXPECT_EQ(gid, 6u);
    mode = S_IFDIR | 0755;
    perm_new_owner(&c, &sgid, &mode, &uid, &gid);
    EXPECT_EQ(gid, 44u);
    EXPECT_TRUE(mode & S_ISGID) << "subdirectories inherit set-group-id";
    mode = S_IFREG | 02755;
    perm_new_owner(&c, &sgid, &mode, &uid, &gid);
    EXPECT_FALSE(mode & S_ISGID) << "not a member of the inherited group";
}

TEST(Perm, Xattrs)
{
    struct eng_cred u = Cred(6, 6), root = Cred(0, 0);
    struct sfs_attr f = Attr(S_IFREG | 0644, 5, 5), lnk = Attr(S_IFLNK | 0777, 6, 6);
    EXPECT_EQ(perm_xattr(&u, &f, "user.a", R_OK), 0);
    EXPECT_EQ(perm_xattr(&u, &f, "user.a", W_OK), -EACCES);
    EXPECT_EQ(perm_xattr(&u, &lnk, "user.a", W_OK), -EPERM);
    EXPECT_EQ(perm_xattr(&u, &f, "trusted.a", R_OK), -EPERM);
    EXPECT_EQ(perm_xattr(&root, &f, "trusted.a", W_OK), 0);
    EXPECT_EQ(perm_xattr(&u, &f, "security.a", W_OK), -EPERM);
    EXPECT_EQ(perm_xattr(&u, &f, "bogus.a", R_OK), -EOPNOTSUPP);
    EXPECT_EQ(perm_xattr(&u, &f, "security.capability", R_OK), 0);
    EXPECT_EQ(perm_open_mask(O_RDONLY), R_OK);
    EXPECT_EQ(perm_open_mask(O_RDWR | O_TRUNC), R_OK | W_OK);
    EXPECT_EQ(perm_open_mask(O_WRONLY), W_OK);
}

// POSIX ACL names: anyone reads them, the owner and root set or remove
// them, symlinks have none, no other system. name exists; setting an
// access ACL clears S_ISGID for a caller outside the file's group.
TEST(Perm, AclXattrs)
{
    struct eng_cred owner = Cred(5, 5), other = Cred(6, 6), root = Cred(0, 0);
    struct eng_cred member = Cred(5, 9, {5});
    struct sfs_attr f = Attr(S_IFREG | 0600, 5, 5), lnk = Attr(S_IFLNK | 0777, 5, 5);
    const char *acc = "system.posix_acl_access", *def = "system.posix_acl_default";
    EXPECT_EQ(perm_xattr(&other, &f, acc, R_OK), 0);   // even with mode 0600
    EXPECT_EQ(perm_xattr(&other, &f, def, R_OK), 0);
    EXPECT_EQ(perm_xattr(&other, &f, acc, W_OK), -EPERM);
    EXPECT_EQ(perm_xattr_remove(&other, &f, acc), -EPERM);
    EXPECT_EQ(perm_xattr(&owner, &f, acc, W_OK), 0);
    EXPECT_EQ(perm_xattr_remove(&owner, &f, def), 0);
    EXPECT_EQ(perm_xattr(&root, &f, acc, W_OK), 0);
    EXPECT_EQ(perm_xattr(&owner, &lnk, acc, R_OK), -EOPNOTSUPP);
    EXPECT_EQ(perm_xattr(&owner, &f, "system.other", R_OK), -EOPNOTSUPP);
    EXPECT_FALSE(perm_acl_kills_sgid(&root, &f));
    EXPECT_FALSE(perm_acl_kills_sgid(&member, &f));
    struct eng_cred outsider = Cred(5, 9);
    EXPECT_TRUE(perm_acl_kills_sgid(&outsider, &f));
}

// A writer may remove a file's capabilities (the kernel's file_remove_privs
// asks with its credentials) but not set them, nor remove other security.*
// names; someone who may not write the file may not remove them either.
TEST(Perm, WriterMayRemoveCapabilities)
{
    struct eng_cred u = Cred(6, 6), root = Cred(0, 0);
    struct sfs_attr mine = Attr(S_IFREG | 0644, 6, 6), theirs = Attr(S_IFREG | 0644, 5, 5);
    struct sfs_attr dir = Attr(S_IFDIR | 0777, 6, 6);
    EXPECT_EQ(perm_xattr_remove(&u, &mine, "security.capability"), 0);
    EXPECT_EQ(perm_xattr(&u, &mine, "security.capability", W_OK), -EPERM);
    EXPECT_EQ(perm_xattr_remove(&u, &mine, "security.selinux"), -EPERM);
    EXPECT_EQ(perm_xattr_remove(&u, &theirs, "security.capability"), -EPERM);
    EXPECT_EQ(perm_xattr_remove(&u, &dir, "security.capability"), -EPERM);
    EXPECT_EQ(perm_xattr_remove(&u, &theirs, "user.a"), -EACCES);
    EXPECT_EQ(perm_xattr_remove(&root, &theirs, "security.selinux"), 0);
}

// A data change by a caller without CAP_FSETID clears set-user-id always
// and set-group-id with group execute (Linux's file_remove_privs).
TEST(Perm, SetidKillOnDataChange)
{
    auto kill = [](struct eng_cred c, uint32_t mode, uint32_t owner = 6) {
        struct sfs_attr a = Attr(mode, owner, owner);
        return perm_setid_kill(&c, &a);
    };
    struct eng_cred user = Cred(7, 7), root = Cred(0, 0);
    EXPECT_EQ(kill(user, S_IFREG | 06775), (uint32_t)(S_ISUID | S_ISGID));
    EXPECT_EQ(kill(user, S_IFREG | 06765), (uint32_t)S_ISUID)
        << "set-group-id without group execute marks mandatory locking";
    EXPECT_EQ(kill(user, S_IFREG | 02775, 7), (uint32_t)S_ISGID) << "the owner's writes too";
    EXPECT_EQ(kill(user, S_IFREG | 0775), 0u);
    EXPECT_EQ(kill(root, S_IFREG | 06775), 0u) << "CAP_FSETID";
    EXPECT_EQ(kill(user, S_IFDIR | 06775), 0u);
}

// chown of a non-directory clears the set-id bits even when the owner
// stays the same, whoever asks (Linux's chown_common).
TEST(Perm, ChownToSameOwnerClearsSetidBits)
{
    struct sfs_attr f = Attr(S_IFREG | 06755, 6, 6), in = f;
    struct eng_cred root = Cred(0, 0);
    unsigned v = SFS_SET_UID;
    EXPECT_EQ(perm_setattr(&root, &f, &in, &v, false), 0);
    EXPECT_TRUE(v & SFS_SET_MODE);
    EXPECT_EQ(in.mode & 07777, 0755u);
    struct sfs_attr d = Attr(S_IFDIR | 02755, 6, 6);
    in = d;
    v = SFS_SET_GID;
    EXPECT_EQ(perm_setattr(&root, &d, &in, &v, false), 0);
    EXPECT_FALSE(v & SFS_SET_MODE) << "directories keep set-group-id";
}

// Through the mount, the kernel asks (as the writer) to clear only the
// set-id bits it must: set-user-id alone on a mandatory-locking file.
TEST(Perm, WriterMayKillOneSetidBit)
{
    struct sfs_attr f = Attr(S_IFREG | 06765, 0, 5);
    struct eng_cred writer = Cred(6, 5);
    struct sfs_attr in = f;
    in.mode = 02765;
    unsigned v = SFS_SET_MODE;
    EXPECT_EQ(perm_setattr(&writer, &f, &in, &v, false), 0);
    in.mode = 06764;   // anything but set-id bits
    EXPECT_EQ(perm_setattr(&writer, &f, &in, &v, false), -EPERM);
    in.mode = 06765;   // no change at all is not a clear
    EXPECT_EQ(perm_setattr(&writer, &f, &in, &v, false), -EPERM);
}
