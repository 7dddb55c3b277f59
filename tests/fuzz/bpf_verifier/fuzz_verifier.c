/*
 * tests/fuzz/bpf_verifier/fuzz_verifier.c - libFuzzer target: the verifier
 * against the interpreter.
 *
 * The fuzz input drives a generator of eBPF programs built from snippets
 * that verify often enough to matter (context loads, bounds checks,
 * buffer and stack accesses, spills, helper calls, local calls, loops),
 * mixed with random instructions; the first byte can also ask for the raw
 * bytes to be used as instructions. Every program goes to vm_verify();
 * every accepted one is run several times with input/output buffers of
 * fuzz-chosen sizes:
 *   1. in the interpreter's checked mode: a fault (-EFAULT) means the
 *      verifier accepted an unsafe program -> abort;
 *   2. in fast mode, with the C stack below us dirtied first and buffers
 *      at other addresses: r0, the output and the state area must equal
 *      the checked run's (which zeroes the stack) - a difference means
 *      an uninitialised read or an address leaked into data -> abort.
 *      Skipped for programs calling cisc_ktime_ns (not deterministic).
 *   3. JIT-compiled (bpf/jit_x86_64.h) against the fast interpreter, same
 *      buffers: the return code (budget exhaustion and errors included),
 *      r0, instructions used, fault pc, output and state must be equal -
 *      a difference is a JIT bug -> abort. Also skipped with ktime.
 *   4. When the input made rodata a table of pointers (two relocated
 *      entries, prog.h invariant 5), the checked runs again with the image
 *      at another address: a different result means an address leaked
 *      into data -> abort.
 *
 * jit_diff_main.c drives the same function without libFuzzer, from a
 * seeded PRNG, as the short differential run of every `make test`.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/abi.h"
#include "bpf/insn.h"
#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"
#include "bpf/prog.h"
#include "bpf/verifier.h"

#define MAX_INSNS 160
#define RODATA_SIZE 32

struct gen {
    const uint8_t *d;
    size_t n, pos;
    struct vm_insn insn[MAX_INSNS + 8];
    uint32_t len;
    bool ktime;
};

static uint8_t byte(struct gen *g)
{
    return g->pos < g->n ? g->d[g->pos++] : 0;
}

static int32_t imm(struct gen *g)
{
    static const int32_t vals[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256,
                                   4095, 4096, -1, -2, -8, -16, -64, -512, 0x7fffffff,
                                   (int32_t)0x80000000, 24, 12, 100};
    uint8_t b = byte(g);
    if (b < 200)
        return vals[b % (sizeof(vals) / sizeof(vals[0]))];
    return (int32_t)((uint32_t)byte(g) | (uint32_t)byte(g) << 8 | (uint32_t)byte(g) << 24);
}

static void emit(struct gen *g, uint8_t code, unsigned dst, unsigned src, int16_t off,
                 int32_t k)
{
    if (g->len < MAX_INSNS)
        g->insn[g->len++] = (struct vm_insn){code, (uint8_t)(dst | src << 4), off, k};
}

static unsigned reg(struct gen *g)
{
    return byte(g) % 10;   /* r0..r9; r9 keeps the context */
}

static void gen_alu(struct gen *g)
{
    static const uint8_t ops[] = {VM_ADD, VM_SUB, VM_MUL, VM_DIV, VM_OR,  VM_AND, VM_LSH,
                                  VM_RSH, VM_MOD, VM_XOR, VM_MOV, VM_ARSH, VM_NEG, VM_END};
    uint8_t b = byte(g);
    unsigned op = ops[b % sizeof(ops)], cls = (b & 0x80) ? VM_CLS_ALU : VM_CLS_ALU64;
    unsigned dst = reg(g) % 9;
    if (op == VM_NEG) {
        emit(g, (uint8_t)(cls | op), dst, 0, 0, 0);
    } else if (op == VM_END) {
        static const int32_t w[] = {16, 32, 64};
        emit(g, (uint8_t)(cls | op | ((b & 0x40) && cls == VM_CLS_ALU ? VM_X : 0)), dst, 0, 0,
             w[byte(g) % 3]);
    } else if (b & 0x20) {
        int16_t off = (op == VM_DIV || op == VM_MOD) ? (b & 1) : 0;
        if (op == VM_MOV && (b & 0x10))
            off = (int16_t)(8 << (byte(g) % 3));
        if (op == VM_MOV && cls == VM_CLS_ALU && off == 32)
            off = 16;
        emit(g, (uint8_t)(cls | op | VM_X), dst, byte(g) % 11, off, 0);
    } else {
        emit(g, (uint8_t)(cls | op), dst, 0, (op == VM_DIV || op == VM_MOD) ? (b & 1) : 0,
             imm(g));
    }
}

static uint8_t size_code(struct gen *g)
{
    static const uint8_t s[] = {VM_B, VM_H, VM_W, VM_DW};
    return s[byte(g) % 4];
}

static void gen_mem(struct gen *g)
{
    uint8_t b = byte(g), sz = size_code(g);
    unsigned base = (b & 1) ? VM_REG_FP : reg(g);
    int16_t off = base == VM_REG_FP ? (int16_t)(-8 * (1 + byte(g) % 64) + (b & 6))
                                    : (int16_t)((int8_t)byte(g) % 32);
    switch ((b >> 3) % 4) {
    case 0:
        emit(g, (uint8_t)(VM_CLS_LDX | VM_MEM | sz), reg(g), base, off, 0);
        break;
    case 1:
        emit(g, (uint8_t)(VM_CLS_STX | VM_MEM | sz), base, byte(g) % 11, off, 0);
        break;
    case 2:
        emit(g, (uint8_t)(VM_CLS_ST | VM_MEM | sz), base, 0, off, imm(g));
        break;
    default:
        if (b & 0x80) {
            static const int32_t a[] = {VM_ADD, VM_OR, VM_AND, VM_XOR, VM_ADD | VM_FETCH,
                                        VM_XCHG, VM_CMPXCHG};
            emit(g, (uint8_t)(VM_CLS_STX | VM_ATOMIC | ((b & 0x40) ? VM_DW : VM_W)), base,
                 reg(g), (int16_t)(off & ~7), a[byte(g) % 7]);
        } else if (sz != VM_DW) {
            emit(g, (uint8_t)(VM_CLS_LDX | VM_MEMSX | sz), reg(g), base, off, 0);
        }
        break;
    }
}

/* Pointer from the context, a bounds check, accesses under it. */
static void gen_checked_access(struct gen *g)
{
    uint8_t b = byte(g);
    bool out = b & 1;
    unsigned p = 2 + byte(g) % 3, e = 5 + byte(g) % 2, t = 7 + (b >> 1) % 2;
    int32_t n = 1 + byte(g) % 24;
    emit(g, VM_CLS_LDX | VM_MEM | VM_DW, p, 9, (int16_t)(out ? 16 : 0), 0);
    emit(g, VM_CLS_LDX | VM_MEM | VM_DW, e, 9, (int16_t)(out ? 24 : 8), 0);
    if (b & 4) {   /* variable offset first */
        emit(g, VM_CLS_ALU64 | VM_AND, t, 0, 0, 63 >> (byte(g) % 4));
        emit(g, VM_CLS_ALU64 | VM_ADD | VM_X, p, t, 0, 0);
    }
    emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, t, p, 0, 0);
    emit(g, VM_CLS_ALU64 | VM_ADD, t, 0, 0, n);
    static const uint8_t ops[] = {VM_JGT, VM_JGE, VM_JLT, VM_JLE};
    uint8_t op = ops[(b >> 3) % 4];
    bool end_left = b & 0x20;
    int16_t skip = (int16_t)(1 + byte(g) % 4);
    emit(g, (uint8_t)(VM_CLS_JMP | VM_X | op), end_left ? e : t, end_left ? t : e, skip, 0);
    for (int k = 0; k < skip; k++) {
        uint8_t o = byte(g);   /* near the end of the checked range often */
        int16_t off = (int16_t)(o & 1 ? n - 1 + (o >> 1) % 3 - 1 : (o >> 1) % (n + 2) - 1);
        if (byte(g) & 1)
            emit(g, VM_CLS_LDX | VM_MEM | VM_B, reg(g), p, off, 0);
        else
            emit(g, VM_CLS_ST | VM_MEM | VM_B, p, 0, off, imm(g));
    }
}

/* A number from the arguments, shaped by a few ALU operations, used as an
 * index into the state area or an initialised stack buffer. */
static void gen_index(struct gen *g)
{
    static const int32_t masks[] = {7, 15, 63, 255, 511, 1023, 4095, 8191};
    static const uint8_t ops[] = {VM_AND, VM_RSH, VM_MOD, VM_DIV, VM_LSH, VM_ARSH, VM_OR, VM_SUB,
                                  VM_ADD, VM_MUL, VM_XOR};
    uint8_t b = byte(g);
    unsigned x = 6 + byte(g) % 2;
    emit(g, VM_CLS_LDX | VM_MEM | VM_DW, x, 9, (int16_t)(64 + 8 * (byte(g) % 4)), 0);
    for (int k = 0, n = 1 + byte(g) % 3; k < n; k++) {
        uint8_t o = byte(g);
        int32_t v = o & 1 ? masks[(o >> 1) % 8] : (int32_t)(o >> 1) % 13;
        emit(g, (uint8_t)((o & 0x80 ? VM_CLS_ALU : VM_CLS_ALU64) | ops[(o >> 2) % sizeof(ops)]),
             x, 0, 0, v);
    }
    emit(g, VM_CLS_ALU64 | VM_AND, x, 0, 0, masks[byte(g) % 8]);
    if (b & 1) {   /* state area */
        emit(g, VM_CLS_JMP | VM_CALL, 0, 0, 0, 9);
        emit(g, VM_CLS_ALU64 | VM_ADD | VM_X, 0, x, 0, 0);
        emit(g, (uint8_t)(VM_CLS_LDX | VM_MEM | size_code(g)), 8, 0,
             (int16_t)((int16_t)(byte(g) % 16) - 4), 0);
        return;
    }
    for (int k = 1; k <= 8; k++)   /* a 64-byte stack buffer */
        emit(g, VM_CLS_ST | VM_MEM | VM_DW, VM_REG_FP, 0, (int16_t)(-8 * k), 0);
    emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, 8, VM_REG_FP, 0, 0);
    emit(g, VM_CLS_ALU64 | VM_ADD, 8, 0, 0, -64);
    emit(g, VM_CLS_ALU64 | VM_ADD | VM_X, 8, x, 0, 0);
    emit(g, (uint8_t)(VM_CLS_LDX | VM_MEM | size_code(g)), 0, 8, (int16_t)(byte(g) % 8), 0);
}

/* Copies of a number (64-bit, 32-bit, plus a constant, zero-extension
 * idiom, through a spill), one of them bounded by a branch, another used
 * as an index into the state area: exercises linked scalars. */
static void gen_linked(struct gen *g)
{
    uint8_t b = byte(g);
    unsigned a = 6, c = 7;
    emit(g, VM_CLS_LDX | VM_MEM | VM_DW, a, 9, (int16_t)(64 + 8 * (b % 4)), 0);
    switch ((b >> 2) % 5) {
    case 0: emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, c, a, 0, 0); break;
    case 1: emit(g, VM_CLS_ALU | VM_MOV | VM_X, c, a, 0, 0); break;
    case 2:
        emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, c, a, 0, 0);
        emit(g, VM_CLS_ALU64 | VM_ADD, c, 0, 0, (int32_t)(byte(g) % 9) - 4);
        break;
    case 3:
        emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, c, a, 0, 0);
        emit(g, VM_CLS_ALU64 | VM_LSH, c, 0, 0, 32);
        if (b & 0x80)
            emit(g, VM_CLS_ALU64 | VM_RSH, c, 0, 0, 32);
        break;
    default:
        emit(g, VM_CLS_STX | VM_MEM | VM_DW, VM_REG_FP, a, -8, 0);
        emit(g, VM_CLS_LDX | VM_MEM | VM_DW, c, VM_REG_FP, -8, 0);
        break;
    }
    if (b & 0x40) {   /* swap roles: bound a, use c */
        unsigned t = a;
        a = c;
        c = t;
    }
    static const uint8_t ops[] = {VM_JGE, VM_JGT, VM_JSGE, VM_JSGT, VM_JNE};
    uint8_t cls = byte(g) & 1 ? VM_CLS_JMP32 : VM_CLS_JMP;
    emit(g, (uint8_t)(cls | ops[byte(g) % 5]), c, 0, 4, 1 + byte(g) % 4095);
    emit(g, VM_CLS_JMP | VM_CALL, 0, 0, 0, 9);
    emit(g, VM_CLS_ALU64 | VM_ADD | VM_X, 0, a, 0, 0);
    emit(g, VM_CLS_LDX | VM_MEM | VM_B, 8, 0, 0, 0);
    emit(g, VM_CLS_ALU64 | VM_MOV, 0, 0, 0, 0);
}

/* An entry of the table of pointers at rodata+0 (when the input made one,
 * table_rodata), loaded whole, in part or at a variable index, and bytes
 * around the string it points to. */
static void gen_table(struct gen *g)
{
    static const int16_t offs[] = {0, 8, 4, 16, 1};
    uint8_t b = byte(g);
    unsigned t = 6 + (b & 1), x = 8;
    emit(g, VM_OPC_LD_IMM64, t, VM_PSEUDO_RODATA, 0, 0);
    emit(g, 0, 0, 0, 0, 0);
    if (b & 0x80) {   /* clang's bit test of a constant, then the entry at x */
        uint8_t c = byte(g);
        emit(g, VM_CLS_LDX | VM_MEM | VM_DW, x, 9, (int16_t)(64 + 8 * (c % 4)), 0);
        emit(g, VM_CLS_ALU64 | VM_AND, x, 0, 0, c & 4 ? 3 : 7);
        emit(g, VM_CLS_ALU64 | VM_MOV, 5, 0, 0, byte(g));
        if (c & 8)   /* the shift a pruning point */
            emit(g, VM_CLS_JMP | VM_JEQ, x, 0, 0, 100);
        emit(g, VM_CLS_ALU64 | VM_RSH | VM_X, 5, x, 0, 0);
        emit(g, VM_CLS_ALU64 | VM_AND, 5, 0, 0, 1);
        emit(g, VM_CLS_JMP | VM_JNE, 5, 0, 3, 0);
        emit(g, VM_CLS_ALU64 | VM_LSH, x, 0, 0, 3);
        emit(g, VM_CLS_ALU64 | VM_ADD | VM_X, t, x, 0, 0);
        emit(g, VM_CLS_LDX | VM_MEM | VM_DW, t, t, 0, 0);
    } else if (b & 2) {   /* arg & 8 (or & 12, also misaligned) */
        emit(g, VM_CLS_LDX | VM_MEM | VM_DW, x, 9, 64, 0);
        emit(g, VM_CLS_ALU64 | VM_AND, x, 0, 0, b & 4 ? 12 : 8);
        emit(g, VM_CLS_ALU64 | VM_ADD | VM_X, t, x, 0, 0);
    }
    if (!(b & 0x80))
        emit(g, (uint8_t)(VM_CLS_LDX | VM_MEM | (b & 0x40 ? size_code(g) : VM_DW)), t, t,
             offs[(b >> 3) % 5], 0);
    for (int k = 0, n = byte(g) % 4; k < n; k++) {   /* bytes mostly, near the object */
        uint8_t c = byte(g);
        emit(g, (uint8_t)(VM_CLS_LDX | VM_MEM | (c & 1 ? VM_B : size_code(g))), (c >> 1) % 6, t,
             (int16_t)((int)(byte(g) % 10) - 1), 0);
    }
}

static void gen_jump(struct gen *g)
{
    static const uint8_t ops[] = {VM_JEQ, VM_JGT, VM_JGE, VM_JSET, VM_JNE, VM_JSGT, VM_JSGE,
                                  VM_JLT, VM_JLE, VM_JSLT, VM_JSLE, VM_JA};
    uint8_t b = byte(g), op = ops[b % sizeof(ops)];
    int16_t off = (int16_t)((int8_t)byte(g) % 12);
    if (op == VM_JA) {
        emit(g, VM_CLS_JMP | VM_JA, 0, 0, off > 0 ? off : 1, 0);
        return;
    }
    uint8_t cls = (b & 0x80) ? VM_CLS_JMP32 : VM_CLS_JMP;
    if (b & 0x40)
        emit(g, (uint8_t)(cls | op | VM_X), reg(g), byte(g) % 11, off, 0);
    else
        emit(g, (uint8_t)(cls | op), reg(g), 0, off, imm(g));
}

/* A loop the JIT can run as a counted loop (bpf/jit_loop.h): i from a
 * small constant up to a bound (a register or a constant), a body of
 * computations and one-instruction skips (if-converted), i += 1 and a
 * back-edge. A body that writes i or the bound makes it an ordinary loop. */
static void gen_loop(struct gen *g)
{
    uint8_t b = byte(g);
    unsigned i = 6 + (b & 1), bound = 8;
    int32_t from = b >> 5, n = 1 + byte(g) % 8;
    bool reg_bound = b & 2;
    emit(g, VM_CLS_ALU64 | VM_MOV, i, 0, 0, from);
    if (reg_bound)
        emit(g, VM_CLS_ALU64 | VM_MOV, bound, 0, 0, from + n);
    uint32_t head = g->len;
    if (reg_bound)
        emit(g, VM_CLS_JMP | VM_JGE | VM_X, i, bound, 0, 0);
    else
        emit(g, VM_CLS_JMP | VM_JGE, i, 0, 0, from + n);
    static const uint8_t ops[] = {VM_JEQ, VM_JNE, VM_JGT, VM_JSET, VM_JSLT, VM_JLE};
    for (int k = 0, m = 1 + byte(g) % 4; k < m; k++) {
        uint8_t c = byte(g);
        if (c & 1) {
            uint8_t op = ops[(c >> 1) % sizeof(ops)];
            if (c & 0x40)
                emit(g, (uint8_t)(VM_CLS_JMP | op | VM_X), reg(g), reg(g), 1, 0);
            else
                emit(g, (uint8_t)(VM_CLS_JMP | op), reg(g), 0, 1, imm(g));
        }
        gen_alu(g);
    }
    emit(g, VM_CLS_ALU64 | VM_ADD, i, 0, 0, 1);
    emit(g, VM_CLS_JMP | VM_JA, 0, 0, (int16_t)((int32_t)head - (int32_t)g->len - 1), 0);
    if (g->len < MAX_INSNS)
        g->insn[head].off = (int16_t)(g->len - head - 1);
}

static void gen_call(struct gen *g)
{
    uint8_t id = 1 + byte(g) % 9;
    for (unsigned r = 1; r <= 5; r++) {
        uint8_t b = byte(g);
        if (b & 1)
            emit(g, VM_CLS_ALU64 | VM_MOV, r, 0, 0, imm(g));
        else if (b & 2)
            emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, r, reg(g), 0, 0);
        else if (b & 4) {
            emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, r, VM_REG_FP, 0, 0);
            emit(g, VM_CLS_ALU64 | VM_ADD, r, 0, 0, -8 * (1 + byte(g) % 16));
        } else if (b & 8) {
            emit(g, VM_OPC_LD_IMM64, r, VM_PSEUDO_RODATA, 0, byte(g) % RODATA_SIZE);
            emit(g, 0, 0, 0, 0, 0);
        }
    }
    g->ktime |= id == 8;
    emit(g, VM_CLS_JMP | VM_CALL, 0, 0, 0, id);
}

static void gen_body(struct gen *g, uint32_t limit)
{
    while (g->pos < g->n && g->len < limit) {
        switch (byte(g) % 12) {
        case 0:
        case 1:
        case 2: gen_alu(g); break;
        case 10: gen_index(g); break;
        case 11: gen_linked(g); break;
        case 3:
        case 4: gen_mem(g); break;
        case 5:
        case 6: gen_checked_access(g); break;
        case 7:
            if (byte(g) % 3)
                gen_jump(g);
            else
                gen_loop(g);
            break;
        case 8: gen_call(g); break;
        default: {
            uint8_t k = byte(g) % 13;   /* (k == 12: past the context) */
            if (k == 12)
                gen_table(g);
            else
                emit(g, VM_CLS_LDX | VM_MEM | VM_DW, reg(g), 9, (int16_t)(8 * k), 0);
            break;
        }
        }
    }
}

/* Jumps that leave the function go to its exit instead. */
static void fix_jumps(struct gen *g, uint32_t start, uint32_t end)
{
    for (uint32_t pc = start; pc < end; pc++) {
        struct vm_insn *i = &g->insn[pc];
        unsigned cls = VM_CLS(i->code), op = VM_OP(i->code);
        if (i->code == VM_OPC_LD_IMM64) {
            pc++;
            continue;
        }
        if ((cls != VM_CLS_JMP && cls != VM_CLS_JMP32) || op == VM_CALL || op == VM_EXIT)
            continue;
        int64_t t = (int64_t)pc + 1 + i->off;
        if (t < start || t >= end || (t > 0 && g->insn[t - 1].code == VM_OPC_LD_IMM64))
            i->off = (int16_t)(end - 1 - pc - 1);
    }
}

static void generate(struct gen *g)
{
    emit(g, VM_CLS_ALU64 | VM_MOV | VM_X, 9, 1, 0, 0);   /* r9 = ctx */
    emit(g, VM_CLS_ALU64 | VM_MOV, 0, 0, 0, 0);
    bool sub = byte(g) & 1;
    uint32_t call_at = g->len;
    if (sub)
        emit(g, VM_CLS_JMP | VM_CALL, 0, VM_PSEUDO_CALL, 0, 0);   /* patched */
    gen_body(g, sub ? MAX_INSNS / 2 : MAX_INSNS - 2);
    emit(g, VM_CLS_ALU64 | VM_MOV, 0, 0, 0, imm(g));
    g->insn[g->len++] = (struct vm_insn){VM_CLS_JMP | VM_EXIT, 0, 0, 0};
    uint32_t main_end = g->len;
    fix_jumps(g, 0, main_end);
    if (!sub)
        return;
    g->insn[call_at].imm = (int32_t)(main_end - call_at - 1);
    uint32_t start = g->len;
    gen_body(g, MAX_INSNS - 2);
    emit(g, VM_CLS_ALU64 | VM_MOV, 0, 0, 0, imm(g));
    g->insn[g->len++] = (struct vm_insn){VM_CLS_JMP | VM_EXIT, 0, 0, 0};
    fix_jumps(g, start, g->len);
}

enum run_mode { RUN_CHECKED, RUN_FAST, RUN_JIT };

struct outcome {
    int rc;
    uint64_t r0, used;
    uint32_t fault_pc;
    uint8_t out[256];
    uint8_t state[VM_STATE_SIZE];
};

/* Slot 0 and 1 put every region at a different address. */
static void run_once(struct vm_prog *p, const uint8_t *input, uint32_t in_len, uint32_t out_len,
                     const uint64_t args[4], uint64_t budget, enum run_mode mode, int slot,
                     struct outcome *o)
{
    static struct vm_ctx ctxs[2];
    static uint8_t state[2][VM_STATE_SIZE];
    struct vm_ctx ctx = {0};
    memset(state[slot], 0, VM_STATE_SIZE);
    /* heap blocks ending exactly at the buffer's end, so that ASan sees any
     * overrun too; slot 1 starts 16 bytes further into a larger block */
    size_t pad = slot ? 16 : 0;
    uint8_t *inb = malloc(in_len + pad + 1), *outb = malloc(out_len + pad + 1);
    uint8_t *in = inb + pad, *out = outb + pad;
    memcpy(in, input, in_len);
    memset(out, 0, out_len);
    ctx.data = (uintptr_t)in;
    ctx.data_end = (uintptr_t)in + in_len;
    ctx.out = (uintptr_t)out;
    ctx.out_end = (uintptr_t)out + out_len;
    ctx.len = in_len;
    memcpy(ctx.arg, args, sizeof(ctx.arg));
    struct vm_env env = {.budget = budget, .checked = mode == RUN_CHECKED,
                         .interp = mode != RUN_JIT, .state = state[slot]};
    ctxs[slot] = ctx;
    o->r0 = 0;
    o->rc = vm_run(p, &ctxs[slot], &env, &o->r0);
    o->used = env.used;
    o->fault_pc = env.fault_pc;
    if (mode == RUN_CHECKED && o->rc == -EFAULT) {
        fprintf(stderr, "VERIFIER BUG: accepted program faulted at pc %u: %s\n", env.fault_pc,
                env.fault);
        abort();
    }
    memset(o->out, 0, sizeof(o->out));
    memcpy(o->out, out, out_len);
    memcpy(o->state, state[slot], VM_STATE_SIZE);
    free(inb);
    free(outb);
}

/* Leaves a pattern in the stack area vm_run() is about to use. */
__attribute__((noinline)) static void dirty_stack(void)
{
    volatile uint8_t junk[VM_MAX_CALL_DEPTH * VM_STACK_SIZE + 4096];
    for (size_t k = 0; k < sizeof(junk); k++)
        junk[k] = (uint8_t)(0xa5 ^ k);
}

static void compare(const struct vm_prog *p, const struct outcome *a, const struct outcome *b)
{
    if (a->rc != b->rc || (a->rc == 0 && (a->r0 != b->r0 || memcmp(a->out, b->out, 256) ||
                                           memcmp(a->state, b->state, VM_STATE_SIZE)))) {
        fprintf(stderr, "VERIFIER BUG: fast and checked runs differ (rc %d/%d, r0 %#llx/%#llx)"
                        " in a program of %u instructions\n",
                a->rc, b->rc, (unsigned long long)a->r0, (unsigned long long)b->r0, p->ninsns);
        abort();
    }
}

/* Runs compared between the JIT and the interpreter (jit_diff_main.c
 * checks that a run compared enough of them to mean something). */
unsigned long fuzz_jit_compared;

/* The JIT against the fast interpreter: everything must be equal, also
 * when the run failed (budget exhausted). */
static void compare_jit(const struct vm_prog *p, const struct outcome *i, const struct outcome *j)
{
    if (i->rc != j->rc || i->r0 != j->r0 || i->used != j->used || i->fault_pc != j->fault_pc ||
        memcmp(i->out, j->out, 256) || memcmp(i->state, j->state, VM_STATE_SIZE)) {
        fprintf(stderr, "JIT BUG: interpreter and JIT differ (rc %d/%d, r0 %#llx/%#llx, used "
                        "%llu/%llu, pc %u/%u) in a program of %u instructions\n",
                i->rc, j->rc, (unsigned long long)i->r0, (unsigned long long)j->r0,
                (unsigned long long)i->used, (unsigned long long)j->used, i->fault_pc,
                j->fault_pc, p->ninsns);
        abort();
    }
}

/* The checked runs of each round: the reference of the second pass of a
 * table of pointers (run_program with ref). */
static struct outcome first_checked[3];

/* Runs p over three rounds of fuzz-chosen inputs. With ref, only the
 * checked runs, each compared with ref's. */
static void run_program(struct vm_prog *p, struct gen *g, bool deterministic,
                        const struct outcome *ref)
{
    if (vm_prepare(p) != 0)
        return;
    bool jit = !ref && deterministic && vm_jit_compile(p) == 0;
    for (int round = 0; round < 3; round++) {
        uint8_t input[256];
        uint64_t args[4];
        /* small sizes often: they sit right at the programs' checks */
        uint8_t a = byte(g), b = byte(g);
        uint32_t in_len = a & 1 ? (a >> 1) % 33 : a % 200;
        uint32_t out_len = b & 1 ? (b >> 1) % 33 : b % 200;
        for (int k = 0; k < 256; k++)
            input[k] = byte(g) ^ (uint8_t)k;
        for (int k = 0; k < 4; k++)
            args[k] = (uint64_t)(int64_t)imm(g);
        /* small budgets often: the JIT must stop where the interpreter does */
        uint8_t c = byte(g);
        uint64_t budget = c & 1 ? 20000 : 1 + (uint64_t)c * 2;
        static struct outcome checked, fast, native;
        run_once(p, input, in_len, out_len, args, budget, RUN_CHECKED, 0, &checked);
        if (ref) {
            const struct outcome *r = &ref[round];
            if (r->rc != checked.rc || r->r0 != checked.r0 || r->used != checked.used ||
                r->fault_pc != checked.fault_pc || memcmp(r->out, checked.out, 256) ||
                memcmp(r->state, checked.state, VM_STATE_SIZE)) {
                fprintf(stderr, "VERIFIER BUG: a table of pointers at another address changes "
                                "the result (rc %d/%d, r0 %#llx/%#llx): an address leaked\n",
                        ref[round].rc, checked.rc, (unsigned long long)ref[round].r0,
                        (unsigned long long)checked.r0);
                abort();
            }
            continue;
        }
        first_checked[round] = checked;
        if (!deterministic)
            continue;
        dirty_stack();
        run_once(p, input, in_len, out_len, args, budget, RUN_FAST, 1, &fast);
        if (checked.rc == 0)
            compare(p, &checked, &fast);
        if (jit) {
            run_once(p, input, in_len, out_len, args, budget, RUN_JIT, 1, &native);
            compare_jit(p, &fast, &native);
            fuzz_jit_compared++;
        }
    }
    vm_unprepare(p);
}

/* FUZZ_VM_DUMP=1 prints each program and the verifier's trace (replay). */
static void log_line(void *arg, const char *line)
{
    unsigned *n = arg;
    if ((*n)++ < 4000)
        fprintf(stderr, "  | %s\n", line);
}

static void dump(const struct vm_prog *p)
{
    char text[160];
    for (uint32_t pc = 0; pc < p->ninsns; pc++) {
        int k = vm_disasm_insn(p, pc, text, sizeof(text));
        fprintf(stderr, "%4u: %s\n", pc, text);
        pc += (uint32_t)k - 1;
    }
}

/* Accepted programs whose rodata was a table of pointers, and of them
 * those that loaded an entry (the second pass compared them). */
static uint64_t tables_ok, tables_loaded;

/* FUZZ_VM_STATS=1 prints how many programs were accepted and ran. */
static void stats(bool accepted, int rc_first)
{
    static uint64_t runs, ok, codes[4];
    static int enabled = -1;
    if (enabled < 0)
        enabled = getenv("FUZZ_VM_STATS") != NULL;
    if (!enabled)
        return;
    runs++;
    ok += accepted;
    codes[rc_first == -EACCES ? 0 : rc_first == -EINVAL ? 1 : rc_first == -E2BIG ? 2 : 3]++;
    if ((runs & 0xfff) == 0)
        fprintf(stderr, "fuzz_vm: %llu programs, %llu accepted; rejected EACCES %llu EINVAL "
                        "%llu E2BIG %llu; tables of pointers %llu accepted, %llu loading an "
                        "entry\n", (unsigned long long)runs, (unsigned long long)ok,
                (unsigned long long)codes[0], (unsigned long long)codes[1],
                (unsigned long long)codes[2], (unsigned long long)tables_ok,
                (unsigned long long)tables_loaded);
}

/* Makes image (a copy of bytes) a table of two pointers, at 0 and 8, into
 * the objects [16, 24) and [24, 32) at offsets the bytes chose, and p's
 * read-only data. */
static void table_rodata(struct vm_prog *p, uint8_t *image, const uint8_t *bytes,
                         struct vm_rodata_ptr rp[2])
{
    memcpy(image, bytes, RODATA_SIZE);
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t lo = 16 + 8 * k;
        rp[k] = (struct vm_rodata_ptr){8 * k, lo + bytes[1 + k] % 9, lo, lo + 8};
        uint64_t a = (uint64_t)(uintptr_t)(image + rp[k].target);
        memcpy(image + 8 * k, &a, sizeof(a));
    }
    p->rodata = image;
    p->rptrs = rp;
    p->nrptrs = 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gen g;
    uint8_t rodata[RODATA_SIZE], bytes[RODATA_SIZE];
    static uint64_t moved[RODATA_SIZE / 8 + 8];   /* (8-aligned, as malloc's) */
    struct vm_rodata_ptr rp[2];
    memset(&g, 0, sizeof(g));
    g.d = data;
    g.n = size;
    for (int k = 0; k < RODATA_SIZE; k++)
        rodata[k] = bytes[k] = byte(&g);
    bool raw = byte(&g) == 0xff;
    if (raw) {
        g.len = (uint32_t)((g.n - g.pos) / 8 > MAX_INSNS ? MAX_INSNS : (g.n - g.pos) / 8);
        memcpy(g.insn, g.d + g.pos, g.len * 8);
        g.pos += g.len * 8;
        g.ktime = true;
    } else {
        generate(&g);
    }
    if (g.len == 0)
        return 0;
    struct vm_prog p = {0};
    p.insns = g.insn;
    p.ninsns = g.len;
    p.rodata = rodata;
    p.rodata_size = RODATA_SIZE;
    bool table = bytes[0] & 1;
    if (table)
        table_rodata(&p, rodata, bytes, rp);
    struct vm_verify_result res;
    struct vm_verify_opts opts = {.max_insns = 50000};   /* keeps the fuzzer fast */
    unsigned nlog = 0;
    if (getenv("FUZZ_VM_DUMP")) {
        dump(&p);
        opts.log = log_line;
        opts.log_arg = &nlog;
    }
    int rc = vm_verify(&p, &opts, &res);
    if (rc == 0 && table) {
        tables_ok++;
        for (uint32_t pc = 0; pc + 2 < p.ninsns; pc++)
            tables_loaded += p.insns[pc].code == VM_OPC_LD_IMM64 &&
                             VM_CLS(p.insns[pc + 2].code) == VM_CLS_LDX &&
                             vm_src(&p.insns[pc + 2]) == vm_dst(&p.insns[pc]);
    }
    stats(rc == 0, rc);
    if (getenv("FUZZ_VM_SLOW") && res.elapsed_ns > 2000000)
        fprintf(stderr, "slow: %u insns rc %d %.2f ms %llu processed %llu states\n", p.ninsns,
                rc, res.elapsed_ns / 1e6, (unsigned long long)res.insns_processed,
                (unsigned long long)res.states);
    size_t pos = g.pos;
    if (rc == 0)
        run_program(&p, &g, !g.ktime, NULL);
    if (rc == 0 && table && !g.ktime) {   /* the same runs, the image elsewhere */
        vm_unprepare(&p);
        table_rodata(&p, (uint8_t *)(moved + 1 + bytes[3] % 4), bytes, rp);
        g.pos = pos;
        run_program(&p, &g, true, first_checked);
        vm_unprepare(&p);
    }
    return 0;
}
