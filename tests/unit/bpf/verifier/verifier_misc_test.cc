// The verifier's contract beyond accept/reject: messages (source line,
// instruction, registers), the trace log, results, limits (-E2BIG in
// bounded time), stack depth, call depth, big programs.
#include <gtest/gtest.h>

#include "verify_util.h"

extern "C" {
#include "bpf/prog.h"
}

namespace {

#define LOAD_IN() LDX(VM_DW, 2, 1, CTX_DATA), LDX(VM_DW, 3, 1, CTX_DATA_END)

TEST(VerifierMsg, NamesSourceLineInstructionAndRegisters)
{
    std::vector<vm_insn> insns = {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 4096),
                                  JMP_REG(VM_JGT, 4, 3, 2), LDX(VM_B, 0, 2, 4096), EXIT(),
                                  MOV64_IMM(0, 0), EXIT()};
    vm_line_info lines[] = {
        {0, 10, 1, "/src/prog.c", "int prog(struct cisc_ctx *ctx)"},
        {5, 14, 5, "/src/prog.c", "    return p[4096];"},
    };
    vm_prog p{};
    p.insns = insns.data();
    p.ninsns = (uint32_t)insns.size();
    p.lines = lines;
    p.nlines = 2;
    vm_verify_result res;
    ASSERT_EQ(vm_verify(&p, nullptr, &res), -EACCES);
    std::string m = res.msg;
    EXPECT_EQ(m.rfind("prog.c:14: R2 points to input buffer, offset 4096 size 1 is outside the "
                      "checked range [0, 4096)", 0), 0u) << m;
    EXPECT_NE(m.find("at pc 5: "), std::string::npos) << m;
    EXPECT_NE(m.find("r0 = *(u8 *)(r2 + 4096)"), std::string::npos) << m;
    EXPECT_NE(m.find("source:     return p[4096];"), std::string::npos) << m;
    EXPECT_NE(m.find("R2=in(id=0,off=0,r=4096)"), std::string::npos) << m;
    EXPECT_EQ(res.error_pc, 5u);
    EXPECT_FALSE(p.verified);
}

TEST(VerifierMsg, StructuralErrorsHaveNoRegisterDump)
{
    Verdict v = run_verifier({JA(7), MOV64_IMM(0, 0), EXIT()});
    EXPECT_EQ(v.rc, -EINVAL);
    EXPECT_NE(v.msg.find("jump out of range"), std::string::npos);
    EXPECT_EQ(v.msg.find("registers:"), std::string::npos) << v.msg;
    EXPECT_EQ(v.res.error_pc, 0u);
}

TEST(VerifierLog, TraceHasInstructionsStatesAndTheRejection)
{
    Verdict v = run_verifier({LOAD_IN(), LDX(VM_B, 0, 2, 0), EXIT()}, {}, {}, true);
    EXPECT_EQ(v.rc, -EACCES);
    EXPECT_NE(v.log.find("0: entry"), std::string::npos) << v.log;
    EXPECT_NE(v.log.find("2: r0 = *(u8 *)(r2 + 0)"), std::string::npos) << v.log;
    EXPECT_NE(v.log.find("rejected: R2 points to input buffer"), std::string::npos) << v.log;
}

TEST(VerifierLog, NoLogCallbackMeansNoOutput)
{
    Verdict v = run_verifier({MOV64_IMM(0, 0), EXIT()});
    EXPECT_EQ(v.rc, 0);
    EXPECT_TRUE(v.log.empty());
}

TEST(VerifierResult, CountsAndFlags)
{
    std::vector<vm_insn> insns = {MOV64_IMM(0, 0), MOV64_IMM(6, 0), ALU64_IMM(VM_ADD, 6, 1),
                                  JMP_IMM(VM_JLT, 6, 10, -2), ST(VM_DW, 10, -24, 1), EXIT()};
    vm_prog p{};
    p.insns = insns.data();
    p.ninsns = (uint32_t)insns.size();
    vm_verify_result res;
    ASSERT_EQ(vm_verify(&p, nullptr, &res), 0) << res.msg;
    EXPECT_TRUE(p.verified);
    EXPECT_EQ(p.stack_depth, 24u);
    EXPECT_GE(res.insns_processed, 10u);
    EXPECT_GT(res.states, 0u);
    EXPECT_STREQ(res.msg, "");
}

TEST(VerifierResult, StackDepthIsTheDeepestFrame)
{
    // main uses 16 bytes, the callee 200
    Verdict v = run_verifier({ST(VM_DW, 10, -16, 0), CALL_LOCAL(1), EXIT(),
                              ST(VM_B, 10, -200, 0), MOV64_IMM(0, 0), EXIT()});
    EXPECT_EQ(v.rc, 0) << v.msg;
    EXPECT_EQ(v.stack_depth, 200u);
}

TEST(VerifierApi, NullArgumentsAndEmptyProgram)
{
    vm_verify_result res;
    EXPECT_EQ(vm_verify(nullptr, nullptr, &res), -EINVAL);
    vm_prog p{};
    EXPECT_EQ(vm_verify(&p, nullptr, nullptr), -EINVAL);
    EXPECT_EQ(vm_verify(&p, nullptr, &res), -EINVAL);
    EXPECT_NE(std::string(res.msg).find("empty program"), std::string::npos);
}

// --- limits ---------------------------------------------------------------------

TEST(VerifierLimits, InstructionLimit)
{
    vm_verify_opts opts{};
    opts.max_insns = 1000;
    std::vector<vm_insn> insns;
    for (int k = 0; k < 1500; k++)
        insns.push_back(MOV64_IMM(0, k));
    insns.push_back(EXIT());
    Verdict v = run_verifier(insns, {}, opts);
    EXPECT_EQ(v.rc, -E2BIG) << v.msg;
    EXPECT_NE(v.msg.find("program too complex: more than 1000 instructions processed"),
              std::string::npos) << v.msg;
    EXPECT_EQ(v.res.error_pc, 1000u);
}

TEST(VerifierLimits, StateLimit)
{
    vm_verify_opts opts{};
    opts.max_states = 3;
    std::vector<vm_insn> insns = {MOV64_IMM(6, 0), ALU64_IMM(VM_ADD, 6, 1),
                                  JMP_IMM(VM_JLT, 6, 100, -2), MOV64_IMM(0, 0), EXIT()};
    Verdict v = run_verifier(insns, {}, opts);
    EXPECT_EQ(v.rc, -E2BIG) << v.msg;
    EXPECT_NE(v.msg.find("more than 3 states"), std::string::npos) << v.msg;
}

// 9 registers that are each a pointer on one path and a number on the
// other cannot be joined: 512 paths, each with a long tail -> -E2BIG with
// the default limits, in bounded time.
TEST(VerifierLimits, PathologicalExplosionIsRejectedNotHung)
{
    std::vector<vm_insn> insns = {LDX(VM_DW, 0, 1, CTX_ARG0), STX(VM_DW, 10, 0, -8)};
    const unsigned regs[] = {0, 2, 3, 4, 5, 6, 7, 8, 9};
    for (unsigned k = 0; k < 9; k++) {
        unsigned r = regs[k];
        insns.insert(insns.end(), {LDX(VM_DW, r, 10, -8), ALU64_IMM(VM_AND, r, 1 << k),
                                   JMP_IMM(VM_JEQ, r, 0, 2), MOV64_REG(r, 10), JA(1),
                                   MOV64_IMM(r, 0)});
    }
    for (int k = 0; k < 2100; k++)
        insns.push_back(LDX(VM_DW, 1, 10, -8));
    for (unsigned k = 0; k < 9; k++)
        insns.push_back(STX(VM_DW, 10, regs[k], -16 - 8 * (int)k));
    insns.insert(insns.end(), {MOV64_IMM(0, 0), EXIT()});
    Verdict v = run_verifier(insns);
    EXPECT_EQ(v.rc, -E2BIG) << v.msg;
    EXPECT_NE(v.msg.find("program too complex"), std::string::npos) << v.msg;
    EXPECT_LE(v.res.insns_processed, 1000001u);
}

TEST(VerifierLimits, BigStraightLineProgramVerifies)
{
    // 30000 checked loads: processed once each
    std::vector<vm_insn> insns = {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 64),
                                  JMP_REG(VM_JGT, 4, 3, 30001)};
    for (int k = 0; k < 30000; k++)
        insns.push_back(LDX(VM_B, 0, 2, (int16_t)(k % 64)));
    insns.insert(insns.end(), {JA(1), MOV64_IMM(0, 0), EXIT()});
    Verdict v = run_verifier(insns);
    EXPECT_EQ(v.rc, 0) << v.msg;
    EXPECT_LT(v.res.insns_processed, 31000u);
}

TEST(VerifierLimits, WideningIsNotUndoneByKnownBits)
{
    // for (; p <= end - 4; p += 4) s += *(u32 *)p: each widening join
    // raises p's variable part to the next threshold; its known bits (a
    // multiple of 4 below the highest offset seen) must not clip that back,
    // or the loop takes a pass per lost bit (183 instructions, 95 now)
    std::vector<vm_insn> insns = {LOAD_IN(), MOV64_IMM(0, 0), MOV64_REG(1, 3),
                                  ALU64_IMM(VM_ADD, 1, -4), JMP_REG(VM_JGT, 2, 1, 4),
                                  LDX(VM_W, 4, 2, 0), ALU64_REG(VM_ADD, 0, 4),
                                  ALU64_IMM(VM_ADD, 2, 4), JMP_REG(VM_JGE, 1, 2, -4), EXIT()};
    Verdict v = run_verifier(insns);
    EXPECT_EQ(v.rc, 0) << v.msg;
    EXPECT_LT(v.res.insns_processed, 140u);
}

TEST(VerifierLimits, UnrolledBranchesMergeAtJoinPoints)
{
    // 200 independent "if (x & bit) n++" blocks: 2^200 paths if explored
    // exactly; pruning and joins keep it linear
    std::vector<vm_insn> insns = {LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_IMM(7, 0)};
    for (int k = 0; k < 200; k++)
        insns.insert(insns.end(), {JMP_IMM(VM_JSET, 6, 1 << (k % 31), 1),
                                   ALU64_IMM(VM_ADD, 7, 1)});
    insns.insert(insns.end(), {ST(VM_DW, 10, -8, 0), JMP_IMM(VM_JGT, 7, 7, 4),
                               MOV64_REG(8, 10), ALU64_IMM(VM_ADD, 8, -8),
                               ALU64_REG(VM_ADD, 8, 7), LDX(VM_B, 0, 8, 0), MOV64_IMM(0, 0),
                               EXIT()});
    Verdict v = run_verifier(insns);
    EXPECT_EQ(v.rc, 0) << v.msg;
    EXPECT_LT(v.res.insns_processed, 100000u);
}

// --- calls -----------------------------------------------------------------------

std::vector<vm_insn> call_chain(int frames)
{
    // f0 calls f1 calls ... f(frames-1); each is "call next; exit"
    std::vector<vm_insn> insns;
    for (int k = 0; k < frames - 1; k++)
        insns.insert(insns.end(), {CALL_LOCAL(1), EXIT()});
    insns.insert(insns.end(), {MOV64_IMM(0, 0), EXIT()});
    return insns;
}

TEST(VerifierCalls, DepthLimit)
{
    Verdict ok = run_verifier(call_chain(VM_MAX_CALL_DEPTH));
    EXPECT_EQ(ok.rc, 0) << ok.msg;
    Verdict deep = run_verifier(call_chain(VM_MAX_CALL_DEPTH + 1));
    EXPECT_EQ(deep.rc, -EINVAL);
    EXPECT_NE(deep.msg.find("call chain too deep: 9 frames (limit 8)"), std::string::npos)
        << deep.msg;
}

TEST(VerifierCalls, CallerStackPointerUsableInCallee)
{
    // callee reads the caller's initialised slot through r1 and writes a
    // second one; the caller then reads both
    Verdict v = run_verifier({ST(VM_DW, 10, -8, 5), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8),
                              CALL_LOCAL(3), LDX(VM_DW, 0, 10, -16), EXIT(), EXIT(),
                              LDX(VM_DW, 2, 1, 0), STX(VM_DW, 1, 2, -8), MOV64_IMM(0, 0),
                              EXIT()});
    EXPECT_EQ(v.rc, -EINVAL) << v.msg;   // the extra EXIT at pc 6 is unreachable
    Verdict w = run_verifier({ST(VM_DW, 10, -8, 5), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8),
                              CALL_LOCAL(2), LDX(VM_DW, 0, 10, -16), EXIT(),
                              LDX(VM_DW, 2, 1, 0), STX(VM_DW, 1, 2, -8), MOV64_IMM(0, 0),
                              EXIT()});
    EXPECT_EQ(w.rc, 0) << w.msg;
}

TEST(VerifierCalls, CalleeCannotReadCallerUninitialisedSlot)
{
    Verdict v = run_verifier({MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), CALL_LOCAL(1), EXIT(),
                              LDX(VM_DW, 0, 1, 0), EXIT()});
    EXPECT_EQ(v.rc, -EACCES);
    EXPECT_NE(v.msg.find("uninitialised stack byte fp-8"), std::string::npos) << v.msg;
}

} // namespace
