// tests/e2e/fuse/lifecycle_test.cc - the device process: status, down/up
// persistence, a second `cisc up` refused, SIGKILL during writes, dead
// mounts, signals, the mount.ciscfs helper, the control socket protocol.
#include "tests/e2e/fuse/mount_fixture.h"

#include "device/control.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/xattr.h>

#include <algorithm>
#include <map>

using e2e::MountTest;
using e2e::ReadFile;
using e2e::Sh;
using e2e::RunResult;

namespace {

// Waits (bounded) until cond() holds; returns whether it did.
template <typename Fn>
bool WaitFor(Fn cond, int tenths = 200)
{
    for (int i = 0; i < tenths; i++) {
        if (cond())
            return true;
        usleep(100000);
    }
    return cond();
}

int Lines(const std::string &s)
{
    return (int)std::count(s.begin(), s.end(), '\n');
}

// The mount(8) helper beside the cisc binary (CISC_BINARY_DIR may point
// both elsewhere).
std::string HelperBin()
{
    std::string c = e2e::CiscBin();
    return c.substr(0, c.rfind('/')) + "/mount.ciscfs";
}

bool HaveFsck()
{
    return Sh(e2e::CiscBin() + " help fsck").status == 0;
}

// Pids of what detaches mnt when its device dies: fusermount3's
// auto_unmount watchdog and the device's reaper.
std::vector<pid_t> Watchdogs(const std::string &mnt)
{
    std::vector<pid_t> out;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        pid_t pid = atoi(de->d_name);
        if (pid <= 0)
            continue;
        std::string cl = ReadFile("/proc/" + std::string(de->d_name) + "/cmdline");
        for (char &c : cl)
            if (c == '\0')
                c = ' ';
        std::string comm = ReadFile("/proc/" + std::string(de->d_name) + "/comm");
        bool fusermount = cl.find("fusermount3") != std::string::npos &&
                          cl.find("auto_unmount") != std::string::npos;
        bool reaper = comm == "cisc-reaper\n";   // cmd/mnt.h mnt_reaper_start
        if ((fusermount || reaper) && cl.find(mnt) != std::string::npos)
            out.push_back(pid);
    }
    if (d)
        closedir(d);
    return out;
}

}  // namespace

TEST_F(MountTest, StatusShowsModelQueuesAndOps)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "hello"));
    ASSERT_EQ(ReadFile(P("f")), "hello");
    RunResult r = Sh(cisc + " status " + mnt);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("cores 2 sched fifo"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("queue"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("p99_us"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("create"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("write"), std::string::npos) << r.out;
    r = Sh(cisc + " status " + dir);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("no device"), std::string::npos) << r.out;
}

TEST_F(MountTest, SecondUpOnSameImageRefused)
{
    std::string other = dir + "/m2";
    ASSERT_EQ(mkdir(other.c_str(), 0755), 0);
    RunResult r = Sh(cisc + " up " + img + " " + other);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("in use"), std::string::npos) << r.out;
    EXPECT_FALSE(e2e::IsCiscMount(other));
    r = Sh(cisc + " up " + dir + "/img2 " + mnt + " --size 64M");
    EXPECT_NE(r.status, 0) << r.out;   // mount point busy
    ASSERT_TRUE(e2e::WriteFile(P("still"), "serving"));
    EXPECT_EQ(ReadFile(P("still")), "serving");
}

TEST_F(MountTest, DataAndMetadataSurviveDownUp)
{
    ASSERT_EQ(mkdir(P("d").c_str(), 0700), 0);
    std::string big(5 << 20, '\0');
    for (size_t i = 0; i < big.size(); i++)
        big[i] = (char)(i * 31 + 7);
    ASSERT_TRUE(e2e::WriteFile(P("d/big"), big));
    ASSERT_EQ(symlink("d/big", P("sym").c_str()), 0);
    ASSERT_EQ(setxattr(P("d/big").c_str(), "user.k", "v", 1, 0), 0);
    ASSERT_EQ(chown(P("d/big").c_str(), 7, 8), 0);
    ASSERT_EQ(link(P("d/big").c_str(), P("hard").c_str()), 0);
    Down();
    Up();
    EXPECT_TRUE(ReadFile(P("sym")) == big);
    struct stat st;
    ASSERT_EQ(stat(P("d/big").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 7u);
    EXPECT_EQ(st.st_gid, 8u);
    EXPECT_EQ(st.st_nlink, 2u);
    ASSERT_EQ(stat(P("d").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    char v[4] = { 0 };
    EXPECT_EQ(getxattr(P("d/big").c_str(), "user.k", v, sizeof(v)), 1);
    EXPECT_EQ(v[0], 'v');
}

TEST_F(MountTest, SigkillDuringWritesKeepsFsyncedData)
{
    std::string ledger = dir + "/ledger";   // outside the mount
    pid_t writer = fork();
    if (writer == 0) {
        FILE *led = fopen(ledger.c_str(), "w");
        int dfd = open(mnt.c_str(), O_RDONLY | O_DIRECTORY);
        for (int i = 0;; i++) {
            std::string name = P("f" + std::to_string(i));
            int fd = open(name.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (fd < 0)
                _exit(0);
            std::string data(4096 * (1 + i % 16), (char)('a' + i % 26));
            if (write(fd, data.data(), data.size()) != (ssize_t)data.size() || fsync(fd) ||
                fsync(dfd))   // the file, and its name in the directory
                _exit(0);
            close(fd);
            fprintf(led, "%d %zu\n", i, data.size());   // durable from here on
            fflush(led);
        }
    }
    // a few fsynced files (each fsync reaches the disk: slow on a busy host)
    ASSERT_TRUE(WaitFor([&] { return Lines(ReadFile(ledger)) >= 8; }, 900))
        << "writer made too little progress: " << ReadFile(ledger);
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    ASSERT_EQ(kill(dev, SIGKILL), 0);
    int st;
    waitpid(writer, &st, 0);
    up = false;
    ASSERT_TRUE(WaitFor([&] { return !e2e::IsCiscMount(mnt); }, 600))
        << "auto_unmount: " << e2e::DeadMountReport(dev, mnt);
    ASSERT_TRUE(WaitFor([&] { return e2e::ProcessEnded(dev); }, 600)) << "killed device lingers";
    Up();   // replays the journal
    std::string led = ReadFile(ledger);
    std::istringstream in(led);
    int i;
    size_t size;
    int checked = 0;
    while (in >> i >> size) {
        std::string got = ReadFile(P("f" + std::to_string(i)));
        ASSERT_EQ(got.size(), size) << "file " << i;
        EXPECT_TRUE(got == std::string(size, (char)('a' + i % 26))) << "file " << i;
        checked++;
    }
    EXPECT_GT(checked, 0);
    Down();
    if (HaveFsck()) {
        RunResult f = Sh(cisc + " fsck " + img);
        EXPECT_EQ(f.status, 0) << f.out;
    }
    Up();
}

TEST_F(MountTest, UpCopesWithDeadMount)
{
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    for (pid_t w : Watchdogs(mnt))   // no auto_unmount this time
        kill(w, SIGKILL);
    kill(dev, SIGKILL);
    up = false;
    struct stat st;
    ASSERT_TRUE(WaitFor([&] { return stat(mnt.c_str(), &st) == -1 && errno == ENOTCONN; }));
    ASSERT_TRUE(WaitFor([&] { return Sh(cisc + " up --cores 1 " + img + " " + mnt).status == 0; }, 50));
    up = true;
    ASSERT_TRUE(e2e::WriteFile(P("after"), "alive"));
    EXPECT_EQ(ReadFile(P("after")), "alive");
}

TEST_F(MountTest, DownDetachesDeadMount)
{
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    for (pid_t w : Watchdogs(mnt))
        kill(w, SIGKILL);
    kill(dev, SIGKILL);
    struct stat st;
    ASSERT_TRUE(WaitFor([&] { return stat(mnt.c_str(), &st) == -1 && errno == ENOTCONN; }));
    Down();   // expects status 0 and no mount left
}

// A mapped image (--media-io mmap) must not be inherited by the children
// the device forks: a mapping holds the image open, and with it the image's
// lock, so "down" would return while the reaper still locked the image and
// fsck right after said "in use by a running device".
TEST_F(MountTest, ChildrenOfTheDeviceDoNotMapTheImage)
{
    Down();
    Up("--media-io mmap");
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    char real[PATH_MAX];
    ASSERT_NE(realpath(img.c_str(), real), nullptr);
    EXPECT_NE(ReadFile("/proc/" + std::to_string(dev) + "/maps").find(real), std::string::npos)
        << "the device itself maps its image";
    std::vector<pid_t> kids = Watchdogs(mnt);
    bool reaper = false;
    for (pid_t w : kids) {
        std::string comm = ReadFile("/proc/" + std::to_string(w) + "/comm");
        reaper = reaper || comm == "cisc-reaper\n";
        EXPECT_EQ(ReadFile("/proc/" + std::to_string(w) + "/maps").find(real), std::string::npos)
            << "pid " << w << " (" << comm << ") maps the image";
    }
    EXPECT_TRUE(reaper) << "no reaper found for " << mnt;
    Down();
    if (HaveFsck()) {
        RunResult f = Sh(cisc + " fsck " + img);   // right after down: unlocked
        EXPECT_EQ(f.status, 0) << f.out;
    }
    Up();
}

TEST_F(MountTest, SigtermStopsCleanly)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    ASSERT_EQ(kill(dev, SIGTERM), 0);
    up = false;
    ASSERT_TRUE(WaitFor([&] { return kill(dev, 0) == -1; }));
    EXPECT_FALSE(e2e::IsCiscMount(mnt));
    Up();   // the image was unlocked
}

TEST_F(MountTest, MountHelperAsMount8CallsIt)
{
    Down();
    std::string helper = std::string(CISC_BINARY_DIR) + "/cmd/mount.ciscfs";
    RunResult r = Sh(helper + " " + img + " " + mnt + " -o rw,cores=3,log=" + log +
                      ",nosuid,x-systemd.automount");
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    EXPECT_TRUE(e2e::IsCiscMount(mnt));
    r = Sh(cisc + " status --raw " + mnt);
    EXPECT_NE(r.out.find("model cores 3 "), std::string::npos) << r.out;
    ASSERT_TRUE(e2e::WriteFile(P("via-helper"), "ok"));
    EXPECT_EQ(ReadFile(P("via-helper")), "ok");
    r = Sh(helper + " " + img);
    EXPECT_EQ(r.status, 2) << r.out;
}

// The helper's options are cisc up's (cmd/upopts.h): dispatch=queue
// reaches the device, which then hands every command to a core thread
// (no direct runs); dispatch=direct, which the helper once passed on to
// FUSE, is accepted too; cisc up -o reads the same keys.
TEST_F(MountTest, MountHelperDispatchReachesTheDevice)
{
    Down();
    std::string helper = HelperBin();
    for (std::string mode : { "queue", "direct" }) {
        RunResult r = Sh(helper + " " + img + " " + mnt + " -o dispatch=" + mode +
                         ",cores=3,log=" + log);
        ASSERT_EQ(r.status, 0) << r.out << ReadFile(log);
        up = true;
        ASSERT_TRUE(e2e::WriteFile(P(mode), "ok"));
        EXPECT_EQ(ReadFile(P(mode)), "ok");
        r = Sh(cisc + " status " + mnt);
        EXPECT_NE(r.out.find("cores 3 sched fifo dispatch " + mode + " "), std::string::npos)
            << r.out;
        r = Sh(cisc + " status --raw " + mnt);
        size_t q = r.out.find("\nqueue depth ");
        ASSERT_NE(q, std::string::npos) << r.out;
        std::string line = r.out.substr(q + 1, r.out.find('\n', q + 1) - q - 1);
        EXPECT_EQ(line.find(" submitted 0 "), std::string::npos) << line;
        if (mode == "queue") {
            EXPECT_EQ(line.substr(line.rfind(' ')), " 0") << "direct runs: " << line;
        }
        Down();
    }
    Up("-o dispatch=queue,pollers=2");
    RunResult r = Sh(cisc + " status --raw " + mnt);
    EXPECT_NE(r.out.find(" dispatch queue "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" pollers 2 "), std::string::npos) << r.out;
}

// A log the daemon could not write fails the helper as it fails cisc up
// (the helper used to drop such a log= silently).
TEST_F(MountTest, MountHelperRefusesAnUnwritableLog)
{
    Down();
    std::string helper = HelperBin();
    std::string bad = dir + "/no-such-dir/log";
    RunResult r = Sh(helper + " " + img + " " + mnt + " -o log=" + bad);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(r.out, "cisc up: -o log " + bad + ": No such file or directory\n");
    EXPECT_FALSE(e2e::IsCiscMount(mnt));
    r = Sh(cisc + " up --log " + bad + " " + img + " " + mnt);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(r.out, "cisc up: --log " + bad + ": No such file or directory\n");
    EXPECT_FALSE(e2e::IsCiscMount(mnt));
}

TEST_F(MountTest, ControlSocketRejectsBadRequests)
{
    char sock[4096];
    ASSERT_EQ(ctl_socket_path(mnt.c_str(), sock, sizeof(sock)), 0);
    int fd = ctl_connect(sock);
    ASSERT_GE(fd, 0);
    int32_t status = 0;
    char buf[64];
    EXPECT_EQ(ctl_call(fd, 999, nullptr, 0, &status, buf, sizeof(buf)), 0);
    EXPECT_EQ(status, -EOPNOTSUPP);
    EXPECT_EQ(ctl_call(fd, CTL_PING, nullptr, 0, &status, buf, sizeof(buf)), 8);
    EXPECT_EQ(status, 0);
    ASSERT_EQ(send(fd, "garbage", 7, 0), 7);   // malformed: connection dropped
    EXPECT_EQ(recv(fd, buf, sizeof(buf), 0), 0);
    close(fd);
    RunResult r = Sh(cisc + " status " + mnt);   // the device keeps serving
    EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(MountTest, TraceLogsEveryCommand)
{
    Down();
    Up("--trace");
    ASSERT_TRUE(e2e::WriteFile(P("traced"), "t"));
    std::string l = ReadFile(log);
    EXPECT_NE(l.find(" create uid 0 "), std::string::npos) << l;
    EXPECT_NE(l.find("name traced"), std::string::npos) << l;
}
