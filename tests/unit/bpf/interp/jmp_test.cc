/* JMP and JMP32: every condition with K and X operands, signedness,
 * 32-bit comparisons of the low halves, JA and gotol, backward loops. */
#include "vm_test_util.h"

namespace {

struct JmpCase {
    const char *name;
    uint8_t op;
    bool is32;
    uint64_t a, b;   /* b must fit in a sign-extended imm32 for the K form */
    bool taken;
};

/* r0 = 0; r1 = a; r2 = b; if (cond) r0 = 1 */
std::vector<vm_insn> jprog(const JmpCase &c, bool reg)
{
    vm_insn j = reg ? (c.is32 ? I_JMP32_REG(c.op, 1, 2, 1) : I_JMP_REG(c.op, 1, 2, 1))
                    : (c.is32 ? I_JMP32_IMM(c.op, 1, (int32_t)c.b, 1)
                              : I_JMP_IMM(c.op, 1, (int32_t)c.b, 1));
    return {I_MOV64_IMM(0, 0), I_LD_IMM64(1, c.a), I_LD_IMM64(2, c.b), j, I_EXIT(),
            I_MOV64_IMM(0, 1), I_EXIT()};
}

constexpr uint64_t M1 = ~0ull;           /* -1 */
constexpr uint64_t HI = 0x100000000ull;  /* only the upper half set */

const std::vector<JmpCase> &jmp_cases()
{
    static const std::vector<JmpCase> cases = {
        {"jeq_eq", VM_JEQ, false, 5, 5, true},
        {"jeq_ne", VM_JEQ, false, 5, 6, false},
        {"jeq_minus1", VM_JEQ, false, M1, M1, true},
        {"jeq_upper_differs", VM_JEQ, false, HI + 5, 5, false},
        {"jeq32_upper_ignored", VM_JEQ, true, HI + 5, 5, true},
        {"jeq32_minus1", VM_JEQ, true, 0xffffffffull, M1, true},
        {"jne", VM_JNE, false, 1, 2, true},
        {"jne_eq", VM_JNE, false, 2, 2, false},
        {"jne32_upper_ignored", VM_JNE, true, HI, 0, false},
        {"jgt_unsigned", VM_JGT, false, M1, 1, true},
        {"jgt_equal", VM_JGT, false, 1, 1, false},
        {"jgt32", VM_JGT, true, HI + 1, 2, false},
        {"jge", VM_JGE, false, 2, 2, true},
        {"jge_less", VM_JGE, false, 1, 2, false},
        {"jge32", VM_JGE, true, 0xffffffffull, 0x7fffffff, true},
        {"jlt", VM_JLT, false, 1, M1, true},
        {"jlt_not", VM_JLT, false, M1, 1, false},
        {"jlt32", VM_JLT, true, HI + 5, 6, true},
        {"jle", VM_JLE, false, 3, 3, true},
        {"jle_not", VM_JLE, false, 4, 3, false},
        {"jle32", VM_JLE, true, HI + 3, 3, true},
        {"jset", VM_JSET, false, 0x12, 0x02, true},
        {"jset_not", VM_JSET, false, 0x12, 0x01, false},
        {"jset_high_via_signext", VM_JSET, false, 0x8000000000000000ull, M1, true},
        {"jset32_high_ignored", VM_JSET, true, HI, M1, false},
        {"jsgt", VM_JSGT, false, 1, M1, true},
        {"jsgt_not", VM_JSGT, false, M1, 1, false},
        {"jsgt32", VM_JSGT, true, 0x7fffffffull, 0xffffffffull, true},
        {"jsgt32_sign_of_low_half", VM_JSGT, true, 0x80000000ull, 0, false},
        {"jsge", VM_JSGE, false, M1, M1, true},
        {"jsge_not", VM_JSGE, false, (uint64_t)-2, M1, false},
        {"jsge32", VM_JSGE, true, 0x80000000ull, 0x80000000ull, true},
        {"jslt", VM_JSLT, false, (uint64_t)-5, 0, true},
        {"jslt_not", VM_JSLT, false, 0, (uint64_t)-5, false},
        {"jslt32", VM_JSLT, true, 0xfffffffbull, 0, true},
        {"jslt32_upper_ignored", VM_JSLT, true, HI, 1, true},
        {"jsle", VM_JSLE, false, (uint64_t)-5, (uint64_t)-5, true},
        {"jsle_not", VM_JSLE, false, 1, 0, false},
        {"jsle32", VM_JSLE, true, 0xffffffffull, 0, true},
    };
    return cases;
}

class Jmp : public ::testing::TestWithParam<JmpCase>
{
};

TEST_P(Jmp, RegisterOperand)
{
    TestProg p(jprog(GetParam(), true));
    EXPECT_EQ(run_both(p), GetParam().taken ? 1u : 0u);
}

TEST_P(Jmp, ImmediateOperand)
{
    TestProg p(jprog(GetParam(), false));
    EXPECT_EQ(run_both(p), GetParam().taken ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(Isa, Jmp, ::testing::ValuesIn(jmp_cases()),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(JmpMisc, JaSkips)
{
    TestProg p({I_MOV64_IMM(0, 1), I_JA(1), I_MOV64_IMM(0, 2), I_EXIT()});
    EXPECT_EQ(run_both(p), 1u);
}

TEST(JmpMisc, GotolUsesImmediate)
{
    /* JMP32|JA takes its 32-bit offset from imm, not off. */
    TestProg p({I_MOV64_IMM(0, 1), vm_ins(VM_CLS_JMP32 | VM_JA, 0, 0, 5, 2), I_MOV64_IMM(0, 2),
                I_MOV64_IMM(0, 3), I_EXIT()});
    EXPECT_EQ(run_both(p), 1u);
}

TEST(JmpMisc, GotolBackward)
{
    /* r0 counts down from 3 through a gotol back-edge. */
    TestProg p({I_MOV64_IMM(0, 3), I_MOV64_IMM(1, 0), I_JMP_IMM(VM_JEQ, 0, 0, 3),
                I_ALU64_IMM(VM_SUB, 0, 1), I_ALU64_IMM(VM_ADD, 1, 10), I_GOTOL(-4),
                I_MOV64_REG(0, 1), I_EXIT()});
    EXPECT_EQ(run_both(p), 30u);
}

TEST(JmpMisc, BackwardLoopSum)
{
    /* sum of 1..100 */
    TestProg p({I_MOV64_IMM(0, 0), I_MOV64_IMM(1, 100), I_ALU64_REG(VM_ADD, 0, 1),
                I_ALU64_IMM(VM_SUB, 1, 1), I_JMP_IMM(VM_JNE, 1, 0, -3), I_EXIT()});
    EXPECT_EQ(run_both(p), 5050u);
}

TEST(JmpMisc, ExitNotLast)
{
    TestProg p({I_MOV64_IMM(0, 7), I_EXIT(), I_MOV64_IMM(0, 8), I_EXIT()});
    EXPECT_EQ(run_both(p), 7u);
}

} // namespace
