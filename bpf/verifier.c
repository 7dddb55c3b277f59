/*
 * bpf/verifier.c - static proof that an eBPF program is memory- and
 * type-safe (see verifier.h; internals in verifier_int.h).
 *
 * Algorithm (the Linux verifier's, with static precision):
 *   1. Structural pass (verifier_cfg.c): encodings, jump targets,
 *      functions, call graph, reachability, pruning points.
 *   2. Static analyses (verifier_flow.c): for every instruction, which
 *      registers may hold pointers, which are live, and which scalars'
 *      exact values can matter (precision).
 *   3. Abstract execution of every path from the entry with an abstract
 *      state: per register a type (uninitialised, scalar, pointer to the
 *      context/stack/input/output/read-only data/helper memory) and a value
 *      (scalar: signed/unsigned 64- and 32-bit ranges plus known bits;
 *      pointer: fixed offset plus a scalar variable part, and for buffer
 *      pointers an id and a proved range), per frame a stack of 8-byte
 *      slots with byte-granular initialisation and spilled registers.
 *      Each instruction is checked against the state and updates it; a
 *      conditional jump whose outcome is not decided queues the other side
 *      (refined by the condition) in a worklist.
 *   4. At pruning points the state is compared with the states stored
 *      there; one that is subsumed stops (verifier_state.c). Loops whose
 *      state repeats are thereby accepted: termination is the run-time
 *      instruction budget's job, memory safety is proved here. Waiting
 *      states are explored in (loop iteration, reverse post-order) order,
 *      so the paths of one iteration meet at join points together.
 *   5. Once a pruning point has seen more than a few states that were not
 *      subsumed, new ones are joined into a stored one (verifier_join.c),
 *      with widening to the program's constants at loop heads: a loop over
 *      a 4 KiB block converges in a few iterations instead of 4096. Scalars
 *      copied from each other (or offset by a constant, zero-extended or
 *      scaled), and the pointers made from them, stay linked, also across
 *      joins (which also link a pointer and a counter that moved together
 *      in both paths), so a bound learnt on one applies to all. Besides
 *      ranges and links a state carries distances to a buffer's end
 *      (bounds, or exact for `end - p`; verifier_dist.c), the sum of two
 *      linked values until its test, narrow stack stores, and a few
 *      values known to differ (verifier_neq.c). A load of an entry of a
 *      table of pointers in read-only data gives a pointer into the object
 *      the entry points to, one path per value the load may give
 *      (verifier_mem.c); clang's bit test of a constant splits the state
 *      per value of the shift amount (verifier_alu.c).
 *   6. If that exploration rejects the program, it is explored again
 *      without joins (the kernel's way, every iteration on its own): a
 *      rejection caused by the joins' loss of precision then disappears.
 *      That pass has smaller budgets (exact_budget()), so
 *      that a rejection comes about as fast as an acceptance.
 *   7. Limits on processed instructions, stored states and queued branches
 *      turn pathological programs into -E2BIG.
 * The first violation ends verification with a message naming the source
 * line (when the program has line info), the problem, the instruction and
 * the register state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/verifier_int.h"
#include "common/clock.h"

void vm_vlog(struct venv *env, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (!vm_vlogging(env))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    env->opts->log(env->opts->log_arg, line);
}

static int record(struct venv *env, uint32_t pc, int code, uint16_t regs, const char *fmt,
                  va_list ap)
{
    if (env->err_code)
        return env->err_code;
    vsnprintf(env->err, sizeof(env->err), fmt, ap);
    env->err_code = code;
    env->err_joined = env->cur && env->cur->joined;
    env->err_pc = pc;
    env->err_regs = regs;
    return code;
}

int vm_verr(struct venv *env, uint16_t regs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = record(env, env->pc, -EACCES, regs, fmt, ap);
    va_end(ap);
    return code;
}

int vm_verr_at(struct venv *env, uint32_t pc, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    code = record(env, pc, code, 0, fmt, ap);
    va_end(ap);
    return code;
}

const char *vm_none_hint(const struct vreg *r, char *buf, size_t size)
{
    if (r->type != VT_NONE || r->off <= 0) {
        buf[0] = 0;
        return buf;
    }
    snprintf(buf, size, " (a copy of R%u, made at pc %d, which was never set; if clang -O1 made "
             "that copy on a path that never uses it, the verifier could not rule the path "
             "out: build with -O2, or initialise the variable)", r->id, r->off - 1);
    return buf;
}

int vm_check_reg_init(struct venv *env, unsigned regno)
{
    const struct vreg *r = vm_reg(env, regno);
    char hint[256];
    if (r->type != VT_NONE)
        return 0;
    return vm_verr(env, (uint16_t)(1u << regno), "R%u is read before it is initialised%s",
                   regno, vm_none_hint(r, hint, sizeof(hint)));
}

/* --- one instruction -------------------------------------------------------- */

static void fall_through(struct venv *env, uint32_t n)
{
    uint32_t next = env->pc + n;
    if (env->info[next].rpo <= env->info[env->pc].rpo)
        env->cur->backedges++;
    env->pc = next;
}

/* Returns 0 to continue at env->pc, 1 when the path ended, or -errno. */
static int step(struct venv *env)
{
    const struct vm_insn *insn = &env->insns[env->pc];
    int err;
    switch (VM_CLS(insn->code)) {
    case VM_CLS_ALU:
    case VM_CLS_ALU64: err = vm_check_alu(env, insn); break;
    case VM_CLS_LDX: err = vm_check_ldx(env, insn); break;
    case VM_CLS_ST: err = vm_check_st(env, insn); break;
    case VM_CLS_STX:
        err = VM_MODE(insn->code) == VM_ATOMIC ? vm_check_atomic(env, insn)
                                               : vm_check_st(env, insn);
        break;
    case VM_CLS_LD:
        err = vm_check_ld_imm64(env, insn);
        if (!err)
            fall_through(env, 2);
        return err;
    default:
        if (VM_OP(insn->code) == VM_CALL)
            return vm_check_call(env, insn);
        if (VM_OP(insn->code) == VM_EXIT)
            return vm_check_exit(env);
        return vm_check_jmp(env, insn);
    }
    if (!err)
        fall_through(env, 1);
    return err;
}

static void log_insn(struct venv *env)
{
    char text[160];
    vm_disasm_insn(env->prog, env->pc, text, sizeof(text));
    vm_vlog(env, "%u: %s", env->pc, text);
}

static void log_state(struct venv *env, const char *what)
{
    char regs[768];
    vm_regs_format(env, 0xffff, regs, sizeof(regs));
    vm_vlog(env, "%u: %s (frame %u, back edges %u):%s", env->pc, what,
            env->cur->nframes - 1, env->cur->backedges, regs);
}

/* Runs the current state until its path ends (or it yields). */
static int run_path(struct venv *env)
{
    for (;;) {
        if (env->info[env->pc].flags & VI_PRUNE) {
            if (vm_state_should_yield(env))
                return vm_state_push(env, env->pc);
            int seen = vm_state_visit(env);
            if (seen)
                return seen < 0 ? seen : 0;
            if (vm_vlogging(env))
                log_state(env, "state");
        }
        if (++env->res->insns_processed > env->max_insns)
            return vm_verr_at(env, env->pc, -E2BIG, "program too complex: more than %llu "
                              "instructions processed", (unsigned long long)env->max_insns);
        if (vm_vlogging(env))
            log_insn(env);
        int r = step(env);
        if (r)
            return r < 0 ? r : 0;
    }
}

static void init_state(struct venv *env)
{
    struct vframe *fr = &env->cur->frames[0];
    env->cur->nframes = 1;
    env->cur->backedges = 0;
    env->cur->joined = 0;
    env->cur->nneq = 0;
    env->cur->nzone = 0;
    env->cur->end_lo[0] = env->cur->end_lo[1] = 0;
    for (unsigned r = 0; r < VM_NREGS; r++)
        vm_mark_none(&fr->regs[r]);
    vm_mark_scalar(&fr->regs[1], vs_const(0));
    fr->regs[1].type = VT_CTX;
    vm_mark_scalar(&fr->regs[VM_REG_FP], vs_const(0));
    fr->regs[VM_REG_FP].type = VT_STACK;
    fr->callsite = 0;
    fr->func = 0;
    fr->nslots = 0;
    env->pc = 0;
}

static int explore(struct venv *env)
{
    env->cur = malloc(sizeof(*env->cur));
    env->tmp = malloc(sizeof(*env->tmp));
    env->seen = calloc(env->n, sizeof(*env->seen));
    if (!env->cur || !env->tmp || !env->seen || vm_join_init(env))
        return -ENOMEM;
    init_state(env);
    if (vm_vlogging(env))
        log_state(env, "entry");
    do {
        int err = run_path(env);
        if (err)
            return err;
    } while (vm_state_pop(env) && (!vm_vlogging(env) || (log_state(env, "branch"), 1)));
    return 0;
}

/* --- the rejection message -------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void format_error(struct venv *env, struct vm_verify_result *res)
{
    char where[160] = "", text[160] = "?", regs[640] = "";
    const struct vm_line_info *li = env->err_pc < env->n ? vm_prog_line(env->prog, env->err_pc)
                                                         : NULL;
    if (li && li->line && li->file)
        snprintf(where, sizeof(where), "%s:%u: ", base_name(li->file), li->line);
    if (env->err_pc < env->n)
        vm_disasm_insn(env->prog, env->err_pc, text, sizeof(text));
    if (env->cur && env->err_code == -EACCES)
        vm_regs_format(env, 0xffff, regs, sizeof(regs));
    int n = snprintf(res->msg, sizeof(res->msg), "%s%s\n  at pc %u: %s", where, env->err,
                     env->err_pc, text);
    if (n > 0 && (size_t)n < sizeof(res->msg) && li && li->src)
        n += snprintf(res->msg + n, sizeof(res->msg) - (size_t)n, "\n  source: %s", li->src);
    if (n > 0 && (size_t)n < sizeof(res->msg) && regs[0])
        snprintf(res->msg + n, sizeof(res->msg) - (size_t)n, "\n  registers:%s", regs);
    res->error_pc = env->err_pc;
}

/* Frees what one exploration allocated (the static analyses stay). */
static void explore_free(struct venv *env)
{
    vm_state_free_all(env);
    free(env->cur);
    free(env->tmp);
    free(env->arrivals);
    free(env->thr_u);
    free(env->thr_s);
    free(env->eqk);
    env->cur = env->tmp = NULL;
    env->arrivals = NULL;
    env->thr_u = NULL;
    env->thr_s = NULL;
    env->nthr = 0;
    env->eqk = NULL;
    env->neqk = 0;
}

static void env_free(struct venv *env)
{
    explore_free(env);
    free(env->info);
    free(env->funcs);
}

/* What the second, no-join exploration may use: enough for loops of a
 * few hundred short iterations (the programs that need it in the test
 * suites and corpus take at most 836 instructions and 195 states; loops
 * that kept a pointer and a counter moving together, which needed 45,063
 * and 8,390 before joins kept their link, no longer reach it), or twice
 * what the first exploration took. Most rejections that reach this pass
 * would run it to the full limit (1,000,000 instructions, 120-1000 ms)
 * and then report the first pass's reason anyway; with this bound a
 * rejection costs about as much as an acceptance (16,384 and 4,096 made
 * the corpus's slowest rejections take 14-16 ms, over the 10 ms of a
 * program's verification). */
#define VM_EXACT_MIN_INSNS 4096
#define VM_EXACT_MIN_STATES 1024

static uint64_t exact_budget(uint64_t first, uint64_t floor, uint64_t limit)
{
    uint64_t b = 2 * first > floor ? 2 * first : floor;
    return b < limit ? b : limit;
}

/* A rejection of a path that went through a join may come from the
 * join's loss of precision: explore again without joins (the kernel's way: every loop
 * iteration separately, up to exact_budget()). Returns the final error;
 * res holds the message of the run that explains it best. */
static int explore_exact(struct venv *env, struct vm_verify_result *res)
{
    char first[sizeof(res->msg)];
    uint32_t first_pc = res->error_pc;
    uint64_t processed = res->insns_processed, states = res->states;
    memcpy(first, res->msg, sizeof(first));
    explore_free(env);
    vm_vlog(env, "rejected while joining states; exploring again without joins");
    env->exact = true;
    env->err_code = 0;
    env->max_depth = 0;
    env->id_gen = 0;
    res->insns_processed = 0;
    uint64_t max_insns = env->max_insns, max_states = env->max_states;
    env->max_insns = exact_budget(processed, VM_EXACT_MIN_INSNS, max_insns);
    env->max_states = states + exact_budget(states, VM_EXACT_MIN_STATES, max_states);
    if (env->max_states > max_states)
        env->max_states = max_states;
    int err = explore(env);
    env->max_insns = max_insns;
    env->max_states = max_states;
    if (err && err != -E2BIG)
        format_error(env, res);
    if (err == -E2BIG) {   /* the first reason is the useful one */
        memcpy(res->msg, first, sizeof(first));
        res->error_pc = first_pc;
        err = -EACCES;
    }
    res->exact_insns = res->insns_processed;
    res->insns_processed += processed;
    res->states += states;
    return err;
}

int vm_verify(struct vm_prog *prog, const struct vm_verify_opts *opts,
              struct vm_verify_result *res)
{
    if (!prog || !res)
        return -EINVAL;
    uint64_t start = now_ns();
    memset(res, 0, sizeof(*res));
    struct venv env = {
        .prog = prog,
        .insns = prog->insns,
        .n = prog->ninsns,
        .opts = opts,
        .res = res,
        .max_states = opts && opts->max_states ? opts->max_states : 1000000,
        .max_insns = opts && opts->max_insns ? opts->max_insns : 1000000,
    };
    prog->verified = false;
    env.info = calloc(env.n ? env.n : 1, sizeof(*env.info));
    int err = env.info ? vm_cfg_check(&env) : -ENOMEM;
    if (!err)
        err = vm_rodata_ptrs_check(&env);
    if (!err)
        err = vm_flow_analyse(&env);
    bool explored = !err;
    if (!err)
        err = explore(&env);
    if (err == -ENOMEM && !env.err_code)
        snprintf(res->msg, sizeof(res->msg), "out of memory while verifying");
    else if (err)
        format_error(&env, res);
    if (explored && err == -EACCES && env.err_joined)
        err = explore_exact(&env, res);
    if (err && vm_vlogging(&env))
        vm_vlog(&env, "rejected: %s", res->msg);
    if (!err) {
        prog->verified = true;
        prog->stack_depth = env.max_depth;
    }
    env_free(&env);
    res->elapsed_ns = now_ns() - start;
    return err;
}
