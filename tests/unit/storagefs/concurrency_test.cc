// Threads: many threads on different files and directories, and many
// threads reading and writing one file, with background commits; then
// everything is verified and fsck is clean.
#include "sfs_fixture.h"

#include <atomic>
#include <set>
#include <thread>

class Concurrency : public SfsFixture {};

TEST_F(Concurrency, ThreadsOnDifferentFiles)
{
    Format(32768, 8192);
    const int T = 6, N = 150;
    uint64_t shared = Mkdir(SFS_ROOT_INO, "shared");
    std::atomic<int> errors{0};
    auto work = [&](int t) {
        struct sfs_attr a;
        std::string dname = "t" + std::to_string(t);
        if (sfs_mkdir(fs, nullptr, SFS_ROOT_INO, dname.c_str(), 0755, 0, 0, &a))
            errors++;
        uint64_t own = a.ino;
        for (int i = 0; i < N; i++) {
            std::string n = "f" + std::to_string(i);
            uint64_t dir = i % 2 ? shared : own;
            std::string name = dir == shared ? dname + "-" + n : n;
            if (sfs_mknod(fs, nullptr, dir, name.c_str(), S_IFREG | 0644, 0, 0, 0, &a)) {
                errors++;
                continue;
            }
            std::string data(1000 + i * 50, (char)('a' + t));
            if (sfs_write(fs, nullptr, a.ino, 0, data.data(), data.size()) != (ssize_t)data.size())
                errors++;
            std::string back(data.size(), 0);
            if (sfs_read(fs, a.ino, 0, &back[0], back.size()) != (ssize_t)back.size() ||
                back != data)
                errors++;
            if (i % 3 == 0 && sfs_unlink(fs, nullptr, dir, name.c_str()))
                errors++;
            if (i % 7 == 0) {
                std::string nn = name + ".moved";
                if (i % 3 != 0 && sfs_rename(fs, nullptr, dir, name.c_str(),
                                             dir == shared ? own : shared, nn.c_str(), 0))
                    errors++;
            }
        }
    };
    std::vector<std::thread> th;
    for (int t = 0; t < T; t++)
        th.emplace_back(work, t);
    for (auto &x : th)
        x.join();
    EXPECT_EQ(errors.load(), 0);
    Remount();
    for (int t = 0; t < T; t++) {
        uint64_t own = Lookup(SFS_ROOT_INO, ("t" + std::to_string(t)).c_str());
        ASSERT_NE(own, 0u);
        uint64_t f2 = Lookup(own, "f2");
        ASSERT_NE(f2, 0u);
        EXPECT_EQ(Read(f2, 0, 5), std::string(5, (char)('a' + t)));
    }
    Unmount();
    ExpectClean();
    Mount();
}

TEST_F(Concurrency, ManyThreadsOneFile)
{
    Format(16384);
    uint64_t f = Create(SFS_ROOT_INO, "one");
    const int W = 4, R = 3, N = 200, SLOT = 3000;
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    auto writer = [&](int w) {
        for (int i = 0; i < N; i++) {
            uint64_t off = (uint64_t)(i * W + w) * SLOT;
            std::string d(SLOT, (char)('A' + w));
            if (sfs_write(fs, nullptr, f, off, d.data(), d.size()) != SLOT)
                errors++;
        }
    };
    auto reader = [&]() {
        std::string buf(SLOT, 0);
        while (!stop) {
            uint64_t size = 0;
            struct sfs_attr a;
            if (sfs_getattr(fs, f, &a) == 0)
                size = a.size;
            if (size < SLOT)
                continue;
            uint64_t slot = (size / SLOT - 1);
            ssize_t n = sfs_read(fs, f, slot * SLOT, &buf[0], SLOT);
            // A slot is either not yet written (zeros) or whole.
            if (n != SLOT || (buf[0] != 0 && buf != std::string(SLOT, buf[0])))
                errors++;
        }
    };
    std::vector<std::thread> th;
    for (int r = 0; r < R; r++)
        th.emplace_back(reader);
    for (int w = 0; w < W; w++)
        th.emplace_back(writer, w);
    for (int i = R; i < R + W; i++)
        th[i].join();
    stop = true;
    for (int i = 0; i < R; i++)
        th[i].join();
    EXPECT_EQ(errors.load(), 0);
    Remount();
    for (int i = 0; i < N * W; i += 37)
        EXPECT_EQ(Read(f, (uint64_t)i * SLOT, SLOT), std::string(SLOT, (char)('A' + i % W)));
    Unmount();
    ExpectClean();
    Mount();
}

// Four threads move the same names back and forth between a and b in
// opposite directions (every rename is cross-directory, so they also
// contend for the rename lock and lock a and b in both orders). Each name
// lives in exactly one of a and b, so a rename succeeds or finds its source
// gone (-ENOENT; -EEXIST too for the NOREPLACE moves of the directory x,
// whose target may be checked first); nothing else is legitimate.
TEST_F(Concurrency, CrossRenamesDoNotDeadlock)
{
    Format(16384);
    uint64_t a = Mkdir(SFS_ROOT_INO, "a"), b = Mkdir(SFS_ROOT_INO, "b");
    ASSERT_NE(a, 0u);
    ASSERT_NE(b, 0u);
    ASSERT_NE(Mkdir(a, "x"), 0u);
    ASSERT_NE(Mkdir(b, "y"), 0u);
    std::set<std::string> files;
    for (int i = 0; i < 20; i++) {
        for (const char *p : {"fa", "fb"}) {
            std::string n = p + std::to_string(i);
            ASSERT_NE(Create(p[1] == 'a' ? a : b, n.c_str()), 0u);
            files.insert(n);
        }
    }
    const int ROUNDS = 300;
    // Successful renames, per name family; anything else is counted in bad.
    std::atomic<int> moved_fa{0}, moved_fb{0}, moved_x{0}, bad{0};
    std::atomic<int> first_bad{0};
    auto note = [&](int r, bool noreplace, std::atomic<int> &moved) {
        if (r == 0)
            moved++;
        else if (r != -ENOENT && !(noreplace && r == -EEXIST) && bad++ == 0)
            first_bad = r;
    };
    auto mover = [&](uint64_t from, uint64_t to, const char *prefix) {
        std::atomic<int> &moved = prefix[1] == 'a' ? moved_fa : moved_fb;
        for (int r = 0; r < ROUNDS; r++) {
            std::string n = prefix + std::to_string(r % 20);
            note(sfs_rename(fs, nullptr, from, n.c_str(), to, n.c_str(), 0), false, moved);
            note(sfs_rename(fs, nullptr, to, n.c_str(), from, n.c_str(), 0), false, moved);
            note(sfs_rename(fs, nullptr, from, "x", to, "x", SFS_RENAME_NOREPLACE), true,
                 moved_x);
            note(sfs_rename(fs, nullptr, to, "x", from, "x", SFS_RENAME_NOREPLACE), true,
                 moved_x);
        }
    };
    std::thread t1(mover, a, b, "fa"), t2(mover, b, a, "fb"), t3(mover, a, b, "fb"),
        t4(mover, b, a, "fa");
    t1.join(), t2.join(), t3.join(), t4.join();
    EXPECT_EQ(bad.load(), 0) << "first unexpected result " << first_bad.load();
    // Renames are atomic, so when both of the two opposite moves a thread
    // makes of one name in a row fail, the name moved in between: every
    // such pair spans a success (its own or another thread's). One
    // thread's pairs do not overlap in time, hence at least ROUNDS
    // successes per family, whatever the interleaving.
    EXPECT_GE(moved_fa.load(), ROUNDS);
    EXPECT_GE(moved_fb.load(), ROUNDS);
    EXPECT_GE(moved_x.load(), ROUNDS);
    // Every name is in exactly one of a and b, and nothing else is there.
    std::multiset<std::string> in_a, in_b, all;
    for (auto &n : List(a))
        in_a.insert(n), all.insert(n);
    for (auto &n : List(b))
        in_b.insert(n), all.insert(n);
    std::multiset<std::string> want(files.begin(), files.end());
    want.insert("x");
    want.insert("y");
    EXPECT_EQ(all, want);
    EXPECT_EQ(in_b.count("y"), 1u);
    // x's ".." and the link counts of a and b follow where x ended up.
    uint64_t xdir = in_a.count("x") ? a : b, x = Lookup(xdir, "x");
    ASSERT_NE(x, 0u);
    uint64_t parent = 0;
    ASSERT_EQ(sfs_readdir(fs, x, 0, [](void *arg, const struct sfs_dirent *de) {
        if (de->namelen == 2 && !memcmp(de->name, "..", 2))
            *static_cast<uint64_t *>(arg) = de->ino;
        return 0;
    }, &parent), 0);
    EXPECT_EQ(parent, xdir);
    struct sfs_attr at;
    ASSERT_EQ(sfs_getattr(fs, a, &at), 0);
    EXPECT_EQ(at.nlink, 2u + (xdir == a));
    ASSERT_EQ(sfs_getattr(fs, b, &at), 0);
    EXPECT_EQ(at.nlink, 3u + (xdir == b));
    Unmount();
    ExpectClean();
    Mount();
}
