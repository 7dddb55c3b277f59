/*
 * bpf/prog.c - what every module may ask of a loaded program: free it,
 * find the source line of an instruction, and print an instruction the
 * way llvm-objdump does (`r1 = *(u64 *)(r1 + 8)`, `if r1 > r2 goto +19`,
 * `call 7`, `r1 = 0 ll`), so that verifier messages, `cisc bpf disasm`
 * and a compiler listing read alike.
 *
 * Deviations from llvm-objdump, because we print linked programs: a local
 * call is `call pc+N` (bpftool's spelling; N counts from the next
 * instruction) and an ld_imm64 of read-only data is `r1 = rodata+16 ll`.
 */
#include "bpf/prog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bpf/interp.h"

void vm_prog_free(struct vm_prog *p)
{
    if (!p)
        return;
    free(p->insns);
    free(p->rodata);
    free(p->rptrs);
    free(p->lines);
    free(p->strings);
    vm_unprepare(p);
    free(p);
}

const struct vm_line_info *vm_prog_line(const struct vm_prog *p, uint32_t pc)
{
    uint32_t lo = 0, hi = p ? p->nlines : 0;
    while (lo < hi) {           /* first entry with insn_off > pc */
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->lines[mid].insn_off <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &p->lines[lo - 1] : NULL;
}

/* Output cursor: snprintf that appends and never overflows. */
struct out {
    char *buf;
    size_t size, len;
};

/* Appends to o; returns 0 so that dis_* helpers can `return put(...)`. */
static int __attribute__((format(printf, 2, 3))) put(struct out *o, const char *fmt, ...)
{
    if (o->len >= o->size)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
    return 0;
}

static const char *alu_op(unsigned op, int16_t off)
{
    switch (op) {
    case VM_ADD:  return "+=";
    case VM_SUB:  return "-=";
    case VM_MUL:  return "*=";
    case VM_DIV:  return off == 1 ? "s/=" : "/=";
    case VM_OR:   return "|=";
    case VM_AND:  return "&=";
    case VM_LSH:  return "<<=";
    case VM_RSH:  return ">>=";
    case VM_MOD:  return off == 1 ? "s%=" : "%=";
    case VM_XOR:  return "^=";
    case VM_MOV:  return "=";
    case VM_ARSH: return "s>>=";
    default:      return NULL;
    }
}

static const char *jmp_op(unsigned op)
{
    switch (op) {
    case VM_JEQ:  return "==";
    case VM_JGT:  return ">";
    case VM_JGE:  return ">=";
    case VM_JSET: return "&";
    case VM_JNE:  return "!=";
    case VM_JSGT: return "s>";
    case VM_JSGE: return "s>=";
    case VM_JLT:  return "<";
    case VM_JLE:  return "<=";
    case VM_JSLT: return "s<";
    case VM_JSLE: return "s<=";
    default:      return NULL;
    }
}

static const char *size_name(uint8_t code, int sign)
{
    static const char *const u[] = {"u32", "u16", "u8", "u64"};
    static const char *const s[] = {"s32", "s16", "s8", "s64"};
    return (sign ? s : u)[VM_SIZE(code) >> 3];
}

static int invalid(struct out *o, const struct vm_insn *in)
{
    return put(o, "<invalid opcode 0x%02x>", in->code);
}

static int dis_endian(struct out *o, const struct vm_insn *in, unsigned d)
{
    const char *kind = VM_CLS(in->code) == VM_CLS_ALU64 ? "bswap"
                       : VM_SRC(in->code) == VM_X   ? "be"
                                                    : "le";
    if (in->imm != 16 && in->imm != 32 && in->imm != 64)
        return invalid(o, in);
    return put(o, "r%u = %s%d r%u", d, kind, in->imm, d);
}

static int dis_alu(struct out *o, const struct vm_insn *in)
{
    char r = VM_CLS(in->code) == VM_CLS_ALU64 ? 'r' : 'w';
    unsigned op = VM_OP(in->code), d = vm_dst(in), s = vm_src(in);
    if (op == VM_END)
        return dis_endian(o, in, d);
    if (op == VM_NEG)
        return put(o, "%c%u = -%c%u", r, d, r, d);
    const char *sym = alu_op(op, in->off);
    if (!sym)
        return invalid(o, in);
    if (op == VM_MOV && in->off && VM_SRC(in->code) == VM_X)
        return put(o, "%c%u = (s%d)%c%u", r, d, in->off, r, s);
    if (VM_SRC(in->code) == VM_X)
        return put(o, "%c%u %s %c%u", r, d, sym, r, s);
    return put(o, "%c%u %s %d", r, d, sym, in->imm);
}

static int dis_mem(struct out *o, unsigned reg, int16_t off)
{
    return put(o, "r%u %c %d", reg, off < 0 ? '-' : '+', off < 0 ? -(int)off : off);
}

static int dis_ldx(struct out *o, const struct vm_insn *in)
{
    if (VM_MODE(in->code) != VM_MEM && VM_MODE(in->code) != VM_MEMSX)
        return invalid(o, in);
    put(o, "r%u = *(%s *)(", vm_dst(in), size_name(in->code, VM_MODE(in->code) == VM_MEMSX));
    dis_mem(o, vm_src(in), in->off);
    return put(o, ")");
}

static int dis_st(struct out *o, const struct vm_insn *in)
{
    if (VM_MODE(in->code) != VM_MEM)
        return invalid(o, in);
    put(o, "*(%s *)(", size_name(in->code, 0));
    dis_mem(o, vm_dst(in), in->off);
    if (VM_CLS(in->code) == VM_CLS_ST)
        return put(o, ") = %d", in->imm);
    return put(o, ") = r%u", vm_src(in));
}

static int dis_atomic(struct out *o, const struct vm_insn *in)
{
    int w64 = VM_SIZE(in->code) == VM_DW;
    char r = w64 ? 'r' : 'w';
    unsigned d = vm_dst(in), s = vm_src(in), op = (unsigned)in->imm & ~VM_FETCH;
    const char *t = w64 ? "u64" : "u32";
    static const struct { unsigned op; const char *sym, *name; } ops[] = {
        {VM_ADD, "+=", "add"}, {VM_OR, "|=", "or"}, {VM_AND, "&=", "and"},
        {VM_XOR, "^=", "xor"}};
    if (VM_SIZE(in->code) != VM_DW && VM_SIZE(in->code) != VM_W)
        return invalid(o, in);
    if (in->imm == VM_XCHG)
        return put(o, "%c%u = xchg%s_%s(r%u %c %d, %c%u)", r, s, w64 ? "" : "32",
                   w64 ? "64" : "32", d, in->off < 0 ? '-' : '+', abs(in->off), r, s);
    if (in->imm == VM_CMPXCHG)
        return put(o, "%c0 = cmpxchg%s_%s(r%u %c %d, %c0, %c%u)", r, w64 ? "" : "32",
                   w64 ? "64" : "32", d, in->off < 0 ? '-' : '+', abs(in->off), r, r, s);
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (ops[i].op != op || ((unsigned)in->imm & ~(VM_FETCH | 0xf0u)))
            continue;
        if (in->imm & VM_FETCH)
            return put(o, "%c%u = atomic_fetch_%s((%s *)(r%u %c %d), %c%u)", r, s,
                       ops[i].name, t, d, in->off < 0 ? '-' : '+', abs(in->off), r, s);
        return put(o, "lock *(%s *)(r%u %c %d) %s %c%u", t, d, in->off < 0 ? '-' : '+',
                   abs(in->off), ops[i].sym, r, s);
    }
    return invalid(o, in);
}

static int dis_stx(struct out *o, const struct vm_insn *in)
{
    if (VM_MODE(in->code) == VM_ATOMIC)
        return dis_atomic(o, in);
    return dis_st(o, in);
}

/* ld_imm64 (two slots) and the legacy packet loads. */
static int dis_ld(struct out *o, const struct vm_prog *p, uint32_t pc)
{
    const struct vm_insn *in = &p->insns[pc];
    if (VM_MODE(in->code) == VM_ABS || VM_MODE(in->code) == VM_IND) {
        put(o, "r0 = *(%s *)skb[", size_name(in->code, 0));
        if (VM_MODE(in->code) == VM_ABS)
            put(o, "%d]", in->imm);
        else if (in->imm)
            put(o, "r%u + %d]", vm_src(in), in->imm);
        else
            put(o, "r%u]", vm_src(in));
        return 1;
    }
    if (in->code != VM_OPC_LD_IMM64) {
        invalid(o, in);
        return 1;
    }
    if (pc + 1 >= p->ninsns) {
        put(o, "r%u = <ld_imm64 cut off by the end of the program>", vm_dst(in));
        return 1;
    }
    uint64_t v = (uint32_t)in->imm | (uint64_t)(uint32_t)p->insns[pc + 1].imm << 32;
    if (vm_src(in) == VM_PSEUDO_RODATA)
        put(o, "r%u = rodata+%llu ll", vm_dst(in), (unsigned long long)v);
    else if (vm_src(in))
        put(o, "r%u = <pseudo %u> %lld ll", vm_dst(in), vm_src(in), (long long)v);
    else
        put(o, "r%u = %lld ll", vm_dst(in), (long long)v);
    return 2;
}

static int dis_jmp(struct out *o, const struct vm_insn *in)
{
    int j32 = VM_CLS(in->code) == VM_CLS_JMP32;
    char r = j32 ? 'w' : 'r';
    unsigned op = VM_OP(in->code);
    if (op == VM_EXIT && !j32)
        return put(o, "exit");
    if (op == VM_CALL && !j32) {
        if (VM_SRC(in->code) == VM_X)
            return put(o, "callx r%u", vm_dst(in));
        if (vm_src(in) == VM_PSEUDO_CALL)
            return put(o, "call pc%+d", in->imm);
        return put(o, vm_src(in) ? "call kfunc %d" : "call %d", in->imm);
    }
    if (op == VM_JA)
        return j32 ? put(o, "gotol %+d", in->imm) : put(o, "goto %+d", in->off);
    const char *sym = jmp_op(op);
    if (!sym)
        return invalid(o, in);
    if (VM_SRC(in->code) == VM_X)
        return put(o, "if %c%u %s %c%u goto %+d", r, vm_dst(in), sym, r, vm_src(in),
                   in->off);
    return put(o, "if %c%u %s %d goto %+d", r, vm_dst(in), sym, in->imm, in->off);
}

int vm_disasm_insn(const struct vm_prog *p, uint32_t pc, char *buf, size_t size)
{
    struct out o = {buf, size, 0};
    if (size)
        buf[0] = '\0';
    if (!p || pc >= p->ninsns) {
        put(&o, "<pc %u outside the program>", pc);
        return 1;
    }
    const struct vm_insn *in = &p->insns[pc];
    switch (VM_CLS(in->code)) {
    case VM_CLS_LD:    return dis_ld(&o, p, pc);
    case VM_CLS_LDX:   dis_ldx(&o, in); break;
    case VM_CLS_ST:    dis_st(&o, in); break;
    case VM_CLS_STX:   dis_stx(&o, in); break;
    case VM_CLS_ALU:
    case VM_CLS_ALU64: dis_alu(&o, in); break;
    default:           dis_jmp(&o, in); break;
    }
    return 1;
}
