/* cmd/run.c - `cisc run`: a device program over a whole file, in the
 * device (libcisc cisc_prog_run: read -> program -> write fused ops). */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include <cisc/cisc.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: cisc run MOUNT --prog NAME --input PATH [--output PATH] [--arg N=V]...\n"
    "                [--block-size N] [--block-out N] [--chunk SIZE] [--out-cap SIZE] [-v]\n"
    "\n"
    "Runs the device program NAME (cisc prog load) over the whole file PATH\n"
    "inside the device serving MOUNT: the file is read, processed and the\n"
    "result written in the device, one fused op per chunk; only the result\n"
    "leaves the device, and only when it goes to standard output.\n"
    "\n"
    "PATH names a file of the device: from its root (/logs/a.log), or as a\n"
    "path under MOUNT (MOUNT/logs/a.log, or relative to the current\n"
    "directory inside the mount).\n"
    "\n"
    "  --prog NAME      the program (name or id)\n"
    "  --input PATH     the file to process\n"
    "  --output PATH    where the result goes (replaced only if the whole run\n"
    "                   succeeds); default: standard output\n"
    "  --arg N=V        ctx->arg[N] (N = 0..3): a number (123, -5, 0x1f), or\n"
    "                   str:TEXT, TEXT's bytes spread over arg[N], arg[N+1] ...\n"
    "  --block-size N   bytes per program invocation (default 4096)\n"
    "  --block-out N    output buffer of one invocation (default 2 x block size)\n"
    "  --chunk SIZE     input bytes per fused op (default 4M)\n"
    "  --out-cap SIZE   result bytes one fused op may produce (default: chunk + 2 blocks)\n"
    "  -v               report bytes moved and time on standard error\n"
    "\n"
    "Exit status: 0 ok, 1 the program failed (its error, or its budget), 2 other errors.\n";

struct run_args {
    const char *mnt, *prog, *input, *output;
    struct cisc_prog_run_opts o;
    bool verbose;
};

static int parse_size_opt(const char *name, const char *s, uint64_t max, uint64_t *out)
{
    if (cmd_parse_size(s, out) || *out == 0 || *out > max)
        return cmd_fail("run", "%s wants a size from 1 to %" PRIu64 ", not '%s'", name, max, s);
    return 0;
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
    static const struct option lo[] = {
        { "prog", required_argument, NULL, 'p' }, { "input", required_argument, NULL, 'i' },
        { "output", required_argument, NULL, 'o' }, { "arg", required_argument, NULL, 'a' },
        { "block-size", required_argument, NULL, 'b' }, { "chunk", required_argument, NULL, 'c' },
        { "out-cap", required_argument, NULL, 'O' },
        { "block-out", required_argument, NULL, 'B' }, { NULL, 0, NULL, 0 },
    };
    uint64_t v;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
        switch (ch) {
        case 'p': a->prog = optarg; break;
        case 'i': a->input = optarg; break;
        case 'o': a->output = optarg; break;
        case 'v': a->verbose = true; break;
        case 'a': if (cmd_parse_prog_arg("run", optarg, a->o.arg)) return 2; break;
        case 'b':
            if (parse_size_opt("--block-size", optarg, 64u << 20, &v))
                return 2;
            a->o.block_size = (uint32_t)v;
            break;
        case 'c': if (parse_size_opt("--chunk", optarg, 1u << 30, &a->o.chunk)) return 2; break;
        case 'B':
            if (parse_size_opt("--block-out", optarg, 128u << 20, &v))
                return 2;
            a->o.block_out = (uint32_t)v;
            break;
        case 'O': if (parse_size_opt("--out-cap", optarg, 1u << 30, &a->o.out_cap)) return 2; break;
        default: fputs(run_usage, stderr); return 2;
        }
    }
    if (optind + 1 != argc)
        return cmd_fail("run", optind >= argc ? "MOUNT is missing" : "unexpected argument '%s'",
                        argv[optind + (optind < argc)]);
    a->mnt = argv[optind];
    if (!a->prog || !a->input)
        return cmd_fail("run", "--prog and --input are required");
    return 0;
}

/* ---- paths: the device's own, or host paths under the mount ----------------- */

/* If abs lies under mount (or is it), the rest as a device path. */
static const char *under(const char *abs, const char *mount)
{
    size_t n = strlen(mount);
    if (n == 1)   /* mounted on "/" */
        return abs;
    if (strncmp(abs, mount, n) || (abs[n] != '/' && abs[n] != '\0'))
        return NULL;
    return abs[n] ? abs + n : "/";
}

static int device_path(const char *path, const char *mnt, char *out, size_t size)
{
    char abs[PATH_MAX], lex[PATH_MAX], real[PATH_MAX];
    if (path[0] == '/' && !under(path, mnt) && (!realpath(mnt, real) || !under(path, real)))
        return snprintf(out, size, "%s", path) >= (int)size ? -ENAMETOOLONG : 0;
    if (mnt_absolute(path, abs, sizeof(abs)) || mnt_absolute(mnt, lex, sizeof(lex)))
        return -ENAMETOOLONG;
    const char *rest = under(abs, lex);
    if (!rest && realpath(mnt, real))
        rest = under(abs, real);
    if (!rest)
        return -EXDEV;
    return snprintf(out, size, "%s", rest) >= (int)size ? -ENAMETOOLONG : 0;
}

/* ---- running -------------------------------------------------------------------- */

static int to_stdout(void *arg, const void *buf, size_t len)
{
    return fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
}

/* The message for a failed run. */
static int report(const struct run_args *a, const struct cisc_prog_run_stats *st, int r)
{
    const char *p = a->prog;
    if (r == -ETIME)
        fprintf(stderr, "cisc run: program '%s' exhausted its instruction budget in one "
                "invocation (raise it with cisc up --prog-budget, or use smaller blocks)\n", p);
    else if (r == -EACCES && st->failed_step == 1)
        fprintf(stderr, "cisc run: program '%s' is not yours and not shared\n", p);
    else if (r == -ENOEXEC)
        fprintf(stderr, "cisc run: program '%s' is stored but no longer verifies "
                "(cisc prog show %s %s)\n", p, a->mnt, p);
    else if (r == -EOVERFLOW)
        fprintf(stderr, "cisc run: the result of one fused op exceeds its capacity (use a "
                "smaller --chunk or a larger --out-cap)\n");
    else if (st->failed_step == 1)
        fprintf(stderr, "cisc run: program '%s' failed: %s (%d)\n", p, strerror(-r), r);
    else if (st->failed_file || st->failed_step == 0 || st->failed_step == 2)
        fprintf(stderr, "cisc run: %s: %s\n",
                st->failed_file == 2 || st->failed_step == 2 ? a->output : a->input,
                strerror(-r));
    else
        fprintf(stderr, "cisc run: %s\n", strerror(-r));
    fputs(a->output ? "cisc run: the output file is unchanged\n" : "", stderr);
    return st->failed_step == 1 || r == -ETIME ? 1 : 2;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_on(struct cisc_queue *q, struct run_args *a, const char *in)
{
    struct cisc_prog_run_stats st;
    double t0 = now_s();
    int r = cisc_prog_run(q, in, &a->o, &st);
    if (fflush(stdout) && !r)
        r = -EIO;
    if (r)
        return report(a, &st, r);
    if (a->verbose)
        fprintf(stderr, "cisc run: %" PRIu64 " bytes read in the device, %" PRIu64 " bytes of "
                "result %s, %" PRIu64 " fused ops, %.3f s\n", st.in_bytes, st.out_bytes,
                a->output ? "written in the device" : "sent to the host", st.ops, now_s() - t0);
    return 0;
}

/* Arena room for one op's result (when it comes back) and the steps: the
 * arena hands out power-of-two blocks, so twice the result's block. */
static uint64_t arena_for(const struct cisc_prog_run_opts *o)
{
    uint64_t bs = o->block_size ? o->block_size : 4096, chunk = o->chunk ? o->chunk : 4u << 20;
    uint64_t bo = o->block_out ? o->block_out : 2 * bs;
    uint64_t need = o->out_cap ? o->out_cap : chunk + 2 * bo, a = 1u << 20;
    while (a < need)
        a <<= 1;
    a *= 2;
    return a < (8u << 20) ? 8u << 20 : a > (1ull << 30) ? 1ull << 30 : a;
}

static int run_run(int argc, char **argv)
{
    struct run_args a = { 0 };
    char in[PATH_MAX], out[PATH_MAX];
    int r = parse_args(argc, argv, &a);
    if (r)
        return r;
    const char *bad = NULL;
    if ((r = device_path(a.input, a.mnt, in, sizeof(in))))
        bad = a.input;
    else if (a.output && (r = device_path(a.output, a.mnt, out, sizeof(out))))
        bad = a.output;
    if (bad)
        return cmd_fail("run", "%s: %s", bad, r == -EXDEV ? "not under the mount point"
                                                         : "path too long");
    a.o.prog = a.prog;
    a.o.output = a.output ? out : NULL;
    a.o.sink = to_stdout;
    struct cisc_session *s;
    struct cisc_queue *q;
    if ((r = cisc_session_open(a.mnt, &s)))
        return cmd_fail("run", "no device at %s: %s", a.mnt, strerror(-r));
    struct cisc_prog_info info;
    struct cisc_queue_params qp = { .arena_size = arena_for(&a.o) };
    if ((r = cisc_prog_show(s, a.prog, &info, NULL, 0)) == 0 &&
        !(r = cisc_queue_create_params(s, &qp, &q)))
        r = run_on(q, &a, in);
    else if (r == -ENOENT)
        r = cmd_fail("run", "no program '%s' on the device (cisc prog list %s)", a.prog, a.mnt);
    else
        r = cmd_fail("run", "%s", strerror(-r));
    cisc_session_close(s);
    return r;
}

const struct cisc_cmd cmd_run = {
    .name = "run",
    .summary = "run a device program over a file, inside the device",
    .usage = run_usage,
    .run = run_run,
};
