/*
 * bpf/verifier_mem.c - loads, stores and atomics: which memory a pointer
 * may touch, and what a load gives back.
 *
 * Regions: the context (field by field, read-only), a frame's stack
 * (512 bytes, byte-granular initialisation, 8-byte aligned spills keep a
 * register's full state), the input buffer (read-only) and output buffer
 * (both within the range proved by comparisons with their end pointers),
 * read-only data and helper-returned memory (known sizes).
 *
 * Tables of pointers in read-only data (verifier_int.h invariant 14): the
 * loader relocated their slots to host addresses (prog.h invariant 5). An
 * aligned 8-byte load of such a slot gives a pointer into the object the
 * entry points to (a string with its NUL), a load that may hit several
 * entries one path per entry value (the NULL ones a scalar 0); any other
 * access to a slot's bytes, by the program or a helper, is refused, so
 * the address itself never becomes data.
 *
 * Rules that keep pointers from leaking: a pointer may only be stored
 * into the stack, whole and aligned; bytes of a spilled pointer are never
 * read as a scalar (a partial overwrite makes the rest unreadable); a
 * scalar stored through a pointer other than r10 is remembered as unknown
 * data, and a scalar spill read through such a pointer comes back
 * unknown (see verifier_flow.c for why precision needs that).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/abi.h"
#include "bpf/verifier_int.h"

enum acc { ACC_READ, ACC_WRITE, ACC_ATOMIC };

static const char *acc_verb(enum acc a)
{
    return a == ACC_READ ? "read" : a == ACC_WRITE ? "write" : "atomic update";
}

static struct vreg loaded_scalar(unsigned size, bool sx)
{
    struct vreg r;
    vm_mark_unknown(&r);
    if (size < 8) {
        unsigned bits = size * 8;
        r.v = sx ? vs_srange(-(1ll << (bits - 1)), (1ll << (bits - 1)) - 1)
                 : vs_urange(0, (1ull << bits) - 1);
    }
    return r;
}

static void off_text(char *buf, size_t n, int64_t fixed, const struct vm_scalar *var)
{
    if (vs_is_const(var)) {
        snprintf(buf, n, "%lld", (long long)(fixed + (int64_t)var->t.value));
        return;
    }
    char v[96];
    vs_format(var, v, sizeof(v));
    snprintf(buf, n, "%lld+%s", (long long)fixed, v);
}

static uint16_t bit(unsigned r)
{
    return (uint16_t)(1u << r);
}

/* --- context ------------------------------------------------------------------ */

static const struct vm_ctx_field *ctx_field_at(int64_t o)
{
    for (unsigned k = 0; k < vm_ctx_nfields; k++)
        if (o >= vm_ctx_fields[k].offset &&
            o < (int64_t)(vm_ctx_fields[k].offset + vm_ctx_fields[k].size))
            return &vm_ctx_fields[k];
    return NULL;
}

static void ctx_value(const struct vm_ctx_field *f, unsigned size, bool sx, struct vreg *val)
{
    static const uint8_t types[] = {
        [VM_CTXF_INPUT] = VT_IN, [VM_CTXF_INPUT_END] = VT_IN_END,
        [VM_CTXF_OUTPUT] = VT_OUT, [VM_CTXF_OUTPUT_END] = VT_OUT_END,
    };
    if (f->kind == VM_CTXF_SCALAR) {
        *val = loaded_scalar(size, sx);
        return;
    }
    vm_mark_scalar(val, vs_const(0));
    val->type = types[f->kind];
}

static int ctx_access(struct venv *env, unsigned regno, int16_t off, unsigned size,
                      enum acc kind, bool sx, struct vreg *val)
{
    const struct vreg *reg = vm_reg(env, regno);
    if (kind != ACC_READ)
        return vm_verr(env, bit(regno), "R%u points to the context, which is read-only",
                       regno);
    int64_t o = (int64_t)reg->off + off + (int64_t)reg->v.t.value;
    const struct vm_ctx_field *f = ctx_field_at(o);
    if (!f)
        return vm_verr(env, bit(regno), "R%u context access at offset %lld size %u is "
                       "outside the %zu-byte context", regno, (long long)o, size,
                       sizeof(struct vm_ctx));
    if (o != f->offset)
        return vm_verr(env, bit(regno), "R%u context access at offset %lld is not at the "
                       "start of field %s (offset %u)", regno, (long long)o, f->name,
                       f->offset);
    bool scalar = f->kind == VM_CTXF_SCALAR;
    if (!(size == f->size || (scalar && size == 4)) || (sx && !scalar))
        return vm_verr(env, bit(regno), "R%u context field %s is %u bytes: a %u-byte %sread "
                       "is not allowed", regno, f->name, f->size, size,
                       sx ? "sign-extending " : "");
    ctx_value(f, size, sx, val);
    return 0;
}

/* --- stack ---------------------------------------------------------------------- */

static unsigned slot_of(int64_t o)
{
    return (unsigned)((-o - 1) / 8);
}

static unsigned byte_of(int64_t o)
{
    return (unsigned)(o + (int64_t)(slot_of(o) + 1) * 8);
}

static void grow_slots(struct venv *env, struct vframe *fr, int64_t lo)
{
    unsigned need = slot_of(lo) + 1;
    if (need > fr->nslots) {
        memset(&fr->slots[fr->nslots], 0, (need - fr->nslots) * sizeof(struct vslot));
        fr->nslots = need;
    }
    if ((uint32_t)(-lo) > env->max_depth)
        env->max_depth = (uint32_t)(-lo);
}

/* Who reads: through r10 the address register says nothing, so name the
 * register the instruction loads into ("R3 loads"); else "R2 reads". */
static void reader_text(const struct venv *env, unsigned regno, char *buf, size_t n)
{
    const struct vm_insn *i = &env->insns[env->pc];
    if (regno == VM_REG_FP && VM_CLS(i->code) == VM_CLS_LDX)
        snprintf(buf, n, "R%u loads", vm_dst(i));
    else if (regno == VM_REG_FP && VM_CLS(i->code) == VM_CLS_STX)
        snprintf(buf, n, "the atomic update with R%u reads", vm_src(i));
    else
        snprintf(buf, n, "R%u reads", regno);
}

/* Every byte of [lo, end) initialised and not part of a spilled pointer. */
static int stack_readable(struct venv *env, unsigned regno, const struct vframe *fr,
                          int64_t lo, int64_t end)
{
    char who[48];
    for (int64_t o = lo; o < end; o++) {
        unsigned s = slot_of(o), b = byte_of(o);
        bool init = s < fr->nslots && (fr->slots[s].init & (1u << b));
        if (!init && s < fr->nslots && fr->slots[s].clobbered) {
            reader_text(env, regno, who, sizeof(who));
            return vm_verr(env, bit(regno), "%s stack byte fp%lld: pointer clobbered (the "
                           "pointer spilled at fp%lld was partly overwritten, so none of its "
                           "bytes may be read)", who, (long long)o, -(long long)(s + 1) * 8);
        }
        if (!init) {
            reader_text(env, regno, who, sizeof(who));
            return vm_verr(env, bit(regno), "%s uninitialised stack byte fp%lld", who,
                           (long long)o);
        }
        if (fr->slots[s].spill && fr->slots[s].r.type != VT_SCALAR) {
            reader_text(env, regno, who, sizeof(who));
            return vm_verr(env, bit(regno), "%s part of a pointer spilled at fp%lld as data",
                           who, -(long long)(s + 1) * 8);
        }
    }
    return 0;
}

/* A narrow scalar store (invariant 8) read back through r10: the same
 * bytes, or the low ones of them. */
static bool narrow_read(const struct vslot *sl, unsigned b, unsigned size, bool sx,
                        struct vreg *val)
{
    if (!sl->nsize || b != sl->nbyte || size > sl->nsize)
        return false;
    vm_mark_scalar(val, sl->r.v);
    sx ? vs_sext(&val->v, size * 8) : vs_trunc(&val->v, size);
    return true;
}

static int stack_read(struct venv *env, unsigned regno, struct vframe *fr, int64_t o,
                      unsigned size, bool sx, struct vreg *val)
{
    unsigned s = slot_of(o);
    bool via_fp = regno == VM_REG_FP, at_start = o == -(int64_t)(s + 1) * 8;
    if (s < fr->nslots && fr->slots[s].spill && at_start) {
        const struct vreg *sp = &fr->slots[s].r;
        if (size == 8 && (sp->type != VT_SCALAR || via_fp)) {
            *val = *sp;
            return 0;
        }
        if (sp->type == VT_SCALAR && via_fp) {
            vm_mark_scalar(val, sp->v);
            sx ? vs_sext(&val->v, size * 8) : vs_trunc(&val->v, size);
            return 0;
        }
    }
    if (s < fr->nslots && via_fp && narrow_read(&fr->slots[s], byte_of(o), size, sx, val))
        return 0;
    int err = stack_readable(env, regno, fr, o, o + size);
    if (!err)
        *val = loaded_scalar(size, sx);
    return err;
}

/* A write to stack byte o: a pointer spilled in its slot becomes
 * unreadable, a scalar spilled there data, and a narrow store that holds
 * the byte ends. */
static void clobber(struct vframe *fr, int64_t o)
{
    struct vslot *sl = &fr->slots[slot_of(o)];
    unsigned b = byte_of(o);
    if (sl->spill && sl->r.type != VT_SCALAR) {
        sl->init = 0;   /* the rest of a pointer must never be read */
        sl->clobbered = 1;
    }
    sl->spill = 0;
    if (sl->nsize && b >= sl->nbyte && b < (unsigned)sl->nbyte + sl->nsize)
        sl->nsize = 0;
}

/* Whether a scalar stored by the current instruction keeps its value in
 * the stack: through r10 always (verifier_flow.c follows r10-relative
 * slots), an immediate always (the same on every path), and a register
 * stored through another pointer where the static analysis made it
 * precise (it may reach a slot whose value matters, verifier_flow.c). */
static bool keeps_value(const struct venv *env, unsigned regno)
{
    const struct vm_insn *i = &env->insns[env->pc];
    return regno == VM_REG_FP || VM_CLS(i->code) == VM_CLS_ST ||
           (env->info[env->pc].prec & bit(vm_src(i)));
}

static int stack_write(struct venv *env, unsigned regno, unsigned fno, int64_t o,
                       unsigned size, const struct vreg *val)
{
    struct vframe *fr = &env->cur->frames[fno];
    bool whole = size == 8 && o % 8 == 0;
    grow_slots(env, fr, o);
    struct vslot *sl = &fr->slots[slot_of(o)];
    if (vm_is_ptr(val)) {
        if (!whole)
            return vm_verr(env, bit(regno), "storing a pointer needs a whole aligned 8-byte "
                           "stack slot (fp%lld size %u)", (long long)o, size);
        if (val->type == VT_STACK && val->frame > fno)
            return vm_verr(env, bit(regno), "a pointer to a callee's stack cannot be stored "
                           "in a caller's stack");
    }
    bool keep = vm_is_ptr(val) || keeps_value(env, regno);
    if (whole) {
        sl->init = 0xff;
        sl->clobbered = 0;
        sl->spill = keep;
        sl->nsize = 0;
        sl->r = *val;
        return 0;
    }
    for (int64_t b = o; b < o + size; b++)
        clobber(fr, b);
    for (int64_t b = o; b < o + size; b++)
        fr->slots[slot_of(b)].init |= (uint8_t)(1u << byte_of(b));
    if (keep && o % size == 0) {   /* naturally aligned: inside one slot (invariant 8) */
        sl->nsize = (uint8_t)size;
        sl->nbyte = (uint8_t)byte_of(o);
        vm_mark_scalar(&sl->r, val->v);
    }
    return 0;
}

static int stack_var_write(struct venv *env, unsigned regno, struct vframe *fr, int64_t lo,
                           int64_t end, const struct vreg *val)
{
    if (vm_is_ptr(val))
        return vm_verr(env, bit(regno), "storing a pointer at a variable stack offset");
    for (int64_t o = lo; o < end; o++) {
        unsigned s = slot_of(o);
        if (s >= fr->nslots || !(fr->slots[s].init & (1u << byte_of(o))))
            return vm_verr(env, bit(regno), "variable-offset stack write may reach "
                           "uninitialised byte fp%lld (range fp%lld..fp%lld): initialise the "
                           "buffer first", (long long)o, (long long)lo, (long long)end);
    }
    for (int64_t o = lo; o < end; o++)
        clobber(fr, o);
    return 0;
}

static int stack_atomic(struct venv *env, unsigned regno, struct vframe *fr, int64_t o,
                        unsigned size)
{
    int err = stack_readable(env, regno, fr, o, o + size);
    if (err)
        return err;
    for (int64_t b = o; b < o + size; b++)
        clobber(fr, b);
    return 0;
}

static int stack_access(struct venv *env, unsigned regno, int16_t off, unsigned size,
                        enum acc kind, bool sx, struct vreg *val)
{
    const struct vreg *reg = vm_reg(env, regno);
    unsigned fno = reg->frame;
    struct vframe *fr = &env->cur->frames[fno];
    int64_t base = (int64_t)reg->off + off;
    int64_t lo = base + reg->v.smin, hi = base + reg->v.smax;
    if (lo < -VM_STACK_SIZE || hi + size > 0) {
        char t[128];
        off_text(t, sizeof(t), base, &reg->v);
        return vm_verr(env, bit(regno), "R%u stack %s at fp%s%s size %u is outside the "
                       "frame [-%d, 0)", regno, acc_verb(kind), base < 0 ? "" : "+", t, size,
                       VM_STACK_SIZE);
    }
    bool var = !vs_is_const(&reg->v);
    if (var && kind != ACC_READ)
        return kind == ACC_ATOMIC
                   ? vm_verr(env, bit(regno), "atomic operation at a variable stack offset")
                   : stack_var_write(env, regno, fr, lo, hi + size, val);
    if (var) {
        int err = stack_readable(env, regno, fr, lo, hi + size);
        if (!err)
            *val = loaded_scalar(size, sx);
        return err;
    }
    if (kind == ACC_READ)
        return stack_read(env, regno, fr, lo, size, sx, val);
    if (kind == ACC_ATOMIC)
        return stack_atomic(env, regno, fr, lo, size);
    return stack_write(env, regno, fno, lo, size, val);
}

/* --- buffers, read-only data, helper memory --------------------------------------- */

/* Bytes [base + v + o, + size) with v the variable part: at or after the
 * buffer's start when v + o >= 0 (v may be negative when the fixed offset
 * makes up for it: `p + i + 1` with a helper's index i >= -1; o may be
 * negative when v makes up for it: `*--q` after `q > p`), and before its
 * end when o + size is within the proved range [0, range). */
static int check_buf(struct venv *env, unsigned regno, const struct vreg *reg, int64_t o,
                     uint64_t size, const char *what)
{
    if (o < 0 && reg->v.smin + o < 0) {
        char t[96];
        vs_format(&reg->v, t, sizeof(t));
        return vm_verr(env, bit(regno), "R%u points to %s, offset %lld size %llu may be before "
                       "the buffer's start (variable part %s; a pointer walking back needs a "
                       "test against one at or after the start: `while (q > p) *--q`)",
                       regno, vm_vtype_desc(reg->type), (long long)o, (unsigned long long)size, t);
    }
    if (reg->v.smin + (o > 0 ? o : 0) < 0) {
        char t[96];
        vs_format(&reg->v, t, sizeof(t));
        return vm_verr(env, bit(regno), "R%u points to %s with a variable offset %s that may "
                       "be negative%s", regno, vm_vtype_desc(reg->type), t,
                       reg->v.smin == -1 ? " (if it is a helper's index result, -1 for 'not "
                       "found': clang added it before your `i < 0` test; add it as unsigned "
                       "after the test: `p += (__u32)i + 1`)" : "");
    }
    if (reg->range == 0 || o + (int64_t)size > (int64_t)reg->range)   /* (o < 0: range > 0) */
        return vm_verr(env, bit(regno), "R%u points to %s, offset %lld size %llu is outside "
                       "the checked range [0, %u)%s", regno, vm_vtype_desc(reg->type),
                       (long long)o, (unsigned long long)size, reg->range,
                       reg->range ? "" : what);
    return 0;
}

static int check_sized(struct venv *env, unsigned regno, const struct vreg *reg, int64_t base,
                       uint64_t size, uint64_t limit)
{
    int64_t lo = base + reg->v.smin, hi = base + reg->v.smax;
    if (lo < 0 || hi + (int64_t)size > (int64_t)limit) {
        char t[128];
        off_text(t, sizeof(t), base, &reg->v);
        return vm_verr(env, bit(regno), "R%u points to %s, offset %s size %llu is outside "
                       "[0, %llu)", regno, vm_vtype_desc(reg->type), t,
                       (unsigned long long)size, (unsigned long long)limit);
    }
    return 0;
}

static uint64_t rodata_value(const struct vm_prog *p, int64_t o, unsigned size)
{
    uint64_t v = 0;
    for (unsigned k = 0; k < size; k++)
        v |= (uint64_t)p->rodata[o + k] << (8 * k);
    return v;
}

/* A load from read-only data at base + v for every v the variable part
 * may be (at most VM_RODATA_SCAN of them): the value is one of the
 * entries read, so it lies in their hull (ranges and known bits). A table
 * `lens[w]` with w in [0, 2] gives the range of lens[0..2]. Returns false
 * when there are too many offsets to read. */
#define VM_RODATA_SCAN 256

static bool rodata_table(const struct venv *env, int64_t base, const struct vm_scalar *var,
                         unsigned size, bool sx, struct vm_scalar *out)
{
    if (var->smax - var->smin >= VM_RODATA_SCAN)
        return false;
    bool any = false;
    for (int64_t v = var->smin; v <= var->smax; v++) {
        if (!vs_contains(var, (uint64_t)v))
            continue;
        struct vm_scalar e = vs_const(rodata_value(env->prog, base + v, size));
        if (sx)
            vs_sext(&e, size * 8);
        if (!any)
            *out = e;
        else
            vs_hull(out, &e);
        any = true;
    }
    if (any)
        vs_sync(out);
    return any;
}

/* --- relocated pointers in read-only data (invariant 14) ----------------------- */

/* Index of the first relocated slot that ends after byte o. */
static uint32_t rptr_from(const struct vm_prog *p, int64_t o)
{
    uint32_t lo = 0, hi = p->nrptrs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)p->rptrs[mid].slot + 8 <= o)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first relocated slot overlapping bytes [lo, end), or NULL. */
static const struct vm_rodata_ptr *rptr_overlap(const struct vm_prog *p, int64_t lo,
                                                int64_t end)
{
    uint32_t i = rptr_from(p, lo);
    return i < p->nrptrs && (int64_t)p->rptrs[i].slot < end ? &p->rptrs[i] : NULL;
}

/* The slot holds its target's host address (as the machine stores one). */
static bool rptr_holds(const struct vm_prog *p, const struct vm_rodata_ptr *r)
{
    uint64_t a;
    memcpy(&a, p->rodata + r->slot, sizeof(a));
    return a == (uint64_t)(uintptr_t)(p->rodata + r->target);
}

int vm_rodata_ptrs_check(struct venv *env)
{
    const struct vm_prog *p = env->prog;
    for (uint32_t i = 0; i < p->nrptrs; i++) {
        const struct vm_rodata_ptr *r = &p->rptrs[i];
        bool ok = r->slot % 8 == 0 && (uint64_t)r->slot + 8 <= p->rodata_size &&
                  r->lo <= r->target && r->target <= r->hi && r->hi <= p->rodata_size &&
                  r->hi != 0 && (i == 0 || r->slot >= p->rptrs[i - 1].slot + 8) &&
                  rptr_holds(p, r);
        if (!ok)
            return vm_verr_at(env, 0, -EINVAL, "relocated pointer %u in read-only data "
                              "(slot rodata+%u) is malformed", i, r->slot);
    }
    return 0;
}

/* The value an aligned 8-byte load of the relocated slot r gives. */
static struct vreg rptr_value(const struct vm_rodata_ptr *r)
{
    struct vreg v;
    vm_mark_scalar(&v, vs_const(0));
    v.type = VT_RODATA;
    v.off = (int32_t)r->target;
    v.rlo = r->lo;
    v.rhi = r->hi;
    return v;
}

/* The values a load may give: each pointer entry it may read once, and
 * the plain data it may read (NULL entries among it) as one scalar hull. */
struct rptr_vals {
    unsigned n;            /* vals[0, n): the pointers ... */
    bool scalar;           /* ... and vals[n], the hull, if there is plain data */
    struct vreg vals[VM_RODATA_SCAN + 1];
};

static void rptr_add(struct rptr_vals *rv, const struct vreg *v)
{
    struct vreg *hull = &rv->vals[VM_RODATA_SCAN];
    if (v->type == VT_SCALAR) {
        if (rv->scalar)
            vs_hull(&hull->v, &v->v);
        else
            *hull = *v;
        rv->scalar = true;
        vs_sync(&hull->v);
        return;
    }
    for (unsigned k = 0; k < rv->n; k++)
        if (rv->vals[k].off == v->off)
            return;
    rv->vals[rv->n++] = *v;
}

static int rptr_partial(struct venv *env, unsigned regno, int64_t o, unsigned size,
                        const struct vm_rodata_ptr *r)
{
    return vm_verr(env, bit(regno), "R%u reads %u bytes at rodata+%lld, part of the pointer "
                   "stored at rodata+%u (an entry of a table of pointers): only an aligned "
                   "8-byte load of a whole entry is allowed, and it gives the pointer, never "
                   "its bits", regno, size, (long long)o, r->slot);
}

/* Each value of an 8-byte load at base + v that may read a table entry. */
static int rptr_collect(struct venv *env, unsigned regno, int64_t base,
                        const struct vm_scalar *var, struct rptr_vals *rv)
{
    const struct vm_prog *p = env->prog;
    if (var->smax - var->smin >= VM_RODATA_SCAN)
        return vm_verr(env, bit(regno), "R%u may read more than %d entries of a table of "
                       "pointers in read-only data: bound the index", regno, VM_RODATA_SCAN);
    for (int64_t v = var->smin; v <= var->smax; v++) {
        if (!vs_contains(var, (uint64_t)v))
            continue;
        int64_t o = base + v;
        const struct vm_rodata_ptr *r = rptr_overlap(p, o, o + 8);
        if (r && (int64_t)r->slot != o)
            return rptr_partial(env, regno, o, 8, r);
        struct vreg x;
        if (r)
            x = rptr_value(r);
        else
            vm_mark_scalar(&x, vs_const(rodata_value(p, o, 8)));
        rptr_add(rv, &x);
    }
    return 0;
}

/* An 8-byte load that may read a table entry: one path per value, this
 * one with the first (the others are queued after the instruction). */
static int rptr_load(struct venv *env, unsigned regno, int64_t base, const struct vreg *reg,
                     struct vreg *val)
{
    struct rptr_vals *rv = calloc(1, sizeof(*rv));
    if (!rv)
        return -ENOMEM;
    int err = rptr_collect(env, regno, base, &reg->v, rv);
    if (rv->scalar)   /* (at most VM_RODATA_SCAN values in all) */
        rv->vals[rv->n++] = rv->vals[VM_RODATA_SCAN];
    struct vreg *dst = vm_reg(env, vm_dst(&env->insns[env->pc]));
    struct vreg saved = *dst;
    for (unsigned k = 1; !err && k < rv->n; k++) {
        *dst = rv->vals[k];
        err = vm_state_push(env, env->pc + 1);
    }
    *dst = saved;
    if (!err)
        *val = rv->vals[0];
    free(rv);
    return err;
}

/* Bytes [lo, end) inside the object a loaded pointer points into. */
static int check_object(struct venv *env, unsigned regno, const struct vreg *reg, int64_t lo,
                        int64_t end)
{
    if (!reg->rhi || (lo >= reg->rlo && end <= reg->rhi))
        return 0;
    return vm_verr(env, bit(regno), "R%u points into the object at rodata+[%u, %u) (what an "
                   "entry of a table of pointers points to: a string is its bytes and its "
                   "NUL), bytes [%lld, %lld) are outside it", regno, reg->rlo, reg->rhi,
                   (long long)lo, (long long)end);
}

static int rodata_access(struct venv *env, unsigned regno, int16_t off, unsigned size,
                         enum acc kind, bool sx, struct vreg *val)
{
    struct vreg row = *vm_reg(env, regno);
    const struct vreg *reg = &row;
    vm_row_narrow(env, &row);   /* a table row: its index bounds it */
    int64_t base = (int64_t)reg->off + off;
    if (kind != ACC_READ)
        return vm_verr(env, bit(regno), "R%u points to read-only data, which cannot be "
                       "written", regno);
    int err = check_sized(env, regno, reg, base, size, env->prog->rodata_size);
    int64_t lo = base + reg->v.smin, end = base + reg->v.smax + (int64_t)size;
    if (!err)
        err = check_object(env, regno, reg, lo, end);
    if (err)
        return err;
    const struct vm_rodata_ptr *r = rptr_overlap(env->prog, lo, end);
    if (r && size != 8)
        return rptr_partial(env, regno, r->slot > lo ? r->slot : lo, size, r);
    if (r)
        return rptr_load(env, regno, base, reg, val);
    *val = loaded_scalar(size, sx);
    struct vm_scalar entries;
    if (rodata_table(env, base, &reg->v, size, sx, &entries))
        val->v = entries;
    return 0;
}

static int data_access(struct venv *env, unsigned regno, int16_t off, unsigned size,
                       enum acc kind, bool sx, struct vreg *val)
{
    const struct vreg *reg = vm_reg(env, regno);
    int64_t o = (int64_t)reg->off + off;
    if (kind != ACC_READ && reg->type == VT_IN)
        return vm_verr(env, bit(regno), "R%u points to the input buffer, which is read-only",
                       regno);
    if (kind == ACC_WRITE && vm_is_ptr(val))
        return vm_verr(env, bit(regno), "pointer leak: storing a pointer to %s into %s is not "
                       "allowed", vm_vtype_desc(val->type), vm_vtype_desc(reg->type));
    int err = reg->type == VT_MEM
                  ? check_sized(env, regno, reg, o, size, reg->range)
                  : check_buf(env, regno, reg, o, size,
                              reg->type == VT_IN ? " (compare with data_end first)"
                                                 : " (compare with out_end first)");
    if (!err && kind == ACC_READ)
        *val = loaded_scalar(size, sx);
    return err;
}

/* Through an end pointer that a comparison bounded from below
 * (invariant 12, vm_back_access checked the bytes). */
static int back_access(struct venv *env, unsigned regno, enum acc kind, unsigned size,
                       bool sx, struct vreg *val)
{
    const struct vreg *reg = vm_reg(env, regno);
    if (kind != ACC_READ && reg->type == VT_IN_END)
        return vm_verr(env, bit(regno), "R%u points to the input buffer, which is read-only",
                       regno);
    if (kind == ACC_WRITE && vm_is_ptr(val))
        return vm_verr(env, bit(regno), "pointer leak: storing a pointer to %s into %s is not "
                       "allowed", vm_vtype_desc(val->type), vm_vtype_desc(VT_OUT));
    if (kind == ACC_READ)
        *val = loaded_scalar(size, sx);
    return 0;
}

static int wild(struct venv *env, unsigned regno, const struct vreg *reg)
{
    return vm_verr(env, bit(regno), "R%u points to %s at an offset the verifier cannot bound "
                   "(the pointer keeps moving in a loop)", regno, vm_vtype_desc(reg->type));
}

static int mem_access(struct venv *env, unsigned regno, int16_t off, unsigned size,
                      enum acc kind, bool sx, struct vreg *val)
{
    const struct vreg *reg = vm_reg(env, regno);
    char hint[256];
    if (vm_is_ptr(reg) && (reg->sflags & VS_WILD))
        return wild(env, regno, reg);
    switch (reg->type) {
    case VT_NONE:
        return vm_verr(env, bit(regno), "R%u is used before it is initialised%s", regno,
                       vm_none_hint(reg, hint, sizeof(hint)));
    case VT_SCALAR:
        if (vs_is_const(&reg->v) && reg->v.t.value == 0)
            return vm_verr(env, bit(regno), "R%u is a scalar, not a pointer: it is 0 (NULL), "
                           "and memory %s through it is not allowed (an empty entry of a table "
                           "of pointers reads as 0: test the pointer, `if (!p)`, before using "
                           "it)", regno, acc_verb(kind));
        return vm_verr(env, bit(regno), "R%u is a scalar, not a pointer: memory %s through "
                       "it is not allowed (an address the verifier cannot follow, such as one "
                       "read from a table of pointers past its end or through a pointer to "
                       "writable memory, is a number to it)", regno,
                       acc_verb(kind));
    case VT_CTX: return ctx_access(env, regno, off, size, kind, sx, val);
    case VT_STACK: return stack_access(env, regno, off, size, kind, sx, val);
    case VT_RODATA: return rodata_access(env, regno, off, size, kind, sx, val);
    case VT_IN_END:
    case VT_OUT_END:
        if (vm_back_access(env, reg, off, size))
            return back_access(env, regno, kind, size, sx, val);
        return vm_verr(env, bit(regno), "R%u points to %s and cannot be dereferenced%s", regno,
                       vm_vtype_desc(reg->type),
                       (int64_t)reg->off + off < 0
                           ? " (a pointer that walks back from the end may be dereferenced "
                             "below it where a comparison `e > p` with a pointer p into the "
                             "buffer proves the bytes above the start: compare e with the "
                             "start pointer before each access)"
                           : "");
    default: return data_access(env, regno, off, size, kind, sx, val);
    }
}

int vm_check_ldx(struct venv *env, const struct vm_insn *insn)
{
    struct vreg val;
    int err = mem_access(env, vm_src(insn), insn->off, vm_size_bytes(insn->code), ACC_READ,
                         VM_MODE(insn->code) == VM_MEMSX, &val);
    if (!err)
        *vm_reg(env, vm_dst(insn)) = val;
    return err;
}

int vm_check_st(struct venv *env, const struct vm_insn *insn)
{
    struct vreg val;
    unsigned size = vm_size_bytes(insn->code);
    if (VM_CLS(insn->code) == VM_CLS_STX) {
        int err = vm_check_reg_init(env, vm_src(insn));
        if (err)
            return err;
        val = *vm_reg(env, vm_src(insn));
    } else {
        vm_mark_scalar(&val, vs_const((uint64_t)(int64_t)insn->imm));
    }
    if (!vm_is_ptr(&val) && size < 8)
        vs_trunc(&val.v, size);
    if (vm_is_ptr(&val) && size < 8)
        return vm_verr(env, bit(vm_src(insn)), "storing part of a pointer (R%u, %u bytes) "
                       "is not allowed", vm_src(insn), size);
    return mem_access(env, vm_dst(insn), insn->off, size, ACC_WRITE, false, &val);
}

static int atomic_operands(struct venv *env, const struct vm_insn *insn)
{
    unsigned src = vm_src(insn);
    int err = vm_check_reg_init(env, src);
    if (!err && vm_is_ptr(vm_reg(env, src)))
        return vm_verr(env, bit(src), "R%u: atomic operations take a scalar operand, not a "
                       "pointer", src);
    if (!err && insn->imm == VM_CMPXCHG) {
        err = vm_check_reg_init(env, 0);
        if (!err && vm_is_ptr(vm_reg(env, 0)))
            return vm_verr(env, bit(0), "R0: cmpxchg compares with a scalar, not a pointer");
    }
    return err;
}

int vm_check_atomic(struct venv *env, const struct vm_insn *insn)
{
    unsigned dst = vm_dst(insn), size = vm_size_bytes(insn->code);
    int err = atomic_operands(env, insn);
    if (err)
        return err;
    const struct vreg *reg = vm_reg(env, dst);
    if (reg->type == VT_OUT || reg->type == VT_MEM || reg->type == VT_STACK) {
        struct vm_tnum t = reg->v.t;
        if (((uint64_t)((int64_t)reg->off + insn->off) | t.value | t.mask) & (size - 1))
            return vm_verr(env, bit(dst), "R%u atomic access of %u bytes is not aligned",
                           dst, size);
    }
    struct vreg val;
    vm_mark_unknown(&val);
    err = mem_access(env, dst, insn->off, size, ACC_ATOMIC, false, &val);
    if (err)
        return err;
    if (insn->imm & VM_FETCH) {
        unsigned r = insn->imm == VM_CMPXCHG ? 0 : vm_src(insn);
        *vm_reg(env, r) = loaded_scalar(size, false);
    }
    return 0;
}

int vm_check_ld_imm64(struct venv *env, const struct vm_insn *insn)
{
    struct vreg *dst = vm_reg(env, vm_dst(insn));
    if (vm_src(insn) == VM_PSEUDO_RODATA) {
        vm_mark_scalar(dst, vs_const(0));
        dst->type = VT_RODATA;
        dst->off = insn->imm;
        return 0;
    }
    uint64_t v = (uint32_t)insn[0].imm | (uint64_t)(uint32_t)insn[1].imm << 32;
    vm_mark_scalar(dst, vs_const(v));
    return 0;
}

/* --- helper memory arguments -------------------------------------------------------- */

static int helper_stack(struct venv *env, unsigned regno, uint64_t max_size, bool write)
{
    const struct vreg *reg = vm_reg(env, regno);
    struct vframe *fr = &env->cur->frames[reg->frame];
    int64_t lo = (int64_t)reg->off + reg->v.smin;
    int64_t end = (int64_t)reg->off + reg->v.smax + (int64_t)max_size;
    if (lo < -VM_STACK_SIZE || end > 0) {
        char t[128];
        off_text(t, sizeof(t), reg->off, &reg->v);
        return vm_verr(env, bit(regno), "R%u points to the stack at fp%s, size %llu is "
                       "outside the frame [-%d, 0)", regno, t, (unsigned long long)max_size,
                       VM_STACK_SIZE);
    }
    if (write) {
        grow_slots(env, fr, lo);
        return 0;
    }
    return stack_readable(env, regno, fr, lo, end);
}

/* Read-only data a helper reads: inside the object, and no relocated
 * slot among the bytes (they would reach the helper's output). */
static int helper_rodata(struct venv *env, unsigned regno, uint64_t max_size)
{
    struct vreg row = *vm_reg(env, regno);
    vm_row_narrow(env, &row);
    int err = check_sized(env, regno, &row, row.off, max_size, env->prog->rodata_size);
    int64_t lo = (int64_t)row.off + row.v.smin;
    int64_t end = (int64_t)row.off + row.v.smax + (int64_t)max_size;
    if (!err)
        err = check_object(env, regno, &row, lo, end);
    const struct vm_rodata_ptr *r = err ? NULL : rptr_overlap(env->prog, lo, end);
    if (r)
        return vm_verr(env, bit(regno), "R%u: the helper may read the pointer stored at "
                       "rodata+%u (an entry of a table of pointers): its bits are an address, "
                       "and no helper may see them", regno, r->slot);
    return err;
}

int vm_check_helper_mem(struct venv *env, unsigned regno, uint64_t min_size,
                        uint64_t max_size, bool write)
{
    const struct vreg *reg = vm_reg(env, regno);
    bool writable = reg->type == VT_STACK || reg->type == VT_OUT || reg->type == VT_MEM;
    bool readable = writable || reg->type == VT_IN || reg->type == VT_RODATA;
    if (!(write ? writable : readable))
        return vm_verr(env, bit(regno), "R%u must point to %s memory, but it is %s", regno,
                       write ? "writable (stack, output buffer or state)"
                             : "readable (stack, buffers, read-only data or state)",
                       vm_vtype_desc(reg->type));
    (void)min_size;
    if (reg->sflags & VS_WILD)
        return wild(env, regno, reg);
    if (max_size == 0)
        return 0;
    if (reg->type == VT_STACK)
        return helper_stack(env, regno, max_size, write);
    if (reg->type == VT_RODATA)
        return helper_rodata(env, regno, max_size);
    if (reg->type == VT_MEM)
        return check_sized(env, regno, reg, reg->off, max_size, reg->range);
    return check_buf(env, regno, reg, reg->off, max_size, "");
}

void vm_helper_wrote_stack(struct venv *env, const struct vreg *ptr, uint64_t max_size)
{
    struct vframe *fr = &env->cur->frames[ptr->frame];
    int64_t lo = (int64_t)ptr->off + ptr->v.smin;
    int64_t end = (int64_t)ptr->off + ptr->v.smax + (int64_t)max_size;
    for (int64_t o = lo; o < end; o++)
        if (slot_of(o) < fr->nslots)
            clobber(fr, o);
}
