// tests/e2e/fuse/mount_fixture.h - a real device mounted in a temporary
// directory with the real `cisc up`, torn down even when a test fails.
//
// Each test gets DIR/img (created by `cisc up --size`), DIR/m (the mount)
// and DIR/log (the daemon's stderr: sanitizer reports land there and fail
// the test). Teardown: `cisc down`, then `umount -l`, then SIGKILL of a
// leftover daemon.
#pragma once

#include <gtest/gtest.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace e2e {

inline std::string CiscBin()
{
    const char *b = getenv("CISC_BINARY_DIR");
    return std::string(b ? b : CISC_BINARY_DIR) + "/cmd/cisc";
}

struct RunResult {
    int status;
    std::string out;
};

// Runs a shell command line, capturing stdout and stderr together.
inline RunResult Sh(const std::string &cmd)
{
    RunResult r{ -1, "" };
    FILE *p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p)
        return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
        r.out.append(buf, n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

inline std::string ReadFile(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline bool WriteFile(const std::string &path, const std::string &data)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << data;
    return f.good();
}

// The state letter of a /proc/.../stat file (R, S, T, Z...; it follows
// the last ')', since the command name may hold any byte), or 0 when the
// file is gone or unreadable.
inline char ProcState(const std::string &stat_path)
{
    std::string st = ReadFile(stat_path);
    size_t p = st.rfind(')');
    return p != std::string::npos && p + 2 < st.size() ? st[p + 2] : 0;
}

// True once pid has exited (gone or a zombie): its files, and with them
// the image's lock, are released. A mount can disappear before that.
inline bool ProcessEnded(pid_t pid)
{
    if (kill(pid, 0) == -1 && errno == ESRCH)
        return true;
    char state = ProcState("/proc/" + std::to_string(pid) + "/stat");
    return state == 0 || state == 'Z';
}

// For a failure message: what a killed device's threads are doing (state
// letter, kernel wait channel and stack of each; as root) and the mount's
// line, so that a mount left behind after SIGKILL says why (a thread stuck
// in the kernel keeps the /dev/fuse connection open).
inline std::string DeadMountReport(pid_t pid, const std::string &mnt)
{
    std::string out = "device " + std::to_string(pid) + ":";
    std::string task = "/proc/" + std::to_string(pid) + "/task/";
    if (DIR *d = opendir(task.c_str())) {
        while (struct dirent *e = readdir(d)) {
            if (e->d_name[0] == '.')
                continue;
            std::string t = task + e->d_name;
            char st = ProcState(t + "/stat");
            out += std::string("\n  thread ") + e->d_name + " " + (st ? st : '?') + " wchan " +
                   ReadFile(t + "/wchan") + "\n" + ReadFile(t + "/stack");
        }
        closedir(d);
    } else {
        out += " gone";
    }
    std::istringstream mi(ReadFile("/proc/self/mountinfo"));
    for (std::string line; std::getline(mi, line);)
        if (line.find(" " + mnt + " ") != std::string::npos)
            out += "\n  mount: " + line;
    return out;
}

inline bool IsCiscMount(const std::string &mnt)
{
    std::string mi = ReadFile("/proc/self/mountinfo");
    return mi.find(" " + mnt + " ") != std::string::npos &&
           mi.find("fuse.ciscfs") != std::string::npos;
}

class MountTest : public ::testing::Test {
protected:
    std::string dir, img, mnt, log, cisc;
    bool up = false;

    void SetUp() override
    {
        char tmpl[] = "/tmp/ciscfs-e2e-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
        img = dir + "/img";
        mnt = dir + "/m";
        log = dir + "/log";
        cisc = CiscBin();
        ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
        ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
        Up();
    }

    void TearDown() override
    {
        if (up)
            Down();
        if (IsCiscMount(mnt))
            Sh("umount -l " + mnt);
        KillDaemon();
        std::string l = ReadFile(log);
        EXPECT_EQ(l.find("Sanitizer"), std::string::npos) << "daemon log:\n" << l;
        EXPECT_EQ(l.find("runtime error"), std::string::npos) << "daemon log:\n" << l;
        Sh("rm -rf " + dir);
    }

    // CISC_E2E_UP_ARGS adds options to every `cisc up` (e.g. "--dispatch queue").
    std::string UpCmd(const std::string &extra = "")
    {
        const char *more = getenv("CISC_E2E_UP_ARGS");
        return cisc + " up --size 256M --cores 2 --log " + log + " " + (more ? more : "") + " " +
               extra + " " + img + " " + mnt;
    }

    void Up(const std::string &extra = "")
    {
        RunResult r = Sh(UpCmd(extra));
        ASSERT_EQ(r.status, 0) << r.out << ReadFile(log);
        ASSERT_TRUE(IsCiscMount(mnt)) << r.out;
        up = true;
    }

    void Down()
    {
        RunResult r = Sh(cisc + " down " + mnt);
        EXPECT_EQ(r.status, 0) << r.out;
        up = false;
        EXPECT_FALSE(IsCiscMount(mnt));
    }

    // The daemon's pid, from `cisc status --raw`; -1 when none answers.
    pid_t DaemonPid()
    {
        RunResult r = Sh(cisc + " status --raw " + mnt);
        size_t p = r.out.find("device pid ");
        return r.status == 0 && p != std::string::npos ? atoi(r.out.c_str() + p + 11) : -1;
    }

    void KillDaemon()
    {
        pid_t pid = DaemonPid();
        if (pid > 0)
            kill(pid, SIGKILL);
    }

    std::string P(const std::string &rel) { return mnt + "/" + rel; }
};

// Runs fn in a child process with uid/gid 12345 (plus `groups`); returns
// the child's exit code (fn's return value), or -1 when it crashed.
template <typename Fn>
int AsUser(Fn fn, uid_t uid = 12345, gid_t gid = 12345, std::vector<gid_t> groups = {})
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(groups.size(), groups.data()) || setresgid(gid, gid, gid) ||
            setresuid(uid, uid, uid))
            _exit(99);
        _exit(fn());
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

}  // namespace e2e
