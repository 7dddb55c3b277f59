/*
 * bpf/verifier_alu.c - ALU and ALU64 instructions.
 *
 * Scalars go through the abstract domain of vscalar.c. Pointers allow
 * only: 64-bit mov, pointer +/- a bounded scalar (a constant changes the
 * fixed offset; anything else the variable part, and a buffer pointer
 * then gets a fresh id with nothing checked yet), and the difference of
 * two pointers into the same region (a scalar). Everything else on a
 * pointer - 32-bit operations, multiplication, masking, negation, byte
 * swaps, sign extension - is rejected, so a pointer's bits never become a
 * scalar the program could leak.
 */
#include <errno.h>

#include "bpf/verifier_int.h"

static uint16_t bit(unsigned r)
{
    return (uint16_t)(1u << r);
}

static const char *op_name(unsigned op)
{
    static const char *const names[16] = {
        "add", "sub", "mul", "div", "or", "and", "lsh", "rsh",
        "neg", "mod", "xor", "mov", "arsh", "byte swap", "?", "?",
    };
    return names[op >> 4];
}

/* The second operand: a register, or the immediate (sign-extended to 64
 * bits; 32-bit operations use its low half). */
static struct vreg operand(struct venv *env, const struct vm_insn *insn)
{
    struct vreg r;
    if (VM_SRC(insn->code) == VM_X)
        return *vm_reg(env, vm_src(insn));
    vm_mark_scalar(&r, vs_const((uint64_t)(int64_t)insn->imm));
    return r;
}

static bool sane_scalar(const struct vm_scalar *s)
{
    return s->smin >= -VM_MAX_VAR_OFF && s->smax <= VM_MAX_VAR_OFF;
}

static int check_offset_ok(struct venv *env, unsigned dst, const struct vreg *p)
{
    if (p->off < -VM_MAX_VAR_OFF || p->off > VM_MAX_VAR_OFF || !sane_scalar(&p->v))
        return vm_verr(env, bit(dst), "R%u: pointer offset out of range (more than %d bytes "
                       "from the start of %s)", dst, VM_MAX_VAR_OFF, vm_vtype_desc(p->type));
    return 0;
}

/* ptr + s with ptr the buffer's start plus a constant (id 0, variable
 * part c) and s = b + s.off (a linked scalar): the new variable part is
 * b + (s.off + c) (invariant 7). */
static void link_var(struct vreg *ptr, const struct vreg *s, bool sub)
{
    /* zext32(b + off) and (b + off) << k link too when the pointer's own
     * part is 0; from a pointer of a group (id != 0, v = vG), a plain one */
    bool start = ptr->id == 0 && vs_is_const(&ptr->v);
    bool zero = start && ptr->v.t.value == 0;
    bool zext = s->sflags == VS_ZEXT && zero;
    bool scaled = vm_link_scale(s->sflags) && zero;
    bool group = ptr->id != 0 && s->sflags == 0 && (ptr->type == VT_IN || ptr->type == VT_OUT);
    bool ok = !sub && (start || group) && s->type == VT_SCALAR && s->id &&
              (s->sflags == 0 || zext || scaled);
    vm_row_unlink(ptr);
    int64_t d = ok ? (int64_t)s->off + (start ? (int64_t)ptr->v.t.value : 0) : 0;
    ptr->sflags &= (uint8_t)~(VS_LZEXT | VS_SCALE_MASK);
    ptr->lid = ok && d >= INT32_MIN && d <= INT32_MAX ? s->id : 0;
    ptr->loff = ptr->lid ? (int32_t)d : 0;
    ptr->lgid = ptr->lid && group ? ptr->id : 0;
    if (ptr->lid && zext)
        ptr->sflags |= VS_LZEXT;
    if (ptr->lid && scaled)
        ptr->sflags |= (uint8_t)(s->sflags & VS_SCALE_MASK);
}

/* ptr + s with s = b + s.off a linked scalar that is the constant c (the
 * loop's first iteration, or a path where the counter is known): ptr.off
 * takes c, and its constant variable part V is b + (V + s.off - c), a
 * link as link_var makes (invariant 7), so that a join with the paths
 * where the counter varies keeps it. zext32(b + s.off) = c links the same
 * way modulo 2^32 (VS_LZEXT). */
static void link_const(struct vreg *ptr, const struct vreg *s, int64_t c)
{
    /* from a pointer of a group (v = vG): vG = vG + b + (s.off - c) */
    bool start = ptr->id == 0 && vs_is_const(&ptr->v);
    bool group = ptr->id != 0 && s->sflags == 0 && (ptr->type == VT_IN || ptr->type == VT_OUT);
    bool ok = (start || group) && s->type == VT_SCALAR && s->id &&
              (s->sflags == 0 || s->sflags == VS_ZEXT);
    int64_t d = ok ? (start ? (int64_t)ptr->v.t.value : 0) + s->off - c : 0;
    if (!ok || d < INT32_MIN || d > INT32_MAX)
        return;
    vm_row_unlink(ptr);
    ptr->lid = s->id;
    ptr->loff = (int32_t)d;
    ptr->lgid = group ? ptr->id : 0;
    ptr->sflags = (uint8_t)((ptr->sflags & ~(VS_LZEXT | VS_SCALE_MASK)) |
                            (s->sflags == VS_ZEXT ? VS_LZEXT : 0));
}

/* ptr (+|-) scalar into dst. */
static int ptr_add(struct venv *env, unsigned dst, struct vreg ptr, const struct vreg *sreg,
                   bool sub)
{
    const struct vm_scalar *s = &sreg->v;
    bool konst = vs_is_const(s);
    bool fixed_only = ptr.type == VT_CTX || ptr.type == VT_IN_END || ptr.type == VT_OUT_END;
    char t[96];
    if (ptr.sflags & VS_WILD) {   /* stays wild, whatever is added */
        *vm_reg(env, dst) = ptr;
        return 0;
    }
    if (!sane_scalar(s)) {
        vs_format(s, t, sizeof(t));
        return vm_verr(env, bit(dst), "R%u: adding an unbounded value %s to a pointer to %s "
                       "is not allowed (bound it with a comparison first%s)", dst, t,
                       vm_vtype_desc(ptr.type),
                       ptr.type == VT_IN || ptr.type == VT_OUT
                           ? "; if it is an index you checked through another pointer or "
                             "another sum, clang recomputed the address from the base: "
                             "compare the pointer you access itself, `q = p + i; if (q + 1 > "
                             "end) ...; *q`, or keep the index below a constant"
                           : "");
    }
    vm_row_narrow(env, &ptr);   /* a table row: its index bounds it */
    if (!konst && fixed_only) {
        vs_format(s, t, sizeof(t));
        return vm_verr(env, bit(dst), "R%u: variable offset %s into %s is not allowed", dst, t,
                       vm_vtype_desc(ptr.type));
    }
    if (konst) {
        int64_t c = (int64_t)s->t.value;
        ptr.off = (int32_t)(sub ? ptr.off - c : ptr.off + c);
        vm_back_move(&ptr, sub ? -c : c);   /* an end pointer's lower bound */
        /* a link whose base no register holds any more bounds nothing:
         * the counter added (`p + n` with n = 0 in a callee whose p came
         * linked from the caller) is the one to follow */
        if (!sub && (!ptr.lid || !vm_link_member(env, ptr.lid)))
            link_const(&ptr, sreg, c);
    } else {
        int64_t vlim = sub ? INT64_MAX : vm_dist_var_limit(&ptr, sreg);
        struct vreg zp = ptr;
        bool zlink = !sub && vm_zone_link(env, &zp, sreg);   /* (x + y) from a sum */
        link_var(&ptr, sreg, sub);
        if (zlink) {
            ptr.lid = zp.lid, ptr.loff = zp.loff, ptr.lgid = 0;
            ptr.sflags &= (uint8_t)~(VS_LZEXT | VS_SCALE_MASK);
        }
        vs_alu(&ptr.v, s, sub ? VM_SUB : VM_ADD, true, false);
        if (vlim != INT64_MAX) {   /* `p += len` with len <= end - p */
            struct vm_scalar lim = vs_const((uint64_t)vlim), v = ptr.v;
            if (vs_refine(&v, &lim, VM_JSLE, true, true))
                ptr.v = v;
        }
        if (ptr.type == VT_IN || ptr.type == VT_OUT) {
            /* The base moves by s: what was proved beyond the old base
             * still holds beyond the new one, less the most s can be. */
            bool keep = !sub && s->smin >= 0 && ptr.range > s->umax;
            uint32_t by_dist = sub ? 0 : vm_dist_range_after_add(&ptr, sreg);
            ptr.range = keep ? ptr.range - (uint32_t)s->umax : 0;
            if (by_dist > ptr.range)
                ptr.range = by_dist;
            ptr.id = ++env->id_gen;
            vm_back_note(env, &ptr);
        }
    }
    int err = check_offset_ok(env, dst, &ptr);
    if (!err)
        *vm_reg(env, dst) = ptr;
    return err;
}

/* Gives src a link id (if it has none) that a copy will share. */
static void link_src(struct venv *env, struct vreg *s)
{
    if (s->type == VT_SCALAR && s->id == 0) {
        s->id = ++env->id_gen;
        s->sflags = 0;
        s->off = 0;
        vm_zone_named(env, s);   /* a sum it holds becomes a fact */
    }
}

static int family(const struct vreg *r)
{
    switch (r->type) {
    case VT_IN:
    case VT_IN_END: return VT_IN;
    case VT_OUT:
    case VT_OUT_END: return VT_OUT;
    case VT_STACK: return VT_STACK + 16 * r->frame;
    default: return r->type;
    }
}

/* a - b for two pointers into the same region: a scalar. */
static int ptr_diff(struct venv *env, unsigned dst, const struct vreg *a, const struct vreg *b)
{
    if (family(a) != family(b))
        return vm_verr(env, bit(dst), "R%u: subtracting pointers into different regions (%s "
                       "minus %s)", dst, vm_vtype_desc(a->type), vm_vtype_desc(b->type));
    bool wild = (a->sflags | b->sflags) & VS_WILD;
    bool buf = a->type == VT_IN || a->type == VT_OUT;
    /* same buffer group: the same variable part, whatever it is */
    bool same_group = a->type == b->type && buf && a->id == b->id && !wild;
    bool same_var = same_group || (a->type == b->type && !wild && vs_is_const(&a->v) &&
                                   vs_is_const(&b->v) && !buf);
    struct vreg *d = vm_reg(env, dst);
    struct vreg pa = *a, pb = *b;
    if (same_group) {
        vm_mark_scalar(d, vs_const((uint64_t)((int64_t)pa.off - pb.off)));
    } else if (!wild && (pa.type == VT_IN_END || pa.type == VT_OUT_END) &&
               (pb.type == VT_IN || pb.type == VT_OUT)) {
        vm_dist_make(d, &pa, &pb);   /* end - p: a distance (verifier_dist.c) */
    } else if (same_var) {
        vm_mark_scalar(d, vs_const((uint64_t)((int64_t)pa.off + (int64_t)pa.v.t.value -
                                              (int64_t)pb.off - (int64_t)pb.v.t.value)));
    } else if (!wild && pa.type == pb.type && buf) {
        /* two pointers into one buffer: both are base + off + v, bounded;
         * a <= END - (a.range - a.off) makes a - b a distance for b */
        vm_mark_scalar(d, vs_srange((int64_t)pa.off + pa.v.smin - pb.off - pb.v.smax,
                                    (int64_t)pa.off + pa.v.smax - pb.off - pb.v.smin));
        if (vm_dist_le_end(&pa))
            vm_dist_add(d, vm_buf_index(pb.type), pb.id,
                        (int64_t)pb.off + pa.range - pa.off);
    } else {
        vm_mark_unknown(d);
    }
    return 0;
}

static int ptr_alu(struct venv *env, const struct vm_insn *insn, const struct vreg *s)
{
    unsigned dst = vm_dst(insn), op = VM_OP(insn->code);
    struct vreg *d = vm_reg(env, dst);
    const struct vreg *p = vm_is_ptr(d) ? d : s;
    if (VM_CLS(insn->code) == VM_CLS_ALU)
        return vm_verr(env, bit(dst), "32-bit %s on a pointer to %s is not allowed",
                       op_name(op), vm_vtype_desc(p->type));
    if (op != VM_ADD && op != VM_SUB)
        return vm_verr(env, bit(dst), "pointer arithmetic with %s is not allowed (R%u points "
                       "to %s)", op_name(op), vm_is_ptr(d) ? dst : vm_src(insn),
                       vm_vtype_desc(p->type));
    if (VM_SRC(insn->code) == VM_X &&
        !(env->info[env->pc].ptr & (bit(dst) | bit(vm_src(insn)))))
        return vm_verr_at(env, env->pc, -EACCES, "internal error: pointer in R%u where the "
                          "static analysis found none", vm_is_ptr(d) ? dst : vm_src(insn));
    if (vm_is_ptr(d) && vm_is_ptr(s)) {
        if (op == VM_ADD)
            return vm_verr(env, bit(dst), "adding two pointers is not allowed");
        return ptr_diff(env, dst, d, s);
    }
    if (!vm_is_ptr(d) && op == VM_SUB)
        return vm_verr(env, bit(dst), "subtracting a pointer from a scalar is not allowed");
    if (vm_is_ptr(d)) {
        if (VM_SRC(insn->code) == VM_X && !vs_is_const(&s->v))
            link_src(env, vm_reg(env, vm_src(insn)));
        struct vreg sv = VM_SRC(insn->code) == VM_X ? *vm_reg(env, vm_src(insn)) : *s;
        return ptr_add(env, dst, *d, &sv, op == VM_SUB);
    }
    if (!vs_is_const(&d->v))
        link_src(env, d);
    struct vreg dv = *d;
    return ptr_add(env, dst, *s, &dv, false);
}

static int alu_mov(struct venv *env, const struct vm_insn *insn)
{
    bool is64 = VM_CLS(insn->code) == VM_CLS_ALU64;
    struct vreg *d = vm_reg(env, vm_dst(insn));
    if (VM_SRC(insn->code) == VM_K) {
        vm_mark_scalar(d, vs_const(is64 ? (uint64_t)(int64_t)insn->imm : (uint32_t)insn->imm));
        return 0;
    }
    unsigned src = vm_src(insn);
    if (vm_reg(env, src)->type == VT_NONE) {
        /* clang -O1 copies registers it never set on paths that never use
         * the copy: the copy is uninitialised too, and only its use is an
         * error (nothing of the value can be observed before one) */
        const struct vreg *s = vm_reg(env, src);
        uint32_t from = s->off > 0 ? s->id : src, at = s->off > 0 ? (uint32_t)s->off : env->pc + 1;
        vm_mark_none(d);
        d->id = from;   /* for the message at a use (vm_none_hint) */
        d->off = (int32_t)at;
        return 0;
    }
    if (insn->off == 0 && !(vm_reg(env, src)->sflags & VS_SHL32))
        link_src(env, vm_reg(env, src));
    struct vreg s = *vm_reg(env, src);
    if (is64 && insn->off == 0) {
        *d = s;
        return 0;
    }
    if (vm_is_ptr(&s))
        return vm_verr(env, bit(src), "R%u: a %s of a pointer to %s is not allowed (it would "
                       "expose part of the address)", src,
                       insn->off ? "sign-extending move" : "32-bit move",
                       vm_vtype_desc(s.type));
    /* a 32-bit copy of a value that fits is the value: its distance holds */
    bool keep_dist = !insn->off && s.dist && s.v.smin >= 0 && s.v.umax <= UINT32_MAX;
    if (insn->off)
        vs_sext(&s.v, (unsigned)insn->off);
    if (!is64)
        vs_trunc(&s.v, 4);
    vm_mark_scalar(d, s.v);
    if (keep_dist)
        vm_dist_copy(d, &s);
    bool low_half = s.sflags == 0 || s.sflags == VS_ZEXT || s.sflags == VS_LOW8;
    if (insn->off == 0 && s.id && low_half) {   /* w-move: the low half */
        d->id = s.id;
        d->sflags = s.sflags == VS_LOW8 ? VS_LOW8 : VS_ZEXT;   /* a low byte fits */
        d->off = s.off;
    }
    return 0;
}

static int alu_unary(struct venv *env, const struct vm_insn *insn)
{
    unsigned dst = vm_dst(insn), op = VM_OP(insn->code);
    bool is64 = VM_CLS(insn->code) == VM_CLS_ALU64;
    struct vreg *d = vm_reg(env, dst);
    if (vm_is_ptr(d))
        return vm_verr(env, bit(dst), "%s of a pointer to %s is not allowed", op_name(op),
                       vm_vtype_desc(d->type));
    d->id = 0;
    d->sflags = 0;
    d->off = 0;
    d->dist = 0;
    d->lid = d->lgid = 0;
    d->loff = 0;
    if (op == VM_NEG) {
        vs_neg(&d->v, is64);
        return 0;
    }
    unsigned bits = (unsigned)insn->imm;
    if (!is64 && VM_SRC(insn->code) == VM_K)
        vs_trunc(&d->v, bits / 8);   /* to little-endian: the host order */
    else
        vs_bswap(&d->v, bits);
    return 0;
}

/* After an ALU operation on a linked scalar: `x <<= 32` then `x >>= 32`
 * keeps the link as a zero-extension, `x &= 0xff` (64- or 32-bit) as the
 * low byte, `x <<= k` (k = 1..3) as a scaled index; anything else breaks
 * it. */
static void relink(struct vreg *d, const struct vm_insn *insn)
{
    bool k64 = VM_CLS(insn->code) == VM_CLS_ALU64 && VM_SRC(insn->code) == VM_K;
    bool k32 = k64 && insn->imm == 32;
    unsigned op = VM_OP(insn->code);
    bool low8 = VM_SRC(insn->code) == VM_K && op == VM_AND && insn->imm == 0xff && d->id &&
                (d->sflags == 0 || d->sflags == VS_ZEXT || d->sflags == VS_LOW8);
    int64_t delta = op == VM_ADD ? (int64_t)d->off + insn->imm : (int64_t)d->off - insn->imm;
    if (k64 && (op == VM_ADD || op == VM_SUB) && d->id && d->sflags == 0 &&
        delta >= INT32_MIN && delta <= INT32_MAX) {
        d->off = (int32_t)delta;   /* still base + a constant */
    } else if (k32 && VM_OP(insn->code) == VM_LSH && d->id && d->sflags == 0) {
        d->sflags = VS_SHL32;
    } else if (k64 && op == VM_LSH && insn->imm >= 1 && insn->imm <= 3 && d->id &&
               d->sflags == 0) {
        d->sflags = VS_SCALE(insn->imm);   /* an index scaled to 2, 4 or 8 bytes */
    } else if (k32 && VM_OP(insn->code) == VM_RSH && d->id && d->sflags == VS_SHL32) {
        d->sflags = VS_ZEXT;
    } else if (low8) {   /* zext32(b + off) & 0xff is (b + off) & 0xff too */
        d->sflags = VS_LOW8;
    } else {
        d->id = 0;
        d->sflags = 0;
        d->off = 0;
    }
}

/* A scalar's sum link (verifier_int.h invariant 10): `s = x + y` (64
 * bits) of two plain members of different link groups is b_x + b_y +
 * (x.off + y.off); adding or subtracting a constant moves it; anything
 * else ends it. d0: the destination before the operation. */
static void sum_link(struct vreg *d, const struct vreg *d0, const struct vreg *s,
                     const struct vm_insn *insn)
{
    unsigned op = VM_OP(insn->code);
    bool is64 = VM_CLS(insn->code) == VM_CLS_ALU64, x = VM_SRC(insn->code) == VM_X;
    int64_t loff = 0;
    if (is64 && x && op == VM_ADD && d0->id && s->id && d0->id != s->id && !d0->sflags &&
        !s->sflags && !d0->lid && !s->lid) {
        d->lid = d0->id;
        d->lgid = s->id;
        loff = (int64_t)d0->off + s->off;
    } else if (is64 && !x && (op == VM_ADD || op == VM_SUB) && d0->lid) {
        loff = d0->loff + (op == VM_ADD ? (int64_t)insn->imm : -(int64_t)insn->imm);
    } else {
        d->lid = 0;
    }
    if (loff < INT32_MIN || loff > INT32_MAX)
        d->lid = 0;
    d->loff = d->lid ? (int32_t)loff : 0;
    d->lgid = d->lid ? d->lgid : 0;
}

/* clang's sign- and zero-extensions of a 32-bit value, `x <<= 32; x
 * s>>= 32` and `x <<= 32; x >>= 32`, of a value already in the int
 * (resp. __u32) range change nothing: both halves leave x as it is, links
 * and distance to the end included (the shifts would break them: `out +
 * n` would no longer bound the counter n), when nothing jumps to the
 * second half (every jump target is a pruning point). Each half tests the
 * same unchanged x; had the first half shifted, x would be 0 or out of
 * the range, and shifting 0 back changes nothing either. */
static bool ext_half_noop(const struct venv *env, const struct vm_insn *insn)
{
    const uint8_t lsh = VM_CLS_ALU64 | VM_K | VM_LSH, arsh = VM_CLS_ALU64 | VM_K | VM_ARSH,
                  rsh = VM_CLS_ALU64 | VM_K | VM_RSH;
    bool first = insn->code == lsh;
    if ((!first && insn->code != arsh && insn->code != rsh) || insn->imm != 32 ||
        (first ? env->pc + 1 >= env->n : env->pc == 0))
        return false;
    const struct vm_insn *o = &env->insns[first ? env->pc + 1 : env->pc - 1];
    bool sext = (first ? o->code : insn->code) == arsh;
    const struct vreg *d = &env->cur->frames[env->cur->nframes - 1].regs[vm_dst(insn)];
    bool fits = sext ? d->v.smin >= INT32_MIN && d->v.smax <= INT32_MAX
                     : d->v.smin >= 0 && d->v.umax <= UINT32_MAX;
    bool pair = first ? o->code == arsh || o->code == rsh : o->code == lsh;
    return pair && o->imm == 32 && vm_dst(o) == vm_dst(insn) &&
           !(env->info[first ? env->pc + 1 : env->pc].flags & VI_PRUNE) &&
           d->type == VT_SCALAR && fits;
}

/* d = c + s (d0: the constant c, s a scalar of a link group): d is the
 * member b + (s.off + c) of s's group when s is plain, and keeps s's
 * distance bounds moved by c. */
static void const_plus(struct vreg *d, const struct vreg *d0, const struct vreg *s)
{
    int64_t c = (int64_t)d0->v.t.value, off = (int64_t)s->off + c;
    const int64_t lim = (int64_t)1 << 40;
    if (s->sflags != 0 || !s->id || c <= -lim || c >= lim || off < INT32_MIN ||
        off > INT32_MAX || s->v.smin <= -lim || s->v.smax >= lim)
        return;
    d->id = s->id;
    d->off = (int32_t)off;
    d->sflags = 0;
    vm_dist_copy(d, s);
    for (unsigned k = 0; k < 2; k++) {
        int64_t doff = (int64_t)s->doff[k] - c;
        if (!(d->dist >> k & 1))
            continue;
        if (doff < INT32_MIN || doff > INT32_MAX)
            d->dist &= (uint8_t)~(1u << k | VM_DIST_EQ(k));
        else
            d->doff[k] = (int32_t)doff;
    }
}

/* clang lowers `x == 0 || x == 1 || x == 5` (a switch, or a table's NULL
 * entries: `if (!t[x])` with t constant) to a bit test of a constant:
 * `r = 39; r >>= x; r &= 1; if r != 0` or `r = 1; r <<= x; r &= 39` (or
 * `if r & 39`). Ranges cannot say which x pass, so such a shift of a
 * constant by an x of at most VM_SPLIT_MAX values splits the state: one
 * path per value, with x (and what is linked to it) pinned there. The
 * paths together hold exactly the values x had: sound. Only in programs
 * with a table of pointers (verifier_int.h invariant 14), where it tells
 * the NULL entries apart, and for at most 16 values (a table indexed by a
 * length or a small code): the paths cost (a split over 26 values in
 * kw_letters' loop took 4.5x the instructions). */
#define VM_SPLIT_MAX 16

/* A conditional jump testing register dst against 0 (==, !=) or a
 * constant's bits (jset). */
static bool tests_bits(const struct vm_insn *j, unsigned dst, bool zero_only)
{
    unsigned cls = VM_CLS(j->code), op = VM_OP(j->code);
    if ((cls != VM_CLS_JMP && cls != VM_CLS_JMP32) || VM_SRC(j->code) != VM_K ||
        vm_dst(j) != dst)
        return false;
    return ((op == VM_JEQ || op == VM_JNE) && j->imm == 0) || (!zero_only && op == VM_JSET);
}

/* insn shifts a register by a register and the bit test follows: `&= K`
 * and a test against 0, or a jset. */
static bool is_bit_test(const struct venv *env, const struct vm_insn *insn)
{
    unsigned op = VM_OP(insn->code), dst = vm_dst(insn);
    if ((op != VM_LSH && op != VM_RSH) || VM_SRC(insn->code) != VM_X || env->pc + 2 >= env->n)
        return false;
    const struct vm_insn *a = insn + 1;
    bool mask = VM_CLS(a->code) == VM_CLS(insn->code) && VM_OP(a->code) == VM_AND &&
                VM_SRC(a->code) == VM_K && vm_dst(a) == dst;
    return tests_bits(a, dst, false) || (mask && tests_bits(insn + 2, dst, true));
}

/* Queues the path of x = k after the shift (at pc + 1, never at pc: the
 * state stored there before the split covers x = k, and would prune the
 * path unexplored). */
static int push_value(struct venv *env, const struct vm_insn *insn)
{
    int err = vm_check_alu(env, insn);   /* x is a constant now: no split */
    return err ? err : vm_state_push(env, env->pc + 1);
}

/* Returns 0 (the current path goes on with the first value), 1 if no
 * value is possible, or -errno. */
static int split_bit_test(struct venv *env, const struct vm_insn *insn)
{
    unsigned xr = vm_src(insn);
    const struct vreg *d = vm_reg(env, vm_dst(insn)), *x = vm_reg(env, xr);
    if (!env->prog->nrptrs || d->type != VT_SCALAR || !vs_is_const(&d->v) ||
        x->type != VT_SCALAR || vs_is_const(&x->v) || x->v.umax - x->v.umin >= VM_SPLIT_MAX ||
        !is_bit_test(env, insn))
        return 0;
    uint64_t lo = x->v.umin, hi = x->v.umax, first = 0;
    bool have = false;
    struct vsnap *before = vm_snap_take(env->cur);
    if (!before)
        return -ENOMEM;
    int err = 0;
    for (uint64_t k = lo; !err; k++) {
        vm_snap_restore(env->cur, before);
        if (vm_jmp_pin(env, xr, k)) {
            if (have)
                err = push_value(env, insn);
            else
                first = k, have = true;
        }
        if (k == hi)
            break;
    }
    vm_snap_restore(env->cur, before);
    vm_snap_free(before);
    if (!err && have)
        vm_jmp_pin(env, xr, first);
    return err ? err : !have;
}

/* A 64-bit `x | K` whose K bits are known zero in x adds K: clang writes
 * `out[n + 1]` as `out[n | 1]` when n is even, and as an add it keeps
 * n's links (the index stays checked through `out + n + 2 <= oend`). */
static bool or_is_add(const struct vreg *d, const struct vreg *s, const struct vm_insn *insn)
{
    uint64_t k = s->v.t.value;
    return VM_OP(insn->code) == VM_OR && VM_CLS(insn->code) == VM_CLS_ALU64 &&
           d->type == VT_SCALAR && s->type == VT_SCALAR && vs_is_const(&s->v) &&
           k <= INT32_MAX && !((d->v.t.value | d->v.t.mask) & k);
}

int vm_check_alu(struct venv *env, const struct vm_insn *insn)
{
    unsigned op = VM_OP(insn->code), dst = vm_dst(insn);
    bool is64 = VM_CLS(insn->code) == VM_CLS_ALU64;
    if (op == VM_MOV)
        return alu_mov(env, insn);
    int err = vm_check_reg_init(env, dst);
    if (!err && VM_SRC(insn->code) == VM_X)
        err = vm_check_reg_init(env, vm_src(insn));
    if (err)
        return err;
    if (op == VM_NEG || op == VM_END)
        return alu_unary(env, insn);
    if (ext_half_noop(env, insn))
        return 0;
    err = split_bit_test(env, insn);
    if (err)
        return err;
    struct vreg s = operand(env, insn);
    struct vreg *d = vm_reg(env, dst);
    if (vm_is_ptr(d) || vm_is_ptr(&s))
        return ptr_alu(env, insn, &s);
    if (is64 && op == VM_ADD && VM_SRC(insn->code) == VM_X && !vs_is_const(&d->v) &&
        !vs_is_const(&s.v)) {   /* name both terms of a sum (invariant 10) */
        link_src(env, d);
        link_src(env, vm_reg(env, vm_src(insn)));
        s = *vm_reg(env, vm_src(insn));
    }
    struct vm_scalar before = d->v;
    struct vreg d0 = *d;
    /* a register known to be a constant is that immediate, for links */
    struct vm_insn k = *insn;
    if (or_is_add(d, &s, insn)) {   /* `n | 1` of an even n is n + 1 */
        op = VM_ADD;
        k.code = VM_CLS_ALU64 | VM_ADD | VM_K;
        k.imm = (int32_t)s.v.t.value;
        k.regs = (uint8_t)(insn->regs & 0x0f);
    }
    if (VM_SRC(insn->code) == VM_X && vs_is_const(&s.v) &&
        (int64_t)s.v.t.value >= INT32_MIN && (int64_t)s.v.t.value <= INT32_MAX &&
        (op == VM_ADD || op == VM_SUB)) {
        k.code = (uint8_t)((k.code & ~VM_X) | VM_K);
        k.imm = (int32_t)(int64_t)s.v.t.value;
        k.regs = (uint8_t)(insn->regs & 0x0f);
    }
    bool kd = is64 && op == VM_ADD && VM_SRC(insn->code) == VM_X && vs_is_const(&d->v) &&
              !vs_is_const(&s.v) && s.type == VT_SCALAR && !(s.sflags & VS_SHL32);
    if (kd) {   /* c + s: a member of s's group (named now) */
        link_src(env, vm_reg(env, vm_src(insn)));
        s = *vm_reg(env, vm_src(insn));
    }
    vs_alu(&d->v, &s.v, op, is64, insn->off == 1);
    relink(d, &k);
    if (kd)
        const_plus(d, &d0, &s);
    vm_dist_alu(d, &before, &s.v, &k);
    sum_link(d, &d0, &s, &k);
    vm_zone_alu(env, d, &d0, &s, &k);
    return 0;
}
