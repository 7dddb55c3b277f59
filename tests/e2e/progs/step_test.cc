// Programs as steps of fused ops against a real device and the real
// libcisc: dependencies (bpf -> compress -> append), block processing of a
// multi-megabyte file with streams, failing and budget-exhausting programs
// leaving files unchanged (MacroTx) while the device serves on, ownership
// of programs for a second uid, and results visible through the mount.
#include "tests/e2e/libcisc/cisc_fixture.h"
#include "tests/e2e/progs/progs_fixture.h"

#include <zstd.h>

#include <algorithm>

namespace e2e {
namespace {

// Lines of words; every 37th contains "needle".
std::string Lines(size_t bytes)
{
    std::string s;
    uint32_t x = 12345;
    for (int n = 0; s.size() < bytes; n++) {
        int words = 3 + n % 9;
        for (int w = 0; w < words; w++) {
            x = x * 1103515245u + 12345u;
            s += std::string(1 + (x >> 16) % 7, (char)('a' + (x >> 8) % 26)) + " ";
        }
        if (n % 37 == 0)
            s += "needle ";
        s += std::to_string(n) + "\n";
    }
    return s;
}

std::string GrepLines(const std::string &text, const std::string &pat)
{
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t e = text.find('\n', pos);
        size_t end = e == std::string::npos ? text.size() : e + 1;
        std::string line = text.substr(pos, end - pos);
        if (line.find(pat) != std::string::npos)
            out += line;
        pos = end;
    }
    return out;
}

int Sink(void *arg, const void *buf, size_t len)
{
    static_cast<std::string *>(arg)->append(static_cast<const char *>(buf), len);
    return 0;
}

}  // namespace

class ProgStep : public CiscTest {
protected:
    // Loads obj on the device with the CLI; returns its id.
    uint32_t Load(const std::string &obj, const std::string &opts = "")
    {
        RunResult r = Sh(cisc + " prog load " + mnt + " " + obj + " " + opts);
        EXPECT_EQ(r.status, 0) << r.out;
        size_t p = r.out.find("(id ");
        return p == std::string::npos ? 0 : (uint32_t)atoi(r.out.c_str() + p + 4);
    }

    uint64_t Open(const std::string &path, int flags)
    {
        uint64_t fh = 0;
        EXPECT_EQ(cisc_open(q, path.c_str(), flags, 0644, &fh), 0) << path;
        return fh;
    }
};

// read -> bpf -> zstd compress -> append, one op; the output is checked by
// decompressing what landed in the file.
TEST_F(ProgStep, BpfOutputFeedsCompressThenAppend)
{
    uint32_t id = Load(DevObj("upper"));
    std::string text = Lines(300 << 10);
    ASSERT_TRUE(WriteFile(P("in.txt"), text));
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int in = cisc_vec_open(&v, "in.txt", O_RDONLY, 0);
    int rd = cisc_vec_read(&v, in, 0, text.size());
    int bp = cisc_vec_bpf(&v, id, CISC_IN_STEP(rd), nullptr);
    int z = cisc_vec_compress(&v, CISC_IN_STEP(bp), 3);
    int out = cisc_vec_open(&v, "out.zst", O_WRONLY | O_CREAT | O_APPEND, 0644);
    int ap = cisc_vec_append(&v, out, CISC_IN_STEP(z));
    ASSERT_EQ(cisc_vec_submit(&v), 0);
    EXPECT_EQ(cisc_vec_ret(&v, bp), (int64_t)text.size());
    EXPECT_EQ(cisc_vec_out_len(&v, bp), text.size());
    EXPECT_GT(cisc_vec_ret(&v, ap), 0);
    cisc_vec_free(&v);
    std::string z1 = ReadFile(P("out.zst"));   // through the mount, at once
    std::string back(text.size(), '\0');
    size_t n = ZSTD_decompress(back.data(), back.size(), z1.data(), z1.size());
    ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
    back.resize(n);
    EXPECT_EQ(back, Upper(text));
}

TEST_F(ProgStep, ArgumentsBlockSizesAndArenaInput)
{
    uint32_t id = Load(ExampleObj("grep"));
    std::string text = Lines(100 << 10);
    std::string want = GrepLines(text, "needle");
    for (uint32_t bs : { 4096u, 512u, 65536u }) {
        struct cisc_vec v;
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        struct cisc_bpf_opts o = {};
        memcpy(&o.arg[0], "needle", 6);
        o.block_size = bs;
        o.block_out = bs < 8192 ? 8192 : 0;   // room for a line carried over blocks
        int g = cisc_vec_bpf(&v, id, CISC_IN_BUF(text.data(), text.size()), &o);
        std::string got(text.size() + 16384, '\0');
        ASSERT_EQ(cisc_vec_out_to(&v, g, got.data(), got.size()), 0);
        ASSERT_EQ(cisc_vec_submit(&v), 0) << bs;
        got.resize(cisc_vec_out_len(&v, g));
        EXPECT_EQ(got, want) << "block size " << bs;
        cisc_vec_free(&v);
    }
}

// A multi-megabyte file through `cisc run`: several fused ops chained by a
// stream, blocks numbered across them, the same result as one pass.
TEST_F(ProgStep, MultiMegabyteFileInBlocksAndChunks)
{
    Load(ExampleObj("grep"));
    Load(DevObj("blockinfo"));
    std::string text = Lines(6 << 20);
    ASSERT_TRUE(WriteFile(P("big.log"), text));
    RunResult r = Sh(cisc + " run " + mnt + " --prog grep --input /big.log --arg 0=str:needle "
                     "--chunk 1M --output /big.grep -v");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(std::to_string(text.size()) + " bytes read in the device"),
              std::string::npos) << r.out;
    size_t ops = (text.size() + (1 << 20) - 1) >> 20;
    EXPECT_NE(r.out.find(std::to_string(ops) + " fused ops"), std::string::npos) << r.out;
    EXPECT_EQ(ReadFile(P("big.grep")), GrepLines(text, "needle"));

    std::string recs;
    struct cisc_prog_run_opts o = {};
    o.prog = "blockinfo";
    o.chunk = 1 << 20;
    o.sink = Sink;
    o.sink_arg = &recs;
    struct cisc_prog_run_stats st;
    ASSERT_EQ(cisc_prog_run(q, "big.log", &o, &st), 0);
    size_t blocks = (text.size() + 4095) / 4096;
    ASSERT_EQ(recs.size(), blocks * 32);
    EXPECT_EQ(st.ops, ops);
    EXPECT_EQ(st.in_bytes, text.size());
    const uint64_t *b = reinterpret_cast<const uint64_t *>(recs.data());
    for (size_t k = 0; k < blocks; k++) {
        EXPECT_EQ(b[4 * k], k);                    // ctx->block, continuous
        EXPECT_EQ(b[4 * k + 1], k * 4096);         // ctx->offset: the file offset
        uint64_t flags = (k == 0 ? 1 : 0) | (k + 1 == blocks ? 2 : 0);
        ASSERT_EQ(b[4 * k + 3], flags) << "block " << k;
    }
    EXPECT_EQ(b[4 * (blocks - 1) + 2], text.size() - (blocks - 1) * 4096);
}

// The CLI: stdout, host paths under the mount, output visible at once.
TEST_F(ProgStep, CiscRunPathsAndOutputs)
{
    Load(ExampleObj("grep"));
    std::string text = Lines(50 << 10);
    ASSERT_EQ(mkdir(P("logs").c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(P("logs/a.log"), text));
    std::string want = GrepLines(text, "needle");
    RunResult r = Sh(cisc + " run " + mnt + " --prog grep --input /logs/a.log --arg 0=str:needle");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, want);
    r = Sh(cisc + " run " + mnt + " --prog grep --input " + P("logs/a.log") +
           " --arg 0=str:needle --output " + P("logs/a.out"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(ReadFile(P("logs/a.out")), want);
    r = Sh("cd " + P("logs") + " && " + cisc + " run " + mnt +
           " --prog grep --input a.log --arg 0=str:needle --output b.out");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(ReadFile(P("logs/b.out")), want);
    r = Sh(cisc + " run " + mnt + " --prog grep --input /etc/passwd --arg 0=str:x");
    EXPECT_EQ(r.status, 2);   // a device path that does not exist
    EXPECT_NE(r.out.find("/etc/passwd"), std::string::npos) << r.out;
    r = Sh("cd /tmp && " + cisc + " run " + mnt + " --prog grep --input a.log --arg 0=str:x");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("not under the mount point"), std::string::npos) << r.out;
    r = Sh(cisc + " run " + mnt + " --prog nope --input /logs/a.log");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("no program 'nope'"), std::string::npos) << r.out;
    r = Sh(cisc + " run " + mnt + " --prog grep --input /logs/a.log --arg 4=1");
    EXPECT_EQ(r.status, 2);
}

// `cisc run --arg N=str:TEXT` replaces what an earlier --arg put in the
// same words: a shorter string after a longer one, or after a number,
// leaves none of the earlier bytes behind (they once were OR-ed together,
// and grep looked for a garbled pattern).
TEST_F(ProgStep, CiscRunArgReplacesAnEarlierValueInItsSlot)
{
    Load(ExampleObj("grep"));
    std::string text = Lines(20 << 10);
    ASSERT_TRUE(WriteFile(P("a.log"), text));
    std::string want = GrepLines(text, "needle");
    ASSERT_FALSE(want.empty());
    for (std::string earlier : { "--arg 0=str:zzzzzzzz", "--arg 0=0x7a7a7a7a7a7a7a7a" }) {
        RunResult r = Sh(cisc + " run " + mnt + " --prog grep --input /a.log " + earlier +
                         " --arg 0=str:needle");
        EXPECT_EQ(r.status, 0) << earlier << ": " << r.out;
        EXPECT_EQ(r.out, want) << earlier;
    }
}

// A program error and budget exhaustion fail the op: none of its changes
// (truncate, append) are applied; the device serves on.
TEST_F(ProgStep, FailingAndSpinningProgramsLeaveFilesUnchanged)
{
    Down();
    Up("--prog-budget 200000");
    cisc_session_close(s);
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    uint32_t up = Load(DevObj("upper")), spin = Load(DevObj("spin"));
    std::string text = Lines(64 << 10), before = "previous content\n";
    ASSERT_TRUE(WriteFile(P("in"), text));
    ASSERT_TRUE(WriteFile(P("out"), before));
    for (int which = 0; which < 2; which++) {
        struct cisc_vec v;
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        int in = cisc_vec_open(&v, "in", O_RDONLY, 0);
        int out = cisc_vec_open(&v, "out", O_WRONLY | O_TRUNC, 0);
        int rd = cisc_vec_read(&v, in, 0, text.size());
        struct cisc_bpf_opts o = {};
        o.arg[0] = 1;
        o.arg[1] = 5;   // upper: fail at block 5; spin: spin at block 1
        int bp = cisc_vec_bpf(&v, which ? spin : up, CISC_IN_STEP(rd), &o);
        int ap = cisc_vec_append(&v, out, CISC_IN_STEP(bp));
        int64_t st = cisc_vec_submit(&v);
        EXPECT_EQ(st, which ? -ETIME : -EIO);
        EXPECT_EQ(cisc_vec_ret(&v, bp), which ? -ETIME : -EIO);
        EXPECT_EQ(cisc_vec_ret(&v, ap), -ECANCELED);
        cisc_vec_free(&v);
        EXPECT_EQ(ReadFile(P("out")), before) << which;   // truncate not applied either
    }
    // the CLI: the existing output stays as it was, no temporary file left
    RunResult r = Sh(cisc + " run " + mnt + " --prog upper --input /in --output /out "
                     "--arg 0=1 --arg 1=10 --chunk 16K");   // fails in the 3rd op
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("program 'upper' failed: Input/output error (-5)"), std::string::npos)
        << r.out;
    r = Sh(cisc + " run " + mnt + " --prog spin --input /in --output /out --arg 0=2");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("exhausted its instruction budget"), std::string::npos) << r.out;
    EXPECT_TRUE(ReadFile(P("out")) == before);
    RunResult ls = Sh("ls -a " + mnt);
    EXPECT_EQ(ls.out.find("cisc-run"), std::string::npos) << ls.out;
    r = Sh(cisc + " prog show " + mnt + " spin");
    EXPECT_NE(r.out.find("budget hits   2"), std::string::npos) << r.out;
    r = Sh(cisc + " prog show " + mnt + " upper");
    EXPECT_NE(r.out.find("errors        2"), std::string::npos) << r.out;
    // and the device serves on: the same op with a good program works
    r = Sh(cisc + " run " + mnt + " --prog upper --input /in --output /out");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(ReadFile(P("out")), Upper(text));
}

TEST_F(ProgStep, OwnershipForAnotherUser)
{
    Load(DevObj("upper"), "--name priv");
    Load(DevObj("upper"), "--name pub --shared");
    ASSERT_TRUE(WriteFile(P("f"), "hello\n"));
    ASSERT_EQ(chmod(P("f").c_str(), 0644), 0);
    std::string c = cisc, m = mnt, obj = DevObj("upper");
    EXPECT_EQ(AsUser([&] {
        RunResult r = Sh(c + " run " + m + " --prog priv --input /f");
        if (r.status != 2 || r.out.find("not yours and not shared") == std::string::npos)
            return 1;
        r = Sh(c + " run " + m + " --prog pub --input /f");
        if (r.status != 0 || r.out != "HELLO\n")
            return 2;
        // runs with the caller's credentials: it may not create files in root's directory
        r = Sh(c + " run " + m + " --prog pub --input /f --output /f");
        if (r.status != 2 || r.out.find("/f: Permission denied") == std::string::npos)
            return 3;
        return Sh(c + " prog load " + m + " " + obj + " --name mine").status ? 4 : 0;
    }), 0);
    RunResult r = Sh(cisc + " run " + mnt + " --prog mine --input /f");   // root may
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, "HELLO\n");
}

TEST_F(ProgStep, StepErrorsBeforeAnythingRuns)
{
    uint32_t id = Load(DevObj("upper"));
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int w = cisc_vec_open(&v, "made", O_WRONLY | O_CREAT, 0644);
    cisc_vec_append(&v, w, CISC_IN_BUF("x", 1));
    cisc_vec_bpf(&v, id + 100, CISC_IN_BUF("abc", 3), nullptr);   // no such program
    EXPECT_EQ(cisc_vec_submit(&v), -ENOENT);
    cisc_vec_free(&v);
    struct stat st;
    EXPECT_EQ(stat(P("made").c_str(), &st), -1);   // the op did not start
    // a stream of another session is unknown here
    uint64_t stream;
    ASSERT_EQ(cisc_prog_stream_open(s, &stream), 0);
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    struct cisc_bpf_opts o = {};
    o.stream = stream + 1;
    cisc_vec_bpf(&v, id, CISC_IN_BUF("abc", 3), &o);
    EXPECT_EQ(cisc_vec_submit(&v), -ENOENT);
    cisc_vec_free(&v);
    EXPECT_EQ(cisc_prog_stream_close(s, stream), 0);
    EXPECT_EQ(cisc_prog_stream_close(s, stream), -ENOENT);
    // the system directory is out of reach of OPEN steps too
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    cisc_vec_open(&v, "/.cisc-system/progs/1", O_RDONLY, 0);
    EXPECT_EQ(cisc_vec_submit(&v), -ENOENT);
    cisc_vec_free(&v);
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    cisc_vec_open(&v, "/.cisc-system", O_RDWR | O_CREAT, 0644);
    EXPECT_EQ(cisc_vec_submit(&v), -EINVAL);   // a reserved name (sysdir.h)
    cisc_vec_free(&v);
}

TEST_F(ProgStep, TracesReachShowAndTheDeviceLog)
{
    Down();
    Up("--trace");
    cisc_session_close(s);
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    Load(ExampleObj("cksum"));
    ASSERT_TRUE(WriteFile(P("d"), std::string(10000, 'z')));
    RunResult r = Sh(cisc + " run " + mnt + " --prog cksum --input /d --arg 1=1 --arg 0=5");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("Bad message"), std::string::npos) << r.out;
    r = Sh(cisc + " prog show " + mnt + " cksum");
    EXPECT_NE(r.out.find("trace: uid 0 block 2: cksum: crc32c"), std::string::npos) << r.out;
    EXPECT_NE(ReadFile(log).find("trace: program 'cksum' (id 1) uid 0 block 2: cksum: crc32c"),
              std::string::npos);
}

// The C callers in examples/ do what docs/BPF.md says.
TEST_F(ProgStep, ExamplesRunAsDocumented)
{
    std::string bin = std::string(getenv("CISC_BINARY_DIR") ? getenv("CISC_BINARY_DIR")
                                                            : CISC_BINARY_DIR) + "/examples/";
    std::string text = Lines(200 << 10);
    ASSERT_TRUE(WriteFile(P("t.log"), text));
    RunResult r = Sh("(" + bin + "prog-grep " + mnt + " " + ExampleObj("grep") +
                     " needle /t.log 2>/dev/null)");
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.out == GrepLines(text, "needle"));
    r = Sh(bin + "prog-wc " + mnt + " " + ExampleObj("wc") + " /t.log");
    EXPECT_EQ(r.status, 0) << r.out;
    RunResult wc = Sh("wc < " + P("t.log") + " | awk '{print $1, $2, $3}'");
    EXPECT_EQ(r.out, wc.out);
    ASSERT_TRUE(WriteFile(P("t.csv"), "a,b,c\n1,\"x,y\",3\n4,5,6\n"));
    r = Sh(bin + "prog-csv " + mnt + " " + ExampleObj("csv") + " 0,2 /t.csv /t2.csv");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(ReadFile(P("t2.csv")), "a,c\n1,3\n4,6\n");
    r = Sh(bin + "prog-cksum " + mnt + " " + ExampleObj("cksum") + " /t.log /copy");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(ReadFile(P("copy")), text);
    // the source changes between the checksum and the copy: no copy at all
    FILE *p = popen(("PROG_CKSUM_PAUSE=1 " + bin + "prog-cksum " + mnt + " " +
                     ExampleObj("cksum") + " /t.log /copy2 >/dev/null 2>&1").c_str(), "w");
    ASSERT_NE(p, nullptr);
    sleep(1);
    ASSERT_TRUE(WriteFile(P("t.log"), text + "one more line\n"));
    fputs("\n", p);
    int st = pclose(p);
    EXPECT_EQ(WEXITSTATUS(st), 1);
    struct stat sb;
    EXPECT_EQ(stat(P("copy2").c_str(), &sb), -1);
}

}  // namespace e2e
