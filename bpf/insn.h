/*
 * bpf/insn.h - the eBPF instruction set (RFC 9669) as constants.
 *
 * The one definition of the encoding that loader, verifier, interpreter,
 * disassembler and (later) JIT share. Names use the VM_ prefix because
 * <linux/bpf.h>, pulled in by libbpf, owns the BPF_ names.
 *
 * Instruction layout (8 bytes, little-endian):
 *   byte 0      opcode  = class (3 bits) | source/op/size/mode
 *   byte 1      dst_reg (low nibble) | src_reg (high nibble)
 *   bytes 2-3   offset  (signed 16)
 *   bytes 4-7   imm     (signed 32)
 * ld_imm64 (opcode 0x18) takes two slots; the second has opcode 0 and holds
 * the upper 32 bits of the constant in imm.
 */
#ifndef CISC_BPF_INSN_H
#define CISC_BPF_INSN_H

#include <assert.h>   /* static_assert, in C and in the C++ tests */
#include <stdint.h>

struct vm_insn {
    uint8_t code;
    uint8_t regs;      /* dst = regs & 0xf, src = regs >> 4 */
    int16_t off;
    int32_t imm;
};
static_assert(sizeof(struct vm_insn) == 8, "eBPF instruction is 8 bytes");

static inline unsigned vm_dst(const struct vm_insn *i) { return i->regs & 0xf; }
static inline unsigned vm_src(const struct vm_insn *i) { return i->regs >> 4; }

#define VM_NREGS      11          /* r0..r10 */
#define VM_REG_FP     10          /* read-only frame pointer */
#define VM_STACK_SIZE 512         /* bytes per frame */
#define VM_MAX_CALL_DEPTH 8       /* frames, including the entry frame */

/* Instruction classes (opcode & 0x07). */
#define VM_CLS(code)   ((code) & 0x07)
#define VM_CLS_LD      0x00
#define VM_CLS_LDX     0x01
#define VM_CLS_ST      0x02
#define VM_CLS_STX     0x03
#define VM_CLS_ALU     0x04   /* 32-bit */
#define VM_CLS_JMP     0x05   /* 64-bit compares */
#define VM_CLS_JMP32   0x06
#define VM_CLS_ALU64   0x07

/* Arithmetic and jump: source (opcode & 0x08) and operation (opcode & 0xf0). */
#define VM_SRC(code)   ((code) & 0x08)
#define VM_K           0x00   /* immediate */
#define VM_X           0x08   /* register */
#define VM_OP(code)    ((code) & 0xf0)

#define VM_ADD   0x00
#define VM_SUB   0x10
#define VM_MUL   0x20
#define VM_DIV   0x30   /* off 1: signed (SDIV) */
#define VM_OR    0x40
#define VM_AND   0x50
#define VM_LSH   0x60
#define VM_RSH   0x70
#define VM_NEG   0x80
#define VM_MOD   0x90   /* off 1: signed (SMOD) */
#define VM_XOR   0xa0
#define VM_MOV   0xb0   /* off 8/16/32: sign-extending move (MOVSX) */
#define VM_ARSH  0xc0
#define VM_END   0xd0   /* byte swap: ALU|K to LE, ALU|X to BE, ALU64|K unconditional */

#define VM_JA    0x00   /* JMP: off; JMP32: imm (gotol) */
#define VM_JEQ   0x10
#define VM_JGT   0x20
#define VM_JGE   0x30
#define VM_JSET  0x40
#define VM_JNE   0x50
#define VM_JSGT  0x60
#define VM_JSGE  0x70
#define VM_CALL  0x80   /* src 0: helper id in imm; src 1: local call, pc-relative imm */
#define VM_EXIT  0x90
#define VM_JLT   0xa0
#define VM_JLE   0xb0
#define VM_JSLT  0xc0
#define VM_JSLE  0xd0

/* Loads and stores: size (opcode & 0x18) and mode (opcode & 0xe0). */
#define VM_SIZE(code)  ((code) & 0x18)
#define VM_W     0x00   /* 4 bytes */
#define VM_H     0x08   /* 2 */
#define VM_B     0x10   /* 1 */
#define VM_DW    0x18   /* 8 */
#define VM_MODE(code)  ((code) & 0xe0)
#define VM_IMM     0x00   /* ld_imm64 (with DW) */
#define VM_ABS     0x20   /* legacy packet access: rejected */
#define VM_IND     0x40   /* legacy packet access: rejected */
#define VM_MEM     0x60
#define VM_MEMSX   0x80   /* sign-extending load */
#define VM_ATOMIC  0xc0

/* Atomic operations (imm of an STX|ATOMIC). */
#define VM_FETCH    0x01
#define VM_XCHG     (0xe0 | VM_FETCH)
#define VM_CMPXCHG  (0xf0 | VM_FETCH)

/* Pseudo sources. */
#define VM_PSEUDO_CALL    1   /* CALL src: local (bpf-to-bpf) call */
#define VM_PSEUDO_RODATA  2   /* LD_IMM64 src: imm = offset into prog->rodata */

#define VM_OPC_LD_IMM64 (VM_CLS_LD | VM_IMM | VM_DW)   /* 0x18 */

/* Size in bytes of a load/store size field. */
static inline unsigned vm_size_bytes(uint8_t code)
{
    switch (VM_SIZE(code)) {
    case VM_B: return 1;
    case VM_H: return 2;
    case VM_W: return 4;
    default:   return 8;
    }
}

#endif
