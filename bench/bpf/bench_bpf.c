/*
 * bench/bpf/bench_bpf.c - `make bench-bpf`: how fast the eBPF runtime is.
 *
 * Sections (each prints its own table; add one by appending to
 * sections[] at the bottom):
 *   interpreter  ns per eBPF instruction and per input byte for five
 *                kernels (newline count, a checksum, fnv1a-64, adler32, an
 *                upper-casing copy) over 1 MiB, against the same work in
 *                native C in the same run: interpreter fast and checked
 *                (debug) mode, and JIT-compiled x86-64 code.
 *   jit          time to JIT-compile a 1,000-instruction program.
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
#include "bpf/jit_x86_64.h"
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

/* FNV-1a 64 over every byte. */
static uint32_t fnv_prog(struct vm_insn *out)
{
    EMIT(out,
    I_LDX(VM_DW, 2, 1, 0),              /* r2 = data */
    I_LDX(VM_DW, 3, 1, 8),              /* r3 = data_end */
    I_LD_IMM64(0, 0xcbf29ce484222325ull),
    I_LD_IMM64(5, 0x100000001b3ull),
    I_JMP_REG(VM_JGE, 2, 3, 5),         /* loop: if (r2 >= r3) goto done */
    I_LDX(VM_B, 4, 2, 0),
    I_ALU64_REG(VM_XOR, 0, 4),
    I_ALU64_REG(VM_MUL, 0, 5),
    I_ALU64_IMM(VM_ADD, 2, 1),
    I_JA(-6),
    I_EXIT());                          /* done */
}

static uint64_t __attribute__((noinline)) fnv_native(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Adler-32, reducing with a compare and subtract per byte (what clang
 * makes of `% 65521` when the sums stay small). */
static uint32_t adler_prog(struct vm_insn *out)
{
    EMIT(out,
    I_LDX(VM_DW, 2, 1, 0),              /* r2 = data */
    I_LDX(VM_DW, 3, 1, 8),              /* r3 = data_end */
    I_MOV64_IMM(4, 1),                  /* a */
    I_MOV64_IMM(5, 0),                  /* b */
    I_JMP_REG(VM_JGE, 2, 3, 9),         /* loop: if (r2 >= r3) goto done */
    I_LDX(VM_B, 6, 2, 0),
    I_ALU64_REG(VM_ADD, 4, 6),
    I_JMP_IMM(VM_JLT, 4, 65521, 1),
    I_ALU64_IMM(VM_ADD, 4, -65521),
    I_ALU64_REG(VM_ADD, 5, 4),
    I_JMP_IMM(VM_JLT, 5, 65521, 1),
    I_ALU64_IMM(VM_ADD, 5, -65521),
    I_ALU64_IMM(VM_ADD, 2, 1),
    I_JA(-10),
    I_MOV64_REG(0, 5),                  /* done: r0 = b << 16 | a */
    I_ALU64_IMM(VM_LSH, 0, 16),
    I_ALU64_REG(VM_OR, 0, 4),
    I_EXIT());
}

static uint64_t __attribute__((noinline)) adler_native(const uint8_t *p, size_t n)
{
    uint64_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a += p[i];
        if (a >= 65521)
            a -= 65521;
        b += a;
        if (b >= 65521)
            b -= 65521;
    }
    return b << 16 | a;
}

/* Upper-casing copy into the output buffer; returns how many changed. */
static uint32_t upper_prog(struct vm_insn *out)
{
    EMIT(out,
    I_LDX(VM_DW, 2, 1, 0),              /* r2 = data */
    I_LDX(VM_DW, 3, 1, 8),              /* r3 = data_end */
    I_LDX(VM_DW, 6, 1, 16),             /* r6 = out */
    I_MOV64_IMM(0, 0),
    I_JMP_REG(VM_JGE, 2, 3, 10),        /* loop: if (r2 >= r3) goto done */
    I_LDX(VM_B, 4, 2, 0),
    I_MOV64_REG(5, 4),
    I_ALU64_IMM(VM_ADD, 5, -'a'),
    I_JMP_IMM(VM_JGT, 5, 25, 2),        /* not a lower-case letter */
    I_ALU64_IMM(VM_ADD, 4, -32),
    I_ALU64_IMM(VM_ADD, 0, 1),
    I_STX(VM_B, 6, 4, 0),
    I_ALU64_IMM(VM_ADD, 2, 1),
    I_ALU64_IMM(VM_ADD, 6, 1),
    I_JA(-11),
    I_EXIT());                          /* done */
}

static uint8_t *upper_out;   /* INPUT_SIZE bytes, the native copy's output */

static uint64_t __attribute__((noinline)) upper_native(const uint8_t *p, size_t n)
{
    uint64_t changed = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if ((uint8_t)(c - 'a') <= 25) {
            c -= 32;
            changed++;
        }
        upper_out[i] = c;
    }
    return changed;
}

struct workload {
    const char *name;
    uint32_t (*build)(struct vm_insn *out);   /* writes at most MAX_INSNS */
    uint64_t (*native)(const uint8_t *, size_t);
};

static const struct workload workloads[] = {
    {"filter (count '\\n')", filter_prog, filter_native},
    {"checksum (fletcher32x2)", checksum_prog, checksum_native},
    {"fnv1a-64", fnv_prog, fnv_native},
    {"adler32", adler_prog, adler_native},
    {"upper-casing copy", upper_prog, upper_native},
};

/* How a workload is run. */
enum mode { MODE_FAST, MODE_CHECKED, MODE_JIT };
static const char *const mode_names[] = {"fast", "checked", "jit"};

/* ---- interpreter section --------------------------------------------- */

struct timing {
    uint64_t insns, best_ns, result;
    int rc;
};

static struct timing time_interp(struct vm_prog *p, struct vm_ctx *ctx, enum mode m)
{
    struct timing t = {0, UINT64_MAX, 0, 0};
    for (int i = 0; i < REPEAT; i++) {
        struct vm_env env = {.budget = 100000000ull, .checked = m == MODE_CHECKED,
                             .interp = m != MODE_JIT};
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

static int bench_one(const struct workload *w, const uint8_t *in, uint8_t *outb, enum mode m)
{
    struct vm_insn code[MAX_INSNS];
    struct vm_prog p = {.insns = code, .ninsns = w->build(code)};
    struct vm_ctx ctx = {.data = (uintptr_t)in, .data_end = (uintptr_t)in + INPUT_SIZE,
                         .out = (uintptr_t)outb, .out_end = (uintptr_t)outb + INPUT_SIZE,
                         .len = INPUT_SIZE};
    uint64_t native_result;
    int rc = vm_prepare(&p);
    if (rc)
        return rc;
    if (m == MODE_JIT) {
        p.verified = true;   /* hand-written and trusted: the loops are unchecked */
        if ((rc = vm_jit_compile(&p)) != 0) {
            vm_unprepare(&p);
            printf("%-26s %-8s not available (%s)\n", w->name, mode_names[m], strerror(-rc));
            return 0;
        }
    }
    struct timing t = time_interp(&p, &ctx, m);
    uint64_t native_ns = time_native(w, in, &native_result);
    vm_unprepare(&p);
    if (t.rc || t.result != native_result) {
        printf("%-26s %-8s FAILED (rc %d, result %llu, native %llu)\n", w->name,
               mode_names[m], t.rc, (unsigned long long)t.result,
               (unsigned long long)native_result);
        return t.rc ? t.rc : -EIO;
    }
    double ns_insn = (double)t.best_ns / (double)t.insns;
    double interp_nsb = (double)t.best_ns / INPUT_SIZE, native_nsb = (double)native_ns / INPUT_SIZE;
    printf("%-26s %-8s %12llu %8.3f %10.3f %10.4f %8.2f\n", w->name, mode_names[m],
           (unsigned long long)t.insns, ns_insn, interp_nsb, native_nsb, interp_nsb / native_nsb);
    return 0;
}

static int bench_interpreter(void)
{
    uint8_t *in = malloc(INPUT_SIZE), *outb = aligned_alloc(8, INPUT_SIZE);
    int rc = 0;
    upper_out = malloc(INPUT_SIZE);
    if (!in || !outb || !upper_out) {
        free(in);
        free(outb);
        free(upper_out);
        return -ENOMEM;
    }
    srand(42);
    for (size_t i = 0; i < INPUT_SIZE; i++)
        in[i] = (uint8_t)(rand() % 64 == 0 ? '\n' : 'a' + rand() % 26);
    printf("engines: 1 MiB input, best of %d runs\n", REPEAT);
    printf("%-26s %-8s %12s %8s %10s %10s %8s\n", "workload", "mode", "insns", "ns/insn",
           "ns/byte", "native", "ratio");
    for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]) && !rc; i++)
        for (int m = MODE_FAST; m <= MODE_JIT && !rc; m++)
            rc = bench_one(&workloads[i], in, outb, (enum mode)m);
    if (!rc && memcmp(outb, upper_out, INPUT_SIZE)) {
        printf("upper-casing copy: the program's output differs from native C's\n");
        rc = -EIO;
    }
    printf("(ns/byte and native are ns per input byte; ratio = engine / native;\n"
           " fast/checked: interpreter, jit: x86-64 code)\n\n");
    free(in);
    free(outb);
    free(upper_out);
    return rc;
}

/* ---- JIT compile time ------------------------------------------------- */

/* A straight-line-heavy program of n instructions: ALU on r0-r5, loads
 * and stores on the stack, a forward jump every 16. */
static uint32_t big_prog(struct vm_insn *code, uint32_t n)
{
    static const uint8_t ops[] = {VM_ADD, VM_SUB, VM_MUL, VM_OR, VM_AND, VM_XOR, VM_LSH,
                                  VM_RSH, VM_DIV, VM_MOD, VM_ARSH, VM_MOV};
    uint32_t k = 0;
    for (uint8_t r = 0; r <= 5; r++)
        code[k++] = I_MOV64_IMM(r, r + 1);
    while (k < n - 1) {
        uint32_t i = k;
        if (i % 16 == 0)
            code[k++] = I_JMP_IMM(VM_JGT, i % 6, (int32_t)i, 1);
        else if (i % 7 == 0)
            code[k++] = I_STX(VM_DW, 10, i % 6, -8 * (int16_t)(1 + i % 32));
        else if (i % 11 == 0)
            code[k++] = I_ALU64_REG(ops[i % 12], i % 6, (i + 1) % 6);
        else
            code[k++] = I_ALU64_IMM(ops[i % 12], i % 6, (int32_t)(i * 2654435761u) | 1);
    }
    code[k++] = I_EXIT();
    return k;
}

static int bench_jit_compile(void)
{
    enum { N = 1000 };
    struct vm_insn *code = calloc(N, sizeof(*code));
    if (!code)
        return -ENOMEM;
    struct vm_prog p = {.insns = code, .ninsns = big_prog(code, N)};
    uint64_t best = UINT64_MAX;
    int rc = vm_prepare(&p);
    p.verified = true;   /* generated and trusted; only compiled, never run */
    for (int i = 0; i < 50 && !rc; i++) {
        vm_jit_free(&p);
        uint64_t t0 = now_ns();
        rc = vm_jit_compile(&p);
        uint64_t dt = now_ns() - t0;
        if (dt < best)
            best = dt;
    }
    if (!rc)
        printf("jit: compiling %u instructions: %.3f ms (best of 50), %zu bytes of code\n\n",
               p.ninsns, (double)best / 1e6, vm_jit_size(&p));
    else if (rc == -ENOTSUP)
        printf("jit: not available on this host\n\n"), rc = 0;
    vm_unprepare(&p);
    free(code);
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
    {"jit", bench_jit_compile},
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
