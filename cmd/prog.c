/* cmd/prog.c - `cisc prog`: load, list, show and unload the eBPF programs
 * of a running device (through libcisc, <cisc/progs.h>). */
#include "cmd/cmd.h"
#include "cmd/json.h"

#include "bpf/loader.h"

#include <cisc/cisc.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char prog_usage[] =
    "usage: cisc prog load MOUNT PROG.o [--name NAME] [--prog FUNC] [--shared]\n"
    "       cisc prog list [--json] MOUNT\n"
    "       cisc prog show [--json] MOUNT NAME\n"
    "       cisc prog unload MOUNT NAME\n"
    "\n"
    "Manages the eBPF programs of the device serving MOUNT (docs/BPF.md).\n"
    "\n"
    "  load    sends PROG.o (clang -O2 -g -target bpf) to the device, which\n"
    "          verifies it and keeps it in its image (it survives restarts).\n"
    "          --name NAME   name on the device (default: the function's)\n"
    "          --prog FUNC   the function to load when the object has several\n"
    "          --shared      anyone may run it (default: its owner and root)\n"
    "          A rejected program's verifier message is printed; exit 1. A\n"
    "          missing or unreadable PROG.o, or one with several functions\n"
    "          and no --prog, is a usage error: exit 2.\n"
    "  list    every program: id, name, owner, instructions, statistics\n"
    "  show    one program (NAME or id) in detail, with why it does not run\n"
    "          (if it no longer verifies) and its last trace messages\n"
    "  unload  removes a program (its owner or root only)\n"
    "\n"
    "  --json  list: a JSON array of programs; show: one JSON object (with\n"
    "          \"notes\", the status and trace lines)\n"
    "\n"
    "Exit status: 0 success, 1 the operation failed (the program was rejected:\n"
    "by the verifier, a limit of the device, a name taken), 2 usage or\n"
    "environment error (no device, no such program or file, no permission).\n";

static int open_session(const char *mnt, struct cisc_session **s)
{
    int r = cisc_session_open(mnt, s);
    if (r)
        return cmd_fail("prog", "no device at %s: %s", mnt, cisc_strerror(r));
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
    opterr = 0;   /* our own message, "cisc prog: ..." */
    while ((ch = getopt_long(argc, argv, "+:", lo, NULL)) != -1) {
        switch (ch) {
        case 'n': o->name = optarg; break;
        case 'p': o->func = optarg; break;
        case 's': o->shared = 1; break;
        default:
            return cmd_fail("prog", "load: %s '%s' (see cisc prog --help)", ch == ':' ?
                            "option needs a value:" : "unknown option", argv[optind - 1]);
        }
    }
    return 0;
}

/* Reads PROG.o; a usage error (2) when it cannot. */
static int read_object(const char *path, uint8_t **buf, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        return cmd_fail("prog", "%s: %s", path, e == EINVAL ? "not a regular file" : strerror(e));
    }
    *len = (size_t)st.st_size;
    *buf = malloc(*len ? *len : 1);
    ssize_t got = *buf ? pread(fd, *buf, *len, 0) : -1;
    close(fd);
    if (got != (ssize_t)*len) {
        free(*buf);
        return cmd_fail("prog", "%s: %s", path, got < 0 ? strerror(errno) : "short read");
    }
    return 0;
}

/* The choices the command line makes (which function) checked here, so
 * that a wrong choice is a usage error; an object we cannot parse goes
 * to the device, whose verifier says why it is rejected. */
static int check_choice(const char *path, const uint8_t *buf, size_t len, const char *func)
{
    struct vm_object *obj;
    char err[256], names[512];
    if (vm_object_load(buf, len, NULL, &obj, err, sizeof(err)))
        return 0;
    size_t n = 0;
    names[0] = '\0';
    unsigned count = vm_object_nprogs(obj);
    for (unsigned i = 0; i < count && n < sizeof(names); i++)
        n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
                              vm_object_prog(obj, i)->name);
    int r = 0;
    if (func && !vm_object_find(obj, func))
        r = cmd_fail("prog", "%s: no function '%s' (it has: %s)", path, func, names);
    else if (!func && count > 1)
        r = cmd_fail("prog", "%s has %u programs (%s): choose one with --prog", path, count,
                     names);
    vm_object_free(obj);
    return r;
}

/* Exit status of a failed load: the device refused the program (the
 * verifier, its limits, a name taken), unless the device is gone or the
 * caller may not load at all. */
static int load_status(int r)
{
    return r == -ENOTCONN || r == -EPERM || r == -EROFS ? CMD_USAGE : CMD_FAILED;
}

static void print_loaded(const struct cisc_prog_info *info)
{
    char sha[65], owner[64];
    hex(info->sha256, 32, sha);
    printf("loaded '%s' (id %u): function %s, %u instructions, sha256 %s, owner %s%s\n",
           info->name, info->id, info->func, info->insns, sha,
           cmd_user_name(info->owner, owner, sizeof(owner)),
           info->flags & CISC_PROG_SHARED ? ", shared" : "");
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
    uint8_t *obj = NULL;
    size_t len = 0;
    int r = read_object(path, &obj, &len);
    if (!r)
        r = check_choice(path, obj, len, o.func);
    struct cisc_session *s = NULL;
    if (!r)
        r = open_session(mnt, &s);
    if (r) {
        free(obj);
        return r;
    }
    struct cisc_prog_info info;
    char msg[2048] = "";
    r = cisc_prog_load(s, obj, len, &o, &info, msg, sizeof(msg));
    cisc_session_close(s);
    free(obj);
    if (r) {
        fprintf(stderr, "cisc prog: %s: %s\n", path, msg[0] ? msg : strerror(-r));
        return load_status(r);
    }
    print_loaded(&info);
    return 0;
}

/* ---- list ------------------------------------------------------------------ */

static const char *flags_word(uint32_t flags)
{
    return flags & CISC_PROG_BROKEN ? "broken" : flags & CISC_PROG_SHARED ? "shared" : "-";
}

static int list_one(void *arg, const struct cisc_prog_info *i)
{
    int *n = arg;
    char owner[64];
    if ((*n)++ == 0)
        printf("%5s  %-20s %-10s %-7s %6s %8s %11s %13s %6s %6s\n", "ID", "NAME", "OWNER",
               "FLAGS", "INSNS", "RUNS", "INVOCATIONS", "INSNS_RUN", "BUDGET", "ERRORS");
    printf("%5u  %-20s %-10s %-7s %6u %8" PRIu64 " %11" PRIu64 " %13" PRIu64 " %6" PRIu64
           " %6" PRIu64 "\n", i->id, i->name, cmd_user_name(i->owner, owner, sizeof(owner)),
           flags_word(i->flags), i->insns, i->runs, i->invocations, i->insns_run,
           i->budget_hits, i->errors);
    return 0;
}

/* One program as a JSON object (its members; the caller opens it). */
static void json_info(struct json *j, const struct cisc_prog_info *i)
{
    char sha[65], owner[64];
    hex(i->sha256, 32, sha);
    json_u64(j, "id", i->id);
    json_str(j, "name", i->name);
    json_str(j, "function", i->func);
    json_u64(j, "uid", i->owner);
    json_str(j, "owner", cmd_user_name(i->owner, owner, sizeof(owner)));
    json_bool(j, "shared", i->flags & CISC_PROG_SHARED);
    json_bool(j, "broken", i->flags & CISC_PROG_BROKEN);
    json_u64(j, "insns", i->insns);
    json_u64(j, "object_bytes", i->obj_size);
    json_str(j, "sha256", sha);
    json_u64(j, "load_time_ns", i->load_time_ns);
    json_u64(j, "runs", i->runs);
    json_u64(j, "invocations", i->invocations);
    json_u64(j, "insns_run", i->insns_run);
    json_u64(j, "budget_hits", i->budget_hits);
    json_u64(j, "errors", i->errors);
    json_u64(j, "bytes_in", i->bytes_in);
    json_u64(j, "bytes_out", i->bytes_out);
}

static int list_json(void *arg, const struct cisc_prog_info *i)
{
    json_obj_open(arg, NULL);
    json_info(arg, i);
    json_obj_close(arg);
    return 0;
}

/* Takes --json out of argv (anywhere); any other option is an error.
 * Returns 0 with *json set, or 2. */
static int json_flag(int *argc, char **argv, bool *json)
{
    int n = 1;
    *json = false;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--json"))
            *json = true;
        else if (cmd_no_option("prog", argv[i]))
            return CMD_USAGE;
        else
            argv[n++] = argv[i];
    }
    *argc = n;
    return 0;
}

static int prog_list(int argc, char **argv)
{
    bool json;
    if (json_flag(&argc, argv, &json))
        return CMD_USAGE;
    if (argc != 2)
        return cmd_fail("prog", "list wants MOUNT");
    struct cisc_session *s;
    if (open_session(argv[1], &s))
        return 2;
    int n = 0, r;
    struct json j;
    if (json) {
        json_begin(&j, stdout);
        json_arr_open(&j, NULL);
        r = cisc_prog_list(s, list_json, &j);
        json_arr_close(&j);
        json_end(&j);
    } else {
        r = cisc_prog_list(s, list_one, &n);
    }
    cisc_session_close(s);
    if (r)
        return cmd_fail("prog", "list: %s", strerror(-r));
    if (n == 0 && !json)
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
    char owner[64];
    printf("owner         %s (uid %u)\nshared        %s\nstatus        %s\n",
           cmd_user_name(i->owner, owner, sizeof(owner)), i->owner,
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

static void show_json(const struct cisc_prog_info *i, const char *text)
{
    struct json j;
    json_begin(&j, stdout);
    json_obj_open(&j, NULL);
    json_info(&j, i);
    json_str(&j, "notes", text ? text : "");
    json_obj_close(&j);
    json_end(&j);
}

static int prog_show(int argc, char **argv)
{
    bool json;
    if (json_flag(&argc, argv, &json))
        return CMD_USAGE;
    if (argc != 3)
        return cmd_fail("prog", "show wants MOUNT and NAME");
    struct cisc_session *s;
    if (open_session(argv[1], &s))
        return 2;
    struct cisc_prog_info info;
    char *text = calloc(1, 65536);
    int r = text ? cisc_prog_show(s, argv[2], &info, text, 65536) : -ENOMEM;
    cisc_session_close(s);
    if (!r && json)
        show_json(&info, text);
    else if (!r)
        print_info(&info, text);
    free(text);
    return r ? cmd_fail("prog", "show %s: %s", argv[2], r == -ENOENT ? "no such program"
                                                                      : strerror(-r))
             : 0;
}

static int prog_unload(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (cmd_no_option("prog", argv[i]))
            return CMD_USAGE;
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
