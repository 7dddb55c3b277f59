/* device/control.c - the control socket's server side: the control thread,
 * connections, credentials and deferred replies (see control.h). Framing
 * and the client calls are in proto/ctl.c. */
#include "device/control.h"

#include "common/le.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CTL_MAX_CONNS 1024   /* libcisc sessions are connections too */

struct conn {
    int fd;
    void *session;            /* the handler's per-connection state */
    struct ctl_peer peer;
    bool deferred;            /* holds a request waiting for ctl_destroy */
    uint16_t dtype;
    uint32_t did;
};

struct ctl {
    char path[PATH_MAX];
    int lfd;
    int stop_pipe[2];
    pthread_t thread;
    ctl_handler_fn fn;
    ctl_close_fn close_fn;
    void *arg;
    bool joined;              /* the control thread has been stopped */
    struct conn conns[CTL_MAX_CONNS];   /* owned by the control thread until joined */
    unsigned nconns;
};

int ctl_reply(struct ctl_req *req, int32_t status, const void *payload, size_t len)
{
    uint8_t st[4];
    le32_put(st, (uint32_t)status);
    return ctl_send_frame(req->fd, req->type | CTL_REPLY, req->id, st, 4, payload, len, -1);
}

int ctl_reply_fd(struct ctl_req *req, int32_t status, const void *payload, size_t len,
                 int fd)
{
    uint8_t st[4];
    le32_put(st, (uint32_t)status);
    return ctl_send_frame(req->fd, req->type | CTL_REPLY, req->id, st, 4, payload, len, fd);
}

int ctl_peer_groups(const struct ctl_req *req, uint32_t *groups, unsigned max)
{
    gid_t g[256];
    socklen_t l = sizeof(g);
    if (getsockopt(req->fd, SOL_SOCKET, SO_PEERGROUPS, g, &l))
        return errno == ERANGE ? -E2BIG : -errno;
    unsigned n = (unsigned)(l / sizeof(gid_t));
    if (n > max)
        n = max;
    for (unsigned i = 0; i < n; i++)
        groups[i] = g[i];
    return (int)n;
}

void ctl_set_close_hook(struct ctl *c, ctl_close_fn fn)
{
    c->close_fn = fn;
}

/* ---- the control thread --------------------------------------------- */

static void drop_conn(struct ctl *c, unsigned i)
{
    if (c->conns[i].session && c->close_fn)
        c->close_fn(c->arg, c->conns[i].session);
    close(c->conns[i].fd);
    c->conns[i] = c->conns[--c->nconns];
}

static void accept_conn(struct ctl *c)
{
    int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct ucred uc;
    socklen_t l = sizeof(uc);
    if (c->nconns == CTL_MAX_CONNS || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l)) {
        close(fd);
        return;
    }
    c->conns[c->nconns++] = (struct conn){ fd, NULL, { uc.pid, uc.uid, uc.gid }, false, 0, 0 };
}

/* Reads and handles one frame; returns false to drop the connection. */
static bool serve(struct ctl *c, struct conn *cn, uint8_t *frame)
{
    int rfd;
    ssize_t n = ctl_recv_frame(cn->fd, frame, CTL_HDR_SIZE + CTL_MAX_PAYLOAD, &rfd, MSG_DONTWAIT);
    if (n == -EAGAIN || n == -EINTR)
        return true;
    struct ctl_hdr h;
    if (n <= 0 || cn->deferred || ctl_hdr_decode(frame, (size_t)n, &h)) {
        if (rfd >= 0)
            close(rfd);
        return false;
    }
    struct ctl_req req = { &cn->peer, h.type, h.id, frame + CTL_HDR_SIZE, h.len, &cn->session,
                           cn->fd, rfd };
    int hr = c->fn(c->arg, &req);
    if (req.rfd >= 0)
        close(req.rfd);   /* the handler did not keep it */
    if (hr == CTL_DEFER) {
        cn->deferred = true;
        cn->dtype = h.type;
        cn->did = h.id;
    }
    return true;
}

static void *ctl_main(void *p)
{
    struct ctl *c = p;
    uint8_t *frame = malloc(CTL_HDR_SIZE + CTL_MAX_PAYLOAD);
    struct pollfd pfd[CTL_MAX_CONNS + 2];
    while (frame) {
        pfd[0] = (struct pollfd){ c->stop_pipe[0], POLLIN, 0 };
        pfd[1] = (struct pollfd){ c->lfd, POLLIN, 0 };
        unsigned n = c->nconns;
        for (unsigned i = 0; i < n; i++)
            pfd[i + 2] = (struct pollfd){ c->conns[i].fd, POLLIN, 0 };
        if (poll(pfd, n + 2, -1) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents)
            break;
        for (unsigned i = n; i-- > 0;)
            if (pfd[i + 2].revents && !serve(c, &c->conns[i], frame))
                drop_conn(c, i);
        if (pfd[1].revents)
            accept_conn(c);
    }
    free(frame);
    return NULL;
}

/* Removes path if it is a socket nobody listens on. */
static int clear_stale(const char *path)
{
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
    int fd = ctl_connect(path);
    if (fd >= 0) {
        close(fd);
        return -EADDRINUSE;
    }
    return unlink(path) && errno != ENOENT ? -errno : 0;
}

static int listen_on(const char *path)
{
    struct sockaddr_un addr;
    int dirfd;
    int r = clear_stale(path);
    if (!r)
        r = ctl_make_addr(path, &addr, &dirfd);
    if (r)
        return r;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        r = -errno;
    else if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 16))
        r = -errno;
    if (dirfd >= 0)
        close(dirfd);
    if (r && fd >= 0)
        close(fd);
    return r ? r : fd;
}

int ctl_create(const char *path, ctl_handler_fn fn, void *arg, struct ctl **out)
{
    if (strlen(path) >= PATH_MAX)
        return -ENAMETOOLONG;
    struct ctl *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    strcpy(c->path, path);
    c->fn = fn;
    c->arg = arg;
    c->lfd = listen_on(path);
    if (c->lfd < 0) {
        int r = c->lfd;
        free(c);
        return r;
    }
    int r = pipe2(c->stop_pipe, O_CLOEXEC) ? -errno : 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);   /* signals go to the main thread */
    if (!r)
        r = -pthread_create(&c->thread, NULL, ctl_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r) {
        close(c->lfd);
        unlink(path);
        free(c);
        return r;
    }
    *out = c;
    return 0;
}

void ctl_quiesce(struct ctl *c)
{
    if (!c || c->joined)
        return;
    if (write(c->stop_pipe[1], "x", 1) < 0)
        perror("cisc device: control stop");
    pthread_join(c->thread, NULL);
    c->joined = true;
}

void ctl_destroy(struct ctl *c, int32_t status)
{
    if (!c)
        return;
    ctl_quiesce(c);
    /* Gone from the file system before anyone hears "stopped", so a new
     * device can bind the same path right away. */
    close(c->lfd);
    unlink(c->path);
    for (unsigned i = 0; i < c->nconns; i++) {
        struct conn *cn = &c->conns[i];
        if (cn->deferred) {
            struct ctl_req req = { &cn->peer, cn->dtype, cn->did, NULL, 0, NULL, cn->fd, -1 };
            ctl_reply(&req, status, NULL, 0);
        }
        close(cn->fd);
    }
    close(c->stop_pipe[0]);
    close(c->stop_pipe[1]);
    free(c);
}
