// `cisc prog` against a real device: load, list, show, unload; the
// verifier's message on the CLI; persistence across down/up; ownership for
// a second uid; limits set at `cisc up`; records that no longer verify;
// the hidden system directory seen through the FUSE mount and libcisc.
#include "tests/e2e/progs/progs_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/syscall.h>

using e2e::AsUser;
using e2e::CorpusObj;
using e2e::DevObj;
using e2e::ProgsTest;
using e2e::RunResult;
using e2e::Sh;

TEST_F(ProgsTest, LoadListShowUnload)
{
    RunResult r = Prog("load " + mnt + " " + CorpusObj("count"));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("loaded 'count' (id 1): function count"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sha256 "), std::string::npos);
    LoadOk(DevObj("two"), "--prog second --name other --shared");
    r = Prog("list " + mnt);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("count"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("other"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("shared"), std::string::npos) << r.out;
    r = Prog("show " + mnt + " other");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("function      second"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("owner         root (uid 0)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("status        verified"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("budget hits   0"), std::string::npos) << r.out;
    r = Prog("show " + mnt + " 2");   // by id
    EXPECT_NE(r.out.find("name          other"), std::string::npos) << r.out;
    r = Prog("unload " + mnt + " count");
    EXPECT_EQ(r.status, 0) << r.out;
    r = Prog("show " + mnt + " count");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("no such program"), std::string::npos) << r.out;
    EXPECT_NE(StatusLine("progs").find("count 1 broken 0"), std::string::npos)
        << StatusLine("progs");
}

TEST_F(ProgsTest, RejectedProgramMessageReachesTheCli)
{
    RunResult r = Prog("load " + mnt + " " + CorpusObj("oob_by_one"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("program 'oob_by_one' rejected"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("oob_by_one.c:10"), std::string::npos) << r.out;       // source line
    EXPECT_NE(r.out.find("outside the checked range"), std::string::npos) << r.out;   // why
    EXPECT_NE(r.out.find("at pc 5: r0 = *(u8 *)(r2 + 0)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("source:     return data[4];"), std::string::npos) << r.out;
    r = Prog("load " + mnt + " " + DevObj("two"));
    EXPECT_EQ(r.status, 2);   // a usage error: which function is the caller's choice
    EXPECT_NE(r.out.find("choose one with --prog"), std::string::npos) << r.out;
    r = Prog("load " + mnt + " /etc/hostname");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("ELF"), std::string::npos) << r.out;
    r = Prog("list " + mnt);
    EXPECT_NE(r.out.find("no programs"), std::string::npos) << r.out;
}

TEST_F(ProgsTest, ProgramsSurviveDownAndUp)
{
    LoadOk(CorpusObj("count"));
    LoadOk(CorpusObj("wc"), "--shared");
    LoadOk(CorpusObj("grep"));
    ASSERT_EQ(Prog("unload " + mnt + " grep").status, 0);
    std::string before = Prog("show " + mnt + " wc").out;
    Down();
    Up();
    RunResult r = Prog("list " + mnt);
    EXPECT_NE(r.out.find("count"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("wc"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("grep"), std::string::npos) << r.out;
    EXPECT_EQ(Prog("show " + mnt + " wc").out, before);   // same id, owner, hash, time
    LoadOk(CorpusObj("grep"));
    EXPECT_NE(Prog("show " + mnt + " grep").out.find("id            4"), std::string::npos);
    Down();
    RunResult f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 0) << f.out;
    Up();
}

TEST_F(ProgsTest, OnlyOwnerOrRootUnloads)
{
    LoadOk(CorpusObj("count"), "--name roots --shared");
    std::string c = cisc, m = mnt, obj = CorpusObj("wc");
    EXPECT_EQ(AsUser([&] {
        RunResult r = e2e::Sh(c + " prog unload " + m + " roots");
        if (r.status != 2 || r.out.find("only its owner or root") == std::string::npos)
            return 1;
        r = e2e::Sh(c + " prog load " + m + " " + obj + " --name users");
        if (r.status != 0 || r.out.find("owner 12345") == std::string::npos)
            return 2;
        return e2e::Sh(c + " prog unload " + m + " users").status == 0 ? 0 : 3;
    }), 0);
    EXPECT_EQ(AsUser([&] {
        return e2e::Sh(c + " prog load " + m + " " + obj + " --name kept").status;
    }), 0);
    EXPECT_EQ(AsUser([&] {   // another user cannot remove it either
        return e2e::Sh(c + " prog unload " + m + " kept").status == 2 ? 0 : 1;
    }, 23456, 23456), 0);
    RunResult r = Prog("unload " + mnt + " kept");   // root can
    EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(ProgsTest, LimitsSetAtUp)
{
    Down();
    Up("--max-progs 2 --max-prog-insns 250 --prog-budget 5000");
    EXPECT_NE(StatusLine("progs").find("max_progs 2 max_insns 250 budget 5000"),
              std::string::npos) << StatusLine("progs");
    LoadOk(CorpusObj("count"), "--name a");   // 98 instructions
    RunResult r = Prog("load " + mnt + " " + CorpusObj("grep"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--max-prog-insns"), std::string::npos) << r.out;
    LoadOk(CorpusObj("count"), "--name b");
    r = Prog("load " + mnt + " " + CorpusObj("count") + " --name c");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--max-progs"), std::string::npos) << r.out;
    // a restart with lower limits keeps the programs but runs only those that fit
    Down();
    Up("--max-progs 1");
    r = Prog("list " + mnt);
    EXPECT_NE(r.out.find("broken"), std::string::npos) << r.out;
    r = Prog("show " + mnt + " b");
    EXPECT_NE(r.out.find("not run: over the device's limits"), std::string::npos) << r.out;
    r = Sh(cisc + " up --max-progs 0 " + img + " " + dir);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("--max-progs wants 1.."), std::string::npos) << r.out;
}

TEST_F(ProgsTest, ProgramThatNoLongerVerifiesIsReported)
{
    LoadOk(CorpusObj("count"));
    Down();
    std::string plant = std::string(getenv("CISC_BINARY_DIR") ? getenv("CISC_BINARY_DIR")
                                                              : CISC_BINARY_DIR) +
                        "/tests/e2e/progs/cisc-progs-plant";
    RunResult p = e2e::Sh(plant + " " + img + " 50 legacy 12345 oob_by_one " +
                          CorpusObj("oob_by_one"));
    ASSERT_EQ(p.status, 0) << p.out;
    Up();
    RunResult r = Prog("list " + mnt);
    EXPECT_NE(r.out.find("legacy"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("broken"), std::string::npos) << r.out;
    r = Prog("show " + mnt + " legacy");
    EXPECT_NE(r.out.find("status        broken (not run)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("not run: program 'oob_by_one' rejected: oob_by_one.c:10"),
              std::string::npos) << r.out;
    std::string log = e2e::ReadFile(this->log);
    EXPECT_NE(log.find("program 'legacy' (id 50) is not run"), std::string::npos) << log;
    EXPECT_NE(StatusLine("progs").find("count 2 broken 1"), std::string::npos);
    EXPECT_NE(Prog("show " + mnt + " count").out.find("status        verified"),
              std::string::npos);
    EXPECT_EQ(AsUser([&] {   // its owner removes it
        return e2e::Sh(cisc + " prog unload " + mnt + " legacy").status;
    }), 0);
}

TEST_F(ProgsTest, SystemDirectoryIsInvisibleThroughTheMount)
{
    LoadOk(CorpusObj("count"));
    std::string sys = P(".cisc-system");
    RunResult ls = Sh("ls -a " + mnt);
    EXPECT_EQ(ls.out.find("cisc-system"), std::string::npos) << ls.out;
    struct stat st;
    EXPECT_EQ(stat(sys.c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(stat((sys + "/progs/1").c_str(), &st), -1);
    // Absent through every call; creating the name is refused as a name
    // the file system reserves (EINVAL), never EEXIST or EPERM (sysdir.h).
    EXPECT_EQ(mkdir(sys.c_str(), 0755), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(open(sys.c_str(), O_CREAT | O_WRONLY, 0644), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(open(sys.c_str(), O_RDONLY), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(mknod(sys.c_str(), S_IFIFO | 0644, 0), -1);
    EXPECT_EQ(errno, EINVAL);
    ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
    EXPECT_EQ(rename(P("d").c_str(), sys.c_str()), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(syscall(SYS_renameat2, AT_FDCWD, P("d").c_str(), AT_FDCWD, sys.c_str(),
                      RENAME_EXCHANGE), -1);
    EXPECT_EQ(errno, ENOENT);   // the kernel's lookup found no target to exchange with
    EXPECT_EQ(symlink("x", sys.c_str()), -1);
    EXPECT_EQ(errno, EINVAL);
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    EXPECT_EQ(link(P("f").c_str(), sys.c_str()), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(rmdir(sys.c_str()), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(unlink(sys.c_str()), -1);
    EXPECT_EQ(errno, ENOENT);
    // the root's link count leaves it out: 2 + the visible subdirectory d
    ASSERT_EQ(stat(mnt.c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 3u);
    // the same through libcisc's path walk
    struct cisc_session *s;
    struct cisc_queue *q;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    EXPECT_EQ(cisc_stat(q, "/.cisc-system", &st), -ENOENT);
    EXPECT_EQ(cisc_stat(q, ".cisc-system/progs", &st), -ENOENT);
    uint64_t fh;
    EXPECT_EQ(cisc_open(q, "/.cisc-system/progs/1", O_RDONLY, 0, &fh), -ENOENT);
    EXPECT_EQ(cisc_open(q, "/.cisc-system", O_CREAT | O_RDWR, 0644, &fh), -EINVAL);
    EXPECT_EQ(cisc_mkdir(q, "/.cisc-system", 0755), -EINVAL);
    EXPECT_EQ(cisc_rename(q, "/d", "/.cisc-system", 0), -EINVAL);
    EXPECT_EQ(cisc_rename(q, "/d", "/.cisc-system", RENAME_EXCHANGE), -ENOENT);
    EXPECT_EQ(cisc_stat(q, "/", &st), 0);
    EXPECT_EQ(st.st_nlink, 3u);
    EXPECT_EQ(cisc_rename(q, "/.cisc-system", "/e", 0), -ENOENT);
    EXPECT_EQ(cisc_unlink(q, "/.cisc-system"), -ENOENT);
    EXPECT_EQ(cisc_rmdir(q, "/.cisc-system"), -ENOENT);
    bool seen = false;
    EXPECT_EQ(cisc_readdir(q, "/", [](void *a, const struct cisc_dirent *de) {
        *static_cast<bool *>(a) |= strcmp(de->name, ".cisc-system") == 0;
        return 0;
    }, &seen), 0);
    EXPECT_FALSE(seen);
    cisc_session_close(s);
    // and the program is still there
    EXPECT_EQ(Prog("show " + mnt + " count").status, 0);
}

TEST_F(ProgsTest, UsageErrors)
{
    EXPECT_EQ(Prog("").status, 2);
    EXPECT_EQ(Prog("frob " + mnt).status, 2);
    EXPECT_EQ(Prog("load " + mnt).status, 2);
    EXPECT_EQ(Prog("load " + mnt + " " + CorpusObj("count") + " extra").status, 2);
    RunResult r = Prog("list " + dir);   // not a device
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("no device at"), std::string::npos) << r.out;
    r = Prog("--help");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("cisc prog load MOUNT PROG.o"), std::string::npos);
}
