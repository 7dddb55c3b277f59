// tests/e2e/libcisc/sched_test.cc - fairness across tenants on a real device
// (`cisc up --sched cfs`, one device core, slow cores): two real uids; the
// flooding one opens more queues and keeps many compute-heavy fused ops in
// flight, or floods the FUSE mount instead; the light one, one op at a time,
// is served as soon as it asks, and a busy one gets its fair half of the
// device core. Also: the tenant cap on queue
// pairs. Shares come from `cisc status` (device-core time per tenant).
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <cisc/fused.h>

#include <poll.h>
#include <sys/wait.h>

#include <chrono>
#include <vector>

namespace e2e {
namespace {

constexpr uid_t kFlood = 20001, kLight = 20002;
constexpr size_t kOpBytes = 64 << 10;
constexpr auto kRun = std::chrono::milliseconds(1500);

// Runs fn as uid in a child; returns its pid (not waited for).
template <class Fn> pid_t Spawn(uid_t uid, Fn fn)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, nullptr) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
            _exit(99);
        _exit(fn());
    }
    return pid;
}

int Wait(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

bool Before(std::chrono::steady_clock::time_point end)
{
    return std::chrono::steady_clock::now() < end;
}

// The light tenant: one queue, one checksum op at a time.
int Light(const std::string &mnt)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    if (cisc_session_open(mnt.c_str(), &s) || cisc_queue_create(s, &q))
        return 10;
    std::vector<char> buf(kOpBytes, 'l');
    auto end = std::chrono::steady_clock::now() + kRun;
    int bad = 0;
    while (Before(end) && !bad) {
        struct cisc_vec v;
        cisc_vec_init(&v, q);
        cisc_vec_crc32c(&v, CISC_IN_BUF(buf.data(), buf.size()), 0);
        bad = cisc_vec_submit(&v) != 0;
        cisc_vec_free(&v);
    }
    cisc_session_close(s);
    return bad ? 11 : 0;
}

// Keeps `depth` checksum ops in flight on each of `queues` queue pairs for
// `run`. With note >= 0, writes 'g' to it once all are in flight and 'e'
// when it stops submitting (its last ops still in flight).
int Keep(const std::string &mnt, int queues, int depth,
         std::chrono::milliseconds run = kRun, int note = -1)
{
    struct cisc_session *s;
    std::vector<struct cisc_queue *> q(queues);
    if (cisc_session_open(mnt.c_str(), &s))
        return 20;
    for (auto &x : q)
        if (cisc_queue_create(s, &x))
            return 21;
    std::vector<char> buf(kOpBytes, 'f');
    std::vector<struct cisc_vec> v(queues * depth);
    std::vector<bool> busy(v.size(), false);
    auto end = std::chrono::steady_clock::now() + run;
    bool going = false;
    // Waits (sleeps) for each op in turn and submits it again: the host's
    // CPUs stay free for the other tenant's client and the device.
    for (size_t i = 0; Before(end); i = (i + 1) % v.size()) {
        if (busy[i]) {
            cisc_vec_wait(&v[i]);
            cisc_vec_free(&v[i]);
        }
        cisc_vec_init(&v[i], q[i / depth]);
        cisc_vec_crc32c(&v[i], CISC_IN_BUF(buf.data(), buf.size()), 0);
        busy[i] = cisc_vec_submit_async(&v[i]) == 0;
        if (note >= 0 && !going && i + 1 == v.size()) {
            if (write(note, "g", 1) != 1)
                return 22;
            going = true;
        }
    }
    if (note >= 0 && write(note, "e", 1) != 1)
        return 23;
    for (size_t i = 0; i < v.size(); i++)
        if (busy[i]) {
            cisc_vec_wait(&v[i]);
            cisc_vec_free(&v[i]);
        }
    cisc_session_close(s);
    return 0;
}

// The flooder: four queues, each with eight checksum ops in flight.
int Flood(const std::string &mnt)
{
    return Keep(mnt, 4, 8);
}

// The flooder on the mount: large writes from four processes.
int FloodMount(const std::string &mnt)
{
    std::vector<pid_t> kids;
    for (int k = 0; k < 4; k++) {
        pid_t p = fork();
        if (p == 0) {
            std::string path = mnt + "/flood" + std::to_string(k);
            int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (fd < 0)
                _exit(30);
            std::vector<char> buf(128 << 10, 'm');
            auto end = std::chrono::steady_clock::now() + kRun;
            for (off_t off = 0; Before(end); off = (off + (off_t)buf.size()) % (8 << 20))
                if (pwrite(fd, buf.data(), buf.size(), off) != (ssize_t)buf.size())
                    _exit(31);
            close(fd);
            _exit(0);
        }
        kids.push_back(p);
    }
    int bad = 0;
    for (pid_t p : kids)
        bad |= Wait(p);
    return bad;
}

// The heavy tenant of the preemption test: one macro op compressing
// kBig bytes into a file (long at the device's slow core speed), then a
// second op that reads the file back, decompresses it and checks it is
// the input. Writes 'g' to note just before the first. Returns 0 when both
// succeed.
constexpr size_t kBig = 4 << 20;

int HeavyCompress(const std::string &mnt, int note)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    if (cisc_session_open(mnt.c_str(), &s) || cisc_queue_create(s, &q))
        return 40;
    std::vector<char> data(kBig);
    uint32_t x = 12345;   // a small alphabet, not a pattern: zstd works for it
    for (auto &c : data) {
        x = x * 1103515245u + 12345u;
        c = (char)('a' + ((x >> 16) & 15));
    }
    struct cisc_vec v;
    cisc_vec_init(&v, q);
    int f = cisc_vec_open(&v, "heavy.z", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int c = cisc_vec_compress(&v, CISC_IN_BUF(data.data(), data.size()), 3);
    cisc_vec_write(&v, f, 0, CISC_IN_STEP(c));
    if (write(note, "g", 1) != 1)
        return 41;
    int64_t st = cisc_vec_submit(&v);
    uint64_t zlen = cisc_vec_out_len(&v, c);
    cisc_vec_free(&v);
    if (st != 0 || zlen == 0 || zlen >= kBig)
        return 42;
    cisc_vec_init(&v, q);
    f = cisc_vec_open(&v, "heavy.z", O_RDONLY, 0);
    int r = cisc_vec_read(&v, f, 0, zlen);
    int d = cisc_vec_decompress(&v, CISC_IN_STEP(r), kBig);
    cisc_vec_verify(&v, d, CISC_IN_BUF(data.data(), data.size()));
    st = cisc_vec_submit(&v);
    cisc_vec_free(&v);
    cisc_session_close(s);
    return st == 0 ? 0 : 43;
}

// The light tenant of the preemption test: small checksum ops, one at a
// time, until `stop` reads end of file (its writer closed).
int LightUntil(const std::string &mnt, int stop)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    if (cisc_session_open(mnt.c_str(), &s) || cisc_queue_create(s, &q))
        return 50;
    std::vector<char> buf(4096, 'l');
    int bad = 0;
    for (;;) {
        struct pollfd p = { stop, POLLIN, 0 };
        if (poll(&p, 1, 0) != 0)
            break;
        struct cisc_vec v;
        cisc_vec_init(&v, q);
        cisc_vec_crc32c(&v, CISC_IN_BUF(buf.data(), buf.size()), 0);
        bad |= cisc_vec_submit(&v) != 0;
        cisc_vec_free(&v);
    }
    cisc_session_close(s);
    return bad ? 51 : 0;
}

class CiscSched : public CiscTest {
protected:
    void SetUp() override
    {
        MountTest::SetUp();   // no session of the test's own: two tenants only
    }
    void TearDown() override { MountTest::TearDown(); }

    // The device again with args, on a fresh mount point: the first
    // device's reaper may still be about to detach the old one.
    void Restart(const std::string &args)
    {
        Down();
        mnt = dir + "/m2";
        ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
        Up(args);
        ASSERT_EQ(chmod(mnt.c_str(), 0777), 0);
    }

    // A tenant's number from the status report.
    long long Of(uid_t uid, const char *key) { return Status("tenant " + std::to_string(uid), key); }

    // A tenant's number from a status report taken before (`cisc status
    // --raw`), so that several numbers come from one moment.
    static long long From(const std::string &raw, uid_t uid, const std::string &key)
    {
        std::string line = "\ntenant " + std::to_string(uid) + " ";
        size_t p = raw.find(line);
        if (p == std::string::npos)
            return -1;
        std::string l = raw.substr(p, raw.find('\n', p + 1) - p);
        size_t k = l.find(" " + key + " ");
        return k == std::string::npos ? -1 : atoll(l.c_str() + k + key.size() + 2);
    }
    std::string Raw() { return Sh(cisc + " status --raw " + mnt).out; }

    // The light tenant's ops were not left waiting while the flooder's ran:
    // on average fewer than `most` other items started while one of its
    // ops waited (first come first served: about as many as the flooder
    // keeps queued, 32).
    void ExpectLightServedPromptly(double most)
    {
        long long done = Of(kLight, "done"), over = Of(kLight, "overtaken");
        long long light = Of(kLight, "core_ns"), flood = Of(kFlood, "core_ns");
        ASSERT_GT(flood, 0) << "the flooder is charged, whichever door it used";
        ASSERT_GT(done, 5);
        EXPECT_LT((double)over / (double)done, most)
            << "overtaken " << over << " in " << done << " ops; core time: light " << light
            << " ns, flooder " << flood << " ns";
    }

    // The light tenant got at least `least` of the device core's time
    // while it had work on the device: its core time over the core time
    // everyone used while it had an op waiting or running (`backlog_ns`),
    // from one status report. The time its client spends between ops (a
    // loaded host) and the flooder's time alone do not count against it.
    void ExpectLightShare(double least)
    {
        std::string raw = Raw();
        long long light = From(raw, kLight, "core_ns"), flood = From(raw, kFlood, "core_ns");
        long long backlog = From(raw, kLight, "backlog_ns");
        ASSERT_GT(flood, 0) << "the flooder is charged, whichever door it used";
        ASSERT_GT(light, 0);
        ASSERT_GT(backlog, 0);
        EXPECT_GT((double)light / (double)backlog, least)
            << "core time: light " << light << " ns of " << backlog
            << " ns while it had work; flooder " << flood << " ns\n" << raw;
    }
};

TEST_F(CiscSched, MoreQueuesBuyTheFlooderNoShare)
{
    Restart("--cores 1 --sched cfs --core-speed 100");
    std::string m = mnt;
    pid_t f = Spawn(kFlood, [m] { return Flood(m); });
    pid_t l = Spawn(kLight, [m] { return Light(m); });
    EXPECT_EQ(Wait(l), 0);
    EXPECT_EQ(Wait(f), 0);
    ExpectLightServedPromptly(6);
}

// A tenant that keeps work on the device (one queue, four ops in flight)
// gets its fair part, half the one core, however many queues and ops the
// flooder keeps (4 x 8). Its share is measured by the device: its core
// time over the core time everyone used while it had ops waiting or
// running (`backlog_ns`), between two status reports (when it had all its
// ops in flight and when it stopped submitting). So a moment its client is
// slow to submit again (a loaded host) does not count against it, nor does
// the time `cisc status` takes to run; a margin below half for the
// flooder's op that holds the core when one of its ops arrives. First come
// first served gives it ~4/36.
TEST_F(CiscSched, TheFlooderCannotPushABusyTenantBelowItsFairPart)
{
    Restart("--cores 1 --sched cfs --core-speed 100");
    std::string m = mnt;
    int fp[2], lp[2];
    ASSERT_EQ(pipe(fp), 0);
    ASSERT_EQ(pipe(lp), 0);
    int fw = fp[1], lw = lp[1];
    pid_t f = Spawn(kFlood, [m, fw] { return Keep(m, 4, 8, std::chrono::seconds(4), fw); });
    close(fp[1]);
    char c = 0;
    ASSERT_EQ(read(fp[0], &c, 1), 1);   // the flooder is flooding
    pid_t l = Spawn(kLight, [m, lw] { return Keep(m, 1, 4, kRun, lw); });
    close(lp[1]);
    ASSERT_EQ(read(lp[0], &c, 1), 1);
    ASSERT_EQ(c, 'g');
    std::string r0 = Raw();
    ASSERT_EQ(read(lp[0], &c, 1), 1);
    ASSERT_EQ(c, 'e');
    std::string r1 = Raw();
    EXPECT_EQ(Wait(l), 0);
    EXPECT_EQ(Wait(f), 0);
    close(fp[0]);
    close(lp[0]);
    double light = (double)(From(r1, kLight, "core_ns") - From(r0, kLight, "core_ns"));
    double backlog = (double)(From(r1, kLight, "backlog_ns") - From(r0, kLight, "backlog_ns"));
    double flood = (double)(From(r1, kFlood, "core_ns") - From(r0, kFlood, "core_ns"));
    ASSERT_GT(flood, 0) << "the flooder was flooding throughout";
    ASSERT_GT(backlog, 0);
    EXPECT_GT(light / backlog, 0.3)
        << "while the light tenant had ops on the device: its core time " << light
        << " ns of " << backlog << " ns (flooder " << flood << " ns)";
}

// The mount's requests are charged to their caller like libcisc's: the
// flooder's many small writes are cheap, so cfs lets them pass the light
// tenant's ops once it has used more core time (the light one may be the
// heavier user here), but never so far that it falls below a fair part
// of the time it had work on the device (first come first served: ~0.1;
// cfs: 0.32 in a loaded ASan run where the whole-run share was 0.23).
TEST_F(CiscSched, TheMountIsChargedToItsCallerToo)
{
    Restart("--cores 1 --sched cfs --core-speed 100");
    std::string m = mnt;
    pid_t f = Spawn(kFlood, [m] { return FloodMount(m); });
    pid_t l = Spawn(kLight, [m] { return Light(m); });
    EXPECT_EQ(Wait(l), 0);
    EXPECT_EQ(Wait(f), 0);
    ExpectLightShare(0.25);
}

// Preemption at step boundaries: on one device core under cfs, a heavy
// tenant's multi-MiB compress op is parked at its preemption points (the
// core-speed model's slices) whenever the light tenant, with less virtual
// time, has an op waiting; the light tenant's small ops complete while
// the heavy op is in progress. Read from the device's accounting: between
// two status reports in both of which the heavy op is running and not
// done, the light tenant's done count grows (fifo: it cannot, the one
// core is the heavy op's until it ends). The heavy op's output is still
// right: read back, decompressed and compared with its input.
TEST_F(CiscSched, ALongCompressIsParkedForALightTenantsOps)
{
    Restart("--cores 1 --sched cfs --core-speed 30");   // fifo: during == 0
    std::string m = mnt;
    int hp[2], lp[2];
    ASSERT_EQ(pipe(hp), 0);
    ASSERT_EQ(pipe(lp), 0);
    int hr = hp[0], hw = hp[1], lr = lp[0], lw = lp[1];
    pid_t l = Spawn(kLight, [m, lr, lw, hr, hw] {
        close(lw);   // the test's: the light tenant stops when it closes
        close(hr);
        close(hw);
        return LightUntil(m, lr);
    });
    close(lp[0]);
    pid_t h = Spawn(kFlood, [m, hr, hw, lw] {
        close(lw);
        close(hr);
        return HeavyCompress(m, hw);
    });
    close(hp[1]);
    char c = 0;
    if (read(hp[0], &c, 1) != 1)
        c = 0;
    close(hp[0]);
    if (c != 'g') {
        close(lp[1]);
        FAIL() << "the heavy tenant could not start: " << Wait(h) << " " << Wait(l);
    }
    std::string raw;
    for (int i = 0; i < 400; i++) {   // until the heavy op is on the device
        raw = Raw();
        if (From(raw, kFlood, "running") == 1)
            break;
        usleep(5000);
    }
    bool started = From(raw, kFlood, "running") == 1;
    long long heavy_done = From(raw, kFlood, "done"), light0 = From(raw, kLight, "done");
    long long during = 0;
    for (int i = 0; started && i < 200 && during < 3; i++) {
        std::string now = Raw();
        if (From(now, kFlood, "done") != heavy_done || From(now, kFlood, "running") != 1)
            break;   // the heavy op ended: what came before counts
        during = From(now, kLight, "done") - light0;
        raw = now;
    }
    close(lp[1]);   // the light tenant stops
    EXPECT_EQ(Wait(h), 0) << "the heavy op's output reads back as its input";
    EXPECT_EQ(Wait(l), 0);
    ASSERT_TRUE(started) << "the heavy op was never seen on the device\n" << raw;
    EXPECT_GE(during, 3) << "light ops done while the heavy op was on the one core\n" << raw;
    // the heavy op was parked; the light tenant's ops may be too, in the
    // model's sleep after their work, while the heavy tenant is behind
    EXPECT_GE(Of(kFlood, "preempted"), 1);
}

TEST_F(CiscSched, QueuePairsPerTenantAreCapped)
{
    Restart("--max-queues-per-tenant 2");
    std::string m = mnt;
    int r = AsUser(
        [m] {
            struct cisc_session *a, *b;
            struct cisc_queue *q1, *q2, *q3;
            if (cisc_session_open(m.c_str(), &a) || cisc_session_open(m.c_str(), &b))
                return 1;
            if (cisc_queue_create(a, &q1) || cisc_queue_create(b, &q2))
                return 2;
            int over = cisc_queue_create(a, &q3);   // a third, in either session
            cisc_queue_destroy(q1);
            int again = cisc_queue_create(b, &q3);   // one closed: room again
            cisc_session_close(a);
            cisc_session_close(b);
            return over == -EDQUOT && again == 0 ? 0 : 3;
        },
        kLight, kLight);
    EXPECT_EQ(r, 0);
    // another tenant is not affected
    struct cisc_session *s;
    struct cisc_queue *q1, *q2;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    EXPECT_EQ(cisc_queue_create(s, &q1), 0);
    EXPECT_EQ(cisc_queue_create(s, &q2), 0);
    cisc_session_close(s);
}

TEST_F(CiscSched, WeightsAreSetByRootOnlyAndShown)
{
    Restart("--sched drf");
    RunResult r = Sh(cisc + " tenant set " + mnt + " 4242 --weight 300");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Of(4242, "weight"), 300);
    for (const char *bad : { "0", "10001", "x" }) {
        r = Sh(cisc + " tenant set " + mnt + " 4242 --weight " + bad);
        EXPECT_EQ(r.status, 2) << bad;
        EXPECT_NE(r.out.find("--weight wants 1..10000"), std::string::npos) << r.out;
    }
    std::string c = cisc, m = mnt;
    int st = AsUser([c, m] {
        return WEXITSTATUS(system((c + " tenant set " + m + " 4242 --weight 1 2>/dev/null").c_str()));
    }, kLight, kLight);
    EXPECT_EQ(st, 2) << "a user may not set weights";
    EXPECT_EQ(Of(4242, "weight"), 300) << "nothing changed";
    // top: one JSON snapshot with the tenant and the policy
    r = Sh(cisc + " top --json " + mnt);
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("\"policy\":\"drf\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("{\"tenant\":4242,\"weight\":300,"), std::string::npos) << r.out;
    r = Sh(cisc + " top -n 1 -d 0.2 " + mnt);
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("SHARE"), std::string::npos) << r.out;
    // tenants by name: root's request through the mount makes uid 0 one;
    // 4242 has no user name and stays a number; --json keeps the ids
    int fd = open((mnt + "/by-root").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
    r = Sh(cisc + " top --json " + mnt);
    EXPECT_NE(r.out.find("\"tenant_by\":\"uid\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("{\"tenant\":0,\"weight\":100,\"queues\":0,\"name\":\"root\","),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"name\":\"4242\""), std::string::npos) << r.out;
    r = Sh(cisc + " top -n 1 -d 0.2 " + mnt);
    EXPECT_NE(r.out.find("\nroot "), std::string::npos) << r.out;
}

// A runaway fused op on a real device: stopped at its next step with
// -ETIME, nothing it did stays, its tenant's terminated count shows it.
TEST_F(CiscSched, RunawayOpIsTerminatedAndChangesNothing)
{
    Restart("--op-time-limit-ms 1 --core-speed 200");
    struct cisc_session *s;
    struct cisc_queue *q;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    std::vector<char> big(1 << 20, 'r');
    struct cisc_vec v;
    cisc_vec_init(&v, q);
    int o = cisc_vec_open(&v, "made-by-runaway", O_CREAT | O_WRONLY, 0644);
    cisc_vec_write(&v, o, 0, CISC_IN_BUF("x", 1));
    int c = cisc_vec_crc32c(&v, CISC_IN_BUF(big.data(), big.size()), 0);   // > 1 ms here
    int w = cisc_vec_write(&v, o, 0, CISC_IN_STEP(c));
    EXPECT_EQ(cisc_vec_submit(&v), -ETIME);
    EXPECT_TRUE(cisc_vec_ret(&v, w) == -ETIME || cisc_vec_ret(&v, c) == -ETIME);
    cisc_vec_free(&v);
    struct stat st;
    EXPECT_NE(stat((mnt + "/made-by-runaway").c_str(), &st), 0) << "rolled back";
    EXPECT_EQ(Of(0, "terminated"), 1);
    EXPECT_EQ(cisc_nop(q), 0) << "the device goes on";
    cisc_session_close(s);
}

// The same, as a tenant other than root, over a file with contents: the
// op writes the file, then runs a step far longer than the limit; it
// stops with -ETIME, the file keeps its old contents and size, and the
// tenant is charged the core time it used and counted as terminated.
TEST_F(CiscSched, RunawayOpOfAUserLeavesTheFileAsItWas)
{
    Restart("--op-time-limit-ms 1 --core-speed 200");
    const std::string old(5000, 'o');
    std::string m = mnt, path = mnt + "/kept";
    int r = AsUser(
        [m, old] {
            struct cisc_session *s;
            struct cisc_queue *q;
            if (cisc_session_open(m.c_str(), &s) || cisc_queue_create(s, &q))
                return 1;
            uint64_t fh;
            if (cisc_open(q, "kept", O_CREAT | O_WRONLY, 0644, &fh) ||
                cisc_pwrite(q, fh, old.data(), old.size(), 0) != (ssize_t)old.size() ||
                cisc_close(q, fh))
                return 2;
            std::vector<char> big(4 << 20, 'r');
            struct cisc_vec v;
            cisc_vec_init(&v, q);
            int o = cisc_vec_open(&v, "kept", O_WRONLY | O_TRUNC, 0);
            cisc_vec_write(&v, o, 0, CISC_IN_BUF("new contents", 12));
            int c = cisc_vec_crc32c(&v, CISC_IN_BUF(big.data(), big.size()), 0);
            cisc_vec_append(&v, o, CISC_IN_STEP(c));
            int64_t got = cisc_vec_submit(&v);
            cisc_vec_free(&v);
            int alive = cisc_nop(q);
            cisc_session_close(s);
            return got == -ETIME && alive == 0 ? 0 : 3;
        },
        kLight, kLight);
    EXPECT_EQ(r, 0) << "the op stops with -ETIME and the device goes on";
    EXPECT_EQ(ReadFile(path), old) << "rolled back: old contents and size";
    // the reply goes before the core closes the op's account
    for (int i = 0; i < 500 && Of(kLight, "running") != 0; i++)
        usleep(10000);
    EXPECT_EQ(Of(kLight, "terminated"), 1);
    EXPECT_GT(Of(kLight, "core_ns"), 1000000) << "charged for what it used (> the 1 ms limit)";
}

}  // namespace
}  // namespace e2e
