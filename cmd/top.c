/* cmd/top.c - `cisc top`: the device's tenants, busiest first, refreshed
 * like top(1): device-core share, ops per second, queue waits, memory.
 * Reads the tenant lines of the status report twice and shows the
 * difference; --json prints one snapshot for scripts. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char top_usage[] =
    "usage: cisc top [--json] [-n COUNT] [-d SECONDS] [MOUNTPOINT]\n"
    "\n"
    "Shows the tenants of the device serving MOUNTPOINT (default: the default\n"
    "mount), busiest first: share of device-core time over the last interval,\n"
    "ops per second, ops waiting and running, average wait in the queue, how\n"
    "many other commands started while one of theirs waited, memory in use and\n"
    "peak, ops stopped at the time limit. Refreshes every SECONDS (1) until\n"
    "interrupted, or COUNT times. --json prints one snapshot and exits.\n";

#define TOP_MAX 256u

struct trow {
    unsigned long long id, weight, queues, vt, core, mem, peak, wait, run, done, thr, over,
        term;
    double share;
};

/* Parses one "tenant ..." line; false if it is not one. */
static bool parse_row(const char *l, struct trow *t)
{
    return sscanf(l, "tenant %llu weight %llu queues %llu vt_ns %llu core_ns %llu share %lf "
                     "mem %llu mem_peak %llu waiting %llu running %llu done %llu "
                     "throttled_ns %llu overtaken %llu terminated %llu",
                  &t->id, &t->weight, &t->queues, &t->vt, &t->core, &t->share, &t->mem,
                  &t->peak, &t->wait, &t->run, &t->done, &t->thr, &t->over, &t->term) == 14;
}

/* Fetches the report and its tenant rows. Returns the count or -errno. */
static int snapshot(const char *sock, struct trow *rows, char *policy, size_t psize)
{
    int fd = ctl_connect(sock);
    if (fd < 0)
        return fd;
    char *text = calloc(1, CTL_MAX_PAYLOAD + 1);
    int32_t st = 0;
    ssize_t n = text ? ctl_call(fd, CTL_STATUS, NULL, 0, &st, text, CTL_MAX_PAYLOAD) : -ENOMEM;
    close(fd);
    int count = n < 0 ? (int)n : st ? st : 0;
    char *save = NULL;
    for (char *l = count ? NULL : strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        const char *p = strstr(l, " sched ");
        if (!strncmp(l, "model ", 6) && p)
            snprintf(policy, psize, "%.*s", (int)strcspn(p + 7, " "), p + 7);
        if (count < (int)TOP_MAX && parse_row(l, &rows[count]))
            count++;
    }
    free(text);
    return count;
}

static const struct trow *find(const struct trow *rows, int n, unsigned long long id)
{
    for (int i = 0; i < n; i++)
        if (rows[i].id == id)
            return &rows[i];
    return NULL;
}

static void print_json(const struct trow *r, int n, const char *policy)
{
    printf("{\"policy\":\"%s\",\"tenants\":[", policy);
    for (int i = 0; i < n; i++)
        printf("%s{\"tenant\":%llu,\"weight\":%llu,\"queues\":%llu,\"vt_ns\":%llu,"
               "\"core_ns\":%llu,\"share\":%.4f,\"mem\":%llu,\"mem_peak\":%llu,"
               "\"waiting\":%llu,\"running\":%llu,\"done\":%llu,\"throttled_ns\":%llu,"
               "\"overtaken\":%llu,\"terminated\":%llu}",
               i ? "," : "", r[i].id, r[i].weight, r[i].queues, r[i].vt, r[i].core,
               r[i].share, r[i].mem, r[i].peak, r[i].wait, r[i].run, r[i].done, r[i].thr,
               r[i].over, r[i].term);
    printf("]}\n");
}

/* Rows of the interval: core time and counts as differences. */
static void interval(struct trow *now, int n, const struct trow *before, int nb)
{
    unsigned long long total = 0;
    for (int i = 0; i < n; i++) {
        const struct trow *b = find(before, nb, now[i].id);
        if (b) {
            now[i].core -= b->core;
            now[i].done -= b->done;
            now[i].thr -= b->thr;
            now[i].over -= b->over;
        }
        total += now[i].core;
    }
    for (int i = 0; i < n; i++)
        now[i].share = total ? (double)now[i].core / (double)total : 0.0;
}

static int by_share(const void *a, const void *b)
{
    const struct trow *x = a, *y = b;
    return x->core < y->core ? 1 : x->core > y->core ? -1 : 0;
}

static void print_table(struct trow *r, int n, const char *policy, double secs, bool clear)
{
    qsort(r, (size_t)n, sizeof(*r), by_share);
    if (clear)
        printf("\033[H\033[2J");
    printf("cisc top - sched %s, %d tenants, interval %.1f s\n\n", policy, n, secs);
    printf("%10s %6s %6s %7s %10s %9s %7s %7s %10s %9s %10s %10s %5s\n", "TENANT", "WEIGHT",
           "QUEUES", "SHARE", "CORE_MS", "OPS/S", "WAIT", "RUN", "AVGWAIT_US", "OVERTAKEN",
           "MEM_KIB", "PEAK_KIB", "TERM");
    for (int i = 0; i < n; i++)
        printf("%10llu %6llu %6llu %6.1f%% %10.1f %9.0f %7llu %7llu %10.1f %9.1f %10llu %10llu "
               "%5llu\n",
               r[i].id, r[i].weight, r[i].queues, 100.0 * r[i].share, r[i].core / 1e6,
               r[i].done / secs, r[i].wait, r[i].run,
               r[i].done ? r[i].thr / 1e3 / (double)r[i].done : 0.0,
               r[i].done ? (double)r[i].over / (double)r[i].done : 0.0, r[i].mem >> 10,
               r[i].peak >> 10, r[i].term);
    fflush(stdout);
}

struct top_args {
    bool json;
    long count;
    double secs;
    char mnt[PATH_MAX];
};

static int parse_args(int argc, char **argv, struct top_args *a)
{
    *a = (struct top_args){ .count = -1, .secs = 1.0 };
    const char *where = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            a->json = true;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            a->count = atol(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            a->secs = atof(argv[++i]);
        else if (argv[i][0] == '-' || where)
            return cmd_fail("top", "unexpected '%s' (see cisc top --help)", argv[i]);
        else
            where = argv[i];
    }
    if (a->secs < 0.1 || a->secs > 3600)
        return cmd_fail("top", "-d wants 0.1..3600 seconds");
    int r = where ? mnt_absolute(where, a->mnt, sizeof(a->mnt))
                  : mnt_default(a->mnt, sizeof(a->mnt));
    return r ? cmd_fail("top", "bad mount point: %s", strerror(-r)) : 0;
}

static int run_top(int argc, char **argv)
{
    struct top_args a;
    char sock[PATH_MAX], policy[32] = "?";
    int r = parse_args(argc, argv, &a);
    if (r)
        return r;
    if (ctl_socket_path(a.mnt, sock, sizeof(sock)))
        return cmd_fail("top", "mount point path too long");
    static struct trow before[TOP_MAX], now[TOP_MAX];
    int nb = snapshot(sock, before, policy, sizeof(policy));
    if (nb < 0)
        return cmd_fail("top", "no device at %s: %s", a.mnt, strerror(-nb));
    if (a.json) {
        print_json(before, nb, policy);
        return 0;
    }
    for (long i = 0; a.count < 0 || i < a.count; i++) {
        struct timespec ts = { (time_t)a.secs, (long)((a.secs - (time_t)a.secs) * 1e9) };
        nanosleep(&ts, NULL);
        int n = snapshot(sock, now, policy, sizeof(policy));
        if (n < 0)
            return cmd_fail("top", "device at %s: %s", a.mnt, strerror(-n));
        struct trow shown[TOP_MAX];
        memcpy(shown, now, sizeof(now[0]) * (size_t)n);
        interval(shown, n, before, nb);
        print_table(shown, n, policy, a.secs, isatty(STDOUT_FILENO));
        memcpy(before, now, sizeof(now[0]) * (size_t)n);
        nb = n;
    }
    return 0;
}

const struct cisc_cmd cmd_top = {
    .name = "top",
    .summary = "watch the device's tenants: core share, op rates, waits, memory",
    .usage = top_usage,
    .run = run_top,
};
