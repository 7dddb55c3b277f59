// tests/e2e/libcisc/ctl_hostile_test.cc - no client can freeze the real
// device's control socket: clients that flood requests and never read
// their replies, one uid holding as many connections as it can, silent
// connections, and a `cisc down` from a user who may not stop the device.
// Every check that would hang on a frozen device runs under a bound (the
// test asserts completion, never a duration).
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <poll.h>
#include <sys/resource.h>

#include <algorithm>

namespace e2e {
namespace {

constexpr int kBound = 60;   // seconds a command may take before it counts as hung

// Runs a `cisc` command line, killed if it hangs.
RunResult Bounded(const std::string &cisc, const std::string &args)
{
    return Sh("timeout -k 5 " + std::to_string(kBound) + " " + cisc + " " + args);
}

std::string SockOf(const std::string &mnt)
{
    char sock[4096];
    return ctl_socket_path(mnt.c_str(), sock, sizeof(sock)) ? "" : sock;
}

// Raw control connections that send STATUS and PING requests until their
// sockets stay full, and never read a reply.
struct Flooders {
    std::vector<int> fds;
    ~Flooders()
    {
        for (int fd : fds)
            close(fd);
    }
    bool Open(const std::string &mnt, int n)
    {
        for (int i = 0; i < n; i++) {
            int fd = ctl_connect(SockOf(mnt).c_str());
            if (fd < 0 || fcntl(fd, F_SETFL, O_NONBLOCK))
                return false;
            fds.push_back(fd);
        }
        return true;
    }
    // Floods every connection; returns the requests sent.
    long Flood()
    {
        long sent = 0;
        for (int fd : fds) {
            for (int k = 0; k < 100000; k++) {
                uint16_t type = k % 2 ? CTL_PING : CTL_STATUS;
                int r = ctl_send_frame(fd, type, (uint32_t)k + 1, nullptr, 0, nullptr, 0, -1);
                struct pollfd p = { fd, POLLOUT, 0 };
                if (r == 0)
                    sent++;
                else if (r != -EAGAIN || poll(&p, 1, 200) <= 0)
                    break;   // stays full: the device stopped reading it
            }
        }
        return sent;
    }
    // All still connected: the device did not close them (a send finds no
    // room, or room, but not a closed peer).
    bool Connected()
    {
        for (int fd : fds) {
            int r = ctl_send_frame(fd, CTL_PING, 1, nullptr, 0, nullptr, 0, -1);
            if (r != 0 && r != -EAGAIN)
                return false;
        }
        return true;
    }
};

// Runs fn in a child process; its exit code, or -1 if it crashed or did
// not finish within the bound (then it is killed).
template <typename Fn>
int InChild(Fn fn)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn());
    int st = 0;
    for (int i = 0; i < kBound * 10; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        usleep(100000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

template <typename Fn>
bool WaitUntil(Fn cond, int tenths = kBound * 10)
{
    for (int i = 0; i < tenths; i++) {
        if (cond())
            return true;
        usleep(100000);
    }
    return cond();
}

// Microseconds of one CTL_STATUS round trip on a fresh connection (-1 on error).
long StatusUs(const std::string &sock)
{
    auto t0 = std::chrono::steady_clock::now();
    int fd = ctl_connect(sock.c_str());
    if (fd < 0)
        return -1;
    std::vector<char> text(CTL_MAX_PAYLOAD);
    int32_t st = 1;
    ssize_t n = ctl_call(fd, CTL_STATUS, nullptr, 0, &st, text.data(), text.size());
    close(fd);
    auto t1 = std::chrono::steady_clock::now();
    return n > 0 && st == 0
               ? (long)std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()
               : -1;
}

// p50 / max of 200 status round trips, for the log (nothing asserts them).
std::string StatusLatency(const std::string &sock)
{
    std::vector<long> us;
    for (int i = 0; i < 200; i++)
        us.push_back(StatusUs(sock));
    std::sort(us.begin(), us.end());
    if (us.front() < 0)
        return "errors";
    return "p50 " + std::to_string(us[us.size() / 2]) + " us, p99 " +
           std::to_string(us[us.size() * 99 / 100]) + " us, max " + std::to_string(us.back()) +
           " us";
}

class CtlHostile : public CiscTest {};

// A session open as its own process: 0 when it worked.
int OpenSession(const std::string &mnt)
{
    struct cisc_session *x;
    struct cisc_queue *y;
    if (cisc_session_open(mnt.c_str(), &x) || cisc_queue_create(x, &y))
        return 1;
    int r = cisc_nop(y) ? 2 : 0;
    cisc_session_close(x);
    return r;
}

TEST_F(CtlHostile, NonReadersDoNotFreezeOthers)
{
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    std::string sock = SockOf(mnt), quiet = StatusLatency(sock);
    Flooders f;
    ASSERT_TRUE(f.Open(mnt, 8));
    EXPECT_GT(f.Flood(), 0);
    RunResult r = Bounded(cisc, "status " + mnt);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("model"), std::string::npos) << r.out;
    std::string m = mnt;
    EXPECT_EQ(InChild([m] { return OpenSession(m); }), 0) << "a libcisc session opens";
    EXPECT_TRUE(f.Connected()) << "the flooders were still connected meanwhile";
    if (r.status == 0)
        printf("[ info     ] cisc status round trip: quiet %s; beside 8 flooders %s\n",
               quiet.c_str(), StatusLatency(sock).c_str());
    up = false;
    r = Bounded(cisc, "down " + mnt);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(WaitUntil([dev] { return kill(dev, 0) == -1; })) << "the device exits";
    EXPECT_FALSE(IsCiscMount(mnt));
}

TEST_F(CtlHostile, SigtermStopsTheDeviceBesideANonReader)
{
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    Flooders f;
    ASSERT_TRUE(f.Open(mnt, 1));
    EXPECT_GT(f.Flood(), 0);
    ASSERT_EQ(kill(dev, SIGTERM), 0);
    up = false;
    EXPECT_TRUE(WaitUntil([dev] { return kill(dev, 0) == -1; })) << "the device exits";
    EXPECT_FALSE(IsCiscMount(mnt));
}

// A process of uid `uid` holding as many control connections as the device
// admits (each checked with a PING), until told to let go.
struct Holder {
    pid_t pid = -1;
    int count = -1;
    int release = -1;

    void Start(const std::string &sock, uid_t uid, int max)
    {
        int up[2], down[2];
        if (pipe(up) || pipe(down))
            return;
        pid = fork();
        if (pid == 0) {
            // Keep only its two pipe ends (not the other holders' release ends).
            unsigned lo = (unsigned)std::min(up[1], down[0]);
            unsigned hi = (unsigned)std::max(up[1], down[0]);
            close_range(3, lo - 1, 0);   // (an empty range fails harmlessly)
            close_range(lo + 1, hi - 1, 0);
            close_range(hi + 1, ~0u, 0);
            struct rlimit rl;
            getrlimit(RLIMIT_NOFILE, &rl);
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            if (setgroups(0, nullptr) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
                _exit(99);
            int n = 0;
            for (; n < max; n++) {
                int fd = ctl_connect(sock.c_str());
                int32_t st = 1;
                char buf[8];
                if (fd < 0 || ctl_call(fd, CTL_PING, nullptr, 0, &st, buf, sizeof(buf)) < 0)
                    break;   // refused: the device closed it
            }
            if (write(up[1], &n, sizeof(n)) != sizeof(n))
                _exit(98);
            char x;
            while (read(down[0], &x, 1) > 0)
                ;
            _exit(0);
        }
        close(up[1]);
        close(down[0]);
        release = down[1];
        if (read(up[0], &count, sizeof(count)) != sizeof(count))
            count = -1;
        close(up[0]);
    }

    ~Holder()
    {
        if (release >= 0)
            close(release);
        if (pid > 0)
            waitpid(pid, nullptr, 0);
    }
};

TEST_F(CtlHostile, ConnectionHoardersCannotLockRootOut)
{
    struct rlimit rl;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < CTL_MAX_CONNS + 256)
        GTEST_SKIP() << "needs a descriptor limit above " << CTL_MAX_CONNS + 256;
    std::string sock = SockOf(mnt);
    long before = Status("ctl", "conns") - 1;   // without the status request's own
    EXPECT_GE(before, 0) << "cisc status shows the ctl line";
    // uid after uid takes all it can, more than the device's total at first
    std::vector<std::unique_ptr<Holder>> hold;
    long held = 0;
    for (uid_t uid = 30001; uid < 30001 + 12; uid++) {
        hold.push_back(std::make_unique<Holder>());
        hold.back()->Start(sock, uid, CTL_MAX_CONNS + 16);
        int n = hold.back()->count;
        ASSERT_GE(n, 0) << "uid " << uid;
        EXPECT_LE(n, CTL_MAX_PER_UID) << "uid " << uid;
        if (uid == 30001) {
            EXPECT_EQ(n, CTL_MAX_PER_UID) << "a uid gets its share";
        }
        held += n;
        if (n == 0)
            break;
    }
    if (before >= 0) {
        EXPECT_EQ(held + before, CTL_MAX_CONNS - CTL_RESERVED_CONNS) << "all but the reserve";
    }
    // root still gets in: status, a libcisc session, down
    RunResult r = Bounded(cisc, "status " + mnt);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Status("ctl", "conns"), CTL_MAX_CONNS - CTL_RESERVED_CONNS + 1);
    EXPECT_GE(Status("ctl", "refused"), (long long)hold.size());
    std::string m = mnt;
    EXPECT_EQ(InChild([m] { return OpenSession(m); }), 0);
    up = false;
    r = Bounded(cisc, "down " + mnt);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
}

TEST_F(CtlHostile, SilentConnectionIsClosed)
{
    int fd = ctl_connect(SockOf(mnt).c_str());
    ASSERT_GE(fd, 0);
    struct pollfd p = { fd, POLLRDHUP, 0 };
    auto closed = [&p] { return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP)); };
    EXPECT_TRUE(WaitUntil(closed))
        << "a connection that sends nothing is closed after " << CTL_IDLE_NEW_MS << " ms";
    close(fd);
    EXPECT_GE(Status("ctl", "idle_closed"), 1);
}

TEST_F(CtlHostile, DownByAnotherUserFailsAtOnce)
{
    std::string c = cisc, m = mnt;
    int r = AsUser([&] {
        RunResult d = Bounded(c, "down " + m);
        if (d.status == 124 || d.status == 128 + SIGKILL)
            return 1;   // hung
        if (d.status == 0)
            return 2;
        return d.out.find("Operation not permitted") == std::string::npos ? 3 : 0;
    });
    EXPECT_EQ(r, 0) << "1: hung, 2: succeeded, 3: no EPERM message";
    ExpectDeviceUp();
}

}  // namespace
}  // namespace e2e
