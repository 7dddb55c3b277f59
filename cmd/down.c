/* cmd/down.c - `cisc down`: ask a device to unmount, checkpoint and stop. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static const char down_usage[] =
    "usage: cisc down [MOUNTPOINT]\n"
    "\n"
    "Unmounts the ciscfs mount at MOUNTPOINT (default: the default mount),\n"
    "checkpoints its journal and stops its device; returns when the image\n"
    "is clean and unlocked. A mount whose device died is detached.\n"
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

static int run_down(int argc, char **argv)
{
    char mnt[PATH_MAX], sock[PATH_MAX];
    int r = cmd_target_mount("down", argc, argv, mnt, sizeof(mnt));
    if (r)
        return r;
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return cmd_fail("down", "mount point path too long");
    int fd = ctl_connect(sock);
    if (fd < 0)
        return no_device(mnt, sock, fd);
    int32_t status = 0;
    char dummy[4];
    ssize_t n = ctl_call(fd, CTL_SHUTDOWN, NULL, 0, &status, dummy, sizeof(dummy));
    /* A refusal comes at once and the device goes on: nothing to wait for.
     * Otherwise the device closes the socket as it exits. */
    if (n >= 0 && status != -EPERM) {
        while (read(fd, dummy, sizeof(dummy)) > 0)
            ;
    }
    close(fd);
    if (n < 0)
        return cmd_fail("down", "device at %s: %s", sock, strerror((int)-n));
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
