// tests/unit/control/control_test.cc - control socket framing, requests,
// deferred replies, long paths.
#include <gtest/gtest.h>

#include "device/control.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace {

struct Seen {
    int requests = 0;
    uid_t uid = 12345;
};

int Handler(void *arg, struct ctl_req *req)
{
    auto *s = static_cast<Seen *>(arg);
    s->requests++;
    s->uid = req->peer->uid;
    if (req->type == CTL_SHUTDOWN)
        return CTL_DEFER;
    if (req->type == CTL_PING)
        return ctl_reply(req, 0, req->payload, req->len), 0;   // echo
    return ctl_reply(req, -EOPNOTSUPP, nullptr, 0), 0;
}

std::string TempDir()
{
    char t[] = "/tmp/ciscfs-ctl-XXXXXX";
    return mkdtemp(t) ? t : "";
}

}  // namespace

TEST(Control, HeaderRoundTripAndRejects)
{
    uint8_t buf[CTL_HDR_SIZE + 4];
    struct ctl_hdr h = { CTL_MAGIC, CTL_VERSION, CTL_STATUS, 77, 4 }, g;
    ctl_hdr_encode(&h, buf);
    EXPECT_EQ(buf[0], 'C');
    EXPECT_EQ(buf[1], 'I');
    ASSERT_EQ(ctl_hdr_decode(buf, sizeof(buf), &g), 0);
    EXPECT_EQ(g.type, CTL_STATUS);
    EXPECT_EQ(g.id, 77u);
    EXPECT_EQ(ctl_hdr_decode(buf, sizeof(buf) - 1, &g), -EMSGSIZE);   // len mismatch
    EXPECT_EQ(ctl_hdr_decode(buf, 3, &g), -EPROTO);
    buf[0] = 'X';
    EXPECT_EQ(ctl_hdr_decode(buf, sizeof(buf), &g), -EPROTO);
}

TEST(Control, SocketPathBesideMount)
{
    char p[256];
    ASSERT_EQ(ctl_socket_path("/a/b/mnt", p, sizeof(p)), 0);
    EXPECT_STREQ(p, "/a/b/.mnt.cisc.sock");
    ASSERT_EQ(ctl_socket_path("/m", p, sizeof(p)), 0);
    EXPECT_STREQ(p, "/.m.cisc.sock");
    EXPECT_EQ(ctl_socket_path("relative", p, sizeof(p)), -EINVAL);
    EXPECT_EQ(ctl_socket_path("/a/b/mnt", p, 8), -ENAMETOOLONG);
}

TEST(Control, RequestsRepliesAndDeferred)
{
    std::string dir = TempDir(), path = dir + "/.m.cisc.sock";
    Seen seen;
    struct ctl *c;
    ASSERT_EQ(ctl_create(path.c_str(), nullptr, Handler, &seen, &c), 0);
    struct ctl *c2;
    EXPECT_EQ(ctl_create(path.c_str(), nullptr, Handler, &seen, &c2), -EADDRINUSE);
    int fd = ctl_connect(path.c_str());
    ASSERT_GE(fd, 0);
    int32_t st = 1;
    char buf[16] = { 0 };
    EXPECT_EQ(ctl_call(fd, CTL_PING, "abc", 3, &st, buf, sizeof(buf)), 3);
    EXPECT_EQ(st, 0);
    EXPECT_STREQ(buf, "abc");
    EXPECT_EQ(seen.uid, getuid());
    EXPECT_EQ(ctl_call(fd, 4242, nullptr, 0, &st, buf, sizeof(buf)), 0);
    EXPECT_EQ(st, -EOPNOTSUPP);
    int fd2 = ctl_connect(path.c_str());
    ASSERT_GE(fd2, 0);
    // the deferred SHUTDOWN is answered by ctl_destroy with its status
    ssize_t got = -1;
    int32_t st2 = 0;
    pid_t pid = fork();
    if (pid == 0)
        _exit(ctl_call(fd2, CTL_SHUTDOWN, nullptr, 0, &st2, buf, sizeof(buf)) == 0 &&
                      st2 == -EIO ? 0 : 1);
    while (seen.requests < 3)
        usleep(1000);
    ctl_destroy(c, -EIO);
    int wst;
    ASSERT_EQ(waitpid(pid, &wst, 0), pid);
    EXPECT_EQ(WEXITSTATUS(wst), 0);
    (void)got;
    EXPECT_EQ(access(path.c_str(), F_OK), -1) << "socket file removed";
    close(fd);
    close(fd2);
    rmdir(dir.c_str());
}

TEST(Control, LongPathsWork)
{
    std::string dir = TempDir();
    std::string deep = dir;
    for (int i = 0; i < 6; i++) {
        deep += "/a-rather-long-directory-name-" + std::to_string(i);
        ASSERT_EQ(mkdir(deep.c_str(), 0755), 0);
    }
    std::string path = deep + "/.mnt.cisc.sock";
    ASSERT_GT(path.size(), 108u);
    Seen seen;
    struct ctl *c;
    ASSERT_EQ(ctl_create(path.c_str(), nullptr, Handler, &seen, &c), 0);
    int fd = ctl_connect(path.c_str());
    ASSERT_GE(fd, 0);
    int32_t st = 1;
    char buf[4];
    EXPECT_EQ(ctl_call(fd, CTL_PING, "x", 1, &st, buf, sizeof(buf)), 1);
    close(fd);
    ctl_destroy(c, 0);
    EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

namespace {

struct Sessions {
    std::atomic<int> opened{ 0 }, closed{ 0 };
};

// CTL_SESSION opens a per-connection session; CTL_QP_CREATE replies with a
// descriptor (a pipe's read end) the client gets through SCM_RIGHTS.
int SessionHandler(void *arg, struct ctl_req *req)
{
    auto *s = static_cast<Sessions *>(arg);
    if (!*req->session) {
        *req->session = s;
        s->opened++;
    }
    if (req->type == CTL_QP_CREATE) {
        int p[2];
        if (pipe(p))
            return ctl_reply(req, -errno, nullptr, 0), 0;
        if (write(p[1], "fd!", 3) != 3)
            return ctl_reply(req, -EIO, nullptr, 0), 0;
        ctl_reply_fd(req, 0, "id", 2, p[0]);
        close(p[0]);
        close(p[1]);
        return 0;
    }
    uint32_t g[8];
    int n = ctl_peer_groups(req, g, 8);
    return ctl_reply(req, n < 0 ? n : 0, nullptr, 0), 0;
}

void CloseHook(void *arg, void *session)
{
    static_cast<Sessions *>(session)->closed++;
}

}  // namespace

TEST(Control, DescriptorsSessionsAndCloseHook)
{
    std::string dir = TempDir(), path = dir + "/.m.cisc.sock";
    Sessions s;
    struct ctl *c;
    ASSERT_EQ(ctl_create(path.c_str(), nullptr, SessionHandler, &s, &c), 0);
    ctl_set_close_hook(c, CloseHook);
    int fd = ctl_connect(path.c_str());
    ASSERT_GE(fd, 0);
    int32_t st = 1;
    char buf[8] = {};
    int rfd = -1;
    ASSERT_EQ(ctl_call_fd(fd, CTL_QP_CREATE, nullptr, 0, &st, buf, sizeof(buf), &rfd), 2);
    EXPECT_EQ(st, 0);
    ASSERT_GE(rfd, 0);
    char got[4] = {};
    EXPECT_EQ(read(rfd, got, 3), 3);
    EXPECT_STREQ(got, "fd!");
    close(rfd);
    // a plain ctl_call closes a descriptor nobody asked for
    EXPECT_EQ(ctl_call(fd, CTL_QP_CREATE, nullptr, 0, &st, buf, sizeof(buf)), 2);
    EXPECT_EQ(ctl_call(fd, CTL_SESSION, nullptr, 0, &st, nullptr, 0), 0);
    EXPECT_EQ(st, 0) << "SO_PEERGROUPS works";
    EXPECT_EQ(s.opened.load(), 1) << "one session per connection";
    close(fd);
    for (int i = 0; i < 200 && s.closed.load() == 0; i++)
        usleep(5000);
    EXPECT_EQ(s.closed.load(), 1);
    // ctl_quiesce stops the thread; ctl_destroy after it is fine
    int fd2 = ctl_connect(path.c_str());
    ASSERT_GE(fd2, 0);
    EXPECT_EQ(ctl_call(fd2, CTL_SESSION, nullptr, 0, &st, nullptr, 0), 0);
    ctl_quiesce(c);
    ctl_destroy(c, 0);
    EXPECT_EQ(s.closed.load(), 1) << "no close hook at destroy";
    close(fd2);
    rmdir(dir.c_str());
}
