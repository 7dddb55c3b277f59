// tests/e2e/libcisc/wait_test.cc - how both ends of a queue pair wait, on
// a real device: a spinner that is descheduled while it spins (a CPU hog
// pinned beside it) gives its CPU back and holds off (common/spin.h), on
// the device's poller and on the client; a poller does not spin while all
// a queue has are commands in flight on the device cores, and their
// completion rings it awake; a client sleeping until a completion's
// arrival keeps the application's timer slack; a command published by a
// client that died still runs.
#include "tests/e2e/libcisc/cisc_fixture.h"

extern "C" {
#include "common/clock.h"
#include "libcisc/client_int.h"
}

#include <dirent.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <atomic>

namespace e2e {
namespace {

// The CPUs this process may run on.
std::vector<int> AllowedCpus()
{
    cpu_set_t set;
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                cpus.push_back(c);
    return cpus;
}

// Sends SIGSTOP to pid and waits until every one of its threads is
// stopped (the signal is delivered asynchronously: a device thread may
// still fetch and complete commands for a moment after kill returns).
bool StopAll(pid_t pid)
{
    if (kill(pid, SIGSTOP) != 0)
        return false;
    std::string dir = "/proc/" + std::to_string(pid) + "/task";
    for (int i = 0; i < 2000; i++) {
        bool all = true;
        DIR *d = opendir(dir.c_str());
        if (!d)
            return false;
        while (struct dirent *e = readdir(d)) {
            if (e->d_name[0] == '.')
                continue;
            char state = ProcState(dir + "/" + e->d_name + "/stat");
            all = all && (state == 'T' || state == 't');
        }
        closedir(d);
        if (all)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

bool Pin(pid_t tid, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(tid, sizeof(one), &one) == 0;
}

// Pins every thread of process pid to cpu. Returns how many.
int PinProcess(pid_t pid, int cpu)
{
    int n = 0;
    std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR *d = opendir(dir.c_str());
    for (struct dirent *e; d && (e = readdir(d)) != nullptr;)
        if (e->d_name[0] != '.' && Pin(atoi(e->d_name), cpu))
            n++;
    if (d)
        closedir(d);
    return n;
}

// A child process that burns cpu until killed.
pid_t Hog(int cpu)
{
    pid_t pid = fork();
    if (pid == 0) {
        Pin(0, cpu);
        for (volatile unsigned long x = 0;; x++) {
        }
    }
    return pid;
}

void Kill(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
}

class Wait : public CiscTest {
protected:
    cpu_set_t affinity_;

    void SetUp() override
    {
        ASSERT_EQ(sched_getaffinity(0, sizeof(affinity_), &affinity_), 0);
        CiscTest::SetUp();
    }

    void TearDown() override
    {
        sched_setaffinity(0, sizeof(affinity_), &affinity_);   // this thread was pinned
        CiscTest::TearDown();
    }
};

// The device pinned to one CPU with a hog: its poller, spinning between
// NOPs, is descheduled again and again, notices it (a gap between two
// rounds of its spin) and holds off. Fails when the poller never checks.
TEST_F(Wait, APollerDescheduledWhileSpinningHoldsOff)
{
    std::vector<int> cpus = AllowedCpus();
    ASSERT_FALSE(cpus.empty());
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    ASSERT_GT(PinProcess(dev, cpus[0]), 0);
    // Counted from here: under a parallel test run the poller may already
    // have been descheduled once while the device started.
    long long before = Status("qp", "contended");
    pid_t hog = Hog(cpus[0]);
    ASSERT_GT(hog, 0);
    if (cpus.size() > 1)
        Pin(0, cpus[1]);   // this thread beside, not on top
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int ops = 0;
    while (Status("qp", "contended") <= before && std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 200; i++, ops++)
            ASSERT_EQ(cisc_nop(q), 0);
    }
    Kill(hog);
    EXPECT_GT(Status("qp", "contended"), before) << ops << " NOPs";
    EXPECT_EQ(cisc_nop(q), 0);
}

// The client pinned with a hog, waiting with a 5 s spin budget for a
// completion that takes 300 ms (the device is stopped): it is descheduled
// while it spins, notices, and sleeps on the completion ring instead
// (WAITING announced) until the device answers. Fails when the client
// spins its whole budget.
TEST_F(Wait, AClientDescheduledWhileSpinningSleeps)
{
    std::vector<int> cpus = AllowedCpus();
    ASSERT_FALSE(cpus.empty());
    struct cisc_queue *slow = nullptr;
    struct cisc_queue_params p = {};
    p.spin_ns = 4000000000u;   // 4 s: never reached
    ASSERT_EQ(cisc_queue_create_params(s, &p, &slow), 0);
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    if (cpus.size() > 1)
        PinProcess(dev, cpus[1]);   // the device off the contended CPU
    ASSERT_TRUE(Pin(0, cpus[0]));
    pid_t hog = Hog(cpus[0]);
    ASSERT_GT(hog, 0);
    ASSERT_EQ(cisc_nop(slow), 0);   // warm
    // every device thread stopped before the NOP is submitted: SIGSTOP is
    // delivered asynchronously, and a device thread still running on the
    // other CPU answered the NOP at once (no spin, no gap) in one CI run
    bool stopped = StopAll(dev);
    std::atomic<bool> saw_waiting{false};
    std::thread cont([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        saw_waiting = __atomic_load_n(slow->kcq_flags, __ATOMIC_RELAXED) & WIRE_CQ_WAITING;
        kill(dev, SIGCONT);
    });
    EXPECT_TRUE(stopped);
    EXPECT_EQ(cisc_nop(slow), 0);
    cont.join();
    Kill(hog);
    // Descheduled at least once (here, or in the warm-up: then it was
    // holding off, and spun only briefly), and asleep, not spinning.
    EXPECT_GE(slow->gov.gaps, 1u);
    EXPECT_TRUE(saw_waiting.load()) << "the client was still spinning after 300 ms";
}

// A fused write + fsync on a slow device core (core speed 200: the op
// runs for a while on a core): while it is in flight its queue sleeps
// (NEED_WAKEUP), though the poller's window is a full second; when it
// completes, the completion rings the queue awake. The poller never holds
// off here (CISC_QP_NO_HOLDOFF: this host may be loaded, and a poller
// holding off is rung by no completion). Fails when the poller spins the
// window over in-flight work, or when nothing rings it.
TEST_F(Wait, APollerSleepsOverInFlightWorkAndTheCompletionRingsIt)
{
    setenv("CISC_QP_NO_HOLDOFF", "1", 1);   // `cisc up` passes it to the device
    Restart("--core-speed 200 --poll-us 1000000");
    unsetenv("CISC_QP_NO_HOLDOFF");
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "inflight", O_CREAT | O_RDWR, 0644, &fh), 0);
    void *buf;
    ASSERT_EQ(cisc_buf_alloc(q, 1 << 20, &buf), 0);
    memset(buf, 'x', 1 << 20);
    long long rings = Status("qp", "done_rings");
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_fh(&v, fh);
    ASSERT_GE(cisc_vec_write(&v, f, 0, CISC_IN_BUF(buf, 1 << 20)), 0);
    ASSERT_GE(cisc_vec_fsync(&v, f, 0), 0);
    ASSERT_EQ(cisc_vec_submit_async(&v), 0);
    bool asleep = false;
    int64_t st;
    while ((st = cisc_vec_poll(&v)) == -EAGAIN)
        asleep |= (__atomic_load_n(q->ksq_flags, __ATOMIC_RELAXED) & WIRE_SQ_NEED_WAKEUP) != 0;
    EXPECT_EQ(st, 0);
    cisc_vec_free(&v);
    EXPECT_TRUE(asleep) << "the queue was swept while its op was in flight";
    // Rung awake (the ring follows the completion): active for the
    // window, a second, after it.
    bool awake = false;
    for (int i = 0; i < 500 && !awake; i++) {
        awake = !(__atomic_load_n(q->ksq_flags, __ATOMIC_RELAXED) & WIRE_SQ_NEED_WAKEUP);
        if (!awake)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(awake);
    EXPECT_GE(Status("qp", "done_rings"), rings + 1);
    EXPECT_EQ(cisc_nop(q), 0);
}

// Completions a full link latency (1 ms) ahead are slept for, not spun:
// the thread's timer slack is cut for the sleep and put back after, so
// the application's own setting survives every call.
TEST_F(Wait, SleepingForAnArrivalKeepsTheTimerSlack)
{
    Restart("--link-latency-ns 1000000");
    ASSERT_EQ(prctl(PR_SET_TIMERSLACK, 123456UL, 0, 0, 0), 0);
    uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns();
    for (int i = 0; i < 20; i++)
        ASSERT_EQ(cisc_nop(q), 0);
    uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, wall = now_ns() - t0;
    EXPECT_EQ(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 123456);
    EXPECT_GE(wall, 20u * 2000000u);   // the model: two crossings of 1 ms each
    // Spinning would burn about the whole wall time.
    EXPECT_LT(cpu, wall / 4) << cpu << " ns of CPU over " << wall << " ns";
    prctl(PR_SET_TIMERSLACK, 0UL, 0, 0, 0);
}

// A client publishes a command to a queue its poller put to sleep and
// dies before ringing (its connection closes): the session's end still
// has the command fetched and run (queue.h invariant 7), so what a client
// submitted survives it. Fails when the end drops unfetched commands.
TEST_F(Wait, ACommandPublishedByAClientThatDiedStillRuns)
{
    auto raw = std::make_unique<RawQp>();
    ASSERT_EQ(raw->Open(mnt), 0);
    bool asleep = false;   // the poller's window (50 us) passes
    for (int i = 0; i < 5000 && !asleep; i++) {
        asleep = __atomic_load_n(&raw->hdr->sq_flags, __ATOMIC_ACQUIRE) & WIRE_SQ_NEED_WAKEUP;
        if (!asleep)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(asleep);
    const std::string name = "published-then-died";
    memcpy(raw->arena, name.data(), name.size());
    struct wire_sqe e = {};
    e.opcode = WIRE_OP_MKDIR;
    e.len = name.size();
    e.mode = 0755;
    raw->Put(e);
    __atomic_store_n(&raw->hdr->sq_tail, raw->sq_tail, __ATOMIC_RELEASE);   // no doorbell
    raw.reset();   // the connection closes: the session ends
    struct stat st;
    bool made = false;
    for (int i = 0; i < 500 && !made; i++) {
        made = stat(P(name).c_str(), &st) == 0;
        if (!made)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(made);
    EXPECT_TRUE(made && S_ISDIR(st.st_mode));
    EXPECT_EQ(cisc_nop(q), 0);
}

// Two completions in the CQ, the first stamped to arrive 300 ms from now,
// the second already arrived (the flash model stamps each with its own
// media time, so posting order is not arrival order): the second is the
// caller's at once, the first only once its stamp passed. The test plays
// the device (stopped, so that it writes nothing meanwhile) on a queue of
// its own. Fails when the client reaps in ring order only.
TEST_F(Wait, ACompletionThatArrivedDoesNotWaitBehindOneThatHasNot)
{
    struct cisc_queue *w = nullptr;
    ASSERT_EQ(cisc_queue_create(s, &w), 0);
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    ASSERT_TRUE(StopAll(dev));   // no device thread may still post a completion
    struct wire_sqe nop[2] = {};
    uint64_t tok[2];
    EXPECT_EQ(lc_submit(w, nop, 2, tok), 2);
    struct wire_cqe *cq = const_cast<struct wire_cqe *>(w->cq);
    uint32_t t = __atomic_load_n(w->kcq_tail, __ATOMIC_RELAXED);
    cq[t & w->cq_mask] = { tok[0], 0, 0, WIRE_CQE_ARRIVE, (uint32_t)(now_ns() + 300000000) };
    cq[(t + 1) & w->cq_mask] = { tok[1], 0, 0, 0, 0 };
    __atomic_store_n(w->kcq_tail, t + 2, __ATOMIC_RELEASE);
    struct wire_cqe c;
    EXPECT_EQ(lc_peek(w, tok[1], &c), 0);   // arrived: not behind the first
    EXPECT_EQ(lc_peek(w, tok[0], &c), -EAGAIN);
    uint64_t t0 = now_ns();
    EXPECT_EQ(lc_wait(w, tok[0], &c), 0);
    EXPECT_GE(now_ns() - t0, 250000000u) << "reported before its arrival";
    EXPECT_EQ(w->inflight, 0u);
    // The device never fetches the two NOPs (the client consumed CQ slots
    // the device did not fill: no room as it counts), and the session's
    // end gives up draining them after 50 ms without progress.
    kill(dev, SIGCONT);
    EXPECT_EQ(cisc_nop(q), 0);   // the other queues are served
}

}  // namespace
}  // namespace e2e
