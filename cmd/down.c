/* cmd/down.c - `cisc down`: ask a device to unmount, checkpoint and stop. */
#include "cmd/cmd.h"
#include "cmd/holders.h"
#include "cmd/mnt.h"

#include "common/le.h"
#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char down_usage[] =
    "usage: cisc down [--lazy | --force] [MOUNTPOINT]\n"
    "\n"
    "Unmounts the ciscfs mount at MOUNTPOINT (default: the default mount),\n"
    "checkpoints its journal and stops its device; returns when the image\n"
    "is clean and unlocked. A mount whose device died is detached.\n"
    "\n"
    "Like umount, it refuses a mount in use (\"target is busy\": a file open,\n"
    "a working directory inside) and names the processes that hold it.\n"
    "  --lazy    detach the mount now, as umount -l: the files open keep\n"
    "            working, and the device stops cleanly when the last closes\n"
    "  --force   stop now: files still open fail (ENOTCONN) and their later\n"
    "            writes are lost; what was written before is kept. SIGTERM\n"
    "            to the device is the same forced stop\n"
    "\n" CMD_EXIT_HELP;

/* Target mount point from argv, or the default one. */
int cmd_target_mount(const char *cmd, int argc, char **argv, char *mnt, size_t size)
{
    for (int i = 1; i < argc; i++)
        if (cmd_no_option(cmd, argv[i]))
            return CMD_USAGE;
    int r = argc > 1 ? mnt_absolute(argv[1], mnt, size) : mnt_default(mnt, size);
    if (argc > 2)
        return cmd_fail(cmd, "too many arguments");
    return r ? cmd_fail(cmd, "bad mount point: %s", strerror(-r)) : 0;
}

static int no_device(const char *mnt, const char *sock, int err)
{
    if (!mnt_is_ciscfs(mnt))
        return cmd_fail("down", "no ciscfs device at %s (%s: %s)", mnt, sock, strerror(-err));
    if (mnt_detach(mnt))
        return cmd_fail("down", "no device answers at %s and detaching %s failed: %s", sock,
                        mnt, strerror(errno));
    printf("cisc down: no device answered; detached the dead mount on %s\n", mnt);
    return 0;
}

#define HOLDERS_SHOWN 16u

/* The refusal of a busy mount, naming what holds it. Returns 1. */
static int busy(const char *mnt)
{
    struct mnt_holder h[HOLDERS_SHOWN];
    int n = mnt_holders(mnt, h, HOLDERS_SHOWN);
    fprintf(stderr, "cisc down: %s: target is busy%s\n", mnt,
            n > 0 ? "; held by:" : " (held by processes this user cannot see)");
    if (n > 0)
        mnt_holders_print(stderr, h, (unsigned)n < HOLDERS_SHOWN ? (unsigned)n : HOLDERS_SHOWN,
                          (unsigned)n);
    fprintf(stderr, "close them, or choose: cisc down --lazy %s (detach now, stop when the "
            "last file closes) or --force (stop now; their later writes are lost)\n", mnt);
    return 1;
}

/* --lazy: umount -l; the device stops by itself when the mount's last
 * user is gone (the kernel then ends its FUSE session). */
static int lazy(const char *mnt)
{
    if (!mnt_is_ciscfs(mnt))
        return cmd_fail("down", "no ciscfs mount at %s", mnt);
    if (mnt_detach(mnt))
        return cmd_failed("down", "cannot detach %s: %s", mnt, strerror(errno));
    printf("cisc down: %s detached; its device stops when the last file open in it is "
           "closed\n", mnt);
    return 0;
}

/* Asks the device to stop (safe: refuse a busy mount) and waits until it
 * has; *status is the device's answer. Returns 0, -ECONNRESET/-EPIPE when
 * the device closed the connection unanswered (it was dying), or 2 after
 * printing why the request failed. */
static int shutdown_device(int fd, bool safe, const char *sock, int *status)
{
    uint8_t flags[4];
    le32_put(flags, safe ? CTL_SHUTDOWN_SAFE : 0);
    char dummy[4];
    *status = 0;
    ssize_t n = ctl_call(fd, CTL_SHUTDOWN, flags, sizeof(flags), status, dummy, sizeof(dummy));
    /* A refusal comes at once and the device goes on: nothing to wait for.
     * Otherwise the device closes the socket as it exits. */
    if (n >= 0 && !*status) {
        while (read(fd, dummy, sizeof(dummy)) > 0)
            ;
    }
    if (n == -ECONNRESET || n == -EPIPE)
        return (int)n;   /* died unanswered: the caller's dead-mount path */
    return n < 0 ? cmd_failed("down", "device at %s: %s", sock, strerror((int)-n)) : 0;
}

/* A pidfd for the process at the other end of the control socket (the
 * kernel's answer, SO_PEERCRED), taken before asking it to stop so that
 * the pid cannot be reused meanwhile; -1 where the kernel has none. */
static int device_pidfd(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.pid <= 0)
        return -1;
    return (int)syscall(SYS_pidfd_open, cr.pid, 0);
}

/* The device closes its control socket while its last threads may still
 * be exiting; the image's lock goes with the process. Waits (up to 10 s)
 * until the whole process is gone, so that "down" means "unlocked". */
static void wait_exit(int pidfd)
{
    if (pidfd < 0)
        return;
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    while (poll(&p, 1, 10000) < 0 && errno == EINTR)
        ;
}

/* Takes --lazy/--force wherever they are; leaves the other arguments
 * (the mount point) at argv[1..], for cmd_target_mount. */
static int parse_down(int *argc, char **argv, bool *lazy_, bool *force)
{
    int n = 1;
    for (int k = 1; k < *argc; k++) {
        const char *a = argv[k];
        if (a[0] != '-' || !a[1])
            argv[n++] = argv[k];
        else if (!strcmp(a, "--lazy") || !strcmp(a, "-l"))
            *lazy_ = true;
        else if (!strcmp(a, "--force") || !strcmp(a, "-f"))
            *force = true;
        else
            return cmd_fail("down", "bad option '%s' (see cisc down --help)", a);
    }
    *argc = n;
    if (*lazy_ && *force)
        return cmd_fail("down", "--lazy and --force are two different choices: pick one");
    return 0;
}

static int run_down(int argc, char **argv)
{
    char mnt[PATH_MAX], sock[PATH_MAX];
    bool lazy_ = false, force = false;
    int r = parse_down(&argc, argv, &lazy_, &force);
    if (!r)
        r = cmd_target_mount("down", argc, argv, mnt, sizeof(mnt));
    if (r)
        return r;
    if (lazy_)
        return lazy(mnt);
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return cmd_fail("down", "mount point path too long");
    int fd = ctl_connect(sock);
    if (fd < 0)
        return no_device(mnt, sock, fd);
    int status;
    int pidfd = device_pidfd(fd);
    r = shutdown_device(fd, !force, sock, &status);
    close(fd);
    if (r == -ECONNRESET || r == -EPIPE) {
        /* A device killed as we connected: its socket took the connection
         * and closed unanswered. Once it is gone, it is a dead mount. */
        wait_exit(pidfd);
        if (pidfd >= 0)
            close(pidfd);
        return no_device(mnt, sock, r);
    }
    if (!r && !status)
        wait_exit(pidfd);
    if (pidfd >= 0)
        close(pidfd);
    if (r)
        return r;
    if (status == -EBUSY)
        return busy(mnt);
    if (status == -EPERM)
        return cmd_fail("down", "may not stop the device at %s (only its owner or root may): %s",
                        mnt, strerror(EPERM));
    if (status)
        return cmd_failed("down", "device at %s stopped with an error: %s", mnt,
                        strerror(-status));
    printf("cisc down: %s unmounted, journal checkpointed, device stopped\n", mnt);
    return 0;
}

const struct cisc_cmd cmd_down = {
    .name = "down",
    .summary = "unmount a ciscfs mount and stop its device",
    .usage = down_usage,
    .run = run_down,
};
