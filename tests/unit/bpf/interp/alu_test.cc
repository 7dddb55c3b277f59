/* ALU and ALU64: every operation, both widths, K and X, with the edge
 * cases RFC 9669 defines (division by zero, INT_MIN / -1, shift masks,
 * 32-bit zero-extension, sign extension, byte swaps). Table-driven. */
#include "vm_test_util.h"

namespace {

struct AluCase {
    const char *name;
    std::vector<vm_insn> code;   /* must leave the result in r0 */
    uint64_t expect;
};

constexpr uint64_t I64_MIN = 0x8000000000000000ull;
constexpr uint64_t ALL = ~0ull;

/* r0 = a; r1 = b; <op>; exit */
std::vector<vm_insn> bin(vm_insn op, uint64_t a, uint64_t b)
{
    return {I_LD_IMM64(0, a), I_LD_IMM64(1, b), op, I_EXIT()};
}

std::vector<vm_insn> un(vm_insn op, uint64_t a)
{
    return {I_LD_IMM64(0, a), op, I_EXIT()};
}

const std::vector<AluCase> &alu_cases()
{
    static const std::vector<AluCase> cases = {
        /* add / sub / mul */
        {"add64_wrap", bin(I_ALU64_REG(VM_ADD, 0, 1), ALL, 1), 0},
        {"add64_imm_signext", un(I_ALU64_IMM(VM_ADD, 0, -1), 5), 4},
        {"add32_zext", un(I_ALU32_IMM(VM_ADD, 0, 0), 0x100000005ull), 5},
        {"add32_wrap", bin(I_ALU32_REG(VM_ADD, 0, 1), 0xffffffffull, 1), 0},
        {"sub64", bin(I_ALU64_REG(VM_SUB, 0, 1), 0, 1), ALL},
        {"sub32_zext", un(I_ALU32_IMM(VM_SUB, 0, 1), 0), 0xffffffffull},
        {"mul64_wrap", bin(I_ALU64_REG(VM_MUL, 0, 1), 0x100000001ull, 0x100000001ull),
         0x200000001ull},
        {"mul64_imm_neg", un(I_ALU64_IMM(VM_MUL, 0, -2), 3), (uint64_t)-6},
        {"mul32_overflow", bin(I_ALU32_REG(VM_MUL, 0, 1), 0x40000000, 4), 0},
        {"mul32_imm", un(I_ALU32_IMM(VM_MUL, 0, -1), 2), 0xfffffffeull},
        /* unsigned division and modulo */
        {"div64", bin(I_ALU64_REG(VM_DIV, 0, 1), 100, 7), 14},
        {"div64_by_zero_reg", bin(I_ALU64_REG(VM_DIV, 0, 1), 100, 0), 0},
        {"div64_by_zero_imm", un(I_ALU64_IMM(VM_DIV, 0, 0), 100), 0},
        {"div64_imm_is_u64", un(I_ALU64_IMM(VM_DIV, 0, -1), ALL), 1},
        {"div64_imm_neg_small", un(I_ALU64_IMM(VM_DIV, 0, -1), 10), 0},
        {"div32", bin(I_ALU32_REG(VM_DIV, 0, 1), 0x100000064ull, 0x10000000aull), 10},
        {"div32_by_zero", bin(I_ALU32_REG(VM_DIV, 0, 1), 0x100000010ull, 0x100000000ull), 0},
        {"div32_imm_unsigned", un(I_ALU32_IMM(VM_DIV, 0, -1), 0xffffffffull), 1},
        {"mod64", bin(I_ALU64_REG(VM_MOD, 0, 1), 100, 7), 2},
        {"mod64_by_zero", bin(I_ALU64_REG(VM_MOD, 0, 1), 0x123456789ull, 0), 0x123456789ull},
        {"mod64_by_zero_imm", un(I_ALU64_IMM(VM_MOD, 0, 0), ALL), ALL},
        {"mod32", bin(I_ALU32_REG(VM_MOD, 0, 1), 100, 7), 2},
        {"mod32_by_zero_zext", bin(I_ALU32_REG(VM_MOD, 0, 1), 0x100000007ull, 0), 7},
        {"mod32_by_zero_imm_zext", un(I_ALU32_IMM(VM_MOD, 0, 0), ALL), 0xffffffffull},
        /* signed division and modulo (offset 1) */
        {"sdiv64", bin(I_SALU64_REG(VM_DIV, 0, 1), (uint64_t)-7, 2), (uint64_t)-3},
        {"sdiv64_neg_divisor", bin(I_SALU64_REG(VM_DIV, 0, 1), 7, (uint64_t)-2), (uint64_t)-3},
        {"sdiv64_intmin_minus1", bin(I_SALU64_REG(VM_DIV, 0, 1), I64_MIN, ALL), I64_MIN},
        {"sdiv64_imm_intmin_minus1", un(I_SALU64_IMM(VM_DIV, 0, -1), I64_MIN), I64_MIN},
        {"sdiv64_by_zero", bin(I_SALU64_REG(VM_DIV, 0, 1), (uint64_t)-7, 0), 0},
        {"sdiv32", bin(I_SALU32_REG(VM_DIV, 0, 1), 0xfffffff9ull, 2), 0xfffffffdull},
        {"sdiv32_intmin_minus1", bin(I_SALU32_REG(VM_DIV, 0, 1), 0x80000000ull, 0xffffffffull),
         0x80000000ull},
        {"sdiv32_imm", un(I_SALU32_IMM(VM_DIV, 0, -2), 8), 0xfffffffcull},
        {"sdiv32_by_zero", bin(I_SALU32_REG(VM_DIV, 0, 1), 0x1fffffff9ull, 0), 0},
        {"smod64", bin(I_SALU64_REG(VM_MOD, 0, 1), (uint64_t)-7, 2), (uint64_t)-1},
        {"smod64_neg_divisor", bin(I_SALU64_REG(VM_MOD, 0, 1), 7, (uint64_t)-2), 1},
        {"smod64_intmin_minus1", bin(I_SALU64_REG(VM_MOD, 0, 1), I64_MIN, ALL), 0},
        {"smod64_by_zero", bin(I_SALU64_REG(VM_MOD, 0, 1), (uint64_t)-7, 0), (uint64_t)-7},
        {"smod64_imm", un(I_SALU64_IMM(VM_MOD, 0, -3), (uint64_t)-7), (uint64_t)-1},
        {"smod32", bin(I_SALU32_REG(VM_MOD, 0, 1), 0xfffffff9ull, 2), 0xffffffffull},
        {"smod32_intmin_minus1", bin(I_SALU32_REG(VM_MOD, 0, 1), 0x80000000ull, 0xffffffffull), 0},
        {"smod32_by_zero_zext", bin(I_SALU32_REG(VM_MOD, 0, 1), 0x1fffffff9ull, 0),
         0xfffffff9ull},
        /* bitwise */
        {"or64", bin(I_ALU64_REG(VM_OR, 0, 1), 0xf0f0000000000000ull, 0x0f), 0xf0f000000000000full},
        {"or32_zext", un(I_ALU32_IMM(VM_OR, 0, 1), ALL), 0xffffffffull},
        {"and64_imm_signext", un(I_ALU64_IMM(VM_AND, 0, -16), ALL), 0xfffffffffffffff0ull},
        {"and32", bin(I_ALU32_REG(VM_AND, 0, 1), ALL, 0xff00ff00ff00ff00ull), 0xff00ff00ull},
        {"xor64", bin(I_ALU64_REG(VM_XOR, 0, 1), ALL, 1), ALL - 1},
        {"xor32_zext", un(I_ALU32_IMM(VM_XOR, 0, 0), ALL), 0xffffffffull},
        /* shifts: amounts masked */
        {"lsh64", un(I_ALU64_IMM(VM_LSH, 0, 63), 1), I64_MIN},
        {"lsh64_reg_masked", bin(I_ALU64_REG(VM_LSH, 0, 1), 1, 65), 2},
        {"lsh32_reg_masked", bin(I_ALU32_REG(VM_LSH, 0, 1), 1, 33), 2},
        {"lsh32_zext", un(I_ALU32_IMM(VM_LSH, 0, 31), 3), 0x80000000ull},
        {"rsh64", un(I_ALU64_IMM(VM_RSH, 0, 63), ALL), 1},
        {"rsh64_reg_masked", bin(I_ALU64_REG(VM_RSH, 0, 1), 8, 67), 1},
        {"rsh32", un(I_ALU32_IMM(VM_RSH, 0, 4), 0xffffffff80000000ull), 0x08000000ull},
        {"rsh32_reg_masked", bin(I_ALU32_REG(VM_RSH, 0, 1), 0x80000000ull, 63), 1},
        {"arsh64", un(I_ALU64_IMM(VM_ARSH, 0, 2), (uint64_t)-16), (uint64_t)-4},
        {"arsh64_reg_masked", bin(I_ALU64_REG(VM_ARSH, 0, 1), I64_MIN, 127), ALL},
        {"arsh32_zext", un(I_ALU32_IMM(VM_ARSH, 0, 4), 0x80000000ull), 0xf8000000ull},
        {"arsh32_reg_masked", bin(I_ALU32_REG(VM_ARSH, 0, 1), 0x80000000ull, 63), 0xffffffffull},
        /* neg */
        {"neg64", un(I_NEG64(0), 5), (uint64_t)-5},
        {"neg64_intmin", un(I_NEG64(0), I64_MIN), I64_MIN},
        {"neg32_zext", un(I_NEG32(0), 5), 0xfffffffbull},
        {"neg32_intmin", un(I_NEG32(0), 0x80000000ull), 0x80000000ull},
        /* mov and movsx */
        {"mov64_imm_signext", {I_MOV64_IMM(0, -1), I_EXIT()}, ALL},
        {"mov32_imm_no_signext", {I_MOV32_IMM(0, -1), I_EXIT()}, 0xffffffffull},
        {"mov32_reg_zext", bin(I_MOV32_REG(0, 1), 0, ALL), 0xffffffffull},
        {"mov64_reg", bin(I_MOV64_REG(0, 1), 0, 0x123456789abcdefull), 0x123456789abcdefull},
        {"movsx64_8", bin(I_MOVSX64(0, 1, 8), 0, 0x180), 0xffffffffffffff80ull},
        {"movsx64_8_pos", bin(I_MOVSX64(0, 1, 8), 0, 0x17f), 0x7f},
        {"movsx64_16", bin(I_MOVSX64(0, 1, 16), 0, 0x18000), 0xffffffffffff8000ull},
        {"movsx64_32", bin(I_MOVSX64(0, 1, 32), 0, 0x180000000ull), 0xffffffff80000000ull},
        {"movsx32_8_zext", bin(I_MOVSX32(0, 1, 8), 0, 0x80), 0xffffff80ull},
        {"movsx32_16_zext", bin(I_MOVSX32(0, 1, 16), 0, 0x8000), 0xffff8000ull},
        /* byte swaps */
        {"le16", un(I_LE(0, 16), 0x0102030405060708ull), 0x0708},
        {"le32", un(I_LE(0, 32), 0x0102030405060708ull), 0x05060708},
        {"le64", un(I_LE(0, 64), 0x0102030405060708ull), 0x0102030405060708ull},
        {"be16", un(I_BE(0, 16), 0x0102030405060708ull), 0x0807},
        {"be32", un(I_BE(0, 32), 0x0102030405060708ull), 0x08070605},
        {"be64", un(I_BE(0, 64), 0x0102030405060708ull), 0x0807060504030201ull},
        {"bswap16", un(I_BSWAP(0, 16), 0x0102030405060708ull), 0x0807},
        {"bswap32", un(I_BSWAP(0, 32), 0x0102030405060708ull), 0x08070605},
        {"bswap64", un(I_BSWAP(0, 64), 0x0102030405060708ull), 0x0807060504030201ull},
        /* ld_imm64 */
        {"lddw", {I_LD_IMM64(0, 0xfedcba9876543210ull), I_EXIT()}, 0xfedcba9876543210ull},
    };
    return cases;
}

class Alu : public ::testing::TestWithParam<AluCase>
{
};

TEST_P(Alu, Computes)
{
    const AluCase &c = GetParam();
    TestProg p(c.code);
    ASSERT_EQ(p.prepare_rc(), 0);
    EXPECT_EQ(run_both(p), c.expect) << std::hex << "0x" << c.expect;
}

INSTANTIATE_TEST_SUITE_P(Isa, Alu, ::testing::ValuesIn(alu_cases()),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(AluMisc, ImmediateOperandDoesNotTouchSourceRegister)
{
    /* K forms ignore the src field, X forms use it. */
    TestProg p({I_MOV64_IMM(0, 1), I_MOV64_IMM(1, 100),
                vm_ins(VM_CLS_ALU64 | VM_K | VM_ADD, 0, 1, 0, 2), I_EXIT()});
    EXPECT_EQ(run_both(p), 3u);
}

TEST(AluMisc, CountsInstructions)
{
    TestProg p({I_MOV64_IMM(0, 1), I_LD_IMM64(1, 2), I_ALU64_REG(VM_ADD, 0, 1), I_EXIT()});
    vm_env env{};
    uint64_t r0;
    ASSERT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), 0);
    EXPECT_EQ(r0, 3u);
    EXPECT_EQ(env.used, 4u);   /* ld_imm64 counts once */
}

} // namespace
