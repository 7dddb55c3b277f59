/*
 * bpf/verifier_flow.c - static analyses that make pruning effective.
 *
 * Pruning compares a new state with stored ones. Comparing every scalar
 * exactly would keep apart states that differ only in values that can
 * never influence safety (a running checksum, a counter that is only
 * written to the output), and loops with a branch inside would then
 * explode. The kernel tracks "precision" dynamically by backtracking;
 * here it is computed once, statically, per instruction:
 *
 *   live  registers read on some path before being written;
 *   prec  registers whose exact value may reach a safety decision: a
 *         conditional jump, a helper size, a pointer offset (ptr += x),
 *         a subprogram's return value or argument, or a stack slot that
 *         does; flows backward through moves, ALU operations and
 *         r10-relative spills/fills;
 *   slot_prec  the same for the function's own stack slots (accessed as
 *         r10 + constant);
 *   ptr   registers that may hold a pointer (forward analysis of pointer
 *         kinds: context, stack, other), needed for the `ptr += x` rule
 *         because pointer-ness is only known dynamically. The exploration
 *         checks the claim (a pointer where ptr says none is an internal
 *         error), so a mistake here cannot make pruning unsound silently.
 *
 * Soundness argument (pruning ignores the value of a scalar that is not
 * in prec): such a value only flows into places where any scalar is
 * acceptable (stores of scalars, helper scalar arguments, r0 of the main
 * program, other imprecise scalars); the dynamic verifier stores a scalar
 * written through a non-r10 pointer into the stack as unknown and reads a
 * spilled scalar through a non-r10 pointer as unknown, so the only value
 * flows through memory are the r10-relative ones tracked here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/verifier_int.h"

#define PK_CTX 1u
#define PK_STACK 2u
#define PK_OTHER 4u
#define PK_ALL 7u
#define ARGS_MASK 0x3eu   /* r1..r5 */
#define CALLER_SAVED 0x3fu   /* r0..r5 */
#define NOT_FP 0x3ffu      /* every register but r10 */

/* Pointer kinds of registers (4 bits each) and r10 slots (a mask each). */
struct pk {
    uint64_t regs;
    uint64_t sctx, sstk, soth;
};

static unsigned pk_get(const struct pk *p, unsigned r)
{
    return (unsigned)(p->regs >> (r * 4)) & 0xf;
}

static void pk_set(struct pk *p, unsigned r, unsigned k)
{
    p->regs = (p->regs & ~(0xfull << (r * 4))) | ((uint64_t)k << (r * 4));
}

static unsigned pk_slot(const struct pk *p, unsigned s)
{
    return (unsigned)(((p->sctx >> s) & 1) * PK_CTX | ((p->sstk >> s) & 1) * PK_STACK |
                      ((p->soth >> s) & 1) * PK_OTHER);
}

static void pk_set_slot(struct pk *p, unsigned s, unsigned k)
{
    uint64_t b = 1ull << s;
    p->sctx = (p->sctx & ~b) | ((k & PK_CTX) ? b : 0);
    p->sstk = (p->sstk & ~b) | ((k & PK_STACK) ? b : 0);
    p->soth = (p->soth & ~b) | ((k & PK_OTHER) ? b : 0);
}

static bool pk_join(struct pk *dst, const struct pk *src)
{
    struct pk old = *dst;
    dst->regs |= src->regs;
    dst->sctx |= src->sctx;
    dst->sstk |= src->sstk;
    dst->soth |= src->soth;
    return memcmp(&old, dst, sizeof(old)) != 0;
}

struct flow {
    struct venv *env;
    struct pk *in;          /* per pc */
    uint8_t *queued;
    uint32_t *queue, qhead, qlen;
    unsigned *ret;          /* per function: kinds r0 may have at exit */
    bool spill_via_ptr;     /* a pointer may be stored through a non-r10 pointer */
};

/* Byte range [off, off+size) relative to r10 as slots [*lo, *hi]; false if
 * it leaves the frame. */
static bool fp_slots(int32_t off, unsigned size, unsigned *lo, unsigned *hi)
{
    if (off < -VM_STACK_SIZE || off + (int32_t)size > 0)
        return false;
    *hi = (unsigned)((-off - 1) / 8);
    *lo = (unsigned)((-(off + (int32_t)size)) / 8);
    return true;
}

static bool fp_whole_slot(int32_t off, unsigned size, unsigned *slot)
{
    unsigned lo, hi;
    if (size != 8 || off % 8 != 0 || !fp_slots(off, size, &lo, &hi))
        return false;
    *slot = lo;
    return true;
}

static void enqueue(struct flow *fl, uint32_t pc)
{
    if (fl->queued[pc])
        return;
    fl->queued[pc] = 1;
    fl->queue[(fl->qhead + fl->qlen++) % fl->env->n] = pc;
}

static void flow_to(struct flow *fl, uint32_t pc, const struct pk *st)
{
    if (pk_join(&fl->in[pc], st))
        enqueue(fl, pc);
}

static void kill_fp_slots(struct pk *p, int32_t off, unsigned size)
{
    unsigned lo, hi;
    if (!fp_slots(off, size, &lo, &hi))
        return;
    for (unsigned s = lo; s <= hi; s++)
        pk_set_slot(p, s, 0);
}

static unsigned load_kind(struct flow *fl, const struct pk *p, const struct vm_insn *i)
{
    unsigned slot, base = pk_get(p, vm_src(i));
    if (VM_MODE(i->code) != VM_MEM || VM_SIZE(i->code) != VM_DW)
        return 0;
    if (vm_src(i) == VM_REG_FP)
        return fp_whole_slot(i->off, 8, &slot)
                   ? pk_slot(p, slot) | (fl->spill_via_ptr ? PK_ALL : 0)
                   : 0;
    if (base & PK_STACK)
        return PK_ALL;
    /* an entry of a table of pointers in read-only data (verifier_int.h
     * invariant 14) is one */
    if ((base & PK_OTHER) && fl->env->prog->nrptrs)
        return PK_OTHER;
    return (base & PK_CTX) ? PK_OTHER : 0;
}

static void pk_store(struct flow *fl, struct pk *p, const struct vm_insn *i)
{
    unsigned size = vm_size_bytes(i->code), slot;
    bool stx = VM_CLS(i->code) == VM_CLS_STX;
    unsigned val = stx ? pk_get(p, vm_src(i)) : 0;
    if (stx && VM_MODE(i->code) == VM_ATOMIC) {
        val = 0;
        if (i->imm & VM_FETCH)
            pk_set(p, vm_src(i), 0);
        if (i->imm == VM_CMPXCHG)
            pk_set(p, 0, 0);
    }
    if (vm_dst(i) != VM_REG_FP) {
        if (val && (pk_get(p, vm_dst(i)) & PK_STACK) && !fl->spill_via_ptr) {
            fl->spill_via_ptr = true;
            for (uint32_t pc = 0; pc < fl->env->n; pc++)
                enqueue(fl, pc);
        }
        return;
    }
    kill_fp_slots(p, i->off, size);
    if (VM_MODE(i->code) == VM_MEM && fp_whole_slot(i->off, size, &slot))
        pk_set_slot(p, slot, val);
}

static void pk_alu(struct pk *p, const struct vm_insn *i)
{
    unsigned op = VM_OP(i->code), dst = vm_dst(i);
    bool x = VM_SRC(i->code) == VM_X;
    if (VM_CLS(i->code) == VM_CLS_ALU64 && op == VM_MOV && x && i->off == 0)
        pk_set(p, dst, pk_get(p, vm_src(i)));
    else if (VM_CLS(i->code) == VM_CLS_ALU64 && (op == VM_ADD || op == VM_SUB))
        pk_set(p, dst, pk_get(p, dst) | (x ? pk_get(p, vm_src(i)) : 0));
    else
        pk_set(p, dst, 0);
}

static void pk_call(struct flow *fl, uint32_t pc, struct pk *p)
{
    const struct vm_insn *i = &fl->env->insns[pc];
    unsigned r0 = 0;
    if (vm_src(i) == VM_PSEUDO_CALL) {
        uint32_t entry = pc + 1 + (uint32_t)i->imm;
        struct pk callee = {0};
        for (unsigned r = 1; r <= 5; r++)
            pk_set(&callee, r, pk_get(p, r));
        pk_set(&callee, VM_REG_FP, PK_STACK);
        flow_to(fl, entry, &callee);
        r0 = fl->ret[fl->env->info[entry].func];
    } else if (VM_SRC(i->code) == VM_X) {
        r0 = PK_OTHER;   /* callx: any helper, one returning memory included */
    } else {
        const struct vm_helper *h = vm_helper_find((uint32_t)i->imm);
        r0 = h && h->ret == VM_RET_MEM ? PK_OTHER : 0;
    }
    for (unsigned r = 0; r <= 5; r++)
        pk_set(p, r, 0);
    pk_set(p, 0, r0);
}

/* Applies pc's effect to a copy of its in-state and passes it on. */
static void pk_step(struct flow *fl, uint32_t pc)
{
    struct venv *env = fl->env;
    const struct vm_insn *i = &env->insns[pc];
    struct pk p = fl->in[pc];
    unsigned cls = VM_CLS(i->code);
    uint32_t succ[2];
    if (cls == VM_CLS_ALU || cls == VM_CLS_ALU64)
        pk_alu(&p, i);
    else if (cls == VM_CLS_LDX)
        pk_set(&p, vm_dst(i), load_kind(fl, &p, i));
    else if (cls == VM_CLS_ST || cls == VM_CLS_STX)
        pk_store(fl, &p, i);
    else if (i->code == VM_OPC_LD_IMM64)
        pk_set(&p, vm_dst(i), vm_src(i) == VM_PSEUDO_RODATA ? PK_OTHER : 0);
    else if (i->code == (VM_CLS_JMP | VM_CALL) || i->code == (VM_CLS_JMP | VM_CALL | VM_X))
        pk_call(fl, pc, &p);
    else if (i->code == (VM_CLS_JMP | VM_EXIT) && env->info[pc].func != 0) {
        unsigned *ret = &fl->ret[env->info[pc].func];
        if ((*ret | pk_get(&p, 0)) != *ret) {
            *ret |= pk_get(&p, 0);
            for (uint32_t c = 0; c < env->n; c++)   /* callers' return sites */
                if (env->insns[c].code == (VM_CLS_JMP | VM_CALL) &&
                    vm_src(&env->insns[c]) == VM_PSEUDO_CALL && !(env->info[c].flags & VI_LDIMM2))
                    enqueue(fl, c);
        }
    }
    unsigned ns = vm_cfg_succ(env, pc, succ);
    for (unsigned k = 0; k < ns; k++)
        flow_to(fl, succ[k], &p);
}

static int pointer_kinds(struct venv *env)
{
    struct flow fl = {.env = env};
    fl.in = calloc(env->n, sizeof(*fl.in));
    fl.queued = calloc(env->n, 1);
    fl.queue = calloc(env->n, sizeof(*fl.queue));
    fl.ret = calloc(env->nfuncs, sizeof(*fl.ret));
    int err = fl.in && fl.queued && fl.queue && fl.ret ? 0 : -ENOMEM;
    if (!err) {
        pk_set(&fl.in[0], 1, PK_CTX);
        pk_set(&fl.in[0], VM_REG_FP, PK_STACK);
        enqueue(&fl, 0);
        while (fl.qlen) {
            uint32_t pc = fl.queue[fl.qhead];
            fl.qhead = (fl.qhead + 1) % env->n;
            fl.qlen--;
            fl.queued[pc] = 0;
            pk_step(&fl, pc);
        }
        for (uint32_t pc = 0; pc < env->n; pc++) {
            uint16_t m = 0, stk = 0;
            for (unsigned r = 0; r < VM_NREGS; r++) {
                m |= pk_get(&fl.in[pc], r) ? (uint16_t)(1u << r) : 0;
                stk |= pk_get(&fl.in[pc], r) & PK_STACK ? (uint16_t)(1u << r) : 0;
            }
            env->info[pc].ptr = m;
            env->info[pc].stk = stk;
        }
    }
    free(fl.in);
    free(fl.queued);
    free(fl.queue);
    free(fl.ret);
    return err;
}

/* --- liveness and precision (backward, per function) ---------------------- */

struct lp {
    uint16_t live, prec;
    uint64_t slots;
};

#define BIT(r) ((uint16_t)(1u << (r)))

static void lp_alu(const struct venv *env, uint32_t pc, struct lp *s)
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned op = VM_OP(i->code), dst = vm_dst(i), src = vm_src(i);
    bool x = VM_SRC(i->code) == VM_X;
    bool dprec = s->prec & BIT(dst), dlive = s->live & BIT(dst);
    uint16_t uses = x ? BIT(src) : 0;
    if (op != VM_MOV)
        uses |= BIT(dst);
    s->live = (uint16_t)((s->live & ~BIT(dst)) | uses);
    s->prec = (uint16_t)((s->prec & ~BIT(dst)) | (dprec ? uses : 0));
    bool arith64 = VM_CLS(i->code) == VM_CLS_ALU64 && x && (op == VM_ADD || op == VM_SUB);
    if (arith64 && dlive && (env->info[pc].ptr & (BIT(dst) | BIT(src))))
        s->prec |= uses;
}

static void lp_kill_slots(struct lp *s, int32_t off, unsigned size)
{
    unsigned lo, hi;
    if (!fp_slots(off, size, &lo, &hi))
        return;
    for (unsigned k = lo; k <= hi; k++)
        s->slots &= ~(1ull << k);
}

static void lp_ldx(const struct vm_insn *i, struct lp *s)
{
    unsigned dst = vm_dst(i), lo, hi;
    bool dprec = s->prec & BIT(dst);
    s->live = (uint16_t)((s->live & ~BIT(dst)) | BIT(vm_src(i)));
    s->prec &= (uint16_t)~BIT(dst);
    if (dprec && vm_src(i) == VM_REG_FP && fp_slots(i->off, vm_size_bytes(i->code), &lo, &hi))
        for (unsigned k = lo; k <= hi; k++)
            s->slots |= 1ull << k;
}

/* A store through r10 that keeps the value (verifier_mem.c): a whole
 * slot, or a naturally aligned narrow store inside one (invariant 8). */
static bool fp_value_slot(int32_t off, unsigned size, unsigned *slot)
{
    unsigned lo, hi;
    if (size == 8)
        return fp_whole_slot(off, size, slot);
    if (off % (int32_t)size != 0 || !fp_slots(off, size, &lo, &hi))
        return false;
    *slot = lo;
    return true;
}

/* A register stored through a pointer other than r10 that may point into
 * a stack may reach a slot (of this frame or a caller's) whose value
 * matters later: the stack keeps its value (verifier_mem.c) only where it
 * is precise, which this makes it. */
static void lp_store(const struct venv *env, uint32_t pc, struct lp *s)
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned size = vm_size_bytes(i->code), src = vm_src(i), slot;
    bool stx = VM_CLS(i->code) == VM_CLS_STX, atomic = VM_MODE(i->code) == VM_ATOMIC;
    bool flows = false;
    if (vm_dst(i) == VM_REG_FP && stx && !atomic && fp_value_slot(i->off, size, &slot))
        flows = (s->slots >> slot) & 1;
    if (vm_dst(i) != VM_REG_FP && stx && !atomic && (env->info[pc].stk & BIT(vm_dst(i))))
        flows = true;
    if (vm_dst(i) == VM_REG_FP)
        lp_kill_slots(s, i->off, size);
    if (atomic && (i->imm & VM_FETCH))
        s->prec &= (uint16_t)~BIT(src);
    if (atomic && i->imm == VM_CMPXCHG) {
        s->prec &= (uint16_t)~BIT(0);
        s->live |= BIT(0);
    }
    s->live |= BIT(vm_dst(i));
    if (stx)
        s->live |= BIT(src);
    if (flows)
        s->prec |= BIT(src);
}

static void lp_call(const struct venv *env, uint32_t pc, struct lp *s)
{
    const struct vm_insn *i = &env->insns[pc];
    uint16_t uses = 0, prec = 0;
    if (vm_src(i) == VM_PSEUDO_CALL) {
        const struct vfunc *f = &env->funcs[env->info[pc + 1 + i->imm].func];
        uses = f->entry_live;
        prec = f->entry_prec;
    } else if (VM_SRC(i->code) == VM_X) {
        /* callx: the number decides which helper (and so what is checked);
         * the helper is known only to the exploration, so every argument
         * counts as read and precise (more precision only prunes less). */
        uses = prec = (uint16_t)(ARGS_MASK | BIT(vm_dst(i)));
    } else {
        const struct vm_helper *h = vm_helper_find((uint32_t)i->imm);
        for (unsigned a = 0; a < 5; a++) {
            enum vm_arg_kind k = h ? h->args[a] : VM_ARG_SCALAR;
            uses |= k != VM_ARG_NONE ? BIT(a + 1) : 0;
            prec |= k == VM_ARG_SIZE || k == VM_ARG_SIZE_OR_ZERO ? BIT(a + 1) : 0;
        }
        if (h && h->ret == VM_RET_INDEX && h->ret_arg >= 1 && h->ret_arg <= 5)
            prec |= BIT(h->ret_arg);   /* it bounds r0 */
    }
    s->live = (uint16_t)((s->live & ~CALLER_SAVED) | uses);
    s->prec = (uint16_t)((s->prec & ~CALLER_SAVED) | prec);
}

/* in-state of pc from its out-state s (the join of its successors). */
static void lp_step(const struct venv *env, uint32_t pc, struct lp *s)
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned cls = VM_CLS(i->code), op = VM_OP(i->code);
    if (cls == VM_CLS_ALU || cls == VM_CLS_ALU64) {
        lp_alu(env, pc, s);
    } else if (cls == VM_CLS_LDX) {
        lp_ldx(i, s);
    } else if (cls == VM_CLS_ST || cls == VM_CLS_STX) {
        lp_store(env, pc, s);
    } else if (i->code == VM_OPC_LD_IMM64) {
        s->live &= (uint16_t)~BIT(vm_dst(i));
        s->prec &= (uint16_t)~BIT(vm_dst(i));
    } else if (op == VM_EXIT) {
        s->live = BIT(0);
        s->prec = env->info[pc].func != 0 ? BIT(0) : 0;
        s->slots = 0;
    } else if (op == VM_CALL) {
        lp_call(env, pc, s);
    } else if (op != VM_JA) {
        uint16_t uses = BIT(vm_dst(i)) | (VM_SRC(i->code) == VM_X ? BIT(vm_src(i)) : 0);
        s->live |= uses;
        s->prec |= uses;
    }
    s->live &= NOT_FP;
    s->prec &= NOT_FP;
}

static bool lp_update(struct venv *env, uint32_t pc)
{
    struct lp s = {0, 0, 0};
    uint32_t succ[2];
    unsigned ns = vm_cfg_succ(env, pc, succ);
    for (unsigned k = 0; k < ns; k++) {
        s.live |= env->info[succ[k]].live;
        s.prec |= env->info[succ[k]].prec;
        s.slots |= env->info[succ[k]].slot_prec;
    }
    lp_step(env, pc, &s);
    struct vinfo *vi = &env->info[pc];
    bool changed = vi->live != s.live || vi->prec != s.prec || vi->slot_prec != s.slots;
    vi->live = s.live;
    vi->prec = s.prec;
    vi->slot_prec = s.slots;
    return changed;
}

static void live_prec_func(struct venv *env, struct vfunc *f)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t pc = f->end; pc-- > f->start;)
            if (!(env->info[pc].flags & VI_LDIMM2))
                changed |= lp_update(env, pc);
    }
    f->entry_live = env->info[f->start].live & ARGS_MASK;
    f->entry_prec = env->info[f->start].prec & ARGS_MASK;
}

int vm_flow_analyse(struct venv *env)
{
    int err = pointer_kinds(env);
    if (err)
        return err;
    /* Callees first: a callee's depth is smaller than its callers'. */
    for (uint32_t d = 1; d <= VM_MAX_CALL_DEPTH; d++)
        for (uint32_t f = 0; f < env->nfuncs; f++)
            if (env->funcs[f].depth == d)
                live_prec_func(env, &env->funcs[f]);
    return 0;
}
