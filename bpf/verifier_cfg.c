/*
 * bpf/verifier_cfg.c - the verifier's structural pass.
 *
 * Before any value is tracked, every instruction's encoding is checked
 * against RFC 9669 (reserved fields zero, registers in range, no write to
 * r10, known operations only), the program is cut into functions (entry
 * 0 plus every local-call target), jumps are checked (inside their own
 * function, never into the second slot of an ld_imm64), no function may
 * fall off its end, the call graph must be acyclic and no deeper than
 * VM_MAX_CALL_DEPTH frames, and every instruction must be reachable.
 * Finally each function gets a reverse post-order (the exploration's
 * priority) and pruning points are marked: jump targets, the instruction
 * after a conditional jump or a local call, and function entries.
 *
 * Problems found here are malformed programs: -EINVAL.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/verifier_int.h"

static int bad(struct venv *env, uint32_t pc, const char *what)
{
    return vm_verr_at(env, pc, -EINVAL, "invalid instruction: %s", what);
}

static int check_regs(struct venv *env, uint32_t pc, bool dst_written, bool src_used)
{
    const struct vm_insn *i = &env->insns[pc];
    if (vm_dst(i) > VM_REG_FP)
        return vm_verr_at(env, pc, -EINVAL, "invalid instruction: register r%u does not exist",
                          vm_dst(i));
    if (dst_written && vm_dst(i) == VM_REG_FP)
        return vm_verr_at(env, pc, -EINVAL, "r10 (frame pointer) is read-only");
    if (src_used && vm_src(i) > VM_REG_FP)
        return vm_verr_at(env, pc, -EINVAL, "invalid instruction: register r%u does not exist",
                          vm_src(i));
    if (!src_used && vm_src(i) != 0)
        return bad(env, pc, "reserved source register field is not 0");
    return 0;
}

static bool mov_off_ok(int16_t off, bool is64)
{
    return off == 0 || off == 8 || off == 16 || (is64 && off == 32);
}

static int check_alu(struct venv *env, uint32_t pc, bool is64)
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned op = VM_OP(i->code);
    bool x = VM_SRC(i->code) == VM_X;
    if (op == 0xe0 || op == 0xf0)
        return bad(env, pc, "unknown ALU operation");
    if (op == VM_NEG || op == VM_END) {
        if (x && (op == VM_NEG || is64))
            return bad(env, pc, "unknown ALU operation");
        if (i->off != 0 || (op == VM_NEG && i->imm != 0))
            return bad(env, pc, "reserved field is not 0");
        if (op == VM_END && i->imm != 16 && i->imm != 32 && i->imm != 64)
            return bad(env, pc, "byte swap width must be 16, 32 or 64");
        return check_regs(env, pc, true, false);
    }
    if (x && i->imm != 0)
        return bad(env, pc, "reserved immediate field is not 0");
    if (op == VM_MOV && !(x ? mov_off_ok(i->off, is64) : i->off == 0))
        return bad(env, pc, "invalid offset for mov (sign-extension width)");
    if ((op == VM_DIV || op == VM_MOD) && i->off != 0 && i->off != 1)
        return bad(env, pc, "invalid offset for div/mod (0 or 1)");
    if (op != VM_MOV && op != VM_DIV && op != VM_MOD && i->off != 0)
        return bad(env, pc, "reserved offset field is not 0");
    return check_regs(env, pc, true, x);
}

static int check_target(struct venv *env, uint32_t pc, int64_t target)
{
    if (target < 0 || target >= env->n)
        return vm_verr_at(env, pc, -EINVAL, "jump out of range: target %lld, program has %u "
                          "instructions", (long long)target, env->n);
    if (env->info[target].flags & VI_LDIMM2)
        return vm_verr_at(env, pc, -EINVAL, "jump into the middle of an ld_imm64 at pc %lld",
                          (long long)target - 1);
    return 0;
}

static int check_jmp(struct venv *env, uint32_t pc, bool is32)
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned op = VM_OP(i->code);
    bool x = VM_SRC(i->code) == VM_X;
    if (op == 0xe0 || op == 0xf0 || (is32 && (op == VM_CALL || op == VM_EXIT)))
        return bad(env, pc, "unknown jump operation");
    if (op == VM_CALL && x) {   /* callx: the helper's number in dst (RFC 9669) */
        if (vm_src(i) != 0 || i->off != 0 || i->imm != 0)
            return bad(env, pc, "reserved field of callx is not 0");
        return vm_dst(i) >= VM_REG_FP ? bad(env, pc, "callx through R10 (the frame pointer)")
                                       : 0;
    }
    if (op == VM_JA || op == VM_EXIT || op == VM_CALL) {
        if (x)
            return bad(env, pc, "unknown jump operation");
        if (vm_dst(i) != 0 || (op != VM_CALL && vm_src(i) != 0))
            return bad(env, pc, "reserved register field is not 0");
        if (op == VM_EXIT && (i->off || i->imm))
            return bad(env, pc, "reserved field of exit is not 0");
        if (op == VM_JA && (is32 ? i->off != 0 : i->imm != 0))
            return bad(env, pc, "reserved field of goto is not 0");
        if (op == VM_JA)
            return check_target(env, pc, (int64_t)pc + 1 + (is32 ? i->imm : i->off));
        if (i->off != 0)
            return bad(env, pc, "reserved offset field of call is not 0");
        if (vm_src(i) > VM_PSEUDO_CALL)
            return vm_verr_at(env, pc, -EINVAL, "unsupported call kind (src=%u): only helper "
                              "calls and local calls exist", vm_src(i));
        if (vm_src(i) == VM_PSEUDO_CALL)
            return check_target(env, pc, (int64_t)pc + 1 + i->imm);
        return 0;
    }
    if (x ? i->imm != 0 : vm_src(i) != 0)
        return bad(env, pc, "reserved field of conditional jump is not 0");
    int err = check_regs(env, pc, false, x);
    return err ? err : check_target(env, pc, (int64_t)pc + 1 + i->off);
}

static int check_ld(struct venv *env, uint32_t pc)
{
    const struct vm_insn *i = &env->insns[pc];
    if (VM_MODE(i->code) == VM_ABS || VM_MODE(i->code) == VM_IND)
        return bad(env, pc, "legacy packet access (LD_ABS/LD_IND) is not supported");
    if (i->code != VM_OPC_LD_IMM64)
        return bad(env, pc, "unknown opcode");
    if (pc + 1 >= env->n)
        return bad(env, pc, "ld_imm64 is missing its second slot");
    const struct vm_insn *n = &env->insns[pc + 1];
    if (n->code != 0 || n->regs != 0 || n->off != 0 || i->off != 0)
        return bad(env, pc, "malformed second slot of ld_imm64");
    if (vm_src(i) != 0 && vm_src(i) != VM_PSEUDO_RODATA)
        return vm_verr_at(env, pc, -EINVAL, "unsupported ld_imm64 kind (src=%u): maps and "
                          "other objects do not exist here", vm_src(i));
    if (vm_src(i) == VM_PSEUDO_RODATA &&
        (n->imm != 0 || i->imm < 0 || (uint32_t)i->imm > env->prog->rodata_size))
        return vm_verr_at(env, pc, -EINVAL, "ld_imm64 refers to offset %d outside the "
                          "read-only data (%u bytes)", i->imm, env->prog->rodata_size);
    if (vm_dst(i) >= VM_REG_FP)
        return vm_verr_at(env, pc, -EINVAL, vm_dst(i) == VM_REG_FP
                              ? "r10 (frame pointer) is read-only"
                              : "invalid instruction: register r%u does not exist", vm_dst(i));
    return 0;
}

static int check_mem(struct venv *env, uint32_t pc)
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned cls = VM_CLS(i->code), mode = VM_MODE(i->code);
    if (cls == VM_CLS_LDX) {
        if (mode != VM_MEM && !(mode == VM_MEMSX && VM_SIZE(i->code) != VM_DW))
            return bad(env, pc, "unknown load mode");
        if (i->imm != 0)
            return bad(env, pc, "reserved immediate field of load is not 0");
        return check_regs(env, pc, true, true);
    }
    if (cls == VM_CLS_ST) {
        if (mode != VM_MEM)
            return bad(env, pc, "unknown store mode");
        return check_regs(env, pc, false, false);
    }
    if (mode == VM_ATOMIC) {
        unsigned op = (unsigned)i->imm & ~VM_FETCH;
        bool ok = ((unsigned)i->imm == VM_XCHG || (unsigned)i->imm == VM_CMPXCHG ||
                   op == VM_ADD || op == VM_OR || op == VM_AND || op == VM_XOR) &&
                  (i->imm & ~0xf1) == 0;
        if (!ok || VM_SIZE(i->code) == VM_B || VM_SIZE(i->code) == VM_H)
            return bad(env, pc, "unknown atomic operation or size");
    } else if (mode != VM_MEM || i->imm != 0) {
        return bad(env, pc, "unknown store mode or reserved immediate not 0");
    }
    return check_regs(env, pc, false, true);
}

static int check_encoding(struct venv *env, uint32_t pc)
{
    switch (VM_CLS(env->insns[pc].code)) {
    case VM_CLS_ALU: return check_alu(env, pc, false);
    case VM_CLS_ALU64: return check_alu(env, pc, true);
    case VM_CLS_JMP: return check_jmp(env, pc, false);
    case VM_CLS_JMP32: return check_jmp(env, pc, true);
    case VM_CLS_LD: return check_ld(env, pc);
    default: return check_mem(env, pc);
    }
}

unsigned vm_cfg_succ(const struct venv *env, uint32_t pc, uint32_t succ[2])
{
    const struct vm_insn *i = &env->insns[pc];
    unsigned cls = VM_CLS(i->code), op = VM_OP(i->code);
    if (i->code == VM_OPC_LD_IMM64) {
        succ[0] = pc + 2;
        return 1;
    }
    if (cls != VM_CLS_JMP && cls != VM_CLS_JMP32) {
        succ[0] = pc + 1;
        return 1;
    }
    if (op == VM_EXIT)
        return 0;
    if (op == VM_CALL) {
        succ[0] = pc + 1;
        return 1;
    }
    if (op == VM_JA) {
        succ[0] = pc + 1 + (uint32_t)(cls == VM_CLS_JMP32 ? i->imm : i->off);
        return 1;
    }
    succ[0] = pc + 1;
    succ[1] = pc + 1 + (uint32_t)(int32_t)i->off;
    return 2;
}

static bool is_local_call(const struct vm_insn *i)
{
    return i->code == (VM_CLS_JMP | VM_CALL) && vm_src(i) == VM_PSEUDO_CALL;
}

static int mark_ldimm(struct venv *env)
{
    for (uint32_t pc = 0; pc < env->n; pc++) {
        if (env->insns[pc].code == VM_OPC_LD_IMM64 && pc + 1 < env->n) {
            env->info[pc + 1].flags |= VI_LDIMM2;
            pc++;
        }
    }
    for (uint32_t pc = 0; pc < env->n; pc++) {
        if (env->info[pc].flags & VI_LDIMM2)
            continue;
        int err = check_encoding(env, pc);
        if (err)
            return err;
    }
    return 0;
}

static int find_funcs(struct venv *env)
{
    env->info[0].flags |= VI_FUNC;
    for (uint32_t pc = 0; pc < env->n; pc++)
        if (!(env->info[pc].flags & VI_LDIMM2) && is_local_call(&env->insns[pc]))
            env->info[pc + 1 + env->insns[pc].imm].flags |= VI_FUNC;
    uint32_t nf = 0;
    for (uint32_t pc = 0; pc < env->n; pc++)
        nf += (env->info[pc].flags & VI_FUNC) != 0;
    env->funcs = calloc(nf, sizeof(*env->funcs));
    if (!env->funcs)
        return -ENOMEM;
    env->nfuncs = nf;
    uint32_t f = 0;
    for (uint32_t pc = 0; pc < env->n; pc++) {
        if (env->info[pc].flags & VI_FUNC) {
            if (f > 0)
                env->funcs[f - 1].end = pc;
            env->funcs[f++].start = pc;
        }
        env->info[pc].func = f - 1;
    }
    env->funcs[nf - 1].end = env->n;
    return 0;
}

/* Every jump stays in its function; no function falls off its end. */
static int check_func_edges(struct venv *env)
{
    for (uint32_t f = 0; f < env->nfuncs; f++) {
        uint32_t last = env->funcs[f].end - 1;
        const struct vm_insn *li = &env->insns[last];
        bool ends = !(env->info[last].flags & VI_LDIMM2) &&
                    (li->code == (VM_CLS_JMP | VM_EXIT) || li->code == (VM_CLS_JMP | VM_JA) ||
                     li->code == (VM_CLS_JMP32 | VM_JA));
        if (!ends)
            return vm_verr_at(env, last, -EINVAL, "control falls off the end of the %s (the "
                              "last instruction is not exit or goto)",
                              f == 0 && env->nfuncs == 1 ? "program" : "function");
    }
    for (uint32_t pc = 0; pc < env->n; pc++) {
        uint32_t succ[2];
        if (env->info[pc].flags & VI_LDIMM2)
            continue;
        unsigned ns = vm_cfg_succ(env, pc, succ);
        for (unsigned k = 0; k < ns; k++)
            if (env->info[succ[k]].func != env->info[pc].func)
                return vm_verr_at(env, pc, -EINVAL, "jump from one function into another "
                                  "(target pc %u)", succ[k]);
    }
    return 0;
}

/* Call-graph depth by DFS; state 1 = on the DFS stack (a cycle if met). */
static int func_depth(struct venv *env, uint32_t f, uint8_t *mark)
{
    if (mark[f] == 2)
        return 0;
    if (mark[f] == 1)
        return vm_verr_at(env, env->funcs[f].start, -EINVAL, "recursive call: the function "
                          "at pc %u can call itself", env->funcs[f].start);
    mark[f] = 1;
    uint32_t depth = 1;
    for (uint32_t pc = env->funcs[f].start; pc < env->funcs[f].end; pc++) {
        if ((env->info[pc].flags & VI_LDIMM2) || !is_local_call(&env->insns[pc]))
            continue;
        uint32_t g = env->info[pc + 1 + env->insns[pc].imm].func;
        int err = func_depth(env, g, mark);
        if (err)
            return err;
        if (env->funcs[g].depth + 1 > depth)
            depth = env->funcs[g].depth + 1;
    }
    env->funcs[f].depth = depth;
    mark[f] = 2;
    return 0;
}

static int check_calls(struct venv *env)
{
    uint8_t *mark = calloc(env->nfuncs, 1);
    if (!mark)
        return -ENOMEM;
    int err = 0;
    for (uint32_t f = 0; f < env->nfuncs && !err; f++)
        err = func_depth(env, f, mark);
    free(mark);
    if (!err && env->funcs[0].depth > VM_MAX_CALL_DEPTH)
        err = vm_verr_at(env, 0, -EINVAL, "call chain too deep: %u frames (limit %u)",
                         env->funcs[0].depth, VM_MAX_CALL_DEPTH);
    return err;
}

/* Depth-first walk of one function from its entry: marks reached
 * instructions, function entries called from them, and post-order. */
static int walk_func(struct venv *env, uint32_t f, uint32_t *stack, uint8_t *state)
{
    uint32_t sp = 0, post = 0, start = env->funcs[f].start;
    uint32_t count = env->funcs[f].end - start;
    stack[sp++] = start;
    state[start] = 1;
    while (sp) {
        uint32_t pc = stack[sp - 1], succ[2];
        unsigned ns = vm_cfg_succ(env, pc, succ), k;
        env->info[pc].flags |= VI_REACHED;
        for (k = 0; k < ns; k++) {
            if (state[succ[k]] == 0)
                break;
        }
        if (k < ns) {
            state[succ[k]] = 1;
            stack[sp++] = succ[k];
            continue;
        }
        state[pc] = 2;
        env->info[pc].rpo = count - 1 - post++;
        sp--;
    }
    return 0;
}

static void mark_prune_points(struct venv *env)
{
    for (uint32_t pc = 0; pc < env->n; pc++) {
        const struct vm_insn *i = &env->insns[pc];
        uint32_t succ[2];
        if (env->info[pc].flags & VI_LDIMM2)
            continue;
        if (env->info[pc].flags & VI_FUNC)
            env->info[pc].flags |= VI_PRUNE;
        unsigned cls = VM_CLS(i->code), ns = vm_cfg_succ(env, pc, succ);
        for (unsigned k = 0; k < ns; k++)
            if (env->info[succ[k]].rpo <= env->info[pc].rpo)
                env->info[succ[k]].flags |= VI_LOOP | VI_PRUNE;
        if (cls != VM_CLS_JMP && cls != VM_CLS_JMP32)
            continue;
        if (VM_OP(i->code) == VM_CALL && vm_src(i) == VM_PSEUDO_CALL)
            env->info[pc + 1].flags |= VI_PRUNE;
        else if (VM_OP(i->code) != VM_CALL)
            for (unsigned k = 0; k < ns; k++)
                env->info[succ[k]].flags |= VI_PRUNE;
    }
}

static int check_reachable(struct venv *env)
{
    uint32_t *stack = malloc(sizeof(*stack) * env->n);
    uint8_t *state = calloc(env->n, 1);
    int err = stack && state ? 0 : -ENOMEM;
    for (uint32_t f = 0; f < env->nfuncs && !err; f++)
        err = walk_func(env, f, stack, state);
    free(stack);
    free(state);
    if (err)
        return err;
    /* A function is reachable if main is or some reached call targets it. */
    bool *called = calloc(env->nfuncs, sizeof(bool));
    if (!called)
        return -ENOMEM;
    called[0] = true;
    for (uint32_t pc = 0; pc < env->n; pc++)
        if ((env->info[pc].flags & VI_REACHED) && is_local_call(&env->insns[pc]))
            called[env->info[pc + 1 + env->insns[pc].imm].func] = true;
    for (uint32_t pc = 0; pc < env->n && !err; pc++) {
        bool reached = (env->info[pc].flags & VI_REACHED) && called[env->info[pc].func];
        if (!reached && !(env->info[pc].flags & VI_LDIMM2))
            err = vm_verr_at(env, pc, -EINVAL, "unreachable instruction");
    }
    free(called);
    return err;
}

int vm_cfg_check(struct venv *env)
{
    if (env->n == 0)
        return vm_verr_at(env, 0, -EINVAL, "empty program");
    int err = mark_ldimm(env);
    if (!err)
        err = find_funcs(env);
    if (!err)
        err = check_func_edges(env);
    if (!err)
        err = check_calls(env);
    if (!err)
        err = check_reachable(env);
    if (!err)
        mark_prune_points(env);
    return err;
}
