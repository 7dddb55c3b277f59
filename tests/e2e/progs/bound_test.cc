// The floor on a fused op's work (device/engine/engine.h) against a real
// device and the real libcisc: a long bpf op never runs on a poller (other
// clients' commands complete while it runs), a step's instructions summed
// over its blocks and an op's over its steps are bounded (-ETIME, the op
// rolled back), and `cisc down` or SIGTERM stop running ops at their next
// block with -ECANCELED, the files unchanged and the image clean.
#include "tests/e2e/libcisc/cisc_fixture.h"
#include "tests/e2e/progs/progs_fixture.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace e2e {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

class OpBound : public CiscTest {
protected:
    uint32_t Load(const std::string &obj)
    {
        RunResult r = Sh(cisc + " prog load " + mnt + " " + obj);
        EXPECT_EQ(r.status, 0) << r.out;
        size_t p = r.out.find("(id ");
        return p == std::string::npos ? 0 : (uint32_t)atoi(r.out.c_str() + p + 4);
    }

    // Runs one op of burn (arg[0] = n) over `blocks` one-byte blocks on q;
    // returns its wall time in ms.
    double RunBurn(uint32_t id, uint64_t n, size_t blocks)
    {
        std::string in(blocks, 'x');
        struct cisc_vec v;
        EXPECT_EQ(cisc_vec_init(&v, q), 0);
        struct cisc_bpf_opts o = {};
        o.arg[0] = n;
        o.block_size = 1;
        cisc_vec_bpf(&v, id, CISC_IN_BUF(in.data(), in.size()), &o);
        Clock::time_point t0 = Clock::now();
        EXPECT_EQ(cisc_vec_submit(&v), 0);
        double ms = MsSince(t0);
        cisc_vec_free(&v);
        return ms;
    }

    // Instructions burn runs per block with arg[0] = n (from the program's
    // counters after one small op of `blocks` one-byte blocks).
    uint64_t BurnPerBlock(uint32_t id, uint64_t n)
    {
        const int blocks = 100;
        RunBurn(id, n, blocks);
        RunResult r = Sh(cisc + " prog show " + mnt + " burn");
        size_t p = r.out.find("insns run");
        EXPECT_NE(p, std::string::npos) << r.out;
        uint64_t total = p == std::string::npos ? 0 : strtoull(r.out.c_str() + r.out.find_first_of("0123456789", p), nullptr, 10);
        return total / blocks;
    }

    // An op on queue qq that opens `file` for writing, truncates it and
    // appends the output of burn (arg[0] = n) over `blocks` one-byte
    // blocks: nothing is applied unless the bpf step finishes.
    struct Op {
        struct cisc_vec v;
        std::string in;
        int bp = -1, ap = -1;
    };

    std::unique_ptr<Op> LongOp(struct cisc_queue *qq, uint32_t id, uint64_t n, size_t blocks,
                               const std::string &file)
    {
        auto op = std::make_unique<Op>();
        op->in.assign(blocks, 'x');
        EXPECT_EQ(cisc_vec_init(&op->v, qq), 0);
        int f = cisc_vec_open(&op->v, file.c_str(), O_WRONLY | O_TRUNC, 0);
        struct cisc_bpf_opts o = {};
        o.arg[0] = n;
        o.block_size = 1;
        o.block_out = 1;
        op->bp = cisc_vec_bpf(&op->v, id, CISC_IN_BUF(op->in.data(), op->in.size()), &o);
        op->ap = cisc_vec_append(&op->v, f, CISC_IN_STEP(op->bp));
        return op;
    }

    // Blocks of burn (arg[0] = n) that keep one op busy for about
    // target_ms on this host (JIT or interpreter, fast or slow CPU),
    // timed from a short op; at least min_blocks. The device must run
    // with kLongBudget so that the step's total (ENG_STEP_BUDGETS times
    // the per-invocation budget) does not stop it first.
    size_t BlocksFor(uint32_t id, uint64_t n, double target_ms, size_t min_blocks)
    {
        const size_t probe = 200;
        double per = RunBurn(id, n, probe) / probe;
        size_t blocks = per > 0 ? (size_t)(target_ms / per) : min_blocks;
        blocks = std::max(blocks, min_blocks);
        blocks = std::min(blocks, (size_t)4000000);
        printf("%.4f ms a block: %zu blocks for %.0f ms\n", per, blocks, target_ms);
        return blocks;
    }

    // Per-invocation budget for the long ops: burn's 600000 a block fits,
    // and the step's total (4096 of these) outlasts any host.
    static constexpr const char *kLongBudget = "--prog-budget 100000000";

    void ExpectClean()
    {
        RunResult f = Sh(cisc + " fsck " + img);
        EXPECT_EQ(f.status, 0) << f.out;
    }
};

// Client A's bpf op alone on its queue runs on a device core, not on the
// poller: client B's round trip on another session completes while A's op
// still runs (before, the poller ran A's op itself and B waited for it).
TEST_F(OpBound, LongOpDoesNotStallOtherClients)
{
    Restart(kLongBudget);
    uint32_t id = Load(DevObj("burn"));
    uint64_t n = 100000;   // about 600000 instructions a block, under the 1M budget
    ASSERT_LT(BurnPerBlock(id, n), 1000000u);
    size_t blocks = BlocksFor(id, n, 3000, 2000);   // seconds of work
    ASSERT_TRUE(WriteFile(P("a"), "a's file\n"));
    ASSERT_TRUE(WriteFile(P("b"), "b's file\n"));
    struct cisc_session *sb;
    struct cisc_queue *qb;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &sb), 0);
    ASSERT_EQ(cisc_queue_create(sb, &qb), 0);
    uint64_t fh = 0;
    ASSERT_EQ(cisc_open(qb, "b", O_RDONLY, 0, &fh), 0);

    auto a = LongOp(q, id, n, blocks, "a");
    Clock::time_point ta = Clock::now();
    ASSERT_EQ(cisc_vec_submit_async(&a->v), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));   // A is fetched first
    Clock::time_point t0 = Clock::now();
    EXPECT_EQ(cisc_nop(qb), 0);
    char buf[64];
    EXPECT_EQ(cisc_pread(qb, fh, buf, sizeof(buf), 0), 9);
    double b_ms = MsSince(t0);
    EXPECT_EQ(cisc_vec_poll(&a->v), -EAGAIN) << "B waited for A's op";
    printf("client B's round trips while A's op runs: %.3f ms\n", b_ms);
    EXPECT_EQ(cisc_vec_wait(&a->v), 0);
    printf("client A's op: %.0f ms\n", MsSince(ta));
    EXPECT_EQ(ReadFile(P("a")), "");   // A's op applied: its output (none) replaced the file
    cisc_vec_free(&a->v);
    cisc_session_close(sb);
}

// A program under its per-invocation budget in every block of a large
// input in one-byte blocks is stopped by the step's total (ENG_STEP_BUDGETS
// budgets) with -ETIME, and an op by its total over steps (ENG_OP_BUDGETS);
// the op is rolled back.
TEST_F(OpBound, StepAndOpInstructionTotals)
{
    Down();
    Up("--prog-budget 20000");
    cisc_session_close(s);
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    uint32_t id = Load(DevObj("burn"));
    uint64_t per = BurnPerBlock(id, 2000);
    ASSERT_GT(per, 10000u);
    ASSERT_LT(per, 20000u);
    const uint64_t step_total = 20000ull * 4096;   // ENG_STEP_BUDGETS budgets
    ASSERT_TRUE(WriteFile(P("out"), "before\n"));

    // one step that would run 20 times its total
    auto op = LongOp(q, id, 2000, (size_t)(20 * step_total / per), "out");
    EXPECT_EQ(cisc_vec_submit(&op->v), -ETIME);
    EXPECT_EQ(cisc_vec_ret(&op->v, op->bp), -ETIME);
    EXPECT_EQ(cisc_vec_ret(&op->v, op->ap), -ECANCELED);
    cisc_vec_free(&op->v);
    EXPECT_EQ(ReadFile(P("out")), "before\n");

    // steps of 0.7 of the step total each: the op's total (4 step totals)
    // stops the sixth
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_open(&v, "out", O_WRONLY | O_TRUNC, 0);
    std::string in((size_t)(7 * step_total / 10 / per), 'x');
    struct cisc_bpf_opts o = {};
    o.arg[0] = 2000;
    o.block_size = 1;
    o.block_out = 1;
    int bp[6];
    for (int i = 0; i < 6; i++)
        bp[i] = cisc_vec_bpf(&v, id, CISC_IN_BUF(in.data(), in.size()), &o);
    int ap = cisc_vec_append(&v, f, CISC_IN_STEP(bp[5]));
    EXPECT_EQ(cisc_vec_submit(&v), -ETIME);
    for (int i = 0; i < 5; i++)
        EXPECT_EQ(cisc_vec_ret(&v, bp[i]), 0) << i;
    EXPECT_EQ(cisc_vec_ret(&v, bp[5]), -ETIME);
    EXPECT_EQ(cisc_vec_ret(&v, ap), -ECANCELED);
    cisc_vec_free(&v);
    EXPECT_EQ(ReadFile(P("out")), "before\n");
    RunResult r = Sh(cisc + " prog show " + mnt + " burn");
    EXPECT_NE(r.out.find("budget hits   2"), std::string::npos) << r.out;
    ExpectDeviceUp();
}

// `cisc down` (stop = 0) or SIGTERM (stop = 1) while long ops run on every
// core: the device stops at their next block, they complete with
// -ECANCELED, their files are unchanged and the image is clean.
class OpBoundStop : public OpBound, public ::testing::WithParamInterface<int> {};

TEST_P(OpBoundStop, StopCancelsRunningOps)
{
    Restart(kLongBudget);
    uint32_t id = Load(DevObj("burn"));
    size_t blocks = BlocksFor(id, 100000, 5000, 3000);   // seconds each
    const int nops = 3;   // more than the 2 cores
    struct cisc_session *ss[nops];
    struct cisc_queue *qs[nops];
    std::unique_ptr<Op> ops[nops];
    for (int i = 0; i < nops; i++) {
        std::string name = "f" + std::to_string(i);
        ASSERT_TRUE(WriteFile(P(name), name + " before\n"));
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &ss[i]), 0);
        ASSERT_EQ(cisc_queue_create(ss[i], &qs[i]), 0);
        ops[i] = LongOp(qs[i], id, 100000, blocks, name);
    }
    for (int i = 0; i < nops; i++)
        ASSERT_EQ(cisc_vec_submit_async(&ops[i]->v), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));   // they run
    for (int i = 0; i < nops; i++)
        ASSERT_EQ(cisc_vec_poll(&ops[i]->v), -EAGAIN) << i;
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    Clock::time_point t0 = Clock::now();
    if (GetParam() == 0) {
        RunResult r = Sh(cisc + " down " + mnt);
        EXPECT_EQ(r.status, 0) << r.out;
    } else {
        ASSERT_EQ(kill(dev, SIGTERM), 0);
    }
    up = false;
    for (int i = 0; i < 600 && !ProcessEnded(dev); i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(ProcessEnded(dev));
    printf("device stopped %.0f ms after the request\n", MsSince(t0));
    for (int i = 0; i < nops; i++) {
        EXPECT_EQ(cisc_vec_wait(&ops[i]->v), -ECANCELED) << i;
        EXPECT_EQ(cisc_vec_ret(&ops[i]->v, ops[i]->bp), -ECANCELED) << i;
        EXPECT_EQ(cisc_vec_ret(&ops[i]->v, ops[i]->ap), -ECANCELED) << i;
        cisc_vec_free(&ops[i]->v);
        cisc_session_close(ss[i]);
    }
    ExpectClean();
    Up();
    for (int i = 0; i < nops; i++) {
        std::string name = "f" + std::to_string(i);
        EXPECT_EQ(ReadFile(P(name)), name + " before\n");
    }
}

INSTANTIATE_TEST_SUITE_P(DownAndSigterm, OpBoundStop, ::testing::Values(0, 1));

}  // namespace e2e
