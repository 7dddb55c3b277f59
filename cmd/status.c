/* cmd/status.c - `cisc status`: a running device's model, queues and
 * per-operation statistics, from its control socket. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "cmd/json.h"
#include "proto/ctl.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char status_usage[] =
    "usage: cisc status [--raw | --json] [MOUNTPOINT]\n"
    "\n"
    "Shows the device serving MOUNTPOINT (default: the default mount):\n"
    "device model, cores, queue depths, per tenant (uid, or pid with --tenant\n"
    "pid) its scheduling weight, open queues, virtual time, device-core time\n"
    "and share, device memory in use and peak, commands waiting and running,\n"
    "commands done, time its commands waited queued, ops terminated at the\n"
    "time limit; and for every operation its count, errors, bytes and latency\n"
    "(mean, p50, p99, max in microseconds).\n"
    "\n"
    "  --raw    the device's report unformatted: one \"KEY value...\" per line\n"
    "  --json   the same report as one JSON object: a line \"KEY V\" is\n"
    "           \"KEY\": V, a line \"KEY k1 v1 k2 v2...\" an object, and a key\n"
    "           whose lines name an item first (\"op NAME count N...\", \"core 0\n"
    "           ...\") an array of objects whose \"id\" is that item\n"
    "\n" CMD_EXIT_HELP;

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
static bool print_tenant(const char *line, bool *header, bool by_pid)
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
    char who[64];   /* a uid tenant by its user name, as every human output */
    if (by_pid)
        snprintf(who, sizeof(who), "%llu", id);
    else
        cmd_user_name((uint32_t)id, who, sizeof(who));
    printf("  %-10s %6llu %6llu %10.1f %10.1f %5.1f%% %9llu %9llu %7llu %7llu %10llu %12.1f "
           "%10llu\n", who, w, nq, vt / 1e6, core / 1e6, 100.0 * share, mem >> 10, peak >> 10,
           wait, run, done, thr / 1e6, term);
    return true;
}

static void print_report(char *text)
{
    bool header = false, theader = false, by_pid = false;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "model ", 6))   /* before the tenant lines */
            by_pid = strstr(l, " tenant_by pid") != NULL;
        if (!strncmp(l, "tenant ", 7) && print_tenant(l, &theader, by_pid))
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

/* ---- --json: the report as one object (the rule is in the usage) ---------- */

#define REPORT_LINES_MAX 4096

static int split(char *line, char **tok, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
        tok[n++] = t;
    return n;
}

static bool is_key(const char *t)
{
    return (*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || *t == '_';
}

/* True when tok[from..n) are "k v" pairs with word keys. */
static bool pairs_ok(char **tok, int n, int from)
{
    bool ok = (n - from) % 2 == 0;
    for (int i = from; ok && i < n; i += 2)
        ok = is_key(tok[i]);
    return ok;
}

static void join(char **tok, int n, int from, char *text, size_t size)
{
    size_t len = 0;
    text[0] = '\0';
    for (int i = from; i < n && len < size; i++)
        len += (size_t)snprintf(text + len, size - len, "%s%s", i > from ? " " : "", tok[i]);
}

/* The members of one line after its KEY (and its id, when it has one):
 * "k v" pairs, or its whole text when the words do not pair up. */
static void json_members(struct json *j, char **tok, int n, int from)
{
    if (pairs_ok(tok, n, from)) {
        for (int i = from; i < n; i += 2)
            json_token(j, tok[i], tok[i + 1]);
        return;
    }
    char text[1024];
    join(tok, n, from, text, sizeof(text));
    json_str(j, "text", text);
}

/* Every line whose first word is key, as that key's value. */
static void json_key(struct json *j, char **lines, int nlines, const char *key)
{
    char *tok[256], copy[4096];
    int count = 0, n = 0;
    bool listed = false;
    for (int i = 0; i < nlines; i++) {
        snprintf(copy, sizeof(copy), "%s", lines[i]);
        if ((n = split(copy, tok, 256)) > 0 && !strcmp(tok[0], key)) {
            count++;
            listed |= n >= 4 && n % 2 == 0;   /* KEY ID k v ... */
        }
    }
    if (count == 1 && !listed) {
        for (int i = 0; i < nlines; i++) {
            snprintf(copy, sizeof(copy), "%s", lines[i]);
            if ((n = split(copy, tok, 256)) > 0 && !strcmp(tok[0], key))
                break;
        }
        if (n == 2)
            return json_token(j, key, tok[1]);
        if (!pairs_ok(tok, n, 1)) {   /* "image /a path with spaces" */
            char text[1024];
            join(tok, n, 1, text, sizeof(text));
            return json_str(j, key, text);
        }
        json_obj_open(j, key);
        json_members(j, tok, n, 1);
        return json_obj_close(j);
    }
    json_arr_open(j, key);
    for (int i = 0; i < nlines; i++) {
        snprintf(copy, sizeof(copy), "%s", lines[i]);
        if ((n = split(copy, tok, 256)) < 1 || strcmp(tok[0], key))
            continue;
        json_obj_open(j, NULL);
        bool id = n >= 2 && n % 2 == 0;
        if (id)
            json_token(j, "id", tok[1]);
        json_members(j, tok, n, id ? 2 : 1);
        json_obj_close(j);
    }
    json_arr_close(j);
}

static int print_json(char *text)
{
    char *lines[REPORT_LINES_MAX];
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l && n < REPORT_LINES_MAX;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    struct json j;
    json_begin(&j, stdout);
    json_obj_open(&j, NULL);
    for (int i = 0; i < n; i++) {
        size_t klen = strcspn(lines[i], " ");
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = strcspn(lines[k], " ") == klen && !strncmp(lines[k], lines[i], klen);
        char key[64];
        snprintf(key, sizeof(key), "%.*s", (int)klen, lines[i]);
        if (!seen && klen)
            json_key(&j, lines, n, key);
    }
    json_obj_close(&j);
    return json_end(&j) ? cmd_fail("status", "stdout: %s", strerror(EIO)) : 0;
}

/* ---- entry ------------------------------------------------------------------ */

struct status_args {
    bool raw, json;
    char *where[2];   /* argv[0] and the mount point, for cmd_target_mount */
    int nwhere;
};

static int parse_args(int argc, char **argv, struct status_args *a)
{
    a->where[0] = argv[0];
    a->nwhere = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--raw"))
            a->raw = true;
        else if (!strcmp(argv[i], "--json"))
            a->json = true;
        else if (cmd_no_option("status", argv[i]))
            return CMD_USAGE;
        else if (a->nwhere == 2)
            return cmd_fail("status", "too many arguments");
        else
            a->where[a->nwhere++] = argv[i];
    }
    if (a->raw && a->json)
        return cmd_fail("status", "--raw and --json: choose one");
    return 0;
}

static int run_status(int argc, char **argv)
{
    struct status_args a = { 0 };
    char mnt[PATH_MAX], sock[PATH_MAX];
    int r = parse_args(argc, argv, &a);
    if (!r)
        r = cmd_target_mount("status", a.nwhere, a.where, mnt, sizeof(mnt));
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
    r = 0;
    if (a.raw)
        fputs(text, stdout);
    else if (a.json)
        r = print_json(text);
    else
        print_report(text);
    free(text);
    return r;
}

const struct cisc_cmd cmd_status = {
    .name = "status",
    .summary = "show a running device's model, queues and statistics",
    .usage = status_usage,
    .run = run_status,
};
