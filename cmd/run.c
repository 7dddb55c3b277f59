/* cmd/run.c - `cisc run`: a device program over a whole file, in the
 * device (libcisc cisc_prog_run: read -> program -> write fused ops). */
#include "cmd/cmd.h"
#include "cmd/mnt.h"
#include "cmd/runpipe.h"

#include <cisc/cisc.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: cisc run MOUNT --prog NAME --input PATH [--output PATH] [--arg N=V]...\n"
    "                [--block-size N] [--block-out N] [--chunk SIZE] [--out-cap SIZE] [-v] [-q]\n"
    "\n"
    "Runs the device program NAME (cisc prog load) over the whole file PATH\n"
    "inside the device serving MOUNT: the file is read, processed and the\n"
    "result written in the device, one fused op per chunk; only the result\n"
    "leaves the device, and only when it goes to standard output.\n"
    "\n"
    "Paths. PATH names a file of the device, as libcisc's paths do:\n"
    "  /logs/a.log          from the device's root (libcisc: \"/logs/a.log\" or\n"
    "                       \"logs/a.log\")\n"
    "  MOUNT/logs/a.log     a host path under the mount point: the same file\n"
    "  logs/a.log           relative to the current directory, which must be\n"
    "                       inside MOUNT (libcisc, which has no current\n"
    "                       directory in the device, takes it from the root)\n"
    "The input may also come from the host through a pipe: --input - reads\n"
    "standard input, and a pipe given as a path (<(cmd), /dev/stdin, a FIFO)\n"
    "is read from the host; its bytes go to the device chunk by chunk.\n"
    "\n"
    "  --prog NAME      the program (name or id)\n"
    "  --input PATH     the file to process, or - for standard input\n"
    "  --output PATH    where the result goes (replaced only if the whole run\n"
    "                   succeeds); default: standard output\n"
    "  --arg N=V        ctx->arg[N] (N = 0..3): a number (123, -5, 0x1f), or\n"
    "                   str:TEXT, TEXT's bytes spread over arg[N], arg[N+1] ...\n"
    "  --block-size N   bytes per program invocation (default 4096)\n"
    "  --block-out N    output buffer of one invocation (default 2 x block size)\n"
    "  --chunk SIZE     input bytes per fused op (default 4M; 1M from a pipe)\n"
    "  --out-cap SIZE   result bytes one fused op may produce (default: chunk + 2 blocks)\n"
    "  -v               report bytes moved and time on standard error\n"
    "  -q               no progress line (shown on a terminal only: bytes done,\n"
    "                   rate and time left, on standard error, when standard\n"
    "                   error is a terminal and the result does not go to it)\n"
    "\n"
    "Exit status: 0 success, 1 the operation failed (the program's error, its\n"
    "instruction budget, a program that no longer verifies), 2 usage or\n"
    "environment error (no device, no such file or program, no permission,\n"
    "a result larger than --out-cap).\n";

struct run_args {
    const char *mnt, *prog, *input, *output;
    struct cisc_prog_run_opts o;
    bool verbose, quiet;
    int in_fd;          /* >= 0: the input is this pipe of the host */
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
    opterr = 0;   /* our own message, "cisc run: ..." */
    while ((ch = getopt_long(argc, argv, ":vq", lo, NULL)) != -1) {
        switch (ch) {
        case 'p': a->prog = optarg; break;
        case 'i': a->input = optarg; break;
        case 'o': a->output = optarg; break;
        case 'v': a->verbose = true; break;
        case 'q': a->quiet = true; break;
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
        default:
            return cmd_fail("run", "%s '%s' (see cisc run --help)", ch == ':' ?
                            "option needs a value:" : "unknown option", argv[optind - 1]);
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

/* path as a path of the device: 0, -EXDEV (relative, and the current
 * directory is not under the mount) or -ENAMETOOLONG. */
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

/* The input is a pipe of the host: "-", or a host path outside the mount
 * that is a FIFO or a character device (<(cmd) is /dev/fd/N, a pipe). */
static int host_pipe(const char *path, const char *mnt)
{
    char real[PATH_MAX];
    struct stat st;
    if (!strcmp(path, "-"))
        return dup(0);
    if (path[0] != '/' || under(path, mnt) || (realpath(mnt, real) && under(path, real)) ||
        stat(path, &st) || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
        return -1;
    return open(path, O_RDONLY | O_CLOEXEC);
}

static int bad_path(const char *path, const char *mnt, int r)
{
    if (r == -EXDEV)
        return cmd_fail("run", "%s: a relative path is taken from the current directory, "
                        "which is not under the mount point %s (give /%s for a path from "
                        "the device's root)", path, mnt, path);
    return cmd_fail("run", "%s: path too long", path);
}

/* ---- running -------------------------------------------------------------------- */

static int to_stdout(void *arg, const void *buf, size_t len)
{
    return fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
}

/* Exit status of a failed run (cmd.h): the operation failed when the
 * program did (its error, its budget, it no longer verifies); anything
 * else (files, permission, capacity) is an environment or usage error. */
static int run_status(const struct cisc_prog_run_stats *st, int r)
{
    if (r == -ETIME || r == -ENOEXEC)
        return CMD_FAILED;
    if (st->failed_step == 1 && r != -EACCES && r != -EOVERFLOW && r != -ENOTCONN)
        return CMD_FAILED;
    return CMD_USAGE;
}

/* The message for a failed run. */
static int report(const struct run_args *a, const struct cisc_prog_run_stats *st, int r)
{
    const char *p = a->prog;
    const char *in = a->in_fd >= 0 ? (strcmp(a->input, "-") ? a->input : "standard input")
                                   : a->input;
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
                st->failed_file == 2 || st->failed_step == 2 ? a->output : in,
                cisc_strerror(r));
    else
        fprintf(stderr, "cisc run: %s\n", cisc_strerror(r));
    fputs(a->output ? "cisc run: the output file is unchanged\n" : "", stderr);
    return run_status(st, r);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- progress on a terminal ------------------------------------------------ */

struct progress {
    double t0, last;
    bool shown;
};

static void human(double b, char *buf, size_t size)
{
    const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (b >= 1024 && i < 4) {
        b /= 1024;
        i++;
    }
    snprintf(buf, size, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* One line, rewritten in place at most 5 times a second: bytes done (of
 * the total when known), rate, and the time left. */
static void show_progress(void *arg, uint64_t done, uint64_t total)
{
    struct progress *p = arg;
    double now = now_s(), dt = now - p->t0;
    if ((p->shown && now - p->last < 0.2) || dt <= 0)
        return;
    p->last = now;
    char d[32], t[32], r[32], eta[32] = "";
    double rate = (double)done / dt;
    human((double)done, d, sizeof(d));
    human(rate, r, sizeof(r));
    if (total && rate > 0 && done <= total) {
        unsigned long left = (unsigned long)((double)(total - done) / rate + 0.5);
        snprintf(eta, sizeof(eta), ", %lu:%02lu left", left / 60, left % 60);
    }
    if (total)
        human((double)total, t, sizeof(t));
    fprintf(stderr, "\r\033[Kcisc run: %s%s%s, %s/s%s", d, total ? " of " : "",
            total ? t : "", r, eta);
    p->shown = true;
}

static void end_progress(struct progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
}

/* Progress only where a person watches and nothing else is written:
 * standard error is a terminal and the result does not go to it. */
static bool want_progress(const struct run_args *a)
{
    return !a->quiet && isatty(2) && (a->output || !isatty(1));
}

static int run_on(struct cisc_session *s, struct cisc_queue *q, struct run_args *a,
                  const char *in)
{
    struct cisc_prog_run_stats st;
    struct progress pr = { .t0 = now_s() };
    if (want_progress(a)) {
        a->o.progress = show_progress;
        a->o.progress_arg = &pr;
    }
    int r = a->in_fd >= 0 ? runpipe_run(s, q, a->in_fd, &a->o, &st)
                          : cisc_prog_run(q, in, &a->o, &st);
    end_progress(&pr);
    if (fflush(stdout) && !r)
        r = -EIO;
    if (r)
        return report(a, &st, r);
    if (a->verbose)
        fprintf(stderr, "cisc run: %" PRIu64 " bytes read in the device, %" PRIu64 " bytes of "
                "result %s, %" PRIu64 " fused ops, %.3f s\n", st.in_bytes, st.out_bytes,
                a->output ? "written in the device" : "sent to the host", st.ops,
                now_s() - pr.t0);
    return 0;
}

/* Arena room for one op's result (when it comes back) and the steps: the
 * arena hands out power-of-two blocks, so twice the result's block. */
static uint64_t arena_for(const struct cisc_prog_run_opts *o, bool pipe)
{
    uint64_t bs = o->block_size ? o->block_size : 4096, chunk = o->chunk ? o->chunk : 4u << 20;
    uint64_t bo = o->block_out ? o->block_out : 2 * bs;
    if (pipe)
        chunk = runpipe_chunk(o);
    uint64_t need = o->out_cap ? o->out_cap : chunk + 2 * bo, a = 1u << 20;
    if (pipe)
        need += chunk;   /* the input chunk is in the arena too */
    while (a < need)
        a <<= 1;
    a *= 2;
    return a < (8u << 20) ? 8u << 20 : a > (1ull << 30) ? 1ull << 30 : a;
}

static int open_and_run(struct run_args *a, const char *in)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    int r = cisc_session_open(a->mnt, &s);
    if (r)
        return cmd_fail("run", "no device at %s: %s", a->mnt, cisc_strerror(r));
    struct cisc_prog_info info;
    struct cisc_queue_params qp = { .arena_size = arena_for(&a->o, a->in_fd >= 0) };
    if ((r = cisc_prog_show(s, a->prog, &info, NULL, 0)) == 0 &&
        !(r = cisc_queue_create_params(s, &qp, &q)))
        r = run_on(s, q, a, in);
    else if (r == -ENOENT)
        r = cmd_fail("run", "no program '%s' on the device (cisc prog list %s)", a->prog, a->mnt);
    else
        r = cmd_fail("run", "%s", cisc_strerror(r));
    cisc_session_close(s);
    return r;
}

static int run_run(int argc, char **argv)
{
    struct run_args a = { .in_fd = -1 };
    char in[PATH_MAX] = "", out[PATH_MAX];
    int r = parse_args(argc, argv, &a);
    if (r)
        return r;
    a.in_fd = host_pipe(a.input, a.mnt);
    if (a.in_fd < 0 && !strcmp(a.input, "-"))
        return cmd_fail("run", "standard input: %s", strerror(errno));
    if (a.in_fd < 0 && (r = device_path(a.input, a.mnt, in, sizeof(in))))
        return bad_path(a.input, a.mnt, r);
    if (a.output && (r = device_path(a.output, a.mnt, out, sizeof(out)))) {
        if (a.in_fd >= 0)
            close(a.in_fd);
        return bad_path(a.output, a.mnt, r);
    }
    a.o.prog = a.prog;
    a.o.output = a.output ? out : NULL;
    a.o.sink = to_stdout;
    r = open_and_run(&a, in);
    if (a.in_fd >= 0)
        close(a.in_fd);
    return r;
}

const struct cisc_cmd cmd_run = {
    .name = "run",
    .summary = "run a device program over a file, inside the device",
    .usage = run_usage,
    .run = run_run,
};
