// The disassembler: one expected line per instruction form (table), the
// same text as llvm-objdump on real objects, and vm_prog_line().
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "elf_builder.h"

extern "C" {
#include "bpf/loader.h"
#include "bpf/prog.h"
}

namespace {

struct Form {
    std::vector<vm_insn> insns;
    const char *text;
    int slots;
};

vm_insn ALU(uint8_t cls, uint8_t op, uint8_t src, uint8_t dst, uint8_t s, int32_t imm = 0,
            int16_t off = 0)
{
    return I((uint8_t)(cls | op | src), dst, s, off, imm);
}

vm_insn MEM(uint8_t cls, uint8_t mode, uint8_t size, uint8_t dst, uint8_t src, int16_t off,
            int32_t imm = 0)
{
    return I((uint8_t)(cls | mode | size), dst, src, off, imm);
}

vm_insn JMP(uint8_t cls, uint8_t op, uint8_t src, uint8_t dst, uint8_t s, int16_t off,
            int32_t imm = 0)
{
    return I((uint8_t)(cls | op | src), dst, s, off, imm);
}

const uint8_t A64 = VM_CLS_ALU64, A32 = VM_CLS_ALU, J64 = VM_CLS_JMP, J32 = VM_CLS_JMP32;

std::vector<Form> forms()
{
    return {
        {{ALU(A64, VM_ADD, VM_X, 1, 2)}, "r1 += r2", 1},
        {{ALU(A64, VM_ADD, VM_K, 1, 0, -5)}, "r1 += -5", 1},
        {{ALU(A32, VM_SUB, VM_X, 1, 2)}, "w1 -= w2", 1},
        {{ALU(A64, VM_MUL, VM_K, 3, 0, 7)}, "r3 *= 7", 1},
        {{ALU(A64, VM_DIV, VM_X, 1, 2)}, "r1 /= r2", 1},
        {{ALU(A64, VM_DIV, VM_X, 1, 2, 0, 1)}, "r1 s/= r2", 1},
        {{ALU(A32, VM_MOD, VM_K, 1, 0, 3, 1)}, "w1 s%= 3", 1},
        {{ALU(A32, VM_MOD, VM_K, 1, 0, 3)}, "w1 %= 3", 1},
        {{ALU(A64, VM_OR, VM_X, 4, 5)}, "r4 |= r5", 1},
        {{ALU(A64, VM_AND, VM_K, 4, 0, 255)}, "r4 &= 255", 1},
        {{ALU(A64, VM_LSH, VM_K, 4, 0, 32)}, "r4 <<= 32", 1},
        {{ALU(A32, VM_RSH, VM_X, 4, 6)}, "w4 >>= w6", 1},
        {{ALU(A64, VM_ARSH, VM_K, 3, 0, 7)}, "r3 s>>= 7", 1},
        {{ALU(A64, VM_XOR, VM_X, 0, 0)}, "r0 ^= r0", 1},
        {{ALU(A64, VM_MOV, VM_X, 0, 1)}, "r0 = r1", 1},
        {{ALU(A32, VM_MOV, VM_K, 0, 0, -1)}, "w0 = -1", 1},
        {{ALU(A64, VM_MOV, VM_X, 1, 2, 0, 8)}, "r1 = (s8)r2", 1},
        {{ALU(A32, VM_MOV, VM_X, 1, 2, 0, 16)}, "w1 = (s16)w2", 1},
        {{ALU(A64, VM_NEG, VM_K, 1, 0)}, "r1 = -r1", 1},
        {{ALU(A32, VM_NEG, VM_K, 1, 0)}, "w1 = -w1", 1},
        {{ALU(A32, VM_END, VM_K, 1, 0, 16)}, "r1 = le16 r1", 1},
        {{ALU(A32, VM_END, VM_X, 1, 0, 32)}, "r1 = be32 r1", 1},
        {{ALU(A64, VM_END, VM_K, 1, 0, 64)}, "r1 = bswap64 r1", 1},
        {{ALU(A32, VM_END, VM_K, 1, 0, 7)}, "<invalid opcode 0xd4>", 1},
        {{ALU(A64, 0xf0, VM_K, 1, 0)}, "<invalid opcode 0xf7>", 1},
        {{MEM(VM_CLS_LDX, VM_MEM, VM_DW, 1, 1, 8)}, "r1 = *(u64 *)(r1 + 8)", 1},
        {{MEM(VM_CLS_LDX, VM_MEM, VM_B, 2, 10, -1)}, "r2 = *(u8 *)(r10 - 1)", 1},
        {{MEM(VM_CLS_LDX, VM_MEMSX, VM_H, 1, 2, 0)}, "r1 = *(s16 *)(r2 + 0)", 1},
        {{MEM(VM_CLS_LDX, VM_ATOMIC, VM_W, 1, 2, 0)}, "<invalid opcode 0xc1>", 1},
        {{MEM(VM_CLS_ST, VM_MEM, VM_W, 10, 0, -4, 5)}, "*(u32 *)(r10 - 4) = 5", 1},
        {{MEM(VM_CLS_STX, VM_MEM, VM_DW, 10, 1, -8)}, "*(u64 *)(r10 - 8) = r1", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 0, VM_ADD)}, "lock *(u64 *)(r1 + 0) += r2", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_W, 1, 2, 8, VM_OR)}, "lock *(u32 *)(r1 + 8) |= w2", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 0, VM_AND)}, "lock *(u64 *)(r1 + 0) &= r2", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 0, VM_ADD | VM_FETCH)},
         "r2 = atomic_fetch_add((u64 *)(r1 + 0), r2)", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_W, 1, 3, -4, VM_XOR | VM_FETCH)},
         "w3 = atomic_fetch_xor((u32 *)(r1 - 4), w3)", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 0, VM_XCHG)}, "r2 = xchg_64(r1 + 0, r2)", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_W, 1, 2, 0, VM_XCHG)}, "w2 = xchg32_32(r1 + 0, w2)", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 16, VM_CMPXCHG)},
         "r0 = cmpxchg_64(r1 + 16, r0, r2)", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_W, 1, 2, 0, VM_CMPXCHG)},
         "w0 = cmpxchg32_32(r1 + 0, w0, w2)", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 0, 0x10)}, "<invalid opcode 0xdb>", 1},
        {{MEM(VM_CLS_STX, VM_ATOMIC, VM_B, 1, 2, 0, VM_ADD)}, "<invalid opcode 0xd3>", 1},
        {{LD_IMM64_LO(1, 0), LD_IMM64_HI(0)}, "r1 = 0 ll", 2},
        {{LD_IMM64_LO(0, 0x34567890), LD_IMM64_HI(0x12)}, "r0 = 78187493520 ll", 2},
        {{LD_IMM64_LO(2, -1), LD_IMM64_HI(-1)}, "r2 = -1 ll", 2},
        {{LD_IMM64_LO(1, 16, VM_PSEUDO_RODATA), LD_IMM64_HI(0)}, "r1 = rodata+16 ll", 2},
        {{LD_IMM64_LO(1, 3, 1), LD_IMM64_HI(0)}, "r1 = <pseudo 1> 3 ll", 2},
        {{LD_IMM64_LO(1, 0)}, "r1 = <ld_imm64 cut off by the end of the program>", 1},
        {{MEM(VM_CLS_LD, VM_ABS, VM_B, 0, 0, 0, 5)}, "r0 = *(u8 *)skb[5]", 1},
        {{MEM(VM_CLS_LD, VM_IND, VM_W, 0, 1, 0, 0)}, "r0 = *(u32 *)skb[r1]", 1},
        {{MEM(VM_CLS_LD, VM_IND, VM_H, 0, 1, 0, 4)}, "r0 = *(u16 *)skb[r1 + 4]", 1},
        {{MEM(VM_CLS_LD, VM_MEM, VM_W, 0, 1, 0, 4)}, "<invalid opcode 0x60>", 1},
        {{JA(5)}, "goto +5", 1},
        {{JA(-3)}, "goto -3", 1},
        {{JMP(J32, VM_JA, VM_K, 0, 0, 0, 100000)}, "gotol +100000", 1},
        {{JMP(J64, VM_JGT, VM_X, 1, 2, 19)}, "if r1 > r2 goto +19", 1},
        {{JMP(J64, VM_JSLE, VM_K, 1, 0, -2, -1)}, "if r1 s<= -1 goto -2", 1},
        {{JMP(J32, VM_JEQ, VM_K, 1, 0, 2, 0)}, "if w1 == 0 goto +2", 1},
        {{JMP(J64, VM_JSET, VM_X, 1, 2, 3)}, "if r1 & r2 goto +3", 1},
        {{JMP(J64, VM_JNE, VM_K, 3, 0, 0, 7)}, "if r3 != 7 goto +0", 1},
        {{JMP(J64, VM_JGE, VM_X, 3, 4, 1)}, "if r3 >= r4 goto +1", 1},
        {{JMP(J32, VM_JLT, VM_X, 3, 4, 1)}, "if w3 < w4 goto +1", 1},
        {{JMP(J64, VM_JLE, VM_K, 3, 0, 1, 9)}, "if r3 <= 9 goto +1", 1},
        {{JMP(J64, VM_JSGT, VM_K, 3, 0, 1, 9)}, "if r3 s> 9 goto +1", 1},
        {{JMP(J64, VM_JSGE, VM_K, 3, 0, 1, 9)}, "if r3 s>= 9 goto +1", 1},
        {{JMP(J64, VM_JSLT, VM_X, 3, 4, 1)}, "if r3 s< r4 goto +1", 1},
        {{CALL_HELPER(7)}, "call 7", 1},
        {{CALL_LOCAL(12)}, "call pc+12", 1},
        {{CALL_LOCAL(-3)}, "call pc-3", 1},
        {{I(VM_CLS_JMP | VM_CALL, 0, 2, 0, 99)}, "call kfunc 99", 1},
        {{EXIT()}, "exit", 1},
        {{JMP(J32, VM_CALL, VM_K, 0, 0, 0, 1)}, "<invalid opcode 0x86>", 1},
        {{JMP(J64, 0xe0, VM_K, 0, 0, 0)}, "<invalid opcode 0xe5>", 1},
    };
}

vm_prog make_prog(std::vector<vm_insn> &insns)
{
    vm_prog p{};
    p.insns = insns.data();
    p.ninsns = (uint32_t)insns.size();
    return p;
}

TEST(Disasm, EveryForm)
{
    for (Form f : forms()) {
        vm_prog p = make_prog(f.insns);
        char buf[128];
        int slots = vm_disasm_insn(&p, 0, buf, sizeof(buf));
        EXPECT_STREQ(buf, f.text);
        EXPECT_EQ(slots, f.slots) << f.text;
    }
}

TEST(Disasm, SmallBuffersAndBadPc)
{
    std::vector<vm_insn> insns = {MEM(VM_CLS_STX, VM_ATOMIC, VM_DW, 1, 2, 16, VM_CMPXCHG)};
    vm_prog p = make_prog(insns);
    char buf[8];
    for (size_t n = 0; n < sizeof(buf); n++) {
        memset(buf, 'x', sizeof(buf));
        vm_disasm_insn(&p, 0, buf, n);
        if (n) {
            EXPECT_EQ(strnlen(buf, n), n - 1) << "not truncated to " << n;
        }
        for (size_t i = n; i < sizeof(buf); i++)
            EXPECT_EQ(buf[i], 'x') << "wrote past " << n;
    }
    char out[64];
    EXPECT_EQ(vm_disasm_insn(&p, 1, out, sizeof(out)), 1);
    EXPECT_STREQ(out, "<pc 1 outside the program>");
    EXPECT_EQ(vm_disasm_insn(nullptr, 0, out, sizeof(out)), 1);
}

TEST(ProgLine, LastEntryAtOrBeforePc)
{
    vm_line_info lines[3] = {{0, 10, 1, "a.c", "x"}, {10, 11, 1, "a.c", "y"},
                             {20, 30, 1, "b.c", "z"}};
    vm_prog p{};
    EXPECT_EQ(vm_prog_line(&p, 0), nullptr);
    p.lines = lines;
    p.nlines = 3;
    EXPECT_EQ(vm_prog_line(&p, 0), &lines[0]);
    EXPECT_EQ(vm_prog_line(&p, 9), &lines[0]);
    EXPECT_EQ(vm_prog_line(&p, 10), &lines[1]);
    EXPECT_EQ(vm_prog_line(&p, 25), &lines[2]);
    lines[0].insn_off = 5;
    EXPECT_EQ(vm_prog_line(&p, 4), nullptr);
    EXPECT_EQ(vm_prog_line(nullptr, 4), nullptr);
}

// ---- agreement with llvm-objdump ---------------------------------------------------

std::vector<std::string> objdump(const std::string &obj)
{
    std::vector<std::string> out;
    std::string cmd = std::string(LLVM_OBJDUMP) + " -d --no-show-raw-insn --no-leading-addr " + obj;
    FILE *f = popen(cmd.c_str(), "r");
    if (!f)
        return out;
    char line[512];
    std::regex label(" <[^>]*>$");
    while (fgets(line, sizeof(line), f)) {
        std::string s(line);
        if (s.empty() || s[0] != '\t')
            continue;
        s = s.substr(1, s.find('\n') - 1);
        out.push_back(std::regex_replace(s, label, ""));
    }
    pclose(f);
    return out;
}

class Objdump : public ::testing::TestWithParam<std::string>
{
};

// Programs without subprograms keep the object's instruction order, so
// each line must read exactly as llvm-objdump prints it, except where
// relocation changed it (ld_imm64 of read-only data) and where LLVM 14
// cannot print an instruction.
TEST_P(Objdump, SameText)
{
    std::string path = GetParam();
    std::vector<std::string> want = objdump(path);
    ASSERT_FALSE(want.empty()) << "llvm-objdump printed nothing for " << path;
    vm_object *obj = nullptr;
    char err[256];
    ASSERT_EQ(vm_object_load_file(path.c_str(), nullptr, &obj, err, sizeof(err)), 0) << err;
    vm_prog *p = vm_object_prog(obj, 0);
    size_t k = 0;
    for (uint32_t pc = 0; pc < p->ninsns; k++) {
        char buf[128];
        int slots = vm_disasm_insn(p, pc, buf, sizeof(buf));
        ASSERT_LT(k, want.size());
        std::string ours = buf;
        std::string theirs = want[k];
        if (ours.find(" = rodata+") != std::string::npos || theirs == "<unknown>") {
            pc += (uint32_t)slots;
            continue;
        }
        if (theirs.rfind("lock *(u32 *)", 0) == 0)      // LLVM 14 spells w as r here
            ours = std::regex_replace(ours, std::regex(" w([0-9])$"), " r$1");
        EXPECT_EQ(ours, theirs) << "pc " << pc;
        pc += (uint32_t)slots;
    }
    vm_object_free(obj);
}

INSTANTIATE_TEST_SUITE_P(
    Objects, Objdump,
    ::testing::Values(std::string(OBJS_DIR) + "/isa_v3.o", std::string(CORPUS_DIR) + "/wc.o",
                      std::string(CORPUS_DIR) + "/grep.o", std::string(CORPUS_DIR) + "/zstd.o",
                      std::string(CORPUS_DIR) + "/records.o"),
    [](const ::testing::TestParamInfo<std::string> &i) {
        std::string n = i.param.substr(i.param.rfind('/') + 1);
        return n.substr(0, n.find('.'));
    });

}  // namespace
