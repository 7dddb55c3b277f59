// tests/e2e/cli/cli_test.cc - the command line behaves like its
// neighbours: one meaning for each exit status in every subcommand, an
// unknown option is an error everywhere, --json where scripts need it,
// user names in human output, `cisc list`, a mount point that `cisc up`
// creates, --size that must match an existing image, fsck and info in the
// same units, and a timestamped log in the foreground too.
#include "tests/e2e/progs/progs_fixture.h"

#include <regex>
#include <sys/statvfs.h>

namespace e2e {
namespace {

using Cli = ProgsTest;

// Runs a Python expression (over d, the JSON a command printed) and
// returns its value, or "INVALID" when the output is not JSON.
static std::string Json(const std::string &cmd, const std::string &expr)
{
    char tmpl[] = "/tmp/ciscfs-json-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0 || write(fd, expr.data(), expr.size()) != (ssize_t)expr.size())
        return "cannot write " + std::string(tmpl);
    close(fd);
    RunResult r = Sh(cmd + " 2>/dev/null | /usr/bin/python3 -c '"
                     "import json, sys\n"
                     "try: d = json.load(sys.stdin)\n"
                     "except Exception: print(\"INVALID\"); sys.exit(0)\n"
                     "print(eval(open(sys.argv[1]).read()))' " + tmpl);
    unlink(tmpl);
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n')
        out.pop_back();
    return out;
}

static std::vector<std::string> Commands(const std::string &cisc)
{
    RunResult r = Sh(cisc + " --help");
    std::vector<std::string> out;
    std::regex row("\n  ([a-z]+) ");
    for (std::sregex_iterator i(r.out.begin(), r.out.end(), row), e; i != e; ++i)
        out.push_back((*i)[1]);
    return out;
}

TEST_F(Cli, UnknownOptionsAreUsageErrorsInEveryCommand)
{
    std::vector<std::string> cmds = Commands(cisc);
    ASSERT_GE(cmds.size(), 12u);
    for (const std::string &c : cmds) {
        // Where a subcommand wants a verb or operands first, the option
        // comes after them, where it would be read as one.
        std::string args = c == "prog" ? "list --bogus-opt " + mnt
                           : c == "bpf" ? "verify --bogus-opt x.o"
                           : c == "tenant" ? "set " + mnt + " 1 --bogus-opt 1"
                           : "--bogus-opt " + mnt;
        RunResult r = Sh(cisc + " " + c + " " + args);
        EXPECT_EQ(r.status, 2) << c << ": " << r.out;
        EXPECT_NE(r.out.find("cisc " + c + ":"), std::string::npos) << c << ": " << r.out;
    }
    // the report that started it: --json was taken as a mount point
    RunResult r = Sh(cisc + " status --bogus " + mnt);
    EXPECT_NE(r.out.find("unknown option '--bogus'"), std::string::npos) << r.out;
    EXPECT_EQ(Sh(cisc + " status --json " + mnt).status, 0);
}

TEST_F(Cli, ExitStatusesMeanTheSameEverywhere)
{
    RunResult r = Sh(cisc + " --help");
    EXPECT_NE(r.out.find("Exit status: 0 success, 1 the operation failed, 2 usage or "
                         "environment error."), std::string::npos) << r.out;
    for (const std::string &c : Commands(cisc)) {
        r = Sh(cisc + " " + c + " --help");
        EXPECT_EQ(r.status, 0) << c;
        if (c == "exec") {   // like env(1): the command's own status, 126/127
            EXPECT_NE(r.out.find("Exit status: COMMAND's; 127"), std::string::npos) << r.out;
            continue;
        }
        EXPECT_NE(r.out.find("Exit status: 0 success, 1 the operation failed"),
                  std::string::npos) << c << ":\n" << r.out;
    }
    // prog load: a missing file and an ambiguous object are usage errors,
    // a program the verifier rejects is the operation failing
    r = Prog("load " + mnt + " " + dir + "/no-such.o");
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("no-such.o: No such file or directory"), std::string::npos) << r.out;
    r = Prog("load " + mnt + " " + DevObj("two"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("choose one with --prog"), std::string::npos) << r.out;
    r = Prog("load " + mnt + " " + DevObj("two") + " --prog nosuch");
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("no function 'nosuch'"), std::string::npos) << r.out;
    r = Prog("load " + mnt + " " + CorpusObj("oob_by_one"));
    EXPECT_EQ(r.status, 1) << r.out;
    // a directory that is not a mount: environment error, said plainly
    r = Prog("list " + dir);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("not a ciscfs mount point"), std::string::npos) << r.out;
    // fsck: problems are the operation failing; an unreadable image is not
    r = Sh(cisc + " fsck " + dir + "/no-such.img");
    EXPECT_EQ(r.status, 2) << r.out;
}

TEST_F(Cli, JsonForStatusInfoListAndPrograms)
{
    ASSERT_TRUE(WriteFile(P("x"), "x"));   // some operations to count
    std::string st = cisc + " status --json " + mnt;
    EXPECT_EQ(Json(st, "d['device']['pid']"), std::to_string(DaemonPid()));
    EXPECT_EQ(Json(st, "d['mountpoint']"), mnt);
    EXPECT_EQ(Json(st, "d['model']['cores']"), "2");
    EXPECT_EQ(Json(st, "len(d['core'])"), "2");
    EXPECT_EQ(Json(st, "[c['id'] for c in d['core']]"), "[0, 1]");
    EXPECT_EQ(Json(st, "'lookup' in [o['id'] for o in d['op']]"), "True");
    EXPECT_EQ(Json(st, "d['limits']['step_bytes'] > 0"), "True");
    EXPECT_EQ(Sh(cisc + " status --json --raw " + mnt).status, 2);

    LoadOk(CorpusObj("count"));
    LoadOk(DevObj("two"), "--prog second --name other --shared");
    std::string pl = cisc + " prog list --json " + mnt;
    EXPECT_EQ(Json(pl, "[(p['id'], p['name'], p['owner'], p['uid'], p['shared']) for p in d]"),
              "[(1, 'count', 'root', 0, False), (2, 'other', 'root', 0, True)]");
    std::string ps = cisc + " prog show " + mnt + " other --json";
    EXPECT_EQ(Json(ps, "(d['function'], d['broken'], len(d['sha256']))"), "('second', False, 64)");

    EXPECT_EQ(Json(cisc + " list --json", "[x['pid'] for x in d if x['mountpoint'] == '" + mnt +
                   "']"), "[" + std::to_string(DaemonPid()) + "]");

    Down();
    std::string in = cisc + " info --json " + img;
    EXPECT_EQ(Json(in, "(d['clean'], d['block_size'], d['blocks'] * d['block_size'])"),
              "(True, 4096, 268435456)");
    EXPECT_EQ(Json(in, "d['blocks_used'] + d['blocks_free'] == d['blocks']"), "True");
}

TEST_F(Cli, HumanOutputNamesUsers)
{
    RunResult r = Prog("load " + mnt + " " + CorpusObj("count"));
    EXPECT_NE(r.out.find("owner root"), std::string::npos) << r.out;
    r = Prog("list " + mnt);
    EXPECT_TRUE(std::regex_search(r.out, std::regex("count +root "))) << r.out;
    r = Prog("show " + mnt + " count");
    EXPECT_NE(r.out.find("owner         root (uid 0)"), std::string::npos) << r.out;
    // the scheduler's tenants (uids by default) by name too
    ASSERT_EQ(Sh("echo hi > " + mnt + "/tenant-file").status, 0);
    r = Sh(cisc + " status " + mnt);
    EXPECT_NE(r.out.find("tenant_by uid"), std::string::npos) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\\n  root +[0-9]+ +[0-9]+ "))) << r.out;
}

TEST_F(Cli, ListShowsEveryRunningDevice)
{
    std::string img2 = dir + "/img2", mnt2 = dir + "/second/m";
    RunResult r = Sh(cisc + " up --size 64M --cores 1 " + img2 + " " + mnt2);
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh(cisc + " list");
    Sh(cisc + " down " + mnt2);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("MOUNTPOINT"), std::string::npos) << r.out;
    std::regex first(mnt + " +" + img + " +" + std::to_string(DaemonPid()) + " +root +[0-9]+m[0-9]+s");
    EXPECT_TRUE(std::regex_search(r.out, first)) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(mnt2 + " +" + img2 + " +[0-9]+ +root"))) << r.out;
    r = Sh(cisc + " list extra");
    EXPECT_EQ(r.status, 2) << r.out;
}

TEST_F(Cli, UpCreatesTheMountPointItIsGiven)
{
    Down();
    std::string deep = dir + "/new/deeper";
    RunResult r = Sh(cisc + " up " + img + " " + deep);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(IsCiscMount(deep));
    EXPECT_EQ(Sh(cisc + " down " + deep).status, 0);
    EXPECT_FALSE(IsCiscMount(deep));
}

TEST_F(Cli, SizeOfAnExistingImageMustMatch)
{
    Down();
    RunResult r = Sh(cisc + " up --size 512M " + img + " " + mnt);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("holds 268435456 bytes, not the --size 536870912"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("cisc resize " + img + " 536870912"), std::string::npos) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
    Up();   // the same size (the fixture's 256M) is fine
}

// `cisc resize` grows a stopped device's image: refused while it runs,
// then df shows the new size at the next cisc up and the files are there.
TEST_F(Cli, ResizeGrowsWhatDfShows)
{
    ASSERT_TRUE(WriteFile(P("keep"), std::string(300000, 'r')));
    struct statvfs before, after;
    ASSERT_EQ(statvfs(mnt.c_str(), &before), 0);
    RunResult busy = Sh(cisc + " resize " + img + " 320M");
    EXPECT_EQ(busy.status, 2) << busy.out;
    EXPECT_NE(busy.out.find("in use by a running device"), std::string::npos) << busy.out;
    Down();
    RunResult r = Sh(cisc + " resize " + img + " 320M");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Sh(cisc + " fsck " + img).status, 0);
    RunResult u = Sh(cisc + " up --cores 2 --log " + log + " " + img + " " + mnt);
    ASSERT_EQ(u.status, 0) << u.out << ReadFile(log);
    up = true;
    ASSERT_EQ(statvfs(mnt.c_str(), &after), 0);
    EXPECT_EQ((after.f_blocks - before.f_blocks) * after.f_frsize, 64ull << 20);
    EXPECT_GT((after.f_bavail - before.f_bavail) * after.f_frsize, 60ull << 20);   // less
                                                       // the grown metadata reserve
    EXPECT_EQ(ReadFile(P("keep")), std::string(300000, 'r'));
}

TEST_F(Cli, FsckAndInfoCountUsageAlike)
{
    ASSERT_TRUE(WriteFile(P("f"), std::string(1 << 20, 'x')));
    Down();
    RunResult f = Sh(cisc + " fsck " + img), i = Sh(cisc + " info " + img);
    std::smatch fm, im;
    ASSERT_TRUE(std::regex_search(f.out, fm, std::regex("([0-9]+)/([0-9]+) blocks used"))) << f.out;
    ASSERT_TRUE(std::regex_search(i.out, im, std::regex("([0-9]+)/([0-9]+) blocks used"))) << i.out;
    EXPECT_EQ(fm[1], im[1]);
    EXPECT_EQ(fm[2], im[2]);
    EXPECT_GT(std::stoll(fm[1]), 256);   // the 1 MiB file counts
}

TEST_F(Cli, LogInTheForegroundIsTimestampedAndHasTheTrace)
{
    Down();
    std::string flog = dir + "/fg.log";
    // the foreground device, in the background of a shell
    RunResult r = Sh("(" + cisc + " up -f --trace --log " + flog + " " + img + " " + mnt +
                     " >" + dir + "/fg.out 2>&1 &) ; for i in $(seq 100); do grep -q ' " +
                     mnt + " ' /proc/self/mountinfo && exit 0; sleep 0.1; done; exit 1");
    ASSERT_EQ(r.status, 0) << ReadFile(dir + "/fg.out");
    ASSERT_TRUE(WriteFile(P("traced"), "t"));
    r = Sh(cisc + " down " + mnt);
    EXPECT_EQ(r.status, 0) << r.out;
    std::string l;
    for (int i = 0; i < 100 && l.find("name traced") == std::string::npos; i++) {
        usleep(50000);   // the logger writes what the device wrote before it ended
        l = ReadFile(flog);
    }
    EXPECT_NE(l.find("name traced"), std::string::npos) << l;
    std::istringstream lines(l);
    std::string line;
    std::regex stamp("^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9:]{8}\\.[0-9]{3}Z ");
    int n = 0;
    while (std::getline(lines, line)) {
        n++;
        EXPECT_TRUE(std::regex_search(line, stamp)) << line;
    }
    EXPECT_GT(n, 0);
    // a daemon's trace needs somewhere to go
    r = Sh(cisc + " up --trace " + img + " " + mnt);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("--trace writes to the log"), std::string::npos) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
}

}  // namespace
}  // namespace e2e
