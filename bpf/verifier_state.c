/*
 * bpf/verifier_state.c - state snapshots, pruning and the worklist.
 *
 * Pruning: at a pruning point the current state is compared with the
 * states stored there. If one of them subsumes it - every register and
 * stack slot of the current state stands for a subset of what the stored
 * one stood for, ignoring what the static analyses say cannot matter
 * (dead registers, the exact value of imprecise scalars) - every path
 * from the current state is a path the stored state's exploration covers,
 * so the current path stops. This holds even while the stored state's
 * exploration is still under way (a loop reaching its own head again):
 * when the worklist drains, every successor of every stored state has
 * been explored or subsumed, and no explored state was unsafe.
 *
 * Stored states that keep failing to match are evicted (the kernel's
 * heuristic: more than 3 misses per hit, plus 3); eviction only costs
 * pruning opportunities, never soundness.
 *
 * The worklist is a heap ordered by (back edges taken, reverse-post-order
 * position): all paths of one loop iteration reach a join point before
 * the next iteration starts, so they meet the states stored there while
 * those are fresh. Ties go to the most recently queued state.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/verifier_int.h"

#define CALLER_SAVED 0x3fu

struct sframe {
    struct vreg regs[VM_NREGS];
    uint32_t callsite, func, nslots, pad;
};

struct vsnap {
    uint32_t nframes, backedges, joined, nneq;
    struct vneq neq[VM_MAX_NEQ];
    uint32_t nzone, pad;
    struct vzone zone[VM_MAX_ZONE];
    int64_t end_lo[2];
    struct sframe frames[];   /* then every frame's slots, in order */
};

static struct vslot *snap_slots(const struct vsnap *s)
{
    return (struct vslot *)(void *)&((struct sframe *)(uintptr_t)s->frames)[s->nframes];
}

struct vsnap *vm_snap_take(const struct vstate *st)
{
    assert(vm_zone_ok(st));
    size_t nslots = 0;
    for (uint32_t f = 0; f < st->nframes; f++)
        nslots += st->frames[f].nslots;
    struct vsnap *s = malloc(sizeof(*s) + st->nframes * sizeof(struct sframe) +
                             nslots * sizeof(struct vslot));
    if (!s)
        return NULL;
    s->nframes = st->nframes;
    s->backedges = st->backedges;
    s->joined = st->joined;
    s->nneq = st->nneq;
    memcpy(s->neq, st->neq, st->nneq * sizeof(st->neq[0]));
    s->nzone = st->nzone;
    memcpy(s->zone, st->zone, st->nzone * sizeof(st->zone[0]));
    memcpy(s->end_lo, st->end_lo, sizeof(s->end_lo));
    struct vslot *slots = snap_slots(s);
    for (uint32_t f = 0; f < st->nframes; f++) {
        const struct vframe *fr = &st->frames[f];
        memcpy(s->frames[f].regs, fr->regs, sizeof(fr->regs));
        s->frames[f].callsite = fr->callsite;
        s->frames[f].func = fr->func;
        s->frames[f].nslots = fr->nslots;
        memcpy(slots, fr->slots, fr->nslots * sizeof(struct vslot));
        slots += fr->nslots;
    }
    return s;
}

void vm_snap_restore(struct vstate *st, const struct vsnap *s)
{
    const struct vslot *slots = snap_slots(s);
    st->nframes = s->nframes;
    st->backedges = s->backedges;
    st->joined = s->joined;
    st->nneq = s->nneq;
    memcpy(st->neq, s->neq, s->nneq * sizeof(s->neq[0]));
    st->nzone = s->nzone;
    memcpy(st->zone, s->zone, s->nzone * sizeof(s->zone[0]));
    memcpy(st->end_lo, s->end_lo, sizeof(st->end_lo));
    for (uint32_t f = 0; f < s->nframes; f++) {
        struct vframe *fr = &st->frames[f];
        memcpy(fr->regs, s->frames[f].regs, sizeof(fr->regs));
        fr->callsite = s->frames[f].callsite;
        fr->func = s->frames[f].func;
        fr->nslots = s->frames[f].nslots;
        memcpy(fr->slots, slots, fr->nslots * sizeof(struct vslot));
        slots += fr->nslots;
    }
}

void vm_snap_free(struct vsnap *snap)
{
    free(snap);
}

void vm_each_reg(struct venv *env, void (*fn)(struct venv *, struct vreg *, const void *),
                 const void *arg)
{
    for (uint32_t f = 0; f < env->cur->nframes; f++) {
        struct vframe *fr = &env->cur->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            fn(env, &fr->regs[r], arg);
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].spill)
                fn(env, &fr->slots[s].r, arg);
    }
}

/* --- subsumption ------------------------------------------------------------ */

/* Packet ids must correspond one to one between the two states, and
 * with one shift of the variable part per pair (below). */
struct idmap {
    uint32_t n, temp;
    uint32_t old[64], cur[64];
    int64_t shift[64];
};

static bool idmap_check_shift(struct idmap *m, uint32_t o, uint32_t c, int64_t shift)
{
    if (o == 0 || c == 0)
        return o == c;
    for (uint32_t k = 0; k < m->n; k++) {
        if (m->old[k] == o || m->cur[k] == c)
            return m->old[k] == o && m->cur[k] == c && m->shift[k] == shift;
    }
    if (m->n == 64)
        return false;
    m->old[m->n] = o;
    m->shift[m->n] = shift;
    m->cur[m->n++] = c;
    return true;
}

static bool idmap_check(struct idmap *m, uint32_t o, uint32_t c)
{
    return idmap_check_shift(m, o, c, 0);
}

/* A pointer c with another fixed offset than o is the same address as o
 * with the variable part shifted by d = c.off - o.off: it is subsumed if
 * the shifted part lies in o's, and (buffers) if the bytes c proved from
 * its base+var cover the ones o proved from its own (the ranges are
 * counted from base+var, where o's is d bytes after c's). A loop that
 * advances a pointer by a constant reaches its head with a larger fixed
 * offset than the state joined there, which this recognises. */
static bool rebased_subsumed(const struct vreg *o, const struct vreg *c, struct idmap *m)
{
    int64_t d = (int64_t)c->off - o->off;
    if (o->type == VT_CTX)
        return false;
    struct vm_scalar shifted = c->v, k = vs_const((uint64_t)d);
    vs_alu(&shifted, &k, VM_ADD, true, false);
    if (!vs_subset(&o->v, &shifted))
        return false;
    switch (o->type) {
    case VT_STACK: return o->frame == c->frame;
    case VT_IN:
    case VT_OUT:
        /* c proves [base+vc, +rc) = [base+vo-d, +rc): covers [base+vo, +ro) */
        return (o->range == 0 || (d >= 0 && (int64_t)c->range - d >= (int64_t)o->range)) &&
               idmap_check_shift(m, o->id, c->id, d);
    case VT_MEM: return o->range == c->range;
    default: return true;
    }
}

/* The distance bounds o relied on hold in c for the corresponding
 * pointer groups (id 0: the buffer's start, where c's bound must be at
 * least as tight). */
static bool dist_subsumed(const struct vreg *o, const struct vreg *c, struct idmap *m)
{
    for (unsigned k = 0; k < 2; k++) {
        if (!(o->dist >> k & 1))
            continue;
        if (!(c->dist >> k & 1))
            return false;
        bool eq = o->dist & VM_DIST_EQ(k);   /* exact: c must be exactly there too */
        if (eq && (!(c->dist & VM_DIST_EQ(k)) || (o->did[k] == 0 && c->doff[k] != o->doff[k])))
            return false;
        if (o->did[k] == 0 ? c->did[k] != 0 || c->doff[k] < o->doff[k]
                           : !idmap_check_shift(m, o->did[k], c->did[k],
                                                (int64_t)c->doff[k] - o->doff[k]))
            return false;
    }
    return true;
}

static bool reg_subsumed(const struct vreg *o, const struct vreg *c, bool precise,
                         struct idmap *m)
{
    if (o->type == VT_NONE)
        return true;
    if (o->type == VT_SCALAR) {
        if (c->type != VT_SCALAR)
            return false;
        if (!precise)
            return true;
        if (!vs_subset(&o->v, &c->v))
            return false;
        /* a distance bound the old state relied on must hold here too,
         * for the corresponding pointer group (verifier_dist.c) */
        if (o->dist && !dist_subsumed(o, c, m))
            return false;
        /* links the old state relied on must exist in the current one */
        if (o->id == 0)
            return true;
        /* c's group may have its base shifted by c.off - o.off, the same
         * for every member (b_c = b_o + shift relabels the base) */
        return vm_link_kind_as(c, o->sflags) == o->sflags &&
               idmap_check_shift(m, o->id, c->id ? c->id : 0xc0000000u + m->temp++,
                                 (int64_t)c->off - o->off);
    }
    if (o->type != c->type || !vm_object_within(o, c))   /* invariant 14 */
        return false;
    if (o->sflags & VS_WILD)   /* any offset: only the region must match */
        return (o->type != VT_STACK || o->frame == c->frame) &&
               (o->type != VT_MEM || o->range == c->range);
    if (c->sflags & VS_WILD)
        return false;
    /* an end pointer's lower bound (invariant 12) the old state relied on */
    if (vm_back_has(o) && !dist_subsumed(o, c, m))
        return false;
    /* a link of the variable part to scalars (invariant 7) the old state
     * relied on must be there too; a row link (invariant 11) with the
     * scalars' base shifted by (c.off + c.loff - o.off - o.loff) / m */
    int64_t rshift;
    if ((o->sflags & VS_ROW) && (!vm_row_subsumed(o, c, &rshift) ||
                                 !idmap_check_shift(m, o->lid, c->lid, rshift)))
        return false;
    if (o->lid && !(o->sflags & VS_ROW) &&
        (((o->sflags & (VS_LZEXT | VS_SCALE_MASK)) && o->off != c->off) ||
         ((o->sflags ^ c->sflags) & (VS_LZEXT | VS_SCALE_MASK | VS_ROW)) ||
         !idmap_check_shift(m, o->lid, c->lid, (int64_t)c->off + c->loff - o->off - o->loff) ||
         !idmap_check(m, o->lgid, c->lgid)))
        return false;
    if (o->off != c->off)
        return rebased_subsumed(o, c, m);
    if (!vs_subset(&o->v, &c->v))
        return false;
    switch (o->type) {
    case VT_STACK: return o->frame == c->frame;
    case VT_IN:
    case VT_OUT: return o->range <= c->range && idmap_check(m, o->id, c->id);
    case VT_MEM: return o->range == c->range;
    default: return true;
    }
}

/* o holds a narrow store: c holds the same one with a value inside o's,
 * or o's value covers whatever c's bytes read back as (any value of that
 * size). */
static bool narrow_subsumed(const struct vslot *o, const struct vslot *c, struct idmap *m)
{
    if (c->nsize == o->nsize && c->nbyte == o->nbyte)
        return reg_subsumed(&o->r, &c->r, true, m);
    struct vreg any;
    vm_mark_scalar(&any, vs_urange(0, (1ull << (8 * o->nsize)) - 1));
    return reg_subsumed(&o->r, &any, true, m);
}

static bool slot_subsumed(const struct vslot *o, const struct vslot *c, bool precise,
                          struct idmap *m)
{
    static const struct vslot empty;
    if (!c)
        c = &empty;
    if (o->init == 0)
        return true;
    if ((c->init & o->init) != o->init)
        return false;
    bool c_ptr = c->spill && c->r.type != VT_SCALAR;
    if (!o->spill || o->r.type == VT_SCALAR) {
        if (c_ptr)
            return false;
        if (o->nsize && precise)   /* a narrow store (invariant 8) o relied on */
            return narrow_subsumed(o, c, m);
        if (!o->spill || !precise)
            return true;
        struct vreg unknown;
        vm_mark_unknown(&unknown);   /* what data bytes read back as */
        return reg_subsumed(&o->r, c->spill ? &c->r : &unknown, true, m);
    }
    return c->spill && reg_subsumed(&o->r, &c->r, true, m);
}

struct vm_masks vm_frame_masks(const struct venv *env, uint32_t f)
{
    const struct vstate *st = env->cur;
    if (f == st->nframes - 1) {
        const struct vinfo *vi = &env->info[env->pc];
        return (struct vm_masks){vi->live, vi->prec, vi->slot_prec};
    }
    /* below the top: the return site's facts, minus what the return
     * overwrites */
    const struct vinfo *vi = &env->info[st->frames[f + 1].callsite + 1];
    return (struct vm_masks){(uint16_t)(vi->live & ~CALLER_SAVED),
                             (uint16_t)(vi->prec & ~CALLER_SAVED), vi->slot_prec};
}

static bool frame_subsumed(const struct venv *env, const struct sframe *o,
                           const struct vslot *oslots, const struct vframe *c,
                           struct vm_masks mk, struct idmap *m)
{
    for (unsigned r = 0; r < VM_REG_FP; r++) {
        if (!(mk.live & (1u << r)))
            continue;
        if (!reg_subsumed(&o->regs[r], &c->regs[r], mk.prec & (1u << r), m))
            return false;
    }
    for (uint32_t k = 0; k < o->nslots; k++) {
        const struct vslot *cs = k < c->nslots ? &c->slots[k] : NULL;
        if (!slot_subsumed(&oslots[k], cs, (mk.slots >> k) & 1, m))
            return false;
    }
    return true;
}

/* The current-state group and shift old group o is paired with, if any. */
static bool idmap_find(const struct idmap *m, uint32_t o, uint32_t *c, int64_t *shift)
{
    for (uint32_t k = 0; k < m->n; k++)
        if (m->old[k] == o) {
            *c = m->cur[k];
            *shift = m->shift[k];
            return true;
        }
    return false;
}

static bool neq_has(const struct vstate *cur, const uint32_t id[2], const int32_t off[2],
                    const uint8_t kind[2])
{
    for (uint32_t k = 0; k < cur->nneq; k++) {
        const struct vneq *e = &cur->neq[k];
        for (unsigned sw = 0; sw < 2; sw++)
            if (e->id[sw] == id[0] && e->off[sw] == off[0] && e->kind[sw] == kind[0] &&
                e->id[!sw] == id[1] && e->off[!sw] == off[1] && e->kind[!sw] == kind[1])
                return true;
    }
    return false;
}

/* Every difference of values the old state relied on (invariant 9) holds
 * in the current one, for the groups the registers paired (their base
 * moved by the pairing's shift). A group no compared register paired
 * names no value that can matter: a register whose value reaches a test
 * is precise, so compared, wherever the test is ahead (verifier_flow.c). */
static bool neq_subsumed(const struct vsnap *old, const struct vstate *cur,
                         const struct idmap *m)
{
    for (uint32_t k = 0; k < old->nneq; k++) {
        const struct vneq *e = &old->neq[k];
        uint32_t id[2];
        int32_t off[2];
        int64_t sh;
        bool mapped = true;
        for (unsigned i = 0; i < 2 && mapped; i++) {
            mapped = idmap_find(m, e->id[i], &id[i], &sh) && sh >= INT32_MIN - (int64_t)e->off[i] &&
                     sh <= INT32_MAX - (int64_t)e->off[i];
            if (mapped)
                off[i] = (int32_t)(e->off[i] + sh);
        }
        if (mapped && !neq_has(cur, id, off, e->kind))
            return false;
    }
    return true;
}

/* The pairing of old link group o (for verifier_zone.c). */
static bool zone_find(const void *m, uint32_t o, uint32_t *c, int64_t *shift)
{
    return idmap_find(m, o, c, shift);
}

static bool state_subsumed(const struct venv *env, const struct vsnap *old)
{
    const struct vstate *cur = env->cur;
    if (old->nframes != cur->nframes)
        return false;
    for (uint32_t f = 0; f < cur->nframes; f++)
        if (old->frames[f].callsite != cur->frames[f].callsite)
            return false;
    /* what the old path knew of the buffers' sizes (an access through an
     * end pointer may rely on it, whichever register proved it) */
    if (old->end_lo[0] > cur->end_lo[0] || old->end_lo[1] > cur->end_lo[1])
        return false;
    struct idmap m;
    m.n = m.temp = 0;
    const struct vslot *oslots = snap_slots(old);
    for (uint32_t f = 0; f < cur->nframes; f++) {
        if (!frame_subsumed(env, &old->frames[f], oslots, &cur->frames[f],
                            vm_frame_masks(env, f), &m))
            return false;
        oslots += old->frames[f].nslots;
    }
    return neq_subsumed(old, cur, &m) &&
           vm_zone_subsumed(env, old->zone, old->nzone, zone_find, &m);
}

#define JOIN_LOOP_AFTER 16  /* exact iterations of a loop before joining */
#define JOIN_FWD_AFTER 8    /* separate states at a merge point before joining */
#define JOIN_SELECTORS 8    /* stored states at a pc kept apart by selectors, at most */

/* A live register holding two different constants that the program tests
 * with == or != (a selector): clang -O1 merges a loop's exits into one
 * block that tells them apart by such a value (`r6 = 7` on one path, `r6 =
 * 0` on another, then `if r6 == 7`, `if r6 != 0`), and the hull [0, 7]
 * would make paths of values no path sets, with the other registers of
 * another exit. Kept apart only while a pc has few stored states: the
 * selectors' values are finite, and after that states join as before. */
static bool selector_differs(const struct venv *env, const struct vreg *a, const struct vreg *b)
{
    return a->type == VT_SCALAR && b->type == VT_SCALAR && vs_is_const(&a->v) &&
           vs_is_const(&b->v) && a->v.t.value != b->v.t.value &&
           vm_join_selector(env, a->v.t.value, b->v.t.value);
}

/* Cheap test before a join: same frames, and no live register of one type
 * in one state and of another in the other, never set (VT_NONE) counting
 * as a type: joining a register set on one path with one never set would
 * lose which path it was set on (clang -O1 uses such copies where a test
 * of another value tells the paths apart); nor, while `selectors`, a
 * selector with different values (selector_differs). */
static bool maybe_joinable(const struct venv *env, const struct vsnap *old, bool selectors)
{
    const struct vstate *cur = env->cur;
    if (old->nframes != cur->nframes)
        return false;
    for (uint32_t f = 0; f < cur->nframes; f++) {
        if (old->frames[f].callsite != cur->frames[f].callsite)
            return false;
        uint16_t live = vm_frame_masks(env, f).live;
        for (unsigned r = 0; r < VM_REG_FP; r++) {
            uint8_t a = old->frames[f].regs[r].type, b = cur->frames[f].regs[r].type;
            if ((live & (1u << r)) && a != b)
                return false;
            if (selectors && (live & (1u << r)) &&
                selector_differs(env, &old->frames[f].regs[r], &cur->frames[f].regs[r]))
                return false;
        }
    }
    return true;
}

/* Joins the current state into a stored one at env->pc; on success the
 * joined state replaces it and becomes the current state. */
static bool try_join(struct venv *env)
{
    bool loop = env->info[env->pc].flags & VI_LOOP;
    env->join_loop = loop;
    unsigned stored = 0;
    for (struct vseen *sl = env->seen[env->pc]; sl && stored < JOIN_SELECTORS; sl = sl->next)
        stored++;
    for (struct vseen *sl = env->seen[env->pc]; sl; sl = sl->next) {
        if (!maybe_joinable(env, sl->snap, stored < JOIN_SELECTORS))
            continue;
        vm_snap_restore(env->tmp, sl->snap);
        env->join_count = sl->joins;
        if (!vm_join(env, env->tmp, env->cur, loop && sl->joins > 0))
            continue;
        struct vsnap *snap = vm_snap_take(env->tmp);
        if (!snap)
            return false;
        vm_snap_free(sl->snap);
        sl->snap = snap;
        sl->joins++;
        sl->misses = 0;
        struct vstate *t = env->cur;
        env->cur = env->tmp;
        env->tmp = t;
        env->cur->joined = 1;
        vm_link_narrow(env);  /* what the joined links and distances still prove */
        vm_zone_narrow(env);
        vm_dist_learn(env);
        return true;
    }
    return false;
}

static void evict(struct vseen **link)
{
    struct vseen *sl = *link;
    *link = sl->next;
    vm_snap_free(sl->snap);
    free(sl);
}

/* Sum links (invariant 10) live between an add and the test right
 * after it: a state compared or stored has none. */
static void drop_sums(struct vstate *st)
{
    for (uint32_t f = 0; f < st->nframes; f++) {
        struct vframe *fr = &st->frames[f];
        for (unsigned r = 0; r < VM_NREGS; r++)
            if (fr->regs[r].type == VT_SCALAR)
                fr->regs[r].lid = fr->regs[r].lgid = 0, fr->regs[r].loff = 0;
        for (uint32_t s = 0; s < fr->nslots; s++)
            if (fr->slots[s].r.type == VT_SCALAR)
                fr->slots[s].r.lid = fr->slots[s].r.lgid = 0, fr->slots[s].r.loff = 0;
    }
}

int vm_state_visit(struct venv *env)
{
    drop_sums(env->cur);
    struct vseen **link = &env->seen[env->pc];
    while (*link) {
        struct vseen *sl = *link;
        if (state_subsumed(env, sl->snap)) {
            sl->hits++;
            if (vm_vlogging(env))
                vm_vlog(env, "%u: safe (subsumed by a stored state)", env->pc);
            return 1;
        }
        if (++sl->misses > sl->hits * 3 + 3 && sl->joins == 0) {
            evict(link);
            continue;
        }
        link = &sl->next;
    }
    bool loop = env->info[env->pc].flags & VI_LOOP;
    if (!env->exact &&
        ++env->arrivals[env->pc] > (loop ? JOIN_LOOP_AFTER : JOIN_FWD_AFTER) &&
        try_join(env)) {
        if (vm_vlogging(env))
            vm_vlog(env, "%u: joined with a stored state", env->pc);
        for (uint32_t k = 0; vm_vlogging(env) && k < env->cur->nzone; k++) {
            const struct vzone *z = &env->cur->zone[k];
            if (z->kind == VZ_LE)
                vm_vlog(env, "  zone: #%u - #%u <= %lld", z->id[0], z->id[1], (long long)z->c);
            else
                vm_vlog(env, "  zone: #%u = #%u + #%u + %lld", z->id[0], z->id[1], z->id[2],
                        (long long)z->c);
        }
        return 0;
    }
    if (env->res->states >= env->max_states)
        return vm_verr_at(env, env->pc, -E2BIG, "program too complex: more than %llu "
                          "states stored for pruning", (unsigned long long)env->max_states);
    struct vseen *sl = calloc(1, sizeof(*sl));
    if (!sl || !(sl->snap = vm_snap_take(env->cur))) {
        free(sl);
        return -ENOMEM;
    }
    sl->next = env->seen[env->pc];
    env->seen[env->pc] = sl;
    env->res->states++;
    return 0;
}

/* --- worklist ---------------------------------------------------------------- */

static uint64_t state_key(const struct venv *env, const struct vstate *st, uint32_t pc)
{
    uint32_t outer = st->nframes > 1 ? st->frames[1].callsite : pc;
    uint64_t r0 = env->info[outer].rpo, r1 = st->nframes > 1 ? env->info[pc].rpo : 0;
    uint64_t be = st->backedges;
    if (r0 > 0xfffff)
        r0 = 0xfffff;
    if (r1 > 0xfffff)
        r1 = 0xfffff;
    if (be > 0xffffff)
        be = 0xffffff;
    return be << 40 | r0 << 20 | r1;
}

static bool before(const struct vpending *a, const struct vpending *b)
{
    return a->key < b->key || (a->key == b->key && a->seq > b->seq);
}

static void swap_pending(struct vpending *a, struct vpending *b)
{
    struct vpending t = *a;
    *a = *b;
    *b = t;
}

int vm_state_push(struct venv *env, uint32_t pc)
{
    if (env->nheap >= VM_MAX_PENDING)
        return vm_verr_at(env, env->pc, -E2BIG, "program too complex: more than %u "
                          "branches waiting to be explored", VM_MAX_PENDING);
    if (env->nheap == env->capheap) {
        uint32_t cap = env->capheap ? env->capheap * 2 : 64;
        struct vpending *h = realloc(env->heap, cap * sizeof(*h));
        if (!h)
            return -ENOMEM;
        env->heap = h;
        env->capheap = cap;
    }
    struct vpending p = {state_key(env, env->cur, pc), ++env->seq, pc, vm_snap_take(env->cur)};
    if (!p.snap)
        return -ENOMEM;
    uint32_t i = env->nheap++;
    env->heap[i] = p;
    while (i > 0 && before(&env->heap[i], &env->heap[(i - 1) / 2])) {
        swap_pending(&env->heap[i], &env->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return 0;
}

bool vm_state_pop(struct venv *env)
{
    if (env->nheap == 0)
        return false;
    struct vpending top = env->heap[0];
    env->heap[0] = env->heap[--env->nheap];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < env->nheap && before(&env->heap[l], &env->heap[m]))
            m = l;
        if (r < env->nheap && before(&env->heap[r], &env->heap[m]))
            m = r;
        if (m == i)
            break;
        swap_pending(&env->heap[i], &env->heap[m]);
        i = m;
    }
    vm_snap_restore(env->cur, top.snap);
    vm_snap_free(top.snap);
    env->pc = top.pc;
    return true;
}

bool vm_state_should_yield(const struct venv *env)
{
    return env->nheap > 0 && env->heap[0].key < state_key(env, env->cur, env->pc);
}

void vm_state_free_all(struct venv *env)
{
    for (uint32_t i = 0; i < env->nheap; i++)
        vm_snap_free(env->heap[i].snap);
    free(env->heap);
    env->heap = NULL;
    env->nheap = env->capheap = 0;
    if (!env->seen)
        return;
    for (uint32_t pc = 0; pc < env->n; pc++) {
        struct vseen *sl = env->seen[pc];
        while (sl) {
            struct vseen *next = sl->next;
            vm_snap_free(sl->snap);
            free(sl);
            sl = next;
        }
    }
    free(env->seen);
    env->seen = NULL;
}
