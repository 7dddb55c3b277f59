/* cmd/top.c - `cisc top`: the device's tenants and their queues, busiest
 * first, refreshed like top(1): device-core share, ops per second, latency
 * percentiles, waits, memory. Reads the scheduler's report
 * (CTL_SCHED_STATS, device/sched/report.c) every interval and shows the
 * difference from the last one (latency percentiles from the difference
 * of the histograms); --json prints one snapshot of the totals. Tenants
 * are shown by name: a uid's user name (getpwuid), a pid's process name
 * (/proc/PID/comm, this host's: the device runs here); numbers when there
 * is none. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "device/sched/hist.h"
#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static const char top_usage[] =
    "usage: cisc top [--json] [-n COUNT] [-d SECONDS] [MOUNTPOINT]\n"
    "\n"
    "Shows the tenants of the device serving MOUNTPOINT (default: the default\n"
    "mount) and their queues, busiest first: share of device-core time over\n"
    "the last interval, ops per second, latency percentiles (p50, p99: submit\n"
    "to completion in the device), ops waiting and running, memory in use and\n"
    "peak, the time its ops spent waiting in the queue (summed over its ops, as\n"
    "a share of the interval), ops stopped at the time limit, ops parked for\n"
    "another tenant (preemptions). Tenants are shown by user name (pid/command\n"
    "when the device counts tenants by process). Refreshes every SECONDS\n"
    "(default 1) until interrupted, or COUNT times. --json prints one snapshot\n"
    "(totals since the device started, ids as numbers plus \"name\") and exits.\n";

#define TOP_MAX 512u

struct trow {
    bool q;
    unsigned long long id, tenant, weight, queues, vt, core, mem, peak, wait, run, done, thr,
        over, term, preempted;
    double share;
    uint64_t lat[HIST_BUCKETS];
};

struct snap {
    char policy[32];
    char tenant_by[8];   /* "uid" or "pid" */
    unsigned cores;
    unsigned long long tenants, queues, freed_tenants, freed_queues;   /* accounts */
    int n;
    struct trow r[TOP_MAX];
};

/* Reads "lat B:C,B:C" (or "lat -") at p into h. */
static void parse_hist(const char *p, uint64_t *h)
{
    memset(h, 0, HIST_BUCKETS * sizeof(*h));
    p = strstr(p, " lat ");
    if (!p)
        return;
    p += 5;
    while (*p && *p != '-') {
        char *end;
        unsigned long b = strtoul(p, &end, 10);
        if (*end != ':')
            return;
        unsigned long long c = strtoull(end + 1, &end, 10);
        if (b < HIST_BUCKETS)
            h[b] = c;
        if (*end != ',')
            return;
        p = end + 1;
    }
}

/* Parses one tenant or queue line; false if it is neither. */
static bool parse_row(const char *l, struct trow *t)
{
    *t = (struct trow){ 0 };
    bool ok;
    if (!strncmp(l, "queue ", 6)) {
        t->q = true;
        ok = sscanf(l, "queue %llu tenant %llu vt_ns %llu core_ns %llu share %lf mem %llu "
                       "mem_peak %llu waiting %llu running %llu done %llu",
                    &t->id, &t->tenant, &t->vt, &t->core, &t->share, &t->mem, &t->peak,
                    &t->wait, &t->run, &t->done) == 10;
    } else {
        ok = sscanf(l, "tenant %llu weight %llu queues %llu vt_ns %llu core_ns %llu share %lf "
                       "mem %llu mem_peak %llu waiting %llu running %llu done %llu "
                       "throttled_ns %llu overtaken %llu terminated %llu",
                    &t->id, &t->weight, &t->queues, &t->vt, &t->core, &t->share, &t->mem,
                    &t->peak, &t->wait, &t->run, &t->done, &t->thr, &t->over, &t->term) == 14;
        t->tenant = t->id;
    }
    const char *pre = strstr(l, " preempted ");
    if (pre && !t->q)
        t->preempted = strtoull(pre + 11, NULL, 10);
    if (ok)
        parse_hist(l, t->lat);
    return ok;
}

/* Fetches the report into s. Returns 0 or -errno. */
static int snapshot(const char *sock, struct snap *s)
{
    strcpy(s->tenant_by, "uid");   /* a device before tenant_by was reported */
    int fd = ctl_connect(sock);
    if (fd < 0)
        return fd;
    char *text = calloc(1, CTL_MAX_PAYLOAD + 1);
    int32_t st = 0;
    ssize_t n = text ? ctl_call(fd, CTL_SCHED_STATS, NULL, 0, &st, text, CTL_MAX_PAYLOAD)
                     : -ENOMEM;
    close(fd);
    int r = n < 0 ? (int)n : st;
    s->n = 0;
    char *save = NULL;
    for (char *l = r ? NULL : strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (sscanf(l, "sched policy %31s cores %u tenants %llu queues %llu freed_tenants %llu "
                      "freed_queues %llu rows %*u shown %*u tenant_by %7s", s->policy, &s->cores,
                   &s->tenants, &s->queues, &s->freed_tenants, &s->freed_queues,
                   s->tenant_by) >= 2)
            continue;
        if (s->n < (int)TOP_MAX && parse_row(l, &s->r[s->n]))
            s->n++;
    }
    free(text);
    return r;
}

static const struct trow *find(const struct snap *s, const struct trow *x)
{
    for (int i = 0; i < s->n; i++)
        if (s->r[i].q == x->q && s->r[i].id == x->id && s->r[i].tenant == x->tenant)
            return &s->r[i];
    return NULL;
}

/* ---- tenants' names ---------------------------------------------------- */

/* A tenant's name into out: the user name of uid `id`, or for a pid
 * "PID/COMM"; the number alone when there is no name. */
static void tenant_name(unsigned long long id, bool pid, char *out, size_t size)
{
    snprintf(out, size, "%llu", id);
    if (!pid) {
        struct passwd pw, *res = NULL;
        char buf[1024];
        if (id <= UINT32_MAX && !getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &res) && res)
            snprintf(out, size, "%s", res->pw_name);
        return;
    }
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%llu/comm", id);
    FILE *f = fopen(path, "r");
    if (f && fgets(comm, sizeof(comm), f)) {
        comm[strcspn(comm, "\n")] = '\0';
        snprintf(out, size, "%llu/%s", id, comm);
    }
    if (f)
        fclose(f);
}

/* s as a JSON string (quotes and control characters escaped). */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_row(const struct trow *r, bool first, bool pid)
{
    char name[96];
    if (r->q)
        printf("%s{\"queue\":%llu,\"tenant\":%llu,", first ? "" : ",", r->id, r->tenant);
    else
        printf("%s{\"tenant\":%llu,\"weight\":%llu,\"queues\":%llu,", first ? "" : ",", r->id,
               r->weight, r->queues);
    tenant_name(r->tenant, pid, name, sizeof(name));
    printf("\"name\":");
    json_str(name);
    printf(",");
    printf("\"vt_ns\":%llu,\"core_ns\":%llu,\"share\":%.4f,\"mem\":%llu,\"mem_peak\":%llu,"
           "\"waiting\":%llu,\"running\":%llu,\"done\":%llu,\"p50_ns\":%llu,\"p99_ns\":%llu",
           r->vt, r->core, r->share, r->mem, r->peak, r->wait, r->run, r->done,
           (unsigned long long)hist_quantile(r->lat, 0.5),
           (unsigned long long)hist_quantile(r->lat, 0.99));
    if (!r->q)
        printf(",\"throttled_ns\":%llu,\"overtaken\":%llu,\"terminated\":%llu,\"preempted\":%llu",
               r->thr, r->over, r->term, r->preempted);
    printf("}");
}

static void print_json(const struct snap *s)
{
    bool pid = !strcmp(s->tenant_by, "pid");
    printf("{\"policy\":\"%s\",\"cores\":%u,\"tenant_by\":\"%s\",\"accounts\":{\"tenants\":%llu,\"queues\":%llu,"
           "\"freed_tenants\":%llu,\"freed_queues\":%llu},\"tenants\":[",
           s->policy, s->cores, s->tenant_by, s->tenants, s->queues, s->freed_tenants, s->freed_queues);
    bool first = true;
    for (int i = 0; i < s->n; i++)
        if (!s->r[i].q) {
            json_row(&s->r[i], first, pid);
            first = false;
        }
    printf("],\"queues\":[");
    first = true;
    for (int i = 0; i < s->n; i++)
        if (s->r[i].q) {
            json_row(&s->r[i], first, pid);
            first = false;
        }
    printf("]}\n");
}

/* The interval's rows: core time, counts and histograms as differences
 * from `before`, shares of the interval's core time. */
static void interval(struct snap *now, const struct snap *before)
{
    unsigned long long total = 0;
    for (int i = 0; i < now->n; i++) {
        struct trow *r = &now->r[i];
        const struct trow *b = find(before, r);
        if (b && b->core <= r->core && b->done <= r->done) {
            r->core -= b->core;
            r->done -= b->done;
            r->thr -= b->thr < r->thr ? b->thr : r->thr;
            r->preempted -= b->preempted < r->preempted ? b->preempted : r->preempted;
            for (unsigned k = 0; k < HIST_BUCKETS; k++)
                r->lat[k] -= b->lat[k] <= r->lat[k] ? b->lat[k] : r->lat[k];
        }
        if (!r->q)
            total += r->core;
    }
    for (int i = 0; i < now->n; i++)
        now->r[i].share = total ? (double)now->r[i].core / (double)total : 0.0;
}

/* Tenants before queues, each most core time first. */
static int by_share(const void *a, const void *b)
{
    const struct trow *x = a, *y = b;
    if (x->q != y->q)
        return x->q ? 1 : -1;
    return x->core < y->core ? 1 : x->core > y->core ? -1 : 0;
}

static void print_us(uint64_t ns, bool any)
{
    if (any)
        printf(" %9.1f", ns / 1e3);
    else
        printf(" %9s", "-");
}

static void print_row(const struct trow *r, double secs, bool pid)
{
    char name[96] = "";
    if (!r->q)
        tenant_name(r->tenant, pid, name, sizeof(name));
    if (r->q)
        printf("%-16.16s %10llu %6s", "", r->id, "");
    else
        printf("%-16.16s %10s %6llu", name, "", r->weight);
    printf(" %6.1f%% %9.0f", 100.0 * r->share, r->done / secs);
    print_us(hist_quantile(r->lat, 0.5), r->done > 0);
    print_us(hist_quantile(r->lat, 0.99), r->done > 0);
    printf(" %6llu %6llu %9llu %9llu", r->wait, r->run, r->mem >> 10, r->peak >> 10);
    if (r->q)
        printf("\n");
    else
        printf(" %6.1f%% %5llu %7llu\n", 100.0 * (double)r->thr / (secs * 1e9), r->term,
               r->preempted);
}

/* Rows the terminal has room for (all when it is not one). */
static int room(bool tty)
{
    struct winsize ws;
    if (!tty || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || ws.ws_row < 12)
        return INT_MAX;
    return ws.ws_row - 7;
}

static void print_table(struct snap *s, double secs, bool tty)
{
    qsort(s->r, (size_t)s->n, sizeof(s->r[0]), by_share);
    int nt = 0;
    while (nt < s->n && !s->r[nt].q)
        nt++;
    if (tty)
        printf("\033[H\033[2J");
    printf("cisc top - sched %s, %u cores, %d tenants, %d queues, interval %.1f s\n\n",
           s->policy, s->cores, nt, s->n - nt, secs);
    bool pid = !strcmp(s->tenant_by, "pid");
    printf("%-16s %10s %6s %7s %9s %9s %9s %6s %6s %9s %9s %7s %5s %7s\n", "TENANT", "QUEUE",
           "WEIGHT", "SHARE", "OPS/S", "P50_US", "P99_US", "WAIT", "RUN", "MEM_KIB",
           "PEAK_KIB", "WAITED", "TERM", "PREEMPT");
    int left = room(tty), shown = 0;
    /* each tenant, then its queues under it (QUEUE column), busiest first */
    for (int i = 0; i < nt && shown < left; i++, shown++) {
        print_row(&s->r[i], secs, pid);
        for (int j = nt; j < s->n && shown + 1 < left; j++)
            if (s->r[j].tenant == s->r[i].id) {
                print_row(&s->r[j], secs, pid);
                shown++;
            }
    }
    if (shown >= left)
        printf("... (%d rows)\n", s->n);
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
    if (a->count == 0 || a->count < -1)
        return cmd_fail("top", "-n wants a count of 1 or more");
    int r = where ? mnt_absolute(where, a->mnt, sizeof(a->mnt))
                  : mnt_default(a->mnt, sizeof(a->mnt));
    return r ? cmd_fail("top", "bad mount point: %s", strerror(-r)) : 0;
}

static int run_top(int argc, char **argv)
{
    struct top_args a;
    char sock[PATH_MAX];
    int r = parse_args(argc, argv, &a);
    if (r)
        return r;
    if (ctl_socket_path(a.mnt, sock, sizeof(sock)))
        return cmd_fail("top", "mount point path too long");
    static struct snap before, now;
    r = snapshot(sock, &before);
    if (r < 0)
        return cmd_fail("top", "no device at %s: %s", a.mnt, strerror(-r));
    if (a.json) {
        print_json(&before);
        return 0;
    }
    bool tty = isatty(STDOUT_FILENO);
    for (long i = 0; a.count < 0 || i < a.count; i++) {
        struct timespec ts = { (time_t)a.secs, (long)((a.secs - (time_t)a.secs) * 1e9) };
        nanosleep(&ts, NULL);
        r = snapshot(sock, &now);
        if (r < 0)
            return cmd_fail("top", "device at %s: %s", a.mnt, strerror(-r));
        static struct snap shown;
        shown = now;
        interval(&shown, &before);
        print_table(&shown, a.secs, tty);
        before = now;
    }
    return 0;
}

const struct cisc_cmd cmd_top = {
    .name = "top",
    .summary = "watch the device's tenants and queues: core share, op rates, latency, memory",
    .usage = top_usage,
    .run = run_top,
};
