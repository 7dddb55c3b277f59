// tests/unit/device/control_test.cc - control socket framing, requests,
// deferred replies, long paths.
#include <gtest/gtest.h>

#include "device/control.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    ASSERT_EQ(ctl_create(path.c_str(), Handler, &seen, &c), 0);
    struct ctl *c2;
    EXPECT_EQ(ctl_create(path.c_str(), Handler, &seen, &c2), -EADDRINUSE);
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
    ASSERT_EQ(ctl_create(path.c_str(), Handler, &seen, &c), 0);
    int fd = ctl_connect(path.c_str());
    ASSERT_GE(fd, 0);
    int32_t st = 1;
    char buf[4];
    EXPECT_EQ(ctl_call(fd, CTL_PING, "x", 1, &st, buf, sizeof(buf)), 1);
    close(fd);
    ctl_destroy(c, 0);
    EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}
