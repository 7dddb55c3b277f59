/* cmd/holders.c - the processes that keep a mount busy (see holders.h). */
#include "cmd/holders.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct scan {
    const char *mnt;
    size_t mlen;
    struct mnt_holder *out;
    unsigned max, n;
};

static bool under(const struct scan *s, const char *path)
{
    return !strncmp(path, s->mnt, s->mlen) && (path[s->mlen] == '\0' || path[s->mlen] == '/');
}

/* Whether fd of pid is open for writing (its fdinfo flags). */
static bool fd_writing(int pid, const char *fd)
{
    char p[64], line[128];
    snprintf(p, sizeof(p), "/proc/%d/fdinfo/%s", pid, fd);
    FILE *f = fopen(p, "re");
    bool w = false;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "flags:", 6))
            w = (strtoul(line + 6, NULL, 8) & O_ACCMODE) != O_RDONLY;
    if (f)
        fclose(f);
    return w;
}

static void comm_of(int pid, char *buf, size_t size)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/comm", pid);
    FILE *f = fopen(p, "re");
    if (!f || !fgets(buf, (int)size, f))
        snprintf(buf, size, "?");
    if (f)
        fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Records link /proc/PID/<rel> when it points under the mount. */
static void check_link(struct scan *s, int pid, const char *rel, const char *what, bool fd)
{
    char p[PATH_MAX], target[PATH_MAX];
    snprintf(p, sizeof(p), "/proc/%d/%s", pid, rel);
    ssize_t n = readlink(p, target, sizeof(target) - 1);
    if (n <= 0)
        return;
    target[n] = '\0';
    if (!under(s, target))
        return;
    if (s->n < s->max) {
        struct mnt_holder *h = &s->out[s->n];
        h->pid = pid;
        comm_of(pid, h->comm, sizeof(h->comm));
        snprintf(h->what, sizeof(h->what), "%s", what);
        h->writing = fd && fd_writing(pid, rel + 3);   /* rel is "fd/N" */
        snprintf(h->path, sizeof(h->path), "%.*s", (int)sizeof(h->path) - 1, target);
    }
    s->n++;
}

static void scan_pid(struct scan *s, int pid)
{
    char p[64], what[24], rel[40];
    check_link(s, pid, "cwd", "cwd", false);
    check_link(s, pid, "root", "root", false);
    snprintf(p, sizeof(p), "/proc/%d/fd", pid);
    DIR *d = opendir(p);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(what, sizeof(what), "fd %.16s", e->d_name);
        snprintf(rel, sizeof(rel), "fd/%.16s", e->d_name);
        check_link(s, pid, rel, what, true);
    }
    if (d)
        closedir(d);
}

int mnt_holders(const char *mnt, struct mnt_holder *out, unsigned max)
{
    struct scan s = { mnt, strlen(mnt), out, max, 0 };
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (isdigit((unsigned char)e->d_name[0]))
            scan_pid(&s, atoi(e->d_name));
    closedir(d);
    return (int)s.n;
}

void mnt_holders_print(FILE *f, const struct mnt_holder *h, unsigned n, unsigned total)
{
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "  pid %d (%s) %s%s: %s\n", h[i].pid, h[i].comm, h[i].what,
                h[i].writing ? " open for writing" : "", h[i].path);
    if (total > n)
        fprintf(f, "  ... and %u more\n", total - n);
}
