/* libcisc/session.c - sessions: the control-socket connection to the
 * device, the credentials it recorded, and the table of file positions. */
#include "libcisc/client_int.h"

#include "common/le.h"
#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* True if the mount table has a fuse.ciscfs mount on mnt (absolute, no
 * symlinks). Mount points with escaped characters (space, tab, newline,
 * backslash) are compared escaped, as the kernel writes them. */
static bool is_ciscfs_mount(const char *mnt)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL, esc[PATH_MAX * 4];
    size_t cap = 0, n = 0;
    for (const char *p = mnt; *p && n + 5 < sizeof(esc); p++)
        n += strchr(" \t\n\\", *p) ? (size_t)snprintf(esc + n, 5, "\\%03o", (unsigned char)*p)
                                    : (size_t)snprintf(esc + n, 2, "%c", *p);
    esc[n] = '\0';
    bool found = false;
    while (f && !found && getline(&line, &cap, f) > 0) {
        char mp[PATH_MAX * 4], *dash = strstr(line, " - ");
        found = dash && sscanf(line, "%*s %*s %*s %*s %16383s", mp) == 1 && !strcmp(mp, esc) &&
                !strncmp(dash + 3, "fuse.ciscfs ", 12);
    }
    free(line);
    if (f)
        fclose(f);
    return found;
}

CISC_API int cisc_session_open(const char *mountpoint, struct cisc_session **out)
{
    char mnt[PATH_MAX], sock[PATH_MAX];
    if (!mountpoint || !out)
        return -EINVAL;
    if (!realpath(mountpoint, mnt))
        return -errno;
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return -ENAMETOOLONG;
    int fd = ctl_connect(sock);
    if (fd == -ENOENT || fd == -ECONNREFUSED)
        return is_ciscfs_mount(mnt) ? -ECONNREFUSED : -ENODEV;
    if (fd < 0)
        return fd;
    int32_t st = 0;
    uint8_t p[12];
    ssize_t n = ctl_call(fd, CTL_SESSION, NULL, 0, &st, p, sizeof(p));
    int r = n < 0 ? (int)n : st ? st : n < (ssize_t)sizeof(p) ? -EPROTO : 0;
    struct cisc_session *s = r ? NULL : calloc(1, sizeof(*s));
    if (!r && !s)
        r = -ENOMEM;
    if (r) {
        close(fd);
        return r == -EOPNOTSUPP ? -EPROTONOSUPPORT : r;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->fd = fd;
    s->uid = le32_get(p);
    s->gid = le32_get(p + 4);
    s->pid = (int32_t)le32_get(p + 8);
    *out = s;
    return 0;
}

CISC_API void cisc_session_close(struct cisc_session *s)
{
    if (!s)
        return;
    while (s->queues)
        cisc_queue_destroy(s->queues);   /* unlinks itself */
    close(s->fd);   /* the device closes every handle of the session */
    pthread_mutex_destroy(&s->lock);
    free(s->files);
    free(s);
}

CISC_API void cisc_session_forget(struct cisc_session *s)
{
    if (!s)
        return;
    /* The child of a fork is single-threaded: the lock may be held by a
     * thread that no longer exists, so it is neither taken nor destroyed. */
    for (struct cisc_queue *q = s->queues, *next; q; q = next) {
        next = q->next;
        lc_queue_forget(q);
    }
    close(s->fd);   /* the parent's copy keeps the connection */
    free(s->files);
    free(s);
}

CISC_API int cisc_session_creds(struct cisc_session *s, uint32_t *uid, uint32_t *gid,
                                int32_t *pid)
{
    if (!s)
        return -EINVAL;
    if (uid)
        *uid = s->uid;
    if (gid)
        *gid = s->gid;
    if (pid)
        *pid = s->pid;
    return 0;
}

bool lc_session_alive(struct cisc_session *s)
{
    struct pollfd p = { s->fd, POLLRDHUP, 0 };
    return poll(&p, 1, 0) == 0 || !(p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL));
}

/* ---- file positions --------------------------------------------------------- */

static struct lc_file *find_file(struct cisc_session *s, uint64_t fh)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].fh == fh)
            return &s->files[i];
    return NULL;
}

int lc_file_add(struct cisc_session *s, uint64_t fh, bool append)
{
    int r = 0;
    pthread_mutex_lock(&s->lock);
    if (s->nfiles == s->capfiles) {
        size_t cap = s->capfiles ? 2 * s->capfiles : 16;
        struct lc_file *f = realloc(s->files, cap * sizeof(*f));
        if (f) {
            s->files = f;
            s->capfiles = cap;
        } else {
            r = -ENOMEM;
        }
    }
    if (!r)
        s->files[s->nfiles++] = (struct lc_file){ fh, 0, append };
    pthread_mutex_unlock(&s->lock);
    return r;
}

void lc_file_del(struct cisc_session *s, uint64_t fh)
{
    pthread_mutex_lock(&s->lock);
    struct lc_file *f = find_file(s, fh);
    if (f)
        *f = s->files[--s->nfiles];
    pthread_mutex_unlock(&s->lock);
}

int lc_file_pos(struct cisc_session *s, uint64_t fh, uint64_t *pos, bool *append)
{
    pthread_mutex_lock(&s->lock);
    struct lc_file *f = find_file(s, fh);
    if (f) {
        *pos = f->pos;
        *append = f->append;
    }
    pthread_mutex_unlock(&s->lock);
    return f ? 0 : -EBADF;
}

void lc_file_set_pos(struct cisc_session *s, uint64_t fh, uint64_t pos)
{
    pthread_mutex_lock(&s->lock);
    struct lc_file *f = find_file(s, fh);
    if (f)
        f->pos = pos;
    pthread_mutex_unlock(&s->lock);
}
