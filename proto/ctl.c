/* proto/ctl.c - the control socket's framing and client calls (see ctl.h).
 * Shared by libcisc, the `cisc` command and the device's server side. */
#include "proto/ctl.h"

#include "common/le.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

int ctl_make_addr(const char *path, struct sockaddr_un *addr, int *dirfd)
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
    int r = ctl_make_addr(path, &addr, &dirfd);
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

int ctl_send_frame(int fd, uint16_t type, uint32_t id, const void *p1, size_t l1,
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

ssize_t ctl_recv_frame(int fd, uint8_t *frame, size_t size, int *rfd, int flags)
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
        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | flags);
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

/* One request/reply exchange; pass_fd (or -1) rides with the request, a
 * descriptor in the reply lands in *rfd. */
static ssize_t call(int fd, uint16_t type, const void *req, size_t reqlen, int pass_fd,
                    int32_t *status, void *buf, size_t size, int *rfd)
{
    static uint32_t next_id;
    uint32_t id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
    *rfd = -1;
    int r = ctl_send_frame(fd, type, id, req, reqlen, NULL, 0, pass_fd);
    if (r)
        return r;
    uint8_t *frame = malloc(CTL_HDR_SIZE + CTL_MAX_PAYLOAD);
    if (!frame)
        return -ENOMEM;
    ssize_t n = ctl_recv_frame(fd, frame, CTL_HDR_SIZE + CTL_MAX_PAYLOAD, rfd, 0);
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

ssize_t ctl_call_fd(int fd, uint16_t type, const void *req, size_t reqlen, int32_t *status,
                    void *buf, size_t size, int *rfd)
{
    return call(fd, type, req, reqlen, -1, status, buf, size, rfd);
}

ssize_t ctl_call_pass(int fd, uint16_t type, const void *req, size_t reqlen, int pass_fd,
                      int32_t *status, void *buf, size_t size)
{
    int rfd;
    ssize_t r = call(fd, type, req, reqlen, pass_fd, status, buf, size, &rfd);
    if (rfd >= 0)
        close(rfd);
    return r;
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

