/*
 * device/control.h - the device's control socket, server side: the control
 * thread accepts connections, takes each client's credentials from the
 * kernel (SO_PEERCRED, SO_PEERGROUPS) and hands every request to the
 * device's handler. The frame format and the request types are the
 * protocol's (proto/ctl.h).
 *
 * Invariants:
 *   1. The handler runs on the control thread, one request at a time.
 *   2. A deferred request (handler returned CTL_DEFER) gets exactly one
 *      reply: from ctl_reply_deferred() or, at the latest, from
 *      ctl_destroy() with its final status.
 *   3. ctl_destroy() removes the socket file it created.
 */
#ifndef CISC_DEVICE_CONTROL_H
#define CISC_DEVICE_CONTROL_H

#include "proto/ctl.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ctl_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};

/* A request being handled: reply with ctl_reply(), or keep it with CTL_DEFER. */
struct ctl_req {
    const struct ctl_peer *peer;
    uint16_t type;
    uint32_t id;
    uint8_t *payload;         /* writable: a handler may wipe secrets in it */
    size_t len;
    void **session;   /* the connection's slot for the handler's state (NULL at first) */
    int fd;   /* private */
    /* A descriptor the client passed with the request (SCM_RIGHTS), or -1.
     * A handler that keeps it sets rfd to -1; otherwise it is closed after
     * the handler returns. */
    int rfd;
};

#define CTL_DEFER 1

/* Handles one request: calls ctl_reply() and returns 0, or returns
 * CTL_DEFER to answer later (the connection stays open). */
typedef int (*ctl_handler_fn)(void *arg, struct ctl_req *req);

struct ctl;

/* Binds `path` (replacing a stale socket nobody listens on; -EADDRINUSE if
 * a live device owns it) and starts the control thread.
 * Returns 0 and sets *out, or -errno. */
int ctl_create(const char *path, ctl_handler_fn fn, void *arg, struct ctl **out);

/* Sends the reply to req: status, then `len` bytes of payload.
 * Returns 0 or -errno. */
int ctl_reply(struct ctl_req *req, int32_t status, const void *payload, size_t len);

/* Called on the control thread when a connection whose session slot is
 * non-NULL ends (the client closed it or died). Not called by
 * ctl_quiesce / ctl_destroy: the owner ends its sessions itself then. */
typedef void (*ctl_close_fn)(void *arg, void *session);

/* Sets the close hook (before clients connect). */
void ctl_set_close_hook(struct ctl *c, ctl_close_fn fn);

/* Like ctl_reply, and passes descriptor fd along (SCM_RIGHTS); the caller
 * still owns fd. Returns 0 or -errno. */
int ctl_reply_fd(struct ctl_req *req, int32_t status, const void *payload, size_t len,
                 int fd);

/* Supplementary groups of the peer (SO_PEERGROUPS, as at connect time):
 * fills up to max, returns the count (at most max) or -errno. */
int ctl_peer_groups(const struct ctl_req *req, uint32_t *groups, unsigned max);

/* Stops the control thread: no handler or close hook runs after it
 * returns; connections stay open until ctl_destroy. */
void ctl_quiesce(struct ctl *c);

/* Stops the control thread (if ctl_quiesce did not), replies `status` to
 * every deferred request, closes all connections and removes the socket
 * file. */
void ctl_destroy(struct ctl *c, int32_t status);

#ifdef __cplusplus
}
#endif

#endif
