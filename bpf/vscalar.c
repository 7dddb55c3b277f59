/*
 * bpf/vscalar.c - abstract scalar values: ranges + known bits (vscalar.h).
 *
 * 64-bit operations compute each fact (tnum, unsigned range, signed
 * range) separately and let vs_sync() combine them. 32-bit (ALU class)
 * operations reuse the 64-bit ones: the operands' low halves are widened
 * (zero- or sign-extended, as the operation needs), the 64-bit operation
 * runs, and the result is truncated to 32 bits and zero-extended. That is
 * exact in concrete arithmetic (x OP32 y == (u32)(ext(x) OP64 ext(y)) for
 * every RFC 9669 ALU operation, with shift amounts masked to 5 bits), so
 * it is sound abstractly too.
 */
#include "bpf/vscalar.h"

#include <stdio.h>
#include <string.h>

#include "bpf/insn.h"
#include "common/minmax.h"

#define U32MAX 0xffffffffull
#define HI32 0xffffffff00000000ull
#define SIGN64 0x8000000000000000ull

static void full32(struct vm_scalar *s)
{
    s->u32min = 0;
    s->u32max = (uint32_t)U32MAX;
    s->s32min = INT32_MIN;
    s->s32max = INT32_MAX;
}

static void full_unsigned(struct vm_scalar *s)
{
    s->umin = 0;
    s->umax = UINT64_MAX;
}

static void full_signed(struct vm_scalar *s)
{
    s->smin = INT64_MIN;
    s->smax = INT64_MAX;
}

struct vm_scalar vs_unknown(void)
{
    struct vm_scalar s;
    s.t = tn_unknown();
    full_unsigned(&s);
    full_signed(&s);
    full32(&s);
    return s;
}

struct vm_scalar vs_const(uint64_t v)
{
    struct vm_scalar s;
    s.t = tn_const(v);
    s.umin = s.umax = v;
    s.smin = s.smax = (int64_t)v;
    s.u32min = s.u32max = (uint32_t)v;
    s.s32min = s.s32max = (int32_t)v;
    return s;
}

struct vm_scalar vs_urange(uint64_t min, uint64_t max)
{
    struct vm_scalar s = vs_unknown();
    s.umin = min;
    s.umax = max;
    vs_sync(&s);
    return s;
}

struct vm_scalar vs_srange(int64_t min, int64_t max)
{
    struct vm_scalar s = vs_unknown();
    s.smin = min;
    s.smax = max;
    vs_sync(&s);
    return s;
}

bool vs_contains(const struct vm_scalar *s, uint64_t x)
{
    int64_t sx = (int64_t)x;
    uint32_t x32 = (uint32_t)x;
    int32_t sx32 = (int32_t)x32;
    return tn_contains(s->t, x) && x >= s->umin && x <= s->umax && sx >= s->smin &&
           sx <= s->smax && x32 >= s->u32min && x32 <= s->u32max && sx32 >= s->s32min &&
           sx32 <= s->s32max;
}

bool vs_subset(const struct vm_scalar *old, const struct vm_scalar *cur)
{
    return cur->umin >= old->umin && cur->umax <= old->umax && cur->smin >= old->smin &&
           cur->smax <= old->smax && cur->u32min >= old->u32min &&
           cur->u32max <= old->u32max && cur->s32min >= old->s32min &&
           cur->s32max <= old->s32max && tn_subset(old->t, cur->t);
}

void vs_hull(struct vm_scalar *dst, const struct vm_scalar *src)
{
    dst->t = tn_union(dst->t, src->t);
    dst->umin = dst->umin < src->umin ? dst->umin : src->umin;
    dst->umax = dst->umax > src->umax ? dst->umax : src->umax;
    dst->smin = dst->smin < src->smin ? dst->smin : src->smin;
    dst->smax = dst->smax > src->smax ? dst->smax : src->smax;
    dst->u32min = dst->u32min < src->u32min ? dst->u32min : src->u32min;
    dst->u32max = dst->u32max > src->u32max ? dst->u32max : src->u32max;
    dst->s32min = dst->s32min < src->s32min ? dst->s32min : src->s32min;
    dst->s32max = dst->s32max > src->s32max ? dst->s32max : src->s32max;
}

bool vs_is_empty(const struct vm_scalar *s)
{
    return s->umin > s->umax || s->smin > s->smax || s->u32min > s->u32max ||
           s->s32min > s->s32max;
}

/* --- vs_sync: make the ten facts agree ---------------------------------- */

static void bounds_from_tnum(struct vm_scalar *s)
{
    struct vm_tnum t = s->t, lo = tn_trunc(s->t, 4);
    s->umin = max64(s->umin, t.value);
    s->umax = min64(s->umax, t.value | t.mask);
    s->smin = smax64(s->smin, (int64_t)(t.value | (t.mask & SIGN64)));
    s->smax = smin64(s->smax, (int64_t)(t.value | (t.mask & ~SIGN64)));
    uint32_t lmin = (uint32_t)lo.value, lmax = (uint32_t)(lo.value | lo.mask);
    if (lmin > s->u32min)
        s->u32min = lmin;
    if (lmax < s->u32max)
        s->u32max = lmax;
    int32_t smn = (int32_t)(uint32_t)(lo.value | (lo.mask & 0x80000000u));
    int32_t smx = (int32_t)(uint32_t)(lo.value | (lo.mask & 0x7fffffffu));
    if (smn > s->s32min)
        s->s32min = smn;
    if (smx < s->s32max)
        s->s32max = smx;
}

/* A range that does not cross the sign boundary means the same values
 * read signed or unsigned. */
static void cross_sign(struct vm_scalar *s)
{
    if ((int64_t)s->umin <= (int64_t)s->umax) {
        s->smin = smax64(s->smin, (int64_t)s->umin);
        s->smax = smin64(s->smax, (int64_t)s->umax);
    }
    if ((uint64_t)s->smin <= (uint64_t)s->smax) {
        s->umin = max64(s->umin, (uint64_t)s->smin);
        s->umax = min64(s->umax, (uint64_t)s->smax);
    }
    if ((int32_t)s->u32min <= (int32_t)s->u32max) {
        if ((int32_t)s->u32min > s->s32min)
            s->s32min = (int32_t)s->u32min;
        if ((int32_t)s->u32max < s->s32max)
            s->s32max = (int32_t)s->u32max;
    }
    if ((uint32_t)s->s32min <= (uint32_t)s->s32max) {
        if ((uint32_t)s->s32min > s->u32min)
            s->u32min = (uint32_t)s->s32min;
        if ((uint32_t)s->s32max < s->u32max)
            s->u32max = (uint32_t)s->s32max;
    }
}

static void narrow32(struct vm_scalar *s, uint64_t lo, uint64_t hi)
{
    if ((uint32_t)lo <= (uint32_t)hi) {
        if ((uint32_t)lo > s->u32min)
            s->u32min = (uint32_t)lo;
        if ((uint32_t)hi < s->u32max)
            s->u32max = (uint32_t)hi;
    }
    if ((int32_t)(uint32_t)lo <= (int32_t)(uint32_t)hi) {
        if ((int32_t)(uint32_t)lo > s->s32min)
            s->s32min = (int32_t)(uint32_t)lo;
        if ((int32_t)(uint32_t)hi < s->s32max)
            s->s32max = (int32_t)(uint32_t)hi;
    }
}

/* When all values share their upper 32 bits, the low halves form a
 * contiguous range, and the other way round. */
static void deduce_32_64(struct vm_scalar *s)
{
    if ((s->umin >> 32) == (s->umax >> 32))
        narrow32(s, s->umin, s->umax);
    if ((s->smin >> 32) == (s->smax >> 32))
        narrow32(s, (uint64_t)s->smin, (uint64_t)s->smax);
    if ((s->umin >> 32) == (s->umax >> 32)) {
        uint64_t hi = s->umin & HI32;
        s->umin = max64(s->umin, hi | s->u32min);
        s->umax = min64(s->umax, hi | s->u32max);
    }
    if ((s->smin >> 32) == (s->smax >> 32)) {
        uint64_t hi = (uint64_t)s->smin & HI32;
        s->smin = smax64(s->smin, (int64_t)(hi | s->u32min));
        s->smax = smin64(s->smax, (int64_t)(hi | s->u32max));
    }
    if (s->smin >= INT32_MIN && s->smax <= INT32_MAX) {
        s->smin = smax64(s->smin, s->s32min);
        s->smax = smin64(s->smax, s->s32max);
    }
}

static bool tnum_from_bounds(struct vm_scalar *s)
{
    bool empty = false;
    s->t = tn_intersect(s->t, tn_range(s->umin, s->umax), &empty);
    struct vm_tnum lo = tn_intersect(tn_trunc(s->t, 4), tn_range(s->u32min, s->u32max),
                                     &empty);
    s->t = tn_with_low32(s->t, lo);
    return !empty;
}

/* Returns false if the facts contradict each other (empty set). */
static bool sync_ok(struct vm_scalar *s)
{
    if (tn_is_const(s->t)) {   /* one value: every fact follows, if it fits */
        uint64_t v = s->t.value;
        if (!vs_contains(s, v))
            return false;
        *s = vs_const(v);
        return true;
    }
    for (int round = 0; round < 2; round++) {
        struct vm_scalar prev = *s;
        bounds_from_tnum(s);
        cross_sign(s);
        deduce_32_64(s);
        cross_sign(s);
        if (vs_is_empty(s))
            return false;
        if (!tnum_from_bounds(s))
            return false;
        if (memcmp(&prev, s, sizeof(prev)) == 0)   /* a fixed point: no round changes it */
            return true;
    }
    bounds_from_tnum(s);
    return !vs_is_empty(s);
}

void vs_sync(struct vm_scalar *s)
{
    (void)sync_ok(s);
}

/* --- 64-bit operations --------------------------------------------------- */

static void op_add(struct vm_scalar *d, const struct vm_scalar *s)
{
    int64_t lo, hi;
    uint64_t ulo, uhi;
    bool olo = __builtin_add_overflow(d->umin, s->umin, &ulo);
    bool ohi = __builtin_add_overflow(d->umax, s->umax, &uhi);
    d->t = tn_add(d->t, s->t);
    if (olo == ohi) {
        d->umin = ulo;
        d->umax = uhi;
    } else {
        full_unsigned(d);
    }
    if (__builtin_add_overflow(d->smin, s->smin, &lo) ||
        __builtin_add_overflow(d->smax, s->smax, &hi)) {
        full_signed(d);
    } else {
        d->smin = lo;
        d->smax = hi;
    }
}

static void op_sub(struct vm_scalar *d, const struct vm_scalar *s)
{
    int64_t lo, hi;
    uint64_t ulo, uhi;
    bool olo = __builtin_sub_overflow(d->umin, s->umax, &ulo);
    bool ohi = __builtin_sub_overflow(d->umax, s->umin, &uhi);
    d->t = tn_sub(d->t, s->t);
    if (olo == ohi) {
        d->umin = ulo;
        d->umax = uhi;
    } else {
        full_unsigned(d);
    }
    if (__builtin_sub_overflow(d->smin, s->smax, &lo) ||
        __builtin_sub_overflow(d->smax, s->smin, &hi)) {
        full_signed(d);
    } else {
        d->smin = lo;
        d->smax = hi;
    }
}

static void op_mul(struct vm_scalar *d, const struct vm_scalar *s)
{
    uint64_t ulo, uhi;
    int64_t c[4];
    d->t = tn_mul(d->t, s->t);
    if (__builtin_mul_overflow(d->umax, s->umax, &uhi)) {
        full_unsigned(d);
    } else {
        ulo = d->umin * s->umin;
        d->umin = ulo;
        d->umax = uhi;
    }
    if (__builtin_mul_overflow(d->smin, s->smin, &c[0]) ||
        __builtin_mul_overflow(d->smin, s->smax, &c[1]) ||
        __builtin_mul_overflow(d->smax, s->smin, &c[2]) ||
        __builtin_mul_overflow(d->smax, s->smax, &c[3])) {
        full_signed(d);
        return;
    }
    d->smin = smin64(smin64(c[0], c[1]), smin64(c[2], c[3]));
    d->smax = smax64(smax64(c[0], c[1]), smax64(c[2], c[3]));
}

/* Unsigned division; x / 0 == 0 (RFC 9669). */
static void op_div(struct vm_scalar *d, const struct vm_scalar *s)
{
    if (vs_is_const(s) && vs_is_const(d)) {
        *d = vs_const(s->t.value ? d->t.value / s->t.value : 0);
        return;
    }
    uint64_t lo = s->umin ? d->umin / s->umax : 0;
    uint64_t hi = s->umin ? d->umax / s->umin : d->umax;
    *d = vs_unknown();
    d->umin = lo;
    d->umax = hi;
}

static int64_t sdiv_exact(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0 - (uint64_t)a);   /* INT64_MIN / -1 wraps */
    return a / b;
}

static int64_t smod_exact(int64_t a, int64_t b)
{
    if (b == 0)
        return a;
    if (b == -1)
        return 0;
    return a % b;
}

static void op_sdiv(struct vm_scalar *d, const struct vm_scalar *s)
{
    if (vs_is_const(s) && vs_is_const(d)) {
        *d = vs_const((uint64_t)sdiv_exact((int64_t)d->t.value, (int64_t)s->t.value));
        return;
    }
    if (d->smin >= 0 && s->smin >= 0) {
        struct vm_scalar ud = vs_srange(d->smin, d->smax), us = vs_srange(s->smin, s->smax);
        op_div(&ud, &us);
        *d = ud;
        return;
    }
    if (d->smin == INT64_MIN) {
        *d = vs_unknown();
        return;
    }
    int64_t m = smax64(-d->smin, d->smax);   /* |quotient| <= |dividend| */
    *d = vs_srange(-m, m);
}

/* Unsigned modulo; x % 0 == x (RFC 9669). */
static void op_mod(struct vm_scalar *d, const struct vm_scalar *s)
{
    if (vs_is_const(s) && vs_is_const(d)) {
        *d = vs_const(s->t.value ? d->t.value % s->t.value : d->t.value);
        return;
    }
    if (d->umax < s->umin || (vs_is_const(s) && s->t.value == 0))
        return;   /* x % y == x */
    uint64_t hi = s->umin ? min64(d->umax, s->umax - 1) : d->umax;
    *d = vs_urange(0, hi);
}

/* The remainder has the dividend's sign and a smaller magnitude than
 * both operands (when the divisor is not 0). */
static void op_smod(struct vm_scalar *d, const struct vm_scalar *s)
{
    if (vs_is_const(s) && vs_is_const(d)) {
        *d = vs_const((uint64_t)smod_exact((int64_t)d->t.value, (int64_t)s->t.value));
        return;
    }
    int64_t lo = smin64(0, d->smin), hi = smax64(0, d->smax);
    if ((s->smin > 0 || s->smax < 0) && s->smin != INT64_MIN) {
        int64_t m = smax64(s->smin < 0 ? -s->smin : s->smin,
                           s->smax < 0 ? -s->smax : s->smax) - 1;
        lo = smax64(lo, -m);
        hi = smin64(hi, m);
    }
    *d = vs_srange(lo, hi);
}

static void op_and(struct vm_scalar *d, const struct vm_scalar *s)
{
    bool nonneg = d->smin >= 0 || s->smin >= 0;
    int64_t smx = d->smin >= 0 && s->smin >= 0 ? smin64(d->smax, s->smax)
                  : d->smin >= 0                ? d->smax
                                                : s->smax;
    uint64_t umx = min64(d->umax, s->umax);
    d->t = tn_and(d->t, s->t);
    d->umin = 0;
    d->umax = umx;
    full_signed(d);
    if (nonneg) {
        d->smin = 0;
        d->smax = smx;
    }
}

static void op_or(struct vm_scalar *d, const struct vm_scalar *s)
{
    uint64_t umn = max64(d->umin, s->umin);
    d->t = tn_or(d->t, s->t);
    d->umin = umn;
    d->umax = UINT64_MAX;
    full_signed(d);
}

static void op_xor(struct vm_scalar *d, const struct vm_scalar *s)
{
    d->t = tn_xor(d->t, s->t);
    full_unsigned(d);
    full_signed(d);
}

/* Shift amounts are taken modulo the width; with a non-constant amount
 * we know only a range [lo, hi] of them. */
static void shift_amounts(const struct vm_scalar *s, unsigned width, unsigned *lo,
                          unsigned *hi)
{
    uint64_t mask = width - 1;
    if (vs_is_const(s)) {
        *lo = *hi = (unsigned)(s->t.value & mask);
    } else if (s->umax <= mask) {
        *lo = (unsigned)s->umin;
        *hi = (unsigned)s->umax;
    } else {
        *lo = 0;
        *hi = (unsigned)mask;
    }
}

static void op_lsh(struct vm_scalar *d, const struct vm_scalar *s, unsigned width)
{
    unsigned lo, hi;
    shift_amounts(s, width, &lo, &hi);
    bool exact = lo == hi;
    struct vm_tnum t = exact ? tn_lsh(d->t, lo) : (struct vm_tnum){0, ~0ull << lo};
    bool ufits = hi == 0 || (d->umax >> (64 - hi)) == 0;
    bool sfits = exact && d->smin >= (INT64_MIN >> lo) && d->smax <= (INT64_MAX >> lo);
    uint64_t umn = d->umin << lo, umx = d->umax << hi;
    int64_t smn = (int64_t)((uint64_t)d->smin << lo);
    int64_t smx = (int64_t)((uint64_t)d->smax << lo);
    if (exact && lo == 32) {   /* the low half moves up, whatever the high half was */
        ufits = sfits = true;
        umn = (uint64_t)d->u32min << 32;
        umx = (uint64_t)d->u32max << 32;
        smn = (int64_t)((uint64_t)(int64_t)d->s32min << 32);
        smx = (int64_t)((uint64_t)(int64_t)d->s32max << 32);
    }
    *d = vs_unknown();
    d->t = t;
    if (ufits) {
        d->umin = umn;
        d->umax = umx;
    }
    if (sfits) {
        d->smin = smn;
        d->smax = smx;
    }
}

static void op_rsh(struct vm_scalar *d, const struct vm_scalar *s, unsigned width)
{
    unsigned lo, hi;
    shift_amounts(s, width, &lo, &hi);
    struct vm_tnum t = lo == hi ? tn_rsh(d->t, lo) : (struct vm_tnum){0, ~0ull >> lo};
    uint64_t umn = d->umin >> hi, umx = d->umax >> lo;
    *d = vs_unknown();
    d->t = t;
    d->umin = umn;
    d->umax = umx;
}

static void op_arsh(struct vm_scalar *d, const struct vm_scalar *s, unsigned width)
{
    unsigned lo, hi;
    shift_amounts(s, width, &lo, &hi);
    struct vm_tnum t = lo == hi ? tn_arsh(d->t, lo) : tn_unknown();
    int64_t smn = smin64(d->smin >> lo, d->smin >> hi);
    int64_t smx = smax64(d->smax >> lo, d->smax >> hi);
    *d = vs_unknown();
    d->t = t;
    d->smin = smn;
    d->smax = smx;
}

static void alu64(struct vm_scalar *d, const struct vm_scalar *s, unsigned op,
                  bool is_signed, unsigned width)
{
    switch (op) {
    case VM_ADD: op_add(d, s); break;
    case VM_SUB: op_sub(d, s); break;
    case VM_MUL: op_mul(d, s); break;
    case VM_DIV: is_signed ? op_sdiv(d, s) : op_div(d, s); break;
    case VM_MOD: is_signed ? op_smod(d, s) : op_mod(d, s); break;
    case VM_AND: op_and(d, s); break;
    case VM_OR: op_or(d, s); break;
    case VM_XOR: op_xor(d, s); break;
    case VM_LSH: op_lsh(d, s, width); break;
    case VM_RSH: op_rsh(d, s, width); break;
    case VM_ARSH: op_arsh(d, s, width); break;
    default: *d = vs_unknown(); break;
    }
    full32(d);
    vs_sync(d);
}

/* The low 32 bits of s as a 64-bit value, zero- or sign-extended. */
static struct vm_scalar widen32(const struct vm_scalar *s, bool sign)
{
    struct vm_scalar r = vs_unknown();
    if (sign) {
        r.t = tn_sext(s->t, 32);
        r.smin = s->s32min;
        r.smax = s->s32max;
    } else {
        r.t = tn_trunc(s->t, 4);
        r.umin = s->u32min;
        r.umax = s->u32max;
    }
    r.u32min = s->u32min;
    r.u32max = s->u32max;
    r.s32min = s->s32min;
    r.s32max = s->s32max;
    vs_sync(&r);
    return r;
}

/* The concrete operation (RFC 9669), for constant operands. */
static uint64_t alu_exact(unsigned op, bool is64, bool sgn, uint64_t a, uint64_t b)
{
    if (!is64) {
        bool sx = op == VM_ARSH || (sgn && (op == VM_DIV || op == VM_MOD));
        a = sx ? (uint64_t)(int64_t)(int32_t)a : (uint32_t)a;
        b = sx ? (uint64_t)(int64_t)(int32_t)b : (uint32_t)b;
        b = (op == VM_LSH || op == VM_RSH || op == VM_ARSH) ? (b & 31) : b;
    }
    uint64_t r;
    switch (op) {
    case VM_ADD: r = a + b; break;
    case VM_SUB: r = a - b; break;
    case VM_MUL: r = a * b; break;
    case VM_DIV: r = sgn ? (uint64_t)sdiv_exact((int64_t)a, (int64_t)b) : b ? a / b : 0; break;
    case VM_MOD: r = sgn ? (uint64_t)smod_exact((int64_t)a, (int64_t)b) : b ? a % b : a; break;
    case VM_OR: r = a | b; break;
    case VM_AND: r = a & b; break;
    case VM_XOR: r = a ^ b; break;
    case VM_LSH: r = a << (b & 63); break;
    case VM_RSH: r = a >> (b & 63); break;
    default: r = (uint64_t)((int64_t)a >> (b & 63)); break;
    }
    return is64 ? r : (uint32_t)r;
}

void vs_alu(struct vm_scalar *dst, const struct vm_scalar *src, unsigned op, bool is64,
            bool is_signed)
{
    if (vs_is_const(dst) && vs_is_const(src)) {
        *dst = vs_const(alu_exact(op, is64, is_signed, dst->t.value, src->t.value));
        return;
    }
    if (is64) {
        alu64(dst, src, op, is_signed, 64);
        return;
    }
    bool sign = op == VM_ARSH || (is_signed && (op == VM_DIV || op == VM_MOD));
    struct vm_scalar d = widen32(dst, sign), s = widen32(src, sign);
    alu64(&d, &s, op, is_signed, 32);
    vs_trunc(&d, 4);
    *dst = d;
}

void vs_neg(struct vm_scalar *dst, bool is64)
{
    struct vm_scalar zero = vs_const(0);
    vs_alu(&zero, dst, VM_SUB, is64, false);
    *dst = zero;
}

void vs_trunc(struct vm_scalar *dst, unsigned bytes)
{
    if (bytes >= 8)
        return;
    unsigned bits = bytes * 8;
    uint64_t m = (1ull << bits) - 1, lo = 0, hi = m;
    if (bytes == 4) {
        lo = dst->u32min;
        hi = dst->u32max;
    } else if ((dst->umin >> bits) == (dst->umax >> bits)) {
        lo = dst->umin & m;
        hi = dst->umax & m;
    } else if ((dst->u32min >> bits) == (dst->u32max >> bits)) {
        lo = dst->u32min & m;
        hi = dst->u32max & m;
    }
    struct vm_scalar r = vs_unknown();
    r.t = tn_trunc(dst->t, bytes);
    r.umin = lo;
    r.umax = hi;
    if (bytes == 4) {
        r.s32min = dst->s32min;
        r.s32max = dst->s32max;
    }
    vs_sync(&r);
    *dst = r;
}

void vs_sext(struct vm_scalar *dst, unsigned bits)
{
    if (bits >= 64)
        return;
    struct vm_scalar tr = *dst;
    vs_trunc(&tr, bits / 8);
    int64_t half = 1ll << (bits - 1), lo, hi;
    if (bits == 32) {
        lo = tr.s32min;
        hi = tr.s32max;
    } else if ((int64_t)tr.umax < half) {
        lo = (int64_t)tr.umin;
        hi = (int64_t)tr.umax;
    } else if ((int64_t)tr.umin >= half) {
        lo = (int64_t)tr.umin - 2 * half;
        hi = (int64_t)tr.umax - 2 * half;
    } else {
        lo = -half;
        hi = half - 1;
    }
    struct vm_scalar r = vs_unknown();
    r.t = tn_sext(tr.t, bits);
    r.smin = lo;
    r.smax = hi;
    vs_sync(&r);
    *dst = r;
}

void vs_bswap(struct vm_scalar *dst, unsigned bits)
{
    struct vm_scalar tr = *dst;
    vs_trunc(&tr, bits / 8);
    struct vm_scalar r = vs_unknown();
    r.t = tn_bswap(tr.t, bits);
    vs_sync(&r);
    *dst = r;
}

/* --- branch refinement ---------------------------------------------------- */

/* One width's view of a scalar's ranges. */
struct bnd {
    uint64_t umin, umax;
    int64_t smin, smax;
};

static struct bnd get_bnd(const struct vm_scalar *s, bool is64)
{
    if (is64)
        return (struct bnd){s->umin, s->umax, s->smin, s->smax};
    return (struct bnd){s->u32min, s->u32max, s->s32min, s->s32max};
}

static void put_bnd(struct vm_scalar *s, bool is64, const struct bnd *b)
{
    if (is64) {
        s->umin = b->umin;
        s->umax = b->umax;
        s->smin = b->smin;
        s->smax = b->smax;
        return;
    }
    s->u32min = (uint32_t)b->umin;
    s->u32max = (uint32_t)b->umax;
    s->s32min = (int32_t)b->smin;
    s->s32max = (int32_t)b->smax;
}

/* Internal op for "a & b == 0" (the not-taken side of JSET). */
#define OP_NSET 0x100

static unsigned negate_op(unsigned op)
{
    switch (op) {
    case VM_JEQ: return VM_JNE;
    case VM_JNE: return VM_JEQ;
    case VM_JGT: return VM_JLE;
    case VM_JGE: return VM_JLT;
    case VM_JLT: return VM_JGE;
    case VM_JLE: return VM_JGT;
    case VM_JSGT: return VM_JSLE;
    case VM_JSGE: return VM_JSLT;
    case VM_JSLT: return VM_JSGE;
    case VM_JSLE: return VM_JSGT;
    case VM_JSET: return OP_NSET;
    default: return op;
    }
}

struct refine {
    struct bnd a, b;
    struct vm_tnum ta, tb;   /* width-truncated known bits */
    uint64_t umaxw;          /* width limits */
    int64_t sminw, smaxw;
    bool is64;
};

static bool is_const_w(const struct bnd *x)
{
    return x->umin == x->umax;
}

static bool r_eq(struct refine *r)
{
    bool empty = false;
    uint64_t umn = max64(r->a.umin, r->b.umin), umx = min64(r->a.umax, r->b.umax);
    int64_t smn = smax64(r->a.smin, r->b.smin), smx = smin64(r->a.smax, r->b.smax);
    r->a = r->b = (struct bnd){umn, umx, smn, smx};
    r->ta = r->tb = tn_intersect(r->ta, r->tb, &empty);
    return !empty;
}

/* Removes the constant v from an end of x's ranges. */
static bool drop_value(struct bnd *x, uint64_t v, int64_t sv)
{
    if (x->umin == v && x->umax == v)
        return false;
    if (x->umin == v)
        x->umin++;
    else if (x->umax == v)
        x->umax--;
    if (x->smin == sv && x->smax == sv)
        return false;
    if (x->smin == sv)
        x->smin++;
    else if (x->smax == sv)
        x->smax--;
    return true;
}

static bool r_ne(struct refine *r)
{
    if (is_const_w(&r->b) && !drop_value(&r->a, r->b.umin, r->b.smin))
        return false;
    if (is_const_w(&r->a) && !drop_value(&r->b, r->a.umin, r->a.smin))
        return false;
    return true;
}

static bool r_gt(struct bnd *a, struct bnd *b, uint64_t umaxw)
{
    if (b->umin == umaxw || a->umax == 0)
        return false;
    a->umin = max64(a->umin, b->umin + 1);
    b->umax = min64(b->umax, a->umax - 1);
    return true;
}

static bool r_ge(struct bnd *a, struct bnd *b)
{
    a->umin = max64(a->umin, b->umin);
    b->umax = min64(b->umax, a->umax);
    return true;
}

static bool r_sgt(struct bnd *a, struct bnd *b, int64_t sminw, int64_t smaxw)
{
    if (b->smin == smaxw || a->smax == sminw)
        return false;
    a->smin = smax64(a->smin, b->smin + 1);
    b->smax = smin64(b->smax, a->smax - 1);
    return true;
}

static bool r_sge(struct bnd *a, struct bnd *b)
{
    a->smin = smax64(a->smin, b->smin);
    b->smax = smin64(b->smax, a->smax);
    return true;
}

static bool single_bit(struct vm_tnum t)
{
    return tn_is_const(t) && t.value && !(t.value & (t.value - 1));
}

/* a & b != 0 */
static bool r_set(struct refine *r)
{
    if (!((r->ta.value | r->ta.mask) & (r->tb.value | r->tb.mask)))
        return false;
    if (single_bit(r->tb)) {
        r->ta.value |= r->tb.value;
        r->ta.mask &= ~r->tb.value;
    }
    if (single_bit(r->ta)) {
        r->tb.value |= r->ta.value;
        r->tb.mask &= ~r->ta.value;
    }
    r->a.umin = max64(r->a.umin, 1);
    r->b.umin = max64(r->b.umin, 1);
    return true;
}

/* a & b == 0 */
static bool r_nset(struct refine *r)
{
    if (r->ta.value & r->tb.value)
        return false;
    if (tn_is_const(r->tb)) {
        r->ta.value &= ~r->tb.value;
        r->ta.mask &= ~r->tb.value;
    }
    if (tn_is_const(r->ta)) {
        r->tb.value &= ~r->ta.value;
        r->tb.mask &= ~r->ta.value;
    }
    return true;
}

static bool refine_op(struct refine *r, unsigned op)
{
    switch (op) {
    case VM_JEQ: return r_eq(r);
    case VM_JNE: return r_ne(r);
    case VM_JGT: return r_gt(&r->a, &r->b, r->umaxw);
    case VM_JGE: return r_ge(&r->a, &r->b);
    case VM_JLT: return r_gt(&r->b, &r->a, r->umaxw);
    case VM_JLE: return r_ge(&r->b, &r->a);
    case VM_JSGT: return r_sgt(&r->a, &r->b, r->sminw, r->smaxw);
    case VM_JSGE: return r_sge(&r->a, &r->b);
    case VM_JSLT: return r_sgt(&r->b, &r->a, r->sminw, r->smaxw);
    case VM_JSLE: return r_sge(&r->b, &r->a);
    case VM_JSET: return r_set(r);
    case OP_NSET: return r_nset(r);
    default: return true;
    }
}

static struct vm_tnum put_tnum(struct vm_tnum t, struct vm_tnum w, bool is64)
{
    return is64 ? w : tn_with_low32(t, w);
}

bool vs_refine(struct vm_scalar *a, struct vm_scalar *b, unsigned op, bool is64,
               bool taken)
{
    struct refine r = {
        .a = get_bnd(a, is64),
        .b = get_bnd(b, is64),
        .ta = is64 ? a->t : tn_trunc(a->t, 4),
        .tb = is64 ? b->t : tn_trunc(b->t, 4),
        .umaxw = is64 ? UINT64_MAX : U32MAX,
        .sminw = is64 ? INT64_MIN : INT32_MIN,
        .smaxw = is64 ? INT64_MAX : INT32_MAX,
        .is64 = is64,
    };
    if (!taken)
        op = negate_op(op);
    if (!refine_op(&r, op))
        return false;
    put_bnd(a, is64, &r.a);
    put_bnd(b, is64, &r.b);
    a->t = put_tnum(a->t, r.ta, is64);
    b->t = put_tnum(b->t, r.tb, is64);
    return sync_ok(a) && sync_ok(b);
}

/* --- formatting ------------------------------------------------------------ */

/* Constants as numbers; otherwise the most telling range (unsigned when
 * the value is never negative, else signed), then known bits when they
 * say more than the range (e.g. "even"). */
void vs_format(const struct vm_scalar *s, char *buf, size_t size)
{
    if (vs_is_const(s)) {
        if ((int64_t)s->t.value < 0 && (int64_t)s->t.value > -4096)
            snprintf(buf, size, "%lld", (long long)s->t.value);
        else
            snprintf(buf, size, "%llu", (unsigned long long)s->t.value);
        return;
    }
    int n;
    if (s->smin >= 0)
        n = snprintf(buf, size, "[%llu,%llu]", (unsigned long long)s->umin,
                     (unsigned long long)s->umax);
    else if (s->smin != INT64_MIN || s->smax != INT64_MAX)
        n = snprintf(buf, size, "s[%lld,%lld]", (long long)s->smin, (long long)s->smax);
    else if (s->umin != 0 || s->umax != UINT64_MAX)
        n = snprintf(buf, size, "u[%llu,%llu]", (unsigned long long)s->umin,
                     (unsigned long long)s->umax);
    else
        n = snprintf(buf, size, "unknown");
    struct vm_tnum r = tn_range(s->umin, s->umax);
    if (n > 0 && (size_t)n < size && s->t.mask != r.mask && s->t.mask != ~0ull)
        snprintf(buf + n, size - (size_t)n, " bits %#llx/%#llx", (unsigned long long)s->t.value,
                 (unsigned long long)s->t.mask);
}
