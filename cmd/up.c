/* cmd/up.c - `cisc up`: start a device on an image and mount it; also the
 * mount(8) helper (`mount.ciscfs IMAGE DIR -o OPTS`). */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "proto/ctl.h"
#include "device/device.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct up_opts {
    bool foreground;
    unsigned cores;
    const char *sched;
    const char *log;
    uint64_t size;            /* --size: create IMAGE if missing */
    bool quiet;               /* mount helper: no "mounted" message */
    bool trace;               /* --trace: log every command */
    bool queue_only;          /* --dispatch queue */
    struct dm_model model;    /* --link-latency-ns, --core-speed */
    unsigned pollers;         /* --pollers */
    int poll_us;              /* --poll-us, -1 = default */
    struct progs_limits progs;  /* --max-progs, --max-prog-insns, --prog-budget */
    char fuse_opts[1024];     /* passed through to the FUSE mount */
    const char *image, *mnt;
};

static const char up_usage[] =
    "usage: cisc up [-f] [--cores N] [--sched fifo] [--link-latency-ns N] [--core-speed F]\n"
    "               [--log FILE] [-o OPTS] [IMAGE [MOUNTPOINT]]\n"
    "\n"
    "Starts a device on IMAGE and mounts its file system on MOUNTPOINT.\n"
    "With no IMAGE, uses $XDG_DATA_HOME/ciscfs/default.img (1 GiB, made on\n"
    "first use) and mounts it on $XDG_DATA_HOME/ciscfs/mnt. The control\n"
    "socket is .NAME.cisc.sock beside the mount point.\n"
    "\n"
    "  -f, --foreground   stay in the foreground (default: return once mounted)\n"
    "  --cores N          device cores (worker threads), default 4\n"
    "  --sched NAME       scheduler for the device cores: fifo\n"
    "  --log FILE         where the daemon writes its messages (default: none)\n"
    "  --size SIZE        create and format IMAGE with this size if it is missing\n"
    "  --trace            log every command the device runs (to the log)\n"
    "  --dispatch MODE    direct (default): an idle device runs a command on the\n"
    "                     thread that submitted it, in a free core's slot;\n"
    "                     queue: every command is handed to a core thread\n"
    "  --link-latency-ns N  host<->device link latency, charged per crossing\n"
    "                     (libcisc submission fetch, completion post); default 900,\n"
    "                     0 disables\n"
    "  --core-speed F     device cores are F times slower than the host for\n"
    "                     compute steps (>= 1.0, default 1.0)\n"
    "  --pollers N        threads polling libcisc queue pairs (1..16, default 1)\n"
    "  --poll-us N        pollers spin N microseconds before sleeping (default 50)\n"
    "  --max-progs N      eBPF programs the device may hold (default 64)\n"
    "  --max-prog-insns N instructions of all its programs together (default 1000000)\n"
    "  --prog-budget N    instructions a program may run per invocation (one block)\n"
    "                     before it is stopped (default 1000000)\n"
    "  -o OPTS            extra FUSE mount options (e.g. ro)\n"
    "\n"
    "Stop it with: cisc down MOUNTPOINT (or SIGTERM/SIGINT to the device).\n";

static int parse_cores(const char *s, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1 || v > SCHED_MAX_CORES)
        return cmd_fail("up", "--cores wants a number from 1 to %u, not '%s'",
                        SCHED_MAX_CORES, s);
    *out = (unsigned)v;
    return 0;
}

static void add_fuse_opt(struct up_opts *o, const char *opt)
{
    size_t len = strlen(o->fuse_opts);
    if (len + strlen(opt) + 2 >= sizeof(o->fuse_opts))
        return;
    if (len)
        strcat(o->fuse_opts, ",");
    strcat(o->fuse_opts, opt);
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno || v > max)
        return -1;
    *out = v;
    return 0;
}

/* The program limits (letters M I B); 0 is refused (it would mean "default"). */
static int progs_opt(struct up_opts *o, int ch, const char *arg)
{
    unsigned long v;
    static const char *const names[] = { "--max-progs", "--max-prog-insns", "--prog-budget" };
    int which = ch == 'M' ? 0 : ch == 'I' ? 1 : 2;
    unsigned long max = which == 0 ? 65536 : which == 1 ? 1ul << 32 : PROGS_MAX_BUDGET;
    if (parse_ulong(arg, max, &v) || v == 0)
        return cmd_fail("up", "%s wants 1..%lu, not '%s'", names[which], max, arg);
    if (which == 0)
        o->progs.max_progs = (uint32_t)v;
    else if (which == 1)
        o->progs.max_insns = v;
    else
        o->progs.budget = v;
    return 0;
}

/* The device-model options (command line letters L S P U). */
static int model_opt(struct up_opts *o, int ch, const char *arg)
{
    unsigned long v;
    char *end;
    switch (ch) {
    case 'L':
        if (parse_ulong(arg, DM_LINK_MAX_NS, &v))
            return cmd_fail("up", "--link-latency-ns wants 0..%u, not '%s'", DM_LINK_MAX_NS, arg);
        o->model.link_latency_ns = v;
        return 0;
    case 'S':
        o->model.core_speed = strtod(arg, &end);
        if (*arg == '\0' || *end != '\0' || !(o->model.core_speed >= 1.0) ||
            o->model.core_speed > DM_CORE_SPEED_MAX)
            return cmd_fail("up", "--core-speed wants a factor from 1.0 to %g, not '%s'",
                            DM_CORE_SPEED_MAX, arg);
        return 0;
    case 'P':
        if (parse_ulong(arg, QP_MAX_POLLERS, &v) || v == 0)
            return cmd_fail("up", "--pollers wants 1..%u, not '%s'", QP_MAX_POLLERS, arg);
        o->pollers = (unsigned)v;
        return 0;
    default:
        if (parse_ulong(arg, 1000000, &v))
            return cmd_fail("up", "--poll-us wants 0..1000000, not '%s'", arg);
        o->poll_us = (int)v;
        return 0;
    }
}

static int parse_args(int argc, char **argv, struct up_opts *o)
{
    static const struct option lo[] = {
        { "foreground", no_argument, NULL, 'f' }, { "cores", required_argument, NULL, 'c' },
        { "sched", required_argument, NULL, 's' }, { "log", required_argument, NULL, 'l' },
        { "size", required_argument, NULL, 'z' }, { "trace", no_argument, NULL, 't' },
        { "dispatch", required_argument, NULL, 'd' },
        { "link-latency-ns", required_argument, NULL, 'L' },
        { "core-speed", required_argument, NULL, 'S' },
        { "pollers", required_argument, NULL, 'P' },
        { "poll-us", required_argument, NULL, 'U' },
        { "max-progs", required_argument, NULL, 'M' },
        { "max-prog-insns", required_argument, NULL, 'I' },
        { "prog-budget", required_argument, NULL, 'B' },
        { NULL, 0, NULL, 0 },
    };
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "+fo:", lo, NULL)) != -1) {
        switch (ch) {
        case 'f': o->foreground = true; break;
        case 'c': if (parse_cores(optarg, &o->cores)) return 2; break;
        case 's': o->sched = optarg; break;
        case 'l': o->log = optarg; break;
        case 'o': add_fuse_opt(o, optarg); break;
        case 't': o->trace = true; break;
        case 'd':
            if (strcmp(optarg, "direct") && strcmp(optarg, "queue"))
                return cmd_fail("up", "--dispatch wants direct or queue, not '%s'", optarg);
            o->queue_only = !strcmp(optarg, "queue");
            break;
        case 'z':
            if (cmd_parse_size(optarg, &o->size) || o->size < (1u << 20))
                return cmd_fail("up", "--size wants a size of at least 1M, not '%s'", optarg);
            break;
        case 'L': case 'S': case 'P': case 'U':
            if (model_opt(o, ch, optarg))
                return 2;
            break;
        case 'M': case 'I': case 'B':
            if (progs_opt(o, ch, optarg))
                return 2;
            break;
        default: fputs(up_usage, stderr); return 2;
        }
    }
    if (argc - optind > 2)
        return cmd_fail("up", "too many arguments (want [IMAGE [MOUNTPOINT]])");
    o->image = optind < argc ? argv[optind] : NULL;
    o->mnt = optind + 1 < argc ? argv[optind + 1] : NULL;
    return 0;
}

/* Image and mount point as absolute paths; the default ones when absent. */
static int resolve_paths(const struct up_opts *o, char *img, char *mnt, uint64_t *create)
{
    *create = 0;
    if (!o->image) {
        int r = cmd_default_image(img, PATH_MAX);
        if (r)
            return cmd_fail("up", "no default image path (set HOME or XDG_DATA_HOME): %s",
                            strerror(-r));
        *create = DEV_DEFAULT_SIZE;
    } else if (o->size && mnt_absolute(o->image, img, PATH_MAX) == 0) {
        *create = o->size;
    } else if (!realpath(o->image, img)) {
        return cmd_fail("up", "image %s: %s (make one with: cisc mkfs %s, or use --size)",
                        o->image, strerror(errno), o->image);
    }
    if (o->mnt)
        return mnt_absolute(o->mnt, mnt, PATH_MAX) ? cmd_fail("up", "bad mount point %s", o->mnt)
                                                   : 0;
    int r = mnt_default(mnt, PATH_MAX);
    if (r)
        return cmd_fail("up", "no default mount point: %s", strerror(-r));
    if (mkdir(mnt, 0755) && errno != EEXIST)
        return cmd_fail("up", "cannot create mount point %s: %s", mnt, strerror(errno));
    return 0;
}

/* Refuses a live mount; detaches a dead ciscfs mount left by a killed device. */
static int prepare_mountpoint(const char *mnt)
{
    struct stat st;
    if (stat(mnt, &st) && errno == ENOTCONN) {
        if (!mnt_is_ciscfs(mnt))
            return cmd_fail("up", "%s is a dead mount of another file system", mnt);
        if (mnt_detach(mnt))
            return cmd_fail("up", "cannot detach the dead mount on %s: %s", mnt, strerror(errno));
        fprintf(stderr, "cisc up: detached the dead ciscfs mount on %s\n", mnt);
    }
    if (stat(mnt, &st))
        return cmd_fail("up", "mount point %s: %s", mnt, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cmd_fail("up", "mount point %s is not a directory", mnt);
    if (mnt_is_ciscfs(mnt))
        return cmd_fail("up", "%s is already a ciscfs mount (cisc down %s first)", mnt, mnt);
    return 0;
}

/* ---- the running device -------------------------------------------------- */

static void stop_hook(void *arg)
{
    fusefs_exit(arg);
}

static void report_ready(int fd, int status)
{
    if (fd < 0)
        return;
    if (write(fd, &status, sizeof(status)) != sizeof(status))
        perror("cisc up: notify");
    close(fd);
}

/* After start-up the daemon's stdio goes to the log (or nowhere). */
static void detach_stdio(const char *log)
{
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    if (out < 0)
        out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (in >= 0 && dup2(in, 0) < 0)
        perror("cisc up: stdin");
    if (out >= 0 && (dup2(out, 1) < 0 || dup2(out, 2) < 0))
        perror("cisc up: log");
    if (in > 2)
        close(in);
    if (out > 2)
        close(out);
}

static void print_ready(const char *img, const char *mnt, const char *sock,
                        const struct up_opts *o)
{
    if (o->quiet)
        return;
    printf("ciscfs: %s mounted on %s (%u cores, sched %s, dispatch %s, link latency %llu ns, "
           "core speed %.2f)\n", img, mnt, o->cores ? o->cores : DEV_DEFAULT_CORES,
           o->sched ? o->sched : "fifo", o->queue_only ? "queue" : "direct",
           (unsigned long long)o->model.link_latency_ns, o->model.core_speed);
    printf("control socket: %s\n", sock);
    printf("status: cisc status %s    stop: cisc down %s\n", mnt, mnt);
    fflush(stdout);
}

static int run_device(const struct up_opts *o, const char *img, const char *mnt,
                      const char *sock, uint64_t create, int ready_fd)
{
    char err[PATH_MAX + 256];
    struct device *dev;
    struct dev_opts dopts = { img, create, mnt, sock, o->cores, o->sched, o->trace,
                              o->queue_only, &o->model, o->pollers, o->poll_us, &o->progs };
    int r = dev_start(&dopts, &dev, err, sizeof(err));
    if (r) {
        cmd_fail("up", "%s", err);
        report_ready(ready_fd, r);
        return 2;
    }
    struct fusefs *fs;
    struct fusefs_opts fo = { mnt, img, o->fuse_opts[0] ? o->fuse_opts : NULL, geteuid() == 0, 0 };
    r = fusefs_mount(dev_engine(dev), &fo, &fs, err, sizeof(err));
    if (r) {
        cmd_fail("up", "%s", err);
        dev_stop(dev);
        report_ready(ready_fd, r);
        return 2;
    }
    dev_set_stop_hook(dev, stop_hook, fs);
    r = mnt_reaper_start(mnt);
    if (r)
        fprintf(stderr, "cisc up: no reaper for %s (%s): a killed device relies on "
                "auto_unmount alone\n", mnt, strerror(-r));
    if (ready_fd < 0)
        print_ready(img, mnt, sock, o);
    report_ready(ready_fd, 0);
    if (ready_fd >= 0) {
        detach_stdio(o->log);
        dev_log_notes(dev);
    }
    int lr = fusefs_loop(fs);
    dev_set_stop_hook(dev, NULL, NULL);
    eng_drain(dev_engine(dev));   /* device cores reply through the session */
    fusefs_destroy(fs);
    r = dev_stop(dev);
    if (lr || r)
        fprintf(stderr, "cisc up: device stopped with errors: loop %d, unmount %d\n", lr, r);
    return lr || r ? 1 : 0;
}

/* Parent side of daemonizing: waits until the device is mounted or failed. */
static int wait_ready(pid_t pid, int fd, const char *img, const char *mnt, const char *sock,
                      const struct up_opts *o)
{
    int status;
    ssize_t n;
    do
        n = read(fd, &status, sizeof(status));
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n != sizeof(status)) {
        waitpid(pid, NULL, WNOHANG);
        return cmd_fail("up", "the device exited during start-up");
    }
    if (status != 0) {
        waitpid(pid, NULL, 0);
        return 2;   /* the device printed why */
    }
    print_ready(img, mnt, sock, o);
    return 0;
}

static int start(const struct up_opts *o)
{
    char img[PATH_MAX], mnt[PATH_MAX], sock[PATH_MAX];
    uint64_t create;
    int r = resolve_paths(o, img, mnt, &create);
    if (!r)
        r = prepare_mountpoint(mnt);
    if (r)
        return r;
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return cmd_fail("up", "mount point path too long: %s", mnt);
    if (o->foreground)
        return run_device(o, img, mnt, sock, create, -1);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC))
        return cmd_fail("up", "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return cmd_fail("up", "fork: %s", strerror(errno));
    if (pid > 0) {
        close(pfd[1]);
        return wait_ready(pid, pfd[0], img, mnt, sock, o);
    }
    close(pfd[0]);
    setsid();
    /* Hold no directory busy: every path is absolute by now. */
    if (chdir("/"))
        perror("cisc up: chdir /");
    exit(run_device(o, img, mnt, sock, create, pfd[1]));
}

/* Defaults of the options a zeroed struct does not express. */
static void up_defaults(struct up_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->model = (struct dm_model){ DM_DEFAULT_LINK_NS, 1.0 };
    o->poll_us = -1;
}

static int run_up(int argc, char **argv)
{
    struct up_opts o;
    up_defaults(&o);
    char log[PATH_MAX];
    int r = parse_args(argc, argv, &o);
    if (!r && o.log) {
        if (mnt_absolute(o.log, log, sizeof(log)))
            return cmd_fail("up", "bad log path %s", o.log);
        o.log = log;
    }
    return r ? r : start(&o);
}

const struct cisc_cmd cmd_up = {
    .name = "up",
    .summary = "start a device on an image and mount it",
    .usage = up_usage,
    .run = run_up,
};

/* ---- mount(8) helper ------------------------------------------------------- */

/* Options mount(8) passes that mean nothing to us or are the default. */
static bool ignored_opt(const char *opt)
{
    static const char *const ign[] = { "rw", "defaults", "auto", "noauto", "user", "users",
                                       "nouser", "_netdev", "nofail", "dev", "suid", "exec",
                                       "async", "relatime", "nodev", "nosuid", "noexec" };
    for (size_t i = 0; i < sizeof(ign) / sizeof(ign[0]); i++)
        if (!strcmp(opt, ign[i]))
            return true;
    return !strncmp(opt, "x-", 2) || !strncmp(opt, "comment=", 8);
}

static int helper_opt(struct up_opts *o, char *opt)
{
    if (!strncmp(opt, "cores=", 6))
        return parse_cores(opt + 6, &o->cores);
    if (!strncmp(opt, "sched=", 6))
        o->sched = opt + 6;
    else if (!strncmp(opt, "log=", 4))
        o->log = opt + 4;
    else if (!strncmp(opt, "size=", 5))
        return cmd_parse_size(opt + 5, &o->size) ? cmd_fail("up", "bad size= '%s'", opt + 5) : 0;
    else if (!strcmp(opt, "trace"))
        o->trace = true;
    else if (!strcmp(opt, "dispatch=queue"))
        o->queue_only = true;
    else if (!strcmp(opt, "foreground"))
        o->foreground = true;
    else if (!strncmp(opt, "link_latency_ns=", 16))
        return model_opt(o, 'L', opt + 16);
    else if (!strncmp(opt, "core_speed=", 11))
        return model_opt(o, 'S', opt + 11);
    else if (!strncmp(opt, "pollers=", 8))
        return model_opt(o, 'P', opt + 8);
    else if (!strncmp(opt, "poll_us=", 8))
        return model_opt(o, 'U', opt + 8);
    else if (!strncmp(opt, "max_progs=", 10))
        return progs_opt(o, 'M', opt + 10);
    else if (!strncmp(opt, "max_prog_insns=", 15))
        return progs_opt(o, 'I', opt + 15);
    else if (!strncmp(opt, "prog_budget=", 12))
        return progs_opt(o, 'B', opt + 12);
    else if (!ignored_opt(opt))
        add_fuse_opt(o, opt);
    return 0;
}

static int helper_opts(struct up_opts *o, char *list)
{
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (helper_opt(o, t))
            return 2;
    return 0;
}

int cmd_mount_helper(int argc, char **argv)
{
    struct up_opts o;
    up_defaults(&o);
    const char *pos[2] = { NULL, NULL };
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            if (helper_opts(&o, argv[++i]))
                return 2;
        } else if (argv[i][0] == '-') {
            continue;   /* -n, -s, -v, -f (fake) ... from mount(8) */
        } else if (npos < 2) {
            pos[npos++] = argv[i];
        }
    }
    if (npos != 2) {
        fputs("usage: mount.ciscfs IMAGE MOUNTPOINT [-o cores=N,sched=fifo,log=FILE,...]\n",
              stderr);
        return 2;
    }
    o.image = pos[0];
    o.mnt = pos[1];
    o.quiet = true;
    char log[PATH_MAX];
    if (o.log && !mnt_absolute(o.log, log, sizeof(log)))
        o.log = log;
    return start(&o);
}
