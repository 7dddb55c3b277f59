/*
 * cmd/bpf.c - `cisc bpf`: verify, run and disassemble eBPF programs on a
 * laptop, without a device.
 *
 * verify  loads the object and runs the verifier on each program (or the
 *         one chosen with --prog); exit 0 with a one-line summary per
 *         program, 1 with the rejection.
 * run     verifies, then runs the program over a file in blocks exactly as
 *         bpf/blocks.h defines (the device's semantics); the output goes to
 *         --out or stdout, the report (per-block results, trace messages,
 *         budget) to stderr.
 * disasm  prints the linked program with source lines interleaved.
 * Exit status: 0 ok, 1 the object or program was rejected or a block
 * failed, 2 usage or I/O error (cmd.h).
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/blocks.h"
#include "bpf/helpers.h"
#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"

#define VERBOSE_BLOCKS 16   /* print every block when there are at most this many */

struct bpf_opts {
    const char *verb;
    const char *object;
    const char *prog;
    const char *input;
    const char *out;
    bool log;
    bool verbose;
    bool interp;                 /* --interp: no JIT */
    bool jited;                  /* disasm --jited: with the native code */
    struct vm_blocks_opts run;
};

static const char usage[] =
    "usage: cisc bpf verify PROG.o [--prog NAME] [--log]\n"
    "       cisc bpf run PROG.o [--prog NAME] --input FILE|- [--arg N=V]... [--out FILE]\n"
    "                    [--block-size N] [--out-size N] [--budget N] [--checked] [--interp]\n"
    "                    [-v]\n"
    "       cisc bpf disasm PROG.o [--prog NAME] [--jited]\n"
    "\n"
    "Check and try an eBPF program (clang -O2 -g -target bpf -c prog.c -o prog.o)\n"
    "without a device. See docs/BPF.md for the program ABI.\n"
    "\n"
    "  verify      prove the program safe; print a summary, or the rejection with\n"
    "              the instruction, the reason and the source line (exit 1)\n"
    "  run         verify, then run over FILE in blocks as the device does: one\n"
    "              invocation per block, state kept across blocks, outputs\n"
    "              concatenated to --out (default stdout); report on stderr\n"
    "  disasm      print the linked program with source lines\n"
    "\n"
    "  --prog NAME       program (function) to use; default: all (verify,\n"
    "                    disasm) or the only one (run)\n"
    "  --log             print the verifier's whole trace\n"
    "  --input FILE      input bytes for run: a file, a pipe (<(cmd)), or - for\n"
    "                    standard input\n"
    "  --arg N=V         ctx->arg[N] (N 0..3) = V: a number (123, -5, 0x1f) or\n"
    "                    str:TEXT, whose bytes fill arg[N], arg[N+1]... little-endian\n"
    "  --out FILE        write the concatenated output here instead of stdout\n"
    "  --block-size N    bytes per invocation (default 4096, e.g. 64K, 1M)\n"
    "  --out-size N      output buffer per invocation (default 2 x block size)\n"
    "  --budget N        instructions per invocation (default 1000000)\n"
    "  --checked         also bounds-check every access at run time (debug;\n"
    "                    runs in the interpreter)\n"
    "  --interp          run in the interpreter, not as x86-64 code (JIT)\n"
    "  --jited           disasm: verify and JIT-compile, show each instruction's\n"
    "                    x86-64 bytes under it\n"
    "  -v, --verbose     print every block's result\n"
    "\n"
    "Exit status: 0 success, 1 the operation failed (the object or program was\n"
    "rejected, or a block failed), 2 usage or environment error.\n";

/* ---- Argument parsing ------------------------------------------------------ */

static int parse_size32(const char *opt, const char *s, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (cmd_parse_size(s, &v) || v == 0 || v > max)
        return cmd_fail("bpf", "%s %s: want a size from 1 to %u bytes", opt, s, max);
    *out = (uint32_t)v;
    return 0;
}

static int parse_valued(struct bpf_opts *o, const char *opt, const char *v)
{
    if (!strcmp(opt, "--prog"))
        o->prog = v;
    else if (!strcmp(opt, "--input"))
        o->input = v;
    else if (!strcmp(opt, "--out"))
        o->out = v;
    else if (!strcmp(opt, "--arg"))
        return cmd_parse_prog_arg("bpf", v, o->run.arg);
    else if (!strcmp(opt, "--block-size"))
        return parse_size32(opt, v, VM_BLOCK_SIZE_MAX, &o->run.block_size);
    else if (!strcmp(opt, "--out-size"))
        return parse_size32(opt, v, 2 * VM_BLOCK_SIZE_MAX, &o->run.out_cap);
    else if (!strcmp(opt, "--budget"))
        return cmd_parse_u64(v, &o->run.budget) || o->run.budget == 0
                   ? cmd_fail("bpf", "--budget %s: want a positive number", v) : 0;
    else
        return cmd_fail("bpf", "unknown option '%s' (see cisc bpf --help)", opt);
    return 0;
}

static bool takes_value(const char *opt)
{
    static const char *const v[] = {"--prog", "--input", "--out", "--arg",
                                    "--block-size", "--out-size", "--budget"};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (!strcmp(opt, v[i]))
            return true;
    return false;
}

static int parse_flag(struct bpf_opts *o, const char *opt)
{
    if (!strcmp(opt, "--log"))
        o->log = true;
    else if (!strcmp(opt, "--checked"))
        o->run.checked = true;
    else if (!strcmp(opt, "--interp"))
        o->interp = true;
    else if (!strcmp(opt, "--jited"))
        o->jited = true;
    else if (!strcmp(opt, "-v") || !strcmp(opt, "--verbose"))
        o->verbose = true;
    else
        return cmd_fail("bpf", "unknown option '%s' (see cisc bpf --help)", opt);
    return 0;
}

/* One option at argv[*i] ("--opt V" or "--opt=V"); advances *i. */
static int parse_option(struct bpf_opts *o, int argc, char **argv, int *i)
{
    char name[32];
    const char *a = argv[*i], *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), a);
    if (!takes_value(name))
        return eq ? cmd_fail("bpf", "option %s takes no value", name) : parse_flag(o, a);
    if (eq)
        return parse_valued(o, name, eq + 1);
    if (*i + 1 >= argc)
        return cmd_fail("bpf", "option %s needs a value", name);
    return parse_valued(o, name, argv[++*i]);
}

static int check_verb_options(const struct bpf_opts *o)
{
    bool run = !strcmp(o->verb, "run");
    if (!run && strcmp(o->verb, "verify") != 0 && strcmp(o->verb, "disasm") != 0)
        return cmd_fail("bpf", "unknown action '%s': want verify, run or disasm", o->verb);
    if (!o->object)
        return cmd_fail("bpf", "%s: which object? (cisc bpf %s PROG.o)", o->verb, o->verb);
    if (run && !o->input)
        return cmd_fail("bpf", "run: --input FILE is required");
    if (!run && (o->input || o->out))
        return cmd_fail("bpf", "%s: --input and --out belong to run", o->verb);
    if (o->log && strcmp(o->verb, "verify") != 0)
        return cmd_fail("bpf", "%s: --log belongs to verify", o->verb);
    return 0;
}

static int parse_args(int argc, char **argv, struct bpf_opts *o)
{
    memset(o, 0, sizeof(*o));
    if (argc < 2)
        return cmd_fail("bpf", "missing action: verify, run or disasm");
    o->verb = argv[1];
    for (int i = 2; i < argc; i++) {
        int rc = 0;
        if (argv[i][0] == '-' && argv[i][1])
            rc = parse_option(o, argc, argv, &i);
        else if (o->object)
            rc = cmd_fail("bpf", "unexpected argument '%s'", argv[i]);
        else
            o->object = argv[i];
        if (rc)
            return rc;
    }
    return check_verb_options(o);
}

/* ---- Loading ---------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        return cmd_fail("bpf", "%s: %s", path, e == EINVAL ? "not a regular file"
                                                          : strerror(e));
    }
    *len = (size_t)st.st_size;
    *buf = malloc(*len + 1);
    size_t got = 0;
    while (*buf && got < *len) {
        ssize_t r = read(fd, *buf + got, *len - got);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            break;
        got += r > 0 ? (size_t)r : 0;
    }
    close(fd);
    if (!*buf || got != *len) {
        free(*buf);
        return cmd_fail("bpf", "%s: %s", path, *buf ? "short read" : "out of memory");
    }
    return 0;
}

/* Reads all of fd (a pipe: its size is not known beforehand). */
static int slurp(int fd, uint8_t **buf, size_t *len)
{
    size_t cap = 1 << 16;
    *len = 0;
    *buf = malloc(cap);
    for (;;) {
        if (!*buf)
            return -ENOMEM;
        ssize_t n = read(fd, *buf + *len, cap - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(*buf);
            *buf = NULL;
            return -e;
        }
        if (n == 0)
            return 0;
        *len += (size_t)n;
        if (*len == cap) {
            uint8_t *b = realloc(*buf, cap *= 2);
            if (!b)
                free(*buf);
            *buf = b;
        }
    }
}

/* The input: a regular file is mapped read-only (large inputs are not
 * copied; the block runner copies one block at a time); "-" (standard
 * input), a pipe or a character device is read into memory (*copied).
 * Empty input gives len 0, *buf NULL. */
static int map_input(const char *path, const uint8_t **buf, size_t *len, bool *copied)
{
    struct stat st;
    bool in = !strcmp(path, "-");
    int fd = in ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    *buf = NULL;
    *copied = false;
    if (fd < 0 || fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
        int e = fd < 0 ? errno : EISDIR;
        if (fd > 0)
            close(fd);
        return cmd_fail("bpf", "%s: %s", in ? "standard input" : path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        uint8_t *b = NULL;
        int r = slurp(fd, &b, len);
        if (fd > 0)
            close(fd);
        if (r)
            return cmd_fail("bpf", "%s: %s", in ? "standard input" : path, strerror(-r));
        *buf = *len ? b : NULL;
        *copied = *len != 0;
        if (!*len)
            free(b);
        return 0;
    }
    *len = (size_t)st.st_size;
    void *m = *len ? mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int e = errno;
    if (fd > 0)
        close(fd);
    if (m == MAP_FAILED)
        return cmd_fail("bpf", "%s: %s", path, strerror(e));
    *buf = m;
    return 0;
}

static int load_object(const struct bpf_opts *o, struct vm_object **obj)
{
    uint8_t *buf = NULL;   /* GCC cannot see that cmd_fail returns nonzero */
    size_t len = 0;
    char err[512];
    int rc = read_file(o->object, &buf, &len);
    if (rc)
        return rc;
    rc = vm_object_load(buf, len, NULL, obj, err, sizeof(err));
    free(buf);
    if (rc) {
        fprintf(stderr, "cisc bpf: %s: %s\n", o->object, err);
        return 1;
    }
    return 0;
}

static void list_names(struct vm_object *obj, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < vm_object_nprogs(obj) && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                                vm_object_prog(obj, i)->name);
}

/* The programs the command applies to: --prog, else all (or the only one
 * when `single`). Fills progs[] and returns the count, or an exit status
 * as a negative number. */
static int select_progs(const struct bpf_opts *o, struct vm_object *obj, bool single,
                        struct vm_prog **progs)
{
    char names[512];
    list_names(obj, names, sizeof(names));
    if (o->prog) {
        progs[0] = vm_object_find(obj, o->prog);
        if (progs[0])
            return 1;
        fprintf(stderr, "cisc bpf: %s: no program '%s' (it has: %s)\n", o->object, o->prog,
                names);
        return -2;
    }
    unsigned n = vm_object_nprogs(obj);
    if (single && n != 1) {
        fprintf(stderr, "cisc bpf: %s has %u programs (%s): choose one with --prog\n",
                o->object, n, names);
        return -2;
    }
    for (unsigned i = 0; i < n; i++)
        progs[i] = vm_object_prog(obj, i);
    return (int)n;
}

/* ---- verify ----------------------------------------------------------------- */

static void print_log_line(void *arg, const char *line)
{
    (void)arg;
    puts(line);
}

/* Verifies p; prints the summary (stdout) or the rejection (stderr). */
static int verify_one(const struct bpf_opts *o, struct vm_prog *p, bool quiet)
{
    struct vm_verify_opts vo = {.log = o->log ? print_log_line : NULL};
    struct vm_verify_result res;
    memset(&res, 0, sizeof(res));
    int rc = vm_verify(p, &vo, &res);
    if (rc) {
        fprintf(stderr, "cisc bpf: %s: program '%s' rejected: %s\n", o->object, p->name,
                res.msg[0] ? res.msg : strerror(-rc));
        return 1;
    }
    if (quiet)
        return 0;
    printf("%s: verified: %u instructions, %" PRIu64 " states, %" PRIu64
           " instructions processed, %.3f ms", p->name, p->ninsns, res.states,
           res.insns_processed, (double)res.elapsed_ns / 1e6);
    if (res.exact_insns)   /* docs/BPF.md: the second exploration, without joins */
        printf(" (%" PRIu64 " of them exploring again without joins)", res.exact_insns);
    printf("\n");
    return 0;
}

static int cmd_verify(const struct bpf_opts *o, struct vm_prog **progs, int n)
{
    int status = 0;
    for (int i = 0; i < n; i++)
        if (verify_one(o, progs[i], false))
            status = 1;
    return status;
}

/* ---- run --------------------------------------------------------------------- */

struct run_ctx {
    const struct bpf_opts *o;
    const struct vm_prog *prog;
    FILE *out;
    uint64_t nblocks;        /* expected */
    uint64_t current;        /* block being run (for trace messages) */
    uint32_t out_cap;
    int write_error;
};

static void on_trace(void *arg, const char *msg)
{
    struct run_ctx *rc = arg;
    fprintf(stderr, "trace: block %" PRIu64 ": %s\n", rc->current, msg);
}

static void print_failure(const struct run_ctx *c, const struct vm_block_result *r)
{
    fprintf(stderr, "block %" PRIu64 " (offset %" PRIu64 ", %u bytes): ", r->index,
            r->offset, r->len);
    if (r->rc == -ETIME)
        fprintf(stderr, "instruction budget of %" PRIu64 " exhausted (-ETIME)\n",
                (uint64_t)(c->o->run.budget ? c->o->run.budget : VM_DEFAULT_BUDGET));
    else if (r->rc)
        fprintf(stderr, "stopped: %s (%s)\n", r->fault && r->fault[0] ? r->fault : "fault",
                strerror(-r->rc));
    else if (r->ret < 0)
        fprintf(stderr, "returned %d (%s)\n", r->ret, strerror(-r->ret));
    else
        fprintf(stderr, "returned %d but the output buffer holds %u bytes\n", r->ret,
                c->out_cap);
}

static int on_block(void *arg, const struct vm_block_result *r)
{
    struct run_ctx *c = arg;
    c->current = r->index + 1;
    bool ok = r->rc == 0 && r->ret >= 0 && (uint32_t)r->ret <= c->out_cap;
    if (!ok) {
        print_failure(c, r);
        return 0;
    }
    if (c->o->verbose || c->nblocks <= VERBOSE_BLOCKS)
        fprintf(stderr, "block %" PRIu64 " (offset %" PRIu64 ", %u bytes): returned %d, "
                "%" PRIu64 " instructions\n", r->index, r->offset, r->len, r->ret,
                r->insns);
    if (r->ret > 0 && fwrite(r->out, 1, (size_t)r->ret, c->out) != (size_t)r->ret) {
        c->write_error = errno ? errno : EIO;
        return -EIO;
    }
    return 0;
}

static void print_summary(const struct run_ctx *c, const struct vm_blocks_stats *st)
{
    fprintf(stderr, "%s: %" PRIu64 " block%s, %" PRIu64 " bytes in, %" PRIu64
            " bytes out, %" PRIu64 " instructions (at most %" PRIu64 " per block, "
            "budget %" PRIu64 ")\n", c->prog->name, st->blocks, st->blocks == 1 ? "" : "s",
            st->in_bytes, st->out_bytes, st->insns, st->insns_max,
            (uint64_t)(c->o->run.budget ? c->o->run.budget : VM_DEFAULT_BUDGET));
}

static int run_prog(struct run_ctx *c, const uint8_t *input, size_t len)
{
    struct vm_blocks_opts ro = c->o->run;
    uint32_t bs = ro.block_size ? ro.block_size : VM_BLOCK_SIZE_DEFAULT;
    c->out_cap = ro.out_cap ? ro.out_cap : 2 * bs;
    c->nblocks = len ? (len + bs - 1) / bs : 1;
    ro.in_place = true;   /* the file's bytes, mapped into our own memory */
    ro.trace = on_trace;
    ro.trace_arg = c;
    ro.on_block = on_block;
    ro.on_block_arg = c;
    struct vm_blocks_stats st;
    int rc = vm_blocks_run(c->prog, input, len, &ro, &st);
    if (fflush(c->out) && !c->write_error)
        c->write_error = errno ? errno : EIO;
    print_summary(c, &st);
    if (c->write_error)
        return cmd_fail("bpf", "%s: %s", c->o->out ? c->o->out : "stdout",
                        strerror(c->write_error));
    if (rc && rc != -ETIME && rc != -ECANCELED && rc != -ERANGE && rc != -EFAULT)
        return cmd_fail("bpf", "run: %s", strerror(-rc));
    return rc ? 1 : 0;
}

static int run_cmd(const struct bpf_opts *o, struct vm_prog *p)
{
    int rc = verify_one(o, p, true);
    if (rc)
        return rc;
    if ((rc = vm_prepare(p)) != 0)
        return cmd_fail("bpf", "run: cannot prepare '%s': %s", p->name, strerror(-rc));
    if (!o->interp && (rc = vm_jit_compile(p)) != 0 && rc != -ENOTSUP)
        return cmd_fail("bpf", "run: cannot JIT-compile '%s': %s", p->name, strerror(-rc));
    const uint8_t *input = NULL;   /* set by map_input unless it fails */
    size_t len = 0;
    bool copied = false;
    if ((rc = map_input(o->input, &input, &len, &copied)) != 0)
        return rc;
    struct run_ctx c = {.o = o, .prog = p, .out = stdout};
    if (o->out && !(c.out = fopen(o->out, "wb")))
        rc = cmd_fail("bpf", "%s: %s", o->out, strerror(errno));
    if (!rc)
        rc = run_prog(&c, input, len);
    if (c.out && c.out != stdout && fclose(c.out) && rc == 0)
        rc = cmd_fail("bpf", "%s: %s", o->out, strerror(errno));
    if (input && copied)
        free((void *)input);
    else if (input)
        munmap((void *)input, len);
    return rc;
}

/* ---- disasm ------------------------------------------------------------------ */

/* Appends a printable rendering of the string at rodata[off], if there is one. */
static void rodata_string(const struct vm_prog *p, uint64_t off, char *buf, size_t size)
{
    buf[0] = '\0';
    if (off >= p->rodata_size)
        return;
    const char *s = (const char *)p->rodata + off;
    size_t max = p->rodata_size - off, n = strnlen(s, max), len = 0;
    if (n == 0 || n == max || n > 48)
        return;
    len += (size_t)snprintf(buf, size, " <\"");
    for (size_t i = 0; i < n && len + 8 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n')
            len += (size_t)snprintf(buf + len, size - len, "\\n");
        else if (ch < 32 || ch > 126) {
            buf[0] = '\0';  /* not text */
            return;
        } else
            buf[len++] = (char)ch;
    }
    snprintf(buf + len, size - len, "\">");
}

/* What to show after an instruction: jump/call target, helper name, string. */
static void annotate(const struct vm_prog *p, uint32_t pc, char *buf, size_t size)
{
    const struct vm_insn *in = &p->insns[pc];
    unsigned cls = VM_CLS(in->code), op = VM_OP(in->code);
    buf[0] = '\0';
    if (in->code == VM_OPC_LD_IMM64 && vm_src(in) == VM_PSEUDO_RODATA)
        return rodata_string(p, (uint32_t)in->imm, buf, size);
    if (cls != VM_CLS_JMP && cls != VM_CLS_JMP32)
        return;
    if (in->code == (VM_CLS_JMP | VM_CALL) && vm_src(in) == 0) {
        const struct vm_helper *h = vm_helper_find((uint32_t)in->imm);
        snprintf(buf, size, " <%s>", h ? h->name : "unknown helper");
    } else if (in->code == (VM_CLS_JMP | VM_CALL) || (op != VM_CALL && op != VM_EXIT)) {
        bool imm = in->code == (VM_CLS_JMP | VM_CALL) || (cls == VM_CLS_JMP32 && op == VM_JA);
        snprintf(buf, size, " <%lld>", (long long)pc + 1 + (imm ? in->imm : in->off));
    }
}

static bool is_call_target(const struct vm_prog *p, uint32_t pc)
{
    for (uint32_t i = 0; i < p->ninsns; i++) {
        const struct vm_insn *in = &p->insns[i];
        if (in->code == (VM_CLS_JMP | VM_CALL) && vm_src(in) == VM_PSEUDO_CALL &&
            (int64_t)i + 1 + in->imm == pc)
            return true;
    }
    return false;
}

static void print_source(const struct vm_prog *p, uint32_t pc, const struct vm_line_info **last)
{
    const struct vm_line_info *li = vm_prog_line(p, pc);
    if (!li || li->insn_off != pc || li->line == 0)
        return;
    if (*last && (*last)->line == li->line && !strcmp((*last)->file, li->file))
        return;
    *last = li;
    const char *src = li->src ? li->src : "";
    while (*src == ' ' || *src == '\t')
        src++;
    printf("; %s:%u: %s\n", li->file ? li->file : "?", li->line, src);
}

/* The native code of instruction pc (JIT-compiled programs), as hex
 * bytes under the instruction, 16 a line. */
static void print_native(const struct vm_prog *p, uint32_t pc)
{
    const uint8_t *code;
    size_t len;
    if (vm_jit_insn_code(p, pc, &code, &len) != 0)
        return;
    for (size_t i = 0; i < len; i++)
        printf("%s%02x%s", i % 16 == 0 ? "\t\t\t" : " ", code[i],
               i % 16 == 15 || i + 1 == len ? "\n" : "");
}

static void disasm_one(const struct vm_prog *p)
{
    const struct vm_line_info *last = NULL;
    char text[160], note[96];
    printf("%s: section %s, %u instructions, %u bytes of read-only data\n", p->name,
           p->section, p->ninsns, p->rodata_size);
    if (p->jit)
        printf("JIT-compiled: %zu bytes of x86-64 code; each instruction's bytes follow it\n",
               vm_jit_size(p));
    for (uint32_t pc = 0; pc < p->ninsns;) {
        if (pc && is_call_target(p, pc)) {
            printf("\n<subprogram at %u>:\n", pc);
            last = NULL;
        }
        print_source(p, pc, &last);
        int slots = vm_disasm_insn(p, pc, text, sizeof(text));
        annotate(p, pc, note, sizeof(note));
        printf("%6u:\t%s%s\n", pc, text, note);
        print_native(p, pc);
        pc += (uint32_t)slots;
    }
}

/* --jited: verify, prepare and compile p, as loading it would. */
static int jit_one(const struct bpf_opts *o, struct vm_prog *p)
{
    int rc = verify_one(o, p, true);
    if (rc)
        return rc;
    if ((rc = vm_prepare(p)) != 0 || (rc = vm_jit_compile(p)) != 0)
        return cmd_fail("bpf", "disasm: cannot JIT-compile '%s': %s", p->name, strerror(-rc));
    return 0;
}

static int cmd_disasm(const struct bpf_opts *o, struct vm_prog **progs, int n)
{
    for (int i = 0; i < n; i++) {
        int rc = o->jited ? jit_one(o, progs[i]) : 0;
        if (rc)
            return rc;
        if (i)
            putchar('\n');
        disasm_one(progs[i]);
    }
    return 0;
}

/* ---- entry -------------------------------------------------------------------- */

static int run_bpf(int argc, char **argv)
{
    struct bpf_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    struct vm_object *obj;
    if ((rc = load_object(&o, &obj)) != 0)
        return rc;
    struct vm_prog **progs = calloc(vm_object_nprogs(obj) + 1, sizeof(*progs));
    int n = progs ? select_progs(&o, obj, !strcmp(o.verb, "run"), progs) : -2;
    if (n < 0)
        rc = -n;
    else if (!strcmp(o.verb, "verify"))
        rc = cmd_verify(&o, progs, n);
    else if (!strcmp(o.verb, "run"))
        rc = run_cmd(&o, progs[0]);
    else
        rc = cmd_disasm(&o, progs, n);
    free(progs);
    vm_object_free(obj);
    return rc;
}

const struct cisc_cmd cmd_bpf = {
    .name = "bpf",
    .summary = "verify, run or disassemble an eBPF program (no device needed)",
    .usage = usage,
    .run = run_bpf,
};
