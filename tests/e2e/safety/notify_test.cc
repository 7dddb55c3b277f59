// tests/e2e/safety/notify_test.cc - `cisc up` speaks systemd's readiness
// protocol: with $NOTIFY_SOCKET set (a path or an abstract "@name") it
// sends READY=1 with the device's pid once the mount serves, STOPPING=1
// when it stops, daemon or foreground (the unit runs `cisc up -f` with
// Type=notify); a socket it cannot use never stops the device.
#include "tests/e2e/fuse/mount_fixture.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace e2e {
namespace {

class Notify : public MountTest {
protected:
    int fd = -1;

    void TearDown() override
    {
        if (fd >= 0)
            close(fd);
        MountTest::TearDown();
    }

    // Binds a datagram socket at addr (a path, or "@name": abstract).
    void Listen(const std::string &addr)
    {
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ASSERT_GE(fd, 0);
        struct sockaddr_un sa = {};
        sa.sun_family = AF_UNIX;
        memcpy(sa.sun_path, addr.data(), addr.size());
        socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + addr.size());
        if (addr[0] == '@')
            sa.sun_path[0] = '\0';
        ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, len), 0) << strerror(errno);
    }

    // The next datagram ("" when none comes within 20 s: the device failed).
    std::string Next()
    {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 20000) != 1)
            return "";
        char buf[8192];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        return n > 0 ? std::string(buf, (size_t)n) : "";
    }
};

TEST_F(Notify, DaemonSendsReadyWithItsPidAndStopping)
{
    Down();
    std::string sock = dir + "/notify";
    Listen(sock);
    RunResult r = Sh("NOTIFY_SOCKET=" + sock + " " + UpCmd());
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    std::string ready = Next();
    EXPECT_NE(ready.find("READY=1\n"), std::string::npos) << ready;
    EXPECT_NE(ready.find("MAINPID=" + std::to_string(DaemonPid()) + "\n"), std::string::npos)
        << ready << " vs pid " << DaemonPid();
    EXPECT_NE(ready.find("STATUS=serving " + img + " on " + mnt), std::string::npos) << ready;
    EXPECT_TRUE(IsCiscMount(mnt));
    Down();
    EXPECT_EQ(Next(), "STOPPING=1");
}

TEST_F(Notify, ForegroundAndAbstractSocket)
{
    Down();
    std::string name = "@ciscfs-notify-" + std::to_string(getpid());
    Listen(name);
    RunResult r = Sh("NOTIFY_SOCKET=" + name + " " + UpCmd("-f") + " >/dev/null 2>&1 &");
    ASSERT_EQ(r.status, 0) << r.out;
    std::string ready = Next();
    up = IsCiscMount(mnt);
    ASSERT_NE(ready.find("READY=1\n"), std::string::npos) << ready;
    EXPECT_TRUE(up);
    EXPECT_NE(ready.find("MAINPID=" + std::to_string(DaemonPid()) + "\n"), std::string::npos)
        << ready;
    Down();
    EXPECT_EQ(Next(), "STOPPING=1");
}

TEST_F(Notify, AnUnusableSocketDoesNotStopTheDevice)
{
    Down();
    RunResult r = Sh("NOTIFY_SOCKET=" + dir + "/nobody-listens " + UpCmd());
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    EXPECT_TRUE(IsCiscMount(mnt));
    EXPECT_TRUE(WriteFile(P("f"), "still serving"));
    EXPECT_NE(ReadFile(log).find("sd_notify"), std::string::npos) << ReadFile(log);
}

}  // namespace
}  // namespace e2e
