// tests/e2e/cli/run_test.cc - `cisc run` and `cisc bpf run` take their
// input from a pipe as well as from a file (--input -, <(cmd)), give the
// same result either way, name the mount point when a relative path
// cannot be one of the device's, and show progress on a terminal only.
#include "tests/e2e/progs/progs_fixture.h"

namespace e2e {
namespace {

using CliRun = ProgsTest;

// Lines of text, every 7th holding "needle" (several MiB: several ops).
static std::string Text(size_t bytes)
{
    std::string s;
    for (unsigned i = 0; s.size() < bytes; i++)
        s += "line " + std::to_string(i) + (i % 7 == 0 ? " needle here\n" : " hay\n");
    return s;
}

static std::string Grep(const std::string &text)
{
    std::string out, line;
    std::istringstream in(text);
    while (std::getline(in, line))
        if (line.find("needle") != std::string::npos)
            out += line + "\n";
    return out;
}

TEST_F(CliRun, StdinAndPipesGiveTheFilesResult)
{
    LoadOk(ExampleObj("grep"));
    std::string text = Text(3 << 20), want = Grep(text), host = dir + "/host.txt";
    ASSERT_TRUE(WriteFile(host, text));
    ASSERT_TRUE(WriteFile(P("in.txt"), text));
    std::string run = cisc + " run " + mnt + " --prog grep --arg 0=str:needle --chunk 1M";
    RunResult r = Sh(run + " --input /in.txt");
    ASSERT_EQ(r.status, 0) << r.out.substr(0, 400);
    EXPECT_TRUE(r.out == want);
    r = Sh("cat " + host + " | " + run + " --input -");
    EXPECT_EQ(r.status, 0) << r.out.substr(0, 400);
    EXPECT_TRUE(r.out == want) << r.out.size() << " bytes, want " << want.size();
    r = Sh("bash -c '" + run + " --input <(cat " + host + ")'");
    EXPECT_EQ(r.status, 0) << r.out.substr(0, 400);
    EXPECT_TRUE(r.out == want);
    // into a file of the device, replaced only when the run succeeds
    r = Sh("cat " + host + " | " + run + " --input - --output /from-pipe");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(ReadFile(P("from-pipe")) == want);
    // an empty pipe: the program still sees its (empty) last block
    r = Sh(run + " --input - </dev/null");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, "");
    // cisc bpf run, without a device, reads pipes the same way
    std::string bpf = cisc + " bpf run " + ExampleObj("grep") + " --arg 0=str:needle";
    r = Sh("cat " + host + " | (" + bpf + " --input - 2>/dev/null)");   // the report: stderr
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.out == want) << r.out.size() << " bytes, want " << want.size();
}

TEST_F(CliRun, FailuresFromAPipeLeaveTheOutputAlone)
{
    LoadOk(DevObj("upper"));
    ASSERT_TRUE(WriteFile(P("out"), "before\n"));
    // upper fails at block 1 when arg0 = 1, arg1 = 1
    RunResult r = Sh("head -c 100000 /dev/zero | " + cisc + " run " + mnt +
                     " --prog upper --input - --output /out --arg 0=1 --arg 1=1");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("program 'upper' failed"), std::string::npos) << r.out;
    EXPECT_EQ(ReadFile(P("out")), "before\n");
    RunResult ls = Sh("ls -a " + mnt);
    EXPECT_EQ(ls.out.find("cisc-run"), std::string::npos) << ls.out;
}

TEST_F(CliRun, RelativePathOutsideTheMountNamesIt)
{
    LoadOk(ExampleObj("grep"));
    RunResult r = Sh("cd /tmp && " + cisc + " run " + mnt + " --prog grep --input a.log");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("not under the mount point " + mnt), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("give /a.log"), std::string::npos) << r.out;
}

TEST_F(CliRun, ProgressOnATerminalOnly)
{
    if (Sh("command -v script").status != 0)
        GTEST_SKIP() << "no script(1) to give the command a terminal";
    LoadOk(ExampleObj("grep"));
    ASSERT_TRUE(WriteFile(P("in.txt"), Text(2 << 20)));
    std::string run = cisc + " run " + mnt + " --prog grep --arg 0=str:needle --chunk 256K "
                      "--input /in.txt --output /out.txt";
    // script(1) gives the command a terminal for stdout and stderr
    RunResult r = Sh("script -qec '" + run + "' /dev/null");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("cisc run: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" of 2.0 MiB, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/s"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("left"), std::string::npos) << r.out;
    r = Sh("script -qec '" + run + " -q' /dev/null");   // asked to be quiet
    EXPECT_EQ(r.out.find("cisc run: "), std::string::npos) << r.out;
    r = Sh(run);   // not a terminal: nothing but the result
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace e2e
