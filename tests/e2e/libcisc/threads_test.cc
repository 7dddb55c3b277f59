// tests/e2e/libcisc/threads_test.cc - many threads, each with its own
// queue pair, on different files and on the same file; several sessions
// at once; completions routed to the right waiter.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <atomic>
#include <map>
#include <set>

namespace e2e {
namespace {

using Threads = CiscTest;

constexpr int kThreads = 8;

static std::string Block(int t, int i, size_t n)
{
    std::string b(n, '\0');
    for (size_t k = 0; k < n; k++)
        b[k] = (char)('A' + (t * 31 + i * 7 + (int)k) % 26);
    return b;
}

TEST_F(Threads, DifferentFiles)
{
    std::atomic<int> errors{ 0 };
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&, t] {
            struct cisc_queue *tq;
            if (cisc_queue_create(s, &tq)) {
                errors++;
                return;
            }
            std::string name = "file" + std::to_string(t);
            uint64_t fh;
            if (cisc_open(tq, name.c_str(), O_CREAT | O_RDWR, 0644, &fh)) {
                errors++;
                return;
            }
            for (int i = 0; i < 128; i++) {
                std::string b = Block(t, i, 4096);
                errors += cisc_pwrite(tq, fh, b.data(), b.size(), (uint64_t)i * 4096) != 4096;
            }
            for (int i = 0; i < 128; i++) {
                std::string b(4096, '\0');
                errors += cisc_pread(tq, fh, &b[0], 4096, (uint64_t)i * 4096) != 4096 ||
                          b != Block(t, i, 4096);
            }
            errors += cisc_close(tq, fh) != 0;
            cisc_queue_destroy(tq);
        });
    }
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    for (int t = 0; t < kThreads; t++) {
        std::string f = ReadFile(P("file" + std::to_string(t)));
        ASSERT_EQ(f.size(), 128u * 4096);
        EXPECT_EQ(f.substr(77 * 4096, 4096), Block(t, 77, 4096));
    }
}

TEST_F(Threads, SameFileRegionsAndAppends)
{
    Put("shared", "");
    Put("log", "");
    std::atomic<int> errors{ 0 };
    std::vector<std::thread> ts;
    constexpr int kRecords = 300;
    constexpr size_t kRec = 64;
    std::vector<std::vector<uint64_t>> offsets(kThreads);
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&, t] {
            struct cisc_queue *tq;
            uint64_t fh, lh;
            if (cisc_queue_create(s, &tq) || cisc_open(tq, "shared", O_RDWR, 0, &fh) ||
                cisc_open(tq, "log", O_WRONLY | O_APPEND, 0, &lh)) {
                errors++;
                return;
            }
            for (int i = 0; i < kRecords; i++) {
                std::string b = Block(t, i, 1000);   // region t, unaligned size
                errors += cisc_pwrite(tq, fh, b.data(), b.size(),
                                      (uint64_t)(t * kRecords + i) * 1000) != 1000;
                char rec[kRec];
                memset(rec, '.', sizeof(rec));
                int n = snprintf(rec, sizeof(rec), "t%d seq%d", t, i);
                rec[n] = '.';
                rec[kRec - 1] = '\n';
                uint64_t at = ~0ull;
                errors += cisc_append(tq, lh, rec, sizeof(rec), &at) != (ssize_t)kRec;
                offsets[t].push_back(at);
            }
            errors += cisc_close(tq, fh) != 0 || cisc_close(tq, lh) != 0;
            cisc_queue_destroy(tq);
        });
    }
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    std::string f = ReadFile(P("shared"));
    ASSERT_EQ(f.size(), (size_t)kThreads * kRecords * 1000);
    for (int t = 0; t < kThreads; t++)
        for (int i = 0; i < kRecords; i += 37)
            EXPECT_EQ(f.substr((size_t)(t * kRecords + i) * 1000, 1000), Block(t, i, 1000));
    // The log holds every record exactly once, whole, where append said.
    std::string log = ReadFile(P("log"));
    ASSERT_EQ(log.size(), (size_t)kThreads * kRecords * kRec);
    std::set<uint64_t> seen;
    for (int t = 0; t < kThreads; t++) {
        for (int i = 0; i < kRecords; i++) {
            uint64_t at = offsets[t][i];
            ASSERT_EQ(at % kRec, 0u);
            ASSERT_TRUE(seen.insert(at).second) << "two appends at " << at;
            std::string want = "t" + std::to_string(t) + " seq" + std::to_string(i) + ".";
            EXPECT_EQ(log.substr(at, want.size()), want);
        }
    }
}

TEST_F(Threads, ManySessionsAtOnce)
{
    std::atomic<int> errors{ 0 };
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&, t] {
            struct cisc_session *ts_;
            struct cisc_queue *tq;
            if (cisc_session_open(mnt.c_str(), &ts_) || cisc_queue_create(ts_, &tq)) {
                errors++;
                return;
            }
            for (int i = 0; i < 50; i++) {
                std::string name = "s" + std::to_string(t) + "-" + std::to_string(i);
                Put(name, name, tq);
                errors += Get(name, tq) != name;
                errors += cisc_unlink(tq, name.c_str()) != 0;
            }
            cisc_session_close(ts_);
        });
    }
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_TRUE(WaitStatus("qp", "sessions", 1));
}

}  // namespace
}  // namespace e2e
