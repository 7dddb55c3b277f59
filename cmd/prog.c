/* cmd/prog.c - `cisc prog`: load, list, show and unload the eBPF programs
 * of a running device (through libcisc, <cisc/progs.h>). */
#include "cmd/cmd.h"

#include <cisc/cisc.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char prog_usage[] =
    "usage: cisc prog load MOUNT PROG.o [--name NAME] [--prog FUNC] [--shared]\n"
    "       cisc prog list MOUNT\n"
    "       cisc prog show MOUNT NAME\n"
    "       cisc prog unload MOUNT NAME\n"
    "\n"
    "Manages the eBPF programs of the device serving MOUNT (docs/BPF.md).\n"
    "\n"
    "  load    sends PROG.o (clang -O2 -g -target bpf) to the device, which\n"
    "          verifies it and keeps it in its image (it survives restarts).\n"
    "          --name NAME   name on the device (default: the function's)\n"
    "          --prog FUNC   the function to load when the object has several\n"
    "          --shared      anyone may run it (default: its owner and root)\n"
    "          A rejected program's verifier message is printed; exit 1.\n"
    "  list    every program: id, name, owner, instructions, statistics\n"
    "  show    one program (NAME or id) in detail, with why it does not run\n"
    "          (if it no longer verifies) and its last trace messages\n"
    "  unload  removes a program (its owner or root only)\n"
    "\n"
    "Exit status: 0 ok, 1 the program was rejected, 2 other errors.\n";

static int open_session(const char *mnt, struct cisc_session **s)
{
    int r = cisc_session_open(mnt, s);
    if (r)
        return cmd_fail("prog", "no device at %s: %s", mnt, strerror(-r));
    return 0;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void when(uint64_t ns, char *buf, size_t size)
{
    time_t t = (time_t)(ns / 1000000000u);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, size, "%" PRIu64, ns);
}

/* ---- load ------------------------------------------------------------------ */

static int load_args(int argc, char **argv, struct cisc_prog_load_opts *o)
{
    static const struct option lo[] = {
        { "name", required_argument, NULL, 'n' }, { "prog", required_argument, NULL, 'p' },
        { "shared", no_argument, NULL, 's' }, { NULL, 0, NULL, 0 },
    };
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
        switch (ch) {
        case 'n': o->name = optarg; break;
        case 'p': o->func = optarg; break;
        case 's': o->shared = 1; break;
        default: fputs(prog_usage, stderr); return 2;
        }
    }
    return 0;
}

static int prog_load(int argc, char **argv)
{
    struct cisc_prog_load_opts o = { 0 };
    /* argv: load MOUNT PROG.o [options]; options may also come first */
    if (argc < 3)
        return cmd_fail("prog", "load wants MOUNT and PROG.o");
    const char *mnt = argv[1], *path = argv[2];
    if (load_args(argc - 2, argv + 2, &o))
        return 2;
    if (optind + 2 != argc)
        return cmd_fail("prog", "load: unexpected argument '%s'", argv[optind + 2]);
    struct cisc_session *s;
    if (open_session(mnt, &s))
        return 2;
    struct cisc_prog_info info;
    char msg[2048];
    int r = cisc_prog_load_file(s, path, &o, &info, msg, sizeof(msg));
    cisc_session_close(s);
    if (r) {
        fprintf(stderr, "cisc prog: %s: %s\n", path, msg[0] ? msg : strerror(-r));
        return r == -ENOTCONN || r == -ENOMEM ? 2 : 1;
    }
    char sha[65];
    hex(info.sha256, 32, sha);
    printf("loaded '%s' (id %u): function %s, %u instructions, sha256 %s, owner uid %u%s\n",
           info.name, info.id, info.func, info.insns, sha, info.owner,
           info.flags & CISC_PROG_SHARED ? ", shared" : "");
    return 0;
}

/* ---- list ------------------------------------------------------------------ */

static int list_one(void *arg, const struct cisc_prog_info *i)
{
    int *n = arg;
    if ((*n)++ == 0)
        printf("%5s  %-20s %6s  %-7s %6s %8s %11s %13s %6s %6s\n", "ID", "NAME", "OWNER",
               "FLAGS", "INSNS", "RUNS", "INVOCATIONS", "INSNS_RUN", "BUDGET", "ERRORS");
    const char *fl = i->flags & CISC_PROG_BROKEN ? "broken"
                     : i->flags & CISC_PROG_SHARED ? "shared" : "-";
    printf("%5u  %-20s %6u  %-7s %6u %8" PRIu64 " %11" PRIu64 " %13" PRIu64 " %6" PRIu64
           " %6" PRIu64 "\n", i->id, i->name, i->owner, fl, i->insns, i->runs, i->invocations,
           i->insns_run, i->budget_hits, i->errors);
    return 0;
}

static int prog_list(int argc, char **argv)
{
    if (argc != 2)
        return cmd_fail("prog", "list wants MOUNT");
    struct cisc_session *s;
    if (open_session(argv[1], &s))
        return 2;
    int n = 0;
    int r = cisc_prog_list(s, list_one, &n);
    cisc_session_close(s);
    if (r)
        return cmd_fail("prog", "list: %s", strerror(-r));
    if (n == 0)
        printf("no programs\n");
    return 0;
}

/* ---- show, unload ---------------------------------------------------------- */

static void print_info(const struct cisc_prog_info *i, const char *text)
{
    char sha[65], t[64];
    hex(i->sha256, 32, sha);
    when(i->load_time_ns, t, sizeof(t));
    printf("id            %u\nname          %s\nfunction      %s\n", i->id, i->name, i->func);
    printf("owner         uid %u\nshared        %s\nstatus        %s\n", i->owner,
           i->flags & CISC_PROG_SHARED ? "yes" : "no",
           i->flags & CISC_PROG_BROKEN ? "broken (not run)" : "verified");
    printf("instructions  %u\nobject        %u bytes, sha256 %s\nloaded        %s\n", i->insns,
           i->obj_size, sha, t);
    printf("runs          %" PRIu64 "\ninvocations   %" PRIu64 "\ninsns run     %" PRIu64 "\n",
           i->runs, i->invocations, i->insns_run);
    printf("budget hits   %" PRIu64 "\nerrors        %" PRIu64 "\n", i->budget_hits, i->errors);
    printf("bytes in      %" PRIu64 "\nbytes out     %" PRIu64 "\n", i->bytes_in, i->bytes_out);
    if (text && *text)
        fputs(text, stdout);
}

static int prog_show(int argc, char **argv)
{
    if (argc != 3)
        return cmd_fail("prog", "show wants MOUNT and NAME");
    struct cisc_session *s;
    if (open_session(argv[1], &s))
        return 2;
    struct cisc_prog_info info;
    char *text = calloc(1, 65536);
    int r = text ? cisc_prog_show(s, argv[2], &info, text, 65536) : -ENOMEM;
    cisc_session_close(s);
    if (!r)
        print_info(&info, text);
    free(text);
    return r ? cmd_fail("prog", "show %s: %s", argv[2], r == -ENOENT ? "no such program"
                                                                      : strerror(-r))
             : 0;
}

static int prog_unload(int argc, char **argv)
{
    if (argc != 3)
        return cmd_fail("prog", "unload wants MOUNT and NAME");
    struct cisc_session *s;
    if (open_session(argv[1], &s))
        return 2;
    int r = cisc_prog_unload(s, argv[2]);
    cisc_session_close(s);
    if (r == -EPERM)
        return cmd_fail("prog", "unload %s: only its owner or root may unload it", argv[2]);
    if (r)
        return cmd_fail("prog", "unload %s: %s", argv[2],
                        r == -ENOENT ? "no such program" : strerror(-r));
    printf("unloaded '%s'\n", argv[2]);
    return 0;
}

static int run_prog(int argc, char **argv)
{
    if (argc < 2) {
        fputs(prog_usage, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "load"))
        return prog_load(argc - 1, argv + 1);
    if (!strcmp(sub, "list"))
        return prog_list(argc - 1, argv + 1);
    if (!strcmp(sub, "show"))
        return prog_show(argc - 1, argv + 1);
    if (!strcmp(sub, "unload"))
        return prog_unload(argc - 1, argv + 1);
    return cmd_fail("prog", "unknown subcommand '%s' (load, list, show, unload)", sub);
}

const struct cisc_cmd cmd_prog = {
    .name = "prog",
    .summary = "load, list, show and unload a device's eBPF programs",
    .usage = prog_usage,
    .run = run_prog,
};
