/* The JIT's own contract (bpf/jit_x86_64.h): only verified programs are
 * compiled, the code is never writable and executable at once, it is freed
 * with the program, and env->interp / env->checked select the interpreter.
 * That the JIT computes what the interpreter computes is checked for every
 * hand-built program by TestProg::run_raw (vm_test_util.h) and for random
 * ones by bpf_jit_diff. */
#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
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

/* Whether needle occurs in hay. */
bool contains(const std::vector<uint8_t> &hay, const std::vector<uint8_t> &needle)
{
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

TEST(Jit, NewlineLoopIsIfConvertedAndItsCountedCopyHasNoBudgetCheck)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    TestProg t(newline_loop());
    /* pc 5 of the checked copy, if-converted: cmp rcx, 10; sete r10b;
     * add rax, r10 - no branch; pc 6 has no code of its own */
    EXPECT_EQ(code_of(t.prog(), 5),
              (std::vector<uint8_t>{0x48, 0x83, 0xf9, 0x0a, 0x41, 0x0f, 0x94, 0xc2, 0x4c, 0x01,
                                    0xd0}));
    EXPECT_EQ(code_of(t.prog(), 6).size(), 0u);
    EXPECT_EQ(code_of(t.prog(), 7), (std::vector<uint8_t>{0x48, 0x83, 0xc7, 0x01}));   /* add rdi, 1 */
    /* pc 8: lea r11, [r10 + 5]; sub r12, r11 (pcs 3-4-5-7-8 and the count
     * of pc 6 in r10, one sub on r12's chain); js budget stub off its
     * flags; then the head's compare repeated: cmp rdi, rdx; jb pc 4 */
    std::vector<uint8_t> ja = code_of(t.prog(), 8);
    ASSERT_EQ(ja.size(), 30u);
    EXPECT_EQ(std::vector<uint8_t>(ja.begin(), ja.begin() + 12),
              (std::vector<uint8_t>{0x4d, 0x8d, 0x9a, 0x05, 0, 0, 0, 0x4d, 0x29, 0xdc, 0x0f, 0x88}));
    EXPECT_EQ(std::vector<uint8_t>(ja.begin() + 16, ja.begin() + 21),
              (std::vector<uint8_t>{0x48, 0x39, 0xd7, 0x0f, 0x82}));
    /* pc 3, the head, shows the counted loop's entry test and its
     * unchecked copy, then the ordinary head: cmp rdi, rdx; jae. The entry
     * tests the bound R * 6 <= r12 (imul r11, r11, 6),
     * R * 5 charged (imul r11, r11, 5; sub r12, r11), and the round is
     * movzx; cmp; sete; add rax, r10; add rdi, 1; sub r12, r10; cmp rdi,
     * rdx; jb - one branch, no budget check */
    std::vector<uint8_t> pre = code_of(t.prog(), 3);
    ASSERT_GT(pre.size(), 9u);
    EXPECT_EQ(std::vector<uint8_t>(pre.end() - 9, pre.end() - 4),
              (std::vector<uint8_t>{0x48, 0x39, 0xd7, 0x0f, 0x83}));
    EXPECT_EQ(code_of(t.prog(), 2).size(), 7u + 4u);   /* mov rax, 0; sub r12, 3 */
    EXPECT_TRUE(contains(pre, {0x4d, 0x69, 0xdb, 0x06, 0, 0, 0}));
    EXPECT_TRUE(contains(pre, {0x4d, 0x69, 0xdb, 0x05, 0, 0, 0, 0x4d, 0x29, 0xdc}));
    EXPECT_TRUE(contains(pre, {0x0f, 0xb6, 0x8f, 0, 0, 0, 0, 0x48, 0x83, 0xf9, 0x0a, 0x41, 0x0f,
                               0x94, 0xc2, 0x4c, 0x01, 0xd0, 0x48, 0x83, 0xc7, 0x01, 0x4d, 0x29,
                               0xd4, 0x48, 0x39, 0xd7, 0x0f, 0x82}));
    EXPECT_FALSE(contains(pre, {0x0f, 0x88}));   /* no js */
}

/* One run of p over in[0, len) in each engine (0: JIT, 1: interpreter)
 * with the same budget. */
struct BothRuns {
    vm_env env[2]{};
    uint64_t r0[2] = {0, 0};
    int rc[2] = {0, 0};
};

BothRuns run_both(vm_prog *p, uint8_t *in, size_t len, uint64_t budget)
{
    BothRuns b;
    for (int interp = 0; interp < 2; interp++) {
        b.env[interp].interp = interp;
        b.env[interp].budget = budget;
        b.rc[interp] = vm_run_raw(p, in, len, &b.env[interp], &b.r0[interp]);
    }
    return b;
}

/* Adler-style sums over mem reduced modulo 200 by a clamp of the tested
 * register (`if (a < 200) goto +1; a -= 200`): r0 = b << 16 | a. */
std::vector<vm_insn> clamp_loop()
{
    return {I_MOV64_REG(3, 1), I_ALU64_REG(VM_ADD, 3, 2), I_MOV64_IMM(4, 1), I_MOV64_IMM(5, 0),
            I_JMP_REG(VM_JGE, 1, 3, 9),        /* 4: loop: if (p >= end) goto done */
            I_LDX(VM_B, 6, 1, 0),              /* 5 */
            I_ALU64_REG(VM_ADD, 4, 6),         /* 6: a += *p */
            I_JMP_IMM(VM_JLT, 4, 200, 1),      /* 7 */
            I_ALU64_IMM(VM_ADD, 4, -200),      /* 8 */
            I_ALU64_REG(VM_ADD, 5, 4),         /* 9: b += a */
            I_JMP_IMM(VM_JLT, 5, 200, 1),      /* 10 */
            I_ALU64_IMM(VM_ADD, 5, -200),      /* 11 */
            I_ALU64_IMM(VM_ADD, 1, 1),         /* 12 */
            I_JA(-10),                         /* 13 */
            I_MOV64_REG(0, 5), I_ALU64_IMM(VM_LSH, 0, 16), I_ALU64_REG(VM_OR, 0, 4), I_EXIT()};
}

TEST(Jit, ClampOfTheTestedRegisterIsIfConvertedAndAgrees)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    TestProg t(clamp_loop());
    /* pc 10: cmp rbx, 200 after r11 = rbx - 200, then cmovae rbx, r11; no
     * jcc (0f 8x) and pc 11 has no code of its own */
    for (uint32_t pc : {7u, 10u}) {
        std::vector<uint8_t> c = code_of(t.prog(), pc);
        bool cmov = false, jcc = false;
        for (size_t i = 0; i + 1 < c.size(); i++) {
            cmov |= c[i] == 0x0f && (c[i + 1] & 0xf0) == 0x40;
            jcc |= c[i] == 0x0f && (c[i + 1] & 0xf0) == 0x80;
        }
        EXPECT_TRUE(cmov) << "pc " << pc;
        EXPECT_FALSE(jcc) << "pc " << pc;
        EXPECT_EQ(code_of(t.prog(), pc + 1).size(), 0u) << "pc " << pc + 1;
    }
    uint8_t mem[64];
    uint64_t a = 1, b = 0;
    for (size_t i = 0; i < sizeof(mem); i++) {
        mem[i] = (uint8_t)(i * 37 + 11);
        a += mem[i];
        a = a < 200 ? a : a - 200;
        b += a;
        b = b < 200 ? b : b - 200;
    }
    bool finished = false;
    for (uint64_t budget = 1; budget < 700; budget += 3) {
        BothRuns b2 = run_both(t.prog(), mem, sizeof(mem), budget);
        const vm_env *env = b2.env;
        const uint64_t *r0 = b2.r0;
        const int *rc = b2.rc;
        ASSERT_EQ(rc[0], rc[1]) << "budget " << budget;
        EXPECT_EQ(env[0].used, env[1].used) << "budget " << budget;
        finished |= rc[0] == 0;
        if (rc[0] == 0)
            EXPECT_EQ(r0[0], b << 16 | a) << "budget " << budget;
        else
            EXPECT_EQ(env[0].fault_pc, env[1].fault_pc) << "budget " << budget;
    }
    EXPECT_TRUE(finished);
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
            BothRuns b2 = run_both(t.prog(), in, len, budget);
            const vm_env *env = b2.env;
            const uint64_t *r0 = b2.r0;
            const int *rc = b2.rc;
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

namespace {

/* Random loops for the JIT's counting: a counted loop (bpf/jit_loop.h),
 * tested at the head or at the bottom, whose body mixes computations,
 * one-instruction skips (if-converted or moved out of line),
 * two-instruction skips, early exits, loads and stores through r1,
 * sometimes inside an outer loop, sometimes writing its own counter or
 * bound (then it is an ordinary loop, maybe endless). Safe by
 * construction: memory is only [r1, r1 + 64). */
struct RandomLoop {
    uint64_t s;
    std::vector<vm_insn> code;

    explicit RandomLoop(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}

    uint32_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (uint32_t)s;
    }
    uint8_t reg()   /* not r1: its address differs between the two runs */
    {
        uint8_t r = (uint8_t)(next() % 10);
        return r == 1 ? 0 : r;
    }
    uint8_t dst()
    {
        static const uint8_t d[] = {0, 2, 3, 4, 5, 8, 0, 2, 3, 4, 5, 8, 6, 7};
        return d[next() % (next() % 8 ? 12 : 14)];   /* the counter or bound, rarely */
    }
    int32_t imm()
    {
        static const int32_t v[] = {0, 1, -1, 2, 3, 7, 10, 31, 32, 63, 255, -65521, 65521,
                                    0x7fffffff, (int32_t)0x80000000};
        return next() % 4 ? v[next() % 15] : (int32_t)next();
    }
    void alu()
    {
        static const uint8_t ops[] = {VM_ADD, VM_SUB, VM_MUL, VM_DIV, VM_MOD, VM_OR, VM_AND,
                                      VM_LSH, VM_RSH, VM_ARSH, VM_XOR, VM_MOV, VM_ADD, VM_MOV};
        uint8_t op = ops[next() % 14], d = dst();
        bool w32 = next() % 4 == 0, x = next() % 2;
        uint8_t cls = w32 ? VM_CLS_ALU : VM_CLS_ALU64;
        if ((op == VM_LSH || op == VM_RSH || op == VM_ARSH) && !x)
            code.push_back(vm_ins(cls | VM_K | op, d, 0, 0, (int32_t)(next() % (w32 ? 32 : 64))));
        else if (next() % 5 == 0 && op == VM_ADD)
            code.push_back(vm_ins(cls | VM_K | op, d, 0, 0, next() % 2 ? 1 : -1));   /* n++ */
        else
            code.push_back(x ? vm_ins(cls | VM_X | op, d, reg(), 0, 0)
                             : vm_ins(cls | VM_K | op, d, 0, 0, imm()));
    }
    void mem()
    {
        int16_t off = (int16_t)(next() % 57);
        if (next() % 2)
            code.push_back(vm_ins(VM_CLS_LDX | VM_MEM | VM_B, dst(), 1, off, 0));
        else
            code.push_back(vm_ins(VM_CLS_STX | VM_MEM | VM_DW, 1, reg(), off, 0));
    }
    void one() { next() % 4 ? alu() : mem(); }
    void cond(int16_t off)
    {
        static const uint8_t ops[] = {VM_JEQ, VM_JNE, VM_JGT, VM_JGE, VM_JLT, VM_JLE,
                                      VM_JSGT, VM_JSGE, VM_JSLT, VM_JSLE, VM_JSET};
        uint8_t op = ops[next() % 11], cls = next() % 4 ? VM_CLS_JMP : VM_CLS_JMP32;
        code.push_back(next() % 2 ? vm_ins(cls | VM_X | op, reg(), reg(), off, 0)
                                  : vm_ins(cls | VM_K | op, reg(), 0, off, imm()));
    }
    void item()
    {
        switch (next() % 4) {
        case 0: one(); break;
        case 1:
        case 2: cond(1), one(); break;
        default: cond(2), one(), one(); break;
        }
    }
    /* A counted loop: r6 from a to a + n (r7 or a constant), tested at the
     * head (`if (r6 >= n) goto out; ...; ja head`) or at the bottom
     * (`...; if (r6 < n) / (r6 != n) goto top`), r6 += 1 somewhere in the
     * body, sometimes early exits (`if (..) goto out`, a `break`). */
    void loop()
    {
        int32_t a = (int32_t)(next() % 4), n = (int32_t)(next() % 7);
        bool reg_bound = next() % 2, bottom = next() % 2;
        code.push_back(I_MOV64_IMM(6, a));
        code.push_back(I_MOV64_IMM(7, a + n));
        size_t head = code.size();
        bool swap = reg_bound && next() % 2;   /* `n <= i` / `n > i` */
        if (!bottom)
            code.push_back(swap        ? I_JMP_REG(VM_JLE, 7, 6, 0)
                           : reg_bound ? I_JMP_REG(VM_JGE, 6, 7, 0)
                                       : I_JMP_IMM(VM_JGE, 6, a + n, 0));
        std::vector<size_t> exits;
        uint32_t m = 1 + next() % 5, inc = next() % (m + 1);
        for (uint32_t k = 0; k <= m; k++) {
            if (k == inc)
                code.push_back(I_ALU64_IMM(VM_ADD, 6, 1));
            if (k == m)
                break;
            if (next() % 6 == 0) {   /* an early exit, patched below */
                exits.push_back(code.size());
                if (next() % 4)
                    cond(0);
                else
                    code.push_back(I_JA(0));
            }
            item();
        }
        if (bottom) {
            uint8_t op = next() % 2 ? VM_JLT : VM_JNE;
            int16_t back = (int16_t)((int)head - (int)code.size() - 1);
            code.push_back(swap        ? I_JMP_REG(VM_JGT, 7, 6, back)
                           : reg_bound ? I_JMP_REG(op, 6, 7, back)
                                       : I_JMP_IMM(op, 6, a + n, back));
        } else {
            code.push_back(I_JA((int16_t)((int)head - (int)code.size() - 1)));
            code[head].off = (int16_t)(code.size() - head - 1);
        }
        for (size_t e : exits)
            code[e].off = (int16_t)(code.size() - e - 1);
    }
    std::vector<vm_insn> build()
    {
        bool outer = next() % 3 == 0;
        for (uint8_t r = 0; r <= 9; r++)
            if (r != 1)
                code.push_back(I_MOV64_IMM(r, r == 9 && outer ? 0 : imm()));
        size_t top = code.size(), test = 0;
        bool head_test = next() % 2;   /* `r9++; if (r9 > 3) break;` opens the round */
        if (outer)
            code.push_back(I_ALU64_IMM(VM_ADD, 9, 1));
        if (outer && head_test) {
            test = code.size();
            code.push_back(I_JMP_IMM(VM_JSGT, 9, 3, 0));
        }
        for (uint32_t k = next() % 3; k; k--)
            item();
        loop();
        for (uint32_t k = next() % 3; k; k--)
            item();
        if (outer && !head_test)   /* r9 counts the outer rounds: 3 */
            code.push_back(I_JMP_IMM(VM_JSGE, 9, 3, 1));
        if (outer)
            code.push_back(I_JA((int16_t)((int)top - (int)code.size() - 1)));
        if (outer && head_test)
            code[test].off = (int16_t)(code.size() - test - 1);
        for (uint8_t r = 2; r <= 8; r++)
            code.push_back(I_ALU64_REG(VM_XOR, 0, r));
        code.push_back(I_EXIT());
        return code;
    }
};

TEST(Jit, RandomLoopsStopWhereTheInterpreterStopsAtEveryBudget)
{
    if (!vm_jit_available())
        GTEST_SKIP() << "no JIT on this host";
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        RandomLoop gen(seed);
        std::vector<vm_insn> code = gen.build();
        if (getenv("JIT_DUMP") && atoi(getenv("JIT_DUMP")) == (int)seed)   /* JIT_DUMP=seed */
            for (size_t i = 0; i < code.size(); i++)
                fprintf(stderr, "%zu: code %02x dst %d src %d off %d imm %d\n", i, code[i].code,
                        code[i].regs & 15, code[i].regs >> 4, code[i].off, code[i].imm);
        TestProg t(code);
        ASSERT_NE(t.prog()->jit, nullptr);
        uint8_t mem[2][64];
        vm_env full{};
        full.interp = true;
        full.budget = 100000;
        uint64_t r0 = 0;
        std::memset(mem[0], 0x5a, sizeof(mem[0]));
        int rc = vm_run_raw(t.prog(), mem[0], 64, &full, &r0);
        uint64_t top = rc == 0 ? full.used * 2 + 20 : 700;
        for (uint64_t budget = 1; budget <= top; budget++) {
            vm_env env[2]{};
            uint64_t out[2] = {0, 0};
            int res[2];
            for (int interp = 0; interp < 2; interp++) {
                std::memset(mem[interp], 0x5a, sizeof(mem[interp]));
                env[interp].interp = interp;
                env[interp].budget = budget;
                res[interp] = vm_run_raw(t.prog(), mem[interp], 64, &env[interp], &out[interp]);
            }
            ASSERT_EQ(res[0], res[1]) << "seed " << seed << " budget " << budget;
            ASSERT_EQ(env[0].used, env[1].used) << "seed " << seed << " budget " << budget;
            ASSERT_EQ(env[0].fault_pc, env[1].fault_pc) << "seed " << seed << " budget " << budget;
            if (res[0] == 0) {
                ASSERT_EQ(out[0], out[1]) << "seed " << seed << " budget " << budget;
                ASSERT_EQ(0, std::memcmp(mem[0], mem[1], 64)) << "seed " << seed;
            }
        }
    }
}

}  // namespace
