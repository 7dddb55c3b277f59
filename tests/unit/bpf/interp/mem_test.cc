/* Loads, stores (plain and sign-extending), atomics, and checked-mode
 * faults on out-of-bounds access to each region a run owns. */
#include "vm_test_util.h"

#include <array>

namespace {

std::array<uint8_t, 16> pattern()
{
    return {0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88,
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
}

struct LoadCase {
    const char *name;
    vm_insn insn;   /* loads r0 from [r1 + off] */
    uint64_t expect;
};

class Load : public ::testing::TestWithParam<LoadCase>
{
};

TEST_P(Load, FromMemory)
{
    auto mem = pattern();
    TestProg p({I_MOV64_IMM(0, -1), GetParam().insn, I_EXIT()});
    EXPECT_EQ(run_both(p, mem.data(), mem.size()), GetParam().expect);
}

INSTANTIATE_TEST_SUITE_P(
    Isa, Load,
    ::testing::Values(LoadCase{"ldxb", I_LDX(VM_B, 0, 1, 0), 0x81},
                      LoadCase{"ldxh", I_LDX(VM_H, 0, 1, 0), 0x8281},
                      LoadCase{"ldxw", I_LDX(VM_W, 0, 1, 0), 0x84838281},
                      LoadCase{"ldxdw", I_LDX(VM_DW, 0, 1, 0), 0x8887868584838281ull},
                      LoadCase{"ldxw_offset", I_LDX(VM_W, 0, 1, 8), 0x44332211},
                      LoadCase{"ldxw_unaligned", I_LDX(VM_W, 0, 1, 3), 0x87868584},
                      LoadCase{"ldxsb", I_LDXS(VM_B, 0, 1, 0), 0xffffffffffffff81ull},
                      LoadCase{"ldxsb_pos", I_LDXS(VM_B, 0, 1, 8), 0x11},
                      LoadCase{"ldxsh", I_LDXS(VM_H, 0, 1, 0), 0xffffffffffff8281ull},
                      LoadCase{"ldxsw", I_LDXS(VM_W, 0, 1, 0), 0xffffffff84838281ull},
                      LoadCase{"ldxsw_pos", I_LDXS(VM_W, 0, 1, 8), 0x44332211}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Store, EachSizeToStackAndBack)
{
    TestProg p({I_ST(VM_DW, 10, -8, -1), I_ST(VM_W, 10, -8, 0x11223344), I_ST(VM_H, 10, -4, 0x5566),
                I_ST(VM_B, 10, -2, 0x77), I_LDX(VM_DW, 0, 10, -8), I_EXIT()});
    EXPECT_EQ(run_both(p), 0xff77556611223344ull);
}

TEST(Store, StxEachSizeTruncates)
{
    auto mem = pattern();
    TestProg p({I_LD_IMM64(2, 0xa1a2a3a4a5a6a7a8ull), I_STX(VM_B, 1, 2, 0), I_STX(VM_H, 1, 2, 2),
                I_STX(VM_W, 1, 2, 4), I_STX(VM_DW, 1, 2, 8), I_LDX(VM_DW, 0, 1, 0), I_EXIT()});
    EXPECT_EQ(run_both(p, mem.data(), mem.size()), 0xa5a6a7a8a7a882a8ull);
    uint64_t hi;
    memcpy(&hi, mem.data() + 8, 8);
    EXPECT_EQ(hi, 0xa1a2a3a4a5a6a7a8ull);
}

TEST(Store, StdwImmediateSignExtends)
{
    TestProg p({I_ST(VM_DW, 10, -8, -2), I_LDX(VM_DW, 0, 10, -8), I_EXIT()});
    EXPECT_EQ(run_both(p), (uint64_t)-2);
}

/* ---- atomics ---- */

struct AtomicCase {
    const char *name;
    uint8_t size;
    int32_t op;
    uint64_t mem, src, r0_in;
    uint64_t mem_after, src_after, r0_after;
};

class Atomic : public ::testing::TestWithParam<AtomicCase>
{
};

/* [fp-8] = mem; r2 = src; r0 = r0_in; atomic; return value checked via
 * three runs that return mem, src and r0 respectively. */
TEST_P(Atomic, Semantics)
{
    const AtomicCase &c = GetParam();
    for (int which = 0; which < 3; which++) {
        std::vector<vm_insn> code = {I_LD_IMM64(1, c.mem), I_STX(VM_DW, 10, 1, -8),
                                     I_LD_IMM64(2, c.src), I_LD_IMM64(0, c.r0_in),
                                     I_ATOMIC(c.size, 10, 2, -8, c.op)};
        if (which == 0)
            code.push_back(I_LDX(VM_DW, 0, 10, -8));
        else if (which == 1)
            code.push_back(I_MOV64_REG(0, 2));
        code.push_back(I_EXIT());
        TestProg p(code);
        uint64_t want = which == 0 ? c.mem_after : which == 1 ? c.src_after : c.r0_after;
        EXPECT_EQ(run_both(p), want) << "which=" << which;
    }
}

constexpr uint64_t MEM = 0x1111111180000001ull;

INSTANTIATE_TEST_SUITE_P(
    Isa, Atomic,
    ::testing::Values(
        AtomicCase{"add64", VM_DW, VM_ADD, 5, 3, 9, 8, 3, 9},
        AtomicCase{"fetch_add64", VM_DW, VM_ADD | VM_FETCH, 5, 3, 9, 8, 5, 9},
        AtomicCase{"or64", VM_DW, VM_OR, 0x10, 0x01, 0, 0x11, 0x01, 0},
        AtomicCase{"fetch_or64", VM_DW, VM_OR | VM_FETCH, 0x10, 0x01, 0, 0x11, 0x10, 0},
        AtomicCase{"and64", VM_DW, VM_AND, 0x13, 0x06, 0, 0x02, 0x06, 0},
        AtomicCase{"fetch_and64", VM_DW, VM_AND | VM_FETCH, 0x13, 0x06, 0, 0x02, 0x13, 0},
        AtomicCase{"xor64", VM_DW, VM_XOR, 0x13, 0x06, 0, 0x15, 0x06, 0},
        AtomicCase{"fetch_xor64", VM_DW, VM_XOR | VM_FETCH, 0x13, 0x06, 0, 0x15, 0x13, 0},
        AtomicCase{"xchg64", VM_DW, VM_XCHG, 7, 9, 0, 9, 7, 0},
        AtomicCase{"cmpxchg64_hit", VM_DW, VM_CMPXCHG, 7, 9, 7, 9, 9, 7},
        AtomicCase{"cmpxchg64_miss", VM_DW, VM_CMPXCHG, 7, 9, 6, 7, 9, 7},
        /* 32-bit: only the low word changes; fetched values zero-extend. */
        AtomicCase{"add32", VM_W, VM_ADD, MEM, 0xffffffffull, 0, 0x1111111180000000ull,
                   0xffffffffull, 0},
        AtomicCase{"fetch_add32", VM_W, VM_ADD | VM_FETCH, MEM, 0x100000001ull, 0,
                   0x1111111180000002ull, 0x80000001ull, 0},
        AtomicCase{"fetch_or32", VM_W, VM_OR | VM_FETCH, MEM, 0xff00000002ull, 0,
                   0x1111111180000003ull, 0x80000001ull, 0},
        AtomicCase{"fetch_and32", VM_W, VM_AND | VM_FETCH, MEM, 1, 0, 0x1111111100000001ull,
                   0x80000001ull, 0},
        AtomicCase{"fetch_xor32", VM_W, VM_XOR | VM_FETCH, MEM, 0x80000000ull, 0,
                   0x1111111100000001ull, 0x80000001ull, 0},
        AtomicCase{"or32", VM_W, VM_OR, MEM, 2, 0, 0x1111111180000003ull, 2, 0},
        AtomicCase{"and32", VM_W, VM_AND, MEM, 1, 0, 0x1111111100000001ull, 1, 0},
        AtomicCase{"xor32", VM_W, VM_XOR, MEM, 1, 0, 0x1111111180000000ull, 1, 0},
        AtomicCase{"xchg32", VM_W, VM_XCHG, MEM, 0x200000005ull, 0, 0x1111111100000005ull,
                   0x80000001ull, 0},
        AtomicCase{"cmpxchg32_hit_low_half", VM_W, VM_CMPXCHG, MEM, 9, 0xff80000001ull,
                   0x1111111100000009ull, 9, 0x80000001ull},
        AtomicCase{"cmpxchg32_miss", VM_W, VM_CMPXCHG, MEM, 9, 1, MEM, 9, 0x80000001ull}),
    [](const auto &info) { return std::string(info.param.name); });

/* ---- checked mode: each region ---- */

struct Bufs {
    std::vector<uint8_t> in = std::vector<uint8_t>(4096, 0x5a);
    std::vector<uint8_t> out = std::vector<uint8_t>(64, 0);
    vm_ctx ctx{};
    uint8_t state[VM_STATE_SIZE] = {};
    Bufs()
    {
        ctx.data = (uintptr_t)in.data();
        ctx.data_end = ctx.data + in.size();
        ctx.out = (uintptr_t)out.data();
        ctx.out_end = ctx.out + out.size();
        ctx.len = in.size();
    }
};

/* Program prologue: r6 = data, r7 = out, r8 = rodata. */
std::vector<vm_insn> with_regs(std::vector<vm_insn> body)
{
    std::vector<vm_insn> code = {I_LDX(VM_DW, 6, 1, 0), I_LDX(VM_DW, 7, 1, 16),
                                 I_LD_RODATA(8, 0), I_MOV64_IMM(0, 0)};
    code.insert(code.end(), body.begin(), body.end());
    code.push_back(I_EXIT());
    return code;
}

struct FaultCase {
    const char *name;
    std::vector<vm_insn> body;   /* after the 5-slot prologue */
    const char *msg;             /* expected fault text fragment */
    uint32_t pc;
};

class Fault : public ::testing::TestWithParam<FaultCase>
{
};

TEST_P(Fault, CheckedModeStops)
{
    const FaultCase &c = GetParam();
    std::vector<vm_insn> code = with_regs(c.body);
    std::vector<uint8_t> ro(16, 1);
    TestProg p(code);
    p.prog()->rodata = ro.data();
    p.prog()->rodata_size = (uint32_t)ro.size();
    vm_unprepare(p.prog());
    ASSERT_EQ(vm_prepare(p.prog()), 0);
    Bufs b;
    vm_env env{};
    env.checked = true;
    uint64_t r0 = 0;
    EXPECT_EQ(vm_run(p.prog(), &b.ctx, &env, &r0), -EFAULT);
    EXPECT_NE(std::string(env.fault).find(c.msg), std::string::npos) << env.fault;
    EXPECT_EQ(env.fault_pc, c.pc) << env.fault;
    EXPECT_NE(std::string(env.fault).find("pc " + std::to_string(c.pc) + ":"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Regions, Fault,
    ::testing::Values(
        FaultCase{"input_past_end", {I_LDX(VM_B, 0, 6, 4096)},
                  "load of 1 bytes at input+4096 out of bounds", 5},
        FaultCase{"input_straddles_end", {I_LDX(VM_W, 0, 6, 4094)},
                  "load of 4 bytes at input+4094 out of bounds", 5},
        FaultCase{"input_before_start", {I_LDX(VM_B, 0, 6, -1)}, "load of 1 bytes at input-1 out", 5},
        FaultCase{"input_is_read_only", {I_ST(VM_B, 6, 0, 1)},
                  "store of 1 bytes at input+0 to read-only memory", 5},
        FaultCase{"output_past_end", {I_STX(VM_DW, 7, 0, 60)},
                  "store of 8 bytes at output+60 out of bounds", 5},
        FaultCase{"ctx_is_read_only", {I_ST(VM_DW, 1, 0, 1)},
                  "store of 8 bytes at ctx+0 to read-only memory", 5},
        FaultCase{"ctx_past_end", {I_LDX(VM_DW, 0, 1, 96)}, "load of 8 bytes at", 5},
        FaultCase{"rodata_is_read_only", {I_ST(VM_B, 8, 0, 1)},
                  "store of 1 bytes at rodata+0 to read-only memory", 5},
        FaultCase{"rodata_past_end", {I_LDX(VM_DW, 0, 8, 12)},
                  "load of 8 bytes at rodata+12 out of bounds", 5},
        FaultCase{"stack_below_frame", {I_MOV64_IMM(2, 1), I_STX(VM_DW, 10, 2, -520)},
                  "store of 8 bytes at stack fp-520 out of bounds", 6},
        FaultCase{"stack_above_top", {I_LDX(VM_DW, 0, 10, 0)}, "load of 8 bytes at", 5},
        FaultCase{"null_pointer", {I_MOV64_IMM(2, 0), I_LDX(VM_W, 0, 2, 0)},
                  "load of 4 bytes at 0x0 out of bounds", 6},
        FaultCase{"wild_pointer", {I_LD_IMM64(2, 0xdeadbeef00ull), I_ST(VM_W, 2, 0, 0)},
                  "store of 4 bytes at", 7},
        FaultCase{"wrapping_address", {I_MOV64_IMM(2, -1), I_LDX(VM_DW, 0, 2, 0)},
                  "load of 8 bytes at", 6},
        FaultCase{"atomic_misaligned", {I_MOV64_IMM(2, 1), I_ATOMIC(VM_DW, 10, 2, -12, VM_ADD)},
                  "atomic of 8 bytes at stack fp-12 misaligned", 6},
        FaultCase{"atomic_on_input", {I_MOV64_IMM(2, 1), I_ATOMIC(VM_DW, 6, 2, 0, VM_ADD)},
                  "to read-only memory", 6},
        FaultCase{"helper_write_past_output",
                  {I_MOV64_REG(1, 7), I_ALU64_IMM(VM_ADD, 1, 32), I_MOV64_IMM(2, 64),
                   I_MOV64_REG(3, 6), I_MOV64_IMM(4, 64), I_CALL_HELPER(4)},
                  "helper write of 64 bytes at output+32 out of bounds (cisc_copy arg 1)", 10},
        FaultCase{"helper_read_past_input",
                  {I_MOV64_IMM(1, 0), I_MOV64_REG(2, 6), I_MOV64_IMM(3, 4097), I_CALL_HELPER(1)},
                  "helper read of 4097 bytes at input+0 out of bounds (cisc_crc32c arg 2)", 8},
        FaultCase{"helper_write_to_input",
                  {I_MOV64_REG(1, 6), I_MOV64_IMM(2, 8), I_MOV64_REG(3, 10),
                   I_ALU64_IMM(VM_ADD, 3, -8), I_MOV64_IMM(4, 8), I_CALL_HELPER(4)},
                  "helper write of 8 bytes at input+0 to read-only memory", 10},
        FaultCase{"state_past_end",
                  {I_CALL_HELPER(9), I_ST(VM_B, 0, 4096, 1)},
                  "store of 1 bytes at state+4096 out of bounds", 6}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Checked, InBoundsAccessToEveryRegionSucceeds)
{
    std::vector<uint8_t> ro = {9, 8, 7, 6, 5, 4, 3, 2};
    TestProg p(with_regs({I_LDX(VM_B, 2, 6, 4095), I_ALU64_REG(VM_ADD, 0, 2),    /* input */
                          I_STX(VM_DW, 7, 0, 56),                                   /* output */
                          I_LDX(VM_DW, 2, 1, 88), I_ALU64_REG(VM_ADD, 0, 2),      /* ctx arg[3] */
                          I_LDX(VM_B, 2, 8, 7), I_ALU64_REG(VM_ADD, 0, 2),        /* rodata */
                          I_STX(VM_DW, 10, 0, -512), I_LDX(VM_DW, 0, 10, -512),   /* stack */
                          I_MOV64_REG(6, 0), I_CALL_HELPER(9), I_STX(VM_B, 0, 6, 4095),
                          I_LDX(VM_B, 0, 0, 4095)}),                                /* state */
               ro);
    for (bool checked : {false, true}) {
        Bufs b;
        b.ctx.arg[3] = 100;
        vm_env env{};
        env.checked = checked;
        env.state = b.state;
        uint64_t r0 = 0;
        ASSERT_EQ(vm_run(p.prog(), &b.ctx, &env, &r0), 0) << env.fault;
        EXPECT_EQ(r0, 0x5au + 100 + 2);
        EXPECT_EQ(b.out[56], 0x5a);
        EXPECT_EQ(b.state[4095], 0x5a + 100 + 2);
    }
}

TEST(Checked, RawMemoryIsTheOnlyBuffer)
{
    uint8_t mem[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    TestProg p({I_LDX(VM_DW, 0, 1, 0), I_STX(VM_DW, 1, 0, 0), I_LDX(VM_B, 3, 1, 8), I_EXIT()});
    vm_env env{};
    uint64_t r0;
    EXPECT_EQ(p.run_raw(&r0, true, mem, sizeof(mem), &env), -EFAULT);
    EXPECT_STREQ(env.fault, "pc 2: load of 1 bytes at mem+8 out of bounds");
}

} // namespace
