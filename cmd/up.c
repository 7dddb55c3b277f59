/* cmd/up.c - `cisc up` and the mount(8) helper (`mount.ciscfs IMAGE DIR
 * -o OPTS`): start a device on an image and mount it. Their options, one
 * table for both, are in cmd/upopts.h. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"
#include "cmd/notify.h"
#include "cmd/upopts.h"

#include "proto/ctl.h"
#include "device/device.h"
#include "device/engine/fused/crash.h"
#include "proto/wire.h"
#include "fusefs/fusefs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --size on an image that exists must say its size: a different one
 * would be silently ignored (growing is `cisc resize`'s job, offline). */
static int check_size(const char *img, uint64_t size)
{
    struct stat st;
    if (stat(img, &st) || (uint64_t)st.st_size == size)
        return 0;
    return cmd_fail("up", "%s exists and holds %llu bytes, not the --size %llu: leave --size "
                    "out to use it as it is, or grow it first with: cisc resize %s %llu",
                    img, (unsigned long long)st.st_size, (unsigned long long)size, img,
                    (unsigned long long)size);
}

/* A missing mount point is created, as mount --mkdir does; one that
 * cannot even be looked at (a dead mount) is left to prepare_mountpoint. */
static int make_mountpoint(const char *mnt)
{
    struct stat st;
    if (!stat(mnt, &st) || errno != ENOENT)
        return 0;
    int r = cmd_mkdir_p(mnt);
    return r ? cmd_fail("up", "cannot create mount point %s: %s", mnt, strerror(-r)) : 0;
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
        int r = check_size(img, o->size);
        if (r)
            return r;
    } else if (o->nmembers ? mnt_absolute(o->image, img, PATH_MAX) != 0
                           : !realpath(o->image, img)) {   /* an array's name need not exist */
        return cmd_fail("up", "image %s: %s (make one with: cisc mkfs %s, or use --size)",
                        o->image, strerror(errno), o->image);
    }
    if (o->mnt)
        return mnt_absolute(o->mnt, mnt, PATH_MAX) ? cmd_fail("up", "bad mount point %s", o->mnt)
                                                   : make_mountpoint(mnt);
    int r = mnt_default(mnt, PATH_MAX);
    if (r)
        return cmd_fail("up", "no default mount point: %s", strerror(-r));
    return make_mountpoint(mnt);
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

struct front {
    struct fusefs *fs;
    const char *mnt;
};

#define STOP_BUSY_TRIES 20          /* a safe stop looks this many times, */
#define STOP_BUSY_PAUSE_US 50000    /* this far apart (1 s in all) */

/* SHUTDOWN (device.h dev_stop_fn). A safe stop unmounts as umount(8)
 * does, which the kernel refuses while the mount is in use; once
 * unmounted, the FUSE loop ends by itself. A file closed a moment ago
 * (a process still exiting, a descriptor in flight) can keep the mount
 * busy for a few milliseconds: look again for up to a second before
 * calling it busy. */
static int stop_hook(void *arg, bool safe)
{
    struct front *f = arg;
    int r = safe ? mnt_unmount(f->mnt) : 0;
    for (int i = 1; r == -EBUSY && i < STOP_BUSY_TRIES; i++) {
        usleep(STOP_BUSY_PAUSE_US);
        r = mnt_unmount(f->mnt);
    }
    if (r == -EBUSY)
        return -EBUSY;   /* other errors: stop as a forced stop would */
    fusefs_exit(f->fs);
    return 0;
}

static void report_ready(int fd, int status)
{
    if (fd < 0)
        return;
    if (write(fd, &status, sizeof(status)) != sizeof(status))
        perror("cisc up: notify");
    close(fd);
}

/* ---- the log ---------------------------------------------------------------- */

/* The log's stdio stream: every line the device writes through stderr
 * (fprintf, perror) gets a UTC timestamp, written synchronously to fd 2
 * (the log file) by the writer itself: a line is in the log when the
 * call that printed it returns. Raw writes to fd 2 (a sanitizer's report,
 * a child process) land in the same file without a stamp. */
struct stamped {
    int fd;
    bool at_start;   /* the next byte begins a line; under the FILE's lock */
};

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static void put_stamp(int fd)
{
    char stamp[64];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    k += (size_t)snprintf(stamp + k, sizeof(stamp) - k, ".%03ldZ ", ts.tv_nsec / 1000000);
    write_all(fd, stamp, k);
}

static ssize_t stamped_write(void *cookie, const char *buf, size_t n)
{
    struct stamped *s = cookie;
    for (size_t i = 0; i < n;) {
        if (s->at_start)
            put_stamp(s->fd);
        const char *nl = memchr(buf + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - buf) + 1 : n;
        if (!write_all(s->fd, buf + i, end - i))
            return -1;
        s->at_start = nl != NULL;
        i = end;
    }
    return (ssize_t)n;
}

/* Replaces stderr by the stamped stream over fd 2 (line-buffered: each
 * line goes out whole). Keeps the old stderr when it cannot. */
static void stamp_stderr(void)
{
    static struct stamped cookie = { .fd = 2, .at_start = true };
    cookie_io_functions_t io = { .write = stamped_write };
    FILE *f = fopencookie(&cookie, "w", io);
    if (!f)
        return;
    setvbuf(f, NULL, _IOLBF, 0);
    fflush(stderr);
    stderr = f;
}

/* The log file, opened for appending (cmd/upopts.c checked it can be). */
static int open_log(const char *log)
{
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        cmd_fail("up", "log %s: %s", log, strerror(errno));
    return fd;
}

/* Once mounted, the device's stderr (and a daemon's stdout) goes to the
 * log, timestamped, or nowhere for a daemon without a log; a daemon's
 * stdin is /dev/null. */
static void detach_stdio(int log_fd, bool daemon)
{
    int in = daemon ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    int out = log_fd >= 0 ? log_fd : daemon ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
    if (in >= 0 && dup2(in, 0) < 0)
        perror("cisc up: stdin");
    if (out >= 0 && ((daemon && dup2(out, 1) < 0) || dup2(out, 2) < 0))
        perror("cisc up: log");
    if (in > 2)
        close(in);
    if (out > 2)
        close(out);
    if (log_fd >= 0)
        stamp_stderr();
}

static void print_ready(const char *img, const char *mnt, const char *sock,
                        const struct up_opts *o)
{
    if (o->helper)
        return;
    printf("ciscfs: %s mounted on %s%s (%u cores, sched %s, dispatch %s, link latency %llu ns, "
           "core speed %.2f)\n", img, mnt, o->dev.read_only ? " read-only" : "",
           o->dev.cores ? o->dev.cores : DEV_DEFAULT_CORES,
           o->dev.sched ? o->dev.sched : "fifo", o->dev.queue_only ? "queue" : "direct",
           (unsigned long long)o->model.link_latency_ns, o->model.core_speed);
    printf("control socket: %s\n", sock);
    printf("status: cisc status %s    stop: cisc down %s\n", mnt, mnt);
    fflush(stdout);
}

/* Test builds (CISC_CRASH_POINTS): a device started by root arms the
 * crash point named by $CISC_CRASH_POINT (fop_crash_arm), so that tests
 * can cut its power at a chosen point of the next fused op. Nobody else
 * can: the variable is read only here, only then. */
static int arm_crash_point(void)
{
#ifdef CISC_CRASH_POINTS
    const char *spec = getenv(FOP_CRASH_ENV);
    if (spec && *spec && geteuid() == 0)
        return fop_crash_arm(spec);
#endif
    return 0;
}

/* Tells systemd (Type=notify, notify.h) that the mount serves. */
static void notify_ready(const char *img, const char *mnt)
{
    char msg[2 * PATH_MAX + 64];
    snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%d\nSTATUS=serving %s on %s", (int)getpid(),
             img, mnt);
    int r = notify_send(msg);
    if (r < 0)
        fprintf(stderr, "cisc up: sd_notify to $NOTIFY_SOCKET failed: %s\n", strerror(-r));
}

/* A device that found its image damaged failed (1); anything else that
 * stops it starting is about its environment (2). */
static int start_status(int r)
{
    return r == -EUCLEAN ? CMD_FAILED : CMD_USAGE;
}

static int run_device(const struct up_opts *o, const char *img, const char *mnt,
                      const char *sock, uint64_t create, int ready_fd)
{
    char err[PATH_MAX + 256];
    struct device *dev;
    struct dev_opts dopts = o->dev;
    dopts.image = img;
    dopts.create_size = create;
    dopts.mountpoint = mnt;
    dopts.control_path = sock;
    dopts.model = &o->model;
    dopts.progs = &o->progs;
    dopts.tx = WIRE_TX_MACRO + o->tx;   /* the table's words in enum wire_tx order */
    dopts.flash = o->media ? &o->flash : NULL;
    dopts.members = (const char *const *)o->member_paths;
    dopts.nmembers = o->nmembers;
    int log_fd = o->log[0] ? open_log(o->log) : -1;
    if (o->log[0] && log_fd < 0) {
        report_ready(ready_fd, -EIO);
        return 2;
    }
    int r = arm_crash_point();
    if (r) {
        cmd_fail("up", "bad %s: %s", FOP_CRASH_ENV, getenv(FOP_CRASH_ENV));
        report_ready(ready_fd, r);
        return 2;
    }
    r = dev_start(&dopts, &dev, err, sizeof(err));
    if (r) {
        cmd_fail("up", "%s", err);
        report_ready(ready_fd, r);
        return start_status(r);
    }
    struct fusefs *fs;
    struct fusefs_opts fo = { .mountpoint = mnt, .fsname = img,
                              .extra = o->fuse_opts[0] ? o->fuse_opts : NULL,
                              .allow_other = geteuid() == 0, .writeback = o->writeback };
    r = fusefs_mount(dev_engine(dev), &fo, &fs, err, sizeof(err));
    if (r) {
        cmd_fail("up", "%s", err);
        dev_stop(dev);
        report_ready(ready_fd, r);
        return 2;
    }
    struct front front = { fs, mnt };
    dev_set_stop_hook(dev, stop_hook, &front);
    r = mnt_reaper_start(mnt);
    if (r)
        fprintf(stderr, "cisc up: no reaper for %s (%s): a killed device relies on "
                "auto_unmount alone\n", mnt, strerror(-r));
    if (ready_fd < 0)
        print_ready(img, mnt, sock, o);
    report_ready(ready_fd, 0);
    if (ready_fd >= 0 || log_fd >= 0) {
        detach_stdio(log_fd, ready_fd >= 0);
        dev_log_notes(dev);
    }
    notify_ready(img, mnt);   /* after detach: a failure is logged */
    int lr = fusefs_loop(fs);
    notify_send("STOPPING=1");   /* notify.h: a failure changes nothing */
    dev_set_stop_hook(dev, NULL, NULL);
    eng_cancel(dev_engine(dev));  /* SIGTERM too: long fused ops stop, the drain is short */
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
        return start_status(status);   /* the device printed why */
    }
    print_ready(img, mnt, sock, o);
    return 0;
}

static int start(const struct up_opts *o)
{
    char img[PATH_MAX], mnt[PATH_MAX], sock[PATH_MAX];
    uint64_t create;
    if (o->dev.trace && !o->log[0] && !o->foreground)
        return cmd_fail("up", "--trace writes to the log: add --log FILE (or stay in the "
                        "foreground with -f, where it goes to standard error)");
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

static int run_up(int argc, char **argv)
{
    struct up_opts o;
    upopts_init(&o);
    int r = upopts_parse_args(argc, argv, &o);
    if (!r)
        r = upopts_members(&o);
    if (!r)
        r = start(&o);
    upopts_free(&o);
    return r;
}

const struct cisc_cmd cmd_up = {
    .name = "up",
    .summary = "start a device on an image and mount it",
    .help = upopts_help,
    .run = run_up,
};

/* ---- mount(8) helper ------------------------------------------------------- */

int cmd_mount_helper(int argc, char **argv)
{
    struct up_opts o;
    upopts_init(&o);
    int r = upopts_parse_helper(argc, argv, &o);
    return r ? r : start(&o);
}
