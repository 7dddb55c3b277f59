/* device/control.c - the control socket: framing, the control thread,
 * deferred replies, and the client calls (see control.h). */
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

void ctl_hdr_encode(const struct ctl_hdr *h, uint8_t *buf)
{
    le32_put(buf, h->magic);
    le16_put(buf + 4, h->version);
    le16_put(buf + 6, h->type);
    le32_put(buf + 8, h->id);
    le32_put(buf + 12, h->len);
}

int ctl_hdr_decode(const uint8_t *buf, size_t n, struct ctl_hdr *h)
{
    if (n < CTL_HDR_SIZE)
        return -EPROTO;
    h->magic = le32_get(buf);
    h->version = le16_get(buf + 4);
    h->type = le16_get(buf + 6);
    h->id = le32_get(buf + 8);
    h->len = le32_get(buf + 12);
    if (h->magic != CTL_MAGIC || h->version != CTL_VERSION)
        return -EPROTO;
    if (h->len > CTL_MAX_PAYLOAD || h->len != n - CTL_HDR_SIZE)
        return -EMSGSIZE;
    return 0;
}

int ctl_socket_path(const char *mnt, char *buf, size_t size)
{
    const char *slash = strrchr(mnt, '/');
    if (!slash || mnt[0] != '/')
        return -EINVAL;
    const char *base = slash[1] ? slash + 1 : "root";
    int dlen = (int)(slash - mnt);
    int n = snprintf(buf, size, "%.*s/.%s.cisc.sock", dlen, mnt, base);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Fills addr for path. Paths longer than sun_path go through an open
 * descriptor of their directory (/proc/self/fd/N/name); *dirfd is then
 * that descriptor, to be closed by the caller after bind/connect. */
static int make_addr(const char *path, struct sockaddr_un *addr, int *dirfd)
{
    *dirfd = -1;
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    if (strlen(path) < sizeof(addr->sun_path)) {
        strcpy(addr->sun_path, path);
        return 0;
    }
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash || (size_t)(slash - path) >= sizeof(dir))
        return -ENAMETOOLONG;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    *dirfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*dirfd < 0)
        return -errno;
    int n = snprintf(addr->sun_path, sizeof(addr->sun_path), "/proc/self/fd/%d/%s", *dirfd,
                     slash + 1);
    if (n < 0 || (size_t)n >= sizeof(addr->sun_path)) {
        close(*dirfd);
        return -ENAMETOOLONG;
    }
    return 0;
}

int ctl_connect(const char *path)
{
    struct sockaddr_un addr;
    int dirfd;
    int r = make_addr(path, &addr, &dirfd);
    if (r)
        return r;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        r = -errno;
    else if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
        r = -errno;
        close(fd);
    } else {
        r = fd;
    }
    if (dirfd >= 0)
        close(dirfd);
    return r;
}

/* Sends one frame; pass_fd >= 0 rides along in SCM_RIGHTS. */
static int send_frame_fd(int fd, uint16_t type, uint32_t id, const void *p1, size_t l1,
                         const void *p2, size_t l2, int pass_fd)
{
    uint8_t hdr[CTL_HDR_SIZE];
    if (l1 + l2 > CTL_MAX_PAYLOAD)
        return -EMSGSIZE;
    struct ctl_hdr h = { CTL_MAGIC, CTL_VERSION, type, id, (uint32_t)(l1 + l2) };
    ctl_hdr_encode(&h, hdr);
    struct iovec iov[3] = { { hdr, sizeof(hdr) }, { (void *)p1, l1 }, { (void *)p2, l2 } };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cm;
    if (pass_fd >= 0) {
        memset(&cm, 0, sizeof(cm));
        msg.msg_control = cm.buf;
        msg.msg_controllen = sizeof(cm.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    return n < 0 ? -errno : 0;
}

static int send_frame(int fd, uint16_t type, uint32_t id, const void *p1, size_t l1,
                      const void *p2, size_t l2)
{
    return send_frame_fd(fd, type, id, p1, l1, p2, l2, -1);
}

/* Receives one frame into frame; a passed descriptor goes to *rfd (others
 * are closed). Returns the frame length or -errno. */
static ssize_t recv_frame(int fd, uint8_t *frame, size_t size, int *rfd)
{
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } cm;
    struct iovec iov = { frame, size };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                          .msg_controllen = sizeof(cm.buf) };
    ssize_t n;
    do
        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    *rfd = -1;
    if (n < 0)
        return -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*rfd < 0)
                *rfd = f;
            else
                close(f);
        }
    }
    return n == 0 ? -ECONNRESET : n;
}

ssize_t ctl_call_fd(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                    void *buf, size_t size, int *rfd)
{
    static uint32_t next_id;
    uint32_t id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
    *rfd = -1;
    int r = send_frame(fd, type, id, req, reqlen, NULL, 0);
    if (r)
        return r;
    uint8_t *frame = malloc(CTL_HDR_SIZE + CTL_MAX_PAYLOAD);
    if (!frame)
        return -ENOMEM;
    ssize_t n = recv_frame(fd, frame, CTL_HDR_SIZE + CTL_MAX_PAYLOAD, rfd);
    struct ctl_hdr h;
    ssize_t ret = n < 0 ? n : 0;
    if (ret == 0 && (ret = ctl_hdr_decode(frame, (size_t)n, &h)) == 0 &&
        (h.type != (type | CTL_REPLY) || h.id != id || h.len < 4))
        ret = -EPROTO;
    if (ret == 0) {
        *status = (int32_t)le32_get(frame + CTL_HDR_SIZE);
        ret = (ssize_t)h.len - 4;
        if (size)
            memcpy(buf, frame + CTL_HDR_SIZE + 4, (size_t)ret < size ? (size_t)ret : size);
    } else if (*rfd >= 0) {
        close(*rfd);
        *rfd = -1;
    }
    free(frame);
    return ret;
}

ssize_t ctl_call(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                 void *buf, size_t size)
{
    int rfd;
    ssize_t r = ctl_call_fd(fd, type, req, reqlen, status, buf, size, &rfd);
    if (rfd >= 0)
        close(rfd);   /* nobody asked for one */
    return r;
}

int ctl_reply(struct ctl_req *req, int32_t status, const void *payload, size_t len)
{
    uint8_t st[4];
    le32_put(st, (uint32_t)status);
    return send_frame(req->fd, req->type | CTL_REPLY, req->id, st, 4, payload, len);
}

int ctl_reply_fd(struct ctl_req *req, int32_t status, const void *payload, size_t len,
                 int fd)
{
    uint8_t st[4];
    le32_put(st, (uint32_t)status);
    return send_frame_fd(req->fd, req->type | CTL_REPLY, req->id, st, 4, payload, len, fd);
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
    ssize_t n = recv(cn->fd, frame, CTL_HDR_SIZE + CTL_MAX_PAYLOAD, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    struct ctl_hdr h;
    if (n <= 0 || cn->deferred || ctl_hdr_decode(frame, (size_t)n, &h))
        return false;
    struct ctl_req req = { &cn->peer, h.type, h.id, frame + CTL_HDR_SIZE, h.len, &cn->session,
                           cn->fd };
    if (c->fn(c->arg, &req) == CTL_DEFER) {
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
        r = make_addr(path, &addr, &dirfd);
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
            struct ctl_req req = { &cn->peer, cn->dtype, cn->did, NULL, 0, NULL, cn->fd };
            ctl_reply(&req, status, NULL, 0);
        }
        close(cn->fd);
    }
    close(c->stop_pipe[0]);
    close(c->stop_pipe[1]);
    free(c);
}
