// tests/e2e/safety/down_test.cc - `cisc down` is safe: like umount it
// refuses a busy mount ("target is busy") and names what holds it; --lazy
// detaches now and the device stops cleanly when the last file closes;
// --force (and SIGTERM, the same forced stop) stops now, and what was
// written before is kept.
#include "tests/e2e/fuse/mount_fixture.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace e2e {
namespace {

class SafeDown : public MountTest {
protected:
    // A child that opens path for writing (or, cwd, changes into it),
    // writes `first` and syncs it, then waits for a byte on its pipe, writes `second`,
    // closes and reports 0 only if every call succeeded.
    struct Holder {
        pid_t pid = -1;
        int go = -1;        // write end: tells it to go on
        int ready = -1;     // read end: it has done the first part
    };

    Holder Hold(const std::string &path, bool cwd, const std::string &first = "",
                const std::string &second = "")
    {
        int a[2], b[2];
        Holder h;
        if (pipe(a) || pipe(b))
            return h;
        h.pid = fork();
        if (h.pid == 0) {
            close(a[1]);
            close(b[0]);
            int fd = -1;
            if (cwd ? chdir(path.c_str()) : (fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644)) < 0)
                _exit(10);
            if (!cwd && (write(fd, first.data(), first.size()) != (ssize_t)first.size() ||
                         fsync(fd)))
                _exit(11);
            char c = 'r';
            if (write(b[1], &c, 1) != 1 || read(a[0], &c, 1) != 1)
                _exit(12);
            if (!cwd && write(fd, second.data(), second.size()) != (ssize_t)second.size())
                _exit(13);
            if (!cwd && close(fd))
                _exit(14);
            _exit(0);
        }
        close(a[0]);
        close(b[1]);
        h.go = a[1];
        h.ready = b[0];
        char c;
        if (read(h.ready, &c, 1) != 1)
            h.pid = -1;
        return h;
    }

    // Lets the holder go on; returns its exit code.
    int Release(Holder &h)
    {
        char c = 'g';
        if (write(h.go, &c, 1) != 1)
            return -1;
        close(h.go);
        close(h.ready);
        int st;
        if (waitpid(h.pid, &st, 0) != h.pid || !WIFEXITED(st))
            return -1;
        return WEXITSTATUS(st);
    }

    bool WaitEnded(pid_t pid)
    {
        for (int i = 0; i < 1000 && !ProcessEnded(pid); i++)
            usleep(10000);
        return ProcessEnded(pid);
    }

    bool Clean()
    {
        RunResult r = Sh(cisc + " fsck " + img);
        return r.status == 0;
    }
};

TEST_F(SafeDown, BusyMountIsRefusedAndItsHoldersNamed)
{
    Holder w = Hold(P("log"), false, "first ", "second\n");
    ASSERT_GT(w.pid, 0);
    RunResult r = Sh(cisc + " down " + mnt);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("target is busy"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("pid " + std::to_string(w.pid)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("open for writing: " + P("log")), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--lazy"), std::string::npos) << r.out;
    EXPECT_TRUE(IsCiscMount(mnt)) << "a refused down changed nothing";
    EXPECT_GT(DaemonPid(), 0);
    EXPECT_EQ(Release(w), 0) << "the writer's later data went in";
    EXPECT_EQ(ReadFile(P("log")), "first second\n");
    // a working directory inside holds it too
    ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
    Holder c = Hold(P("d"), true);
    ASSERT_GT(c.pid, 0);
    r = Sh(cisc + " down " + mnt);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("cwd: " + P("d")), std::string::npos) << r.out;
    EXPECT_EQ(Release(c), 0);
    Down();   // nothing holds it now
    EXPECT_TRUE(Clean());
}

TEST_F(SafeDown, LazyDetachesNowAndStopsWhenTheLastFileCloses)
{
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    Holder w = Hold(P("log"), false, "before ", "after\n");
    ASSERT_GT(w.pid, 0);
    RunResult r = Sh(cisc + " down " + mnt + " --lazy");   // options go anywhere
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt)) << "detached at once";
    EXPECT_FALSE(ProcessEnded(dev)) << "the device serves the open file";
    EXPECT_EQ(Release(w), 0) << "the open file kept working";
    ASSERT_TRUE(WaitEnded(dev)) << "the device stops when the last file closes";
    up = false;
    EXPECT_TRUE(Clean());
    Up();
    EXPECT_EQ(ReadFile(P("log")), "before after\n");
}

TEST_F(SafeDown, ForceStopsNowAndKeepsWhatWasWritten)
{
    pid_t dev = DaemonPid();
    Holder w = Hold(P("log"), false, "kept\n", "lost\n");
    ASSERT_GT(w.pid, 0);
    RunResult r = Sh(cisc + " down --force " + mnt);
    ASSERT_EQ(r.status, 0) << r.out;
    up = false;
    EXPECT_FALSE(IsCiscMount(mnt));
    EXPECT_TRUE(WaitEnded(dev));
    EXPECT_NE(Release(w), 0) << "the writer's later write must fail, not vanish";
    EXPECT_TRUE(Clean());
    Up();
    EXPECT_EQ(ReadFile(P("log")), "kept\n");
    EXPECT_EQ(Sh(cisc + " down --lazy --force " + mnt).status, 2);
}

// SIGTERM is the forced stop (README "Stopping"): the device checkpoints
// and leaves a clean image even with a file open for writing.
TEST_F(SafeDown, SigtermIsTheForcedStop)
{
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    Holder w = Hold(P("log"), false, "kept\n", "lost\n");
    ASSERT_GT(w.pid, 0);
    ASSERT_EQ(kill(dev, SIGTERM), 0);
    ASSERT_TRUE(WaitEnded(dev));
    up = false;
    EXPECT_NE(Release(w), 0);
    EXPECT_TRUE(Clean());
    if (IsCiscMount(mnt))
        Sh("umount -l " + mnt);
    Up();
    EXPECT_EQ(ReadFile(P("log")), "kept\n");
}

}  // namespace
}  // namespace e2e
