/* Malformed programs run unverified: every invalid instruction is
 * -EINVAL with a message, in both modes, never UB; rodata and prepare. */
#include "vm_test_util.h"

namespace {

struct BadCase {
    const char *name;
    std::vector<vm_insn> code;
    const char *msg;
};

class Invalid : public ::testing::TestWithParam<BadCase>
{
};

TEST_P(Invalid, RejectedWhenReached)
{
    TestProg p(GetParam().code);
    ASSERT_EQ(p.prepare_rc(), 0);
    for (bool checked : {false, true}) {
        vm_env env{};
        uint64_t r0 = 0;
        EXPECT_EQ(p.run_raw(&r0, checked, nullptr, 0, &env), -EINVAL) << GetParam().name;
        EXPECT_NE(std::string(env.fault).find(GetParam().msg), std::string::npos) << env.fault;
    }
}

#define BAD(name, msg, ...) BadCase{name, {I_MOV64_IMM(0, 0), __VA_ARGS__, I_EXIT()}, msg}

INSTANTIATE_TEST_SUITE_P(
    Isa, Invalid,
    ::testing::Values(
        BAD("opcode_ff", "pc 1: invalid opcode (code 0xff", vm_ins(0xff, 0, 0, 0, 0)),
        BAD("legacy_ld_abs", "invalid opcode", vm_ins(VM_CLS_LD | VM_ABS | VM_W, 0, 0, 0, 0)),
        BAD("legacy_ld_ind", "invalid opcode", vm_ins(VM_CLS_LD | VM_IND | VM_B, 0, 1, 0, 0)),
        BAD("callx_reserved_imm", "invalid opcode", vm_ins(VM_CLS_JMP | VM_X | VM_CALL, 1, 0, 0, 1)),
        BAD("callx_no_helper", "pc 1: callx r1 holds 0, which is not the number of a helper",
            vm_ins(VM_CLS_JMP | VM_X | VM_CALL, 1, 0, 0, 0)),
        BAD("call_kfunc", "invalid opcode", vm_ins(VM_CLS_JMP | VM_CALL, 0, 2, 0, 1)),
        BAD("jmp32_call", "invalid opcode", vm_ins(VM_CLS_JMP32 | VM_CALL, 0, 0, 0, 1)),
        BAD("jmp32_exit", "invalid opcode", vm_ins(VM_CLS_JMP32 | VM_EXIT, 0, 0, 0, 0)),
        BAD("ja_reg", "invalid opcode", vm_ins(VM_CLS_JMP | VM_X | VM_JA, 0, 0, 0, 0)),
        BAD("jmp_op_e0", "invalid opcode", vm_ins(VM_CLS_JMP | 0xe0, 0, 0, 0, 0)),
        BAD("alu_op_e0", "invalid opcode", vm_ins(VM_CLS_ALU64 | 0xe0, 0, 0, 0, 0)),
        BAD("neg_reg", "invalid opcode", vm_ins(VM_CLS_ALU64 | VM_X | VM_NEG, 0, 1, 0, 0)),
        BAD("sdiv_offset_2", "invalid opcode", vm_ins(VM_CLS_ALU64 | VM_DIV, 0, 0, 2, 1)),
        BAD("smod_offset_minus1", "invalid opcode", vm_ins(VM_CLS_ALU | VM_MOD, 0, 0, -1, 1)),
        BAD("mov_k_offset", "invalid opcode", vm_ins(VM_CLS_ALU64 | VM_K | VM_MOV, 0, 0, 8, 1)),
        BAD("movsx_7", "invalid opcode", I_MOVSX64(0, 1, 7)),
        BAD("movsx32_32", "invalid opcode", I_MOVSX32(0, 1, 32)),
        BAD("end_width_8", "invalid opcode", I_LE(0, 8)),
        BAD("bswap_reg", "invalid opcode", vm_ins(VM_CLS_ALU64 | VM_X | VM_END, 0, 0, 0, 16)),
        BAD("ldxsdw", "invalid opcode", vm_ins(VM_CLS_LDX | VM_MEMSX | VM_DW, 0, 10, -8, 0)),
        BAD("st_atomic_class", "invalid opcode", vm_ins(VM_CLS_ST | VM_ATOMIC | VM_DW, 10, 0, -8, 0)),
        BAD("atomic_byte", "invalid opcode", I_ATOMIC(VM_B, 10, 1, -8, VM_ADD)),
        BAD("atomic_bad_op", "invalid opcode", I_ATOMIC(VM_DW, 10, 1, -8, VM_SUB)),
        BAD("ldx_imm_mode", "invalid opcode", vm_ins(VM_CLS_LDX | VM_IMM | VM_W, 0, 10, 0, 0)),
        BAD("write_r10", "invalid register", I_MOV64_IMM(10, 0)),
        BAD("ldx_into_r10", "invalid register", I_LDX(VM_DW, 10, 10, -8)),
        BAD("dst_r11", "invalid register", I_MOV64_IMM(11, 0)),
        BAD("src_r12", "invalid register", I_MOV64_REG(0, 12)),
        BAD("jmp_src_r15", "invalid register", I_JMP_REG(VM_JEQ, 0, 15, 0)),
        BAD("store_base_r11", "invalid register", I_ST(VM_W, 11, 0, 0)),
        BAD("fetch_into_r10", "invalid register", I_ATOMIC(VM_DW, 1, 10, 0, VM_ADD | VM_FETCH)),
        BAD("unknown_helper", "unknown helper", I_CALL_HELPER(999)),
        BAD("helper_zero", "unknown helper", I_CALL_HELPER(0)),
        BAD("jump_before_start", "jump or call target out of range", I_JA(-5)),
        BAD("jump_past_end", "jump or call target out of range", I_JMP_IMM(VM_JEQ, 0, 0, 100)),
        BAD("call_past_end", "jump or call target out of range", I_CALL_LOCAL(1000)),
        BAD("call_to_end", "jump or call target out of range", I_CALL_LOCAL(1)),
        BAD("lddw_src_map", "malformed ld_imm64", vm_ins(VM_OPC_LD_IMM64, 0, 1, 0, 0),
            vm_ins(0, 0, 0, 0, 0)),
        BAD("lddw_bad_second_slot", "malformed ld_imm64", vm_ins(VM_OPC_LD_IMM64, 0, 0, 0, 0),
            I_MOV64_IMM(0, 0)),
        BAD("lddw_rodata_without_rodata", "rodata offset", I_LD_RODATA(0, 0)),
        BAD("jump_into_lddw", "jump into the middle of ld_imm64", I_JA(1), I_LD_IMM64(0, 1)),
        BAD("fall_off_end_via_jump", "fell off the end", I_JA(1))),
    [](const auto &info) { return std::string(info.param.name); });

TEST(InvalidMisc, FallingOffTheEnd)
{
    TestProg p({I_MOV64_IMM(0, 1)});
    vm_env env{};
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), -EINVAL);
    EXPECT_STREQ(env.fault, "pc 1: execution fell off the end of the program");
    EXPECT_EQ(env.fault_pc, 1u);
}

TEST(InvalidMisc, TruncatedLddwAtEnd)
{
    TestProg p({I_MOV64_IMM(0, 1), vm_ins(VM_OPC_LD_IMM64, 0, 0, 0, 5)});
    vm_env env{};
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, true, nullptr, 0, &env), -EINVAL);
    EXPECT_NE(std::string(env.fault).find("malformed ld_imm64"), std::string::npos);
}

TEST(InvalidMisc, EmptyProgram)
{
    TestProg p(std::vector<vm_insn>{});
    ASSERT_EQ(p.prepare_rc(), 0);
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, true), -EINVAL);
}

TEST(InvalidMisc, UnreachedInvalidInstructionIsHarmless)
{
    TestProg p({I_MOV64_IMM(0, 3), I_EXIT(), vm_ins(0xff, 0, 0, 0, 0)});
    EXPECT_EQ(run_both(p), 3u);
}

TEST(InvalidMisc, NotPrepared)
{
    vm_insn code[] = {I_MOV64_IMM(0, 1), I_EXIT()};
    vm_prog p{};
    p.insns = code;
    p.ninsns = 2;
    vm_env env{};
    uint64_t r0;
    EXPECT_EQ(vm_run_raw(&p, nullptr, 0, &env, &r0), -ENOEXEC);
    EXPECT_EQ(vm_prepare(nullptr), -EINVAL);
    vm_unprepare(nullptr);
}

TEST(InvalidMisc, RandomProgramsNeverCrashCheckedMode)
{
    /* Deterministic pseudo-random instruction streams; whatever they do,
     * checked mode must return normally (ASan/UBSan watch the rest). */
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    auto next = [&] {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        return seed;
    };
    std::vector<uint8_t> mem(64);
    int outcomes[4] = {0};
    for (int iter = 0; iter < 3000; iter++) {
        std::vector<vm_insn> code;
        int n = 1 + (int)(next() % 24);
        for (int i = 0; i < n; i++) {
            uint64_t r = next();
            vm_insn in;
            in.code = (uint8_t)r;
            in.regs = (uint8_t)((r >> 8) % 11 | ((r >> 16) % 11) << 4);
            in.off = (int16_t)((int64_t)(r >> 24) % 8 - 4);
            in.imm = (r >> 40) & 1 ? (int32_t)(r >> 32) : (int32_t)((r >> 32) % 64);
            code.push_back(in);
        }
        TestProg p(code);
        vm_env env{};
        env.budget = 500;
        uint64_t r0;
        int rc = p.run_raw(&r0, true, mem.data(), mem.size(), &env);
        EXPECT_TRUE(rc == 0 || rc == -EINVAL || rc == -EFAULT || rc == -ETIME) << rc;
        outcomes[rc == 0 ? 0 : rc == -EINVAL ? 1 : rc == -EFAULT ? 2 : 3]++;
    }
    EXPECT_GT(outcomes[1], 0);
}

TEST(Rodata, LoadsThroughResolvedAddress)
{
    std::vector<uint8_t> ro = {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80};
    TestProg p({I_LD_RODATA(1, 4), I_LDX(VM_W, 0, 1, 0), I_EXIT()}, ro);
    EXPECT_EQ(run_both(p), 0x80706050u);
}

TEST(Rodata, OffsetPastEndIsInvalid)
{
    std::vector<uint8_t> ro(8);
    TestProg p({I_LD_RODATA(1, 9), I_MOV64_IMM(0, 0), I_EXIT()}, ro);
    uint64_t r0;
    vm_env env{};
    EXPECT_EQ(p.run_raw(&r0, false, nullptr, 0, &env), -EINVAL);
    EXPECT_NE(std::string(env.fault).find("rodata offset"), std::string::npos);
}

} // namespace

/* vm_run() enforces the runtime side of the verifier's contract
 * (bpf/verifier.h): it refuses buffers the verifier's proofs don't cover. */
TEST(InvalidMisc, ContextBuffersOutsideTheContract)
{
    TestProg p({I_MOV64_IMM(0, 7), I_EXIT()});
    alignas(8) static uint8_t in[16], out[16];
    auto run = [&](uint64_t d, uint64_t de, uint64_t o, uint64_t oe) {
        vm_ctx ctx{};
        ctx.data = d, ctx.data_end = de, ctx.out = o, ctx.out_end = oe;
        vm_env env{};
        uint64_t r0 = 0;
        return vm_run(p.prog(), &ctx, &env, &r0);
    };
    uint64_t i = (uintptr_t)in, o = (uintptr_t)out;
    EXPECT_EQ(run(i, i + 16, o, o + 16), 0);
    EXPECT_EQ(run(i + 16, i, o, o + 16), -EINVAL);              /* end before start */
    EXPECT_EQ(run(i, i + VM_MAX_BUF_SIZE + 1ull, o, o + 16), -EINVAL);  /* too big */
    EXPECT_EQ(run(i, i + 16, o + 1, o + 16), -EINVAL);          /* misaligned output */
    EXPECT_EQ(run(i, i + 16, o + 16, o), -EINVAL);
}
