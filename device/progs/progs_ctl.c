/* device/progs/progs_ctl.c - the CTL_PROG_* control requests: decode the
 * payload (proto/progs_wire.h), call the registry, encode the reply.
 * Runs on the control thread; the client's uid is the kernel's. */
#include "device/progs/progs_int.h"

#include "device/control.h"
#include "proto/progs_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NEEDED_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)

static int reply_text(struct ctl_req *req, int status, const char *text)
{
    return ctl_reply(req, status, text, text ? strlen(text) : 0);
}

/* Reads the whole sealed memfd into *out (malloc'd). */
static int read_object(int fd, uint8_t **out, size_t *size, char *msg, size_t msglen)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & NEEDED_SEALS) != NEEDED_SEALS || fstat(fd, &st)) {
        snprintf(msg, msglen, "the object must come as a memfd sealed against writing, "
                 "shrinking and growing");
        return -EINVAL;
    }
    if (st.st_size > (off_t)PROGS_OBJ_MAX) {
        snprintf(msg, msglen, "object of %lld bytes is over the device's limit of %u bytes",
                 (long long)st.st_size, PROGS_OBJ_MAX);
        return -EFBIG;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return snprintf(msg, msglen, "out of memory"), -ENOMEM;
    ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
    if (n != st.st_size) {
        free(buf);
        snprintf(msg, msglen, "cannot read the object: %s", n < 0 ? strerror(errno) : "short");
        return -EIO;
    }
    *out = buf;
    *size = (size_t)n;
    return 0;
}

static int ctl_load(struct progs *p, struct ctl_req *req)
{
    char name[PROGS_NAME_MAX], func[PROGS_NAME_MAX], msg[1400] = "";
    if (req->len < PW_LOAD_REQ_SIZE || pw_get_name(req->payload + 8, name) ||
        pw_get_name(req->payload + 8 + PROGS_NAME_MAX, func))
        return reply_text(req, -EINVAL, "malformed load request");
    if (req->rfd < 0)
        return reply_text(req, -EBADF, "no object descriptor came with the request");
    uint8_t *obj;
    size_t size;
    int r = read_object(req->rfd, &obj, &size, msg, sizeof(msg));
    if (r)
        return reply_text(req, r, msg);
    struct progs_load_req rq = { obj, size, name, func,
                                 (le32_get(req->payload) & PW_LOAD_SHARED) != 0,
                                 (uint32_t)req->peer->uid };
    struct progs_info info;
    r = progs_load(p, &rq, &info, msg, sizeof(msg));
    free(obj);
    if (r)
        return reply_text(req, r, msg);
    uint8_t rec[PW_INFO_SIZE];
    pw_info_encode(&info, rec);
    return ctl_reply(req, 0, rec, sizeof(rec));
}

struct list_out {
    uint8_t *buf;
    uint32_t count, next;
    size_t len, cap;
};

static int list_one(void *arg, const struct progs_info *info)
{
    struct list_out *o = arg;
    if (o->len + PW_INFO_SIZE > o->cap) {
        o->next = info->id;   /* the client asks again from here */
        return 1;
    }
    pw_info_encode(info, o->buf + o->len);
    o->len += PW_INFO_SIZE;
    o->count++;
    return 0;
}

static int ctl_list(struct progs *p, struct ctl_req *req)
{
    uint32_t from = req->len >= 4 ? le32_get(req->payload) : 0;
    struct list_out o = { malloc(CTL_MAX_PAYLOAD), 0, 0, PW_LIST_HDR, CTL_MAX_PAYLOAD - 4 };
    if (!o.buf)
        return reply_text(req, -ENOMEM, NULL);
    progs_list(p, from, list_one, &o);
    le32_put(o.buf, o.count);
    le32_put(o.buf + 4, o.next);
    ctl_reply(req, 0, o.buf, o.len);
    free(o.buf);
    return 0;
}

/* The (id, name) pair of a SHOW or UNLOAD request. */
static int target(const struct ctl_req *req, uint32_t *id, char name[PROGS_NAME_MAX])
{
    if (req->len < PW_NAME_REQ_SIZE || pw_get_name(req->payload + 4, name))
        return -EINVAL;
    *id = le32_get(req->payload);
    return 0;
}

static int ctl_show(struct progs *p, struct ctl_req *req)
{
    char name[PROGS_NAME_MAX];
    uint32_t id;
    int r = target(req, &id, name);
    if (r)
        return reply_text(req, r, NULL);
    size_t cap = CTL_MAX_PAYLOAD - 4;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return reply_text(req, -ENOMEM, NULL);
    struct progs_info info;
    char *text = (char *)buf + PW_INFO_SIZE;
    r = progs_show(p, (uint32_t)req->peer->uid, id, name, &info, text, cap - PW_INFO_SIZE);
    if (!r)
        pw_info_encode(&info, buf);
    ctl_reply(req, r, buf, r ? 0 : PW_INFO_SIZE + strlen(text));
    free(buf);
    return 0;
}

static int ctl_unload(struct progs *p, struct ctl_req *req)
{
    char name[PROGS_NAME_MAX];
    uint32_t id;
    int r = target(req, &id, name);
    if (!r)
        r = progs_unload(p, (uint32_t)req->peer->uid, id, name);
    return reply_text(req, r, NULL);
}

static int ctl_stream(struct progs *p, struct ctl_req *req, const void *owner)
{
    if (req->len < PW_STREAM_SIZE)
        return reply_text(req, -EINVAL, NULL);
    uint32_t op = le32_get(req->payload);
    uint64_t token = le64_get(req->payload + 8);
    uint8_t rep[8] = { 0 };
    int r = -EINVAL;
    if (op == PW_STREAM_OPEN)
        r = progs_stream_open(p, owner, (uint32_t)req->peer->uid, &token);
    else if (op == PW_STREAM_CLOSE)
        r = progs_stream_close(p, owner, token);
    le64_put(rep, token);
    return ctl_reply(req, r, rep, !r && op == PW_STREAM_OPEN ? sizeof(rep) : 0);
}

int progs_ctl_handle(struct progs *p, struct ctl_req *req, const void *owner)
{
    switch (req->type) {
    case CTL_PROG_LOAD: return ctl_load(p, req);
    case CTL_PROG_LIST: return ctl_list(p, req);
    case CTL_PROG_SHOW: return ctl_show(p, req);
    case CTL_PROG_UNLOAD: return ctl_unload(p, req);
    case CTL_PROG_STREAM: return ctl_stream(p, req, owner);
    default: return reply_text(req, -EOPNOTSUPP, NULL);
    }
}
