/* The JIT's own contract (bpf/jit_x86_64.h): only verified programs are
 * compiled, the code is never writable and executable at once, it is freed
 * with the program, and env->interp / env->checked select the interpreter.
 * That the JIT computes what the interpreter computes is checked for every
 * hand-built program by TestProg::run_raw (vm_test_util.h) and for random
 * ones by bpf_jit_diff. */
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "vm_test_util.h"

namespace {

/* The permissions ("r-xp") of the mapping holding addr, or "". */
std::string perms_of(const void *addr)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    uintptr_t a = (uintptr_t)addr;
    while (std::getline(maps, line)) {
        unsigned long lo, hi;
        char p[8] = "";
        if (sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, p) == 3 && a >= lo && a < hi)
            return p;
    }
    return "";
}

std::vector<vm_insn> add_loop()
{
    /* r0 = sum of 1..r2 (r2 = memory length) */
    return {I_MOV64_IMM(0, 0), I_JMP_IMM(VM_JEQ, 2, 0, 3), I_ALU64_REG(VM_ADD, 0, 2),
            I_ALU64_IMM(VM_SUB, 2, 1), I_JA(-4), I_EXIT()};
}

TEST(Jit, CompilesOnlyVerifiedPrograms)
{
    std::vector<vm_insn> code = add_loop();
    vm_prog p{};
    p.insns = code.data();
    p.ninsns = (uint32_t)code.size();
    ASSERT_EQ(vm_prepare(&p), 0);
    EXPECT_EQ(vm_jit_compile(&p), -ENOTSUP);
    EXPECT_EQ(p.jit, nullptr);
    EXPECT_EQ(vm_jit_size(&p), 0u);
    vm_unprepare(&p);
}

TEST(Jit, CodeIsReadExecNeverWritableAndFreedWithTheProgram)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    TestProg t(add_loop());
    const uint8_t *code;
    size_t len;
    ASSERT_EQ(vm_jit_insn_code(t.prog(), 2, &code, &len), 0);
    EXPECT_GT(len, 0u);
    EXPECT_GT(vm_jit_size(t.prog()), len);
    EXPECT_EQ(perms_of(code), "r-xp");
    EXPECT_EQ(vm_jit_insn_code(t.prog(), 6, &code, &len), -ENOENT);   /* past the end */
    const void *where = code;
    vm_jit_free(t.prog());
    EXPECT_EQ(t.prog()->jit, nullptr);
    EXPECT_NE(perms_of(where), "r-xp");   /* unmapped (or reused, never our code) */
}

TEST(Jit, EnvSelectsTheEngineAndBothAgree)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    TestProg t(add_loop());
    uint8_t mem[100] = {};
    for (bool interp : {false, true}) {
        vm_env env{};
        env.interp = interp;
        uint64_t r0 = 0;
        ASSERT_EQ(vm_run_raw(t.prog(), mem, sizeof(mem), &env, &r0), 0) << env.fault;
        EXPECT_EQ(r0, 5050u);
        EXPECT_EQ(env.used, 1u + 100 * 4 + 2);   /* mov, 100 rounds, jeq, exit */
    }
    /* the same budget stops both at the same backward jump */
    for (bool interp : {false, true}) {
        vm_env env{};
        env.interp = interp;
        env.budget = 50;
        uint64_t r0 = 0;
        EXPECT_EQ(vm_run_raw(t.prog(), mem, sizeof(mem), &env, &r0), -ETIME);
        EXPECT_EQ(env.fault_pc, 4u);
        EXPECT_EQ(env.used, 53u);   /* mov, then 13 rounds of 4: 53 > 50 at the ja */
        EXPECT_NE(std::string(env.fault).find("budget of 50 exhausted"), std::string::npos);
    }
}

/* r0 = number of '\n' bytes in mem (r1 = mem, r2 = len): bench-bpf's
 * newline-count loop, a forward branch inside a loop. */
std::vector<vm_insn> newline_loop()
{
    return {I_MOV64_REG(3, 1), I_ALU64_REG(VM_ADD, 3, 2), I_MOV64_IMM(0, 0),
            I_JMP_REG(VM_JGE, 1, 3, 5),        /* 3: loop: if (p >= end) goto done */
            I_LDX(VM_B, 4, 1, 0),              /* 4 */
            I_JMP_IMM(VM_JNE, 4, '\n', 1),     /* 5 */
            I_ALU64_IMM(VM_ADD, 0, 1),         /* 6 */
            I_ALU64_IMM(VM_ADD, 1, 1),         /* 7 */
            I_JA(-6),                          /* 8 */
            I_EXIT()};
}

std::vector<uint8_t> code_of(vm_prog *p, uint32_t pc)
{
    const uint8_t *code = nullptr;
    size_t len = 0;
    EXPECT_EQ(vm_jit_insn_code(p, pc, &code, &len), 0);
    return std::vector<uint8_t>(code, code + len);
}

TEST(Jit, NewlineLoopRunsStraightAndSubtractsTheBudgetOnceAtTheBackEdge)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    TestProg t(newline_loop());
    /* pc 5: cmp rcx, 10; je rel32 to pc 6, moved out of line - no budget
     * arithmetic before it, and the common path (no newline) falls
     * through to pc 7 without a taken branch */
    std::vector<uint8_t> je = code_of(t.prog(), 5);
    ASSERT_EQ(je.size(), 10u);
    EXPECT_EQ(std::vector<uint8_t>(je.begin(), je.begin() + 6),
              (std::vector<uint8_t>{0x48, 0x83, 0xf9, 0x0a, 0x0f, 0x84}));
    EXPECT_EQ(code_of(t.prog(), 6).size(), 0u);
    /* pc 8: sub r12, 5 (pcs 3-4-5-7-8 of the hot path at once); js budget
     * stub off its flags, no separate test; then the head's compare
     * repeated: cmp rdi, rdx; jb pc 4 (the round goes on); jmp done */
    std::vector<uint8_t> ja = code_of(t.prog(), 8);
    ASSERT_EQ(ja.size(), 24u);
    EXPECT_EQ(std::vector<uint8_t>(ja.begin(), ja.begin() + 6),
              (std::vector<uint8_t>{0x49, 0x83, 0xec, 0x05, 0x0f, 0x88}));
    EXPECT_EQ(std::vector<uint8_t>(ja.begin() + 10, ja.begin() + 15),
              (std::vector<uint8_t>{0x48, 0x39, 0xd7, 0x0f, 0x82}));
    EXPECT_EQ(ja[19], 0xe9);
    /* pc 3 and pc 7 (targets) carry their counts: no sub at either */
    EXPECT_EQ(code_of(t.prog(), 3).size(), 3u + 6u);   /* cmp rdi, rdx; jae */
    EXPECT_EQ(code_of(t.prog(), 7).size(), 4u);        /* add rdi, 1 */
    /* the out-of-line pc 6 (add rax, 1; sub r12, 1; jmp pc 7) is what
     * the newline path runs: its count is checked by the next test */
}

/* Paths of unequal length into shared targets, forward jumps into a loop
 * header and a backward conditional jump: every budget stops both
 * engines at the same pc with the same count. */
std::vector<vm_insn> branchy_loop()
{
    return {I_MOV64_IMM(0, 0), I_MOV64_IMM(3, 0),
            I_JA(6),                           /* 2: enter at the test */
            I_JMP_IMM(VM_JSET, 3, 1, 2),       /* 3: body: odd? */
            I_ALU64_IMM(VM_ADD, 0, 3),         /* 4 */
            I_JA(2),                           /* 5 */
            I_ALU64_IMM(VM_MUL, 0, 5),         /* 6 */
            I_ALU64_IMM(VM_XOR, 0, 1),         /* 7 */
            I_ALU64_IMM(VM_ADD, 3, 1),         /* 8: i++ (also the entry target 9-1) */
            I_JMP_REG(VM_JLT, 3, 2, -7),       /* 9: backward conditional */
            I_JMP_IMM(VM_JEQ, 0, 0, 1),        /* 10 */
            I_ALU64_IMM(VM_ADD, 0, 7),         /* 11 */
            I_EXIT()};
}

/* A loop whose head skips one instruction (moved out of line), so the
 * back-edge must not repeat the head's compare. r0 = 5 * even i < r2. */
std::vector<vm_insn> skipping_head_loop()
{
    return {I_MOV64_IMM(0, 0), I_MOV64_IMM(3, 0),
            I_JMP_IMM(VM_JSET, 3, 1, 1),       /* 2: head: odd? skip 3 */
            I_ALU64_IMM(VM_ADD, 0, 5),         /* 3 */
            I_ALU64_IMM(VM_ADD, 3, 1),         /* 4 */
            I_JMP_REG(VM_JGE, 3, 2, 1),        /* 5 */
            I_JA(-5),                          /* 6 */
            I_EXIT()};
}

TEST(Jit, BudgetStopsAtTheSamePointForEveryBudgetOnBranchyCode)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    uint8_t mem[8] = {};
    uint8_t text[40];
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = i % 3 == 0 ? '\n' : 'x';
    for (int prog = 0; prog < 3; prog++) {
        bool newline = prog == 0;
        TestProg t(newline ? newline_loop() : prog == 1 ? branchy_loop() : skipping_head_loop());
        uint8_t *in = newline ? text : mem;
        size_t len = newline ? sizeof(text) : sizeof(mem);
        for (uint64_t budget = 1; budget < 260; budget++) {
            vm_env env[2]{};
            uint64_t r0[2] = {0, 0};
            int rc[2];
            for (int interp = 0; interp < 2; interp++) {
                env[interp].interp = interp;
                env[interp].budget = budget;
                rc[interp] = vm_run_raw(t.prog(), in, len, &env[interp], &r0[interp]);
            }
            ASSERT_EQ(rc[0], rc[1]) << "budget " << budget;
            EXPECT_EQ(env[0].used, env[1].used) << "budget " << budget;
            if (rc[0] == 0) {
                EXPECT_EQ(r0[0], r0[1]) << "budget " << budget;
                EXPECT_EQ(r0[0], newline ? 14u : prog == 1 ? r0[1] : 20u);
            } else {
                EXPECT_EQ(rc[0], -ETIME);
                EXPECT_EQ(env[0].fault_pc, env[1].fault_pc) << "budget " << budget;
            }
        }
    }
}

}  // namespace
