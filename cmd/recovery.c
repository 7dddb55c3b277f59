/* cmd/recovery.c - `cisc recovery`: what the device did at its last
 * start with the autorec ops a crash had interrupted (the caller's
 * records; root sees everyone's), and acknowledging them. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char recovery_usage[] =
    "usage: cisc recovery [MOUNTPOINT] [--ack NAME]\n"
    "\n"
    "Lists the recovery records of your autorec fused ops (root: everyone's):\n"
    "after a crash, the device finishes the ops it had accepted at its next\n"
    "start and keeps, per op, a line 'recovery op NAME uid U steps N committed C\n"
    "status S' (C: steps that had committed before the crash; S: 0 or -errno),\n"
    "then a line per step that failed. --ack NAME removes that record.\n";

static int run_recovery(int argc, char **argv)
{
    const char *ack = NULL;
    if (argc >= 3 && !strcmp(argv[argc - 2], "--ack")) {
        ack = argv[argc - 1];
        argc -= 2;
    }
    char mnt[PATH_MAX], sock[PATH_MAX];
    int r = cmd_target_mount("recovery", argc, argv, mnt, sizeof(mnt));
    if (r)
        return r;
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return cmd_fail("recovery", "mount point path too long");
    int fd = ctl_connect(sock);
    if (fd < 0)
        return cmd_fail("recovery", "no device at %s (%s: %s)", mnt, sock, strerror(-fd));
    char *text = calloc(1, CTL_MAX_PAYLOAD + 1);
    int32_t st = 0;
    ssize_t n = !text ? -ENOMEM
              : ack   ? ctl_call(fd, CTL_RECOVERY_ACK, ack, strlen(ack), &st, NULL, 0)
                      : ctl_call(fd, CTL_RECOVERY_LIST, NULL, 0, &st, text, CTL_MAX_PAYLOAD);
    close(fd);
    if (n < 0 || st) {
        free(text);
        return cmd_fail("recovery", "device at %s: %s", mnt, strerror(n < 0 ? (int)-n : -st));
    }
    if (!ack) {
        text[n] = '\0';
        fputs(n ? text : "no recovery records\n", stdout);
    }
    free(text);
    return 0;
}

const struct cisc_cmd cmd_recovery = {
    .name = "recovery",
    .summary = "show (and acknowledge) what recovery did with interrupted autorec ops",
    .usage = recovery_usage,
    .run = run_recovery,
};
