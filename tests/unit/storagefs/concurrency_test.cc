// Threads: many threads on different files and directories, and many
// threads reading and writing one file, with background commits; then
// everything is verified and fsck is clean.
#include "sfs_fixture.h"

#include <atomic>
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

TEST_F(Concurrency, CrossRenamesDoNotDeadlock)
{
    Format(16384);
    uint64_t a = Mkdir(SFS_ROOT_INO, "a"), b = Mkdir(SFS_ROOT_INO, "b");
    Mkdir(a, "x");
    Mkdir(b, "y");
    for (int i = 0; i < 20; i++) {
        Create(a, ("fa" + std::to_string(i)).c_str());
        Create(b, ("fb" + std::to_string(i)).c_str());
    }
    auto mover = [&](uint64_t from, uint64_t to, const char *prefix) {
        for (int r = 0; r < 300; r++) {
            std::string n = prefix + std::to_string(r % 20);
            sfs_rename(fs, nullptr, from, n.c_str(), to, n.c_str(), 0);
            sfs_rename(fs, nullptr, to, n.c_str(), from, n.c_str(), 0);
            sfs_rename(fs, nullptr, from, "x", to, "x", SFS_RENAME_NOREPLACE);
            sfs_rename(fs, nullptr, to, "x", from, "x", SFS_RENAME_NOREPLACE);
        }
    };
    std::thread t1(mover, a, b, "fa"), t2(mover, b, a, "fb"), t3(mover, a, b, "fb"),
        t4(mover, b, a, "fa");
    t1.join(), t2.join(), t3.join(), t4.join();
    Unmount();
    ExpectClean();
    Mount();
}
