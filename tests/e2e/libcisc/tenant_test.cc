// tests/e2e/libcisc/tenant_test.cc - who a tenant is and what the device
// keeps of it, on a real device: with --tenant pid a multithreaded program
// using the FUSE mount is one tenant (its process, not each thread); a
// storm of short-lived processes leaves a bounded table of tenant
// accounts; `cisc top` shows tenants and their queues with op counts,
// latency percentiles and memory, as JSON and as a table.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include "device/sched/sched_int.h"   // the keep sizes

#include <sys/syscall.h>
#include <sys/wait.h>

#include <thread>
#include <vector>

namespace e2e {
namespace {

class CiscTenant : public CiscTest {
protected:
    // The device again with args, on a fresh mount point (as sched_test.cc).
    void Restart(const std::string &args)
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
        Down();
        mnt = dir + "/m2";
        ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
        Up(args);
        ASSERT_EQ(chmod(mnt.c_str(), 0777), 0);
    }

    // `cisc top --json`.
    std::string TopJson()
    {
        RunResult r = Sh(cisc + " top --json " + mnt);
        EXPECT_EQ(r.status, 0) << r.out;
        return r.out;
    }

    // A number of the JSON object that starts with `head` ("" if absent).
    static long long Field(const std::string &json, const std::string &head, const char *key)
    {
        size_t p = json.find(head);
        if (p == std::string::npos)
            return -1;
        size_t e = json.find('}', p);
        std::string obj = json.substr(p, e - p);
        size_t k = obj.find(std::string("\"") + key + "\":");
        return k == std::string::npos ? -1 : atoll(obj.c_str() + k + strlen(key) + 3);
    }
};

// Four threads of one process write through the mount: the device charges
// one tenant, the process, and none of the thread ids.
TEST_F(CiscTenant, ThreadsOfOneProcessAreOneTenantOnTheMount)
{
    Restart("--tenant pid --sched cfs");
    constexpr int kThreads = 4, kWrites = 50;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::string m = mnt;
    pid_t child = fork();
    if (child == 0) {
        close(fds[0]);
        std::vector<std::thread> ts;
        std::vector<pid_t> tids(kThreads);
        for (int i = 0; i < kThreads; i++)
            ts.emplace_back([&, i] {
                tids[i] = (pid_t)syscall(SYS_gettid);
                std::string path = m + "/t" + std::to_string(i);
                int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
                char buf[4096] = { 'x' };
                for (int k = 0; fd >= 0 && k < kWrites; k++)
                    if (pwrite(fd, buf, sizeof(buf), (off_t)k * 4096) != (ssize_t)sizeof(buf))
                        break;
                if (fd >= 0)
                    close(fd);
            });
        for (auto &t : ts)
            t.join();
        _exit(write(fds[1], tids.data(), sizeof(pid_t) * kThreads) ==
                      (ssize_t)(sizeof(pid_t) * kThreads)
                  ? 0
                  : 1);
    }
    close(fds[1]);
    std::vector<pid_t> tids(kThreads);
    ASSERT_EQ(read(fds[0], tids.data(), sizeof(pid_t) * kThreads),
              (ssize_t)(sizeof(pid_t) * kThreads));
    close(fds[0]);
    int st;
    ASSERT_EQ(waitpid(child, &st, 0), child);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    std::string json = TopJson();
    EXPECT_GE(Field(json, "{\"tenant\":" + std::to_string(child) + ",", "done"),
              kThreads * kWrites)
        << "every thread's writes charged to the process\n" << json;
    for (pid_t t : tids) {
        if (t != child) {
            EXPECT_EQ(json.find("{\"tenant\":" + std::to_string(t) + ","), std::string::npos)
                << "thread " << t << " is no tenant of its own\n" << json;
        }
    }
}

// Short-lived processes, each a tenant (--tenant pid) with a queue pair of
// its own and a file through the mount: their accounts are recycled, so
// the table stays bounded, and what remains is well formed.
TEST_F(CiscTenant, AStormOfShortLivedPidsLeavesABoundedTable)
{
    Restart("--tenant pid --sched cfs");
    constexpr int kProcs = 400;
    std::string m = mnt;
    for (int i = 0; i < kProcs; i++) {
        pid_t p = fork();
        if (p == 0) {
            struct cisc_session *ss;
            struct cisc_queue *qq;
            if (cisc_session_open(m.c_str(), &ss) || cisc_queue_create(ss, &qq) ||
                cisc_nop(qq))
                _exit(1);
            cisc_session_close(ss);
            std::string path = m + "/p" + std::to_string(getpid());   // and the mount
            int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
            _exit(fd >= 0 && close(fd) == 0 ? 0 : 2);
        }
        int st;
        ASSERT_EQ(waitpid(p, &st, 0), p);
        ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << i;
    }
    RunResult r = Sh(cisc + " top --json " + mnt);
    ASSERT_EQ(r.status, 0);
    long long tenants = Field(r.out, "\"accounts\":{", "tenants");
    long long queues = Field(r.out, "\"accounts\":{", "queues");
    long long freed = Field(r.out, "\"accounts\":{", "freed_tenants");
    EXPECT_GT(freed, 0) << r.out.substr(0, 300);
    EXPECT_LE(tenants, SCHED_KEEP_TENANTS + SCHED_KEEP_QUEUES + 8)
        << "the keep sizes plus the few busy ones";
    EXPECT_LE(queues, SCHED_KEEP_QUEUES + 8);
    EXPECT_GE(tenants + freed, kProcs) << "every process was a tenant";
    ExpectDeviceUp();
}

// `cisc top`: tenant and queue rows with counts, latency percentiles and
// memory; the JSON snapshot and the table agree on what is there.
TEST_F(CiscTenant, TopShowsTenantsAndQueuesWithLatency)
{
    Restart("--sched drf");
    struct cisc_session *ss;
    struct cisc_queue *q1, *q2;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &ss), 0);
    ASSERT_EQ(cisc_queue_create(ss, &q1), 0);
    ASSERT_EQ(cisc_queue_create(ss, &q2), 0);
    std::vector<char> buf(256 << 10, 'c');
    for (int i = 0; i < 40; i++) {
        struct cisc_vec v;
        cisc_vec_init(&v, i % 4 ? q1 : q2);   // q1 gets three in four
        cisc_vec_crc32c(&v, CISC_IN_BUF(buf.data(), buf.size()), 0);
        ASSERT_EQ(cisc_vec_submit(&v), 0);
        cisc_vec_free(&v);
    }
    // A completion is visible to the client a moment before the core that
    // ran it has closed its account (the reply goes first): wait until the
    // device has no command of ours running.
    std::string json = TopJson();
    for (int i = 0; i < 500 && Field(json, "{\"tenant\":0,", "running") != 0; i++) {
        usleep(10000);
        json = TopJson();
    }
    EXPECT_NE(json.find("\"policy\":\"drf\""), std::string::npos) << json;
    long long done = Field(json, "{\"tenant\":0,", "done");
    EXPECT_GE(done, 40) << json;
    long long p50 = Field(json, "{\"tenant\":0,", "p50_ns"),
              p99 = Field(json, "{\"tenant\":0,", "p99_ns");
    EXPECT_GT(p50, 0) << json;
    EXPECT_GE(p99, p50) << json;
    EXPECT_GT(Field(json, "{\"tenant\":0,", "mem_peak"), 0) << "fused ops hold device memory";
    // a row for each of the two queue pairs (queue 0 is the tenant's
    // requests on the mount, if any)
    long long pairs = 0, pair_done = 0;
    for (size_t a = json.find("{\"queue\":"); a != std::string::npos;
         a = json.find("{\"queue\":", a + 1)) {
        std::string row = json.substr(a, json.find('}', a) - a);
        if (Field(row, "{", "queue") == 0 || Field(row, "{", "tenant") != 0)
            continue;
        pairs++;
        pair_done += Field(row, "{", "done");
        EXPECT_GT(Field(row, "{", "p99_ns"), 0) << row;
    }
    EXPECT_EQ(pairs, 2) << json;
    EXPECT_EQ(pair_done, 40) << json;
    RunResult r = Sh(cisc + " top -n 2 -d 0.2 " + mnt);
    EXPECT_EQ(r.status, 0);
    for (const char *col : { "SHARE", "OPS/S", "P50_US", "P99_US", "MEM_KIB", "PEAK_KIB" }) {
        EXPECT_NE(r.out.find(col), std::string::npos) << col << "\n" << r.out;
    }
    EXPECT_NE(r.out.find("queues, interval"), std::string::npos) << r.out;
    // cisc status: one table row per tenant with its numbers
    r = Sh(cisc + " status " + mnt);
    EXPECT_EQ(r.status, 0);
    for (const char *col : { "vt_ms", "core_ms", "share", "mem_kib", "peak_kib", "waiting",
                             "throttled_ms", "terminated" }) {
        EXPECT_NE(r.out.find(col), std::string::npos) << col << "\n" << r.out;
    }
    EXPECT_NE(r.out.find("\n  root "), std::string::npos) << "tenant 0's row, by name\n" << r.out;
    // bad arguments change nothing and say why
    r = Sh(cisc + " top -d 0 " + mnt);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("-d wants"), std::string::npos) << r.out;
    cisc_session_close(ss);
}

}  // namespace
}  // namespace e2e
