/* cmd/list.c - `cisc list`: every running device on this machine.
 *
 * Devices are found from the mount table (each running device has one
 * fuse.ciscfs mount; its source is the image) and each is asked through
 * its control socket (beside the mount point, proto/ctl.h) for its pid,
 * owner and uptime. A mount whose device does not answer is listed as
 * not answering (dead, or its socket is not ours to use): `cisc down
 * MOUNT` detaches a dead one. */
#include "cmd/cmd.h"
#include "cmd/json.h"
#include "cmd/mnt.h"

#include "common/le.h"
#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char list_usage[] =
    "usage: cisc list [--json]\n"
    "\n"
    "Lists every running ciscfs device of this machine (every fuse.ciscfs\n"
    "mount): its mount point, image, device pid, owner and uptime. A mount\n"
    "whose device does not answer shows \"no answer\" (a dead device: cisc\n"
    "down MOUNT detaches its mount).\n"
    "\n"
    "  --json   one JSON array of objects: mountpoint, image, pid, uid,\n"
    "           owner, uptime_s, alive (pid, uid, owner and uptime_s are null\n"
    "           when the device does not answer)\n"
    "\n" CMD_EXIT_HELP;

struct dev_row {
    bool alive;
    uint32_t pid, uid;
    uint64_t uptime_s;
};

/* The "device pid P uptime_s S" line of the status report. */
static int ask_uptime(int fd, struct dev_row *d)
{
    char *text = calloc(1, CTL_MAX_PAYLOAD + 1);
    int32_t st = 0;
    ssize_t n = text ? ctl_call(fd, CTL_STATUS, NULL, 0, &st, text, CTL_MAX_PAYLOAD) : -ENOMEM;
    unsigned long long up = 0;
    int pid = 0;
    if (n >= 0 && !st) {
        text[n] = '\0';
        if (sscanf(text, "device pid %d uptime_s %llu", &pid, &up) == 2)
            d->uptime_s = up;
    }
    free(text);
    return n < 0 ? (int)n : st;
}

static void ask_device(const char *mnt, struct dev_row *d)
{
    char sock[PATH_MAX];
    uint8_t rep[8];
    int32_t st = 0;
    memset(d, 0, sizeof(*d));
    int fd = ctl_socket_path(mnt, sock, sizeof(sock)) ? -ENAMETOOLONG : ctl_connect(sock);
    if (fd < 0)
        return;
    ssize_t n = ctl_call(fd, CTL_PING, NULL, 0, &st, rep, sizeof(rep));
    if (n == (ssize_t)sizeof(rep) && st == 0) {
        d->pid = le32_get(rep);
        d->uid = le32_get(rep + 4);
        d->alive = ask_uptime(fd, d) == 0;
    }
    close(fd);
}

static void format_uptime(uint64_t s, char *buf, size_t size)
{
    if (s >= 86400)
        snprintf(buf, size, "%llud%02lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s % 86400 / 3600));
    else if (s >= 3600)
        snprintf(buf, size, "%lluh%02llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s % 3600 / 60));
    else
        snprintf(buf, size, "%llum%02llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
}

struct list_ctx {
    struct json *json;   /* NULL: a table */
    int count;
};

static void print_row(struct list_ctx *c, const char *mnt, const char *img,
                      const struct dev_row *d)
{
    char owner[64], up[32];
    if (c->count++ == 0)
        printf("%-30s %-30s %8s %-10s %8s\n", "MOUNTPOINT", "IMAGE", "PID", "OWNER", "UPTIME");
    if (!d->alive) {
        printf("%-30s %-30s %8s %-10s %8s\n", mnt, img, "-", "-", "no answer");
        return;
    }
    format_uptime(d->uptime_s, up, sizeof(up));
    printf("%-30s %-30s %8u %-10s %8s\n", mnt, img, d->pid,
           cmd_user_name(d->uid, owner, sizeof(owner)), up);
}

static void json_row(struct list_ctx *c, const char *mnt, const char *img,
                     const struct dev_row *d)
{
    char owner[64];
    struct json *j = c->json;
    c->count++;
    json_obj_open(j, NULL);
    json_str(j, "mountpoint", mnt);
    json_str(j, "image", img);
    json_bool(j, "alive", d->alive);
    if (d->alive) {
        json_u64(j, "pid", d->pid);
        json_u64(j, "uid", d->uid);
        json_str(j, "owner", cmd_user_name(d->uid, owner, sizeof(owner)));
        json_u64(j, "uptime_s", d->uptime_s);
    } else {
        static const char *const nulls[] = { "pid", "uid", "owner", "uptime_s" };
        for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
            json_str(j, nulls[i], NULL);
    }
    json_obj_close(j);
}

static int one_mount(void *arg, const char *mnt, const char *source)
{
    struct list_ctx *c = arg;
    struct dev_row d;
    ask_device(mnt, &d);
    if (c->json)
        json_row(c, mnt, source, &d);
    else
        print_row(c, mnt, source, &d);
    return 0;
}

static int run_list(int argc, char **argv)
{
    bool want_json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            want_json = true;
        else if (cmd_no_option("list", argv[i]))
            return CMD_USAGE;
        else
            return cmd_fail("list", "unexpected argument '%s'", argv[i]);
    }
    struct json j;
    struct list_ctx c = { .json = want_json ? &j : NULL };
    if (want_json) {
        json_begin(&j, stdout);
        json_arr_open(&j, NULL);
    }
    int r = mnt_each_ciscfs(one_mount, &c);
    if (want_json) {
        json_arr_close(&j);
        json_end(&j);
    } else if (!r && c.count == 0) {
        printf("no running ciscfs devices\n");
    }
    return r ? cmd_fail("list", "mount table: %s", strerror(-r)) : 0;
}

const struct cisc_cmd cmd_list = {
    .name = "list",
    .summary = "list every running device: mount point, image, pid, owner, uptime",
    .usage = list_usage,
    .run = run_list,
};
