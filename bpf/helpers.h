/*
 * bpf/helpers.h - native helper functions programs may call, with the
 * typed signatures the verifier checks and the environment of one run.
 *
 * Invariants:
 *   1. Ids are fixed forever (they are the ABI); a removed helper's id is
 *      never reused.
 *   2. Every pointer argument is followed, somewhere in the signature, by
 *      the size argument that bounds it (VM_ARG_SIZE refers to the closest
 *      preceding VM_ARG_MEM_*). The verifier proves pointer+size is inside
 *      readable (MEM_R) or writable (MEM_W) memory before the call, so the
 *      native implementation may trust them.
 *   3. Helpers never retain pointers past the call and are thread-safe.
 *   4. A VM_RET_INDEX helper returns -1 or an index below the bound its
 *      table entry names (the umax of argument ret_arg, never more than
 *      VM_MAX_BUF_SIZE); the verifier gives r0 exactly that range.
 *   5. Work is charged to the budget: a helper that touches memory adds
 *      one instruction per VM_HELPER_COST_BYTES bytes it may process to
 *      env->charge, so the budget bounds a program's time, helpers
 *      included.
 */
#ifndef CISC_BPF_HELPERS_H
#define CISC_BPF_HELPERS_H

#include <stdbool.h>
#include <stdint.h>

enum vm_arg_kind {
    VM_ARG_NONE = 0,      /* no argument in this position */
    VM_ARG_SCALAR,        /* any initialised scalar */
    VM_ARG_MEM_R,         /* pointer to readable, initialised memory */
    VM_ARG_MEM_W,         /* pointer to writable memory */
    VM_ARG_SIZE,          /* size of the preceding MEM arg, 1..bounded */
    VM_ARG_SIZE_OR_ZERO,  /* same, 0 allowed */
    VM_ARG_CTX,           /* the context pointer itself (r1 at entry) */
};

enum vm_ret_kind {
    VM_RET_SCALAR,        /* integer */
    VM_RET_MEM,           /* pointer to ret_size bytes, never NULL, read/write */
    VM_RET_INDEX,         /* -1, or an index below umax(argument ret_arg) */
};

struct vm_env;

/* Native implementation: r1..r5 as the program passed them. */
typedef uint64_t (*vm_helper_fn)(struct vm_env *env, uint64_t r1, uint64_t r2,
                                 uint64_t r3, uint64_t r4, uint64_t r5);

struct vm_helper {
    uint32_t id;
    const char *name;               /* as in cisc_bpf.h */
    enum vm_arg_kind args[5];
    enum vm_ret_kind ret;
    uint32_t ret_size;              /* VM_RET_MEM only */
    vm_helper_fn fn;
    uint8_t ret_arg;                /* VM_RET_INDEX: 1..5, the argument bounding r0 */
};

/* The helper with this id, or NULL. */
const struct vm_helper *vm_helper_find(uint32_t id);

/* The callable helper a callx names by the 64-bit number v (in its dst
 * register), or NULL: v above 32 bits or no such helper. The one rule of
 * the verifier, both interpreters and the JIT. */
const struct vm_helper *vm_helper_callx(uint64_t v);

/* Longest trace message, including the NUL; longer ones are truncated. */
#define VM_TRACE_MSG_MAX 256

/* Receives each trace message (NUL-terminated, no trailing newline). */
typedef void (*vm_trace_fn)(void *arg, const char *msg);

/* Helper work charged to the budget: one instruction per this many bytes
 * (rounded up) a helper may read or write. */
#define VM_HELPER_COST_BYTES 64

struct vm_ctx;

/* The environment of one program invocation (one block). Owned by the
 * caller; the interpreter and helpers read and update it.
 * Invariant: budget is never exceeded by more than one straight-line
 * block of instructions (checks happen at backward jumps and calls). */
struct vm_env {
    uint64_t budget;          /* in: instructions allowed; 0 = default */
    uint64_t used;            /* out: instructions executed */
    /* VM_STATE_SIZE bytes returned by cisc_state(), kept by the caller
     * across the blocks of one step. May be NULL: then vm_run() points it,
     * for that one run only, at a zeroed area on the interpreter's own
     * stack (zeroed at the first helper call), and sets it back to NULL
     * before returning, so nothing persists between runs. */
    void *state;
    vm_trace_fn trace;        /* may be NULL: messages dropped */
    void *trace_arg;
    bool checked;             /* debug mode: bounds-check every access */
    /* Run in the interpreter even when the program is JIT-compiled (the
     * reference engine; checked mode always does). */
    bool interp;
    /* Set by vm_run() for the run (NULL otherwise, e.g. vm_run_raw): the
     * invocation's context, which the input helpers search. */
    const struct vm_ctx *ctx;
    /* Helpers add the instructions their work costs (invariant 5); the
     * interpreter moves it into `used` after each call. */
    uint64_t charge;
    /* Out: on a fault in checked mode or an invalid instruction, the pc
     * and a message. */
    uint32_t fault_pc;
    char fault[160];
};

#define VM_DEFAULT_BUDGET 1000000ull

#endif
