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
 * CALL|X ("callx", the conformance group the suite runs only with
 * --include_groups callx) calls the helper whose id is in register dst.
 * Both engines execute it (they look the number up in the device's helper
 * table when it runs), but the suite's numbers are not the device's: its
 * 5 is uBPF's "unwind", the device's 5 is cisc_zstd_compress. So the
 * plugin looks at each callx's register (resolve_callx(): a constant set
 * by mov or lddw earlier in the same straight-line code): the suite's
 * helper 5 becomes the static `call 5` and goes through the rewrite
 * above; another known number stays a callx and the engine calls that
 * device helper; a register the plugin cannot resolve is refused with an
 * error (it could name the suite's helper, which the device lacks, and
 * the JIT runs these unverified vectors without checks). ELF input
 * (--elf) is not supported and is reported as an error.
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

/* Marks in target[] every instruction some jump or local call can reach
 * other than by falling through. */
static void mark_targets(const struct vm_insn *insns, uint32_t n, bool *target)
{
    for (uint32_t i = 0; i < n; i++) {
        const struct vm_insn *in = &insns[i];
        unsigned cls = VM_CLS(in->code), op = VM_OP(in->code);
        int64_t to;
        if (in->code == (VM_CLS_LD | VM_IMM | VM_DW)) {
            i++;
            continue;
        }
        if (cls != VM_CLS_JMP && cls != VM_CLS_JMP32)
            continue;
        if (op == VM_EXIT)
            continue;
        if (op == VM_CALL && !(cls == VM_CLS_JMP && vm_src(in) == 1))
            continue;
        to = (int64_t)i + 1 + ((op == VM_CALL || (op == VM_JA && cls == VM_CLS_JMP32))
                                   ? (int64_t)in->imm : (int64_t)in->off);
        if (to >= 0 && to < (int64_t)n)
            target[to] = true;
    }
}

struct known_regs {
    bool known[VM_NREGS];
    uint64_t value[VM_NREGS];
};

/* Updates what is known of the registers after instruction in (the first
 * half of an lddw when it is one). */
static void track_regs(const struct vm_insn *in, bool has_next, struct known_regs *k)
{
    unsigned cls = VM_CLS(in->code), dst = vm_dst(in), src = vm_src(in);
    if (dst >= VM_NREGS || src >= VM_NREGS) {
        *k = (struct known_regs){0};   /* invalid: the engine rejects it */
    } else if (in->code == (VM_CLS_ALU64 | VM_K | VM_MOV) && in->off == 0) {
        k->known[dst] = true;
        k->value[dst] = (uint64_t)(int64_t)in->imm;
    } else if (in->code == (VM_CLS_ALU | VM_K | VM_MOV) && in->off == 0) {
        k->known[dst] = true;
        k->value[dst] = (uint32_t)in->imm;
    } else if (in->code == (VM_CLS_LD | VM_IMM | VM_DW) && src == 0 && has_next) {
        k->known[dst] = true;
        k->value[dst] = (uint32_t)in->imm | (uint64_t)(uint32_t)in[1].imm << 32;
    } else if (cls == VM_CLS_LD) {
        *k = (struct known_regs){0};   /* other lddw, legacy packet loads */
    } else if (cls == VM_CLS_ALU || cls == VM_CLS_ALU64 || cls == VM_CLS_LDX) {
        k->known[dst] = false;
    } else if (cls == VM_CLS_STX && VM_MODE(in->code) == VM_ATOMIC) {
        k->known[0] = k->known[src] = false;
    } else if (cls == VM_CLS_JMP && VM_OP(in->code) == VM_CALL) {
        *k = (struct known_regs){0};   /* helpers and callees clobber r0..r5 */
    }
}

/* Rewrites each callx (CALL|X) of the suite's helper into its static
 * call; keeps one of a device helper's known number (see the header).
 * Returns 0, or 1 after printing why a callx's register is not known. */
static int resolve_callx(struct vm_insn *insns, uint32_t n)
{
    bool *target = calloc(n ? n : 1, sizeof(*target));
    struct known_regs k = {0};
    if (!target)
        return fprintf(stderr, "cisc-bpf-conformance: out of memory\n"), 1;
    mark_targets(insns, n, target);
    for (uint32_t i = 0; i < n; i++) {
        struct vm_insn *in = &insns[i];
        unsigned dst = vm_dst(in);
        if (target[i])
            k = (struct known_regs){0};
        bool callx = in->code == (VM_CLS_JMP | VM_X | VM_CALL) && vm_src(in) == 0 &&
                     in->off == 0 && in->imm == 0 && dst < VM_REG_FP;
        if (callx && !k.known[dst]) {
            fprintf(stderr, "pc %u: callx r%u: the plugin cannot tell which helper this "
                    "calls (the suite's helper numbers are not the device's)\n", i, dst);
            free(target);
            return 1;
        }
        if (callx && k.value[dst] == SUITE_HELPER_UNWIND)
            *in = (struct vm_insn){.code = VM_CLS_JMP | VM_CALL, .imm = SUITE_HELPER_UNWIND};
        track_regs(in, i + 1 < n, &k);
        if (in->code == (VM_CLS_LD | VM_IMM | VM_DW))
            i++;
        else if ((VM_CLS(in->code) == VM_CLS_JMP || VM_CLS(in->code) == VM_CLS_JMP32) &&
                 (VM_OP(in->code) == VM_JA || VM_OP(in->code) == VM_EXIT))
            k = (struct known_regs){0};   /* what follows is reached by a jump */
    }
    free(target);
    return 0;
}

/* Runs the program in code[0..nbytes) over mem; prints r0. Returns 0/1. */
static int run_program(uint8_t *code, long nbytes, uint8_t *mem, long memlen, bool fast,
                       bool jit)
{
    struct vm_prog prog = {.insns = (struct vm_insn *)code, .ninsns = (uint32_t)(nbytes / 8)};
    struct vm_env env = {.budget = 100000000ull, .checked = !fast && !jit, .interp = !jit};
    uint64_t r0 = 0;
    if (resolve_callx(prog.insns, prog.ninsns))
        return 1;
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
