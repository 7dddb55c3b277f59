// tests/unit/bpf/verifier/asm.h - instruction builders for hand-assembled
// test programs (C++ only). LD_IMM64/LD_RODATA expand to two slots.
#ifndef CISC_TEST_VM_ASM_H
#define CISC_TEST_VM_ASM_H

#include <cstdint>

extern "C" {
#include "bpf/insn.h"
}

inline vm_insn I(unsigned code, unsigned dst, unsigned src, int off, int32_t imm)
{
    return vm_insn{(uint8_t)code, (uint8_t)(dst | (src << 4)), (int16_t)off, imm};
}

// ALU: op is VM_ADD ... VM_ARSH.
#define ALU64_REG(op, d, s) I(VM_CLS_ALU64 | VM_X | (op), d, s, 0, 0)
#define ALU64_IMM(op, d, imm) I(VM_CLS_ALU64 | VM_K | (op), d, 0, 0, imm)
#define ALU32_REG(op, d, s) I(VM_CLS_ALU | VM_X | (op), d, s, 0, 0)
#define ALU32_IMM(op, d, imm) I(VM_CLS_ALU | VM_K | (op), d, 0, 0, imm)
#define MOV64_REG(d, s) ALU64_REG(VM_MOV, d, s)
#define MOV64_IMM(d, imm) ALU64_IMM(VM_MOV, d, imm)
#define MOV32_REG(d, s) ALU32_REG(VM_MOV, d, s)
#define MOV32_IMM(d, imm) ALU32_IMM(VM_MOV, d, imm)
#define MOVSX64(d, s, bits) I(VM_CLS_ALU64 | VM_X | VM_MOV, d, s, bits, 0)
#define NEG64(d) I(VM_CLS_ALU64 | VM_NEG, d, 0, 0, 0)
#define SDIV64_IMM(d, imm) I(VM_CLS_ALU64 | VM_K | VM_DIV, d, 0, 1, imm)
#define SMOD64_IMM(d, imm) I(VM_CLS_ALU64 | VM_K | VM_MOD, d, 0, 1, imm)
#define BSWAP64(d, bits) I(VM_CLS_ALU64 | VM_END, d, 0, 0, bits)
#define TO_BE(d, bits) I(VM_CLS_ALU | VM_X | VM_END, d, 0, 0, bits)
#define TO_LE(d, bits) I(VM_CLS_ALU | VM_K | VM_END, d, 0, 0, bits)

// Memory: size is VM_B/VM_H/VM_W/VM_DW.
#define LDX(size, d, s, off) I(VM_CLS_LDX | VM_MEM | (size), d, s, off, 0)
#define LDXSX(size, d, s, off) I(VM_CLS_LDX | VM_MEMSX | (size), d, s, off, 0)
#define STX(size, d, s, off) I(VM_CLS_STX | VM_MEM | (size), d, s, off, 0)
#define ST(size, d, off, imm) I(VM_CLS_ST | VM_MEM | (size), d, 0, off, imm)
#define ATOMIC(size, d, s, off, op) I(VM_CLS_STX | VM_ATOMIC | (size), d, s, off, op)
#define LD_IMM64(d, v)                                                                 \
    I(VM_OPC_LD_IMM64, d, 0, 0, (int32_t)(uint32_t)(uint64_t)(v)),                     \
        I(0, 0, 0, 0, (int32_t)(uint32_t)((uint64_t)(v) >> 32))
#define LD_RODATA(d, off) I(VM_OPC_LD_IMM64, d, VM_PSEUDO_RODATA, 0, off), I(0, 0, 0, 0, 0)

// Jumps: op is VM_JEQ ... VM_JSLE, VM_JSET.
#define JMP_REG(op, d, s, off) I(VM_CLS_JMP | VM_X | (op), d, s, off, 0)
#define JMP_IMM(op, d, imm, off) I(VM_CLS_JMP | VM_K | (op), d, 0, off, imm)
#define JMP32_REG(op, d, s, off) I(VM_CLS_JMP32 | VM_X | (op), d, s, off, 0)
#define JMP32_IMM(op, d, imm, off) I(VM_CLS_JMP32 | VM_K | (op), d, 0, off, imm)
#define JA(off) I(VM_CLS_JMP | VM_JA, 0, 0, off, 0)
#define CALL(id) I(VM_CLS_JMP | VM_CALL, 0, 0, 0, id)
#define CALL_LOCAL(rel) I(VM_CLS_JMP | VM_CALL, 0, VM_PSEUDO_CALL, 0, rel)
#define CALLX(r) I(VM_CLS_JMP | VM_CALL | VM_X, r, 0, 0, 0)
#define EXIT() I(VM_CLS_JMP | VM_EXIT, 0, 0, 0, 0)

// Context offsets (struct cisc_ctx).
enum { CTX_DATA = 0, CTX_DATA_END = 8, CTX_OUT = 16, CTX_OUT_END = 24, CTX_OFFSET = 32,
       CTX_LEN = 40, CTX_FLAGS = 48, CTX_BLOCK = 56, CTX_ARG0 = 64 };

#endif
