// Directories: 100,000 entries (create, lookup, complete readdir with
// stable cookies while entries come and go, delete), name checks.
#include "sfs_fixture.h"

#include <map>
#include <set>

class Dir : public SfsFixture {};

namespace {
struct Page {
    std::vector<std::pair<std::string, uint64_t>> ents;   // name, next cookie
    size_t max;
};

int collect(void *arg, const struct sfs_dirent *de)
{
    auto *p = static_cast<Page *>(arg);
    if (p->ents.size() == p->max)
        return 1;
    p->ents.emplace_back(std::string(de->name, de->namelen), de->next_cookie);
    return 0;
}
}  // namespace

TEST_F(Dir, HundredThousandEntries)
{
    Format(65536, 120000, 8192);
    const int N = 100000;
    uint64_t d = Mkdir(SFS_ROOT_INO, "big");
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "file-%06d", i);
        struct sfs_attr a;
        ASSERT_EQ(sfs_mknod(fs, nullptr, d, name, S_IFREG | 0644, 0, 0, 0, &a), 0) << i;
    }
    for (int i = 0; i < N; i += 997) {
        snprintf(name, sizeof(name), "file-%06d", i);
        EXPECT_NE(Lookup(d, name), 0u) << name;
    }
    EXPECT_EQ(Lookup(d, "file-100000"), 0u);
    EXPECT_EQ(Size(d), (uint64_t)N);

    // Page through the listing 500 entries at a time while deleting
    // entries we already saw and adding new ones: every entry present
    // the whole time must appear exactly once.
    std::set<std::string> stable, seen;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "file-%06d", i);
        if (i % 3)
            stable.insert(name);
    }
    uint64_t cookie = 0;
    int round = 0, removed = 0;
    for (;;) {
        Page p{{}, 500};
        ASSERT_EQ(sfs_readdir(fs, d, cookie, collect, &p), 0);
        if (p.ents.empty())
            break;
        for (auto &e : p.ents) {
            if (e.first == "." || e.first == "..")
                continue;
            EXPECT_TRUE(seen.insert(e.first).second) << "duplicate " << e.first;
        }
        cookie = p.ents.back().second;
        // Mutate: remove some never-stable names, add new ones.
        for (int k = 0; k < 40 && removed < N; k++, removed += 3) {
            snprintf(name, sizeof(name), "file-%06d", removed);
            EXPECT_EQ(sfs_unlink(fs, nullptr, d, name), 0);
        }
        for (int k = 0; k < 20; k++) {
            snprintf(name, sizeof(name), "new-%d-%d", round, k);
            Create(d, name);
        }
        round++;
    }
    for (auto &s : stable)
        EXPECT_TRUE(seen.count(s)) << "missing " << s;
    Remount();
    // Delete everything; the directory becomes empty and removable.
    auto names = List(d);
    for (auto &n : names)
        ASSERT_EQ(sfs_unlink(fs, nullptr, d, n.c_str()), 0) << n;
    EXPECT_EQ(Size(d), 0u);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, SFS_ROOT_INO, "big"), 0);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Dir, CookiesSurviveRemountAndDotEntriesComeFirst)
{
    Format();
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    for (int i = 0; i < 50; i++)
        Create(d, ("n" + std::to_string(i)).c_str());
    Page p{{}, 10};
    ASSERT_EQ(sfs_readdir(fs, d, 0, collect, &p), 0);
    ASSERT_EQ(p.ents.size(), 10u);
    EXPECT_EQ(p.ents[0].first, ".");
    EXPECT_EQ(p.ents[1].first, "..");
    uint64_t cookie = p.ents.back().second;
    Remount();
    std::set<std::string> all;
    for (auto &e : p.ents)
        all.insert(e.first);
    Page rest{{}, 1000};
    ASSERT_EQ(sfs_readdir(fs, d, cookie, collect, &rest), 0);
    for (auto &e : rest.ents)
        EXPECT_TRUE(all.insert(e.first).second);
    EXPECT_EQ(all.size(), 52u);
}

TEST_F(Dir, NamesAreChecked)
{
    Format();
    struct sfs_attr a;
    std::string longname(256, 'x');
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, longname.c_str(), S_IFREG, 0, 0, 0, &a),
              -ENAMETOOLONG);
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "a/b", S_IFREG, 0, 0, 0, &a), -EINVAL);
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "", S_IFREG, 0, 0, 0, &a), -EINVAL);
    EXPECT_EQ(sfs_mkdir(fs, nullptr, SFS_ROOT_INO, "..", 0755, 0, 0, &a), -EINVAL);
    std::string maxname(255, 'y');
    EXPECT_NE(Create(SFS_ROOT_INO, maxname.c_str()), 0u);   // longer than the inline root
    EXPECT_NE(Lookup(SFS_ROOT_INO, maxname.c_str()), 0u);
    EXPECT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, maxname.c_str(), S_IFREG, 0, 0, 0, &a),
              -EEXIST);
    uint64_t f = Create(SFS_ROOT_INO, "file");
    EXPECT_EQ(sfs_mknod(fs, nullptr, f, "x", S_IFREG, 0, 0, 0, &a), -ENOTDIR);
    EXPECT_EQ(sfs_lookup(fs, f, "x", &a), -ENOTDIR);
    EXPECT_EQ(sfs_lookup(fs, SFS_ROOT_INO, ".", &a), 0);
    EXPECT_EQ(a.ino, (uint64_t)SFS_ROOT_INO);
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    EXPECT_EQ(sfs_lookup(fs, d, "..", &a), 0);
    EXPECT_EQ(a.ino, (uint64_t)SFS_ROOT_INO);
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Dir, DirectoryLinkCounts)
{
    Format();
    struct sfs_attr a;
    uint64_t d = Mkdir(SFS_ROOT_INO, "d");
    ASSERT_EQ(sfs_getattr(fs, SFS_ROOT_INO, &a), 0);
    EXPECT_EQ(a.nlink, 3u);
    Mkdir(d, "e");
    Mkdir(d, "f");
    Create(d, "g");
    ASSERT_EQ(sfs_getattr(fs, d, &a), 0);
    EXPECT_EQ(a.nlink, 4u);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, SFS_ROOT_INO, "d"), -ENOTEMPTY);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, d, "g"), -ENOTDIR);
    EXPECT_EQ(sfs_unlink(fs, nullptr, d, "e"), -EISDIR);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, d, "e"), 0);
    ASSERT_EQ(sfs_getattr(fs, d, &a), 0);
    EXPECT_EQ(a.nlink, 3u);
    EXPECT_EQ(sfs_rmdir(fs, nullptr, d, "nope"), -ENOENT);
    Unmount();
    ExpectClean();
    Mount();
}
