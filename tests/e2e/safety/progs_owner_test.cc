// tests/e2e/safety/progs_owner_test.cc - program limits per user: each
// user has a quota of programs and bytes (root has none, and users
// together cannot fill the device), names are per owner ("alice/grep";
// one's own unqualified, root names anyone's), and a program's traces,
// which carry its runs' data, are its owner's and root's only.
#include "tests/e2e/progs/progs_fixture.h"

#include <cisc/cisc.h>
#include <cisc/progs.h>

#include <pwd.h>

namespace e2e {
namespace {

constexpr uid_t kAlice = 12345, kBob = 23456;

class ProgOwners : public ProgsTest {
protected:
    std::string outdir;   // where the other users' commands write their output

    void SetUp() override
    {
        ProgsTest::SetUp();
        outdir = dir + "/o";
        ASSERT_EQ(mkdir(outdir.c_str(), 0777), 0);
        ASSERT_EQ(chmod(outdir.c_str(), 01777), 0);
    }

    // `cisc prog ARGS` as uid; returns its exit status (output in *out).
    int ProgAs(uid_t uid, const std::string &args, std::string *out = nullptr)
    {
        std::string file = outdir + "/out." + std::to_string(uid);
        int st = AsUser([&] {
            return Sh(cisc + " prog " + args + " > " + file + " 2>&1").status;
        }, uid, uid);
        if (out)
            *out = ReadFile(file);
        return st;
    }
};

TEST_F(ProgOwners, EachUserHasAQuotaAndRootHasNone)
{
    Down();
    Up("--max-progs-per-user 2 --max-prog-bytes-per-user 1M");
    EXPECT_NE(StatusLine("progs").find("per_user_progs 2 per_user_bytes 1048576"),
              std::string::npos) << StatusLine("progs");
    std::string obj = CorpusObj("count"), out;
    EXPECT_EQ(ProgAs(kAlice, "load " + mnt + " " + obj + " --name a1"), 0);
    EXPECT_EQ(ProgAs(kAlice, "load " + mnt + " " + obj + " --name a2"), 0);
    EXPECT_NE(ProgAs(kAlice, "load " + mnt + " " + obj + " --name a3", &out), 0);
    EXPECT_NE(out.find("--max-progs-per-user"), std::string::npos) << out;
    // another user's quota is their own; root has none
    EXPECT_EQ(ProgAs(kBob, "load " + mnt + " " + obj + " --name b1"), 0);
    for (int i = 0; i < 4; i++)
        LoadOk(obj, "--name r" + std::to_string(i));
    // alice unloads one and may load again
    EXPECT_EQ(ProgAs(kAlice, "unload " + mnt + " a1"), 0);
    EXPECT_EQ(ProgAs(kAlice, "load " + mnt + " " + obj + " --name a3"), 0);
}

TEST_F(ProgOwners, ByteQuota)
{
    Down();
    std::string obj = CorpusObj("count"), out;
    struct stat st;
    ASSERT_EQ(stat(obj.c_str(), &st), 0);
    ASSERT_GT(st.st_size, 4096);   // so that one fits the quota below and two do not
    Up("--max-prog-bytes-per-user " + std::to_string(st.st_size + 4096));
    EXPECT_EQ(ProgAs(kAlice, "load " + mnt + " " + obj + " --name a1"), 0);
    EXPECT_NE(ProgAs(kAlice, "load " + mnt + " " + obj + " --name a2", &out), 0);
    EXPECT_NE(out.find("--max-prog-bytes-per-user"), std::string::npos) << out;
    LoadOk(obj, "--name r1");   // root has no quota
    LoadOk(obj, "--name r2");
}

// Users together may fill seven eighths of --max-progs: none can lock
// root out.
TEST_F(ProgOwners, UsersCannotLockRootOut)
{
    Down();
    Up("--max-progs 8 --max-progs-per-user 8");
    std::string obj = CorpusObj("count"), out;
    int loaded = 0;
    for (int i = 0; i < 8; i++)
        loaded += ProgAs(kAlice, "load " + mnt + " " + obj + " --name a" + std::to_string(i),
                         &out) == 0;
    EXPECT_EQ(loaded, 7);
    EXPECT_NE(out.find("the rest is root's"), std::string::npos) << out;
    LoadOk(obj, "--name root1");
}

TEST_F(ProgOwners, NamesArePerOwner)
{
    std::string obj = CorpusObj("count"), out;
    std::string alice = std::to_string(kAlice), bob = std::to_string(kBob);
    ASSERT_TRUE(WriteFile(P("f"), "a\nb\n"));
    EXPECT_EQ(ProgAs(kAlice, "load " + mnt + " " + obj + " --name grep"), 0);
    EXPECT_EQ(ProgAs(kBob, "load " + mnt + " " + obj + " --name grep"), 0)
        << "the same name, another owner";
    EXPECT_NE(ProgAs(kAlice, "load " + mnt + " " + obj + " --name grep", &out), 0);
    EXPECT_NE(out.find("a program of yours named 'grep' exists"), std::string::npos) << out;
    // each names their own unqualified
    EXPECT_EQ(ProgAs(kAlice, "show " + mnt + " grep", &out), 0);
    EXPECT_NE(out.find("uid " + alice), std::string::npos) << out;
    EXPECT_EQ(ProgAs(kBob, "show " + mnt + " grep", &out), 0);
    EXPECT_NE(out.find("uid " + bob), std::string::npos) << out;
    // another's by OWNER/NAME: described, but neither run nor removed
    EXPECT_EQ(ProgAs(kBob, "show " + mnt + " " + alice + "/grep", &out), 0) << out;
    EXPECT_NE(out.find("uid " + alice), std::string::npos) << out;
    std::string bobrun = outdir + "/bobrun";
    EXPECT_EQ(AsUser([&] {
        return Sh(cisc + " run " + mnt + " --prog " + alice + "/grep --input /f > " + bobrun +
                  " 2>&1").status;
    }, kBob, kBob), 2);   // a permission refusal: exit 2, as cisc run --help says
    EXPECT_NE(ReadFile(bobrun).find("not yours and not shared"), std::string::npos)
        << ReadFile(bobrun);
    EXPECT_NE(ProgAs(kBob, "unload " + mnt + " " + alice + "/grep"), 0);
    // root names anyone's, by uid or user name; unqualified is ambiguous
    RunResult r = Prog("show " + mnt + " " + alice + "/grep");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("uid " + alice), std::string::npos) << r.out;
    struct passwd *pw = getpwuid(kBob);
    if (pw) {
        r = Prog("show " + mnt + " " + std::string(pw->pw_name) + "/grep");
        EXPECT_EQ(r.status, 0) << r.out;
        EXPECT_NE(r.out.find("uid " + bob), std::string::npos) << r.out;
    }
    EXPECT_NE(Prog("show " + mnt + " grep").status, 0) << "ambiguous: name the owner";
    EXPECT_NE(Prog("show " + mnt + " nobody-such-user/grep").status, 0);
    r = Sh(cisc + " run " + mnt + " --prog " + alice + "/grep --input /f");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, "2\n");
    // a shared program is usable by its plain name
    EXPECT_EQ(ProgAs(kAlice, "load " + mnt + " " + obj + " --name pub --shared"), 0);
    EXPECT_EQ(AsUser([&] {
        return Sh(cisc + " run " + mnt + " --prog pub --input /f > " + bobrun).status;
    }, kBob, kBob), 0);
    EXPECT_EQ(ReadFile(bobrun), "2\n");
    EXPECT_EQ(Prog("unload " + mnt + " " + alice + "/grep").status, 0);
    EXPECT_EQ(ProgAs(kBob, "show " + mnt + " grep"), 0) << "bob's is untouched";
    EXPECT_NE(ProgAs(kAlice, "show " + mnt + " " + alice + "/grep"), 0) << "gone";
}

// A program's trace messages carry the data of its runs: only its owner
// and root see them.
TEST_F(ProgOwners, TracesOnlyForOwnerAndRoot)
{
    LoadOk(ExampleObj("cksum"), "--shared");
    ASSERT_TRUE(WriteFile(P("d"), std::string(10000, 'z')));
    RunResult r = Sh(cisc + " run " + mnt + " --prog cksum --input /d --arg 1=1 --arg 0=5");
    EXPECT_EQ(r.status, 1) << r.out;
    r = Prog("show " + mnt + " cksum");
    EXPECT_NE(r.out.find("trace: uid 0"), std::string::npos) << r.out;
    std::string out;
    EXPECT_EQ(ProgAs(kBob, "show " + mnt + " cksum", &out), 0) << out;
    EXPECT_NE(out.find("cksum"), std::string::npos) << out;
    EXPECT_EQ(out.find("trace:"), std::string::npos) << out;
}

}  // namespace
}  // namespace e2e
