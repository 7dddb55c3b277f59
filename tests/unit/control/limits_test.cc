// tests/unit/control/limits_test.cc - no client can stall the control
// thread: a client that never reads its replies is queued, then closed,
// while others are served; queued replies keep their descriptors;
// connections are limited per uid with a reserve for root and the owner;
// connections without a session are closed when idle.
#include <gtest/gtest.h>

#include "common/le.h"
#include "device/control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Dir {
    std::string dir, path;
    Dir()
    {
        char t[] = "/tmp/ciscfs-ctl-XXXXXX";
        dir = mkdtemp(t) ? t : "";
        path = dir + "/.m.cisc.sock";
    }
    ~Dir() { rmdir(dir.c_str()); }
};

struct Sessions {
    std::atomic<int> closed{ 0 };
    int token = 0;
    std::mutex mu;
    std::vector<struct ctl_later> later;   // requests of type 99, to answer by hand
};

// CTL_SESSION (and QP_CREATE) open a session; QP_CREATE replies with 16 KiB
// (a few fill the socket) and a pipe's read end holding "fd!"; SHUTDOWN is
// deferred; PING echoes.
int Handler(void *arg, struct ctl_req *req)
{
    auto *s = static_cast<Sessions *>(arg);
    if (req->type == CTL_SESSION || req->type == CTL_QP_CREATE)
        *req->session = &s->token;
    if (req->type == CTL_SHUTDOWN)
        return CTL_DEFER;
    if (req->type == 99) {
        struct ctl_later l;
        ctl_later(req, &l);
        std::lock_guard<std::mutex> g(s->mu);
        s->later.push_back(l);
        return 0;
    }
    if (req->type != CTL_QP_CREATE)
        return ctl_reply(req, 0, req->payload, req->len), 0;
    int p[2];
    if (pipe(p))
        return ctl_reply(req, -errno, nullptr, 0), 0;
    if (write(p[1], "fd!", 3) != 3)
        return ctl_reply(req, -EIO, nullptr, 0), 0;
    static const std::string big(16384, 'x');
    ctl_reply_fd(req, 0, big.data(), big.size(), p[0]);
    close(p[0]);
    close(p[1]);
    return 0;
}

void CloseHook(void *arg, void *session)
{
    (void)session;
    static_cast<Sessions *>(arg)->closed++;
}

struct Server {
    Sessions s;
    struct ctl *c = nullptr;
    int Start(const std::string &path, const struct ctl_limits *lim)
    {
        int r = ctl_create(path.c_str(), lim, Handler, &s, &c);
        if (!r)
            ctl_set_close_hook(c, CloseHook);
        return r;
    }
    struct ctl_stats Stop()
    {
        struct ctl_stats st = {};
        ctl_quiesce(c);
        ctl_stats_get(c, &st);
        ctl_destroy(c, -EIO);
        c = nullptr;
        return st;
    }
    ~Server()
    {
        if (c)
            ctl_destroy(c, -EIO);
    }
};

bool Ping(int fd)
{
    int32_t st = 1;
    char buf[4];
    return ctl_call(fd, CTL_PING, "abc", 3, &st, buf, sizeof(buf)) == 3 && st == 0;
}

// Sends requests of `type` without reading a reply until the socket stays
// full (the device stopped reading them).
int Flood(int fd, uint16_t type)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int sent = 0;
    while (sent < 100000) {
        int r = ctl_send_frame(fd, type, (uint32_t)sent + 1, nullptr, 0, nullptr, 0, -1);
        struct pollfd p = { fd, POLLOUT, 0 };
        if (r == 0)
            sent++;
        else if (r != -EAGAIN || poll(&p, 1, 200) <= 0)
            break;
    }
    fcntl(fd, F_SETFL, fl);
    return sent;
}

// Waits (10 s at most) until the device has closed its end of fd.
bool WaitClosed(int fd)
{
    struct pollfd p = { fd, POLLRDHUP, 0 };
    for (int i = 0; i < 200; i++) {
        if (poll(&p, 1, 50) > 0 && (p.revents & (POLLHUP | POLLRDHUP)))
            return true;
    }
    return false;
}

bool StillOpen(int fd)
{
    struct pollfd p = { fd, POLLRDHUP, 0 };
    return poll(&p, 1, 0) == 0 || !(p.revents & (POLLHUP | POLLRDHUP));
}

}  // namespace

TEST(ControlLimits, NonReaderIsClosedOthersAreServed)
{
    Dir d;
    Server srv;
    struct ctl_limits lim = {};
    lim.stall_ms = 300;
    ASSERT_EQ(srv.Start(d.path, &lim), 0);
    int bad = ctl_connect(d.path.c_str());
    ASSERT_GE(bad, 0);
    int32_t st = 1;
    ASSERT_EQ(ctl_call(bad, CTL_SESSION, nullptr, 0, &st, nullptr, 0), 0);   // a session too
    EXPECT_GT(Flood(bad, CTL_PING), 0);
    // served while the flooder sits on its replies
    int good = ctl_connect(d.path.c_str());
    ASSERT_GE(good, 0);
    EXPECT_TRUE(Ping(good));
    // the flooder is closed for not taking its replies, its session ended
    EXPECT_TRUE(WaitClosed(bad));
    for (int i = 0; i < 200 && srv.s.closed.load() == 0; i++)
        usleep(10000);
    EXPECT_EQ(srv.s.closed.load(), 1);
    EXPECT_TRUE(Ping(good));
    close(good);
    close(bad);
    struct ctl_stats cs = srv.Stop();
    EXPECT_EQ(cs.slow_closed, 1u);
    EXPECT_EQ(cs.accepted, 2u);
}

TEST(ControlLimits, QueuedRepliesKeepTheirDescriptors)
{
    Dir d;
    Server srv;
    ASSERT_EQ(srv.Start(d.path, nullptr), 0);
    int fd = ctl_connect(d.path.c_str());
    ASSERT_GE(fd, 0);
    int sent = Flood(fd, CTL_QP_CREATE);
    ASSERT_GT(sent, 20) << "more replies than the socket holds: some wait in the device";
    std::vector<uint8_t> frame(CTL_HDR_SIZE + CTL_MAX_PAYLOAD);
    for (int i = 1; i <= sent; i++) {
        int rfd = -1;
        ssize_t n = ctl_recv_frame(fd, frame.data(), frame.size(), &rfd, 0);
        struct ctl_hdr h;
        ASSERT_GE(n, 0) << "reply " << i;
        ASSERT_EQ(ctl_hdr_decode(frame.data(), (size_t)n, &h), 0);
        EXPECT_EQ(h.id, (uint32_t)i);
        ASSERT_GE(rfd, 0) << "reply " << i << " lost its descriptor";
        char got[4] = {};
        EXPECT_EQ(read(rfd, got, 3), 3);
        EXPECT_STREQ(got, "fd!");
        close(rfd);
    }
    EXPECT_TRUE(Ping(fd));
    close(fd);
    struct ctl_stats cs = srv.Stop();
    EXPECT_EQ(cs.slow_closed, 0u);
}

namespace {

// connect(2) with another effective uid: the kernel records it for
// SO_PEERCRED. Returns the fd or -errno.
int ConnectAs(const std::string &path, uid_t uid)
{
    if (setegid(uid) || seteuid(uid))
        return -errno;
    int fd = ctl_connect(path.c_str());
    if (seteuid(0) || setegid(0))
        abort();
    return fd;
}

// Whether the device kept a new connection of uid (it closes refused ones).
int Admitted(const std::string &path, uid_t uid, std::vector<int> &keep)
{
    int fd = ConnectAs(path, uid);
    if (fd < 0)
        return fd;
    if (!Ping(fd)) {
        close(fd);
        return 0;
    }
    keep.push_back(fd);
    return 1;
}

}  // namespace

TEST(ControlLimits, PerUidLimitAndReserveForRoot)
{
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root (connects as other uids)";
    Dir d;
    Server srv;
    struct ctl_limits lim = {};
    lim.max_conns = 8;
    lim.per_uid = 3;
    lim.reserved = 2;
    ASSERT_EQ(srv.Start(d.path, &lim), 0);
    ASSERT_EQ(chmod(d.dir.c_str(), 0755), 0);
    ASSERT_EQ(chmod(d.path.c_str(), 0666), 0);
    std::vector<int> a, b, c, root;
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(Admitted(d.path, 12345, a), 1) << i;
    EXPECT_EQ(Admitted(d.path, 12345, a), 0) << "over its uid's share";
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(Admitted(d.path, 12346, b), 1) << i;
    EXPECT_EQ(Admitted(d.path, 12347, c), 0) << "only the reserve is left";
    EXPECT_EQ(Admitted(d.path, 0, root), 1);
    EXPECT_EQ(Admitted(d.path, 0, root), 1);
    EXPECT_EQ(Admitted(d.path, 0, root), 0) << "all connections in use";
    // freed slots are usable again (once the device saw the closes)
    for (int fd : root)
        close(fd);
    root.clear();
    close(a.back());
    a.pop_back();
    bool again = false;
    for (int i = 0; i < 200 && !again; i++)
        again = Admitted(d.path, 12347, c) == 1 || (usleep(10000), false);
    EXPECT_TRUE(again);
    for (auto *v : { &a, &b, &c, &root })
        for (int fd : *v)
            close(fd);
    struct ctl_stats cs = srv.Stop();
    EXPECT_GE(cs.refused, 3u);
    EXPECT_EQ(cs.accepted, 9u);
}

TEST(ControlLimits, IdleConnectionsWithoutASessionAreClosed)
{
    Dir d;
    Server srv;
    struct ctl_limits lim = {};
    lim.idle_new_ms = 200;
    lim.idle_ms = 400;
    ASSERT_EQ(srv.Start(d.path, &lim), 0);
    int silent = ctl_connect(d.path.c_str());   // never sends anything
    int sess = ctl_connect(d.path.c_str());     // opens a session
    int waiting = ctl_connect(d.path.c_str());  // a deferred request
    ASSERT_GE(silent, 0);
    ASSERT_GE(sess, 0);
    ASSERT_GE(waiting, 0);
    int32_t st = 1;
    ASSERT_EQ(ctl_call(sess, CTL_SESSION, nullptr, 0, &st, nullptr, 0), 0);
    ASSERT_EQ(ctl_send_frame(waiting, CTL_SHUTDOWN, 7, nullptr, 0, nullptr, 0, -1), 0);
    int quiet = ctl_connect(d.path.c_str());     // one request, then quiet
    ASSERT_GE(quiet, 0);
    ASSERT_TRUE(Ping(quiet));
    EXPECT_TRUE(WaitClosed(silent));
    EXPECT_TRUE(WaitClosed(quiet));
    // both were idle at least as long as `quiet`: kept for their session / request
    EXPECT_TRUE(Ping(sess));
    EXPECT_TRUE(StillOpen(waiting));
    close(silent);
    close(quiet);
    close(sess);
    struct ctl_stats cs = srv.Stop();   // answers the deferred request
    EXPECT_EQ(cs.idle_closed, 2u);
    char buf[CTL_HDR_SIZE + 4];
    int rfd;
    ssize_t n = ctl_recv_frame(waiting, (uint8_t *)buf, sizeof(buf), &rfd, 0);
    struct ctl_hdr h;
    ASSERT_EQ(n, (ssize_t)sizeof(buf));
    ASSERT_EQ(ctl_hdr_decode((uint8_t *)buf, (size_t)n, &h), 0);
    EXPECT_EQ(h.id, 7u);
    EXPECT_EQ((int32_t)le32_get((uint8_t *)buf + CTL_HDR_SIZE), -EIO);
    close(waiting);
}

namespace {

size_t Kept(Sessions &s)
{
    std::lock_guard<std::mutex> g(s.mu);
    return s.later.size();
}

}  // namespace

// A request the handler hands to another thread holds up nobody: others are
// served meanwhile, its own connection waits for the answer, and an answer
// for a connection that has gone is dropped.
TEST(ControlLimits, RequestsAnsweredFromAnotherThread)
{
    Dir d;
    Server srv;
    ASSERT_EQ(srv.Start(d.path, nullptr), 0);
    int gone = ctl_connect(d.path.c_str());
    ASSERT_GE(gone, 0);
    ASSERT_EQ(ctl_send_frame(gone, 99, 1, nullptr, 0, nullptr, 0, -1), 0);
    int fd = ctl_connect(d.path.c_str());
    ASSERT_GE(fd, 0);
    std::atomic<ssize_t> got{ -1 };
    int32_t st = 1;
    char buf[8] = {};
    std::thread waiter([&] { got = ctl_call(fd, 99, nullptr, 0, &st, buf, sizeof(buf)); });
    for (int i = 0; i < 1000 && Kept(srv.s) < 2; i++)
        usleep(5000);
    ASSERT_EQ(Kept(srv.s), 2u);
    close(gone);
    int other = ctl_connect(d.path.c_str());
    ASSERT_GE(other, 0);
    EXPECT_TRUE(Ping(other)) << "served while two requests wait";
    EXPECT_EQ(got.load(), -1) << "not answered yet";
    for (auto &l : srv.s.later)
        EXPECT_EQ(ctl_answer(srv.c, &l, -EXDEV, "late", 4), 0);
    waiter.join();
    EXPECT_EQ(got.load(), 4);
    EXPECT_EQ(st, -EXDEV);
    EXPECT_STREQ(buf, "late");
    EXPECT_TRUE(Ping(fd)) << "the connection reads requests again";
    close(fd);
    close(other);
    srv.Stop();
}
