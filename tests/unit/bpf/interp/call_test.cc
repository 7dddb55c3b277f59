/* Local calls (frames, callee-saved registers, per-frame r10, depth
 * limit), exits from nested frames, and the instruction budget. */
#include "vm_test_util.h"

#include <thread>

namespace {

TEST(Call, LocalCallReturnsValueAndArguments)
{
    /* r0 = f(20, 22) where f(a, b) = a + b */
    TestProg p({I_MOV64_IMM(1, 20), I_MOV64_IMM(2, 22), I_CALL_LOCAL(1), I_EXIT(),
                I_MOV64_REG(0, 1), I_ALU64_REG(VM_ADD, 0, 2), I_EXIT()});
    EXPECT_EQ(run_both(p), 42u);
}

TEST(Call, CalleeSavedRegistersRestored)
{
    /* Callee overwrites r6-r9; caller sees its own values. */
    TestProg p({I_MOV64_IMM(6, 1), I_MOV64_IMM(7, 2), I_MOV64_IMM(8, 3), I_MOV64_IMM(9, 4),
                I_CALL_LOCAL(6), I_MOV64_REG(0, 6), I_ALU64_REG(VM_ADD, 0, 7),
                I_ALU64_REG(VM_ADD, 0, 8), I_ALU64_REG(VM_ADD, 0, 9), I_EXIT(),
                /* callee */
                I_MOV64_IMM(6, 100), I_MOV64_IMM(7, 100), I_MOV64_IMM(8, 100),
                I_MOV64_IMM(9, 100), I_MOV64_IMM(0, 0), I_EXIT()});
    EXPECT_EQ(run_both(p), 10u);
}

TEST(Call, EachFrameHasItsOwnStack)
{
    /* Caller stores 7 at fp-8; callee stores 9 at its fp-8 and returns
     * its r10 - caller's r10 (expected -512); caller's slot survives. */
    TestProg p({I_ST(VM_DW, 10, -8, 7), I_MOV64_REG(1, 10), I_CALL_LOCAL(4), I_LDX(VM_DW, 1, 10, -8),
                I_ALU64_IMM(VM_MUL, 1, 1000), I_ALU64_REG(VM_ADD, 0, 1), I_EXIT(),
                /* callee: r0 = r10 - r1 */
                I_ST(VM_DW, 10, -8, 9), I_MOV64_REG(0, 10), I_ALU64_REG(VM_SUB, 0, 1), I_EXIT()});
    EXPECT_EQ(run_both(p), 7000u - 512);
}

TEST(Call, CalleeWritesThroughPointerToCallerStack)
{
    TestProg p({I_ST(VM_DW, 10, -8, 0), I_MOV64_REG(1, 10), I_ALU64_IMM(VM_ADD, 1, -8),
                I_CALL_LOCAL(2), I_LDX(VM_DW, 0, 10, -8), I_EXIT(),
                /* callee: *(u64 *)r1 = 55 */
                I_ST(VM_DW, 1, 0, 55), I_EXIT()});
    EXPECT_EQ(run_both(p), 55u);
}

/* f(n) = n == 0 ? 0 : n + f(n - 1), entered with n = depth - 1 so that
 * exactly `depth` frames are live at the deepest point. */
std::vector<vm_insn> recursion(int n)
{
    return {I_MOV64_IMM(1, n), I_CALL_LOCAL(1), I_EXIT(),
            /* f: */ I_MOV64_IMM(0, 0), I_JMP_IMM(VM_JEQ, 1, 0, 5), I_MOV64_REG(6, 1),
            I_ALU64_IMM(VM_SUB, 1, 1), I_CALL_LOCAL(-5), I_ALU64_REG(0, 0, 6), I_EXIT(), I_EXIT()};
}

TEST(Call, NestingUpToTheLimit)
{
    /* entry frame + (VM_MAX_CALL_DEPTH - 1) calls */
    TestProg p(recursion(VM_MAX_CALL_DEPTH - 2));
    int n = VM_MAX_CALL_DEPTH - 2;
    EXPECT_EQ(run_both(p), (uint64_t)(n * (n + 1) / 2));
}

TEST(Call, NestingBeyondTheLimitFails)
{
    TestProg p(recursion(VM_MAX_CALL_DEPTH - 1));
    for (bool checked : {false, true}) {
        vm_env env{};
        uint64_t r0;
        EXPECT_EQ(p.run_raw(&r0, checked, nullptr, 0, &env), -EFAULT);
        EXPECT_NE(std::string(env.fault).find("deeper than"), std::string::npos) << env.fault;
    }
}

TEST(Call, ExitFromNestedFrameReturnsToCaller)
{
    /* The callee exits from the middle of its body. */
    TestProg p({I_CALL_LOCAL(2), I_ALU64_IMM(VM_ADD, 0, 1), I_EXIT(), I_MOV64_IMM(0, 5),
                I_JMP_IMM(VM_JEQ, 0, 5, 1), I_MOV64_IMM(0, 100), I_EXIT()});
    EXPECT_EQ(run_both(p), 6u);
}

/* ---- budget ---- */

TEST(Budget, InfiniteLoopStopsWithEtime)
{
    TestProg p({I_MOV64_IMM(0, 0), I_ALU64_IMM(VM_ADD, 0, 1), I_JA(-2)});
    for (bool checked : {false, true}) {
        vm_env env{};
        env.budget = 10000;
        uint64_t r0 = 0;
        EXPECT_EQ(p.run_raw(&r0, checked, nullptr, 0, &env), -ETIME);
        EXPECT_GE(env.used, 10000u);
        EXPECT_LE(env.used, 10000u + 2);
        EXPECT_NE(std::string(env.fault).find("budget"), std::string::npos);
    }
}

TEST(Budget, SelfJumpStops)
{
    TestProg p({I_JA(-1)});
    vm_env env{};
    env.budget = 5;
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), -ETIME);
    EXPECT_LE(env.used, 6u);
}

TEST(Budget, DefaultBudgetApplies)
{
    TestProg p({I_JA(-1)});
    vm_env env{};
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), -ETIME);
    EXPECT_LE(env.used, VM_DEFAULT_BUDGET + 1);
    EXPECT_GE(env.used, VM_DEFAULT_BUDGET);
}

TEST(Budget, LoopInsideCalleeStops)
{
    TestProg p({I_CALL_LOCAL(1), I_EXIT(), I_JMP_IMM(VM_JEQ, 0, 0, -1), I_EXIT()});
    vm_env env{};
    env.budget = 1000;
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, true, nullptr, 0, &env), -ETIME);
    EXPECT_LE(env.used, 1002u);
}

TEST(Budget, ExactFitSucceeds)
{
    /* 100 iterations of 3 instructions + 2 = 302 instructions */
    TestProg p({I_MOV64_IMM(0, 100), I_ALU64_IMM(VM_SUB, 0, 1), I_JMP_IMM(VM_JNE, 0, 0, -2),
                I_EXIT()});
    vm_env env{};
    env.budget = 202;
    uint64_t r0 = 1;
    EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), 0);
    EXPECT_EQ(r0, 0u);
    EXPECT_EQ(env.used, 202u);
    env.budget = 150;
    EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), -ETIME);
}

/* ---- re-entrancy ---- */

TEST(Reentrant, ManyThreadsRunOnePreparedProgram)
{
    /* sum of mem[0..len) bytes, with a call per byte */
    TestProg p({I_MOV64_IMM(0, 0), I_MOV64_REG(6, 1), I_MOV64_REG(7, 1), I_ALU64_REG(VM_ADD, 7, 2),
                I_JMP_REG(VM_JGE, 6, 7, 4), I_LDX(VM_B, 1, 6, 0), I_CALL_LOCAL(3),
                I_ALU64_IMM(VM_ADD, 6, 1), I_JA(-5), I_EXIT(),
                /* add(r1): r0 += r1 via stack */
                I_STX(VM_DW, 10, 1, -8), I_LDX(VM_DW, 1, 10, -8), I_ALU64_REG(VM_ADD, 0, 1),
                I_EXIT()});
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&, t] {
            std::vector<uint8_t> mem(1000, (uint8_t)(t + 1));
            for (int i = 0; i < 50; i++) {
                vm_env env{};
                env.checked = (i & 1) != 0;
                uint64_t r0 = 0;
                int rc = vm_run_raw(p.prog(), mem.data(), mem.size(), &env, &r0);
                ok[t] += rc == 0 && r0 == 1000u * (t + 1);
            }
        });
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < 4; t++)
        EXPECT_EQ(ok[t], 50) << "thread " << t;
}

/* callx (RFC 9669 BPF_CALL | BPF_X) calls the helper whose number is in
 * dst: the same result as `call N`, in the fast and checked interpreters
 * and the JIT (run_both compares them). */
TEST(Call, CallxCallsTheHelperNamedByTheRegister)
{
    uint8_t buf[64];
    for (unsigned i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 7 + 1);
    /* r0 = cisc_crc32c(0, mem, len), the number 1 in r6 (or r0, a caller-saved one) */
    for (unsigned reg : {6u, 0u}) {
        TestProg x({I_MOV64_REG(3, 2), I_MOV64_REG(2, 1), I_MOV64_IMM(1, 0),
                    I_MOV64_IMM(reg, 1), I_CALLX(reg), I_EXIT()});
        TestProg c({I_MOV64_REG(3, 2), I_MOV64_REG(2, 1), I_MOV64_IMM(1, 0),
                    I_MOV64_IMM(reg, 1), I_CALL_HELPER(1), I_EXIT()});
        uint64_t want = run_both(c, buf, sizeof(buf));
        EXPECT_NE(want, 0u);
        EXPECT_EQ(run_both(x, buf, sizeof(buf)), want) << "r" << reg;
    }
}

/* A number that names no helper (too large for 32 bits, or unused) stops
 * the run with -EINVAL and a message naming the register and the value,
 * in both modes and in the JIT; never reached by a verified program. */
TEST(Call, CallxThroughANumberOfNoHelperStops)
{
    std::vector<std::vector<vm_insn>> progs = {
        {I_MOV64_IMM(6, 999), I_CALLX(6), I_EXIT()},
        {I_MOV64_IMM(6, 1), I_ALU64_IMM(VM_LSH, 6, 32), I_ALU64_IMM(VM_ADD, 6, 8), I_CALLX(6),
         I_EXIT()},
    };
    const char *values[] = {"999", "4294967304"};
    for (size_t k = 0; k < progs.size(); k++) {
        TestProg p(progs[k]);
        for (bool checked : {false, true}) {
            vm_env env{};
            uint64_t r0;
            EXPECT_EQ(p.run_raw(&r0, checked, nullptr, 0, &env), -EINVAL);
            std::string f = env.fault;
            EXPECT_NE(f.find("callx r6 holds " + std::string(values[k]) +
                             ", which is not the number of a helper"),
                      std::string::npos) << f;
        }
    }
}

/* Malformed callx encodings decode as invalid instructions. */
TEST(Call, CallxWithReservedFieldsOrR10IsInvalid)
{
    std::vector<vm_insn> bad[] = {
        {I_MOV64_IMM(6, 8), vm_ins(VM_CLS_JMP | VM_CALL | VM_X, 6, 0, 0, 8), I_EXIT()},
        {I_MOV64_IMM(6, 8), vm_ins(VM_CLS_JMP | VM_CALL | VM_X, 6, 1, 0, 0), I_EXIT()},
        {I_CALLX(10), I_EXIT()},
    };
    for (auto &code : bad) {
        TestProg p(code);
        vm_env env{};
        uint64_t r0;
        EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), -EINVAL);
        EXPECT_EQ(env.fault_pc, code.size() == 3 ? 1u : 0u) << env.fault;
    }
}

} // namespace
