/*
 * bench/bpf/bench_bpf.c - `make bench-bpf`: how fast the eBPF runtime is.
 *
 * Sections (each prints its own table; add one by appending to
 * sections[] at the bottom):
 *   interpreter  ns per eBPF instruction for a filter loop and a checksum
 *                loop over 1 MiB, against the same work in native C in the
 *                same run, in fast and checked (debug) mode.
 *   verifier     verification time of every corpus program (verify_bench.c).
 *
 * Not a test: nothing here asserts a time. Every workload checks that the
 * interpreter and native C computed the same value, so a broken run is
 * reported instead of timed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/interp.h"
#include "tests/unit/bpf/interp/vm_asm.h"

#define INPUT_SIZE (1u << 20)
#define REPEAT 15

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- workloads ------------------------------------------------------- */

#define MAX_INSNS 64
#define EMIT(out, ...)                                                         \
    do {                                                                       \
        const struct vm_insn code_[] = {__VA_ARGS__};                          \
        memcpy(out, code_, sizeof(code_));                                     \
        return sizeof(code_) / sizeof(code_[0]);                               \
    } while (0)

/* Filter: count the bytes equal to '\n' (grep -c on one block). */
static uint32_t filter_prog(struct vm_insn *out)
{
    EMIT(out,
    I_LDX(VM_DW, 2, 1, 0),              /* r2 = data */
    I_LDX(VM_DW, 3, 1, 8),              /* r3 = data_end */
    I_MOV64_IMM(0, 0),
    I_JMP_REG(VM_JGE, 2, 3, 5),         /* loop: if (r2 >= r3) goto done */
    I_LDX(VM_B, 4, 2, 0),
    I_JMP_IMM(VM_JNE, 4, '\n', 1),
    I_ALU64_IMM(VM_ADD, 0, 1),
    I_ALU64_IMM(VM_ADD, 2, 1),
    I_JA(-6),
    I_EXIT());                          /* done */
}

static uint64_t __attribute__((noinline)) filter_native(const uint8_t *p, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += p[i] == '\n';
    return c;
}

/* Checksum: Fletcher-style over 32-bit words, a += w; b += a. */
static uint32_t checksum_prog(struct vm_insn *out)
{
    EMIT(out,
    I_LDX(VM_DW, 2, 1, 0),              /* r2 = data */
    I_LDX(VM_DW, 3, 1, 8),              /* r3 = data_end */
    I_MOV64_IMM(4, 0),                  /* a */
    I_MOV64_IMM(5, 0),                  /* b */
    I_MOV64_REG(6, 2),                  /* loop: r6 = r2 + 4 */
    I_ALU64_IMM(VM_ADD, 6, 4),
    I_JMP_REG(VM_JGT, 6, 3, 5),         /* if (r6 > data_end) goto done */
    I_LDX(VM_W, 7, 2, 0),
    I_ALU64_REG(VM_ADD, 4, 7),
    I_ALU64_REG(VM_ADD, 5, 4),
    I_MOV64_REG(2, 6),
    I_JA(-8),
    I_MOV64_REG(0, 5),                  /* done: r0 = b ^ a */
    I_ALU64_REG(VM_XOR, 0, 4),
    I_EXIT());
}

static uint64_t __attribute__((noinline)) checksum_native(const uint8_t *p, size_t n)
{
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        uint32_t w;
        memcpy(&w, p + i, 4);
        a += w;
        b += a;
    }
    return b ^ a;
}

struct workload {
    const char *name;
    uint32_t (*build)(struct vm_insn *out);   /* writes at most MAX_INSNS */
    uint64_t (*native)(const uint8_t *, size_t);
};

static const struct workload workloads[] = {
    {"filter (count '\\n')", filter_prog, filter_native},
    {"checksum (fletcher32x2)", checksum_prog, checksum_native},
};

/* ---- interpreter section --------------------------------------------- */

struct timing {
    uint64_t insns, best_ns, result;
    int rc;
};

static struct timing time_interp(struct vm_prog *p, struct vm_ctx *ctx, bool checked)
{
    struct timing t = {0, UINT64_MAX, 0, 0};
    for (int i = 0; i < REPEAT; i++) {
        struct vm_env env = {.budget = 100000000ull, .checked = checked};
        uint64_t t0 = now_ns();
        t.rc = vm_run(p, ctx, &env, &t.result);
        uint64_t dt = now_ns() - t0;
        if (t.rc)
            break;
        t.insns = env.used;
        if (dt < t.best_ns)
            t.best_ns = dt;
    }
    return t;
}

static uint64_t time_native(const struct workload *w, const uint8_t *in, uint64_t *result)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < REPEAT; i++) {
        uint64_t t0 = now_ns();
        *result = w->native(in, INPUT_SIZE);
        uint64_t dt = now_ns() - t0;
        if (dt < best)
            best = dt;
    }
    return best;
}

static int bench_one(const struct workload *w, const uint8_t *in, bool checked)
{
    struct vm_insn code[MAX_INSNS];
    struct vm_prog p = {.insns = code, .ninsns = w->build(code)};
    struct vm_ctx ctx = {.data = (uintptr_t)in, .data_end = (uintptr_t)in + INPUT_SIZE,
                         .len = INPUT_SIZE};
    uint64_t native_result;
    int rc = vm_prepare(&p);
    if (rc)
        return rc;
    struct timing t = time_interp(&p, &ctx, checked);
    uint64_t native_ns = time_native(w, in, &native_result);
    vm_unprepare(&p);
    if (t.rc || t.result != native_result) {
        printf("%-26s %-8s FAILED (rc %d, result %llu, native %llu)\n", w->name,
               checked ? "checked" : "fast", t.rc, (unsigned long long)t.result,
               (unsigned long long)native_result);
        return t.rc ? t.rc : -EIO;
    }
    double ns_insn = (double)t.best_ns / (double)t.insns;
    double interp_nsb = (double)t.best_ns / INPUT_SIZE, native_nsb = (double)native_ns / INPUT_SIZE;
    printf("%-26s %-8s %12llu %8.3f %10.3f %10.4f %8.1f\n", w->name, checked ? "checked" : "fast",
           (unsigned long long)t.insns, ns_insn, interp_nsb, native_nsb, interp_nsb / native_nsb);
    return 0;
}

static int bench_interpreter(void)
{
    uint8_t *in = malloc(INPUT_SIZE);
    int rc = 0;
    if (!in)
        return -ENOMEM;
    srand(42);
    for (size_t i = 0; i < INPUT_SIZE; i++)
        in[i] = (uint8_t)(rand() % 64 == 0 ? '\n' : 'a' + rand() % 26);
    printf("interpreter: 1 MiB input, best of %d runs\n", REPEAT);
    printf("%-26s %-8s %12s %8s %10s %10s %8s\n", "workload", "mode", "insns", "ns/insn",
           "ns/byte", "native", "ratio");
    for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]) && !rc; i++)
        for (int checked = 0; checked <= 1 && !rc; checked++)
            rc = bench_one(&workloads[i], in, checked);
    printf("(ns/byte and native are ns per input byte; ratio = interpreter / native)\n\n");
    free(in);
    return rc;
}

/* ---- sections ---------------------------------------------------------- */

struct section {
    const char *name;
    int (*run)(void);
};

int bench_verifier(void);   /* verify_bench.c */

static const struct section sections[] = {
    {"interpreter", bench_interpreter},
    {"verifier", bench_verifier},
};

int main(int argc, char **argv)
{
    int failed = 0;
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        if (argc > 1 && strcmp(argv[1], sections[i].name))
            continue;
        int rc = sections[i].run();
        if (rc) {
            fprintf(stderr, "bench-bpf: %s: %s\n", sections[i].name, strerror(-rc));
            failed = 1;
        }
    }
    return failed;
}
