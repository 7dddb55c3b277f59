/*
 * device/control.h - the device's control socket, server side: the control
 * thread accepts connections, takes each client's credentials from the
 * kernel (SO_PEERCRED, SO_PEERGROUPS) and hands every request to the
 * device's handler. The frame format and the request types are the
 * protocol's (proto/ctl.h).
 *
 * No client can stall the control thread: every socket is non-blocking, a
 * reply that does not fit the client's socket waits in the connection's
 * own small queue, and a connection with a queued reply is not read from
 * until the client takes it (the protocol is request/reply, so a client
 * that reads its replies never waits on this). Each poll round serves at
 * most one request per connection. Connections are limited per uid, with
 * a reserve that only root and the device's owner (its effective uid) may
 * use, and connections that hold no session are closed when idle.
 *
 * A connection's life:
 *
 *   accepted --(request)--> heard --(handler opens a session)--> session
 *      |                      |                                    |
 *      +-- idle_new_ms -------+-- idle_ms without a request        |
 *      |   without a request     (no session) --> closed           |
 *      +-------------- replies queued and unmoved for stall_ms ----+--> closed
 *
 * A deferred request (CTL_DEFER) pins its connection until ctl_destroy; a
 * request kept by ctl_later() pins it until ctl_answer().
 *
 * Invariants:
 *   1. The handler runs on the control thread, one request at a time; no
 *      socket call of the control thread blocks. A connection has at most
 *      one request in hand (being handled, kept by ctl_later, or deferred).
 *   2. A deferred request gets exactly one reply attempt: from ctl_destroy()
 *      with its final status.
 *   3. ctl_destroy() removes the socket file it created.
 *   4. A connection holds at most CTL_OUT_FRAMES queued replies; while it
 *      holds any, none of its requests is read. A queued reply keeps its
 *      own duplicate of the descriptor it carries until sent or dropped.
 *   5. Connections never exceed max_conns. One of a uid other than root
 *      and the owner is accepted only while fewer than max_conns - reserved
 *      connections are open and fewer than per_uid of its uid.
 */
#ifndef CISC_DEVICE_CONTROL_H
#define CISC_DEVICE_CONTROL_H

#include "proto/ctl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The defaults of struct ctl_limits (one table: ctl_create fills in these
 * for a zero field). */
#define CTL_MAX_CONNS       1024    /* all connections; libcisc sessions are connections */
#define CTL_MAX_PER_UID     128     /* one uid other than root and the owner */
#define CTL_RESERVED_CONNS  32      /* of CTL_MAX_CONNS, only for root and the owner */
#define CTL_IDLE_NEW_MS     10000   /* a connection that has sent nothing */
#define CTL_IDLE_MS         60000   /* one without a session, since its last request */
#define CTL_STALL_MS        10000   /* queued replies the client does not take */

/* Replies one connection may have queued beyond its socket buffer. */
#define CTL_OUT_FRAMES      4

struct ctl_limits {
    unsigned max_conns;
    unsigned per_uid;
    unsigned reserved;
    unsigned idle_new_ms;
    unsigned idle_ms;
    unsigned stall_ms;
};

struct ctl_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};

struct ctl_conn;

/* A request being handled: reply with ctl_reply(), or keep it with CTL_DEFER. */
struct ctl_req {
    const struct ctl_peer *peer;
    uint16_t type;
    uint32_t id;
    uint8_t *payload;         /* writable: a handler may wipe secrets in it */
    size_t len;
    void **session;   /* the connection's slot for the handler's state (NULL at first) */
    struct ctl_conn *conn;   /* private */
    /* A descriptor the client passed with the request (SCM_RIGHTS), or -1.
     * A handler that keeps it sets rfd to -1; otherwise it is closed after
     * the handler returns. */
    int rfd;
};

#define CTL_DEFER 1

/* Handles one request: calls ctl_reply() or ctl_later() and returns 0, or
 * returns CTL_DEFER to answer at ctl_destroy (the connection stays open). */
typedef int (*ctl_handler_fn)(void *arg, struct ctl_req *req);

struct ctl;

/* A request taken off the control thread, to be answered by another one. */
struct ctl_later {
    uint64_t conn;   /* the connection's serial */
    uint16_t type;
    uint32_t id;
};

/* In the handler, instead of ctl_reply: keeps req for an answer from
 * another thread with ctl_answer() (work that may wait must not run on the
 * control thread). The connection reads no request until then. */
void ctl_later(struct ctl_req *req, struct ctl_later *out);

/* Any thread, until ctl_destroy: answers a request kept by ctl_later
 * (status, then a copy of `len` payload bytes). An answer for a closed
 * connection is dropped. Returns 0 or -errno. */
int ctl_answer(struct ctl *c, const struct ctl_later *l, int32_t status, const void *payload,
               size_t len);

/* Binds `path` (replacing a stale socket nobody listens on; -EADDRINUSE if
 * a live device owns it) and starts the control thread. lim may be NULL;
 * its zero fields take the CTL_* defaults. Raises the soft RLIMIT_NOFILE
 * (up to the hard one) so that max_conns connections fit.
 * Returns 0 and sets *out, or -errno. */
int ctl_create(const char *path, const struct ctl_limits *lim, ctl_handler_fn fn, void *arg,
               struct ctl **out);

/* Sends the reply to req: status, then `len` bytes of payload. Never
 * blocks: a reply the socket cannot take now is queued (invariant 4).
 * Returns 0 (sent or queued) or -errno; on -ENOBUFS (queue full) or a
 * broken connection, the connection is closed after the handler returns. */
int ctl_reply(struct ctl_req *req, int32_t status, const void *payload, size_t len);

/* Called on the control thread when a connection whose session slot is
 * non-NULL ends (the client closed it, died, or was closed for a limit).
 * Not called by ctl_quiesce / ctl_destroy: the owner ends its sessions
 * itself then. */
typedef void (*ctl_close_fn)(void *arg, void *session);

/* Sets the close hook (before clients connect). */
void ctl_set_close_hook(struct ctl *c, ctl_close_fn fn);

/* Like ctl_reply, and passes descriptor fd along (SCM_RIGHTS); the caller
 * still owns fd (a queued reply holds a duplicate). Returns 0 or -errno. */
int ctl_reply_fd(struct ctl_req *req, int32_t status, const void *payload, size_t len,
                 int fd);

/* Supplementary groups of the peer (SO_PEERGROUPS, as at connect time):
 * fills up to max, returns the count (at most max) or -errno. */
int ctl_peer_groups(const struct ctl_req *req, uint32_t *groups, unsigned max);

/* Connection counters, for the device's status report. */
struct ctl_stats {
    unsigned conns;             /* open now */
    uint64_t accepted;
    uint64_t refused;           /* over a connection limit (invariant 5) */
    uint64_t idle_closed;       /* no session and idle past idle_new_ms / idle_ms */
    uint64_t slow_closed;       /* replies not taken: queue full or stalled */
};

/* Fills *st. Call it on the control thread (from the handler) or after
 * ctl_quiesce. */
void ctl_stats_get(const struct ctl *c, struct ctl_stats *st);

/* Stops the control thread: no handler or close hook runs after it
 * returns; connections stay open until ctl_destroy. */
void ctl_quiesce(struct ctl *c);

/* Stops the control thread (if ctl_quiesce did not), replies `status` to
 * every deferred request (without waiting on a client that does not
 * read), closes all connections and removes the socket file. */
void ctl_destroy(struct ctl *c, int32_t status);

#ifdef __cplusplus
}
#endif

#endif
