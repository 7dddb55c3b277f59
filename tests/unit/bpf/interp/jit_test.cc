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

}  // namespace
