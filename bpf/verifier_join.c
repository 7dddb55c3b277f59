/*
 * bpf/verifier_join.c - joining two states into one that covers both.
 *
 * Exact path exploration is precise but can explode: a loop over a 4 KiB
 * block runs its body 4096 times, and a chain of independent branches
 * doubles the paths at every step. So once a pruning point has seen more
 * than a few states that were not subsumed, the next one is joined with a
 * stored state: every register and stack slot becomes the least value we
 * can express that covers both (ranges: the hull; known bits: the common
 * ones; buffer pointers: the hull of their offsets and the smaller proved
 * range), and the joined state replaces the stored one and is explored.
 * At loop heads, from the second join on, bounds that still grow are
 * widened to the next constant of the program (or to the type's limit), so
 * a loop converges in a few iterations: `i < 4096` makes 4096 a threshold,
 * and refinement by the loop condition then keeps i within it.
 *
 * Soundness: the joined state contains every concrete state of both
 * inputs, so exploring it covers both. Registers whose types differ make
 * the states unjoinable (they stay separate), also a live register set in
 * one and never set in the other (clang -O1 copies registers never set on
 * paths that a later test of another value tells apart; verifier_state.c
 * maybe_joinable); slots holding a pointer in one state and data in the
 * other become uninitialised (never readable).
 *
 * Invariants:
 *   1. The result satisfies verifier_int.h's invariants (pointer offsets
 *      stay sane, registers sharing a buffer-pointer id share it in both
 *      inputs).
 *   2. Widening only ever enlarges a value (termination: thresholds are a
 *      finite set, known bits only become unknown).
 */
#include <stdlib.h>
#include <string.h>

#include "bpf/verifier_int.h"

/* --- widening thresholds ------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_s64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void add_thr(struct venv *env, int64_t v)
{
    for (int64_t d = -1; d <= 1; d++) {
        int64_t s;
        if (__builtin_add_overflow(v, d, &s))
            continue;
        env->thr_u[env->nthr] = (uint64_t)s;
        env->thr_s[env->nthr++] = s;
    }
}

/* The scales k (bit k) of the program's 64-bit `x <<= k`, k = 1..3: only
 * those make counters of scaled indexes (verifier_alu.c relink). */
static unsigned scales_used(const struct venv *env)
{
    unsigned m = 0;
    for (uint32_t pc = 0; pc < env->n; pc++) {
        const struct vm_insn *i = &env->insns[pc];
        if (i->code == (VM_CLS_ALU64 | VM_LSH | VM_K) && i->imm >= 1 && i->imm <= 3 &&
            !(env->info[pc].flags & VI_LDIMM2))
            m |= 1u << i->imm;
    }
    return m;
}

/* The constants of the program's `x == K` and `x != K` tests (as the
 * register's value: sign-extended in 64 bits, zero-extended in 32). */
static int eq_constants(struct venv *env)
{
    env->eqk = malloc(((size_t)env->n + 1) * sizeof(*env->eqk));
    if (!env->eqk)
        return -1;
    for (uint32_t pc = 0; pc < env->n; pc++) {
        const struct vm_insn *i = &env->insns[pc];
        unsigned cls = VM_CLS(i->code), op = VM_OP(i->code);
        if ((cls != VM_CLS_JMP && cls != VM_CLS_JMP32) || VM_SRC(i->code) != VM_K ||
            (op != VM_JEQ && op != VM_JNE))
            continue;
        env->eqk[env->neqk++] = cls == VM_CLS_JMP ? (uint64_t)(int64_t)i->imm : (uint32_t)i->imm;
    }
    qsort(env->eqk, env->neqk, sizeof(*env->eqk), cmp_u64);
    return 0;
}

/* Every threshold is a widening step of each loop whose bound passes it,
 * and each step a pass over the loop's body (three with the neighbours
 * add_thr adds): so only constants that can be bounds are thresholds, and
 * the limits of scaled counters only where the program scales. */
int vm_join_init(struct venv *env)
{
    /* a byte or a u16: where a pointer that a check kept inside the
     * buffer stops after it moved by a length of that type (`out += i`
     * after a loop of i < len) */
    static const int64_t limits[] = {0, 255, 65535, VM_MAX_BUF_SIZE,
                                     VM_MAX_BUF_SIZE + 255, VM_MAX_BUF_SIZE + 65535,
                                     VM_MAX_VAR_OFF, INT32_MAX, UINT32_MAX, INT64_MAX};
    const size_t nlimits = sizeof(limits) / sizeof(limits[0]);
    size_t cap = ((size_t)env->n + nlimits + 3) * 3;   /* add_thr adds 3 per value */
    env->thr_u = malloc(cap * sizeof(*env->thr_u));
    env->thr_s = malloc(cap * sizeof(*env->thr_s));
    env->arrivals = calloc(env->n, sizeof(*env->arrivals));
    if (!env->thr_u || !env->thr_s || !env->arrivals)
        return -1;
    for (size_t k = 0; k < nlimits; k++)
        add_thr(env, limits[k]);
    /* the buffer size over 2, 4, 8: where a counter of scaled indexes
     * (invariant 5's VS_SCALE) stops */
    unsigned scales = scales_used(env);
    for (unsigned k = 1; k <= 3; k++)
        if (scales >> k & 1)
            add_thr(env, VM_MAX_BUF_SIZE >> k);
    for (uint32_t pc = 0; pc < env->n; pc++) {
        const struct vm_insn *i = &env->insns[pc];
        unsigned cls = VM_CLS(i->code);
        bool alu = cls == VM_CLS_ALU || cls == VM_CLS_ALU64;
        bool k = cls == VM_CLS_ST ||
                 ((alu || cls == VM_CLS_JMP || cls == VM_CLS_JMP32) && VM_SRC(i->code) == VM_K);
        if (alu && VM_OP(i->code) != VM_MOV)
            k = false;   /* no bound: shift counts, masks, steps */
        if (k && !(env->info[pc].flags & VI_LDIMM2))
            add_thr(env, i->imm);
    }
    qsort(env->thr_u, env->nthr, sizeof(*env->thr_u), cmp_u64);
    qsort(env->thr_s, env->nthr, sizeof(*env->thr_s), cmp_s64);
    return eq_constants(env);
}

bool vm_join_selector(const struct venv *env, uint64_t a, uint64_t b)
{
    return bsearch(&a, env->eqk, env->neqk, sizeof(*env->eqk), cmp_u64) &&
           bsearch(&b, env->eqk, env->neqk, sizeof(*env->eqk), cmp_u64);
}

/* Number of thresholds below x (after: at or below x) in the sorted
 * arrays: the index of the first one >= x (after: > x). */
static size_t rank_u(const struct venv *env, uint64_t x, bool after)
{
    size_t lo = 0, hi = env->nthr;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (env->thr_u[mid] < x || (after && env->thr_u[mid] == x))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t rank_s(const struct venv *env, int64_t x, bool after)
{
    size_t lo = 0, hi = env->nthr;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (env->thr_s[mid] < x || (after && env->thr_s[mid] == x))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t up_u(const struct venv *env, uint64_t x, uint64_t limit)
{
    size_t i = rank_u(env, x, false);
    return i < env->nthr && env->thr_u[i] <= limit ? env->thr_u[i] : limit;
}

static uint64_t down_u(const struct venv *env, uint64_t x)
{
    size_t i = rank_u(env, x, true);
    return i > 0 ? env->thr_u[i - 1] : 0;
}

static int64_t up_s(const struct venv *env, int64_t x, int64_t limit)
{
    size_t i = rank_s(env, x, false);
    return i < env->nthr && env->thr_s[i] <= limit ? env->thr_s[i] : limit;
}

static int64_t down_s(const struct venv *env, int64_t x, int64_t limit)
{
    size_t i = rank_s(env, x, true);
    return i > 0 && env->thr_s[i - 1] >= limit ? env->thr_s[i - 1] : limit;
}

/* --- values ----------------------------------------------------------------------- */

/* Bits that may be unknown in a value whose bounds are now at most umax
 * (unsigned) and u32max (the low half): every bit up to the highest one
 * set in them, except the known bits below the lowest unknown one (facts
 * like "always even", which a loop exit test such as `i != 8192` with
 * i += 2 needs). Without this, vs_sync would clip a widened bound back to
 * the known bits, which a loop loses one or two at a time: a pointer
 * advanced by a word's length took 20 passes over kw_bsearch's loop to
 * reach its limit. */
static void loosen_bits(struct vm_tnum *t, uint64_t umax, uint32_t u32max)
{
    if (!t->mask)
        return;
    uint64_t low = (t->mask & -t->mask) - 1;
    uint64_t hi = umax >> 63 ? UINT64_MAX : umax ? UINT64_MAX >> __builtin_clzll(umax) : 0;
    uint64_t lo = u32max ? UINT32_MAX >> __builtin_clz(u32max) : 0;
    t->mask |= (hi | lo) & ~low;
    t->value &= ~t->mask;
}

/* A bound that still grows goes to the next threshold, and the known bits
 * that would clip it are dropped (loosen_bits). */
static void widen(const struct venv *env, const struct vm_scalar *o, struct vm_scalar *r,
                  bool ptr)
{
    /* a pointer's variable part widens at most to the sane limit */
    uint64_t ulim = ptr ? VM_MAX_VAR_OFF : UINT64_MAX;
    int64_t shi = ptr ? VM_MAX_VAR_OFF : INT64_MAX, slo = ptr ? -VM_MAX_VAR_OFF : INT64_MIN;
    if (r->umax > o->umax)
        r->umax = r->umax > ulim ? r->umax : up_u(env, r->umax, ulim);
    if (r->umin < o->umin)
        r->umin = down_u(env, r->umin);
    if (r->smax > o->smax)
        r->smax = r->smax > shi ? r->smax : up_s(env, r->smax, shi);
    if (r->smin < o->smin)
        r->smin = r->smin < slo ? r->smin : down_s(env, r->smin, slo);
    if (r->u32max > o->u32max)
        r->u32max = (uint32_t)up_u(env, r->u32max, UINT32_MAX);
    if (r->u32min < o->u32min)
        r->u32min = (uint32_t)down_u(env, r->u32min);
    if (r->s32max > o->s32max)
        r->s32max = (int32_t)up_s(env, r->s32max, INT32_MAX);
    if (r->s32min < o->s32min)
        r->s32min = (int32_t)down_s(env, r->s32min, INT32_MIN);
    if (r->umax > o->umax || r->u32max > o->u32max)
        loosen_bits(&r->t, r->umax, r->u32max);
}

static struct vm_scalar join_scalar(const struct venv *env, const struct vm_scalar *o,
                                    const struct vm_scalar *c, bool wide, bool ptr)
{
    if (memcmp(o, c, sizeof(*o)) == 0)   /* the hull of one value is itself (synced) */
        return *o;
    struct vm_scalar r = *o;
    vs_hull(&r, c);
    if (wide)
        widen(env, o, &r, ptr);
    vs_sync(&r);
    return r;
}

/* How ids of the two states pair up. A pair (o, c) of buffer-pointer
 * groups whose fixed offsets differ by `shift` (c.off - o.off) is rebased
 * to one fresh group `res`, the old state's variable part moving up by
 * `omove` (o.off - base; the current one's by omove + shift,
 * join_rebased); every member with the same pair, shift and omove joins
 * that group, so registers that shared a variable part still do (a
 * pointer and the copy clang advanced by a constant). */
struct jgroup {
    uint8_t type;
    uint32_t id, range;
};

struct jmap {
    uint32_t n;
    uint32_t old[64], cur[64], res[64];
    int64_t shift[64], omove[64];
    uint8_t type[64];      /* VT_SCALAR for link groups, else the buffer's (id 0 is per buffer) */
    uint8_t start_kept;    /* bit k: buffer k's start pointers (id 0, same offset) in both */
    const struct vreg *pre;   /* the old state's top-frame registers before the join */
    const struct vframe *oframe;   /* the old state's top frame, being joined */
    unsigned xreg;         /* the top-frame register being joined (VM_NREGS: other) */
    /* for distance bounds only one side has: the old state's buffer
     * groups before the join, and the current state */
    uint32_t ngroups;
    struct jgroup groups[32];
    const struct vstate *cur_state;
    /* end pointers with a lower bound (invariant 12) whose pairing waits
     * until every buffer group is joined: the joined pointer, the old
     * state's and the current state's before the join */
    uint32_t nback;
    struct jback {
        struct vreg *o;
        struct vreg ov, cv;
    } back[8];
    /* pointer links (invariant 7) whose pairing waits until every buffer
     * group is joined (their lgid group may be rebased): the joined
     * pointer, the other state's lid and lgid, lkey_c - lkey_o */
    uint32_t npend;
    struct jlink {
        struct vreg *o;
        uint32_t clid, clgid;
        int64_t lshift;
    } pend[64];
};

static uint32_t join_id_shift(struct venv *env, struct jmap *m, uint8_t type, uint32_t o,
                              uint32_t c, int64_t shift, int64_t omove)
{
    if (o == 0 && c == 0 && shift == 0) {
        if (type == VT_IN || type == VT_OUT)
            m->start_kept |= (uint8_t)(1u << vm_buf_index(type));
        return 0;
    }
    /* another pairing of o or c: a group of its own, which the members
     * with this same pairing share (they share a variable part, or a
     * base, in both states) */
    bool clash = false;
    for (uint32_t k = 0; k < m->n; k++) {
        if (m->type[k] != type)
            continue;
        if (m->old[k] == o && m->cur[k] == c && m->shift[k] == shift && m->omove[k] == omove)
            return m->res[k];
        clash |= m->old[k] == o || m->cur[k] == c;
    }
    if (m->n == 64)
        return ++env->id_gen;
    m->type[m->n] = type;
    m->old[m->n] = o;
    m->cur[m->n] = c;
    m->shift[m->n] = shift;
    m->omove[m->n] = omove;
    m->res[m->n++] = !clash && shift == 0 && o != 0 ? o : ++env->id_gen;
    return m->res[m->n - 1];
}

/* The joined id of a register with ids (o, c): o when the pairing is
 * consistent so far, else a fresh one. */
static uint32_t join_id(struct venv *env, struct jmap *m, uint8_t type, uint32_t o, uint32_t c)
{
    return join_id_shift(env, m, type, o, c, 0, 0);
}

/* The pairing recorded for groups (o, c), if any, with its shift and
 * omove (how far the old state's variable part moved; may be NULL). */
static const uint32_t *jmap_find(const struct jmap *m, uint8_t type, uint32_t o, uint32_t c,
                                 int64_t *shift, int64_t *omove)
{
    for (uint32_t k = 0; k < m->n; k++)
        if (m->type[k] == type && m->old[k] == o && m->cur[k] == c) {
            *shift = m->shift[k];
            if (omove)
                *omove = m->omove[k];
            return &m->res[k];
        }
    return NULL;
}

static bool sane(const struct vm_scalar *s)
{
    return s->smin >= -VM_MAX_VAR_OFF && s->smax <= VM_MAX_VAR_OFF;
}

/* A pointer whose offset is no longer bounded (it drifts in a loop): it
 * may not be dereferenced, but states holding it still converge. */
static void make_wild(struct venv *env, struct vreg *o)
{
    o->lid = 0;
    o->loff = 0;
    o->lgid = 0;
    o->sflags = VS_WILD;
    o->off = 0;
    o->v = vs_unknown();
    o->range = 0;
    if (o->type == VT_IN || o->type == VT_OUT)
        o->id = ++env->id_gen;
}

static void join_rebased(struct venv *env, struct vreg *o, const struct vreg *c, bool wide,
                         struct jmap *m);

/* End pointers walking back (invariant 12): the hull of their places
 * from the end, as a variable part; the lower bound is joined once the
 * buffer groups are paired (join_back_bounds). */
static bool join_back(struct venv *env, struct vreg *o, const struct vreg *c, bool wide,
                      struct jmap *m)
{
    struct vreg ov = *o;
    struct vm_scalar vo = o->v, vc = c->v;
    struct vm_scalar ko = vs_const((uint64_t)(int64_t)o->off);
    struct vm_scalar kc = vs_const((uint64_t)(int64_t)c->off);
    vs_alu(&vo, &ko, VM_ADD, true, false);
    vs_alu(&vc, &kc, VM_ADD, true, false);
    o->off = 0;
    o->v = join_scalar(env, &vo, &vc, wide, true);
    o->dist = 0;
    if (m->nback == 8) {
        if (!sane(&o->v))
            make_wild(env, o);
        return true;
    }
    m->back[m->nback++] = (struct jback){o, ov, *c};
    return true;
}

static bool join_ptr(struct venv *env, struct vreg *o, const struct vreg *c, bool wide,
                     struct jmap *m)
{
    bool buf = o->type == VT_IN || o->type == VT_OUT;
    bool fixed = o->type == VT_CTX || o->type == VT_IN_END || o->type == VT_OUT_END;
    if ((o->type == VT_STACK && o->frame != c->frame) ||
        (o->type == VT_MEM && o->range != c->range) || !vm_same_object(o, c))
        return false;   /* (rodata objects: invariant 14) */
    if ((o->sflags | c->sflags) & VS_WILD) {
        make_wild(env, o);
        return true;
    }
    if (vm_back_is_end(o) && (vm_back_has(o) || vm_back_has(c) || !vs_is_const(&o->v) ||
                              !vs_is_const(&c->v)))
        return join_back(env, o, c, wide, m);
    if (fixed && o->off != c->off && env->join_loop)
        make_wild(env, o);   /* a context/end pointer moving in a loop */
    if (fixed)
        return o->off == c->off || (o->sflags & VS_WILD);
    if ((o->sflags | c->sflags) & VS_ROW)
        vm_row_unlink(o);   /* vm_join makes it again if both states have it */
    /* the same link in both: off + v = vG + b + (off + loff), so the
     * linked scalars' base in c is b_o + (lkey_c - lkey_o) (and what
     * rebasing the lgid group moved, join_links), a shift every member of
     * the group must agree on (join_reg); zero-extended and scaled links
     * only without rebasing the pointer */
    int64_t lkey = (int64_t)o->off + o->loff, lshift = (int64_t)c->off + c->loff - lkey;
    const uint8_t kinds = VS_LZEXT | VS_SCALE_MASK;
    bool plain = !(o->sflags & kinds);
    if (o->lid && c->lid && ((o->sflags ^ c->sflags) & kinds) == 0 &&
        (plain || o->off == c->off) && m->npend < 64)
        m->pend[m->npend++] = (struct jlink){o, c->lid, c->lgid, lshift};
    else
        o->lid = 0, o->loff = 0, o->lgid = 0, o->sflags &= (uint8_t)~kinds;
    if (o->off == c->off) {
        o->v = join_scalar(env, &o->v, &c->v, wide, true);
        if (buf) {
            o->id = join_id(env, m, o->type, o->id, c->id);
            o->range = o->range < c->range ? o->range : c->range;
            if (o->id == 0 && !vs_is_const(&o->v))
                o->id = ++env->id_gen;
        }
        if (!sane(&o->v))
            make_wild(env, o);
        return true;
    }
    join_rebased(env, o, c, wide, m);
    if (o->lid && plain && lkey - o->off >= INT32_MIN && lkey - o->off <= INT32_MAX)
        o->loff = (int32_t)(lkey - o->off);   /* rebased: v moved by the offset's change */
    else
        o->lid = 0, o->loff = 0, o->lgid = 0, o->sflags &= (uint8_t)~kinds;
    return true;
}

/* Different fixed offsets: rebase both on the smaller one - unless c's
 * places all lie at or above o's least one (`*--q` after a test `q > p`
 * bounded q's variable part from below): then o's base stays, and so
 * does the range o proved (rebasing down moves the variable part up and
 * the range down, and a pointer walking back from its line's end would
 * lose the byte it needs, one per join). A base that keeps moving down at
 * a loop head (a pointer walking backwards without such a test) would
 * never converge: after a few joins it goes wild. */
static void join_rebased(struct venv *env, struct vreg *o, const struct vreg *c, bool wide,
                         struct jmap *m)
{
    bool buf = o->type == VT_IN || o->type == VT_OUT;
    int32_t base = o->off < c->off ? o->off : c->off;
    if (c->off < o->off && c->v.smin + ((int64_t)c->off - o->off) >= o->v.smin)
        base = o->off;
    else if (wide && c->off < o->off && env->join_count > 8) {
        make_wild(env, o);
        return;
    }
    struct vm_scalar dov = vs_const((uint64_t)(int64_t)(o->off - base));
    struct vm_scalar dcv = vs_const((uint64_t)(int64_t)(c->off - base));
    struct vm_scalar vo = o->v, vc = c->v;
    vs_alu(&vo, &dov, VM_ADD, true, false);
    vs_alu(&vc, &dcv, VM_ADD, true, false);
    o->v = join_scalar(env, &vo, &vc, wide, true);
    if (buf) {
        int64_t ro = (int64_t)o->range - (o->off - base), rc = (int64_t)c->range - (c->off - base);
        int64_t r = ro < rc ? ro : rc;
        o->range = r > 0 ? (uint32_t)r : 0;
        o->id = m ? join_id_shift(env, m, o->type, o->id, c->id, (int64_t)c->off - o->off,
                                  (int64_t)o->off - base)
                  : ++env->id_gen;
    }
    o->off = base;
    if (!sane(&o->v))
        make_wild(env, o);
}

/* The proved range of buffer group (type, id) in the current state. */
static bool cur_range(const struct vstate *st, uint8_t type, uint32_t id, uint32_t *range)
{
    for (uint32_t f = 0; f < st->nframes; f++) {
        const struct vframe *fr = &st->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            if (fr->regs[r].type == type && fr->regs[r].id == id &&
                !(fr->regs[r].sflags & VS_WILD)) {
                *range = fr->regs[r].range;
                return true;
            }
    }
    return false;
}

static bool old_range(const struct jmap *m, uint8_t type, uint32_t id, uint32_t *range)
{
    for (uint32_t g = 0; g < m->ngroups; g++)
        if (m->groups[g].type == type && m->groups[g].id == id) {
            *range = m->groups[g].range;
            return true;
        }
    return false;
}

/* x lacks distance bound k that the other side's scalar has for group
 * `other` (an id of the other state). If x is a small non-negative number
 * and its own state proved `range` bytes for the paired group, it is
 * bounded too: x <= umax = range - doff <= distance - doff. (`n = end - p;
 * if (n > 512) n = 512;`: the 512 side proved 513 bytes.) */
static void synth_dist(struct vreg *x, const struct vm_scalar *xv, unsigned k, uint32_t other,
                       bool x_is_old, const struct jmap *m)
{
    uint8_t type = k ? VT_OUT : VT_IN;
    uint32_t range = 0;
    if (other == 0 && (m->start_kept >> k & 1)) {   /* the start, in both states */
        bool found = x_is_old ? old_range(m, type, 0, &range)
                              : cur_range(m->cur_state, type, 0, &range);
        if (found && xv->smin >= 0 && xv->umax <= range)
            vm_dist_add(x, k, 0, (int64_t)range - (int64_t)xv->umax);
        return;
    }
    for (uint32_t e = 0; e < m->n; e++) {
        if (m->type[e] != type || (x_is_old ? m->cur[e] : m->old[e]) != other)
            continue;
        uint32_t mine = x_is_old ? m->old[e] : m->cur[e];
        bool found = x_is_old ? old_range(m, type, mine, &range)
                              : cur_range(m->cur_state, type, mine, &range);
        if (found && xv->smin >= 0 && xv->umax <= range)
            vm_dist_add(x, k, mine, (int64_t)range - (int64_t)xv->umax);
        return;
    }
}

/* Neither state has bound k for x, which differs between them: a
 * non-negative x that a buffer group's proved range covers in both states
 * is bounded by the distance from that group in both (x <= range - umax
 * more than that), with the group's pairing; join_dist then keeps what
 * both agree on. A counter that was a constant in the paths joined (the
 * first iterations of `out[n + k] = ' '`) has no bound of its own. */
static void synth_both(struct vreg *o, const struct vm_scalar *ov, struct vreg *c, unsigned k,
                       const struct jmap *m)
{
    uint8_t type = k ? VT_OUT : VT_IN;
    uint32_t ro, rc;
    if (ov->smin < 0 || c->v.smin < 0)
        return;
    for (uint32_t e = 0; e <= m->n; e++) {   /* e == n: the start, if kept in both */
        bool start = e == m->n;
        uint32_t go = start ? 0 : m->old[e], gc = start ? 0 : m->cur[e];
        if (start ? !(m->start_kept >> k & 1) : m->type[e] != type)
            continue;
        if (!old_range(m, type, go, &ro) || !cur_range(m->cur_state, type, gc, &rc) ||
            ro == 0 || rc == 0 || ov->umax > ro || c->v.umax > rc)
            continue;
        vm_dist_add(o, k, go, (int64_t)ro - (int64_t)ov->umax);
        vm_dist_add(c, k, gc, (int64_t)rc - (int64_t)c->v.umax);
        return;
    }
}

/* A register of the top frame that points to buffer k's start at the
 * same place in both states (before the join) and is not linked to the
 * scalar's link groups (ido, idc): the pointer a bound from the start is
 * for. A pointer to the start made as `p + n` from the scalar itself
 * (id 0 because both were constants) is not. */
static bool rel_k(const struct vreg *r, unsigned p, unsigned q, unsigned x, int64_t *k);

static bool start_pair(const struct vreg *o, const struct vreg *c, uint8_t type, uint32_t ido,
                       uint32_t idc)
{
    return o->type == type && c->type == type && !o->id && !c->id && o->off == c->off &&
           !((o->sflags | c->sflags) & VS_WILD) && vs_is_const(&o->v) && vs_is_const(&c->v) &&
           (!ido || o->lid != ido) && (!idc || c->lid != idc);
}

static bool start_base(const struct jmap *m, unsigned k, uint32_t ido, uint32_t idc)
{
    uint8_t type = k ? VT_OUT : VT_IN;
    const struct vframe *cf = &m->cur_state->frames[m->cur_state->nframes - 1], *of = m->oframe;
    /* pointers from the start rebased by the join (`out + n` at two
     * places) that are not made from x: x is added to them (`(out + n) +
     * k`), so the bound is wanted from their group */
    bool rebased = false, made_from_x = false;
    for (unsigned r = 0; r < VM_REG_FP; r++) {
        const struct vreg *o = &m->pre[r], *c = &cf->regs[r];
        int64_t ko, kc;
        if (o->type != type || c->type != type || o->id || c->id || o->off == c->off)
            continue;
        rebased = true;
        made_from_x |= (ido && o->lid == ido) || (idc && c->lid == idc);
        /* or moving with x: place - x the same in both (`p += 64` beside
         * `base += 64`) */
        made_from_x |= m->xreg < VM_REG_FP && rel_k(m->pre, r, VM_NREGS, m->xreg, &ko) &&
                       rel_k(cf->regs, r, VM_NREGS, m->xreg, &kc) && ko == kc;
    }
    if (rebased && !made_from_x)
        return false;
    for (unsigned r = 0; r < VM_REG_FP; r++)
        if (start_pair(&m->pre[r], &cf->regs[r], type, ido, idc))
            return true;
    /* spilled (`out` kept at fp-8): the pointer slots are joined already,
     * and a start pointer stays one */
    for (uint32_t s = 0; s < of->nslots && s < cf->nslots; s++)
        if (of->slots[s].spill && cf->slots[s].spill &&
            start_pair(&of->slots[s].r, &cf->slots[s].r, type, ido, idc))
            return true;
    return false;
}

/* Distance bound k (verifier_int.h invariant 6) of a joined scalar: kept
 * when both have one for the same pair of pointer groups, moved onto the
 * rebased group if the pointers were rebased (the looser of the two;
 * dropped when widening finds it loosened). The
 * pointers are joined first (vm_join), so their pairing is known. */
static void join_dist(struct venv *env, struct vreg *o, const struct vreg *c, unsigned k,
                      struct jmap *m, bool wide)
{
    int64_t shift = 0, mo = 0;
    const uint32_t *res = NULL;
    /* id 0 too: data + constant, rebased - unless it is `end - data`
     * itself in both, or a pointer to the start itself, not made from x,
     * is in both states (then the bound from the start stays) */
    if (!((o->dist & c->dist) >> k & 1)) {   /* not in both (and no start_base scan) */
        o->dist &= (uint8_t)~(VM_DIST_EQ(k) | (1u << k));
        return;
    }
    bool exact = (o->dist & c->dist & VM_DIST_EQ(k)) && o->doff[k] == c->doff[k];
    bool start = !o->did[k] && !c->did[k] &&
                 (exact || ((m->start_kept >> k & 1) && start_base(m, k, o->id, c->id)));
    if (!start)
        res = jmap_find(m, k ? VT_OUT : VT_IN, o->did[k], c->did[k], &shift, &mo);
    uint8_t eq = o->dist & c->dist & VM_DIST_EQ(k);
    o->dist &= (uint8_t)~VM_DIST_EQ(k);
    if (!res && o->did[k] != c->did[k]) {
        o->dist &= (uint8_t)~(1u << k);
        return;
    }
    /* the group was rebased (join_rebased): doff counts from base + v,
     * which moved by mo in the old state and by mo + shift in the current */
    int64_t dof = (int64_t)o->doff[k] - mo;
    int64_t dcf = (int64_t)c->doff[k] - (mo + shift);
    int64_t d = dof < dcf ? dof : dcf;
    /* widening: a bound that keeps loosening at a loop head (a counter
     * whose distance shrinks every iteration) is dropped, so joins end */
    if (d < INT32_MIN || d > INT32_MAX || (wide && d < dof)) {
        o->dist &= (uint8_t)~(1u << k);
        return;
    }
    o->did[k] = res ? *res : o->did[k];
    o->doff[k] = (int32_t)d;
    if (dof == dcf)   /* exact in both, at the same distance from the rebased group */
        o->dist |= eq;
}

static bool join_reg(struct venv *env, struct vreg *o, const struct vreg *c, bool wide,
                     struct jmap *m)
{
    if (o->type == VT_NONE || c->type == VT_NONE) {
        vm_mark_none(o);
        return true;
    }
    if (o->type != c->type)
        return false;
    if (o->type == VT_SCALAR) {
        o->lid = o->lgid = 0;   /* sum links end at joins (invariant 10) */
        o->loff = 0;
        struct vm_scalar ov = o->v;   /* x's own value, for synth_dist */
        o->v = join_scalar(env, &o->v, &c->v, wide, false);
        /* a distance bound survives when both have it for one pointer
         * group (the same pairing of ids as the pointers get) */
        struct vreg cc = *c;
        for (unsigned k = 0; k < 2; k++) {
            if ((o->dist ^ c->dist) >> k & 1) {   /* only one side has it */
                if (c->dist >> k & 1)
                    synth_dist(o, &ov, k, c->did[k], true, m);
                else
                    synth_dist(&cc, &cc.v, k, o->did[k], false, m);
            } else if (!((o->dist | c->dist) >> k & 1) && memcmp(&ov, &c->v, sizeof(ov))) {
                synth_both(o, &ov, &cc, k, m);   /* a counter: it differs */
            }
            join_dist(env, o, &cc, k, m, wide);
        }
        /* a link group may have another base in each state: b_c = b_o +
         * (c.off - o.off) is the same group if every member (and linked
         * pointer) agrees on that shift (join_id_shift pairs it) */
        if (o->id && c->id && vm_link_kind_as(c, o->sflags) == o->sflags) {
            o->id = join_id_shift(env, m, VT_SCALAR, o->id, c->id, (int64_t)c->off - o->off, 0);
        } else if (o->id && c->id && vm_link_kind_as(o, c->sflags) == c->sflags) {
            o->sflags = c->sflags;   /* o's value fits: zext32 of itself */
            o->id = join_id_shift(env, m, VT_SCALAR, o->id, c->id, (int64_t)c->off - o->off, 0);
        } else {
            o->id = 0;
            o->sflags = 0;
            o->off = 0;
        }
        return true;
    }
    return join_ptr(env, o, c, wide, m);
}

static void join_slot(struct venv *env, struct vslot *o, const struct vslot *c, bool wide,
                      struct jmap *m)
{
    o->init &= c->init;
    bool optr = o->spill && o->r.type != VT_SCALAR, cptr = c->spill && c->r.type != VT_SCALAR;
    if (o->nsize && o->nsize == c->nsize && o->nbyte == c->nbyte) {   /* invariant 8 */
        join_reg(env, &o->r, &c->r, wide, m);
        return;
    }
    o->nsize = 0;
    if (optr || cptr) {
        if (!(optr && cptr && o->init == 0xff && join_reg(env, &o->r, &c->r, wide, m)))
            o->init = 0, o->spill = 0;
        return;
    }
    if (o->spill && c->spill && o->init == 0xff)
        join_reg(env, &o->r, &c->r, wide, m);
    else
        o->spill = 0;
}

/* Pass 0 joins the registers and slots that hold pointers (then their
 * links, join_links), pass 1 the rest: scalars' distance bounds and links
 * need the pointers' pairing. */
static bool is_ptr_slot(const struct vslot *sl)
{
    return sl->spill && sl->r.type > VT_SCALAR;
}

static bool join_frame(struct venv *env, struct vframe *o, const struct vframe *c,
                       struct vm_masks mk, bool wide, struct jmap *m, unsigned pass)
{
    for (unsigned r = 0; r < VM_REG_FP; r++) {
        if ((o->regs[r].type > VT_SCALAR) != (pass == 0))
            continue;
        if (!(mk.live & (1u << r)))
            vm_mark_none(&o->regs[r]);
        else {
            m->xreg = o == m->oframe ? r : VM_NREGS;
            bool ok = join_reg(env, &o->regs[r], &c->regs[r], wide, m);
            m->xreg = VM_NREGS;
            if (!ok)
                return false;
        }
    }
    static const struct vslot empty;
    if (c->nslots > o->nslots) {
        memset(&o->slots[o->nslots], 0, (c->nslots - o->nslots) * sizeof(struct vslot));
        o->nslots = c->nslots;
    }
    for (uint32_t k = 0; k < o->nslots; k++)
        if (is_ptr_slot(&o->slots[k]) == (pass == 0))
            join_slot(env, &o->slots[k], k < c->nslots ? &c->slots[k] : &empty, wide, m);
    return true;
}

static void collect_groups(struct jmap *m, const struct vstate *st)
{
    m->ngroups = 0;
    for (uint32_t f = 0; f < st->nframes; f++)
        for (unsigned r = 0; r < VM_NREGS && m->ngroups < 32; r++) {
            const struct vreg *p = &st->frames[f].regs[r];
            if ((p->type == VT_IN || p->type == VT_OUT) && !(p->sflags & VS_WILD))
                m->groups[m->ngroups++] = (struct jgroup){p->type, p->id, p->range};
        }
}

/* Pairs the pointer links join_ptr kept, now that every buffer group's
 * pairing (and shift) is known: a group G paired with shift sG = c.off -
 * o.off was rebased, so vG moved by mG in the old state and by mG + sG in
 * the current one (join_rebased: mG = max(0, -sG) for the smaller offset,
 * 0 where the old base stays); the link's loff and the linked scalars'
 * shift make up for it. lgid 0 is the
 * buffer's start, which is also where the pointers with id 0 are (their
 * variable part is 0): a link from the start in one state and from a
 * group in the other pairs through the pointers' pairing (0, G). */
static void join_links(struct venv *env, struct jmap *m)
{
    for (uint32_t k = 0; k < m->npend; k++) {
        struct jlink *l = &m->pend[k];
        struct vreg *o = l->o;
        int64_t sg = 0, mg = 0, loff = o->loff, lshift = l->lshift;
        uint32_t gid = 0;
        if (o->lgid || l->clgid) {
            const uint32_t *res = jmap_find(m, o->type, o->lgid, l->clgid, &sg, &mg);
            gid = res ? *res : 0;
            loff -= mg;
            lshift -= sg;
        }
        if (!o->lid || ((o->lgid || l->clgid) && !gid) || loff < INT32_MIN ||
            loff > INT32_MAX) {
            o->lid = 0, o->loff = 0, o->lgid = 0;
            o->sflags &= (uint8_t)~(VS_LZEXT | VS_SCALE_MASK);
            continue;
        }
        o->loff = (int32_t)loff;
        o->lgid = gid;
        /* (fresh: no scalar) */
        o->lid = join_id_shift(env, m, VT_SCALAR, o->lid, l->clid, lshift, 0);
    }
}

/* One side's lower bound of an end pointer e (invariant 12), or one made
 * from the range proved for group g of that side (`e` is END + off: END
 * >= v_g + range): *doff for group *g. */
static bool back_bound(const struct vreg *e, unsigned k, uint32_t *g, int64_t *doff)
{
    if (!vm_back_has(e))
        return false;
    *g = e->did[k];
    *doff = e->doff[k];
    return true;
}

static bool back_from_range(const struct vreg *e, uint32_t g, uint32_t range, int64_t *doff)
{
    if (!vs_is_const(&e->v) || (range == 0 && g != 0))
        return false;   /* (group 0: the start, END >= data) */
    *doff = (int64_t)range + e->off + (int64_t)e->v.t.value;
    return true;
}

/* The pairing entry of buffer type t for group g of one side. */
static bool back_pair(const struct jmap *m, uint8_t t, uint32_t g, bool g_is_old,
                      uint32_t *other)
{
    for (uint32_t k = 0; k < m->n; k++)
        if (m->type[k] == t && (g_is_old ? m->old[k] : m->cur[k]) == g) {
            *other = g_is_old ? m->cur[k] : m->old[k];
            return true;
        }
    return false;
}

static const struct vreg *state_group(const struct vstate *st, uint8_t t, uint32_t id)
{
    for (uint32_t f = 0; f < st->nframes; f++)
        for (unsigned r = 0; r < VM_NREGS; r++) {
            const struct vreg *p = &st->frames[f].regs[r];
            if (p->type == t && p->id == id && !(p->sflags & VS_WILD))
                return p;
        }
    return NULL;
}

/* Joins the lower bounds of the end pointers join_back joined: kept (the
 * looser) when both states have one for paired groups, one side's made
 * from the range its state proved for the group the other's is for;
 * dropped when it loosens at a loop head. Then the bound narrows the
 * variable part (the buffer is at most VM_MAX_BUF_SIZE bytes). */
static void join_back_bounds(struct venv *env, struct jmap *m, const struct vstate *old, bool wide)
{
    for (uint32_t i = 0; i < m->nback; i++) {
        struct jback *b = &m->back[i];
        struct vreg *o = b->o;
        uint8_t t = o->type == VT_IN_END ? VT_IN : VT_OUT;
        unsigned k = vm_buf_index(t);
        uint32_t go = 0, gc = 0, range;
        int64_t dof = 0, dcf = 0, shift = 0, mo = 0;
        bool ho = back_bound(&b->ov, k, &go, &dof), hc = back_bound(&b->cv, k, &gc, &dcf);
        if (!ho && hc && back_pair(m, t, gc, false, &go)) {
            range = 0;   /* (the start: END >= data even with nothing proved) */
            ho = (old_range(m, t, go, &range) || go == 0) &&
                 back_from_range(&b->ov, go, range, &dof);
        }
        if (ho && !hc && back_pair(m, t, go, true, &gc)) {
            range = 0;
            hc = (cur_range(m->cur_state, t, gc, &range) || gc == 0) &&
                 back_from_range(&b->cv, gc, range, &dcf);
        }
        /* (from the start in both: through a pairing of start pointers
         * the join rebased, if any - pointers with id 0 have the variable
         * part 0, join_links relies on it too - which a pointer p compared
         * with e is likely one of) */
        const uint32_t *res = ho && hc ? jmap_find(m, t, go, gc, &shift, &mo) : NULL;
        if (ho && hc && (res || (!go && !gc))) {
            dof -= mo;   /* the group's base moved: join_rebased */
            dcf -= mo + shift;
            int64_t d = dof < dcf ? dof : dcf;
            /* widening: a bound that loosens at a loop head is dropped */
            if (d >= INT32_MIN && d <= INT32_MAX && !(wide && d < dof)) {
                o->dist = (uint8_t)(1u << k);
                o->did[k] = res ? *res : 0;
                o->doff[k] = (int32_t)d;
                const struct vreg *g = o->did[k] ? state_group(old, t, o->did[k]) : NULL;
                int64_t vg = g ? g->v.smin : 0;
                if ((g || !o->did[k]) && vg > -((int64_t)1 << 40)) {
                    int64_t lo = vg + d - (int64_t)VM_MAX_BUF_SIZE - o->off;
                    struct vm_scalar v = o->v, l = vs_const((uint64_t)lo);
                    if (vs_refine(&v, &l, VM_JSGE, true, true))
                        o->v = v;
                }
            }
        }
        if (!sane(&o->v))
            make_wild(env, o);
    }
}

static bool is_buf_ptr(const struct vreg *r)
{
    return (r->type == VT_IN || r->type == VT_OUT) && !(r->sflags & VS_WILD);
}

/* place(P) - place(Q) - x = *k in the registers r of one state (place:
 * fixed + variable offset from the buffer's start; q == VM_NREGS: the
 * start itself, place 0): P, Q and x constants, or P linked to x's group
 * (invariant 7) from Q's group (from the start) with x a plain member. */
static bool rel_k(const struct vreg *r, unsigned p, unsigned q, unsigned x, int64_t *k)
{
    const struct vreg *P = &r[p], *X = &r[x], *Q = q < VM_NREGS ? &r[q] : NULL;
    if (!is_buf_ptr(P) || X->type != VT_SCALAR || (Q && (Q->type != P->type || !is_buf_ptr(Q))))
        return false;
    int64_t qplace = Q ? (int64_t)Q->off + (int64_t)Q->v.t.value : 0;
    if (vs_is_const(&P->v) && vs_is_const(&X->v) && (!Q || vs_is_const(&Q->v))) {
        *k = (int64_t)P->off + (int64_t)P->v.t.value - qplace - (int64_t)X->v.t.value;
        return true;
    }
    if (!P->lid || P->lid != X->id || X->sflags || (P->sflags & (VS_LZEXT | VS_SCALE_MASK)) ||
        (Q ? !Q->id || P->lgid != Q->id : P->lgid != 0))
        return false;
    /* place(P) = off + vG + b + loff, place(Q) = Q.off + vG, x = b + x.off */
    *k = (int64_t)P->off - (Q ? Q->off : 0) + P->loff - X->off;
    return true;
}

/* True if some register of regs holds a plain member of link group id. */
static bool has_member(const struct vreg *regs, uint32_t id)
{
    for (unsigned r = 0; r < VM_REG_FP; r++)
        if (regs[r].type == VT_SCALAR && regs[r].id == id && regs[r].sflags == 0)
            return true;
    return false;
}

/* Links P (joined, j[p]) to x's group from Q's group (q < VM_NREGS) or
 * the start with place(P) = place(Q) + x + k in both states. */
static bool set_link(struct venv *env, struct vreg *j, unsigned p, unsigned q, unsigned x,
                     int64_t k)
{
    int64_t loff = (q < VM_NREGS ? (int64_t)j[q].off : 0) + (j[x].id ? (int64_t)j[x].off : 0) +
                   k - j[p].off;
    if (loff < INT32_MIN || loff > INT32_MAX)
        return false;
    if (!j[x].id) {   /* a fresh group: x = b */
        j[x].id = ++env->id_gen;
        j[x].off = 0;
    }
    j[p].lid = j[x].id;
    j[p].loff = (int32_t)loff;
    j[p].lgid = q < VM_NREGS ? j[q].id : 0;
    j[p].sflags &= (uint8_t)~(VS_LZEXT | VS_SCALE_MASK);
    return true;
}

/* A pointer and a scalar that moved together (`p += 64` beside `base +=
 * 64`; `q = p + n` with p and n both moving), constants in the first
 * iterations or linked: if place(P) - place(Q) - x is the same k in both
 * states (Q a pointer group, or the buffer's start), it is in the joined
 * one too, so the joined P's variable part is vQ + x + k + Q.off - P.off,
 * a link to x's group (invariant 7). `pre` holds the old state's
 * registers of the top frame before the join, `c` the other state's, `j`
 * the joined ones. A link whose base no register holds is replaced. */
static void synth_link(struct venv *env, struct vreg *j, const struct vreg *pre,
                       const struct vreg *c, unsigned p)
{
    if (!is_buf_ptr(&j[p]) || (j[p].lid && has_member(j, j[p].lid)))
        return;
    j[p].lid = 0, j[p].loff = 0, j[p].lgid = 0;
    j[p].sflags &= (uint8_t)~(VS_LZEXT | VS_SCALE_MASK);
    for (unsigned q = 0; q <= VM_NREGS; q++) {
        bool start = q == VM_NREGS;
        if (start ? vs_is_const(&j[p].v)   /* from the start: only a moving P */
                  : q == p || j[q].type != j[p].type || !is_buf_ptr(&j[q]) || !j[q].id)
            continue;
        for (unsigned x = 0; x < VM_REG_FP; x++) {
            int64_t ko, kc;
            if (j[x].type != VT_SCALAR || (j[x].id && j[x].sflags) ||
                !rel_k(pre, p, q, x, &ko) || !rel_k(c, p, q, x, &kc) || ko != kc)
                continue;
            if (set_link(env, j, p, q, x, ko))
                return;
        }
    }
}

/* The joined name of value (o, off) of the old state given the current
 * state's group c for it: the pairing's result if it pairs them with the
 * shift the offsets show (joined members keep the old state's offsets). */
static bool neq_pair(const struct jmap *m, uint32_t o, uint32_t c, int32_t ooff, int32_t coff,
                     uint32_t *res)
{
    int64_t shift;
    const uint32_t *r = jmap_find(m, VT_SCALAR, o, c, &shift, NULL);
    if (!r || shift != (int64_t)coff - ooff)
        return false;
    *res = *r;
    return true;
}

/* Differences of values (invariant 9) that both states have, under the
 * pairing of link groups the registers' join made. */
static void join_neq(struct vstate *old, const struct vstate *cur, const struct jmap *m)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < old->nneq; k++) {
        const struct vneq e = old->neq[k];
        bool keep = false;
        for (uint32_t j = 0; j < cur->nneq && !keep; j++) {
            const struct vneq *c = &cur->neq[j];
            for (unsigned sw = 0; sw < 2 && !keep; sw++) {
                uint32_t r0, r1;
                keep = e.kind[0] == c->kind[sw] && e.kind[1] == c->kind[!sw] &&
                       neq_pair(m, e.id[0], c->id[sw], e.off[0], c->off[sw], &r0) &&
                       neq_pair(m, e.id[1], c->id[!sw], e.off[1], c->off[!sw], &r1);
                if (keep) {
                    old->neq[n] = e;
                    old->neq[n].id[0] = r0;
                    old->neq[n++].id[1] = r1;
                }
            }
        }
    }
    old->nneq = n;
}

bool vm_join(struct venv *env, struct vstate *old, const struct vstate *cur, bool wide)
{
    struct jmap m;
    m.n = 0;
    m.npend = 0;
    m.nback = 0;
    m.start_kept = 0;
    if (old->nframes != cur->nframes)
        return false;
    for (unsigned k = 0; k < 2; k++)   /* what both paths know */
        old->end_lo[k] = old->end_lo[k] < cur->end_lo[k] ? old->end_lo[k] : cur->end_lo[k];
    collect_groups(&m, old);
    m.cur_state = cur;
    for (uint32_t f = 0; f < cur->nframes; f++)
        if (old->frames[f].callsite != cur->frames[f].callsite)
            return false;
    uint32_t top = cur->nframes - 1;
    struct vreg pre[VM_NREGS];
    memcpy(pre, old->frames[top].regs, sizeof(pre));
    struct vframe opre;   /* the old top frame before the join, for the zone */
    memcpy(opre.regs, pre, sizeof(pre));
    opre.nslots = old->frames[top].nslots;
    memcpy(opre.slots, old->frames[top].slots, opre.nslots * sizeof(opre.slots[0]));
    m.pre = pre;
    m.oframe = &old->frames[top];
    m.xreg = VM_NREGS;
    for (unsigned pass = 0; pass < 2; pass++) {
        for (uint32_t f = 0; f < cur->nframes; f++)
            if (!join_frame(env, &old->frames[f], &cur->frames[f], vm_frame_masks(env, f),
                            wide, &m, pass))
                return false;
        if (pass == 0) {
            join_links(env, &m);
            join_back_bounds(env, &m, old, wide);
        }
    }
    for (unsigned p = 0; p < VM_REG_FP; p++)
        synth_link(env, old->frames[top].regs, pre, cur->frames[top].regs, p);
    vm_row_synth(env, old->frames[top].regs, pre, cur->frames[top].regs,
                 vm_frame_masks(env, top).prec);
    join_neq(old, cur, &m);
    struct vzone oz[VM_MAX_ZONE];
    uint32_t onz = old->nzone;
    memcpy(oz, old->zone, onz * sizeof(oz[0]));
    vm_zone_join(env, old, &opre, oz, onz, cur, vm_frame_masks(env, top), wide);
    old->backedges = cur->backedges;
    old->joined = 1;
    return true;
}
