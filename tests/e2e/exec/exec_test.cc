// tests/e2e/exec/exec_test.cc - `cisc exec`: unmodified programs with their
// file calls served by libcisc-preload.so. Each case runs a program twice
// on the same device, directly on the FUSE mount (the kernel answers) and
// under `cisc exec` (libcisc answers), in two sibling directories, and
// compares what the two runs printed and left behind. The device's
// counters show that the second run really went through queue pairs.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <sys/wait.h>

#include <string>

namespace e2e {
namespace {

std::string Probe()
{
    const char *b = getenv("CISC_BINARY_DIR");
    return std::string(b ? b : CISC_BINARY_DIR) + "/tests/e2e/exec/exec_probe";
}

bool Have(const std::string &prog)
{
    return Sh("command -v " + prog + " >/dev/null").status == 0;
}

class ExecTest : public CiscTest {
protected:
    // Runs `sh -c script` with $D set to MNT/<sub>, under `cisc exec` when
    // served (extra: options of cisc exec).
    RunResult Run(const std::string &sub, const std::string &script, bool served,
                  const std::string &extra = "")
    {
        EXPECT_EQ(mkdir(P(sub).c_str(), 0755), 0);
        std::string env = "D=" + P(sub) + " PROBE=" + Probe() + " ";
        std::string pre = served ? cisc + " exec " + extra + " " + mnt + " -- " : "";
        return Sh(env + pre + "sh -c '" + script + "'");
    }

    // Runs script both ways and expects the same output and exit status;
    // returns the submissions the served run completed on the device.
    long long Same(const std::string &script, const std::string &extra = "")
    {
        RunResult k = Run("k", script, false);
        long long before = Status("qp", "completed");
        RunResult c = Run("c", script, true, extra);
        long long done = Status("qp", "completed") - before;
        EXPECT_EQ(k.status, 0) << k.out;
        EXPECT_EQ(c.status, k.status) << c.out;
        EXPECT_EQ(c.out, k.out);
        return done;
    }
};

// ---- the probe: every served call, compared with the kernel's answers ----

class ProbeTest : public ExecTest, public ::testing::WithParamInterface<const char *> {};

TEST_P(ProbeTest, SameAsTheMount)
{
    long long served = Same("$PROBE $D " + std::string(GetParam()));
    EXPECT_GT(served, 5) << "the calls did not go through libcisc";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ProbeTest,
                         ::testing::Values("basic", "append", "dup", "errors", "fork", "exec",
                                           "mmap", "threads", "stdio", "dir", "stat",
                                           "signals", "sync", "many"));

TEST_F(ExecTest, RelativePathsFromAboveTheMount)
{
    EXPECT_GT(Same("cd $D/.. && $PROBE ./$(basename $D) basic && cd $D/../.. &&"
                   " $PROBE $(basename $(dirname $D))/$(basename $D) append"),
              5);
}

// AutoMerge happens: concurrent writers share fused ops, and an fsync after
// a write predicted to be followed by one is answered by the write's op.
TEST_F(ExecTest, MergesHappen)
{
    RunResult r = Run("c", "CISC_EXEC_STATS=1 $PROBE $D threads && CISC_EXEC_STATS=1 $PROBE $D sync",
                      true);
    ASSERT_EQ(r.status, 0) << r.out;
    unsigned long long opens, solo, calls, ops, fsyncs, dem;
    std::vector<unsigned long long> merged, answered;
    for (size_t p = 0; (p = r.out.find("cisc exec [", p)) != std::string::npos; p++) {
        ASSERT_EQ(sscanf(r.out.c_str() + p,
                         "cisc exec [%*d]: opens %llu, write-side calls alone %llu, merged "
                         "%llu into %llu fused ops, fsyncs answered by a write + sync op "
                         "%llu, demotions %llu",
                         &opens, &solo, &calls, &ops, &fsyncs, &dem),
                  6)
            << r.out;
        merged.push_back(calls);
        answered.push_back(fsyncs);
    }
    ASSERT_EQ(merged.size(), 2u) << r.out;
    EXPECT_GT(merged[0] + merged[1], 0u) << r.out;   // threads, or write + sync ops
    EXPECT_GT(answered[1], 10u) << r.out;            // sync: most fsyncs rode on the write
}

TEST_F(ExecTest, ProbeWithoutMergeToo)
{
    EXPECT_GT(Same("$PROBE $D threads && $PROBE $D basic && $PROBE $D sync", "--no-merge"), 5);
}

// ---- real programs ------------------------------------------------------

TEST_F(ExecTest, Coreutils)
{
    for (const char *p : { "cp", "cat", "sort", "tar", "md5sum" })
        if (!Have(p))
            GTEST_SKIP() << p << " is not installed";
    Same("set -e; cd $D; seq 1 30000 > nums; sort -r nums > sorted; cat sorted nums > both;"
         " cp both copy; mkdir -p sub/deep; cp nums sub/deep/n; cp -r sub sub2;"
         " tar cf a.tar nums sorted sub; mkdir x; tar xf a.tar -C x; cmp x/nums nums;"
         " sort -n both | uniq -c | tail -2; md5sum nums sorted both copy x/sorted x/sub/deep/n;"
         " ls -R | sort; wc -c a.tar | cut -c1-3 >/dev/null; rm -r sub2; ls");
}

TEST_F(ExecTest, Git)
{
    if (!Have("git"))
        GTEST_SKIP() << "git is not installed";
    Same("set -e; cd $D; export GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000"
         " HOME=$D GIT_CONFIG_NOSYSTEM=1;"
         " git init -q -b main repo; cd repo; git config user.name t; git config user.email t@x;"
         " for i in 1 2 3 4 5 6 7 8; do echo line $i > f$i; done; git add .;"
         " git commit -qm first; echo more >> f1; git mv f2 g2; git commit -qam second;"
         " git fsck --strict --full 2>&1; git log --format=%H%x20%s; git status --porcelain;"
         " git gc -q 2>&1; git fsck --strict 2>&1; git cat-file -p HEAD:f1");
}

TEST_F(ExecTest, Sqlite)
{
    if (!Have("sqlite3"))
        GTEST_SKIP() << "sqlite3 is not installed";
    const std::string sql =
        "create table t(a integer primary key, b text);"
        " with recursive n(i) as (select 1 union all select i+1 from n where i<3000)"
        " insert into t select i, printf(\\\"row %d\\\", i) from n;"
        " create index tb on t(b); delete from t where a % 7 = 0;"
        " pragma integrity_check; select count(*), sum(a) from t;";
    Same("set -e; cd $D; sqlite3 db \"" + sql + "\"; sqlite3 wal \"pragma journal_mode=wal; " +
         sql + "\"; sqlite3 db \"pragma integrity_check; select max(b) from t;\"");
}

TEST_F(ExecTest, Python)
{
    if (!Have("/usr/bin/python3"))
        GTEST_SKIP() << "python3 is not installed";
    Same("cd $D; /usr/bin/python3 -c \""
         "import os, json, shutil\n"
         "d = {str(i): i * i for i in range(2000)}\n"
         "open(\\\"j.json\\\", \\\"w\\\").write(json.dumps(d))\n"
         "print(len(json.load(open(\\\"j.json\\\"))))\n"
         "with open(\\\"b.bin\\\", \\\"wb\\\") as f:\n"
         "    f.write(bytes(range(256)) * 400); f.flush(); os.fsync(f.fileno())\n"
         "shutil.copy(\\\"b.bin\\\", \\\"c.bin\\\")\n"
         "print(open(\\\"c.bin\\\", \\\"rb\\\").read() == bytes(range(256)) * 400)\n"
         "os.makedirs(\\\"p/q\\\"); os.rename(\\\"c.bin\\\", \\\"p/q/c.bin\\\")\n"
         "print(sorted(os.listdir(\\\".\\\")), os.path.getsize(\\\"p/q/c.bin\\\"))\n"
         "print([e.name for e in os.scandir(\\\"p\\\")])\n"
         "os.remove(\\\"p/q/c.bin\\\"); os.removedirs(\\\"p/q\\\"); print(os.path.exists(\\\"p\\\"))\n"
         "\"");
}

// ---- a program killed in the middle of its calls -----------------------

TEST_F(ExecTest, KilledMidCallLeavesNoQueue)
{
    ASSERT_EQ(mkdir(P("kill").c_str(), 0755), 0);
    long long queues = Status("qp", "queues"), sessions = Status("qp", "sessions");
    pid_t pid = fork();
    if (pid == 0) {
        execl(cisc.c_str(), "cisc", "exec", mnt.c_str(), "--", Probe().c_str(),
              P("kill").c_str(), "spin", (char *)nullptr);
        _exit(127);
    }
    // Wait until it is writing through its own queue, then kill it.
    bool busy = false;
    for (int i = 0; i < 200 && !busy; i++) {
        busy = Status("qp", "queues") > queues && ReadFile(P("kill/spin")).size() > 4096;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(busy);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    EXPECT_TRUE(WaitStatus("qp", "queues", queues));
    EXPECT_TRUE(WaitStatus("qp", "sessions", sessions));
    // What it wrote is whole 512-byte records, and the file system is fine.
    EXPECT_EQ(ReadFile(P("kill/spin")).size() % 512, 0u);
    ExpectDeviceUp();
}

// ---- libcisc: a fork child lets go of its parent's session ---------------

TEST_F(ExecTest, SessionForgetInForkChild)
{
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "parent", O_CREAT | O_RDWR, 0644, &fh), 0);
    pid_t pid = fork();
    if (pid == 0) {
        cisc_session_forget(s);   // the parent's queues and handles stay untouched
        struct cisc_session *c;
        struct cisc_queue *cq;
        uint64_t f;
        bool ok = cisc_session_open(mnt.c_str(), &c) == 0 && cisc_queue_create(c, &cq) == 0 &&
                  cisc_open(cq, "child", O_CREAT | O_WRONLY, 0644, &f) == 0 &&
                  cisc_pwrite(cq, f, "kid", 3, 0) == 3;
        cisc_session_close(c);
        _exit(ok ? 0 : 1);
    }
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    EXPECT_EQ(cisc_pwrite(q, fh, "mom", 3, 0), 3);   // the parent's handle still works
    EXPECT_EQ(cisc_close(q, fh), 0);
    EXPECT_EQ(Get("child"), "kid");
    EXPECT_EQ(Get("parent"), "mom");
    EXPECT_TRUE(WaitStatus("qp", "sessions", 1));
    cisc_session_forget(nullptr);
}

// ---- the command itself ---------------------------------------------------

TEST_F(ExecTest, CommandErrors)
{
    EXPECT_EQ(Sh(cisc + " exec " + mnt + " -- /nonexistent/prog").status, 127);
    EXPECT_EQ(Sh(cisc + " exec " + mnt).status, 2);
    EXPECT_EQ(Sh(cisc + " exec /tmp -- true").status, 2);
    RunResult r = Sh(cisc + " exec " + mnt + " -- sh -c 'exit 7'");
    EXPECT_EQ(r.status, 7);
    r = Sh(cisc + " exec --help");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("usage: cisc exec"), std::string::npos);
}

}  // namespace
}  // namespace e2e
