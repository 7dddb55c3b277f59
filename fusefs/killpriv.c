/*
 * fusefs/killpriv.c - FUSE_HANDLE_KILLPRIV_V2 for a libfuse that cannot
 * ask for it (3.14 has no FUSE_CAP for it): the session's writes to
 * /dev/fuse go through fuse_session_custom_io, and the INIT reply gets
 * the flag.
 *
 * Why: without it, the kernel checks before every write(2) whether the
 * file has a capability to remove (file_remove_privs), and on FUSE that
 * is a GETXATTR round trip: two requests per 4 KiB write. With it the
 * kernel leaves removing set-id bits and capabilities to the server
 * (the engine does both, for every door: setid_clear in
 * device/engine/engine_ops.c) and marks the super block SB_NOSEC, so an
 * inode found without them is not asked again.
 *
 * Invariants:
 *   1. Only the reply to INIT is changed, and only when the kernel offers
 *      the flag (protocol 7.33 or later, f->killpriv_v2, set by INIT
 *      before its reply is written). INIT is the first request of a
 *      session and the kernel sends no other before its reply, so the
 *      first reply written (unique != 0) is INIT's.
 *   2. Every other write and splice is passed through unchanged; a read
 *      request is changed only by fusefs_tmpfile_request (tmpfile.c:
 *      O_TMPFILE's opcode).
 */
#include "fusefs/fusefs_int.h"

#include <fcntl.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* Adds FUSE_HANDLE_KILLPRIV_V2 to the INIT reply in iov: the first reply
 * (unique != 0; notifications carry 0) of the session. */
static void patch_init(struct fusefs *f, struct iovec *iov, int count)
{
    const size_t at = offsetof(struct fuse_init_out, flags);
    struct fuse_out_header h;
    if (count < 1 || iov[0].iov_len != sizeof(h))
        return;
    memcpy(&h, iov[0].iov_base, sizeof(h));
    if (h.unique == 0 || __atomic_exchange_n(&f->init_replied, true, __ATOMIC_RELAXED))
        return;
    if (!f->killpriv_v2 || h.error != 0 || count < 2 || iov[1].iov_len < at + sizeof(uint32_t))
        return;
    uint32_t flags;
    memcpy(&flags, (char *)iov[1].iov_base + at, sizeof(flags));
    flags |= FUSE_HANDLE_KILLPRIV_V2;
    memcpy((char *)iov[1].iov_base + at, &flags, sizeof(flags));
}

static ssize_t kp_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    struct fusefs *f = userdata;
    if (!__atomic_load_n(&f->init_replied, __ATOMIC_RELAXED))
        patch_init(f, iov, count);
    return writev(fd, iov, count);
}

static ssize_t kp_read(int fd, void *buf, size_t len, void *userdata)
{
    ssize_t n = read(fd, buf, len);
    if (n > 0)
        fusefs_tmpfile_request(buf, (size_t)n);
    return n;
}

static ssize_t kp_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                         unsigned int flags, void *userdata)
{
    return splice(fdin, offin, fdout, offout, len, flags);
}

int fusefs_killpriv_io(struct fusefs *f)
{
    static const struct fuse_custom_io io = {
        .writev = kp_writev, .read = kp_read,
        .splice_receive = kp_splice, .splice_send = kp_splice,
    };
    return fuse_session_custom_io(f->se, &io, fuse_session_fd(f->se)) ? -EIO : 0;
}
