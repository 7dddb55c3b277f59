/* cmd/status.c - `cisc status`: a running device's model, queues and
 * per-operation statistics, from its control socket. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "proto/ctl.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char status_usage[] =
    "usage: cisc status [--raw] [MOUNTPOINT]\n"
    "\n"
    "Shows the device serving MOUNTPOINT (default: the default mount):\n"
    "device model, cores, queue depths, and for every operation its count,\n"
    "errors, bytes and latency (mean, p50, p99, max in microseconds).\n"
    "--raw prints the device's key/value report unformatted.\n";

static void print_op(const char *line)
{
    char name[32];
    unsigned long long cnt, err, bytes, mean, p50, p99, max;
    if (sscanf(line, "op %31s count %llu errors %llu bytes %llu mean_ns %llu p50_ns %llu "
                     "p99_ns %llu max_ns %llu", name, &cnt, &err, &bytes, &mean, &p50, &p99,
               &max) != 8)
        return;
    printf("  %-12s %10llu %7llu %12llu %9.1f %9.1f %9.1f %10.1f\n", name, cnt, err, bytes,
           mean / 1e3, p50 / 1e3, p99 / 1e3, max / 1e3);
}

static void print_report(char *text)
{
    bool header = false;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "op ", 3)) {
            char *sp = strchr(l, ' ');
            printf("%-12.*s %s\n", sp ? (int)(sp - l) : (int)strlen(l), l, sp ? sp + 1 : "");
            continue;
        }
        if (!header) {
            printf("\n  %-12s %10s %7s %12s %9s %9s %9s %10s\n", "operation", "count", "errors",
                   "bytes", "mean_us", "p50_us", "p99_us", "max_us");
            header = true;
        }
        print_op(l);
    }
}

static int run_status(int argc, char **argv)
{
    bool raw = argc > 1 && !strcmp(argv[1], "--raw");
    if (raw) {
        argv++;
        argc--;
    }
    char mnt[PATH_MAX], sock[PATH_MAX];
    int r = cmd_target_mount("status", argc, argv, mnt, sizeof(mnt));
    if (r)
        return r;
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return cmd_fail("status", "mount point path too long");
    int fd = ctl_connect(sock);
    if (fd < 0)
        return cmd_fail("status", "no device at %s (%s: %s)", mnt, sock, strerror(-fd));
    char *text = calloc(1, CTL_MAX_PAYLOAD + 1);
    int32_t st = 0;
    ssize_t n = text ? ctl_call(fd, CTL_STATUS, NULL, 0, &st, text, CTL_MAX_PAYLOAD) : -ENOMEM;
    close(fd);
    if (n < 0 || st) {
        free(text);
        return cmd_fail("status", "device at %s: %s", mnt, strerror(n < 0 ? (int)-n : -st));
    }
    text[n] = '\0';
    if (raw)
        fputs(text, stdout);
    else
        print_report(text);
    free(text);
    return 0;
}

const struct cisc_cmd cmd_status = {
    .name = "status",
    .summary = "show a running device's model, queues and statistics",
    .usage = status_usage,
    .run = run_status,
};
