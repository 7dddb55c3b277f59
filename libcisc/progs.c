/* libcisc/progs.c - the program calls of <cisc/progs.h>: control requests
 * CTL_PROG_* (payloads: proto/progs_wire.h) on the session's socket. */
#include "libcisc/client_int.h"

#include <cisc/progs.h>

#include "proto/ctl.h"
#include "proto/progs_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (64u << 20)   /* a larger file is not an object the device takes */

_Static_assert(CISC_PROG_NAME_MAX == PROGS_NAME_MAX, "name sizes agree");
_Static_assert(CISC_PROG_SHARED == PROGS_F_SHARED && CISC_PROG_BROKEN == PROGS_F_BROKEN,
               "flags agree");

/* One request on the session's control socket (serialised by its lock). */
static ssize_t call(struct cisc_session *s, uint16_t type, const void *req, size_t len,
                    int pass_fd, int32_t *st, void *buf, size_t size)
{
    pthread_mutex_lock(&s->lock);
    ssize_t n = pass_fd >= 0 ? ctl_call_pass(s->fd, type, req, len, pass_fd, st, buf, size)
                             : ctl_call(s->fd, type, req, len, st, buf, size);
    pthread_mutex_unlock(&s->lock);
    if (n == -ECONNRESET || n == -EPIPE)
        return -ENOTCONN;
    return n;
}

static void info_out(const uint8_t *rec, struct cisc_prog_info *out)
{
    struct progs_info i;
    pw_info_decode(rec, &i);
    *out = (struct cisc_prog_info){ i.id, i.owner, i.flags, i.insns, i.load_time_ns, i.runs,
                                    i.invocations, i.insns_run, i.budget_hits, i.errors,
                                    i.bytes_in, i.bytes_out, i.obj_size, { 0 }, "", "" };
    memcpy(out->sha256, i.sha256, sizeof(out->sha256));
    memcpy(out->name, i.name, sizeof(out->name));
    memcpy(out->func, i.func, sizeof(out->func));
}

/* A memfd holding obj, sealed so the device may read it safely. */
static int sealed_memfd(const void *obj, size_t size)
{
    int fd = memfd_create("cisc-prog", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    const uint8_t *p = obj;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, p + off, size - off);
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            return -e;
        }
        off += (size_t)w;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

static void set_msg(char *msg, size_t msglen, const char *text, size_t len)
{
    if (!msg || !msglen)
        return;
    if (len >= msglen)
        len = msglen - 1;
    memcpy(msg, text, len);
    msg[len] = '\0';
}

CISC_API int cisc_prog_load(struct cisc_session *s, const void *obj, size_t size,
                            const struct cisc_prog_load_opts *o, struct cisc_prog_info *info,
                            char *msg, size_t msglen)
{
    set_msg(msg, msglen, "", 0);
    if (!s || (!obj && size))
        return -EINVAL;
    uint8_t req[PW_LOAD_REQ_SIZE] = { 0 };
    le32_put(req, o && o->shared ? PW_LOAD_SHARED : 0);
    pw_put_name(req + 8, o ? o->name : NULL);
    pw_put_name(req + 8 + PROGS_NAME_MAX, o ? o->func : NULL);
    int fd = sealed_memfd(obj, size);
    if (fd < 0)
        return fd;
    char *rep = malloc(CTL_MAX_PAYLOAD);
    int32_t st = 0;
    ssize_t n = rep ? call(s, CTL_PROG_LOAD, req, sizeof(req), fd, &st, rep, CTL_MAX_PAYLOAD)
                    : -ENOMEM;
    close(fd);
    int r = n < 0 ? (int)n : st;
    if (!r && n < (ssize_t)PW_INFO_SIZE)
        r = -EPROTO;
    if (!r && info)
        info_out((const uint8_t *)rep, info);
    if (r && n > 0)
        set_msg(msg, msglen, rep, (size_t)n);
    free(rep);
    return r;
}

/* Reads a whole host file (at most FILE_MAX bytes) into *out. */
static int read_file(const char *path, uint8_t **out, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -errno;
    int r = fstat(fd, &st) ? -errno : !S_ISREG(st.st_mode) ? -EINVAL
                                    : st.st_size > FILE_MAX ? -EFBIG : 0;
    uint8_t *buf = r ? NULL : malloc((size_t)st.st_size + 1);
    if (!r && !buf)
        r = -ENOMEM;
    size_t len = 0;
    while (!r && len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
        r = n < 0 ? -errno : n == 0 ? -EIO : 0;
        len += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    if (r) {
        free(buf);
        return r;
    }
    *out = buf;
    *size = len;
    return 0;
}

CISC_API int cisc_prog_load_file(struct cisc_session *s, const char *path,
                                 const struct cisc_prog_load_opts *o,
                                 struct cisc_prog_info *info, char *msg, size_t msglen)
{
    uint8_t *obj = NULL;     /* set by read_file when it returns 0 */
    size_t size = 0;
    int r = path ? read_file(path, &obj, &size) : -EINVAL;
    if (r) {
        if (msg && msglen)
            snprintf(msg, msglen, "%s: %s", path ? path : "(null)", strerror(-r));
        return r;
    }
    r = cisc_prog_load(s, obj, size, o, info, msg, msglen);
    free(obj);
    return r;
}

/* One page of the listing from id `from`; *next = 0 at the end. */
static int list_page(struct cisc_session *s, uint32_t from, uint32_t *next,
                     int (*fn)(void *, const struct cisc_prog_info *), void *arg, uint8_t *rep)
{
    uint8_t req[4];
    le32_put(req, from);
    int32_t st = 0;
    ssize_t n = call(s, CTL_PROG_LIST, req, sizeof(req), -1, &st, rep, CTL_MAX_PAYLOAD);
    int r = n < 0 ? (int)n : st ? st : n < (ssize_t)PW_LIST_HDR ? -EPROTO : 0;
    uint32_t count = r ? 0 : le32_get(rep);
    if (!r && (size_t)n < PW_LIST_HDR + (size_t)count * PW_INFO_SIZE)
        r = -EPROTO;
    *next = r ? 0 : le32_get(rep + 4);
    for (uint32_t i = 0; !r && i < count; i++) {
        struct cisc_prog_info info;
        info_out(rep + PW_LIST_HDR + (size_t)i * PW_INFO_SIZE, &info);
        if (fn(arg, &info)) {
            *next = 0;
            break;
        }
    }
    if (!r && *next && *next <= from)
        r = -EPROTO;   /* a device that does not move forward */
    return r;
}

CISC_API int cisc_prog_list(struct cisc_session *s,
                            int (*fn)(void *arg, const struct cisc_prog_info *info), void *arg)
{
    if (!s || !fn)
        return -EINVAL;
    uint8_t *rep = malloc(CTL_MAX_PAYLOAD);
    if (!rep)
        return -ENOMEM;
    uint32_t from = 0, next;
    int r;
    do {
        r = list_page(s, from, &next, fn, arg, rep);
        from = next;
    } while (!r && next);
    free(rep);
    return r;
}

/* The (id, name) request of SHOW and UNLOAD for prog. */
static int name_req(const char *prog, uint8_t req[PW_NAME_REQ_SIZE])
{
    if (!prog || !*prog || strlen(prog) >= PROGS_NAME_MAX)
        return prog && *prog ? -ENOENT : -EINVAL;
    char *end;
    unsigned long id = strtoul(prog, &end, 10);
    bool numeric = prog[0] >= '0' && prog[0] <= '9' && !*end;
    memset(req, 0, PW_NAME_REQ_SIZE);
    le32_put(req, numeric && id <= UINT32_MAX ? (uint32_t)id : 0);
    if (numeric && (id == 0 || id > UINT32_MAX))
        return -ENOENT;
    if (!numeric)
        pw_put_name(req + 4, prog);
    return 0;
}

CISC_API int cisc_prog_show(struct cisc_session *s, const char *prog,
                            struct cisc_prog_info *info, char *text, size_t textlen)
{
    uint8_t req[PW_NAME_REQ_SIZE];
    set_msg(text, textlen, "", 0);
    int r = s ? name_req(prog, req) : -EINVAL;
    if (r)
        return r;
    uint8_t *rep = malloc(CTL_MAX_PAYLOAD);
    int32_t st = 0;
    ssize_t n = rep ? call(s, CTL_PROG_SHOW, req, sizeof(req), -1, &st, rep, CTL_MAX_PAYLOAD)
                    : -ENOMEM;
    r = n < 0 ? (int)n : st ? st : n < (ssize_t)PW_INFO_SIZE ? -EPROTO : 0;
    if (!r && info)
        info_out(rep, info);
    if (!r)
        set_msg(text, textlen, (const char *)rep + PW_INFO_SIZE, (size_t)n - PW_INFO_SIZE);
    free(rep);
    return r;
}

CISC_API int cisc_prog_id(struct cisc_session *s, const char *prog, uint32_t *id)
{
    struct cisc_prog_info info;
    int r = cisc_prog_show(s, prog, &info, NULL, 0);
    if (!r && id)
        *id = info.id;
    return r;
}

CISC_API int cisc_prog_unload(struct cisc_session *s, const char *prog)
{
    uint8_t req[PW_NAME_REQ_SIZE];
    int r = s ? name_req(prog, req) : -EINVAL;
    if (r)
        return r;
    int32_t st = 0;
    ssize_t n = call(s, CTL_PROG_UNLOAD, req, sizeof(req), -1, &st, NULL, 0);
    return n < 0 ? (int)n : st;
}

static int stream_req(struct cisc_session *s, uint32_t op, uint64_t *token)
{
    uint8_t req[PW_STREAM_SIZE] = { 0 }, rep[8];
    le32_put(req, op);
    le64_put(req + 8, *token);
    int32_t st = 0;
    ssize_t n = call(s, CTL_PROG_STREAM, req, sizeof(req), -1, &st, rep, sizeof(rep));
    int r = n < 0 ? (int)n : st;
    if (!r && op == PW_STREAM_OPEN)
        *token = n == 8 ? le64_get(rep) : 0;
    return !r && op == PW_STREAM_OPEN && !*token ? -EPROTO : r;
}

CISC_API int cisc_prog_stream_open(struct cisc_session *s, uint64_t *stream)
{
    if (!s || !stream)
        return -EINVAL;
    *stream = 0;
    return stream_req(s, PW_STREAM_OPEN, stream);
}

CISC_API int cisc_prog_stream_close(struct cisc_session *s, uint64_t stream)
{
    return s ? stream_req(s, PW_STREAM_CLOSE, &stream) : -EINVAL;
}

/* ---- the bpf step builder -------------------------------------------------------- */

/* The step's argument block (struct wire_bpf_args) in the arena. */
static int bpf_args(struct cisc_vec *v, struct wire_step *s, const struct cisc_bpf_opts *o)
{
    struct wire_bpf_args a;
    memset(&a, 0, sizeof(a));
    memcpy(a.arg, o->arg, sizeof(a.arg));
    a.stream = o->stream;
    a.block_out = o->block_out;
    uint64_t off;
    int r = lc_vec_stage(v, &a, sizeof(a), &off);
    if (!r) {
        s->fh = off;
        s->flags2 |= WIRE_BPF_ARGS;
    }
    return r;
}

CISC_API int cisc_vec_bpf(struct cisc_vec *v, uint32_t prog_id, struct cisc_src in,
                          const struct cisc_bpf_opts *o)
{
    static const struct cisc_bpf_opts none;
    int i;
    struct wire_step *s = lc_vec_add(v, WIRE_STEP_BPF, &i);
    if (!s)
        return lc_vec_bad(v);
    o = o ? o : &none;
    if (!prog_id || o->out_cap > UINT32_MAX || (o->more && !o->stream))
        return lc_vec_drop(v, -EINVAL);
    s->key_id = prog_id;
    s->off = o->offset;
    s->len = o->block_size;
    s->out_cap = (uint32_t)o->out_cap;
    s->flags2 = o->more ? WIRE_BPF_MORE : 0;
    int r = bpf_args(v, s, o);
    if (!r)
        r = lc_vec_set_in(v, s, i, in);
    return r ? lc_vec_drop(v, r) : i;
}
