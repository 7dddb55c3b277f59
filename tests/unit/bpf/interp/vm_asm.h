/*
 * tests/unit/bpf/interp/vm_asm.h - building eBPF programs by hand in tests
 * and benchmarks (C or C++): one inline function per instruction shape.
 *
 * Each builder returns one struct vm_insn; VM_LD_IMM64 expands to the two
 * slots of an ld_imm64, so use it inside an initializer list or array.
 */
#ifndef CISC_TESTS_VM_ASM_H
#define CISC_TESTS_VM_ASM_H

#include <stdint.h>

#include "bpf/insn.h"

static inline struct vm_insn vm_ins(uint8_t code, unsigned dst, unsigned src, int16_t off,
                                    int32_t imm)
{
    struct vm_insn i;
    i.code = code;
    i.regs = (uint8_t)((dst & 0xf) | (src & 0xf) << 4);
    i.off = off;
    i.imm = imm;
    return i;
}

/* ALU: op is VM_ADD, VM_SUB, ...; "S" variants set offset 1 (signed). */
#define I_ALU64_IMM(op, dst, imm) vm_ins(VM_CLS_ALU64 | VM_K | (op), dst, 0, 0, imm)
#define I_ALU64_REG(op, dst, src) vm_ins(VM_CLS_ALU64 | VM_X | (op), dst, src, 0, 0)
#define I_ALU32_IMM(op, dst, imm) vm_ins(VM_CLS_ALU | VM_K | (op), dst, 0, 0, imm)
#define I_ALU32_REG(op, dst, src) vm_ins(VM_CLS_ALU | VM_X | (op), dst, src, 0, 0)
#define I_SALU64_IMM(op, dst, imm) vm_ins(VM_CLS_ALU64 | VM_K | (op), dst, 0, 1, imm)
#define I_SALU64_REG(op, dst, src) vm_ins(VM_CLS_ALU64 | VM_X | (op), dst, src, 1, 0)
#define I_SALU32_IMM(op, dst, imm) vm_ins(VM_CLS_ALU | VM_K | (op), dst, 0, 1, imm)
#define I_SALU32_REG(op, dst, src) vm_ins(VM_CLS_ALU | VM_X | (op), dst, src, 1, 0)
#define I_MOV64_IMM(dst, imm) I_ALU64_IMM(VM_MOV, dst, imm)
#define I_MOV64_REG(dst, src) I_ALU64_REG(VM_MOV, dst, src)
#define I_MOV32_IMM(dst, imm) I_ALU32_IMM(VM_MOV, dst, imm)
#define I_MOV32_REG(dst, src) I_ALU32_REG(VM_MOV, dst, src)
#define I_MOVSX64(dst, src, bits) vm_ins(VM_CLS_ALU64 | VM_X | VM_MOV, dst, src, bits, 0)
#define I_MOVSX32(dst, src, bits) vm_ins(VM_CLS_ALU | VM_X | VM_MOV, dst, src, bits, 0)
#define I_NEG64(dst) vm_ins(VM_CLS_ALU64 | VM_NEG, dst, 0, 0, 0)
#define I_NEG32(dst) vm_ins(VM_CLS_ALU | VM_NEG, dst, 0, 0, 0)
#define I_LE(dst, bits) vm_ins(VM_CLS_ALU | VM_K | VM_END, dst, 0, 0, bits)
#define I_BE(dst, bits) vm_ins(VM_CLS_ALU | VM_X | VM_END, dst, 0, 0, bits)
#define I_BSWAP(dst, bits) vm_ins(VM_CLS_ALU64 | VM_K | VM_END, dst, 0, 0, bits)

#define I_LD_IMM64(dst, v)                                                    \
    vm_ins(VM_OPC_LD_IMM64, dst, 0, 0, (int32_t)(uint32_t)(uint64_t)(v)),      \
        vm_ins(0, 0, 0, 0, (int32_t)(uint32_t)((uint64_t)(v) >> 32))
#define I_LD_RODATA(dst, off)                                                 \
    vm_ins(VM_OPC_LD_IMM64, dst, VM_PSEUDO_RODATA, 0, off), vm_ins(0, 0, 0, 0, 0)

/* Jumps: off is relative to the next instruction. */
#define I_JMP_IMM(op, dst, imm, off) vm_ins(VM_CLS_JMP | VM_K | (op), dst, 0, off, imm)
#define I_JMP_REG(op, dst, src, off) vm_ins(VM_CLS_JMP | VM_X | (op), dst, src, off, 0)
#define I_JMP32_IMM(op, dst, imm, off) vm_ins(VM_CLS_JMP32 | VM_K | (op), dst, 0, off, imm)
#define I_JMP32_REG(op, dst, src, off) vm_ins(VM_CLS_JMP32 | VM_X | (op), dst, src, off, 0)
#define I_JA(off) vm_ins(VM_CLS_JMP | VM_JA, 0, 0, off, 0)
#define I_GOTOL(imm) vm_ins(VM_CLS_JMP32 | VM_JA, 0, 0, 0, imm)
#define I_CALL_HELPER(id) vm_ins(VM_CLS_JMP | VM_CALL, 0, 0, 0, id)
#define I_CALL_LOCAL(rel) vm_ins(VM_CLS_JMP | VM_CALL, 0, VM_PSEUDO_CALL, 0, rel)
#define I_CALLX(reg) vm_ins(VM_CLS_JMP | VM_CALL | VM_X, reg, 0, 0, 0)
#define I_EXIT() vm_ins(VM_CLS_JMP | VM_EXIT, 0, 0, 0, 0)

/* Memory: size is VM_B, VM_H, VM_W or VM_DW. */
#define I_LDX(size, dst, src, off) vm_ins(VM_CLS_LDX | VM_MEM | (size), dst, src, off, 0)
#define I_LDXS(size, dst, src, off) vm_ins(VM_CLS_LDX | VM_MEMSX | (size), dst, src, off, 0)
#define I_ST(size, dst, off, imm) vm_ins(VM_CLS_ST | VM_MEM | (size), dst, 0, off, imm)
#define I_STX(size, dst, src, off) vm_ins(VM_CLS_STX | VM_MEM | (size), dst, src, off, 0)
#define I_ATOMIC(size, dst, src, off, op)                                     \
    vm_ins(VM_CLS_STX | VM_ATOMIC | (size), dst, src, off, op)

#endif
