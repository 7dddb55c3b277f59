/*
 * bpf/verifier_int.h - internals shared by the verifier's files; nothing
 * outside bpf/verifier*.c includes this.
 *
 * The nesting follows the kernel verifier: env (one verification) ->
 * state (one abstract machine state on one path) -> frame (one call
 * level) -> register / stack slot.
 *
 *   verifier.c        driver: exploration loop, limits, messages
 *   verifier_cfg.c    structural pass: encodings, jumps, functions, calls
 *   verifier_flow.c   static analyses: pointer kinds, liveness, precision
 *   verifier_state.c  snapshots, pruning (subsumption), the worklist
 *   verifier_join.c   joining states (and widening at loop heads)
 *   verifier_mem.c    loads, stores, atomics; memory regions
 *   verifier_alu.c    ALU instructions incl. pointer arithmetic
 *   verifier_jmp.c    jumps and branch refinement incl. packet ranges
 *   verifier_dist.c   distances to a buffer's end (invariant 6)
 *   verifier_neq.c    values known to differ (invariant 9)
 *   verifier_row.c    read-only table rows walked beside an index (invariant 11)
 *   verifier_back.c   end pointers walking back, bounded below (invariant 12)
 *   verifier_zone.c   differences and sums of scalars (invariant 13)
 *   verifier_call.c   helper calls, local calls, exit
 *   verifier_print.c  register/state text for messages and the log
 *
 * Invariants:
 *   1. A register of type VT_NONE is never read; every other type's fields
 *      are meaningful as documented on struct vreg.
 *   2. Pointer registers have |off| <= VM_MAX_VAR_OFF and a variable part
 *      v whose signed range lies within [-VM_MAX_VAR_OFF, VM_MAX_VAR_OFF],
 *      so that base + off + v never wraps around - except "wild" pointers
 *      (sflags VS_WILD, made only by joins when a loop keeps moving a
 *      pointer): their offset is unknown and they are never dereferenced,
 *      passed to helpers or used to learn ranges.
 *   3. A stack slot with spill set holds the full state of an 8-byte
 *      aligned register store (its init mask is then 0xff).
 *   4. Registers and spilled slots of type VT_IN/VT_OUT with equal id have
 *      the same variable part v; `range` is shared by all of them.
 *   5. Scalars with equal non-zero id are linked to one unknown base b:
 *      each holds b + off (sflags 0), zext32(b + off) (VS_ZEXT),
 *      (b + off) << 32 (VS_SHL32, the first half of clang's zero-extension
 *      idiom), (b + off) & 0xff (VS_LOW8, clang's `(__u8)(c - 'a') <= 25`
 *      for `c >= 'a' && c <= 'z'`) or (b + off) << k for k = 1..3
 *      (VS_SCALE(k), an index scaled to an element size), off being the
 *      scalar's `off` field; refining one refines the others
 *      (verifier_jmp.c). Two states may have different bases for one
 *      group: b' = b + s relabels it if every member's off moves by s.
 *   6. A scalar with bit k of dist set (k = vm_buf_index(T): 0 for the
 *      input, 1 for the output) is at most the distance from the buffer
 *      pointers of type T with id did[k] to their end, less doff[k]:
 *      value <= END - (base + v) - doff[k] (signed, v the variable part
 *      those pointers share). `end - p` makes one (doff = p.off),
 *      `n <= end - p` passes it on to n, adding or subtracting a constant
 *      moves doff; a lower bound learnt on the scalar then proves bytes
 *      after those pointers (verifier_dist.c), and a helper may take it as
 *      the size for such a pointer. This is the pointer-vs-end part of a
 *      zone domain (difference bounds), kept per scalar. With bit k + 2
 *      (VM_DIST_EQ(k)) set as well the bound is exact: value == END -
 *      (base + v) - doff (made by `end - p`, kept by adding constants and
 *      exact copies), so what a comparison of those pointers with the end
 *      proves bounds the scalar from below too (verifier_dist.c).
 *   7. A pointer with lid != 0 has the variable part v = vG + b + loff,
 *      b the base of the scalars linked with id lid (invariant 5) and vG
 *      the variable part of the pointers with id lgid into the same
 *      buffer (lgid 0: the buffer's start, vG = 0). Made by `q = data +
 *      n` (or `data + (n << 2)`, also when n is still a constant: then v
 *      is constant and loff says which) and by `q = p + len` (lgid: p's
 *      id). With lgid 0 the link may be zero-extended (VS_LZEXT: v =
 *      zext32(b + loff)) or scaled (VS_SCALE(k): v = (b + loff) << k).
 *      A check of q against the end then bounds n by the distance from
 *      the lgid pointers to the end (invariant 6), and bounding q's v
 *      bounds n (lgid 0).
 *   8. A stack slot with nsize != 0 (and spill 0) holds a narrow scalar
 *      store: nsize is 1, 2 or 4, nbyte a multiple of it, the bytes
 *      [nbyte, nbyte + nsize) are initialised and hold the low nsize bytes
 *      of r, a plain scalar (no links, no distance) whose value fits them.
 *      A write to any of those bytes ends it; a slot holds one at most.
 *   9. Each entry of a state's neq names two values, b_a + off_a of kind
 *      kind_a and b_b + off_b of kind_b (link groups id_a, id_b,
 *      invariant 5; id_b 0: the constant k), that differ in every
 *      concrete state the abstract one stands for (verifier_neq.c).
 *  10. A scalar with lid != 0 holds b_lid + b_lgid + loff: the sum of two
 *      values of link groups lid and lgid (a sum link, `n + k` tested
 *      against `oend - out` before `out[n + k]` is written through `out +
 *      n`). Made by a 64-bit add of two plain members, moved by constants,
 *      ended by anything else; states lose them at pruning points, where
 *      they are compared, and at joins (verifier_dist.c uses them).
 *  11. A VT_RODATA pointer with VS_ROW set has the variable part v = m * b
 *      + loff (mod 2^64), b the base of the scalars linked with id lid
 *      (invariant 5) and m = range, 1 <= m <= 65536: a table's row pointer
 *      advanced by the row size beside its index (verifier_row.c). Made
 *      only by joins; adding constants to the pointer keeps it, any other
 *      change of the pointer ends it.
 *  12. A VT_IN_END/VT_OUT_END pointer e with bit k = vm_buf_index of its
 *      buffer set in dist is at or above a buffer pointer: place(e) >= v_G
 *      + doff[k] (place: the offset from the buffer's start; v_G: the
 *      variable part of the buffer pointers with id did[k], 0 for id 0).
 *      Made by a comparison `e > p` (>=, ==), moved by adding constants to
 *      e (verifier_back.c). End pointers may have a variable part v then
 *      (e = END + off + v, made by joins); off + v.smax bounds them from
 *      above.
 *  13. Each entry of a state's zone names link groups (invariant 5) by
 *      their bases and says, over signed integers, b_a - b_b <= c (VZ_LE)
 *      or b_a = b_b + b_c + c (VZ_SUM), true in every concrete state the
 *      abstract one stands for; a rule reads one only through registers
 *      of the top frame that are small (|v| < 2^40), plain and precise at
 *      that instruction (verifier_zone.c).
 *  14. A VT_RODATA pointer with rhi != 0 was loaded from a relocated slot
 *      of a table of pointers (prog.h invariant 5): it may only access
 *      rodata[rlo, rhi), the object its target lies in (a string with its
 *      NUL). Pruning and joins keep pointers into different objects apart
 *      (verifier_state.c, verifier_join.c). No access other than an
 *      aligned 8-byte load (which gives the pointer) touches a relocated
 *      slot, and no helper reads one: its bytes are a host address.
 */
#ifndef CISC_BPF_VERIFIER_INT_H
#define CISC_BPF_VERIFIER_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "bpf/helpers.h"
#include "bpf/insn.h"
#include "bpf/prog.h"
#include "bpf/verifier.h"
#include "bpf/vscalar.h"

#define VM_MAX_VAR_OFF (1 << 29)      /* bound on pointer offsets */
#define VM_NSLOTS (VM_STACK_SIZE / 8)
#define VM_MAX_PENDING 32768          /* branch states waiting, at most */
#define VS_ZEXT 1                     /* scalar link kinds (invariant 5) */
#define VS_SHL32 2
#define VS_WILD 4                     /* pointer with an unbounded offset */
#define VS_LZEXT 8                    /* pointer: v = zext32(b + loff) (invariant 7) */
#define VS_LOW8 16                    /* scalar link kind: (b + off) & 0xff (invariant 5) */
#define VS_SCALE_SHIFT 5              /* scalars: (b + off) << k; pointers: v = (b + loff) << k */
#define VS_SCALE_MASK (3u << VS_SCALE_SHIFT)   /* k = 1..3 in these bits (invariants 5, 7) */
#define VS_SCALE(k) ((uint8_t)((k) << VS_SCALE_SHIFT))
#define VS_ROW 128                    /* rodata pointer: v = range * b + loff (invariant 11) */
#define VM_DIST_EQ(k) ((uint8_t)(4u << (k)))   /* dist: bound k is exact (invariant 6) */

/* The k of a scaled link (VS_SCALE), 0 if none. */
static inline unsigned vm_link_scale(uint8_t sflags)
{
    return (sflags & VS_SCALE_MASK) >> VS_SCALE_SHIFT;
}

enum vtype {
    VT_NONE = 0,   /* not initialised */
    VT_SCALAR,
    VT_CTX,        /* the context (struct cisc_ctx) */
    VT_STACK,      /* a frame's stack: frame, off (from the frame top) */
    VT_IN,         /* input buffer: id, off, range */
    VT_IN_END,
    VT_OUT,        /* output buffer: id, off, range */
    VT_OUT_END,
    VT_RODATA,     /* read-only data: off from rodata start */
    VT_MEM,        /* helper-returned memory: range = its size */
};

struct vreg {
    uint8_t type;          /* enum vtype */
    uint8_t frame;         /* VT_STACK: index of the frame it points into */
    uint8_t sflags;        /* scalars with id: VS_ZEXT, VS_SHL32, VS_LOW8, VS_SCALE;
                              pointers: VS_WILD, VS_LZEXT, VS_SCALE, VS_ROW */
    uint8_t dist;          /* VT_SCALAR: bit k: bounded by a distance, bit k + 2:
                              exactly that distance (invariant 6) */
    uint32_t id;           /* VT_IN/VT_OUT: same id = same variable part;
                              VT_SCALAR: same id = linked values (below) */
    int32_t off;           /* pointers: fixed offset; linked scalars: delta */
    uint32_t range;        /* VT_IN/VT_OUT: [0, range) from base+v checked;
                              VT_MEM: region size; VT_RODATA with VS_ROW: the
                              row size m (invariant 11) */
    uint32_t did[2];       /* dist bit k: id of the buffer pointers ... */
    int32_t doff[2];       /* ... and the offset subtracted (invariant 6) */
    uint32_t lid;          /* pointers: v = vG + b + loff for the scalars linked */
    int32_t loff;          /* with id lid (invariant 7); 0: no such link ... */
    uint32_t lgid;         /* ... vG: the part of the pointers with this id (0: 0);
                              scalars: value = b_lid + b_lgid + loff (invariant 10) */
    uint32_t rlo, rhi;     /* VT_RODATA: the object it points into, rodata[rlo, rhi)
                              (invariant 14); rhi 0: all of rodata */
    struct vm_scalar v;    /* VT_SCALAR: the value; pointers: variable offset */
};

struct vslot {
    uint8_t init;          /* bit b: byte b of the slot initialised */
    uint8_t spill;         /* r holds a spilled register (invariant 3) */
    uint8_t clobbered;     /* a spilled pointer was partly overwritten (messages) */
    uint8_t nsize;         /* not spill: bytes [nbyte, nbyte + nsize) hold the */
    uint8_t nbyte;         /* scalar r (invariant 8); 0: none */
    uint8_t pad[3];
    struct vreg r;
};

struct vframe {
    struct vreg regs[VM_NREGS];
    uint32_t callsite;     /* pc of the call that made this frame (frame 0: 0) */
    uint32_t func;         /* index into env->funcs */
    uint32_t nslots;       /* slots [0, nslots) may be initialised */
    struct vslot slots[VM_NSLOTS];   /* slot i: bytes [-(i+1)*8, -i*8) */
};

/* Two scalar values known to differ (invariant 9), each named by its
 * link group, offset and kind (invariant 5); id[1] == 0: the second is
 * the constant k. */
#define VM_MAX_NEQ 4
struct vneq {
    uint32_t id[2];
    int32_t off[2];
    uint8_t kind[2];
    uint8_t pad[6];
    uint64_t k;
};

/* A relation between link groups' bases (invariant 13). */
#define VM_MAX_ZONE 12
enum { VZ_LE = 1, VZ_SUM = 2 };
struct vzone {
    uint32_t id[3];        /* VZ_LE: b_id0 - b_id1 <= c; VZ_SUM: b_id0 = b_id1 + b_id2 + c */
    uint32_t pad;
    uint8_t kind;
    uint8_t pad2[7];
    int64_t c;
};

/* The working state (large, one per env); stored copies are snapshots. */
struct vstate {
    uint32_t nframes;      /* frames[nframes-1] is the current one */
    uint32_t backedges;    /* loop back edges taken on this path */
    uint32_t joined;       /* this path went through a join */
    uint32_t nneq;         /* entries of neq in use */
    struct vneq neq[VM_MAX_NEQ];
    uint32_t nzone;        /* entries of zone in use */
    struct vzone zone[VM_MAX_ZONE];
    int64_t end_lo[2];     /* END - data >= end_lo[k] on this path (verifier_back.c) */
    struct vframe frames[VM_MAX_CALL_DEPTH];
};

/* A compact copy of a vstate: only used slots (verifier_state.c). */
struct vsnap;

/* Per-instruction facts from the static passes. */
enum {
    VI_REACHED = 1 << 0,   /* reachable in the control-flow graph */
    VI_PRUNE = 1 << 1,     /* pruning point: states are stored here */
    VI_LDIMM2 = 1 << 2,    /* second slot of an ld_imm64 */
    VI_FUNC = 1 << 3,      /* first instruction of a function */
    VI_LOOP = 1 << 4,      /* target of a back edge (a loop head) */
};

struct vinfo {
    uint32_t func;         /* function this instruction belongs to */
    uint32_t rpo;          /* reverse post-order position in its function */
    uint16_t flags;
    uint16_t live;         /* registers read before written on some path */
    uint16_t prec;         /* registers whose exact value matters */
    uint16_t ptr;          /* registers that may hold a pointer */
    uint16_t stk;          /* ... a pointer into a stack */
    uint64_t slot_prec;    /* own stack slots whose exact value matters */
};

struct vfunc {
    uint32_t start, end;   /* [start, end) */
    uint32_t depth;        /* frames on the deepest call chain from here */
    uint16_t entry_live, entry_prec;   /* r1..r5 live/precise at entry */
};

/* A state stored at a pruning point. */
struct vseen {
    struct vsnap *snap;
    uint32_t hits, misses;
    uint32_t joins;        /* states joined into this one */
    struct vseen *next;
};

/* A branch state waiting to be explored (a heap ordered by key). */
struct vpending {
    uint64_t key, seq;
    uint32_t pc;
    struct vsnap *snap;
};

struct venv {
    struct vm_prog *prog;
    const struct vm_insn *insns;
    uint32_t n;
    const struct vm_verify_opts *opts;
    struct vm_verify_result *res;
    uint64_t max_states, max_insns;

    struct vinfo *info;
    struct vfunc *funcs;
    uint32_t nfuncs;

    struct vstate *cur;    /* the state being explored */
    struct vstate *tmp;    /* scratch state for joins */
    uint32_t pc;
    uint32_t id_gen;       /* last packet-pointer id handed out */
    uint32_t max_depth;    /* deepest stack use seen, bytes */

    struct vseen **seen;   /* per pc: stored states */
    uint32_t *arrivals;    /* per pc: states that were not subsumed */
    bool exact;            /* no joins (the second, kernel-like exploration) */
    bool join_loop;        /* the join under way is at a loop head ... */
    uint32_t join_count;   /* ... into a state joined this many times */
    uint64_t *thr_u;       /* widening thresholds, sorted */
    int64_t *thr_s;
    size_t nthr;
    uint64_t *eqk;         /* constants of ==/!= tests, sorted (vm_join_selector) */
    size_t neqk;
    struct vpending *heap;
    uint32_t nheap, capheap;
    uint64_t seq;

    /* the rejection being reported */
    char err[512];
    int err_code;
    uint32_t err_pc;
    uint16_t err_regs;     /* registers to show with the error */
    bool err_joined;       /* the rejected path went through a join */
};

/* --- verifier.c --------------------------------------------------------- */
/* Records a rejection at env->pc (first one wins); returns -EACCES. */
int vm_verr(struct venv *env, uint16_t regs, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same with an explicit pc and error code (structural problems). */
int vm_verr_at(struct venv *env, uint32_t pc, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Emits a line to the trace log if there is one. */
void vm_vlog(struct venv *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool vm_vlogging(const struct venv *env)
{
    return env->opts && env->opts->log;
}

/* --- verifier_cfg.c ------------------------------------------------------ */
/* Checks encodings, jumps, functions, call graph; fills info and funcs. */
int vm_cfg_check(struct venv *env);
/* Successors of pc in its function (local calls fall through); returns
 * their number (0..2). */
unsigned vm_cfg_succ(const struct venv *env, uint32_t pc, uint32_t succ[2]);

/* --- verifier_flow.c ----------------------------------------------------- */
/* Computes ptr, live, prec and slot_prec for every instruction. */
int vm_flow_analyse(struct venv *env);

/* --- verifier_state.c ---------------------------------------------------- */
struct vsnap *vm_snap_take(const struct vstate *st);
void vm_snap_restore(struct vstate *st, const struct vsnap *snap);
void vm_snap_free(struct vsnap *snap);
/* Pruning at pc: returns 1 if the current state is subsumed by a stored
 * one, 0 if it was stored (or not worth storing), -errno on limits. */
int vm_state_visit(struct venv *env);
/* Queues a copy of the current state to continue at pc. */
int vm_state_push(struct venv *env, uint32_t pc);
/* Takes the next waiting state into env->cur/env->pc; false when none. */
bool vm_state_pop(struct venv *env);
/* True if a waiting state should run before the current one. */
bool vm_state_should_yield(const struct venv *env);
void vm_state_free_all(struct venv *env);
/* Calls fn(env, r, arg) on every register of every frame of the current
 * state and every register spilled in their stack slots. */
void vm_each_reg(struct venv *env, void (*fn)(struct venv *, struct vreg *, const void *),
                 const void *arg);

/* What matters in frame f of the current state at env->pc: live and
 * precise registers, precise stack slots (verifier_state.c). */
struct vm_masks {
    uint16_t live, prec;
    uint64_t slots;
};
struct vm_masks vm_frame_masks(const struct venv *env, uint32_t f);

/* --- verifier_join.c ----------------------------------------------------- */
/* Collects widening thresholds; allocates per-pc counters. */
int vm_join_init(struct venv *env);
/* Joins cur into old (in place): old then covers both. With wide, bounds
 * that grew are widened. Returns false if the states cannot be joined. */
bool vm_join(struct venv *env, struct vstate *old, const struct vstate *cur, bool wide);
/* True if registers holding the constants a and b (a != b) in two states
 * should keep those states apart: both are constants the program tests
 * with == or != (a selector, clang -O1's merged exits). */
bool vm_join_selector(const struct venv *env, uint64_t a, uint64_t b);

/* --- verifier_mem.c ------------------------------------------------------ */
int vm_check_ldx(struct venv *env, const struct vm_insn *insn);
int vm_check_st(struct venv *env, const struct vm_insn *insn);
int vm_check_atomic(struct venv *env, const struct vm_insn *insn);
int vm_check_ld_imm64(struct venv *env, const struct vm_insn *insn);
/* Checks that [reg + 0, reg + size) may be read (write=false) or written
 * by a helper, for sizes in [min_size, max_size]. */
int vm_check_helper_mem(struct venv *env, unsigned regno, uint64_t min_size,
                        uint64_t max_size, bool write);
/* Marks as scalar data the stack bytes a helper may have written. */
void vm_helper_wrote_stack(struct venv *env, const struct vreg *ptr, uint64_t max_size);
/* Checks prog->rptrs against the image (prog.h invariant 5); -EINVAL if
 * the program breaks it. */
int vm_rodata_ptrs_check(struct venv *env);
/* True if the rodata objects of pointers a and b are the same (invariant 14). */
static inline bool vm_same_object(const struct vreg *a, const struct vreg *b)
{
    return a->type != VT_RODATA || (a->rlo == b->rlo && a->rhi == b->rhi);
}
/* True if every access rodata object o allows, c's allows too (rhi 0:
 * all of rodata, which covers every object). */
static inline bool vm_object_within(const struct vreg *o, const struct vreg *c)
{
    return o->type != VT_RODATA || c->rhi == 0 || (o->rhi != 0 && o->rlo >= c->rlo &&
                                                   o->rhi <= c->rhi);
}

/* --- verifier_alu.c ------------------------------------------------------ */
int vm_check_alu(struct venv *env, const struct vm_insn *insn);

/* --- verifier_jmp.c ------------------------------------------------------ */
/* Gives every register and spilled slot of buffer type `type` with `id`
 * at least `range` proved bytes (verifier_int.h invariant 4). */
void vm_mark_range(struct venv *env, uint8_t type, uint32_t id, uint32_t range);
/* Narrows the variable part of the pointers with p's type and id to at
 * most `limit` (signed). */
void vm_bound_var(struct venv *env, const struct vreg *p, int64_t limit);
/* A plain member (b + off) of scalar link group id in the current
 * state's registers, or NULL. */
const struct vreg *vm_link_member(struct venv *env, uint32_t id);
/* After a join: bounds the variable part of pointers linked from the
 * start by the range of their link's base (invariant 7). */
void vm_link_narrow(struct venv *env);
/* Refines scalar register regno to exactly k, as the taken side of `if
 * rN == k` would (linked registers follow). False if it cannot be k. */
bool vm_jmp_pin(struct venv *env, unsigned regno, uint64_t k);
/* Handles a jump at env->pc: updates env->pc (and may push the other
 * side). Returns 0, or 1 when the path ends (both sides impossible). */
int vm_check_jmp(struct venv *env, const struct vm_insn *insn);

/* --- verifier_call.c ----------------------------------------------------- */
int vm_check_call(struct venv *env, const struct vm_insn *insn);
/* Handles exit: returns 0 to continue in the caller, 1 when the path ends. */
int vm_check_exit(struct venv *env);

/* --- verifier_dist.c ----------------------------------------------------- */
/* dst = a - b for a buffer end a and a pointer b into that buffer: the
 * range the distance can have, and the relation (invariant 6). */
void vm_dist_make(struct vreg *dst, const struct vreg *end, const struct vreg *p);
/* After dst's value changed by ALU instruction insn with operand value
 * src (old value in before): keeps, moves or drops its distance relation. */
void vm_dist_alu(struct vreg *dst, const struct vm_scalar *before, const struct vm_scalar *src,
                 const struct vm_insn *insn);
/* After a comparison refined a and b (the side where `a op b` holds):
 * passes a distance bound from one to the other. */
void vm_dist_cmp(struct vreg *a, struct vreg *b, unsigned op, bool is64);
/* Gives the other members of x's link group (invariant 5) the distance
 * bounds x has, moved by their offset from x. */
void vm_dist_links(struct venv *env, const struct vreg *x);
/* Applies every distance relation's lower bound to its pointers (ranges,
 * variable parts): called after a branch refined scalars. */
void vm_dist_learn(struct venv *env);
/* Gives x the bound value <= END_k - (base + v of group id) - doff unless
 * it has one for that buffer already (a looser one for the same group is
 * replaced). */
void vm_dist_add(struct vreg *x, unsigned k, uint32_t id, int64_t doff);
/* A register of the current state's frames pointing into buffer `type`
 * with group id `id` (not wild), or NULL. */
const struct vreg *vm_group_member(struct venv *env, uint8_t type, uint32_t id);
/* The bytes [0, range) after base + v of buffer group (type, id) are
 * proved: scalars exactly at a distance from that group learn their lower
 * bound (invariant 6). */
void vm_dist_range_learnt(struct venv *env, uint8_t type, uint32_t id, uint32_t range);
/* True if pointer p is known to be at or before its buffer's end. */
bool vm_dist_le_end(const struct vreg *p);
/* Copies src's distance bounds (only) into dst. */
void vm_dist_copy(struct vreg *dst, const struct vreg *src);
/* True if size register s bounds [p, p + s) inside p's buffer by relation. */
bool vm_dist_covers(const struct vreg *p, const struct vreg *s);
/* q = p + s (s a scalar with a relation to p's buffer): the range q gets. */
uint32_t vm_dist_range_after_add(const struct vreg *p, const struct vreg *s);
/* q = p + s: the largest variable part q can have by s's relation to p's
 * buffer (INT64_MAX if none). */
int64_t vm_dist_var_limit(const struct vreg *p, const struct vreg *s);

/* --- verifier_neq.c ------------------------------------------------------ */
/* True if a register or spilled slot of st holds a member of link group id
 * (verifier_neq.c; the neq and zone tables drop entries of groups gone). */
bool vm_group_held(const struct vstate *st, uint32_t id);
/* True if the values of scalars a and b are known to differ (in their low
 * 32 bits too when !is64); b may be a constant without a name. */
bool vm_neq_known(const struct venv *env, const struct vreg *a, const struct vreg *b,
                  bool is64);
/* Gives scalar r a link group of its own if it has none, so that its
 * value can be named. */
void vm_neq_name(struct venv *env, struct vreg *r);
/* Records that the values of a (named) and b (named, or a constant)
 * differ. */
void vm_neq_add(struct venv *env, const struct vreg *a, const struct vreg *b);

/* --- verifier_row.c ------------------------------------------------------ */
/* Joins: links the joined rodata pointers of the top frame (j) to a
 * scalar precise there (prec) when place = m * x + k holds in both the old
 * state's registers before the join (pre) and the current state's (c). */
void vm_row_synth(struct venv *env, struct vreg *j, const struct vreg *pre,
                  const struct vreg *c, uint16_t prec);
/* Bounds rodata pointer p's variable part by the range of a member of its
 * row link's group that is precise at env->pc (a copy of p is passed). */
void vm_row_narrow(struct venv *env, struct vreg *p);
/* Ends p's row link, if it has one. */
void vm_row_unlink(struct vreg *p);
/* Subsumption: c has old o's row link, with the linked scalars' base
 * shifted by *shift. */
bool vm_row_subsumed(const struct vreg *o, const struct vreg *c, int64_t *shift);

/* --- verifier_back.c ------------------------------------------------------ */
/* r is an end pointer (VT_IN_END, VT_OUT_END). */
bool vm_back_is_end(const struct vreg *r);
/* e is an end pointer with a lower bound (invariant 12). */
bool vm_back_has(const struct vreg *e);
/* `e op p` holds (op JGT, JGE or JEQ; p a pointer into e's buffer): gives
 * e the lower bound place(p) (+ 1 for JGT). */
void vm_back_learn(struct venv *env, struct vreg *e, const struct vreg *p, unsigned op);
/* e += c: its lower bound moves by c. */
void vm_back_move(struct vreg *e, int64_t c);
/* Narrows e's variable part by its lower bound (the buffer's largest size). */
void vm_back_narrow(struct venv *env, struct vreg *e);
/* True if [e + o, e + o + size) is inside e's buffer by e's bounds. */
bool vm_back_access(struct venv *env, const struct vreg *e, int64_t o, unsigned size);
/* Buffer pointer p proved p->range bytes: the path's end_lo learns it. */
void vm_back_note(struct venv *env, const struct vreg *p);

/* --- verifier_zone.c ------------------------------------------------------ */
/* r was just given a name: a sum link it carries becomes a fact. */
void vm_zone_named(struct venv *env, const struct vreg *r);
/* After a comparison refined a and b (the side where `a op b` holds):
 * records the difference it proves (names them if needed). */
void vm_zone_cmp(struct venv *env, struct vreg *a, struct vreg *b, unsigned op, bool is64);
/* True if vm_zone_cmp may record something for a and b (then the state
 * changes on each side of the comparison). */
bool vm_zone_cmp_wants(const struct venv *env, const struct vreg *a, const struct vreg *b);
/* After 64-bit ALU insn made d (d0 before, s the operand): distance
 * bounds and group membership the facts give d. */
void vm_zone_alu(struct venv *env, struct vreg *d, const struct vreg *d0, const struct vreg *s,
                 const struct vm_insn *insn);
/* p + s: relinks p (linked from the start) to the sum of its link and s
 * when a fact names it; true if it did. */
bool vm_zone_link(struct venv *env, struct vreg *p, const struct vreg *s);
/* Bounds the terms of sums by the facts (after joins and comparisons). */
void vm_zone_narrow(struct venv *env);
/* Joins: the facts of `joined` become what both the old state (its top
 * frame before the join: pre, its facts oz) and cur imply between the
 * joined top frame's registers and spilled scalars precise there (mk). */
void vm_zone_join(struct venv *env, struct vstate *joined, const struct vframe *pre,
                  const struct vzone *oz, uint32_t onz, const struct vstate *cur,
                  struct vm_masks mk, bool wide);
/* Invariant 13's form: entries in use, kinds, distinct non-zero groups,
 * small constants (for assert() at snapshots). */
bool vm_zone_ok(const struct vstate *st);
/* Subsumption: every fact of the old state over groups `find` pairs holds
 * in cur. */
bool vm_zone_subsumed(const struct venv *env, const struct vzone *oz, uint32_t onz,
                      bool (*find)(const void *m, uint32_t o, uint32_t *c, int64_t *shift),
                      const void *m);

/* --- verifier_print.c ---------------------------------------------------- */
const char *vm_vtype_name(enum vtype t);
/* "input buffer", "stack", ... for messages. */
const char *vm_vtype_desc(enum vtype t);
void vm_reg_format(const struct vreg *r, char *buf, size_t size);
/* Appends " R1=... R2=..." for the registers in mask (all initialised
 * ones when mask is 0xffff) of the current frame. */
void vm_regs_format(const struct venv *env, uint16_t mask, char *buf, size_t size);

/* --- small shared helpers --------------------------------------------------- */
static inline struct vframe *vm_curframe(struct venv *env)
{
    return &env->cur->frames[env->cur->nframes - 1];
}

static inline struct vreg *vm_reg(struct venv *env, unsigned regno)
{
    return &vm_curframe(env)->regs[regno];
}

/* Index of a buffer type (VT_IN 0, VT_OUT 1) in a scalar's distances. */
static inline unsigned vm_buf_index(uint8_t type)
{
    return type == VT_OUT;
}

static inline bool vm_is_ptr(const struct vreg *r)
{
    return r->type > VT_SCALAR;
}

static inline void vm_mark_unknown(struct vreg *r)
{
    r->type = VT_SCALAR;
    r->frame = 0;
    r->sflags = 0;
    r->id = 0;
    r->off = 0;
    r->range = 0;
    r->dist = 0;
    r->did[0] = r->did[1] = 0;
    r->doff[0] = r->doff[1] = 0;
    r->lid = 0;
    r->loff = 0;
    r->lgid = 0;
    r->rlo = r->rhi = 0;
    r->v = vs_unknown();
}

static inline void vm_mark_scalar(struct vreg *r, struct vm_scalar v)
{
    vm_mark_unknown(r);
    r->v = v;
}

static inline void vm_mark_none(struct vreg *r)
{
    vm_mark_unknown(r);
    r->type = VT_NONE;
}

/* The link kind (sflags, invariant 5) scalar r may be taken to have as a
 * member of its group when another member's is `want`: b + off that fits
 * in a __u32 is zext32(b + off) as well. */
static inline uint8_t vm_link_kind_as(const struct vreg *r, uint8_t want)
{
    if (r->sflags == 0 && want == VS_ZEXT && r->v.smin >= 0 && r->v.umax <= UINT32_MAX)
        return VS_ZEXT;
    return r->sflags;
}

/* Rejects reading an uninitialised register. */
int vm_check_reg_init(struct venv *env, unsigned regno);

/* The message tail for an uninitialised register r that is a copy of one
 * never set (id: the register copied, off: its pc + 1; made by a register
 * move, verifier_alu.c), "" otherwise. Returns buf. */
const char *vm_none_hint(const struct vreg *r, char *buf, size_t size);

#endif
