/*
 * device/control.h - the device's control socket: a Unix socket beside the
 * mount point through which `cisc status`, `cisc down` and (later) program
 * management and libcisc queue-pair setup talk to a running device.
 *
 * Transport: AF_UNIX SOCK_SEQPACKET, so every message is one frame and
 * descriptors can ride along with SCM_RIGHTS later. Each frame is a
 * 16-byte little-endian header followed by `len` payload bytes:
 *
 *   offset size field
 *   0      4    magic    0x43534943 ("CISC" read as bytes C I S C)
 *   4      2    version  CTL_VERSION (1)
 *   6      2    type     request type; a reply sets CTL_REPLY (0x8000)
 *   8      4    id       chosen by the client, echoed in the reply
 *   12     4    len      payload bytes, at most CTL_MAX_PAYLOAD
 *
 * A reply's payload starts with a little-endian s32 status (0 or -errno),
 * then the type's own payload. Requests:
 *
 *   CTL_PING      -> s32 status, u32 pid, u32 device uid
 *   CTL_STATUS    -> s32 status, UTF-8 text: one "key value..." per line
 *                    (device model, cores, queues, per-op counts and
 *                    latency percentiles); `cisc status` formats it
 *   CTL_SHUTDOWN  -> s32 status, sent when the device has unmounted,
 *                    checkpointed and is about to exit; only the device's
 *                    own uid or root may ask (-EPERM otherwise)
 *   CTL_SESSION   -> s32 status, u32 uid, u32 gid, u32 pid: opens the
 *                    connection's libcisc session (credentials from
 *                    SO_PEERCRED / SO_PEERGROUPS) if it has none yet
 *   CTL_QP_CREATE u32 sq_entries, u32 cq_entries, u64 arena_size (0 =
 *                    default) -> s32 status, u32 qp id, and the region's
 *                    memfd in SCM_RIGHTS (layout: device/wire.h)
 *   CTL_QP_DESTROY u32 qp id -> s32 status, after the queue's commands
 *                    completed
 *   CTL_KEY_ADD   u32 alg, u32 len, key bytes -> s32 status, u32 key id:
 *                    registers an encryption key with the session for
 *                    ENCRYPT/DECRYPT steps (device/compute/keys.h)
 *   CTL_KEY_REMOVE u32 key id -> s32 status
 *
 * A connection's session (its queue pairs and open file handles) ends
 * with the connection.
 *
 * Unknown types get status -EOPNOTSUPP; a malformed frame closes the
 * connection. New requests are new type numbers; payloads only grow at
 * the end, so an old client reads what it knows.
 *
 * The client's credentials come from SO_PEERCRED, never from the payload.
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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTL_MAGIC        0x43534943u
#define CTL_VERSION      1u
#define CTL_HDR_SIZE     16u
#define CTL_MAX_PAYLOAD  (60u * 1024)
#define CTL_REPLY        0x8000u

enum ctl_type {
    CTL_PING = 1,
    CTL_STATUS = 2,
    CTL_SHUTDOWN = 3,
    CTL_SESSION = 4,
    CTL_QP_CREATE = 5,
    CTL_QP_DESTROY = 6,
    CTL_KEY_ADD = 7,
    CTL_KEY_REMOVE = 8,
};

struct ctl_hdr {
    uint32_t magic;
    uint16_t version, type;
    uint32_t id, len;
};

/* Encodes / decodes a header (16 bytes). Decoding checks magic, version
 * and len: -EPROTO or -EMSGSIZE. */
void ctl_hdr_encode(const struct ctl_hdr *h, uint8_t *buf);
int ctl_hdr_decode(const uint8_t *buf, size_t n, struct ctl_hdr *h);

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

/* Client side: connects to path. Returns an fd or -errno. */
int ctl_connect(const char *path);

/* Client side: sends a request and waits for its reply (payload copied
 * into buf, at most size bytes; *status set). Returns the payload length
 * (after the status) or -errno (-ECONNRESET if the device went away). */
ssize_t ctl_call(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                 void *buf, size_t size);

/* Like ctl_call; a descriptor passed with the reply is stored in *rfd
 * (close-on-exec), else *rfd = -1. */
ssize_t ctl_call_fd(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                    void *buf, size_t size, int *rfd);

/* The socket path for a mount point: "<dir>/.<base>.cisc.sock" beside it.
 * mnt must be absolute. Returns 0 or -ENAMETOOLONG. */
int ctl_socket_path(const char *mnt, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
