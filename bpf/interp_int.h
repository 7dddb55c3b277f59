/*
 * bpf/interp_int.h - private to the interpreter: the pre-decoded
 * instruction form that vm_prepare() builds and the loop runs, the list of
 * internal operations, and the arithmetic of each one.
 *
 * One list (VM_XOPS) generates both the operation enum and, in
 * bpf/interp_loop.inc, the dispatch table, so the two cannot drift apart:
 * a missing handler is a compile error (undefined label).
 *
 * Invariants:
 *   1. Every operation's arithmetic is done in unsigned types: signed
 *      overflow (INT_MIN / -1, -INT_MIN) wraps instead of being UB.
 *   2. Shift amounts are masked (& 63, & 31) as RFC 9669 requires.
 *   3. 32-bit operations return uint32_t, so assigning the result to a
 *      64-bit register zero-extends it.
 */
#ifndef CISC_BPF_INTERP_INT_H
#define CISC_BPF_INTERP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/helpers.h"

/* Binary ALU operations: each exists as 64/32-bit and K/X variants. */
#define VM_BINOPS(X)                                                           \
    X(ADD) X(SUB) X(MUL) X(DIV) X(SDIV) X(MOD) X(SMOD) X(OR) X(AND) X(LSH)     \
    X(RSH) X(ARSH) X(XOR) X(MOV)

/* Conditional jumps: each exists as JMP/JMP32 and K/X variants. */
#define VM_CONDS(X)                                                            \
    X(JEQ) X(JGT) X(JGE) X(JSET) X(JNE) X(JSGT) X(JSGE) X(JLT) X(JLE) X(JSLT)  \
    X(JSLE)

/* Atomic read-modify-write operations, each in 32 and 64 bits. */
#define VM_ATOMICS(X)                                                          \
    X(AADD) X(AOR) X(AAND) X(AXOR) X(FADD) X(FOR) X(FAND) X(FXOR) X(XCHG)      \
    X(CMPXCHG)

#define VM_XOP_BIN(op) X(op##64_K) X(op##64_X) X(op##32_K) X(op##32_X)
#define VM_XOP_COND(op) X(op##_K) X(op##_X) X(op##32_K) X(op##32_X)
#define VM_XOP_ATOMIC(op) X(op##32) X(op##64)

/* Every internal operation. X(name) is expanded by the user. The order of
 * the four variants inside VM_XOP_BIN / VM_XOP_COND is relied on by
 * vm_xop_bin() / vm_xop_cond(). */
#define VM_XOPS(X)                                                             \
    X(INVALID) X(FALLOFF)                                                      \
    VM_BINOPS(VM_XOP_BIN)                                                      \
    X(NEG64) X(NEG32) X(MOVSX64_8) X(MOVSX64_16) X(MOVSX64_32) X(MOVSX32_8)    \
    X(MOVSX32_16) X(LE16) X(LE32) X(LE64) X(BE16) X(BE32) X(BE64) X(BSWAP16)   \
    X(BSWAP32) X(BSWAP64)                                                      \
    X(JA)                                                                      \
    VM_CONDS(VM_XOP_COND)                                                      \
    X(CALL_HELPER) X(CALLX) X(CALL_LOCAL) X(EXIT) X(LDDW)                               \
    X(LDXB) X(LDXH) X(LDXW) X(LDXDW) X(LDXSB) X(LDXSH) X(LDXSW)                \
    X(STB) X(STH) X(STW) X(STDW) X(STXB) X(STXH) X(STXW) X(STXDW)              \
    VM_ATOMICS(VM_XOP_ATOMIC)

enum vm_xop {
#define X(name) XOP_##name,
    VM_XOPS(X)
#undef X
    XOP_COUNT
};
_Static_assert(XOP_COUNT <= 256, "operation fits in a byte");

/* Why an instruction decoded as XOP_INVALID (kept in its imm). */
enum vm_bad {
    VM_BAD_OPCODE = 1,
    VM_BAD_REGISTER,
    VM_BAD_JUMP,
    VM_BAD_HELPER,
    VM_BAD_LDDW,
    VM_BAD_RODATA,
    VM_BAD_SLOT2,
};

/* One pre-decoded instruction, 16 bytes; slot i decodes insns[i] so that
 * pc = ip - code. The second slot of an ld_imm64 decodes as INVALID
 * (VM_BAD_SLOT2), which catches jumps into its middle. */
struct vm_dinsn {
    uint8_t op;          /* enum vm_xop */
    uint8_t dst;
    uint8_t src;
    uint8_t pad;
    int32_t imm;         /* K operand; value of ST; helper arg; bad reason */
    union {
        uint64_t u64;                     /* ALU K sign-extended; memory offset; ld_imm64 value */
        const struct vm_dinsn *target;    /* jumps and local calls */
        const struct vm_helper *helper;   /* helper calls */
    } aux;
};
_Static_assert(sizeof(struct vm_dinsn) == 16, "decoded instruction is 16 bytes");

/* The prepared program: ninsns decoded slots plus one FALLOFF sentinel. */
struct vm_exec {
    uint32_t n;
    struct vm_dinsn code[];
};

/* --- ALU semantics (RFC 9669 section 4.1), 64-bit ---------------------- */

static inline uint64_t alu64_ADD(uint64_t a, uint64_t b) { return a + b; }
static inline uint64_t alu64_SUB(uint64_t a, uint64_t b) { return a - b; }
static inline uint64_t alu64_MUL(uint64_t a, uint64_t b) { return a * b; }
static inline uint64_t alu64_OR(uint64_t a, uint64_t b) { return a | b; }
static inline uint64_t alu64_AND(uint64_t a, uint64_t b) { return a & b; }
static inline uint64_t alu64_XOR(uint64_t a, uint64_t b) { return a ^ b; }
static inline uint64_t alu64_MOV(uint64_t a, uint64_t b) { (void)a; return b; }
static inline uint64_t alu64_LSH(uint64_t a, uint64_t b) { return a << (b & 63); }
static inline uint64_t alu64_RSH(uint64_t a, uint64_t b) { return a >> (b & 63); }

static inline uint64_t alu64_ARSH(uint64_t a, uint64_t b)
{
    return (uint64_t)((int64_t)a >> (b & 63));   /* clang: arithmetic shift */
}

/* Division by zero gives 0; modulo by zero leaves dst unchanged. */
static inline uint64_t alu64_DIV(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t alu64_MOD(uint64_t a, uint64_t b) { return b ? a % b : a; }

/* Signed: INT64_MIN / -1 wraps to INT64_MIN, INT64_MIN % -1 is 0. */
static inline uint64_t alu64_SDIV(uint64_t a, uint64_t b)
{
    if (b == 0)
        return 0;
    if (b == UINT64_MAX)
        return 0 - a;
    return (uint64_t)((int64_t)a / (int64_t)b);
}

static inline uint64_t alu64_SMOD(uint64_t a, uint64_t b)
{
    if (b == 0)
        return a;
    if (b == UINT64_MAX)
        return 0;
    return (uint64_t)((int64_t)a % (int64_t)b);
}

/* --- ALU semantics, 32-bit (results zero-extend) ----------------------- */

static inline uint32_t alu32_ADD(uint32_t a, uint32_t b) { return a + b; }
static inline uint32_t alu32_SUB(uint32_t a, uint32_t b) { return a - b; }
static inline uint32_t alu32_MUL(uint32_t a, uint32_t b) { return a * b; }
static inline uint32_t alu32_OR(uint32_t a, uint32_t b) { return a | b; }
static inline uint32_t alu32_AND(uint32_t a, uint32_t b) { return a & b; }
static inline uint32_t alu32_XOR(uint32_t a, uint32_t b) { return a ^ b; }
static inline uint32_t alu32_MOV(uint32_t a, uint32_t b) { (void)a; return b; }
static inline uint32_t alu32_LSH(uint32_t a, uint32_t b) { return a << (b & 31); }
static inline uint32_t alu32_RSH(uint32_t a, uint32_t b) { return a >> (b & 31); }

static inline uint32_t alu32_ARSH(uint32_t a, uint32_t b)
{
    return (uint32_t)((int32_t)a >> (b & 31));
}

static inline uint32_t alu32_DIV(uint32_t a, uint32_t b) { return b ? a / b : 0; }
static inline uint32_t alu32_MOD(uint32_t a, uint32_t b) { return b ? a % b : a; }

static inline uint32_t alu32_SDIV(uint32_t a, uint32_t b)
{
    if (b == 0)
        return 0;
    if (b == UINT32_MAX)
        return 0 - a;
    return (uint32_t)((int32_t)a / (int32_t)b);
}

static inline uint32_t alu32_SMOD(uint32_t a, uint32_t b)
{
    if (b == 0)
        return a;
    if (b == UINT32_MAX)
        return 0;
    return (uint32_t)((int32_t)a % (int32_t)b);
}

/* --- Jump conditions (RFC 9669 section 4.3) ---------------------------- */

#define VM_JCOND(name, expr)                                                   \
    static inline bool jc64_##name(uint64_t a, uint64_t b) { return expr; }   \
    static inline bool jc32_##name(uint32_t a, uint32_t b) { return expr; }

VM_JCOND(JEQ, a == b)
VM_JCOND(JNE, a != b)
VM_JCOND(JGT, a > b)
VM_JCOND(JGE, a >= b)
VM_JCOND(JLT, a < b)
VM_JCOND(JLE, a <= b)
VM_JCOND(JSET, (a & b) != 0)
#undef VM_JCOND

#define VM_JSCOND(name, op)                                                    \
    static inline bool jc64_##name(uint64_t a, uint64_t b)                    \
    {                                                                          \
        return (int64_t)a op (int64_t)b;                                       \
    }                                                                          \
    static inline bool jc32_##name(uint32_t a, uint32_t b)                    \
    {                                                                          \
        return (int32_t)a op (int32_t)b;                                       \
    }

VM_JSCOND(JSGT, >)
VM_JSCOND(JSGE, >=)
VM_JSCOND(JSLT, <)
VM_JSCOND(JSLE, <=)
#undef VM_JSCOND

#endif
