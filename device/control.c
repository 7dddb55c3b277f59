/* device/control.c - the control socket's server side: the control thread,
 * connections, their limits and reply queues, credentials and deferred
 * replies (see control.h). Framing and the client calls are in
 * proto/ctl.c. */
#include "device/control.h"
#include "common/thread.h"

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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CTL_ACCEPT_BURST     16    /* connections accepted per poll round */
#define CTL_ACCEPT_PAUSE_MS  100   /* out of descriptors: try accepting again after this */
#define CTL_SPARE_FDS        256   /* descriptors beyond the connections (image, memfds ...) */

/* A reply the client's socket could not take yet. */
struct out {
    struct out *next;
    uint16_t type;
    uint32_t id;
    int fd;                   /* our duplicate of the descriptor it carries, or -1 */
    size_t len;
    uint8_t data[];           /* status, then payload */
};

/* An answer from another thread (ctl_answer), for the control thread. */
struct answer {
    struct answer *next;
    struct ctl_later later;
    int32_t status;
    size_t len;
    uint8_t data[];
};

struct ctl_conn {
    int fd;
    uint64_t serial;          /* unique for the life of the struct ctl */
    void *session;            /* the handler's per-connection state */
    struct ctl_peer peer;
    bool deferred;            /* holds a request waiting for ctl_destroy */
    bool waiting;             /* holds a request another thread answers (ctl_later) */
    bool heard;               /* has sent a request */
    bool dead;                /* to be closed after the current request */
    bool slow;                /* ... because it did not take its replies */
    uint16_t dtype;
    uint32_t did;
    uint64_t rx_ms;           /* accepted, or its last request */
    uint64_t tx_ms;           /* its reply queue last moved */
    struct out *head, *tail;  /* queued replies, oldest first */
    unsigned nout;
};

struct ctl {
    char path[PATH_MAX];
    int lfd;
    int wake_pipe[2];         /* wakes the control thread: answers, or stop */
    pthread_t thread;
    pthread_mutex_t lock;     /* protects answers, stop */
    struct answer *answers;   /* newest first */
    bool stop;
    ctl_handler_fn fn;
    ctl_close_fn close_fn;
    void *arg;
    uid_t owner;              /* the device's effective uid */
    struct ctl_limits lim;
    bool joined;              /* the control thread has been stopped */
    /* Owned by the control thread until joined: */
    struct ctl_conn *conns;   /* lim.max_conns slots, nconns used */
    unsigned nconns;
    struct pollfd *pfd;       /* wake pipe, listener, then one per connection */
    uint64_t accept_at_ms;    /* listener paused (EMFILE) until then */
    uint64_t next_serial;
    struct ctl_stats st;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- replies ---------------------------------------------------------- */

static void out_free(struct out *o)
{
    if (o->fd >= 0)
        close(o->fd);
    free(o);
}

/* Sends queued replies until the socket is full. Returns 0 or -errno
 * (the connection is broken). */
static int conn_flush(struct ctl_conn *cn)
{
    while (cn->head) {
        struct out *o = cn->head;
        int r = ctl_send_frame(cn->fd, o->type, o->id, o->data, o->len, NULL, 0, o->fd);
        if (r == -EAGAIN || r == -EWOULDBLOCK)
            return 0;
        if (r)
            return r;
        cn->head = o->next;
        if (!cn->head)
            cn->tail = NULL;
        cn->nout--;
        cn->tx_ms = now_ms();
        out_free(o);
    }
    return 0;
}

/* Queues a reply that did not fit the socket (invariant 4). */
static int conn_queue(struct ctl_conn *cn, uint16_t type, uint32_t id, const uint8_t st[4],
                      const void *payload, size_t len, int fd)
{
    if (cn->nout >= CTL_OUT_FRAMES)
        return -ENOBUFS;
    struct out *o = malloc(sizeof(*o) + 4 + len);
    if (!o)
        return -ENOMEM;
    *o = (struct out){ NULL, type, id, -1, 4 + len };
    memcpy(o->data, st, 4);
    if (len)
        memcpy(o->data + 4, payload, len);
    if (fd >= 0 && (o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        int r = -errno;
        free(o);
        return r;
    }
    if (!cn->nout)
        cn->tx_ms = now_ms();   /* the stall clock starts with the first queued reply */
    if (cn->tail)
        cn->tail->next = o;
    else
        cn->head = o;
    cn->tail = o;
    cn->nout++;
    return 0;
}

/* Sends a reply now if nothing waits before it and the socket takes it,
 * else queues it. A failure marks the connection for closing. */
static int conn_reply(struct ctl_conn *cn, uint16_t type, uint32_t id, int32_t status,
                      const void *payload, size_t len, int fd)
{
    uint8_t st[4];
    le32_put(st, (uint32_t)status);
    int r = -EAGAIN;
    if (!cn->head)
        r = ctl_send_frame(cn->fd, type | CTL_REPLY, id, st, 4, payload, len, fd);
    if (r == -EAGAIN || r == -EWOULDBLOCK)
        r = conn_queue(cn, type | CTL_REPLY, id, st, payload, len, fd);
    if (r) {
        cn->dead = true;
        cn->slow = r == -ENOBUFS;
    }
    return r;
}

int ctl_reply(struct ctl_req *req, int32_t status, const void *payload, size_t len)
{
    return conn_reply(req->conn, req->type, req->id, status, payload, len, -1);
}

int ctl_reply_fd(struct ctl_req *req, int32_t status, const void *payload, size_t len,
                 int fd)
{
    return conn_reply(req->conn, req->type, req->id, status, payload, len, fd);
}

void ctl_later(struct ctl_req *req, struct ctl_later *out)
{
    *out = (struct ctl_later){ req->conn->serial, req->type, req->id };
    req->conn->waiting = true;
}

static void wake(struct ctl *c)
{
    /* A full pipe already holds a wake-up: the reader drains it all. */
    if (write(c->wake_pipe[1], "w", 1) < 0 && errno != EAGAIN)
        perror("cisc device: control wake");
}

int ctl_answer(struct ctl *c, const struct ctl_later *l, int32_t status, const void *payload,
               size_t len)
{
    if (len > CTL_MAX_PAYLOAD - 4)
        return -EMSGSIZE;
    struct answer *a = malloc(sizeof(*a) + len);
    if (!a)
        return -ENOMEM;
    *a = (struct answer){ NULL, *l, status, len };
    if (len)
        memcpy(a->data, payload, len);
    pthread_mutex_lock(&c->lock);
    a->next = c->answers;
    c->answers = a;
    pthread_mutex_unlock(&c->lock);
    wake(c);
    return 0;
}

int ctl_peer_groups(const struct ctl_req *req, uint32_t *groups, unsigned max)
{
    gid_t g[256];
    socklen_t l = sizeof(g);
    if (getsockopt(req->conn->fd, SOL_SOCKET, SO_PEERGROUPS, g, &l))
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

void ctl_stats_get(const struct ctl *c, struct ctl_stats *st)
{
    *st = c->st;
    st->conns = c->nconns;
}

/* ---- connections ------------------------------------------------------ */

static void conn_close(struct ctl_conn *cn)
{
    while (cn->head) {
        struct out *o = cn->head;
        cn->head = o->next;
        out_free(o);
    }
    close(cn->fd);
}

static void drop_conn(struct ctl *c, unsigned i)
{
    if (c->conns[i].session && c->close_fn)
        c->close_fn(c->arg, c->conns[i].session);
    conn_close(&c->conns[i]);
    c->conns[i] = c->conns[--c->nconns];
}

static bool privileged(const struct ctl *c, uid_t uid)
{
    return uid == 0 || uid == c->owner;
}

/* Whether a new connection of uid stays within the limits (invariant 5). */
static bool may_connect(const struct ctl *c, uid_t uid)
{
    if (privileged(c, uid))
        return c->nconns < c->lim.max_conns;
    if (c->nconns >= c->lim.max_conns - c->lim.reserved)
        return false;
    unsigned mine = 0;
    for (unsigned i = 0; i < c->nconns; i++)
        mine += c->conns[i].peer.uid == uid;
    return mine < c->lim.per_uid;
}

/* Accepts one waiting connection; false when none is left to accept now. */
static bool accept_conn(struct ctl *c)
{
    int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            c->accept_at_ms = now_ms() + CTL_ACCEPT_PAUSE_MS;   /* else poll spins */
        return errno == EINTR || errno == ECONNABORTED;
    }
    struct ucred uc;
    socklen_t l = sizeof(uc);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) || !may_connect(c, uc.uid)) {
        c->st.refused++;
        close(fd);
        return true;
    }
    c->st.accepted++;
    c->conns[c->nconns++] = (struct ctl_conn){ .fd = fd, .serial = ++c->next_serial,
                                               .peer = { uc.pid, uc.uid, uc.gid },
                                               .rx_ms = now_ms() };
    return true;
}

/* When connection cn is to be closed for a limit (UINT64_MAX: never). */
static uint64_t conn_deadline(const struct ctl *c, const struct ctl_conn *cn)
{
    uint64_t t = UINT64_MAX;
    if (cn->nout)
        t = cn->tx_ms + c->lim.stall_ms;
    if (!cn->session && !cn->deferred && !cn->waiting) {
        uint64_t idle = cn->rx_ms + (cn->heard ? c->lim.idle_ms : c->lim.idle_new_ms);
        t = idle < t ? idle : t;
    }
    return t;
}

/* Closes the connections past a limit; returns the next deadline. */
static uint64_t expire(struct ctl *c, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = c->nconns; i-- > 0;) {
        struct ctl_conn *cn = &c->conns[i];
        uint64_t t = conn_deadline(c, cn);
        if (t > now) {
            next = t < next ? t : next;
            continue;
        }
        if (cn->nout && cn->tx_ms + c->lim.stall_ms <= now)
            c->st.slow_closed++;
        else
            c->st.idle_closed++;
        drop_conn(c, i);
    }
    return next;
}

/* Reads and handles one request. */
static void serve(struct ctl *c, struct ctl_conn *cn, uint8_t *frame)
{
    int rfd;
    ssize_t n = ctl_recv_frame(cn->fd, frame, CTL_HDR_SIZE + CTL_MAX_PAYLOAD, &rfd, MSG_DONTWAIT);
    if (n == -EAGAIN || n == -EWOULDBLOCK || n == -EINTR)
        return;
    struct ctl_hdr h;
    if (n <= 0 || cn->deferred || ctl_hdr_decode(frame, (size_t)n, &h)) {
        if (rfd >= 0)
            close(rfd);
        cn->dead = true;
        return;
    }
    cn->heard = true;
    cn->rx_ms = now_ms();
    struct ctl_req req = { &cn->peer, h.type, h.id, frame + CTL_HDR_SIZE, h.len, &cn->session,
                           cn, rfd };
    int hr = c->fn(c->arg, &req);
    if (req.rfd >= 0)
        close(req.rfd);   /* the handler did not keep it */
    if (hr == CTL_DEFER) {
        cn->deferred = true;
        cn->dtype = h.type;
        cn->did = h.id;
    }
}

/* Serves connection i after poll: its queue first, then (only with an
 * empty queue) one request. */
static void service(struct ctl *c, unsigned i, short revents, uint8_t *frame)
{
    struct ctl_conn *cn = &c->conns[i];
    if (cn->nout) {
        if (conn_flush(cn))
            cn->dead = true;
    } else if (cn->waiting) {
        cn->dead = (revents & (POLLHUP | POLLERR)) != 0;   /* polled for nothing else */
    } else if (revents) {
        serve(c, cn, frame);
    }
    if (cn->dead) {
        c->st.slow_closed += cn->slow;
        drop_conn(c, i);
    }
}

/* Fills the poll set: a connection with queued replies waits to write,
 * one whose request another thread answers waits for nothing (poll still
 * reports its hang-up), others wait to read. Returns the number of
 * entries. */
static unsigned poll_set(struct ctl *c, uint64_t now)
{
    c->pfd[0] = (struct pollfd){ c->wake_pipe[0], POLLIN, 0 };
    c->pfd[1] = (struct pollfd){ now >= c->accept_at_ms ? c->lfd : -1, POLLIN, 0 };
    for (unsigned i = 0; i < c->nconns; i++) {
        const struct ctl_conn *cn = &c->conns[i];
        short ev = cn->nout ? POLLOUT : cn->waiting ? 0 : POLLIN;
        c->pfd[i + 2] = (struct pollfd){ cn->fd, ev, 0 };
    }
    return c->nconns + 2;
}

static int poll_timeout(const struct ctl *c, uint64_t now, uint64_t next)
{
    if (now < c->accept_at_ms && c->accept_at_ms < next)
        next = c->accept_at_ms;
    if (next == UINT64_MAX)
        return -1;
    return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

/* The index of the connection with that serial, or -1 (it was closed). */
static int find_conn(const struct ctl *c, uint64_t serial)
{
    for (unsigned i = 0; i < c->nconns; i++)
        if (c->conns[i].serial == serial)
            return (int)i;
    return -1;
}

/* Sends the answers other threads left (oldest first; those of closed
 * connections are dropped) and frees them. */
static void send_answers(struct ctl *c, struct answer *list)
{
    struct answer *old = NULL;
    while (list) {   /* newest first: reverse */
        struct answer *next = list->next;
        list->next = old;
        old = list;
        list = next;
    }
    for (struct answer *a = old, *next; a; a = next) {
        next = a->next;
        int i = find_conn(c, a->later.conn);
        struct ctl_conn *cn = i < 0 ? NULL : &c->conns[i];
        if (cn && cn->waiting) {
            cn->waiting = false;
            cn->rx_ms = now_ms();
            conn_reply(cn, a->later.type, a->later.id, a->status, a->data, a->len, -1);
            if (cn->dead) {
                c->st.slow_closed += cn->slow;
                drop_conn(c, (unsigned)i);
            }
        }
        free(a);
    }
}

/* Drains the wake pipe and sends waiting answers; returns true when the
 * thread is to stop. */
static bool take_answers(struct ctl *c)
{
    char buf[64];
    while (read(c->wake_pipe[0], buf, sizeof(buf)) > 0)
        ;
    pthread_mutex_lock(&c->lock);
    struct answer *list = c->answers;
    c->answers = NULL;
    bool stop = c->stop;
    pthread_mutex_unlock(&c->lock);
    send_answers(c, list);
    return stop;
}

static void *ctl_main(void *p)
{
    struct ctl *c = p;
    uint8_t *frame = malloc(CTL_HDR_SIZE + CTL_MAX_PAYLOAD);
    while (frame) {
        uint64_t now = now_ms();
        uint64_t next = expire(c, now);
        unsigned n = poll_set(c, now);
        if (poll(c->pfd, n, poll_timeout(c, now, next)) < 0 && errno != EINTR)
            break;
        for (unsigned i = n - 2; i-- > 0;)
            if (c->pfd[i + 2].revents)
                service(c, i, c->pfd[i + 2].revents, frame);
        if (c->pfd[1].revents)
            for (unsigned k = 0; k < CTL_ACCEPT_BURST && accept_conn(c); k++)
                ;
        /* Last: it may close connections, which moves them in conns. */
        if (c->pfd[0].revents && take_answers(c))
            break;
    }
    free(frame);
    return NULL;
}

/* ---- set-up and tear-down -------------------------------------------- */

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
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        r = -errno;
    else if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 64))
        r = -errno;
    if (dirfd >= 0)
        close(dirfd);
    if (r && fd >= 0)
        close(fd);
    return r ? r : fd;
}

/* The limits with defaults for zero fields; the reserve stays below the total. */
static struct ctl_limits limits_with_defaults(const struct ctl_limits *lim)
{
    static const struct ctl_limits def = { CTL_MAX_CONNS, CTL_MAX_PER_UID, CTL_RESERVED_CONNS,
                                           CTL_IDLE_NEW_MS, CTL_IDLE_MS, CTL_STALL_MS };
    struct ctl_limits l = lim ? *lim : def;
    l.max_conns = l.max_conns ? l.max_conns : def.max_conns;
    l.per_uid = l.per_uid ? l.per_uid : def.per_uid;
    l.reserved = l.reserved ? l.reserved : def.reserved;
    l.idle_new_ms = l.idle_new_ms ? l.idle_new_ms : def.idle_new_ms;
    l.idle_ms = l.idle_ms ? l.idle_ms : def.idle_ms;
    l.stall_ms = l.stall_ms ? l.stall_ms : def.stall_ms;
    if (l.reserved >= l.max_conns)
        l.reserved = l.max_conns - 1;
    return l;
}

/* Room for every connection the limits allow: raises the soft descriptor
 * limit toward the hard one (never lowers it). */
static void fit_fd_limit(unsigned max_conns)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_conns + CTL_SPARE_FDS;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);   /* best effort: accept_conn copes with EMFILE */
}

static void free_ctl(struct ctl *c)
{
    if (c->wake_pipe[0] >= 0) {
        close(c->wake_pipe[0]);
        close(c->wake_pipe[1]);
    }
    while (c->answers) {
        struct answer *a = c->answers;
        c->answers = a->next;
        free(a);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->conns);
    free(c->pfd);
    free(c);
}

static int start_thread(struct ctl *c)
{
    int r = pipe2(c->wake_pipe, O_CLOEXEC | O_NONBLOCK) ? -errno : 0;
    return r ? r : thread_start_quiet(&c->thread, ctl_main, c);
}

int ctl_create(const char *path, const struct ctl_limits *lim, ctl_handler_fn fn, void *arg,
               struct ctl **out)
{
    if (strlen(path) >= PATH_MAX)
        return -ENAMETOOLONG;
    struct ctl *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    strcpy(c->path, path);
    c->wake_pipe[0] = c->wake_pipe[1] = -1;
    pthread_mutex_init(&c->lock, NULL);
    c->fn = fn;
    c->arg = arg;
    c->owner = geteuid();
    c->lim = limits_with_defaults(lim);
    c->conns = calloc(c->lim.max_conns, sizeof(*c->conns));
    c->pfd = calloc(c->lim.max_conns + 2, sizeof(*c->pfd));
    if (!c->conns || !c->pfd) {
        free_ctl(c);
        return -ENOMEM;
    }
    fit_fd_limit(c->lim.max_conns);
    c->lfd = listen_on(path);
    int r = c->lfd < 0 ? c->lfd : start_thread(c);
    if (r) {
        if (c->lfd >= 0) {
            close(c->lfd);
            unlink(path);
        }
        free_ctl(c);
        return r;
    }
    *out = c;
    return 0;
}

void ctl_quiesce(struct ctl *c)
{
    if (!c || c->joined)
        return;
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_mutex_unlock(&c->lock);
    wake(c);
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
    c->close_fn = NULL;   /* the owner ends its sessions itself now */
    take_answers(c);      /* answers that came after the thread stopped: one try */
    for (unsigned i = 0; i < c->nconns; i++) {
        struct ctl_conn *cn = &c->conns[i];
        if (cn->deferred && !conn_flush(cn))   /* one try: nobody waits on a non-reader */
            conn_reply(cn, cn->dtype, cn->did, status, NULL, 0, -1);
        conn_close(cn);
    }
    free_ctl(c);
}
