// `cisc bpf` end to end: the real binary on real objects, checking exit
// status, stdout and stderr.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace {

struct Result {
    int status;
    std::string out, err;
};

std::string slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

class Cli : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/cisc-bpf-cli-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

    // Runs `cisc bpf ARGS` (ARGS already shell-quoted where needed).
    Result bpf(const std::string &args)
    {
        std::string cmd = std::string(CISC_BINARY_DIR) + "/cmd/cisc bpf " + args + " >" + dir_ +
                          "/out 2>" + dir_ + "/err";
        int st = std::system(cmd.c_str());
        return Result{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(dir_ + "/out"),
                      slurp(dir_ + "/err")};
    }

    std::string write(const std::string &name, const std::string &data)
    {
        std::string p = dir_ + "/" + name;
        std::ofstream(p, std::ios::binary) << data;
        return p;
    }

    static std::string corpus(const char *name)
    {
        return std::string(CORPUS_DIR) + "/" + name + ".o";
    }
    static std::string obj(const char *name) { return std::string(OBJS_DIR) + "/" + name + ".o"; }

    std::string dir_;
};

TEST_F(Cli, VerifyPrintsOneSummaryLinePerProgram)
{
    Result r = bpf("verify " + corpus("checksum"));
    EXPECT_EQ(r.status, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        EXPECT_NE(line.find(": verified: "), std::string::npos) << line;
        EXPECT_NE(line.find(" instructions, "), std::string::npos) << line;
        EXPECT_NE(line.find(" states"), std::string::npos) << line;
        EXPECT_NE(line.find(" ms"), std::string::npos) << line;
        n++;
    }
    EXPECT_EQ(n, 3);
    r = bpf("verify " + corpus("checksum") + " --prog crc32c_loop");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out.rfind("crc32c_loop: verified: ", 0), 0u) << r.out;
}

TEST_F(Cli, VerifyRejectionExitsOneWithReasonAndSourceLine)
{
    Result r = bpf("verify " + corpus("oob_by_one"));
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("program 'oob_by_one' rejected"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("oob_by_one.c:10"), std::string::npos) << r.err;
}

TEST_F(Cli, VerifyLogPrintsTheTrace)
{
    Result plain = bpf("verify " + corpus("wc"));
    Result log = bpf("verify " + corpus("wc") + " --log");
    EXPECT_EQ(log.status, 0) << log.err;
    EXPECT_GT(log.out.size(), plain.out.size() + 100);
}

TEST_F(Cli, LoaderRejectionExitsOne)
{
    Result r = bpf("verify " + obj("bss"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("writable global 'counter' in section .bss"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST_F(Cli, RunWritesConcatenatedOutputAndReport)
{
    std::string text;
    for (int i = 0; i < 2000; i++)
        text += "line " + std::to_string(i) + (i % 7 ? " ok\n" : " ERROR here\n");
    std::string in = write("in.txt", text), out = dir_ + "/out.bin";
    Result r = bpf("run " + corpus("grep") + " --input " + in + " --arg 0=str:ERROR --out " + out);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string want;
    for (int i = 0; i < 2000; i += 7)
        want += "line " + std::to_string(i) + " ERROR here\n";
    EXPECT_EQ(slurp(out), want);
    EXPECT_TRUE(r.out.empty());
    Result checked = bpf("run " + corpus("grep") + " --input " + in +
                         " --arg 0=str:ERROR --checked");
    EXPECT_EQ(checked.status, 0) << checked.err;
    EXPECT_EQ(checked.out, want) << "the bounds-checking run differs";
    size_t blocks = (text.size() + 4095) / 4096;
    EXPECT_NE(r.err.find("grep: " + std::to_string(blocks) + " blocks, " +
                         std::to_string(text.size()) + " bytes in, " +
                         std::to_string(want.size()) + " bytes out"),
              std::string::npos)
        << r.err;
    std::string last = "block " + std::to_string(blocks - 1) + " (offset " +
                       std::to_string((blocks - 1) * 4096) + ", ";
    EXPECT_NE(r.err.find(last), std::string::npos) << r.err;
}

TEST_F(Cli, RunToStdoutWithBlockSizeAndNumericArgs)
{
    std::string in = write("in.bin", std::string(1000, 'z'));
    Result r = bpf("run " + obj("blocks_probe") + " --prog probe --input " + in +
                   " --block-size 300 --arg 0=-2 --arg 1=0");
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(r.out.size(), 4 * 56u);
    uint64_t offset, len, arg0;
    memcpy(&offset, &r.out[3 * 56], 8);
    memcpy(&len, &r.out[3 * 56 + 8], 8);
    memcpy(&arg0, &r.out[3 * 56 + 32], 8);
    EXPECT_EQ(offset, 900u);
    EXPECT_EQ(len, 100u);
    EXPECT_EQ(arg0, (uint64_t)-2);
}

TEST_F(Cli, RunPrintsTraceMessages)
{
    std::string in = write("in.txt", std::string(4000, 'x'));   // one line, too long
    Result r = bpf("run " + corpus("grep") + " --input " + in +
                   " --block-size 1000 --out-size 8K");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("trace: block 2: grep: line longer than 2048 bytes"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("block 2 (offset 2000, 1000 bytes): returned -7"), std::string::npos)
        << r.err;
}

TEST_F(Cli, RunStopsOnTheBudget)
{
    std::string in = write("in.txt", "x");
    Result r = bpf("run " + corpus("infinite_loop") + " --input " + in + " --budget 10000");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("instruction budget of 10000 exhausted (-ETIME)"), std::string::npos)
        << r.err;
}

TEST_F(Cli, DisasmInterleavesSource)
{
    Result r = bpf("disasm " + corpus("subprog"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("charstats: section cisc, "), std::string::npos);
    EXPECT_NE(r.out.find("; subprog.c:"), std::string::npos);
    EXPECT_NE(r.out.find("int k = classify(c);"), std::string::npos);
    EXPECT_NE(r.out.find("<subprogram at "), std::string::npos);
    EXPECT_NE(r.out.find("call 9 <cisc_state>"), std::string::npos);
    EXPECT_NE(r.out.find("= *(u8 *)("), std::string::npos);
}

TEST_F(Cli, RunInterpAndJitGiveTheSameOutputAndCounts)
{
    std::string text;
    for (int i = 0; i < 500; i++)
        text += "row " + std::to_string(i) + (i % 5 ? " fine\n" : " ERROR\n");
    std::string in = write("in.txt", text);
    Result jit = bpf("run " + corpus("grep") + " --input " + in + " --arg 0=str:ERROR -v");
    Result interp =
        bpf("run " + corpus("grep") + " --input " + in + " --arg 0=str:ERROR -v --interp");
    ASSERT_EQ(jit.status, 0) << jit.err;
    ASSERT_EQ(interp.status, 0) << interp.err;
    EXPECT_FALSE(jit.out.empty());
    EXPECT_EQ(jit.out, interp.out);
    EXPECT_EQ(jit.err, interp.err);   // every block's return value and instruction count
}

TEST_F(Cli, DisasmJitedShowsNativeCodeUnderEachInstruction)
{
    Result r = bpf("disasm " + corpus("subprog") + " --jited");
    ASSERT_EQ(r.status, 0) << r.err;
#if defined(__x86_64__)
    EXPECT_NE(r.out.find("JIT-compiled: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bytes of x86-64 code"), std::string::npos);
    EXPECT_NE(r.out.find("\n\t\t\t"), std::string::npos);   // a line of native bytes
#endif
    EXPECT_NE(r.out.find("<subprogram at "), std::string::npos);
    Result bad = bpf("disasm " + corpus("oob_by_one") + " --jited");
    EXPECT_EQ(bad.status, 1);   // only verified programs are compiled
}

TEST_F(Cli, DisasmShowsStringsFromRodata)
{
    Result r = bpf("disasm " + corpus("grep"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("ll <\"grep: line longer than %d bytes\\n\">"), std::string::npos)
        << r.out;
}

// --arg N=str:TEXT fills the words TEXT needs, replacing what an earlier
// --arg put there (cisc run parses --arg with the same function).
TEST_F(Cli, ArgStringReplacesAnEarlierArg)
{
    std::string in = write("in.bin", std::string(10, 'z'));
    auto arg0 = [&](const std::string &args) {
        Result r = bpf("run " + obj("blocks_probe") + " --prog probe --input " + in + " " + args);
        EXPECT_EQ(r.status, 0) << args << ": " << r.err;
        uint64_t v = 12345;   // no output
        if (r.out.size() == 56)
            memcpy(&v, &r.out[32], 8);
        return v;
    };
    EXPECT_EQ(arg0("--arg 0=str:abcdefghij --arg 0=str:ab"), 0x6261u);
    EXPECT_EQ(arg0("--arg 0=-1 --arg 0=str:ab"), 0x6261u);
    EXPECT_EQ(arg0("--arg 0=str:abcdefgh --arg 0=str:"), 0u);
    EXPECT_EQ(arg0("--arg 0=str:ab --arg 0=0xffffffffffffffff"), ~0ull);
}

TEST_F(Cli, UsageErrorsExitTwo)
{
    EXPECT_EQ(bpf("").status, 2);
    EXPECT_EQ(bpf("frobnicate x.o").status, 2);
    EXPECT_EQ(bpf("verify").status, 2);
    EXPECT_EQ(bpf("run " + corpus("wc")).status, 2) << "--input is required";
    EXPECT_EQ(bpf("verify " + corpus("wc") + " --input x").status, 2);
    EXPECT_EQ(bpf("verify " + corpus("wc") + " --bogus").status, 2);
    EXPECT_EQ(bpf("run " + corpus("wc") + " --input x --arg 4=1").status, 2);
    EXPECT_EQ(bpf("run " + corpus("wc") + " --input x --arg 0=str:" + std::string(40, 'a')).status,
              2);
    EXPECT_EQ(bpf("run " + corpus("wc") + " --input x --block-size 0").status, 2);
    EXPECT_EQ(bpf("run " + corpus("wc") + " --input /nonexistent").status, 2);
    Result r = bpf("verify /nonexistent.o");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("/nonexistent.o"), std::string::npos);
    r = bpf("run " + corpus("checksum") + " --input x");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("has 3 programs (crc32c_helper, crc32c_blocks, crc32c_loop)"),
              std::string::npos)
        << r.err;
    r = bpf("verify " + corpus("checksum") + " --prog nope");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("no program 'nope'"), std::string::npos) << r.err;
}

TEST_F(Cli, HelpGoesToStdout)
{
    Result r = bpf("--help");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("usage: cisc bpf verify"), std::string::npos);
}

}  // namespace
