/*
 * tests/bpf/conformance/plugin.c - `cisc-bpf-conformance`: a plugin for the
 * public eBPF conformance suite (Alan-Jowett/bpf_conformance).
 *
 * Protocol (the suite's runner starts one process per test):
 *   cisc-bpf-conformance [MEMORY-HEX] [--interp | --jit] [--checked | --fast]
 *   - the program arrives on stdin as hex bytes (whitespace allowed);
 *   - the optional first argument is the initial memory, also hex; the
 *     program runs with r1 = memory, r2 = its length;
 *   - on success r0 is printed in hex on stdout and the exit code is 0;
 *   - on failure a one-line reason goes to stderr and the exit code is 1.
 * The program runs unverified, so it runs in checked mode by default
 * (every access bounds-checked); --fast runs the unchecked fast path.
 * --jit compiles it with the x86-64 JIT (bpf/jit_x86_64.h) and runs the
 * native code, which is always unchecked (--fast implied): the suite's
 * programs are trusted test vectors, so the plugin marks them verified,
 * which the JIT otherwise requires.
 *
 * Helpers and runtime functions: the suite knows nothing of the device's
 * helpers (cisc_bpf.h). The one helper the suite calls, `call 5`
 * (tests/call_unwind_fail.data; tests/callx.data makes the same call
 * through a register), is uBPF's test helper 5, "unwind": it returns
 * its first argument (uBPF also stops the program when that is 0; no suite
 * test relies on that, and the Linux helper 5 never stops, so the plugin
 * does not). One test calls a runtime function (CALL with src 2, a kfunc
 * in Linux terms), `call runtime 0x2a`, and expects r0 = 0. The device has
 * neither, so the plugin alone provides them by rewriting each call before
 * preparing the program: `call 5` becomes `mov64 r0, r1`, a runtime call
 * becomes `mov64 r0, 0`. Other helper ids reach the device's helpers,
 * bounds-checked in the default checked mode.
 *
 * Not supported: CALL|X ("callx", a conformance group the suite leaves out
 * unless --include_groups callx) and ELF input (--elf); both are reported
 * as errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"

#define MAX_PROGRAM_BYTES (1u << 24)

struct opts {
    const char *mem_hex;
    bool jit, fast;
};

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes hex text (pairs of digits, any whitespace between bytes, an
 * optional 0x before a byte) into a new buffer. Returns bytes or -EINVAL. */
static long decode_hex(const char *s, size_t len, uint8_t **out)
{
    uint8_t *buf = malloc(len / 2 + 1);
    size_t n = 0;
    if (!buf)
        return -ENOMEM;
    for (size_t i = 0; i < len;) {
        if (strchr(" \t\r\n,", s[i])) {
            i++;
            continue;
        }
        if (s[i] == '0' && i + 1 < len && (s[i + 1] == 'x' || s[i + 1] == 'X'))
            i += 2;
        int hi = i < len ? hexval(s[i]) : -1, lo = i + 1 < len ? hexval(s[i + 1]) : -1;
        if (hi < 0 || lo < 0) {
            free(buf);
            return -EINVAL;
        }
        buf[n++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    *out = buf;
    return (long)n;
}

static int read_stdin(char **text, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            char *nb = cap < 4 * MAX_PROGRAM_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb)
                free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf)
        return -ENOMEM;
    *text = buf;
    *len = n;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--interp"))
            o->jit = false;
        else if (!strcmp(argv[i], "--jit"))
            o->jit = true;
        else if (!strcmp(argv[i], "--fast"))
            o->fast = true;
        else if (!strcmp(argv[i], "--checked"))
            o->fast = false;
        else if (!strcmp(argv[i], "--elf"))
            return fprintf(stderr, "cisc-bpf-conformance: --elf: ELF input is not supported; "
                                   "run the suite without --elf\n"), -EINVAL;
        else if (!strncmp(argv[i], "--", 2))
            return fprintf(stderr, "cisc-bpf-conformance: unknown option %s\n", argv[i]), -EINVAL;
        else if (!o->mem_hex)
            o->mem_hex = argv[i];
        else
            return fprintf(stderr, "cisc-bpf-conformance: unexpected argument %s\n", argv[i]),
                   -EINVAL;
    }
    return 0;
}

static void print_failure(int rc, const struct vm_env *env)
{
    if (env->fault[0])
        fprintf(stderr, "%s\n", env->fault);
    else
        fprintf(stderr, "run failed: %s\n", strerror(-rc));
}

/* The suite's helper and runtime functions (see the header). */
#define SUITE_HELPER_UNWIND 5

static void rewrite_suite_calls(struct vm_insn *insns, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct vm_insn *in = &insns[i];
        if (in->code != (VM_CLS_JMP | VM_CALL))
            continue;
        if (vm_src(in) == 2) {
            *in = (struct vm_insn){.code = VM_CLS_ALU64 | VM_K | VM_MOV};
        } else if (vm_src(in) == 0 && in->imm == SUITE_HELPER_UNWIND && vm_dst(in) == 0 &&
                   in->off == 0) {
            *in = (struct vm_insn){.code = VM_CLS_ALU64 | VM_X | VM_MOV};
            in->regs = 1 << 4;   /* dst r0, src r1 */
        }
    }
}

/* Runs the program in code[0..nbytes) over mem; prints r0. Returns 0/1. */
static int run_program(uint8_t *code, long nbytes, uint8_t *mem, long memlen, bool fast,
                       bool jit)
{
    struct vm_prog prog = {.insns = (struct vm_insn *)code, .ninsns = (uint32_t)(nbytes / 8)};
    struct vm_env env = {.budget = 100000000ull, .checked = !fast && !jit, .interp = !jit};
    uint64_t r0 = 0;
    rewrite_suite_calls(prog.insns, prog.ninsns);
    int rc = vm_prepare(&prog);
    if (rc == 0 && jit) {
        prog.verified = true;   /* trusted test vector (see the header) */
        rc = vm_jit_compile(&prog);
    }
    if (rc == 0)
        rc = vm_run_raw(&prog, memlen ? mem : NULL, (uint64_t)memlen, &env, &r0);
    vm_unprepare(&prog);
    if (rc) {
        print_failure(rc, &env);
        return 1;
    }
    printf("%" PRIx64 "\n", r0);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    char *text = NULL;
    size_t tlen = 0;
    uint8_t *code = NULL, *mem = NULL;
    long nbytes, memlen = 0;
    int status = 1;

    if (parse_args(argc, argv, &o))
        return 1;
    if (read_stdin(&text, &tlen))
        return fprintf(stderr, "cisc-bpf-conformance: out of memory\n"), 1;
    nbytes = decode_hex(text, tlen, &code);
    if (o.mem_hex)
        memlen = decode_hex(o.mem_hex, strlen(o.mem_hex), &mem);
    if (nbytes < 0 || memlen < 0)
        fprintf(stderr, "cisc-bpf-conformance: %s is not hex bytes\n",
                nbytes < 0 ? "the program" : "the memory argument");
    else if (nbytes == 0 || nbytes % 8 || nbytes > MAX_PROGRAM_BYTES)
        fprintf(stderr, "cisc-bpf-conformance: program of %ld bytes is not a whole number of "
                        "8-byte instructions\n", nbytes);
    else
        status = run_program(code, nbytes, mem, memlen, o.fast, o.jit);
    free(text);
    free(code);
    free(mem);
    return status;
}
