// tests/e2e/fuse/loop_test.cc - the pinned session loop (fusefs_loop.c)
// under clients that share a CPU: one CPU's poller hands its role over
// while it serves a slow request (large writes, fsync, truncate), and
// every request is answered whatever mix of slow and quick ones arrives.
#include "tests/e2e/fuse/mount_fixture.h"

#include <sched.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using e2e::MountTest;

namespace {

bool PinTo(int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0;
}

// Large writes and fsyncs: requests the loop treats as slow.
bool SlowClient(const std::string &path, int rounds)
{
    std::string data(1 << 20, '\0');
    int fd = open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0)
        return false;
    bool ok = true;
    for (int i = 0; i < rounds && ok; i++) {
        for (size_t k = 0; k < data.size(); k++)
            data[k] = (char)('a' + (k + (size_t)i) % 26);
        ok = pwrite(fd, data.data(), data.size(), (off_t)i * (off_t)data.size()) ==
                 (ssize_t)data.size() && fsync(fd) == 0;
        std::string back(data.size(), '\0');
        ok = ok && pread(fd, &back[0], back.size(), (off_t)i * (off_t)data.size()) ==
                       (ssize_t)back.size() && back == data;
    }
    ok = ok && ftruncate(fd, 4096) == 0;
    return close(fd) == 0 && ok;
}

// Create, stat, unlink: quick requests.
bool QuickClient(const std::string &dir, int files)
{
    if (mkdir(dir.c_str(), 0755) != 0)
        return false;
    for (int i = 0; i < files; i++) {
        std::string p = dir + "/f" + std::to_string(i);
        int fd = open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0 || close(fd) != 0)
            return false;
        struct stat st;
        if (stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
            return false;
    }
    for (int i = 0; i < files; i++)
        if (unlink((dir + "/f" + std::to_string(i)).c_str()) != 0)
            return false;
    return rmdir(dir.c_str()) == 0;
}

}  // namespace

// Clients pinned to the same CPU, then spread: slow requests in flight on
// a CPU never leave the quick ones of that CPU unanswered.
TEST_F(MountTest, LoopServesSlowAndQuickClientsSharingCpus)
{
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int spread = 0; spread < 2; spread++) {
        std::atomic<int> failures{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < 4; t++) {
            ts.emplace_back([&, t] {
                if (!PinTo(spread ? t % ncpu : 0))
                    failures++;
                std::string tag = std::to_string(spread) + "-" + std::to_string(t);
                bool ok = t % 2 ? SlowClient(P("slow" + tag), 8) : QuickClient(P("quick" + tag), 300);
                if (!ok)
                    failures++;
            });
        }
        for (auto &th : ts)
            th.join();
        EXPECT_EQ(failures.load(), 0) << "spread " << spread;
    }
    struct stat st;
    ASSERT_EQ(stat(P("slow0-1").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 4096);
}
