/*
 * proto/ctl.h - the control socket's protocol: a Unix socket beside the
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
 *   CTL_SHUTDOWN  [u32 flags] -> s32 status, sent when the device has
 *                    unmounted, checkpointed and is about to exit; only
 *                    the device's own uid or root may ask (-EPERM
 *                    otherwise). CTL_SHUTDOWN_SAFE: refuse at once with
 *                    -EBUSY, changing nothing, while the mount is in use
 *                    (an open file, a working directory in it); without
 *                    it (or with no payload) the device stops regardless
 *   CTL_SESSION   -> s32 status, u32 uid, u32 gid, u32 pid: opens the
 *                    connection's libcisc session (credentials from
 *                    SO_PEERCRED / SO_PEERGROUPS) if it has none yet
 *   CTL_QP_CREATE u32 sq_entries, u32 cq_entries, u64 arena_size (0 =
 *                    default) -> s32 status, u32 qp id, and the region's
 *                    memfd in SCM_RIGHTS (layout: proto/wire.h)
 *   CTL_QP_DESTROY u32 qp id -> s32 status, after the queue's commands
 *                    completed
 *   CTL_KEY_ADD   u32 alg, u32 len, key bytes -> s32 status, u32 key id:
 *                    registers an encryption key with the session for
 *                    ENCRYPT/DECRYPT steps (device/compute/keys.h)
 *   CTL_KEY_REMOVE u32 key id -> s32 status
 *   CTL_RECOVERY_LIST -> s32 status, UTF-8 text: the recovery records of
 *                    autorec ops the peer's uid owns (root: all), one
 *                    "recovery op NAME uid U steps N committed C status
 *                    S" line per op, then "recovery op NAME step I error
 *                    TEXT" per failed step
 *   CTL_RECOVERY_ACK NAME bytes -> s32 status: removes that record
 *                    (-ENOENT: the peer owns none of that name)
 *   CTL_TENANT_SET u32 tenant (uid or pid), u32 weight -> s32 status: the
 *                    scheduler's weight of a tenant; root only (-EPERM),
 *                    -EINVAL for a weight out of range (1..10000)
 *   CTL_SCHED_STATS -> s32 status, UTF-8 text: the scheduler's tenants and
 *                    queues with their core time, memory and latency
 *                    histograms, busiest first (format: device/sched/
 *                    report.c); `cisc top` reads it
 *   CTL_PROG_LOAD, _LIST, _SHOW, _UNLOAD, _STREAM (16..20): eBPF programs;
 *                    payloads in proto/progs_wire.h (a load passes the
 *                    object as a sealed memfd in SCM_RIGHTS: see rfd below)
 *
 * A connection's session (its queue pairs and open file handles) ends
 * with the connection.
 *
 * The device serves a connection one request at a time and reads its next
 * request only once the client has taken (most of) its replies. It closes
 * a connection that leaves its replies unread for a while, one that holds
 * no session and stays silent (10 s before its first request, 60 s after
 * one), and at once one over its uid's share of connections (limits:
 * device/control.h).
 *
 * Unknown types get status -EOPNOTSUPP; a malformed frame closes the
 * connection. New requests are new type numbers; payloads only grow at
 * the end, so an old client reads what it knows.
 *
 * The client's credentials come from SO_PEERCRED, never from the payload.
 *
 * Invariants:
 *   1. Every frame is one SOCK_SEQPACKET message: a header and exactly
 *      `len` payload bytes; a frame that decodes otherwise is refused.
 *   2. A reply echoes its request's id and type | CTL_REPLY.
 *   3. At most one descriptor rides with a frame; extra ones are closed.
 */
#ifndef CISC_PROTO_CTL_H
#define CISC_PROTO_CTL_H

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
#define CTL_SHUTDOWN_SAFE 0x1u     /* CTL_SHUTDOWN flags: refuse a busy mount */

enum ctl_type {
    CTL_PING = 1,
    CTL_STATUS = 2,
    CTL_SHUTDOWN = 3,
    CTL_SESSION = 4,
    CTL_QP_CREATE = 5,
    CTL_QP_DESTROY = 6,
    CTL_KEY_ADD = 7,
    CTL_KEY_REMOVE = 8,
    CTL_RECOVERY_LIST = 9,
    CTL_RECOVERY_ACK = 10,
    CTL_TENANT_SET = 11,
    CTL_SCHED_STATS = 12,
    /* 16..31: eBPF programs (proto/progs_wire.h has the payloads) */
    CTL_PROG_LOAD = 16,
    CTL_PROG_LIST = 17,
    CTL_PROG_SHOW = 18,
    CTL_PROG_UNLOAD = 19,
    CTL_PROG_STREAM = 20,
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

/* Client side: connects to path. Returns an fd or -errno. */
int ctl_connect(const char *path);

/* Client side: sends a request and waits for its reply (payload copied
 * into buf, at most size bytes; *status set). Returns the payload length
 * (after the status) or -errno (-ECONNRESET if the device went away). */
ssize_t ctl_call(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                 void *buf, size_t size);

/* Like ctl_call, and passes descriptor pass_fd along with the request
 * (SCM_RIGHTS; the caller still owns it). */
ssize_t ctl_call_pass(int fd, uint16_t type, const void *req, size_t reqlen, int pass_fd,
                      int32_t *status, void *buf, size_t size);

/* Like ctl_call; a descriptor passed with the reply is stored in *rfd
 * (close-on-exec), else *rfd = -1. */
ssize_t ctl_call_fd(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                    void *buf, size_t size, int *rfd);

/* The socket path for a mount point: "<dir>/.<base>.cisc.sock" beside it.
 * mnt must be absolute. Returns 0 or -ENAMETOOLONG. */
int ctl_socket_path(const char *mnt, char *buf, size_t size);

/* Sends one frame (type, id, payload p1 then p2); pass_fd >= 0 rides along
 * in SCM_RIGHTS. Returns 0 or -errno. */
int ctl_send_frame(int fd, uint16_t type, uint32_t id, const void *p1, size_t l1,
                   const void *p2, size_t l2, int pass_fd);

/* Receives one frame into frame (size bytes); a passed descriptor goes to
 * *rfd (close-on-exec; others are closed), else *rfd = -1. Returns the
 * frame length, -ECONNRESET at end of stream, or -errno. */
ssize_t ctl_recv_frame(int fd, uint8_t *frame, size_t size, int *rfd, int flags);

struct sockaddr_un;

/* Fills addr for path. Paths longer than sun_path go through an open
 * descriptor of their directory (/proc/self/fd/N/name); *dirfd is then
 * that descriptor, to be closed by the caller after bind/connect, else -1.
 * Returns 0 or -errno. */
int ctl_make_addr(const char *path, struct sockaddr_un *addr, int *dirfd);

#ifdef __cplusplus
}
#endif

#endif
