// tests/unit/queue/service_test.cc - the queue service's session list
// (device/queue/queue.h): what `cisc status` reads of it (qp_service_stats)
// stays valid while sessions end on another thread, as when a client with
// many sessions dies and the device tears them down.
#include <gtest/gtest.h>

#include "device/engine/engine.h"
#include "device/queue/queue.h"
#include "tests/unit/engine/eng_image.h"

#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

class QueueService : public ::testing::Test {
protected:
    std::string path;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct qp_service *svc = nullptr;

    void SetUp() override
    {
        MakeMountedImage("/tmp/ciscfs-qsvc-XXXXXX", &path, &fs);
        if (HasFatalFailure())
            return;
        struct eng_config cfg = { 2, "fifo" };
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
        struct qp_config qc = { 1, 0 };
        ASSERT_EQ(qp_service_create(eng, &qc, &svc), 0);
    }

    void TearDown() override
    {
        qp_service_destroy(svc);
        eng_destroy(eng);
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        unlink(path.c_str());
    }
};

// Sessions (each with a queue pair) end one after another while another
// thread reads the service's statistics without pause: the statistics
// walk the session list and each session's handle table, so a session
// must leave the list before its table goes (a status answered during a
// mass teardown used to lock a freed table's mutex: heap corruption,
// caught here by ASan). Every count read stays within what exists.
TEST_F(QueueService, StatsWhileSessionsEnd)
{
    const int kRounds = 40, kSessions = 64;
    struct eng_cred cred = {};
    std::atomic<bool> done{ false };
    std::atomic<long> reads{ 0 };
    std::thread reader([&] {
        while (!done.load()) {
            struct qp_stats st;
            qp_service_stats(svc, &st);
            EXPECT_LE(st.sessions, (uint64_t)kSessions);
            EXPECT_EQ(st.handles, 0u);
            reads++;
        }
    });
    for (int round = 0; round < kRounds && !HasFailure(); round++) {
        std::vector<struct qp_session *> ss;
        for (int i = 0; i < kSessions; i++) {
            struct qp_session *s;
            ASSERT_EQ(qp_session_create(svc, &cred, &s), 0);
            struct qp_geom g = {};
            g.sq_entries = 4;
            g.arena_size = 64 << 10;
            int fd = -1;
            uint32_t id = 0;
            ASSERT_EQ(qp_create(s, &g, &fd, &id), 0);
            close(fd);
            ss.push_back(s);
        }
        for (auto *s : ss)
            qp_session_destroy(s);
    }
    done = true;
    reader.join();
    EXPECT_GT(reads.load(), 0);
    struct qp_stats st;
    qp_service_stats(svc, &st);
    EXPECT_EQ(st.sessions, 0u);
    EXPECT_EQ(st.queues, 0u);
}

}  // namespace
