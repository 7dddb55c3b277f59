/*
 * bpf/interp.c - the eBPF interpreter (RFC 9669, full ISA).
 *
 * vm_prepare() decodes the program once into an array of 16-byte
 * instructions (bpf/interp_int.h): one internal operation per opcode
 * variant (64/32-bit, K/X, signed or not, each size), jump and call
 * targets as pointers, ld_imm64 values (rodata already resolved to an
 * address), helpers looked up. Anything malformed decodes as INVALID and
 * fails only when reached. vm_run() then executes that form with the
 * threaded loop of bpf/interp_loop.inc, instantiated twice: fast and
 * checked.
 *
 * Invariants:
 *   1. The prepared form is immutable after vm_prepare(); a run keeps all
 *      its mutable state (registers, frames, stack, regions) on its own C
 *      stack, so any number of threads may run one program at once.
 *   2. Slot i of the prepared form decodes insns[i]; slot ninsns is a
 *      FALLOFF sentinel, so running off the end is an error, not UB.
 *   3. Each local call gets its own VM_STACK_SIZE frame below the caller's
 *      (r10 moves down by VM_STACK_SIZE), r6-r9 are restored on exit, and
 *      more than VM_MAX_CALL_DEPTH frames is -EFAULT.
 *   4. The checked loop never touches memory outside the run's regions;
 *      the fast loop trusts the verifier and checks nothing.
 *   5. In checked mode the whole stack is zeroed first; the fast path
 *      leaves it as is (a verified program never reads a byte it did not
 *      write).
 */
#include "bpf/interp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/interp_int.h"
#include "bpf/jit_x86_64.h"

enum vm_access { VM_ACC_LOAD, VM_ACC_STORE, VM_ACC_ATOMIC, VM_ACC_HELPER_R, VM_ACC_HELPER_W };

/* A memory region a run may touch in checked mode. */
struct vm_region {
    uint64_t start, end;
    const char *name;
    bool writable;
};

#define VM_MAX_REGIONS 6

/* Everything one invocation owns. Lives on vm_run()'s stack. */
struct vm_run {
    const struct vm_prog *prog;
    const struct vm_exec *x;
    struct vm_env *env;
    uint64_t budget;
    struct vm_region regions[VM_MAX_REGIONS];
    unsigned nregions;
    bool own_state;                        /* env->state points at state[] */
    _Alignas(16) uint8_t stack[VM_MAX_CALL_DEPTH * VM_STACK_SIZE];
    _Alignas(16) uint8_t state[VM_STATE_SIZE];
};

/* ------------------------------------------------------------------ */
/* Decoding                                                            */
/* ------------------------------------------------------------------ */

#define XOP_BIN(name, is32, isx) (XOP_##name##64_K + 2 * (is32) + (isx))
#define XOP_COND(name, is32, isx) (XOP_##name##_K + 2 * (is32) + (isx))

static int bad(struct vm_dinsn *d, enum vm_bad why)
{
    d->op = XOP_INVALID;
    d->imm = why;
    return -1;
}

/* ALU/ALU64 operations other than END, NEG and MOVSX. */
static int alu_binop(uint8_t code, int16_t off, bool is32)
{
    bool x = VM_SRC(code) == VM_X;
    switch (VM_OP(code)) {
    case VM_ADD: return XOP_BIN(ADD, is32, x);
    case VM_SUB: return XOP_BIN(SUB, is32, x);
    case VM_MUL: return XOP_BIN(MUL, is32, x);
    case VM_DIV: return off == 0 ? XOP_BIN(DIV, is32, x) : off == 1 ? XOP_BIN(SDIV, is32, x) : -1;
    case VM_MOD: return off == 0 ? XOP_BIN(MOD, is32, x) : off == 1 ? XOP_BIN(SMOD, is32, x) : -1;
    case VM_OR: return XOP_BIN(OR, is32, x);
    case VM_AND: return XOP_BIN(AND, is32, x);
    case VM_LSH: return XOP_BIN(LSH, is32, x);
    case VM_RSH: return XOP_BIN(RSH, is32, x);
    case VM_XOR: return XOP_BIN(XOR, is32, x);
    case VM_ARSH: return XOP_BIN(ARSH, is32, x);
    case VM_MOV: return off == 0 ? XOP_BIN(MOV, is32, x) : -1;
    default: return -1;
    }
}

/* MOV X with offset 8/16/32: sign-extending move (32 only in ALU64). */
static int alu_movsx(int16_t off, bool is32)
{
    switch (off) {
    case 8: return is32 ? XOP_MOVSX32_8 : XOP_MOVSX64_8;
    case 16: return is32 ? XOP_MOVSX32_16 : XOP_MOVSX64_16;
    case 32: return is32 ? -1 : XOP_MOVSX64_32;
    default: return -1;
    }
}

/* Byte swaps: ALU|K to little-endian, ALU|X to big-endian, ALU64|K
 * unconditional; imm is the width. */
static int alu_end(uint8_t code, int32_t imm)
{
    int w = imm == 16 ? 0 : imm == 32 ? 1 : imm == 64 ? 2 : -1;
    if (w < 0)
        return -1;
    if (VM_CLS(code) == VM_CLS_ALU)
        return (VM_SRC(code) == VM_K ? XOP_LE16 : XOP_BE16) + w;
    return VM_SRC(code) == VM_K ? XOP_BSWAP16 + w : -1;
}

static void decode_alu(const struct vm_insn *in, struct vm_dinsn *d)
{
    bool is32 = VM_CLS(in->code) == VM_CLS_ALU;
    bool x = VM_SRC(in->code) == VM_X;
    int op;

    if (VM_OP(in->code) == VM_END)
        op = alu_end(in->code, in->imm);
    else if (VM_OP(in->code) == VM_NEG)
        op = x ? -1 : is32 ? XOP_NEG32 : XOP_NEG64;
    else if (VM_OP(in->code) == VM_MOV && x && in->off != 0)
        op = alu_movsx(in->off, is32);
    else
        op = alu_binop(in->code, in->off, is32);
    if (op < 0) {
        bad(d, VM_BAD_OPCODE);
        return;
    }
    if (d->dst >= VM_REG_FP || (x && d->src > VM_REG_FP)) {
        bad(d, VM_BAD_REGISTER);
        return;
    }
    d->op = (uint8_t)op;
    d->aux.u64 = (uint64_t)(int64_t)in->imm;
}

/* Resolves pc + 1 + rel; n (one past the end) is allowed and reaches the
 * FALLOFF sentinel. */
static int set_target(struct vm_dinsn *d, struct vm_dinsn *base, uint32_t pc, int64_t rel,
                      uint32_t n)
{
    int64_t t = (int64_t)pc + 1 + rel;
    if (t < 0 || t > (int64_t)n)
        return bad(d, VM_BAD_JUMP);
    d->aux.target = base + t;
    return 0;
}

static int cond_op(uint8_t code, bool is32)
{
    bool x = VM_SRC(code) == VM_X;
    switch (VM_OP(code)) {
    case VM_JEQ: return XOP_COND(JEQ, is32, x);
    case VM_JGT: return XOP_COND(JGT, is32, x);
    case VM_JGE: return XOP_COND(JGE, is32, x);
    case VM_JSET: return XOP_COND(JSET, is32, x);
    case VM_JNE: return XOP_COND(JNE, is32, x);
    case VM_JSGT: return XOP_COND(JSGT, is32, x);
    case VM_JSGE: return XOP_COND(JSGE, is32, x);
    case VM_JLT: return XOP_COND(JLT, is32, x);
    case VM_JLE: return XOP_COND(JLE, is32, x);
    case VM_JSLT: return XOP_COND(JSLT, is32, x);
    case VM_JSLE: return XOP_COND(JSLE, is32, x);
    default: return -1;
    }
}

static void decode_call(const struct vm_insn *in, struct vm_dinsn *d, struct vm_dinsn *base,
                        uint32_t pc, uint32_t n)
{
    if (vm_src(in) == VM_PSEUDO_CALL) {
        d->op = XOP_CALL_LOCAL;
        if (set_target(d, base, pc, in->imm, n) == 0 && d->aux.target == base + n)
            bad(d, VM_BAD_JUMP);
        return;
    }
    if (vm_src(in) != 0) {
        bad(d, VM_BAD_OPCODE);
        return;
    }
    d->aux.helper = vm_helper_find((uint32_t)in->imm);
    d->op = XOP_CALL_HELPER;
    if (!d->aux.helper || !d->aux.helper->fn)
        bad(d, VM_BAD_HELPER);
}

static void decode_jmp(const struct vm_insn *in, struct vm_dinsn *d, struct vm_dinsn *base,
                       uint32_t pc, uint32_t n)
{
    bool is32 = VM_CLS(in->code) == VM_CLS_JMP32;
    uint8_t op = VM_OP(in->code);

    if (op == VM_JA && VM_SRC(in->code) == VM_K) {
        d->op = XOP_JA;   /* JMP32 JA ("gotol") takes its offset from imm */
        set_target(d, base, pc, is32 ? in->imm : in->off, n);
    } else if (in->code == (VM_CLS_JMP | VM_CALL)) {
        decode_call(in, d, base, pc, n);
    } else if (in->code == (VM_CLS_JMP | VM_CALL | VM_X)) {
        /* callx: the helper whose number is in dst, looked up when it runs */
        d->op = XOP_CALLX;
        if (vm_src(in) != 0 || in->off != 0 || in->imm != 0)
            bad(d, VM_BAD_OPCODE);
        else if (d->dst >= VM_REG_FP)
            bad(d, VM_BAD_REGISTER);
    } else if (in->code == (VM_CLS_JMP | VM_EXIT)) {
        d->op = XOP_EXIT;
    } else {
        int c = cond_op(in->code, is32);
        if (c < 0) {
            bad(d, VM_BAD_OPCODE);
            return;
        }
        d->op = (uint8_t)c;
        if (d->dst > VM_REG_FP || (VM_SRC(in->code) == VM_X && d->src > VM_REG_FP))
            bad(d, VM_BAD_REGISTER);
        else
            set_target(d, base, pc, in->off, n);
    }
}

static void decode_lddw(const struct vm_prog *p, uint32_t pc, struct vm_dinsn *d)
{
    const struct vm_insn *in = &p->insns[pc], *hi = in + 1;
    if (pc + 1 >= p->ninsns || hi->code != 0 || hi->regs != 0 || hi->off != 0) {
        bad(d, VM_BAD_LDDW);
        return;
    }
    if (d->dst >= VM_REG_FP) {
        bad(d, VM_BAD_REGISTER);
        return;
    }
    d->op = XOP_LDDW;
    if (vm_src(in) == 0) {
        d->aux.u64 = (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)hi->imm << 32;
    } else if (vm_src(in) == VM_PSEUDO_RODATA) {
        if (hi->imm != 0 || (uint32_t)in->imm > p->rodata_size || !p->rodata)
            bad(d, VM_BAD_RODATA);
        else
            d->aux.u64 = (uint64_t)(uintptr_t)(p->rodata + (uint32_t)in->imm);
    } else {
        bad(d, VM_BAD_LDDW);
    }
}

/* LDX / ST / STX (MEM, MEMSX and ATOMIC modes). */
static int mem_op(const struct vm_insn *in)
{
    static const uint8_t ldx[4] = {XOP_LDXW, XOP_LDXH, XOP_LDXB, XOP_LDXDW};
    static const uint8_t ldxs[4] = {XOP_LDXSW, XOP_LDXSH, XOP_LDXSB, 0};
    static const uint8_t st[4] = {XOP_STW, XOP_STH, XOP_STB, XOP_STDW};
    static const uint8_t stx[4] = {XOP_STXW, XOP_STXH, XOP_STXB, XOP_STXDW};
    unsigned sz = VM_SIZE(in->code) >> 3, cls = VM_CLS(in->code), mode = VM_MODE(in->code);

    if (cls == VM_CLS_LDX && mode == VM_MEM)
        return ldx[sz];
    if (cls == VM_CLS_LDX && mode == VM_MEMSX)
        return ldxs[sz] ? ldxs[sz] : -1;
    if (cls == VM_CLS_ST && mode == VM_MEM)
        return st[sz];
    if (cls == VM_CLS_STX && mode == VM_MEM)
        return stx[sz];
    return -1;
}

static int atomic_op(const struct vm_insn *in)
{
    bool w64 = VM_SIZE(in->code) == VM_DW;
    if (VM_SIZE(in->code) != VM_W && !w64)
        return -1;
    switch (in->imm) {
    case VM_ADD: return w64 ? XOP_AADD64 : XOP_AADD32;
    case VM_OR: return w64 ? XOP_AOR64 : XOP_AOR32;
    case VM_AND: return w64 ? XOP_AAND64 : XOP_AAND32;
    case VM_XOR: return w64 ? XOP_AXOR64 : XOP_AXOR32;
    case VM_ADD | VM_FETCH: return w64 ? XOP_FADD64 : XOP_FADD32;
    case VM_OR | VM_FETCH: return w64 ? XOP_FOR64 : XOP_FOR32;
    case VM_AND | VM_FETCH: return w64 ? XOP_FAND64 : XOP_FAND32;
    case VM_XOR | VM_FETCH: return w64 ? XOP_FXOR64 : XOP_FXOR32;
    case VM_XCHG: return w64 ? XOP_XCHG64 : XOP_XCHG32;
    case VM_CMPXCHG: return w64 ? XOP_CMPXCHG64 : XOP_CMPXCHG32;
    default: return -1;
    }
}

static void decode_mem(const struct vm_insn *in, struct vm_dinsn *d)
{
    bool atomic = VM_CLS(in->code) == VM_CLS_STX && VM_MODE(in->code) == VM_ATOMIC;
    int op = atomic ? atomic_op(in) : mem_op(in);
    bool writes_dst = VM_CLS(in->code) == VM_CLS_LDX;

    if (op < 0) {
        bad(d, VM_BAD_OPCODE);
        return;
    }
    /* r10 is read-only; ST has no source; atomics may write src. */
    if (d->dst > VM_REG_FP || d->src > VM_REG_FP || (writes_dst && d->dst == VM_REG_FP) ||
        (atomic && d->src == VM_REG_FP && (in->imm & VM_FETCH))) {
        bad(d, VM_BAD_REGISTER);
        return;
    }
    d->op = (uint8_t)op;
    d->aux.u64 = (uint64_t)(int64_t)in->off;
}

static void decode_one(const struct vm_prog *p, uint32_t pc, struct vm_dinsn *base)
{
    const struct vm_insn *in = &p->insns[pc];
    struct vm_dinsn *d = &base[pc];

    if (d->op == XOP_INVALID && d->imm == VM_BAD_SLOT2)
        return;   /* second half of the preceding ld_imm64 */
    d->dst = (uint8_t)vm_dst(in);
    d->src = (uint8_t)vm_src(in);
    d->imm = in->imm;
    switch (VM_CLS(in->code)) {
    case VM_CLS_ALU:
    case VM_CLS_ALU64: decode_alu(in, d); break;
    case VM_CLS_JMP:
    case VM_CLS_JMP32: decode_jmp(in, d, base, pc, p->ninsns); break;
    case VM_CLS_LD:
        if (in->code == VM_OPC_LD_IMM64) {
            decode_lddw(p, pc, d);
            if (pc + 1 < p->ninsns)
                bad(&base[pc + 1], VM_BAD_SLOT2);
        } else {
            bad(d, VM_BAD_OPCODE);   /* legacy ABS/IND packet loads */
        }
        break;
    default: decode_mem(in, d); break;
    }
}

int vm_prepare(struct vm_prog *prog)
{
    if (!prog || (!prog->insns && prog->ninsns))
        return -EINVAL;
    if (prog->exec)
        return 0;
    uint32_t n = prog->ninsns;
    struct vm_exec *x = calloc(1, sizeof(*x) + ((size_t)n + 1) * sizeof(struct vm_dinsn));
    if (!x)
        return -ENOMEM;
    x->n = n;
    for (uint32_t pc = 0; pc < n; pc++)
        decode_one(prog, pc, x->code);
    x->code[n].op = XOP_FALLOFF;
    prog->exec = x;
    return 0;
}

void vm_unprepare(struct vm_prog *prog)
{
    if (!prog)
        return;
    vm_jit_free(prog);
    free(prog->exec);
    prog->exec = NULL;
}

/* ------------------------------------------------------------------ */
/* Faults (checked mode and invalid instructions)                     */
/* ------------------------------------------------------------------ */

static uint64_t stack_lo(const struct vm_run *rs, int depth)
{
    return (uint64_t)(uintptr_t)rs->stack + sizeof(rs->stack) -
           (uint64_t)(depth + 1) * VM_STACK_SIZE;
}

static uint64_t stack_top(const struct vm_run *rs)
{
    return (uint64_t)(uintptr_t)rs->stack + sizeof(rs->stack);
}

/* The run's regions at call depth `depth`: fixed ones, the live stack
 * frames and the state area. Returns how many were written to out[]. */
static unsigned regions_now(const struct vm_run *rs, int depth, struct vm_region *out)
{
    unsigned k = rs->nregions;
    memcpy(out, rs->regions, k * sizeof(*out));
    out[k++] = (struct vm_region){stack_lo(rs, depth), stack_top(rs), "stack", true};
    if (rs->env->state) {
        uint64_t s = (uint64_t)(uintptr_t)rs->env->state;
        out[k++] = (struct vm_region){s, s + VM_STATE_SIZE, "state", true};
    }
    return k;
}

static bool vm_access_ok(const struct vm_run *rs, int depth, uint64_t addr, uint64_t size,
                         enum vm_access kind)
{
    struct vm_region r[VM_MAX_REGIONS + 2];
    unsigned k = regions_now(rs, depth, r);
    bool write = kind == VM_ACC_STORE || kind == VM_ACC_ATOMIC || kind == VM_ACC_HELPER_W;

    if (kind == VM_ACC_ATOMIC && (addr & (size - 1)))
        return false;
    if (addr + size < addr)
        return false;
    for (unsigned i = 0; i < k; i++)
        if (addr >= r[i].start && addr + size <= r[i].end)
            return !write || r[i].writable;
    return false;
}

static const char *access_name(enum vm_access kind)
{
    switch (kind) {
    case VM_ACC_LOAD: return "load";
    case VM_ACC_STORE: return "store";
    case VM_ACC_ATOMIC: return "atomic";
    case VM_ACC_HELPER_R: return "helper read";
    default: return "helper write";
    }
}

/* How far addr is from region r (0 inside). */
static uint64_t region_dist(const struct vm_region *r, uint64_t addr)
{
    if (addr < r->start)
        return r->start - addr;
    return addr < r->end ? 0 : addr - r->end + 1;
}

/* Names addr relative to the nearest region ("input+4094", "input-1",
 * "stack fp-520"), or as a plain address when none is within 4 GiB.
 * Copies that region to *found and returns true, or returns false. */
static bool name_addr(const struct vm_run *rs, int depth, uint64_t addr, char *buf, size_t len,
                      struct vm_region *found)
{
    struct vm_region r[VM_MAX_REGIONS + 2];
    unsigned k = regions_now(rs, depth, r);
    const struct vm_region *best = NULL;

    for (unsigned i = 0; i < k; i++)
        if (!best || region_dist(&r[i], addr) < region_dist(best, addr))
            best = &r[i];
    if (!best || region_dist(best, addr) >= (1ull << 32)) {
        snprintf(buf, len, "0x%" PRIx64, addr);
        return false;
    }
    uint64_t base = best->start;
    if (!strcmp(best->name, "stack"))
        base = stack_top(rs) - (uint64_t)depth * VM_STACK_SIZE;   /* this frame's r10 */
    snprintf(buf, len, "%s%s%+" PRId64, best->name, strcmp(best->name, "stack") ? "" : " fp",
             (int64_t)(addr - base));
    *found = *best;
    return true;
}

static int vm_fault_access(struct vm_run *rs, int depth, uint32_t pc, uint64_t addr,
                           uint64_t size, enum vm_access kind)
{
    char where[64];
    struct vm_region r;
    bool named = name_addr(rs, depth, addr, where, sizeof(where), &r);
    bool inside = named && addr >= r.start && addr + size <= r.end && addr + size >= addr;
    const char *why = "out of bounds";

    if (kind == VM_ACC_ATOMIC && (addr & (size - 1)))
        why = "misaligned";
    else if (inside)
        why = "to read-only memory";
    rs->env->fault_pc = pc;
    snprintf(rs->env->fault, sizeof(rs->env->fault), "pc %u: %s of %" PRIu64 " bytes at %s %s",
             pc, access_name(kind), size, where, why);
    return -EFAULT;
}

static const char *bad_reason(enum vm_bad why)
{
    switch (why) {
    case VM_BAD_OPCODE: return "invalid opcode";
    case VM_BAD_REGISTER: return "invalid register";
    case VM_BAD_JUMP: return "jump or call target out of range";
    case VM_BAD_HELPER: return "unknown helper";
    case VM_BAD_LDDW: return "malformed ld_imm64";
    case VM_BAD_RODATA: return "ld_imm64 rodata offset out of range";
    case VM_BAD_SLOT2: return "jump into the middle of ld_imm64";
    default: return "execution fell off the end of the program";
    }
}

static int vm_fault_invalid(struct vm_run *rs, uint32_t pc, enum vm_bad why)
{
    struct vm_env *env = rs->env;
    env->fault_pc = pc;
    if (pc < rs->x->n) {
        const struct vm_insn *in = &rs->prog->insns[pc];
        snprintf(env->fault, sizeof(env->fault),
                 "pc %u: %s (code 0x%02x regs 0x%02x off %d imm %d)", pc, bad_reason(why),
                 in->code, in->regs, in->off, in->imm);
    } else {
        snprintf(env->fault, sizeof(env->fault), "pc %u: %s", pc, bad_reason(0));
    }
    return -EINVAL;
}

/* A callx whose register named no helper (never in a verified program:
 * the verifier requires a known helper's number there). */
static int vm_fault_callx(struct vm_run *rs, uint32_t pc, uint64_t v)
{
    rs->env->fault_pc = pc;
    snprintf(rs->env->fault, sizeof(rs->env->fault),
             "pc %u: callx r%u holds %" PRIu64 ", which is not the number of a helper", pc,
             rs->x->code[pc].dst, v);
    return -EINVAL;
}

static int vm_fault_depth(struct vm_run *rs, uint32_t pc)
{
    rs->env->fault_pc = pc;
    snprintf(rs->env->fault, sizeof(rs->env->fault),
             "pc %u: local call nests deeper than %d frames", pc, VM_MAX_CALL_DEPTH);
    return -EFAULT;
}

static int vm_fault_budget(struct vm_run *rs, uint32_t pc)
{
    rs->env->fault_pc = pc;
    snprintf(rs->env->fault, sizeof(rs->env->fault),
             "pc %u: instruction budget of %" PRIu64 " exhausted", pc, rs->budget);
    return -ETIME;
}

/* ------------------------------------------------------------------ */
/* Helper calls                                                        */
/* ------------------------------------------------------------------ */

/* Checked mode: every MEM argument with the size argument that follows it
 * must lie inside a region (writable for MEM_W). The size is taken as the
 * native helpers take it: the low 32 bits. */
static int check_helper_args(struct vm_run *rs, int depth, uint32_t pc,
                             const struct vm_helper *h, const uint64_t *R)
{
    for (int i = 0; i < 5; i++) {
        enum vm_arg_kind k = h->args[i];
        if (k == VM_ARG_CTX && R[i + 1] != (uint64_t)(uintptr_t)rs->env->ctx) {
            rs->env->fault_pc = pc;
            snprintf(rs->env->fault, sizeof(rs->env->fault),
                     "pc %u: %s arg %d is not the context", pc, h->name, i + 1);
            return -EFAULT;
        }
        if (k != VM_ARG_MEM_R && k != VM_ARG_MEM_W)
            continue;
        uint64_t size = 0;
        for (int j = i + 1; j < 5; j++)
            if (h->args[j] == VM_ARG_SIZE || h->args[j] == VM_ARG_SIZE_OR_ZERO) {
                size = (uint32_t)R[j + 1];
                break;
            }
        enum vm_access acc = k == VM_ARG_MEM_W ? VM_ACC_HELPER_W : VM_ACC_HELPER_R;
        if (size && !vm_access_ok(rs, depth, R[i + 1], size, acc)) {
            int rc = vm_fault_access(rs, depth, pc, R[i + 1], size, acc);
            char *f = rs->env->fault;
            size_t used = strlen(f);
            snprintf(f + used, sizeof(rs->env->fault) - used, " (%s arg %d)", h->name, i + 1);
            return rc;
        }
    }
    return 0;
}

static int vm_helper_call(struct vm_run *rs, int depth, uint32_t pc, const struct vm_helper *h,
                          uint64_t *R, bool checked)
{
    struct vm_env *env = rs->env;
    if (checked) {
        int rc = check_helper_args(rs, depth, pc, h, R);
        if (rc)
            return rc;
    }
    if (!env->state) {
        memset(rs->state, 0, sizeof(rs->state));
        env->state = rs->state;
        rs->own_state = true;
    }
    env->charge = 0;
    R[0] = h->fn(env, R[1], R[2], R[3], R[4], R[5]);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The two loop instantiations                                         */
/* ------------------------------------------------------------------ */

#define VM_LOOP_NAME run_fast
#define VM_CHECKED 0
#include "bpf/interp_loop.inc"
#undef VM_LOOP_NAME
#undef VM_CHECKED

#define VM_LOOP_NAME run_checked
#define VM_CHECKED 1
#include "bpf/interp_loop.inc"
#undef VM_LOOP_NAME
#undef VM_CHECKED

static void add_region(struct vm_run *rs, uint64_t start, uint64_t end, const char *name,
                       bool writable)
{
    if (end > start && rs->nregions < VM_MAX_REGIONS)
        rs->regions[rs->nregions++] = (struct vm_region){start, end, name, writable};
}

/* Budgets above this are treated as this: 2^62 instructions cannot run
 * in a lifetime, and the JIT keeps `budget - count` as a signed number. */
#define VM_BUDGET_CAP (1ull << 62)

/* Runs the JIT-compiled code; same results, `used` and faults as the
 * fast loop (bpf/jit_x86_64.h, invariant 3). */
static int run_jit(struct vm_run *rs, uint64_t r1, uint64_t r2, uint64_t *ret)
{
    uint64_t budget = rs->budget < VM_BUDGET_CAP ? rs->budget : VM_BUDGET_CAP;
    struct vm_jit_ctl c = {
        .r1 = r1,
        .r2 = r2,
        .fp_top = stack_top(rs),
        .fp_limit = (uint64_t)(uintptr_t)rs->stack + VM_STACK_SIZE,
        .left = (int64_t)budget,
        .env = rs->env,
        .state_area = rs->state,
    };
    enum vm_jit_end end = vm_jit_exec(rs->prog, &c);

    rs->env->used = budget - (uint64_t)c.left;
    rs->own_state = c.own_state;
    *ret = c.r0;
    switch (end) {
    case VM_JIT_OK: return 0;
    case VM_JIT_BUDGET: return vm_fault_budget(rs, c.fault_pc);
    case VM_JIT_DEPTH: return vm_fault_depth(rs, c.fault_pc);
    case VM_JIT_CALLX: return vm_fault_callx(rs, c.fault_pc, c.callx);
    default:
        return vm_fault_invalid(rs, c.fault_pc,
                                c.fault_pc < rs->x->n ? (enum vm_bad)rs->x->code[c.fault_pc].imm
                                                      : (enum vm_bad)0);
    }
}

static int run(struct vm_run *rs, uint64_t r1, uint64_t r2, uint64_t *ret)
{
    struct vm_env *env = rs->env;
    const struct vm_prog *p = rs->prog;
    uint64_t r0 = 0;
    int rc;

    env->used = 0;
    env->fault_pc = 0;
    env->fault[0] = '\0';
    if (!p->exec)
        return -ENOEXEC;
    rs->x = p->exec;
    rs->budget = env->budget ? env->budget : VM_DEFAULT_BUDGET;
    if (p->rodata)
        add_region(rs, (uintptr_t)p->rodata, (uintptr_t)p->rodata + p->rodata_size, "rodata",
                   false);
    if (env->checked) {
        memset(rs->stack, 0, sizeof(rs->stack));
        rc = run_checked(rs, r1, r2, &r0);
    } else if (p->jit && !env->interp) {
        rc = run_jit(rs, r1, r2, &r0);
    } else {
        rc = run_fast(rs, r1, r2, &r0);
    }
    if (rs->own_state)
        env->state = NULL;
    if (rc == 0 && ret)
        *ret = r0;
    return rc;
}

/* The runtime's side of the verifier's contract (bpf/verifier.h): both
 * buffers well-formed and at most VM_MAX_BUF_SIZE bytes, the output
 * 8-byte aligned (atomics). */
static bool ctx_buffers_ok(const struct vm_ctx *ctx)
{
    return ctx->data <= ctx->data_end && ctx->data_end - ctx->data <= VM_MAX_BUF_SIZE &&
           ctx->out <= ctx->out_end && ctx->out_end - ctx->out <= VM_MAX_BUF_SIZE &&
           ctx->out % 8 == 0;
}

int vm_run(const struct vm_prog *prog, struct vm_ctx *ctx, struct vm_env *env, uint64_t *ret)
{
    struct vm_run rs;
    uintptr_t c = (uintptr_t)ctx;

    if (!ctx_buffers_ok(ctx)) {
        snprintf(env->fault, sizeof(env->fault),
                 "context buffers break the runtime contract (size > %u or misaligned output)",
                 (unsigned)VM_MAX_BUF_SIZE);
        return -EINVAL;
    }

    rs.prog = prog;
    rs.env = env;
    rs.nregions = 0;
    rs.own_state = false;
    add_region(&rs, c, c + sizeof(*ctx), "ctx", false);
    add_region(&rs, ctx->data, ctx->data_end, "input", false);
    add_region(&rs, ctx->out, ctx->out_end, "output", true);
    env->ctx = ctx;   /* for the input helpers, during this run only */
    int rc = run(&rs, c, 0, ret);
    env->ctx = NULL;
    return rc;
}

int vm_run_raw(const struct vm_prog *prog, void *mem, uint64_t len, struct vm_env *env,
               uint64_t *ret)
{
    struct vm_run rs;
    uintptr_t m = (uintptr_t)mem;

    rs.prog = prog;
    rs.env = env;
    rs.nregions = 0;
    rs.own_state = false;
    if (mem)
        add_region(&rs, m, m + len, "mem", true);
    env->ctx = NULL;   /* no context: the input helpers find nothing */
    return run(&rs, m, len, ret);
}
