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
    "device model, cores, queue depths, per tenant (uid, or pid with --tenant\n"
    "pid) its scheduling weight, open queues, virtual time, device-core time\n"
    "and share, device memory in use and peak, commands waiting and running,\n"
    "commands done, time its commands waited queued, ops terminated at the\n"
    "time limit; and for every operation its count, errors, bytes and latency\n"
    "(mean, p50, p99, max in microseconds).\n"
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

/* One "tenant ..." line as a table row (the header before the first);
 * false if it is not one. */
static bool print_tenant(const char *line, bool *header)
{
    unsigned long long id, w, nq, vt, core, mem, peak, wait, run, done, thr, over, term;
    double share;
    if (sscanf(line, "tenant %llu weight %llu queues %llu vt_ns %llu core_ns %llu share %lf "
                     "mem %llu mem_peak %llu waiting %llu running %llu done %llu "
                     "throttled_ns %llu overtaken %llu terminated %llu",
               &id, &w, &nq, &vt, &core, &share, &mem, &peak, &wait, &run, &done, &thr, &over,
               &term) != 14)
        return false;
    if (!*header)
        printf("\n  %-10s %6s %6s %10s %10s %6s %9s %9s %7s %7s %10s %12s %10s\n", "tenant",
               "weight", "queues", "vt_ms", "core_ms", "share", "mem_kib", "peak_kib", "waiting",
               "running", "done", "throttled_ms", "terminated");
    *header = true;
    printf("  %-10llu %6llu %6llu %10.1f %10.1f %5.1f%% %9llu %9llu %7llu %7llu %10llu %12.1f "
           "%10llu\n", id, w, nq, vt / 1e6, core / 1e6, 100.0 * share, mem >> 10, peak >> 10,
           wait, run, done, thr / 1e6, term);
    return true;
}

static void print_report(char *text)
{
    bool header = false, theader = false;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "tenant ", 7) && print_tenant(l, &theader))
            continue;
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
