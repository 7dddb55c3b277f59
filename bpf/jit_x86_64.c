/*
 * bpf/jit_x86_64.c - the x86-64 code generator for verified programs.
 *
 * One pass over the interpreter's pre-decoded form emits code for each
 * instruction; jumps and calls are rel32 and patched once every
 * instruction's offset is known. Out-of-line stubs at the end report
 * budget exhaustion, call depth and invalid instructions.
 *
 * Register assignment (fixed; BPF r1-r5 and x86 argument registers line
 * up except for r4, which is rcx because shifts need cl anyway):
 *   r0 rax  r1 rdi  r2 rsi  r3 rdx  r4 rcx  r5 r8
 *   r6 rbx  r7 r13  r8 r14  r9 r15  r10 rbp
 *   r9  -> struct vm_jit_ctl (saved around helper calls)
 *   r12 -> budget left (budget minus instructions counted)
 *   r10, r11 scratch.
 *
 * Invariants:
 *   1. Instructions are counted lazily: r12 = budget - count + pend, with
 *      pend (jbuf.pend) known at compile time at every point. pend is 0
 *      wherever r12 is looked at (budget checks, helper and local calls,
 *      exit, the end of a run), so the count equals the interpreter's
 *      there. Every forward jump target t has one pend on entry,
 *      carry[t], fixed by the first edge into it that is emitted; every
 *      other edge (the fall-through included) subtracts its difference on
 *      its own path before it arrives. Targets of backward jumps and of
 *      local calls carry 0. So the hot path of a loop usually subtracts
 *      once per iteration, at the back-edge, whose `sub` also sets the
 *      sign flag the budget check branches on.
 *   2. The native stack is 16-byte aligned wherever BPF code runs; a local
 *      call pushes 48 bytes (r6-r9, padding, return address) so it stays so.
 *   3. Depth is r10 itself: frame d has r10 = fp_top - d * VM_STACK_SIZE.
 *   4. x86 r10 is below 256 between instructions (code that uses it as
 *      scratch clears it after), so `setcc r10b` alone makes it 0 or 1.
 *      After an if-converted instruction (jbuf.dyn) it holds that
 *      instruction's count, not yet subtracted: the next settle() takes
 *      it off r12, together with the pending count in one `sub` when it
 *      flushes (lea r11, [r10 + pend]), so a loop's r12 chain is one
 *      `sub` per round.
 *   5. A counted loop (bpf/jit_loop.h) is emitted twice: an unchecked copy
 *      first, run when its rounds times its longest round fit in r12 (so
 *      no budget check in it could fail), then the ordinary copy. Both
 *      copies share carry[]; the unchecked one is charged its static count
 *      per round times its rounds on entry, and subtracts only the
 *      if-converted counts (r10) as it goes, so r12 is exact when it
 *      leaves.
 *
 * Constants from the program appear as immediates in the code (no
 * blinding): the generated code has no indirect jump whose target the
 * program controls and is entered only at its start, so a constant can
 * only be executed as an instruction after an unrelated control-flow
 * hijack of the device; see docs/BPF.md.
 */
#include "bpf/jit_x86_64.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpf/abi.h"
#include "bpf/interp_int.h"
#include "bpf/jit_loop.h"

/* What prog->jit points at. */
struct vm_jit {
    uint8_t *code;       /* read+exec mapping */
    size_t size;         /* bytes of code */
    size_t map_size;     /* bytes mapped */
    uint32_t n;          /* instructions */
    uint32_t *off;       /* n + 1 entries: native offset of each pc, then the end */
};

bool vm_jit_available(void)
{
#if defined(__x86_64__)
    return true;
#else
    return false;
#endif
}

#if defined(__x86_64__)

enum { RAX = 0, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };
enum { CTL = R9, LEFT = R12 };

static const uint8_t reg_of[VM_NREGS] = {RAX, RDI, RSI, RDX, RCX, R8, RBX, R13, R14, R15, RBP};

/* Condition codes (the low nibble of Jcc). */
enum { CC_B = 2, CC_AE = 3, CC_E = 4, CC_NE = 5, CC_BE = 6, CC_A = 7, CC_S = 8,
       CC_L = 12, CC_GE = 13, CC_LE = 14, CC_G = 15 };

#define CTL_OFF(f) ((int32_t)offsetof(struct vm_jit_ctl, f))

/* Encoding flags. */
enum { F_W = 1, F_BYTE = 2, F_66 = 4, F_0F = 8 };

struct fixup {
    uint32_t end;        /* offset just past the rel32 */
    uint32_t target;     /* pc, or OUT_LABEL */
    bool fast;           /* to target's code in the unchecked copy of its loop */
};

struct stub {
    uint32_t pc;
    uint8_t kind;        /* enum vm_jit_end */
    uint32_t end;        /* the jump to patch */
};

/* `if (c) skip one instruction`: the instruction runs out of line. */
struct cold {
    uint32_t pc;         /* the skipped instruction (exits: the jump) */
    uint32_t end;        /* the jump into it to patch */
    uint32_t pend;       /* pend on entry */
    bool fast;           /* jumped to from a loop's unchecked copy (exits: dyn) */
    uint32_t target;     /* exits: where the jump goes */
};

struct jbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
    struct fixup *fx;
    size_t nfx, capfx;
    struct stub *st;
    size_t nst, capst;
    uint32_t pend;        /* instructions not yet subtracted from r12 */
    bool dyn;             /* and r10 more (0 or 1, invariant 4) */
    int64_t *carry;       /* per pc: pend a jump into it brings, -1 unset */
    bool dead;            /* the last instruction never falls through */
    uint32_t *targets;    /* per pc: how many jumps and calls land there */
    struct cold *cold;    /* one-instruction blocks moved out of line */
    size_t ncold, capcold;
    uint32_t skip;        /* pc emitted out of line, or UINT32_MAX */
    bool fast;            /* emitting the unchecked copy of loop lo..hi */
    uint32_t lo, hi;
    uint32_t *foff;       /* per pc: native offset in its loop's unchecked copy */
    uint32_t fast_p;      /* the copy's count per round, charged on entry */
    const struct vm_jit_loop *loop;   /* the loop being copied unchecked */
    uint32_t *perp;       /* offsets of imm32s to patch with fast_p */
    size_t nperp, capperp;
    struct cold *exits;   /* its early exits, emitted after it */
    size_t nexits, capexits;
    uint32_t *heads;      /* pairs: a counted loop's head pc, where its code starts */
    size_t nheads, capheads;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem, bool *oom)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * elem);
    if (!q) {
        *oom = true;
        return p;
    }
    *cap = c;
    return q;
}

static void emit(struct jbuf *b, const void *bytes, size_t n)
{
    b->p = grow(b->p, &b->cap, b->len + n, 1, &b->oom);
    if (b->oom)
        return;
    memcpy(b->p + b->len, bytes, n);
    b->len += n;
}

static void emit1(struct jbuf *b, uint8_t v) { emit(b, &v, 1); }
static void emit2(struct jbuf *b, uint16_t v) { emit(b, &v, 2); }
static void emit4(struct jbuf *b, uint32_t v) { emit(b, &v, 4); }
static void emit8(struct jbuf *b, uint64_t v) { emit(b, &v, 8); }

static void rex(struct jbuf *b, int fl, int reg, int rm)
{
    uint8_t r = (uint8_t)(0x40 | (fl & F_W ? 8 : 0) | (reg >> 3) << 2 | (rm >> 3));
    if (r != 0x40 || (fl & F_BYTE))
        emit1(b, r);
}

static void prefix(struct jbuf *b, int fl, uint8_t op, int reg, int rm)
{
    if (fl & F_66)
        emit1(b, 0x66);
    rex(b, fl, reg, rm);
    if (fl & F_0F)
        emit1(b, 0x0f);
    emit1(b, op);
}

/* op with a register operand: ModRM reg field `reg`, r/m register `rm`. */
static void enc_rr(struct jbuf *b, int fl, uint8_t op, int reg, int rm)
{
    prefix(b, fl, op, reg, rm);
    emit1(b, (uint8_t)(0xc0 | (reg & 7) << 3 | (rm & 7)));
}

/* op with a memory operand [base + disp32]. */
static void enc_rm(struct jbuf *b, int fl, uint8_t op, int reg, int base, int32_t disp)
{
    prefix(b, fl, op, reg, base);
    emit1(b, (uint8_t)(0x80 | (reg & 7) << 3 | (base & 7)));
    if ((base & 7) == RSP)
        emit1(b, 0x24);
    emit4(b, (uint32_t)disp);
}

static void mov_rr(struct jbuf *b, int dst, int src) { enc_rr(b, F_W, 0x89, src, dst); }
static void mov32_rr(struct jbuf *b, int dst, int src) { enc_rr(b, 0, 0x89, src, dst); }

static void mov_imm64(struct jbuf *b, int dst, uint64_t v)
{
    rex(b, F_W, 0, dst);
    emit1(b, (uint8_t)(0xb8 | (dst & 7)));
    emit8(b, v);
}

static void push(struct jbuf *b, int r)
{
    if (r >= 8)
        emit1(b, 0x41);
    emit1(b, (uint8_t)(0x50 | (r & 7)));
}

static void pop(struct jbuf *b, int r)
{
    if (r >= 8)
        emit1(b, 0x41);
    emit1(b, (uint8_t)(0x58 | (r & 7)));
}

/* op r/m, imm (group 1: digit 0 add, 1 or, 4 and, 5 sub, 6 xor, 7 cmp);
 * the sign-extended imm8 form when the constant fits. */
static void alu_ri(struct jbuf *b, int fl, int digit, int rm, int32_t imm)
{
    if (imm >= -128 && imm <= 127) {
        enc_rr(b, fl, 0x83, digit, rm);
        emit1(b, (uint8_t)imm);
        return;
    }
    enc_rr(b, fl, 0x81, digit, rm);
    emit4(b, (uint32_t)imm);
}

/* Jcc / JMP / CALL rel32 with a zero displacement; returns the offset just
 * past it, for patch(). */
static uint32_t jcc32(struct jbuf *b, int cc)
{
    emit1(b, 0x0f);
    emit1(b, (uint8_t)(0x80 | cc));
    emit4(b, 0);
    return (uint32_t)b->len;
}

static uint32_t jmp32(struct jbuf *b, uint8_t op)
{
    emit1(b, op);
    emit4(b, 0);
    return (uint32_t)b->len;
}

static void patch(struct jbuf *b, uint32_t end, size_t target)
{
    if (b->oom)
        return;
    int32_t rel = (int32_t)((int64_t)target - (int64_t)end);
    memcpy(b->p + end - 4, &rel, 4);
}

static void fixup_to(struct jbuf *b, uint32_t end, uint32_t target, bool fast)
{
    b->fx = grow(b->fx, &b->capfx, b->nfx + 1, sizeof(*b->fx), &b->oom);
    if (!b->oom)
        b->fx[b->nfx++] = (struct fixup){end, target, fast};
}

/* A jump to pc `target` (or OUT_LABEL): inside the loop being copied
 * unchecked, to that copy's code. */
static void fixup(struct jbuf *b, uint32_t end, uint32_t target)
{
    fixup_to(b, end, target, b->fast && target >= b->lo && target <= b->hi);
}

/* A conditional jump to an out-of-line stub that ends the run. */
static void jcc_stub(struct jbuf *b, int cc, uint8_t kind, uint32_t pc)
{
    uint32_t end = jcc32(b, cc);
    b->st = grow(b->st, &b->capst, b->nst + 1, sizeof(*b->st), &b->oom);
    if (!b->oom)
        b->st[b->nst++] = (struct stub){pc, kind, end};
}

/* Brings the pending count to `to` on the current path (r12 -= the
 * difference, which may be negative). Clobbers the flags when it emits. */
static void settle(struct jbuf *b, uint32_t to)
{
    if (b->dyn && to == 0 && b->pend) {   /* one sub on r12's chain: lea r11, [r10 + pend] */
        enc_rm(b, F_W, 0x8d, R11, R10, (int32_t)b->pend);
        enc_rr(b, F_W, 0x29, R11, LEFT);
        b->dyn = false;
        b->pend = 0;
        return;
    }
    if (b->dyn)
        enc_rr(b, F_W, 0x29, R10, LEFT);   /* sub r12, r10 */
    b->dyn = false;
    if (b->pend != to)
        alu_ri(b, F_W, 5, LEFT, (int32_t)((int64_t)b->pend - (int64_t)to));
    b->pend = to;
}

/* Subtracts the if-converted count in r10 (invariant 4), if any. */
static void drop_dyn(struct jbuf *b)
{
    settle(b, b->pend);
}

/* Subtracts the whole pending instruction count from r12. */
static void flush(struct jbuf *b)
{
    settle(b, 0);
}

/* Makes the current path arrive at pc t with t's carried count: the
 * first edge emitted into t fixes it (invariant 1). */
static void carry_into(struct jbuf *b, uint32_t t)
{
    drop_dyn(b);   /* r10 is this path's own */
    if (b->carry[t] < 0)
        b->carry[t] = b->pend;
    else
        settle(b, (uint32_t)b->carry[t]);
}

/* Pads with multi-byte NOPs to a multiple of `to` bytes (a power of 2):
 * loop heads start a fetch block, so a short loop's branches do not
 * straddle one. */
static void align(struct jbuf *b, size_t to)
{
    static const uint8_t nops[9][9] = {
        {0x90}, {0x66, 0x90}, {0x0f, 0x1f, 0x00}, {0x0f, 0x1f, 0x40, 0x00},
        {0x0f, 0x1f, 0x44, 0x00, 0x00}, {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
        {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
        {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}};
    size_t pad = (to - b->len % to) % to;
    while (pad) {
        size_t n = pad < 9 ? pad : 9;
        emit(b, nops[n - 1], n);
        pad -= n;
    }
}

/* Enters jump target pc: the fall-through edge, when there is one,
 * settles to pc's carried count (its code is the previous pc's). */
static void enter_target(struct jbuf *b, uint32_t pc)
{
    if (b->dead && b->carry[pc] >= 0)
        b->pend = (uint32_t)b->carry[pc], b->dyn = false;
    else
        carry_into(b, pc);
}

/* The budget check of the interpreter: count > budget means r12 < 0.
 * Flushes first; the flush's own `sub` sets the sign flag, so the test
 * is only emitted when there was nothing to subtract. */
static void budget_check(struct jbuf *b, uint32_t pc)
{
    if (b->pend || b->dyn)
        flush(b);
    else
        enc_rr(b, F_W, 0x85, LEFT, LEFT);
    jcc_stub(b, CC_S, VM_JIT_BUDGET, pc);
}

/* ------------------------------------------------------------------ */
/* ALU                                                                 */
/* ------------------------------------------------------------------ */

/* Group-1 ALU ops: opcode of `op r/m, r` and digit of `op r/m, imm32`. */
static bool group1(int base, uint8_t *opx, int *digit)
{
    switch (base) {
    case XOP_ADD64_K: *opx = 0x01; *digit = 0; return true;
    case XOP_SUB64_K: *opx = 0x29; *digit = 5; return true;
    case XOP_OR64_K: *opx = 0x09; *digit = 1; return true;
    case XOP_AND64_K: *opx = 0x21; *digit = 4; return true;
    case XOP_XOR64_K: *opx = 0x31; *digit = 6; return true;
    default: return false;
    }
}

static int shift_digit(int base)
{
    return base == XOP_LSH64_K ? 4 : base == XOP_RSH64_K ? 5 : 7;
}

/* dst <<= src (or >>, sar) where the count must be in cl. */
static void shift_x(struct jbuf *b, int fl, int digit, int dst, int src)
{
    if (src == RCX) {
        enc_rr(b, fl, 0xd3, digit, dst);
        return;
    }
    mov_rr(b, R11, RCX);
    mov_rr(b, RCX, src);
    if (dst == RCX) {
        enc_rr(b, fl, 0xd3, digit, R11);
        mov_rr(b, RCX, R11);
    } else {
        enc_rr(b, fl, 0xd3, digit, dst);
        mov_rr(b, RCX, R11);
    }
}

/* DIV/SDIV/MOD/SMOD with RFC 9669's results for 0 and -1 divisors. The
 * divisor is in src (a register) or imm. */
static void divide(struct jbuf *b, int fl, bool sign, bool mod, int dst, int src, bool k,
                   int32_t imm)
{
    drop_dyn(b);   /* r10 is scratch here */
    push(b, RAX);
    push(b, RDX);
    if (k)
        enc_rr(b, F_W, 0xc7, 0, R11), emit4(b, (uint32_t)imm);
    else
        mov_rr(b, R11, src);
    mov_rr(b, RAX, dst);
    enc_rr(b, fl, 0x85, R11, R11);
    uint32_t zero = jcc32(b, CC_E);
    uint32_t neg1 = 0;
    if (sign) {
        alu_ri(b, fl, 7, R11, -1);
        neg1 = jcc32(b, CC_E);
        if (fl & F_W)   /* cqo, else cdq */
            emit1(b, 0x48);
        emit1(b, 0x99);
        enc_rr(b, fl, 0xf7, 7, R11);   /* idiv */
    } else {
        enc_rr(b, 0, 0x31, RDX, RDX);
        enc_rr(b, fl, 0xf7, 6, R11);   /* div */
    }
    enc_rr(b, fl, 0x89, mod ? RDX : RAX, R10);
    uint32_t done1 = jmp32(b, 0xe9);
    patch(b, zero, b->len);   /* divisor 0: quotient 0, remainder dst */
    if (mod)
        enc_rr(b, fl, 0x89, RAX, R10);
    else
        enc_rr(b, 0, 0x31, R10, R10);
    uint32_t done2 = jmp32(b, 0xe9);
    if (sign) {
        patch(b, neg1, b->len);   /* divisor -1: quotient -dst, remainder 0 */
        if (mod) {
            enc_rr(b, 0, 0x31, R10, R10);
        } else {
            enc_rr(b, fl, 0x89, RAX, R10);
            enc_rr(b, fl, 0xf7, 3, R10);
        }
    }
    patch(b, done1, b->len);
    patch(b, done2, b->len);
    pop(b, RDX);
    pop(b, RAX);
    mov_rr(b, dst, R10);
    enc_rr(b, 0, 0x31, R10, R10);   /* invariant 4 */
}

/* Binary ALU op `base` (the 64_K member of its family) with variant v
 * (0 64_K, 1 64_X, 2 32_K, 3 32_X). */
static void alu_bin(struct jbuf *b, int base, int v, const struct vm_dinsn *d)
{
    int fl = v < 2 ? F_W : 0;
    bool k = !(v & 1);
    int dst = reg_of[d->dst], src = k ? 0 : reg_of[d->src];
    uint8_t opx;
    int digit;

    if (group1(base, &opx, &digit)) {
        if (k)
            alu_ri(b, fl, digit, dst, d->imm);
        else
            enc_rr(b, fl, opx, src, dst);
    } else if (base == XOP_MOV64_K) {
        if (k)
            enc_rr(b, fl, 0xc7, 0, dst), emit4(b, (uint32_t)d->imm);
        else
            enc_rr(b, fl, 0x89, src, dst);
    } else if (base == XOP_MUL64_K) {
        if (k)
            enc_rr(b, fl, 0x69, dst, dst), emit4(b, (uint32_t)d->imm);
        else
            enc_rr(b, fl | F_0F, 0xaf, dst, src);
    } else if (base == XOP_LSH64_K || base == XOP_RSH64_K || base == XOP_ARSH64_K) {
        if (k)
            enc_rr(b, fl, 0xc1, shift_digit(base), dst), emit1(b, (uint8_t)(d->imm & (fl ? 63 : 31)));
        else
            shift_x(b, fl, shift_digit(base), dst, src);
        if (!fl)
            mov32_rr(b, dst, dst);   /* a count of 0 leaves the upper half alone */
    } else {
        bool sign = base == XOP_SDIV64_K || base == XOP_SMOD64_K;
        bool mod = base == XOP_MOD64_K || base == XOP_SMOD64_K;
        divide(b, fl, sign, mod, dst, src, k, d->imm);
    }
}

static void alu_misc(struct jbuf *b, const struct vm_dinsn *d)
{
    int dst = reg_of[d->dst], src = d->src <= VM_REG_FP ? reg_of[d->src] : 0;
    switch (d->op) {
    case XOP_NEG64: enc_rr(b, F_W, 0xf7, 3, dst); break;
    case XOP_NEG32: enc_rr(b, 0, 0xf7, 3, dst); break;
    case XOP_MOVSX64_8: enc_rr(b, F_W | F_0F, 0xbe, dst, src); break;
    case XOP_MOVSX64_16: enc_rr(b, F_W | F_0F, 0xbf, dst, src); break;
    case XOP_MOVSX64_32: enc_rr(b, F_W, 0x63, dst, src); break;
    case XOP_MOVSX32_8: enc_rr(b, F_BYTE | F_0F, 0xbe, dst, src); break;
    case XOP_MOVSX32_16: enc_rr(b, F_0F, 0xbf, dst, src); break;
    case XOP_LE16: enc_rr(b, F_0F, 0xb7, dst, dst); break;
    case XOP_LE32: mov32_rr(b, dst, dst); break;
    case XOP_LE64: break;
    case XOP_BE16:
    case XOP_BSWAP16:
        enc_rr(b, F_66, 0xc1, 0, dst), emit1(b, 8);   /* rol r16, 8 */
        enc_rr(b, F_0F, 0xb7, dst, dst);
        break;
    case XOP_BE32:
    case XOP_BSWAP32:
    case XOP_BE64:
    case XOP_BSWAP64:
        rex(b, d->op == XOP_BE64 || d->op == XOP_BSWAP64 ? F_W : 0, 0, dst);
        emit1(b, 0x0f);
        emit1(b, (uint8_t)(0xc8 | (dst & 7)));
        break;
    default: break;
    }
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

static void load(struct jbuf *b, const struct vm_dinsn *d)
{
    int dst = reg_of[d->dst], base = reg_of[d->src];
    int32_t off = (int32_t)d->aux.u64;
    switch (d->op) {
    case XOP_LDXB: enc_rm(b, F_0F, 0xb6, dst, base, off); break;
    case XOP_LDXH: enc_rm(b, F_0F, 0xb7, dst, base, off); break;
    case XOP_LDXW: enc_rm(b, 0, 0x8b, dst, base, off); break;
    case XOP_LDXDW: enc_rm(b, F_W, 0x8b, dst, base, off); break;
    case XOP_LDXSB: enc_rm(b, F_W | F_0F, 0xbe, dst, base, off); break;
    case XOP_LDXSH: enc_rm(b, F_W | F_0F, 0xbf, dst, base, off); break;
    default: enc_rm(b, F_W, 0x63, dst, base, off); break;   /* LDXSW */
    }
}

static void store(struct jbuf *b, const struct vm_dinsn *d)
{
    int base = reg_of[d->dst], src = reg_of[d->src <= VM_REG_FP ? d->src : 0];
    int32_t off = (int32_t)d->aux.u64;
    switch (d->op) {
    case XOP_STB: enc_rm(b, 0, 0xc6, 0, base, off), emit1(b, (uint8_t)d->imm); break;
    case XOP_STH: enc_rm(b, F_66, 0xc7, 0, base, off), emit2(b, (uint16_t)d->imm); break;
    case XOP_STW: enc_rm(b, 0, 0xc7, 0, base, off), emit4(b, (uint32_t)d->imm); break;
    case XOP_STDW: enc_rm(b, F_W, 0xc7, 0, base, off), emit4(b, (uint32_t)d->imm); break;
    case XOP_STXB: enc_rm(b, F_BYTE, 0x88, src, base, off); break;
    case XOP_STXH: enc_rm(b, F_66, 0x89, src, base, off); break;
    case XOP_STXW: enc_rm(b, 0, 0x89, src, base, off); break;
    default: enc_rm(b, F_W, 0x89, src, base, off); break;   /* STXDW */
    }
}

/* FOR/FAND/FXOR: a cmpxchg loop; r11 = address, r10 = saved r0, r9 the
 * new value (ctl pointer pushed meanwhile). */
static void atomic_fetch_loop(struct jbuf *b, int fl, uint8_t opx, int base, int src,
                              int32_t off)
{
    int s = src == RAX ? R10 : src;
    drop_dyn(b);   /* r10 is scratch here */
    push(b, CTL);
    enc_rm(b, F_W, 0x8d, R11, base, off);
    mov_rr(b, R10, RAX);
    enc_rm(b, fl, 0x8b, RAX, R11, 0);
    size_t loop = b->len;
    mov_rr(b, CTL, RAX);
    enc_rr(b, fl, opx, s, CTL);
    emit1(b, 0xf0);
    enc_rm(b, fl | F_0F, 0xb1, CTL, R11, 0);
    patch(b, jcc32(b, CC_NE), loop);
    if (src == RAX) {
        if (!(fl & F_W))
            mov32_rr(b, RAX, RAX);
    } else {
        enc_rr(b, fl, 0x89, RAX, src);
        mov_rr(b, RAX, R10);
    }
    enc_rr(b, 0, 0x31, R10, R10);   /* invariant 4 */
    pop(b, CTL);
}

static void atomic(struct jbuf *b, const struct vm_dinsn *d)
{
    int rel = d->op - XOP_AADD32;
    int fl = rel & 1 ? F_W : 0;
    int kind = rel / 2;   /* order of VM_ATOMICS */
    int base = reg_of[d->dst], src = reg_of[d->src];
    int32_t off = (int32_t)d->aux.u64;
    static const uint8_t opx[4] = {0x01, 0x09, 0x21, 0x31};

    if (kind < 4) {   /* AADD AOR AAND AXOR */
        emit1(b, 0xf0);
        enc_rm(b, fl, opx[kind], src, base, off);
    } else if (kind == 4) {   /* FADD */
        emit1(b, 0xf0);
        enc_rm(b, fl | F_0F, 0xc1, src, base, off);
    } else if (kind < 8) {
        atomic_fetch_loop(b, fl, opx[kind - 4], base, src, off);
    } else if (kind == 8) {   /* XCHG */
        enc_rm(b, fl, 0x87, src, base, off);
    } else {   /* CMPXCHG */
        emit1(b, 0xf0);
        enc_rm(b, fl | F_0F, 0xb1, src, base, off);
        if (!fl)
            mov32_rr(b, RAX, RAX);
    }
}

/* ------------------------------------------------------------------ */
/* Control flow                                                        */
/* ------------------------------------------------------------------ */

static int cond_cc(int base)
{
    switch (base) {
    case XOP_JEQ_K: return CC_E;
    case XOP_JNE_K: return CC_NE;
    case XOP_JGT_K: return CC_A;
    case XOP_JGE_K: return CC_AE;
    case XOP_JLT_K: return CC_B;
    case XOP_JLE_K: return CC_BE;
    case XOP_JSET_K: return CC_NE;
    case XOP_JSGT_K: return CC_G;
    case XOP_JSGE_K: return CC_GE;
    case XOP_JSLT_K: return CC_L;
    default: return CC_LE;   /* JSLE */
    }
}

/* Jump to pc `t` from pc `pc` when cc holds (-1: always); the flags of
 * the compare are live. A forward jump was given t's carried count by
 * the caller (before the compare). A backward jump flushes the count and
 * checks the budget on the taken path only, as the interpreter does; the
 * fall-through keeps its pending count. */
static void jump_to(struct jbuf *b, int cc, uint32_t pc, uint32_t t)
{
    if (t > pc) {
        fixup(b, cc < 0 ? jmp32(b, 0xe9) : jcc32(b, cc), t);
        return;
    }
    uint32_t skip = cc < 0 ? 0 : jcc32(b, cc ^ 1);
    uint32_t pend = b->pend;
    bool dyn = b->dyn;
    budget_check(b, pc);
    fixup(b, jmp32(b, 0xe9), t);
    if (cc >= 0) {
        patch(b, skip, b->len);
        b->pend = pend;
        b->dyn = dyn;
    }
}

static uint32_t target_pc(const struct vm_exec *x, const struct vm_dinsn *d)
{
    return (uint32_t)(d->aux.target - x->code);
}

/* Emits the compare of conditional jump d; returns the condition code
 * that holds when the jump is taken. */
static int compare(struct jbuf *b, const struct vm_dinsn *d)
{
    int rel = d->op - XOP_JEQ_K, base = XOP_JEQ_K + rel / 4 * 4, v = rel % 4;
    int fl = v < 2 ? F_W : 0;
    bool k = !(v & 1);
    int dst = reg_of[d->dst];
    bool jset = base == XOP_JSET_K;

    if (k && jset)
        enc_rr(b, fl, 0xf7, 0, dst), emit4(b, (uint32_t)d->imm);
    else if (k)
        alu_ri(b, fl, 7, dst, d->imm);
    else
        enc_rr(b, fl, jset ? 0x85 : 0x39, reg_of[d->src], dst);
    return cond_cc(base);
}

static bool is_cond(int op)
{
    return op >= XOP_JEQ_K && op <= XOP_JSLE32_X;
}

/* An instruction that neither jumps, calls, ends the run nor has stubs. */
static bool is_plain(int op)
{
    return (op >= XOP_ADD64_K && op <= XOP_BSWAP64) || (op >= XOP_LDXB && op <= XOP_CMPXCHG64);
}

/* Whether the jump at pc to t skips one plain instruction nothing else
 * jumps to: that instruction is then emitted out of line (cold_skip). */
static bool skips_plain(const struct jbuf *b, const struct vm_exec *x, uint32_t pc, uint32_t t)
{
    return t == pc + 2 && !b->targets[pc + 1] && is_plain(x->code[pc + 1].op);
}

/* A forward jump at pc over one plain instruction (`if (!c) n++`, a
 * clamp): the instruction moves out of line, so the path that skips it
 * runs straight on without a taken branch. The moved path pays a jump
 * there and back, and its own count (invariant 1). */
static bool cold_skip(struct jbuf *b, const struct vm_exec *x, const struct vm_dinsn *d,
                      uint32_t pc, uint32_t t)
{
    if (!skips_plain(b, x, pc, t))
        return false;
    b->cold = grow(b->cold, &b->capcold, b->ncold + 1, sizeof(*b->cold), &b->oom);
    if (b->oom)
        return false;
    carry_into(b, t);
    uint32_t end = jcc32(b, compare(b, d) ^ 1);
    b->cold[b->ncold++] = (struct cold){pc + 1, end, b->pend, b->fast, 0};
    b->skip = pc + 1;
    return true;
}

/* Whether d is an ALU instruction if_convert() computes into r11 and
 * commits with a cmov: no side effects, no fault, no stubs. */
static bool convertible(const struct vm_dinsn *d)
{
    if (d->op < XOP_ADD64_K || d->op > XOP_MOV32_X)
        return false;
    int base = XOP_ADD64_K + (d->op - XOP_ADD64_K) / 4 * 4;
    uint8_t opx;
    int digit;
    return group1(base, &opx, &digit) || base == XOP_MOV64_K || base == XOP_MUL64_K;
}

/* +1 or -1 when d adds that constant to a 64-bit register (`n++`,
 * `n--`): if_convert() adds the setcc result itself. 0 otherwise. */
static int unit_step(const struct vm_dinsn *d)
{
    int sign = d->op == XOP_ADD64_K ? 1 : d->op == XOP_SUB64_K ? -1 : 0;
    return d->imm == 1 || d->imm == -1 ? sign * d->imm : 0;
}

/* r11 = the value instruction d would leave in its destination (a
 * convertible() one), computed without writing any BPF register. */
static void result_into_r11(struct jbuf *b, const struct vm_dinsn *d)
{
    int rel = d->op - XOP_ADD64_K, base = XOP_ADD64_K + rel / 4 * 4, v = rel % 4;
    int fl = v < 2 ? F_W : 0;
    bool k = !(v & 1);
    int dst = reg_of[d->dst], src = k ? 0 : reg_of[d->src];
    uint8_t opx = 0;
    int digit = 0;

    if (base == XOP_MOV64_K) {
        if (k)
            enc_rr(b, fl, 0xc7, 0, R11), emit4(b, (uint32_t)d->imm);
        else
            enc_rr(b, fl, 0x89, src, R11);
    } else if (base == XOP_MUL64_K && k) {
        enc_rr(b, fl, 0x69, R11, dst), emit4(b, (uint32_t)d->imm);
    } else {
        mov_rr(b, R11, dst);
        if (base == XOP_MUL64_K)
            enc_rr(b, fl | F_0F, 0xaf, R11, src);
        else if (group1(base, &opx, &digit), k)
            alu_ri(b, fl, digit, R11, d->imm);
        else
            enc_rr(b, fl, opx, src, R11);
    }
}

/* If-conversion of a forward jump at pc over one convertible instruction
 * (`if (c != '\n') goto +1; n++`, clang's select `r0 = a; if (a > b) goto
 * +1; r0 = b`, a clamp `if (a < m) goto +1; a -= m`): no branch at all.
 * The result is computed from the old values and the compare reads them
 * too, so the instruction may write a register the jump tests. (A clamp
 * is often one way, but not always: adler32's second sum wraps every
 * other byte, and out of line it cost 1.5x native C, which cmovs both.)
 * The instruction's result is computed into r11 and moved into its
 * register by a cmov on the fall-through condition; `n += 1` adds the
 * setcc result instead. Its count is the same setcc result, left in r10
 * for the next settle() (invariant 4), so every count stays exact: the
 * skipped pc counts only on the path that runs it. */
static bool if_convert(struct jbuf *b, const struct vm_exec *x, const struct vm_dinsn *d,
                       uint32_t pc, uint32_t t)
{
    const struct vm_dinsn *s = &x->code[pc + 1];
    if (!skips_plain(b, x, pc, t) || !convertible(s))
        return false;
    int step = unit_step(s), dst = reg_of[s->dst];
    drop_dyn(b);   /* before the compare: clobbers the flags */
    if (!step)
        result_into_r11(b, s);
    int runs = compare(b, d) ^ 1;
    enc_rr(b, F_BYTE | F_0F, (uint8_t)(0x90 | runs), 0, R10);   /* setcc r10b: r10 = ran */
    if (step)
        enc_rr(b, F_W, step > 0 ? 0x01 : 0x29, R10, dst);
    else
        enc_rr(b, F_W | F_0F, (uint8_t)(0x40 | runs), dst, R11);   /* cmovcc dst, r11 */
    b->dyn = true;   /* r12 -= r10 at the next settle */
    b->skip = pc + 1;
    b->targets[t]--;   /* no jump lands on t from here any more */
    return true;
}

/* r11 = rb - ra of loop l's test (its rounds, when ra < rb). */
static void rounds_into_r11(struct jbuf *b, const struct vm_jit_loop *l)
{
    if (l->rb_imm)
        enc_rr(b, F_W, 0xc7, 0, R11), emit4(b, (uint32_t)l->imm);
    else
        mov_rr(b, R11, reg_of[l->rb]);
    enc_rr(b, F_W, 0x29, reg_of[l->ra], R11);
}

/* imul r11, r11, <the unchecked copy's count per round>, patched when
 * the copy is complete. */
static void times_per_round(struct jbuf *b)
{
    enc_rr(b, F_W, 0x69, R11, R11), emit4(b, 0);
    b->perp = grow(b->perp, &b->capperp, b->nperp + 1, sizeof(*b->perp), &b->oom);
    if (!b->oom)
        b->perp[b->nperp++] = (uint32_t)b->len - 4;
}

/* The path of an early exit at pc from the counted loop being copied
 * unchecked: gives back the count charged on entry for the rounds not
 * run, the current one included (jit_loop.h invariant 1), then arrives
 * at t with t's carried count. */
static void refund_and_leave(struct jbuf *b, uint32_t pc, uint32_t t)
{
    rounds_into_r11(b, b->loop);
    if (pc > b->loop->step)
        alu_ri(b, F_W, 0, R11, 1);
    times_per_round(b);
    enc_rr(b, F_W, 0x01, R11, LEFT);   /* add r12, r11 */
    carry_into(b, t);
    fixup(b, jmp32(b, 0xe9), t);
}

/* A jump at pc out of the counted loop being copied unchecked, taken when
 * cc holds (-1: always). A conditional one jumps to its exit path out of
 * line, emitted with the loop's copy (counted_loop), so staying in the
 * loop costs no taken branch. */
static void leave_counted(struct jbuf *b, int cc, uint32_t pc, uint32_t t)
{
    if (cc < 0) {
        refund_and_leave(b, pc, t);
        return;
    }
    b->exits = grow(b->exits, &b->capexits, b->nexits + 1, sizeof(*b->exits), &b->oom);
    if (!b->oom)
        b->exits[b->nexits++] = (struct cold){pc, jcc32(b, cc), b->pend, b->dyn, t};
}

/* The back-edge of a bottom-tested counted loop, in its unchecked copy:
 * the round's count was charged on entry; the last round falls through
 * to pc + 1 in the state the ordinary copy's fall-through has there. */
static void counted_back_edge(struct jbuf *b, const struct vm_exec *x, const struct vm_dinsn *d,
                              uint32_t pc, uint32_t t)
{
    bool dyn = b->dyn;
    drop_dyn(b);
    b->fast_p = b->pend;
    uint32_t round = b->pend;
    b->pend = 0;
    fixup(b, jcc32(b, compare(b, d)), t);
    if (b->targets[pc + 1]) {
        carry_into(b, pc + 1);
    } else {
        settle(b, round);
        if (dyn)
            enc_rr(b, 0, 0x31, R10, R10), b->dyn = true;   /* counted already */
    }
    fixup(b, jmp32(b, 0xe9), pc + 1);
    b->dead = true;
}

static void cond(struct jbuf *b, const struct vm_exec *x, const struct vm_dinsn *d,
                 uint32_t pc, uint32_t t)
{
    if (t > pc && (if_convert(b, x, d, pc, t) || cold_skip(b, x, d, pc, t)))
        return;
    if (b->fast && t > b->hi && (pc != b->lo || b->loop->bottom)) {   /* not the head's test */
        leave_counted(b, compare(b, d), pc, t);
        return;
    }
    if (b->fast && pc == b->hi && t <= pc) {
        counted_back_edge(b, x, d, pc, t);
        return;
    }
    if (t > pc)
        carry_into(b, t);   /* before the compare: it may emit a sub */
    jump_to(b, compare(b, d), pc, t);
}

/* A backward ja at pc to a loop head t that is a forward conditional jump
 * (to e): after the budget check the head's compare is repeated here, so
 * each round takes one branch (to t + 1) instead of a jmp to t and a
 * branch not taken there. The counts match the path through t: the head
 * counts one instruction, and each edge arrives with the pend its target
 * expects. Returns false (nothing emitted) when the head is not such a
 * jump. */
static bool rotated_back_edge(struct jbuf *b, const struct vm_exec *x, uint32_t pc,
                              uint32_t t)
{
    const struct vm_dinsn *h = &x->code[t];
    if (!is_cond(h->op) || t + 1 >= pc)
        return false;
    uint32_t e = target_pc(x, h);
    if (e <= t || b->carry[e] < 0 || skips_plain(b, x, t, e))
        return false;   /* t + 1 of a skipping head is out of line */
    uint32_t cont = (uint32_t)(b->targets[t + 1] ? b->carry[t + 1] : b->carry[e]);
    if (b->fast) {   /* counted loop: the static count was charged on entry */
        drop_dyn(b);
        b->fast_p = b->pend;
        b->pend = 0;
    } else {
        budget_check(b, pc);
    }
    b->pend = 1;   /* the head */
    settle(b, cont);
    int cc = compare(b, h);
    fixup(b, jcc32(b, cc ^ 1), t + 1);
    settle(b, (uint32_t)b->carry[e]);
    fixup(b, jmp32(b, 0xe9), e);
    return true;
}

/* The trampoline generated code calls for a helper: the same steps as the
 * interpreter's vm_helper_call() in fast mode. */
static uint64_t jit_helper(struct vm_jit_ctl *c, uint64_t r1, uint64_t r2, uint64_t r3,
                           uint64_t r4, uint64_t r5)
{
    struct vm_env *env = c->env;
    if (!env->state) {
        memset(c->state_area, 0, VM_STATE_SIZE);
        env->state = c->state_area;
        c->own_state = true;
    }
    env->charge = 0;
    uint64_t r0 = c->helper->fn(env, r1, r2, r3, r4, r5);
    c->charge = env->charge;
    return r0;
}

/* A callx's trampoline: the helper named by the number the generated code
 * stored in c->callx (vm_helper_callx(), as the interpreter), or the
 * callx_bad flag, which the code tests on return. */
static uint64_t jit_helperx(struct vm_jit_ctl *c, uint64_t r1, uint64_t r2, uint64_t r3,
                            uint64_t r4, uint64_t r5)
{
    const struct vm_helper *h = vm_helper_callx(c->callx);
    if (!h) {
        c->callx_bad = 1;
        c->charge = 0;
        return 0;
    }
    c->helper = h;
    return jit_helper(c, r1, r2, r3, r4, r5);
}

/* A helper call: d's helper (XOP_CALL_HELPER), or the one whose number is
 * in d's dst (XOP_CALLX). */
static void call_helper(struct jbuf *b, const struct vm_dinsn *d, uint32_t pc)
{
    bool x = d->op == XOP_CALLX;
    if (x) {
        enc_rm(b, F_W, 0x89, reg_of[d->dst], CTL, CTL_OFF(callx));
    } else {
        mov_imm64(b, R10, (uint64_t)(uintptr_t)d->aux.helper);
        enc_rm(b, F_W, 0x89, R10, CTL, CTL_OFF(helper));
    }
    push(b, CTL);
    push(b, CTL);   /* keeps the stack 16-byte aligned */
    mov_rr(b, R10, CTL);
    mov_rr(b, R9, R8);
    mov_rr(b, R8, RCX);
    mov_rr(b, RCX, RDX);
    mov_rr(b, RDX, RSI);
    mov_rr(b, RSI, RDI);
    mov_rr(b, RDI, R10);
    mov_imm64(b, RAX, (uint64_t)(uintptr_t)(x ? jit_helperx : jit_helper));
    enc_rr(b, 0, 0xff, 2, RAX);
    pop(b, CTL);
    pop(b, CTL);
    if (x) {   /* cmp qword [ctl + callx_bad], 0; jne: named no helper */
        enc_rm(b, F_W, 0x83, 7, CTL, CTL_OFF(callx_bad));
        emit1(b, 0);
        jcc_stub(b, CC_NE, VM_JIT_CALLX, pc);
    }
    enc_rr(b, 0, 0x31, R10, R10);   /* invariant 4: the call clobbered it */
    enc_rm(b, F_W, 0x2b, LEFT, CTL, CTL_OFF(charge));   /* r12 -= charge */
    jcc_stub(b, CC_S, VM_JIT_BUDGET, pc);
}

static void call_local(struct jbuf *b, uint32_t pc, uint32_t t)
{
    enc_rm(b, F_W, 0x3b, RBP, CTL, CTL_OFF(fp_limit));
    jcc_stub(b, CC_BE, VM_JIT_DEPTH, pc);
    budget_check(b, pc);
    push(b, RBX);
    push(b, R13);
    push(b, R14);
    push(b, R15);
    alu_ri(b, F_W, 5, RSP, 8);
    alu_ri(b, F_W, 5, RBP, VM_STACK_SIZE);
    fixup(b, jmp32(b, 0xe8), t);
    alu_ri(b, F_W, 0, RBP, VM_STACK_SIZE);
    alu_ri(b, F_W, 0, RSP, 8);
    pop(b, R15);
    pop(b, R14);
    pop(b, R13);
    pop(b, RBX);
}

/* Index of the epilogue in the fixup list: a pseudo pc past the stubs. */
#define OUT_LABEL UINT32_MAX

static void exit_insn(struct jbuf *b)
{
    enc_rm(b, F_W, 0x3b, RBP, CTL, CTL_OFF(fp_top));
    uint32_t sub = jcc32(b, CC_NE);
    enc_rr(b, 0, 0x31, R10, R10);
    fixup(b, jmp32(b, 0xe9), OUT_LABEL);
    patch(b, sub, b->len);
    emit1(b, 0xc3);   /* return to the local call */
}

static void end_run(struct jbuf *b, uint8_t kind, uint32_t pc)
{
    enc_rm(b, 0, 0xc7, 0, CTL, CTL_OFF(fault_pc));
    emit4(b, pc);
    enc_rr(b, 0, 0xc7, 0, R10);
    emit4(b, kind);
    fixup(b, jmp32(b, 0xe9), OUT_LABEL);
}

static void insn(struct jbuf *b, const struct vm_exec *x, uint32_t pc)
{
    const struct vm_dinsn *d = &x->code[pc];
    int op = d->op;

    b->pend++;
    b->dead = op == XOP_JA || op == XOP_EXIT || op == XOP_INVALID || op == XOP_FALLOFF;
    if (op >= XOP_ADD64_K && op <= XOP_MOV32_X) {
        int rel = op - XOP_ADD64_K;
        alu_bin(b, XOP_ADD64_K + rel / 4 * 4, rel % 4, d);
    } else if (op >= XOP_NEG64 && op <= XOP_BSWAP64) {
        alu_misc(b, d);
    } else if (op == XOP_JA && b->fast && target_pc(x, d) > b->hi) {
        leave_counted(b, -1, pc, target_pc(x, d));
    } else if (op == XOP_JA) {
        uint32_t t = target_pc(x, d);
        if (t > pc)
            carry_into(b, t);
        if (t > pc || !rotated_back_edge(b, x, pc, t))
            jump_to(b, -1, pc, t);
    } else if (is_cond(op)) {
        cond(b, x, d, pc, target_pc(x, d));
    } else if (op == XOP_CALL_HELPER || op == XOP_CALLX) {
        flush(b);
        call_helper(b, d, pc);
    } else if (op == XOP_CALL_LOCAL) {
        flush(b);
        call_local(b, pc, target_pc(x, d));
    } else if (op == XOP_EXIT) {
        flush(b);
        exit_insn(b);
    } else if (op == XOP_LDDW) {
        mov_imm64(b, reg_of[d->dst], d->aux.u64);
    } else if (op >= XOP_LDXB && op <= XOP_LDXSW) {
        load(b, d);
    } else if (op >= XOP_STB && op <= XOP_STXDW) {
        store(b, d);
    } else if (op >= XOP_AADD32 && op <= XOP_CMPXCHG64) {
        atomic(b, d);
    } else {   /* INVALID, FALLOFF */
        flush(b);
        end_run(b, VM_JIT_INVALID, pc);
    }
}

/* Marks every pc some jump or local call lands on; carry[] gets 0 for
 * targets of backward jumps and calls, -1 (not fixed yet) elsewhere. */
static uint32_t *jump_targets(const struct vm_exec *x, int64_t *carry)
{
    uint32_t *t = calloc((size_t)x->n + 1, sizeof(*t));
    if (!t)
        return NULL;
    for (uint32_t pc = 0; pc <= x->n; pc++)
        carry[pc] = -1;
    for (uint32_t pc = 0; pc < x->n; pc++) {
        int op = x->code[pc].op;
        if (op == XOP_JA || op == XOP_CALL_LOCAL || (op >= XOP_JEQ_K && op <= XOP_JSLE32_X)) {
            uint32_t tg = target_pc(x, &x->code[pc]);
            t[tg]++;
            if (tg <= pc || op == XOP_CALL_LOCAL)
                carry[tg] = 0;
        }
    }
    return t;
}

static void prologue(struct jbuf *b)
{
    static const int saved[] = {RBP, RBX, R12, R13, R14, R15};
    for (unsigned i = 0; i < 6; i++)
        push(b, saved[i]);
    alu_ri(b, F_W, 5, RSP, 8);
    mov_rr(b, CTL, RDI);
    enc_rm(b, F_W, 0x89, RSP, CTL, CTL_OFF(saved_rsp));
    enc_rm(b, F_W, 0x8b, RDI, CTL, CTL_OFF(r1));
    enc_rm(b, F_W, 0x8b, RSI, CTL, CTL_OFF(r2));
    enc_rm(b, F_W, 0x8b, RBP, CTL, CTL_OFF(fp_top));
    enc_rm(b, F_W, 0x8b, LEFT, CTL, CTL_OFF(left));
    static const int zero[] = {RAX, RDX, RCX, R8, RBX, R13, R14, R15, R10};
    for (unsigned i = 0; i < 9; i++)
        enc_rr(b, 0, 0x31, zero[i], zero[i]);
}

static void epilogue(struct jbuf *b)
{
    enc_rm(b, F_W, 0x89, RAX, CTL, CTL_OFF(r0));
    enc_rm(b, F_W, 0x89, LEFT, CTL, CTL_OFF(left));
    mov32_rr(b, RAX, R10);
    enc_rm(b, F_W, 0x8b, RSP, CTL, CTL_OFF(saved_rsp));
    alu_ri(b, F_W, 0, RSP, 8);
    static const int saved[] = {R15, R14, R13, R12, RBX, RBP};
    for (unsigned i = 0; i < 6; i++)
        pop(b, saved[i]);
    emit1(b, 0xc3);
}

/* Emits the code of pc; off[pc] gets its native offset. */
static void emit_pc(struct jbuf *b, const struct vm_exec *x, uint32_t pc, uint32_t *off)
{
    const struct vm_dinsn *d = &x->code[pc];
    const uint32_t *targets = b->targets;
    bool slot2 = pc < x->n && d->op == XOP_INVALID && d->imm == VM_BAD_SLOT2;
    if (pc == b->skip) {   /* if-converted, or emitted out of line below */
        off[pc] = (uint32_t)b->len;
        return;
    }
    if (targets[pc])
        enter_target(b, pc);
    if (targets[pc] && b->carry[pc] == 0 && !b->dead)
        align(b, 32);   /* a loop head (or a call target, never fallen into) */
    off[pc] = (uint32_t)b->len;
    if (slot2 && !targets[pc])
        return;
    insn(b, x, pc);
    if (pc < x->n && d->op == XOP_LDDW && pc + 1 < x->n && targets[pc + 1]) {
        if (targets[pc + 2])
            carry_into(b, pc + 2);
        else
            flush(b);   /* pc + 1 ends the run: pc + 2 counts from 0 */
        fixup(b, jmp32(b, 0xe9), pc + 2);   /* over a jumped-into slot 2 */
        b->dead = true;
    }
}

/* Counted loop l (bpf/jit_loop.h), entered at its head with nothing
 * pending: when its rounds R = rb - ra (at least 1 for a bottom-tested
 * loop) satisfy R * cmax <= r12, no budget check inside it can fail, so an
 * unchecked copy runs: R times its static count per round is subtracted
 * on entry, its back-edge only takes the if-converted counts (invariant
 * 4), and an early exit gives back the rounds it did not run. Otherwise
 * (also when ra >= rb: R wraps) the ordinary copy that follows runs. */
static void counted_loop(struct jbuf *b, const struct vm_exec *x, const struct vm_jit_loop *l)
{
    b->heads = grow(b->heads, &b->capheads, b->nheads + 2, sizeof(*b->heads), &b->oom);
    if (b->oom)
        return;
    b->heads[b->nheads++] = l->head;
    b->heads[b->nheads++] = (uint32_t)b->len;
    rounds_into_r11(b, l);
    if (l->bottom)
        alu_ri(b, F_W, 5, R11, 1);   /* R - 1: a bottom-tested loop runs once at least */
    alu_ri(b, F_W, 7, R11, l->bottom ? INT32_MAX - 1 : INT32_MAX);
    uint32_t big = jcc32(b, CC_A);
    if (l->bottom)
        alu_ri(b, F_W, 0, R11, 1);
    enc_rr(b, F_W, 0x69, R11, R11), emit4(b, l->cmax);   /* imul r11, r11, cmax */
    enc_rr(b, F_W, 0x39, LEFT, R11);                      /* cmp r11, r12 */
    uint32_t over = jcc32(b, CC_G);
    rounds_into_r11(b, l);
    times_per_round(b);
    enc_rr(b, F_W, 0x29, R11, LEFT);
    /* both copies see the same jump counts: if-conversion lowers them */
    size_t n = l->back - l->head + 1;
    uint32_t *counts = malloc(n * sizeof(*counts));
    if (!counts) {
        b->oom = true;
        return;
    }
    memcpy(counts, b->targets + l->head, n * sizeof(*counts));
    b->fast = true;
    b->lo = l->head;
    b->hi = l->back;
    b->loop = l;
    b->fast_p = 0;
    for (uint32_t pc = l->head; pc <= l->back; pc++)
        emit_pc(b, x, pc, b->foff);
    for (size_t i = 0; i < b->nexits; i++) {
        const struct cold *e = &b->exits[i];
        patch(b, e->end, b->len);
        b->pend = e->pend;
        b->dyn = e->fast;
        refund_and_leave(b, e->pc, e->target);
    }
    b->nexits = 0;
    b->fast = false;
    memcpy(b->targets + l->head, counts, n * sizeof(*counts));
    free(counts);
    for (size_t i = 0; i < b->nperp && !b->oom; i++)
        memcpy(b->p + b->perp[i], &b->fast_p, 4);
    b->nperp = 0;
    patch(b, big, b->len);
    patch(b, over, b->len);
    b->pend = 0;
    b->dyn = false;
    b->dead = true;
    b->skip = UINT32_MAX;
}

/* counted[t] = 1 + the pc of the back-edge of a counted loop headed at t
 * (bpf/jit_loop.h), 0 elsewhere; NULL when out of memory. Judged on the
 * jump counts before if-conversion changes them. */
static uint32_t *counted_loops(const struct vm_exec *x, const uint32_t *targets)
{
    uint32_t *c = calloc((size_t)x->n + 1, sizeof(*c));
    struct vm_jit_loop l;
    for (uint32_t pc = 0; c && pc < x->n; pc++)
        if (vm_jit_counted_loop(x, targets, pc, &l))
            c[l.head] = pc + 1;
    return c;
}

/* Emits the whole program; off[] gets each pc's native offset. */
static int generate(struct jbuf *b, const struct vm_exec *x, uint32_t *off)
{
    b->carry = malloc(((size_t)x->n + 1) * sizeof(*b->carry));
    b->foff = calloc((size_t)x->n + 1, sizeof(*b->foff));
    uint32_t *targets = b->carry && b->foff ? jump_targets(x, b->carry) : NULL;
    uint32_t *counted = targets ? counted_loops(x, targets) : NULL;
    if (!counted) {
        free(targets);
        return -ENOMEM;
    }
    b->targets = targets;
    b->skip = UINT32_MAX;
    prologue(b);
    for (uint32_t pc = 0; pc <= x->n; pc++) {
        struct vm_jit_loop l;
        if (counted[pc] && pc != b->skip && !b->dead &&
            vm_jit_counted_loop(x, targets, counted[pc] - 1, &l)) {
            enter_target(b, pc);   /* pend 0: a loop head */
            counted_loop(b, x, &l);
        }
        emit_pc(b, x, pc, off);
    }
    free(counted);
    for (size_t i = 0; i < b->ncold; i++) {
        const struct cold *c = &b->cold[i];
        patch(b, c->end, b->len);
        b->pend = c->pend;
        b->dyn = false;   /* cold_skip's carry_into dropped it */
        insn(b, x, c->pc);
        settle(b, (uint32_t)b->carry[c->pc + 1]);
        fixup_to(b, jmp32(b, 0xe9), c->pc + 1, c->fast);
    }
    free(targets);
    b->targets = NULL;
    for (size_t i = 0; i < b->nst; i++) {
        patch(b, b->st[i].end, b->len);
        end_run(b, b->st[i].kind, b->st[i].pc);
    }
    size_t out = b->len;
    epilogue(b);
    for (size_t i = 0; i < b->nfx; i++) {
        const struct fixup *f = &b->fx[i];
        patch(b, f->end, f->target == OUT_LABEL ? out : f->fast ? b->foff[f->target] : off[f->target]);
    }
    for (size_t i = 0; i < b->nheads; i += 2)   /* shown with the loop's first pc */
        off[b->heads[i]] = b->heads[i + 1];
    return b->oom ? -ENOMEM : 0;
}

_Static_assert(offsetof(struct vm_jit_ctl, left) % 8 == 0, "ctl fields are aligned");

int vm_jit_compile(struct vm_prog *prog)
{
    if (!prog || !prog->verified || !prog->exec)
        return -ENOTSUP;
    if (prog->jit)
        return 0;
    const struct vm_exec *x = prog->exec;
    struct vm_jit *j = calloc(1, sizeof(*j));
    uint32_t *off = calloc((size_t)x->n + 1, sizeof(*off));
    struct jbuf b = {0};
    int rc = j && off ? generate(&b, x, off) : -ENOMEM;
    if (rc == 0) {
        long page = sysconf(_SC_PAGESIZE);
        size_t map = (b.len + (size_t)page - 1) / (size_t)page * (size_t)page;
        void *m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            rc = -ENOMEM;
        } else {
            memcpy(m, b.p, b.len);
            if (mprotect(m, map, PROT_READ | PROT_EXEC) != 0) {
                rc = -errno;
                munmap(m, map);
            } else {
                *j = (struct vm_jit){m, b.len, map, x->n, off};
                prog->jit = j;
            }
        }
    }
    free(b.p);
    free(b.fx);
    free(b.st);
    free(b.carry);
    free(b.cold);
    free(b.foff);
    free(b.perp);
    free(b.exits);
    free(b.heads);
    if (rc) {
        free(off);
        free(j);
    }
    return rc;
}

enum vm_jit_end vm_jit_exec(const struct vm_prog *prog, struct vm_jit_ctl *c)
{
    const struct vm_jit *j = prog->jit;
    int (*fn)(struct vm_jit_ctl *);
    void *code = j->code;
    memcpy(&fn, &code, sizeof(fn));
    return (enum vm_jit_end)fn(c);
}

#else   /* not x86-64: no JIT, the interpreter runs everything */

struct vm_jit {
    uint8_t *code;
    size_t size, map_size;
    uint32_t n;
    uint32_t *off;
};

int vm_jit_compile(struct vm_prog *prog)
{
    (void)prog;
    return -ENOTSUP;
}

enum vm_jit_end vm_jit_exec(const struct vm_prog *prog, struct vm_jit_ctl *c)
{
    (void)prog;
    (void)c;
    return VM_JIT_INVALID;
}

#endif

void vm_jit_free(struct vm_prog *prog)
{
    if (!prog || !prog->jit)
        return;
    struct vm_jit *j = prog->jit;
#if defined(__x86_64__)
    munmap(j->code, j->map_size);
#endif
    free(j->off);
    free(j);
    prog->jit = NULL;
}

size_t vm_jit_size(const struct vm_prog *prog)
{
    const struct vm_jit *j = prog ? prog->jit : NULL;
    return j ? j->size : 0;
}

int vm_jit_insn_code(const struct vm_prog *prog, uint32_t pc, const uint8_t **code,
                     size_t *len)
{
    const struct vm_jit *j = prog ? prog->jit : NULL;
    if (!j || pc >= j->n)
        return -ENOENT;
    *code = j->code + j->off[pc];
    *len = j->off[pc + 1] - j->off[pc];
    return 0;
}
