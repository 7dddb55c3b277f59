/*
 * bpf/verifier_call.c - helper calls, local (bpf-to-bpf) calls and exit.
 *
 * Helper calls are checked against the helper's declared signature
 * (bpf/helpers.h): scalars must be initialised non-pointers (a pointer
 * passed as a number would leak its address), memory arguments must point
 * into readable/writable memory big enough for the largest value the
 * following size argument can have, and that size must be bounded (and
 * non-zero for VM_ARG_SIZE), a context argument must be the context
 * pointer itself (offset 0). r1-r5 are clobbered, r0 gets the return kind:
 * a VM_RET_INDEX helper's r0 is [-1, B - 1] with B the largest value the
 * bounding argument can have (at most VM_MAX_BUF_SIZE), so a program that
 * checks r0 >= 0 may use it as an offset without another bound.
 * A helper writing into the stack does not make bytes initialised (it may
 * write fewer than the size); it does destroy spilled registers there.
 *
 * Local calls push a frame: r1-r5 are passed, r6-r9 and the callee's stack
 * start uninitialised, r10 points to the new frame. Exit from a callee
 * returns r0 to the caller and clobbers the caller's r1-r5; exit from the
 * main function requires r0 to be an initialised scalar.
 */
#include <errno.h>

#include "bpf/verifier_int.h"

static uint16_t bit(unsigned r)
{
    return (uint16_t)(1u << r);
}

struct memarg {
    unsigned regno;        /* 0: none pending */
    bool write;
    struct vreg ptr;
    uint64_t size;         /* max size, after the size argument was seen */
};

static int arg_scalar(struct venv *env, const struct vm_helper *h, unsigned regno)
{
    int err = vm_check_reg_init(env, regno);
    if (!err && vm_is_ptr(vm_reg(env, regno)))
        return vm_verr(env, bit(regno), "R%u: %s takes a number here, not a pointer to %s "
                       "(passing it would leak the address)", regno, h->name,
                       vm_vtype_desc(vm_reg(env, regno)->type));
    return err;
}

static int arg_mem(struct venv *env, const struct vm_helper *h, unsigned regno, bool write,
                   struct memarg *m)
{
    int err = vm_check_reg_init(env, regno);
    if (err)
        return err;
    if (!vm_is_ptr(vm_reg(env, regno)))
        return vm_verr(env, bit(regno), "R%u: %s expects a pointer to %s memory, got a "
                       "scalar", regno, h->name, write ? "writable" : "readable");
    *m = (struct memarg){regno, write, *vm_reg(env, regno), 0};
    return 0;
}

static int arg_size(struct venv *env, const struct vm_helper *h, unsigned regno,
                    bool zero_ok, struct memarg *m)
{
    int err = arg_scalar(env, h, regno);
    if (err)
        return err;
    const struct vm_scalar *s = &vm_reg(env, regno)->v;
    char t[96];
    vs_format(s, t, sizeof(t));
    if (m->regno == 0)
        return vm_verr_at(env, env->pc, -EACCES, "internal error: helper %s has a size "
                          "argument without a memory argument", h->name);
    if (s->umax > VM_MAX_VAR_OFF)
        return vm_verr(env, bit(regno) | bit(m->regno), "R%u: size passed to %s is not "
                       "bounded (%s): compare it with a limit first", regno, h->name, t);
    if (!zero_ok && s->umin == 0)
        return vm_verr(env, bit(regno), "R%u: size passed to %s may be 0 (%s)", regno,
                       h->name, t);
    /* a size bounded by the distance from this very pointer to its end
     * (`end - p`, or less) needs no constant bound (verifier_dist.c) */
    if (vm_dist_covers(&m->ptr, vm_reg(env, regno)))
        err = vm_check_helper_mem(env, m->regno, 0, 0, m->write);
    else
        err = vm_check_helper_mem(env, m->regno, s->umin, s->umax, m->write);
    m->size = s->umax;
    return err;
}

static int arg_ctx(struct venv *env, const struct vm_helper *h, unsigned regno)
{
    int err = vm_check_reg_init(env, regno);
    const struct vreg *r = vm_reg(env, regno);
    if (!err && (r->type != VT_CTX || r->off != 0 || !vs_is_const(&r->v) || r->v.t.value))
        return vm_verr(env, bit(regno), "R%u: %s takes the context pointer itself here "
                       "(ctx as the program got it), not %s", regno, h->name,
                       vm_vtype_desc(r->type));
    return err;
}

static int check_args(struct venv *env, const struct vm_helper *h)
{
    struct memarg m = {0}, wrote[5];
    unsigned nwrote = 0;
    int err = 0;
    for (unsigned a = 0; a < 5 && !err; a++) {
        unsigned regno = a + 1;
        enum vm_arg_kind k = h->args[a];
        switch (k) {
        case VM_ARG_NONE: break;
        case VM_ARG_SCALAR: err = arg_scalar(env, h, regno); break;
        case VM_ARG_MEM_R: err = arg_mem(env, h, regno, false, &m); break;
        case VM_ARG_MEM_W: err = arg_mem(env, h, regno, true, &m); break;
        case VM_ARG_SIZE: err = arg_size(env, h, regno, false, &m); break;
        case VM_ARG_SIZE_OR_ZERO: err = arg_size(env, h, regno, true, &m); break;
        case VM_ARG_CTX: err = arg_ctx(env, h, regno); break;
        }
        if (!err && (k == VM_ARG_SIZE || k == VM_ARG_SIZE_OR_ZERO)) {
            if (m.write && m.ptr.type == VT_STACK)
                wrote[nwrote++] = m;
            m.regno = 0;
        }
    }
    if (!err && m.regno)
        return vm_verr_at(env, env->pc, -EACCES, "internal error: helper %s has a memory "
                          "argument without a size", h->name);
    for (unsigned k = 0; k < nwrote && !err; k++)
        vm_helper_wrote_stack(env, &wrote[k].ptr, wrote[k].size);
    return err;
}

/* r0 of a VM_RET_INDEX helper: [-1, B - 1], B = umax of the bounding
 * argument capped at VM_MAX_BUF_SIZE (read before r1-r5 are clobbered). */
static struct vm_scalar index_range(struct venv *env, const struct vm_helper *h)
{
    uint64_t b = VM_MAX_BUF_SIZE;
    const struct vreg *r = vm_reg(env, h->ret_arg);
    if (h->ret_arg >= 1 && h->ret_arg <= 5 && r->type == VT_SCALAR && r->v.umax < b)
        b = r->v.umax;
    return vs_srange(-1, (int64_t)b - 1);
}

/* r0 < the bounding argument: a distance bound on that argument bounds
 * r0 one byte tighter (verifier_dist.c). */
static void index_dist(struct venv *env, const struct vm_helper *h, struct vreg *out)
{
    const struct vreg *r = h->ret_arg >= 1 && h->ret_arg <= 5 ? vm_reg(env, h->ret_arg) : NULL;
    vm_mark_unknown(out);
    if (!r || r->type != VT_SCALAR || r->v.smin < 0)
        return;
    vm_dist_copy(out, r);
    out->dist &= (uint8_t)~(VM_DIST_EQ(0) | VM_DIST_EQ(1));   /* r0 < r: no longer exact */
    for (unsigned k = 0; k < 2; k++)
        if (out->doff[k] < INT32_MAX)
            out->doff[k]++;
        else
            out->dist &= (uint8_t)~(1u << k);
}

static int helper_call(struct venv *env, const struct vm_helper *h)
{
    int err = check_args(env, h);
    if (err)
        return err;
    struct vm_scalar idx = h->ret == VM_RET_INDEX ? index_range(env, h) : vs_unknown();
    struct vreg bound;
    index_dist(env, h, &bound);
    for (unsigned r = 1; r <= 5; r++)
        vm_mark_none(vm_reg(env, r));
    struct vreg *r0 = vm_reg(env, 0);
    vm_mark_unknown(r0);
    if (h->ret == VM_RET_MEM) {
        vm_mark_scalar(r0, vs_const(0));
        r0->type = VT_MEM;
        r0->range = h->ret_size;
    } else if (h->ret == VM_RET_INDEX) {
        vm_mark_scalar(r0, idx);
        vm_dist_copy(r0, &bound);
    }
    env->pc++;
    return 0;
}

static int local_call(struct venv *env, const struct vm_insn *insn)
{
    struct vstate *st = env->cur;
    uint32_t target = env->pc + 1 + (uint32_t)insn->imm;
    if (st->nframes >= VM_MAX_CALL_DEPTH)
        return vm_verr(env, 0, "call depth exceeds %u frames", VM_MAX_CALL_DEPTH);
    struct vframe *caller = vm_curframe(env), *fr = &st->frames[st->nframes];
    for (unsigned r = 0; r < VM_NREGS; r++)
        vm_mark_none(&fr->regs[r]);
    for (unsigned r = 1; r <= 5; r++)
        fr->regs[r] = caller->regs[r];
    vm_mark_scalar(&fr->regs[VM_REG_FP], vs_const(0));
    fr->regs[VM_REG_FP].type = VT_STACK;
    fr->regs[VM_REG_FP].frame = (uint8_t)st->nframes;
    fr->callsite = env->pc;
    fr->func = env->info[target].func;
    fr->nslots = 0;
    st->nframes++;
    if (vm_vlogging(env))
        vm_vlog(env, "%u: call into function at pc %u (frame %u)", env->pc, target,
                st->nframes - 1);
    env->pc = target;
    return 0;
}

/* callx (RFC 9669's BPF_CALL | BPF_X): the helper whose number is in the
 * dst register. Accepted only where that register holds one known number
 * on every path here, naming a helper: the call is then checked exactly
 * as `call N` (its arguments, its result), and at run time the register
 * holds N (both engines look the number up again and stop with an error
 * if it names no helper, which a verified program cannot reach).
 * verifier_flow.c makes the register precise, so pruning never merges a
 * state where it holds another number. */
static int helper_callx(struct venv *env, const struct vm_insn *insn)
{
    unsigned d = vm_dst(insn);
    const struct vreg *r = vm_reg(env, d);
    if (r->type != VT_SCALAR)
        return vm_verr(env, bit(d), "callx R%u: the register must hold a helper's number, "
                       "not %s", d, r->type == VT_NONE ? "an uninitialised value"
                                                       : vm_vtype_desc(r->type));
    if (!vs_is_const(&r->v))
        return vm_verr(env, bit(d), "callx R%u: the helper's number must be known here (R%u "
                       "is a range of values on some path): call the helper by its number "
                       "instead of through a register", d, d);
    uint64_t id = r->v.t.value;
    const struct vm_helper *h = vm_helper_callx(id);
    if (!h)
        return vm_verr(env, bit(d), "callx R%u: %llu is not the number of a helper", d,
                       (unsigned long long)id);
    if (vm_vlogging(env))
        vm_vlog(env, "%u: callx R%u calls helper %s (%llu)", env->pc, d, h->name,
                (unsigned long long)id);
    return helper_call(env, h);
}

int vm_check_call(struct venv *env, const struct vm_insn *insn)
{
    if (vm_src(insn) == VM_PSEUDO_CALL)
        return local_call(env, insn);
    if (VM_SRC(insn->code) == VM_X)
        return helper_callx(env, insn);
    const struct vm_helper *h = vm_helper_find((uint32_t)insn->imm);
    if (!h)
        return vm_verr(env, 0, "call to unknown helper %d", insn->imm);
    return helper_call(env, h);
}

int vm_check_exit(struct venv *env)
{
    struct vstate *st = env->cur;
    struct vframe *fr = vm_curframe(env);
    const struct vreg *r0 = &fr->regs[0];
    if (st->nframes == 1) {
        char hint[256];
        if (r0->type == VT_NONE)
            return vm_verr(env, bit(0), "R0 is not initialised at exit: the program must "
                           "return a value%s", vm_none_hint(r0, hint, sizeof(hint)));
        if (vm_is_ptr(r0))
            return vm_verr(env, bit(0), "R0 points to %s at exit: returning a pointer would "
                           "leak an address", vm_vtype_desc(r0->type));
        return 1;
    }
    if (r0->type == VT_STACK && r0->frame == st->nframes - 1)
        return vm_verr(env, bit(0), "R0 points to the function's own stack, which is gone "
                       "after it returns");
    struct vframe *caller = &st->frames[st->nframes - 2];
    caller->regs[0] = *r0;
    for (unsigned r = 1; r <= 5; r++)
        vm_mark_none(&caller->regs[r]);
    env->pc = fr->callsite + 1;
    st->nframes--;
    if (vm_vlogging(env))
        vm_vlog(env, "%u: return to frame %u", env->pc, st->nframes - 1);
    return 0;
}
