/*
 * fusefs/fusefs_ops.c - one handler per FUSE low-level operation.
 *
 * A handler copies what it needs out of the request (names, small write
 * data: libfuse reuses the thread's buffer once the handler returns) into
 * a `struct freq`, submits the command and returns, so the FUSE thread goes
 * back to /dev/fuse at once. The device core that executes the command
 * also sends the reply (freq_done -> r->reply) and frees the freq: one
 * thread switch per request instead of two. Large writes are the exception:
 * their data stays in libfuse's buffer, so the handler waits
 * (fusefs_delay_call) rather than copy a megabyte. Under the flash model a
 * reply whose media time lies ahead is held (fusefs_delay.c).
 */
#include "fusefs/fusefs_int.h"
#include "device/media/flash_media.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Background requests the kernel may have in flight (--writeback). */
#define FUSEFS_MAX_BACKGROUND 64u

/* Writes up to this size are copied and completed asynchronously. */
#define FUSEFS_COPY_WRITE (64u * 1024)

struct freq;
typedef void (*freq_reply_fn)(struct freq *r);

struct freq {
    struct eng_cmd c;
    fuse_req_t req;
    struct fusefs *f;
    freq_reply_fn reply;           /* runs on the device core */
    struct fuse_file_info fi;      /* open/create/opendir replies */
    char *buf;                     /* owned: read data, readdir, xattr, copies */
    size_t len;                    /* readdir: bytes filled */
    uint64_t *refs;                /* readdirplus: inodes given a reference */
    size_t nrefs;
    bool replied;                  /* READ: the map callback sent the reply */
    bool copied;                   /* READ: buf holds len bytes to send when due */
    struct fusefs_held held;       /* the reply, held for the flash model */
    char name[SFS_NAME_MAX + 1], name2[SFS_NAME_MAX + 1];
};

static int req_groups(void *arg, uint32_t *groups, unsigned max)
{
    gid_t g[ENG_GROUPS_MAX];
    int n = fuse_req_getgroups(arg, (int)(max < ENG_GROUPS_MAX ? max : ENG_GROUPS_MAX), g);
    if (n < 0)
        return n;
    if ((unsigned)n > max)
        n = (int)max;
    for (int i = 0; i < n; i++)
        groups[i] = g[i];
    return n;
}

/* A command carrying the caller's credentials from the kernel. */
static void cmd_init(struct eng_cmd *c, unsigned op, fuse_req_t req)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    const struct fusefs *f = fuse_req_userdata(req);
    /* The kernel names the calling thread; a tenant is its process. */
    pid_t pid = f->tenant_pid ? (pid_t)fusefs_tgid((uint32_t)ctx->pid) : ctx->pid;
    struct eng_cred cred = {
        .uid = ctx->uid, .gid = ctx->gid, .pid = pid, .ngroups = -1,
        .groups_fn = req_groups, .groups_arg = req,
    };
    eng_cmd_init(c, op, &cred);
    c->umask = ctx->umask;   /* creating ops: DONT_MASK leaves it to the device */
}

static struct freq *freq_new(fuse_req_t req, unsigned op, freq_reply_fn reply)
{
    struct freq *r = malloc(sizeof(*r));
    if (!r) {
        fuse_reply_err(req, ENOMEM);
        return NULL;
    }
    cmd_init(&r->c, op, req);
    r->req = req;
    r->f = fuse_req_userdata(req);
    if (!__atomic_load_n(&r->f->ra_done, __ATOMIC_RELAXED))
        fusefs_raise_readahead(r->f);
    r->reply = reply;
    r->buf = NULL;
    r->len = 0;
    r->refs = NULL;
    r->nrefs = 0;
    r->replied = false;
    r->copied = false;
    return r;
}

static void freq_free(struct freq *r)
{
    free(r->buf);
    free(r->refs);
    free(r);
}

/* Copies a name out of the request buffer. */
static int freq_name(struct freq *r, char *dst, const char *name)
{
    size_t n = strlen(name);
    if (n > SFS_NAME_MAX)
        return -ENAMETOOLONG;
    memcpy(dst, name, n + 1);
    return 0;
}

static void freq_fire(struct fusefs_held *h)
{
    struct freq *r = (struct freq *)((char *)h - offsetof(struct freq, held));
    r->reply(r);
    freq_free(r);
}

static void freq_done(struct eng_cmd *c)
{
    struct freq *r = (struct freq *)c;
    r->held.fire = freq_fire;
    if (!fusefs_delay_hold(r->f, &r->held, c->item.t_submit_ns))   /* flash model */
        freq_fire(&r->held);
}

/* Submits r; on any failure replies the error and frees r. */
static void freq_submit(struct freq *r, int err)
{
    if (!err) {
        r->c.done = freq_done;
        err = eng_submit(r->f->eng, &r->c);
    }
    if (err) {
        fuse_reply_err(r->req, -err);
        freq_free(r);
    }
}

static void free_cmd(struct eng_cmd *c)
{
    (void)flash_media_deadline_take(NULL);   /* no reply: not the next command's time */
    free(c);
}

/* Fire-and-forget command (FORGET, RELEASE) with no credentials: the
 * kernel never saw what it gives back, or is done with it. */
static void background(struct fusefs *f, unsigned op, uint64_t ino, uint64_t n, uint64_t fh)
{
    struct eng_cmd *c = malloc(sizeof(*c));
    if (!c)
        return;
    eng_cmd_init(c, op, NULL);
    if (op == ENG_OP_FORGET)
        fusefs_known_sub(f, ino, n);   /* every kernel reference returns here */
    c->ino = ino;
    c->len = n;
    c->fh = fh;
    c->done = free_cmd;
    if (eng_submit(f->eng, c))
        free(c);
}

void fusefs_to_stat(const struct sfs_attr *a, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = a->ino;
    st->st_mode = a->mode;
    st->st_nlink = a->nlink;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_rdev = a->rdev;
    st->st_size = (off_t)a->size;
    st->st_blksize = SFS_BLOCK_SIZE;
    st->st_blocks = (blkcnt_t)a->blocks;
    st->st_atim = a->atime;
    st->st_mtim = a->mtime;
    st->st_ctim = a->ctime;
}

static void to_entry(const struct sfs_attr *a, struct fuse_entry_param *e)
{
    memset(e, 0, sizeof(*e));
    e->ino = a->ino;
    e->generation = a->generation;
    fusefs_to_stat(a, &e->attr);
    e->attr_timeout = FUSEFS_TIMEOUT;
    e->entry_timeout = FUSEFS_TIMEOUT;
}

/* ---- replies (on the device core) --------------------------------------- */

static bool failed(struct freq *r)
{
    if (r->c.ret >= 0)
        return false;
    fuse_reply_err(r->req, (int)-r->c.ret);
    return true;
}

static void reply_status(struct freq *r)
{
    fuse_reply_err(r->req, r->c.ret < 0 ? (int)-r->c.ret : 0);
}

static void reply_entry(struct freq *r)
{
    struct fuse_entry_param e;
    if (r->c.op == ENG_OP_LOOKUP && r->c.ret == -ENOENT) {
        /* Negative entry: the kernel caches the absence for the timeout. */
        memset(&e, 0, sizeof(e));
        e.entry_timeout = FUSEFS_TIMEOUT;
        fuse_reply_entry(r->req, &e);
        return;
    }
    if (failed(r))
        return;
    to_entry(&r->c.attr, &e);
    fusefs_known_add(r->f, e.ino);   /* before the kernel can cache it */
    if (fuse_reply_entry(r->req, &e) < 0)   /* invariant 2 */
        background(r->f, ENG_OP_FORGET, r->c.attr.ino, 1, 0);
}

static void reply_attr(struct freq *r)
{
    struct stat st;
    if (failed(r))
        return;
    fusefs_to_stat(&r->c.attr, &st);
    fuse_reply_attr(r->req, &st, FUSEFS_TIMEOUT);
}

static void set_open_flags(struct fuse_file_info *fi, uint64_t fh)
{
    fi->fh = fh;
    fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
    fi->keep_cache = fi->direct_io ? 0 : 1;
    fi->noflush = 1;   /* flush has nothing to do: locks are the kernel's */
}

/* A file open for writing under the writeback cache is counted (wback.c)
 * before its reply lets the kernel dirty pages of it. Returns 1 if
 * counted, 0 if not to be counted, or -ENOMEM. */
static int wback_opened(struct fusefs *f, const struct fuse_file_info *fi, uint64_t ino)
{
    if (!f->writeback || !fusefs_wback_writable(fi->flags))
        return 0;
    int r = fusefs_wback_open(f, ino);
    return r ? r : 1;
}

/* Replies to OPEN (of a file): fh opened by the engine. */
static void open_replied(fuse_req_t req, struct fusefs *f, struct fuse_file_info *fi,
                         uint64_t ino, uint64_t fh)
{
    set_open_flags(fi, fh);
    int counted = wback_opened(f, fi, ino);
    if (counted < 0) {
        background(f, ENG_OP_RELEASE, 0, 0, fh);
        fuse_reply_err(req, -counted);
        return;
    }
    if (fuse_reply_open(req, fi) < 0) {
        background(f, ENG_OP_RELEASE, 0, 0, fh);
        if (counted)
            fusefs_wback_release(f, ino);
    }
}

static void reply_open(struct freq *r)
{
    if (failed(r))
        return;
    if (r->c.op == ENG_OP_OPEN) {
        open_replied(r->req, r->f, &r->fi, r->c.ino, r->c.out_fh);
        return;
    }
    r->fi.fh = r->c.out_fh;
    if (fuse_reply_open(r->req, &r->fi) < 0)
        background(r->f, ENG_OP_RELEASE, 0, 0, r->c.out_fh);
}

static void reply_create(struct freq *r)
{
    struct fuse_entry_param e;
    if (failed(r))
        return;
    to_entry(&r->c.attr, &e);
    set_open_flags(&r->fi, r->c.out_fh);
    fusefs_known_add(r->f, e.ino);
    int counted = wback_opened(r->f, &r->fi, e.ino);
    if (counted < 0) {   /* the file exists now; this open of it fails */
        background(r->f, ENG_OP_RELEASE, 0, 0, r->c.out_fh);
        background(r->f, ENG_OP_FORGET, r->c.attr.ino, 1, 0);
        fuse_reply_err(r->req, -counted);
        return;
    }
    if (fuse_reply_create(r->req, &e, &r->fi) < 0) {
        background(r->f, ENG_OP_RELEASE, 0, 0, r->c.out_fh);
        background(r->f, ENG_OP_FORGET, r->c.attr.ino, 1, 0);
        if (counted)
            fusefs_wback_release(r->f, e.ino);
    }
}

/* Zeros for holes in read replies (never written). */
static char zero_pages[FUSEFS_MAX_READ];

static void seg_to_buf(const struct sfs_seg *g, struct fuse_buf *b)
{
    memset(b, 0, sizeof(*b));
    b->size = (size_t)g->len;
    if (g->kind == SFS_SEG_FD) {
        b->flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
        b->fd = g->fd;
        b->pos = (off_t)g->pos;
    } else {
        b->mem = g->kind == SFS_SEG_MEM ? (void *)g->mem : zero_pages;
    }
}

/* READ's zero-copy reply, called by StorageFS with the file locked: the
 * image ranges are spliced into /dev/fuse (libfuse copies instead when
 * splicing is not possible, or when this thread may not splice: see
 * fusefs_loop_can_splice). The request is answered either way. */
static int reply_map(void *arg, const struct sfs_seg *segs, unsigned n, size_t total)
{
    (void)total;
    struct freq *r = arg;
    if (fusefs_delay_pending()) {   /* held for the flash model: send a copy later */
        int n_copied = fusefs_delay_copy(segs, n, total, &r->buf);
        r->copied = n_copied >= 0;
        r->len = n_copied >= 0 ? (size_t)n_copied : 0;
        return n_copied < 0 ? n_copied : 0;
    }
    union {
        struct fuse_bufvec v;
        char room[sizeof(struct fuse_bufvec) + 31 * sizeof(struct fuse_buf)];
    } small;
    struct fuse_bufvec *bv = n <= 32 ? &small.v
                                     : malloc(sizeof(*bv) + (n - 1) * sizeof(struct fuse_buf));
    r->replied = true;
    if (n == 0)                  /* at or past EOF */
        return fuse_reply_buf(r->req, NULL, 0) < 0 ? -EIO : 0;
    if (!bv) {
        fuse_reply_err(r->req, ENOMEM);
        return -ENOMEM;
    }
    memset(bv, 0, sizeof(*bv));
    bv->count = n;
    for (unsigned i = 0; i < n; i++)
        seg_to_buf(&segs[i], &bv->buf[i]);
    int rc = fuse_reply_data(r->req, bv, fusefs_loop_can_splice() ? 0 : FUSE_BUF_NO_SPLICE);
    if (bv != &small.v)
        free(bv);
    return rc < 0 ? rc : 0;
}

static void reply_read(struct freq *r)
{
    if (r->copied)
        fuse_reply_buf(r->req, r->buf, r->len);
    else if (!r->replied)      /* failed before the map callback */
        fuse_reply_err(r->req, r->c.ret < 0 ? (int)-r->c.ret : EIO);
}

static void reply_readlink(struct freq *r)
{
    if (failed(r))
        return;
    r->buf[r->c.ret] = '\0';
    fuse_reply_readlink(r->req, r->buf);
}

static void reply_write(struct freq *r)
{
    if (!failed(r))
        fuse_reply_write(r->req, (size_t)r->c.ret);
}

static void reply_xattr(struct freq *r)
{
    if (failed(r))
        return;
    if (r->c.size == 0)
        fuse_reply_xattr(r->req, (size_t)r->c.ret);
    else
        fuse_reply_buf(r->req, r->buf, (size_t)r->c.ret);
}

static void reply_lseek(struct freq *r)
{
    if (!failed(r))
        fuse_reply_lseek(r->req, (off_t)r->c.ret);
}

static void reply_statfs(struct freq *r)
{
    if (failed(r))
        return;
    struct sfs_statfs *s = &r->c.st;
    struct statvfs sv = {
        .f_bsize = s->block_size, .f_frsize = s->block_size, .f_blocks = s->blocks,
        .f_bfree = s->blocks_free, .f_bavail = s->blocks_free, .f_files = s->inodes,
        .f_ffree = s->inodes_free, .f_favail = s->inodes_free, .f_namemax = s->name_max,
    };
    fuse_reply_statfs(r->req, &sv);
}

static void reply_readdir(struct freq *r)
{
    if (r->c.ret < 0 && r->len == 0) {
        fuse_reply_err(r->req, (int)-r->c.ret);
        return;
    }
    if (fuse_reply_buf(r->req, r->buf, r->len) < 0)
        for (size_t i = 0; i < r->nrefs; i++)
            background(r->f, ENG_OP_FORGET, r->refs[i], 1, 0);
}

/* ---- lifecycle ------------------------------------------------------- */

static void ff_init(void *userdata, struct fuse_conn_info *conn)
{
    struct fusefs *f = userdata;
    long page = sysconf(_SC_PAGESIZE);
    f->page = page > 0 ? (uint64_t)page : 4096;   /* where the kernel cuts writes */
    /* The engine removes set-id bits and capabilities on every data
     * change, so the kernel need not ask (GETXATTR) before each write:
     * killpriv.c adds FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33) to our reply. */
    f->killpriv_v2 = conn->proto_major > 7 || (conn->proto_major == 7 && conn->proto_minor >= 33);
    conn->max_write = FUSEFS_MAX_IO;
    conn->max_read = FUSEFS_MAX_READ;   /* must match the max_read mount option */
    conn->max_readahead = conn->max_readahead > FUSEFS_MAX_IO ? FUSEFS_MAX_IO
                                                                 : conn->max_readahead;
    unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_PARALLEL_DIROPS |
                    FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO |
                    FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO |
                    FUSE_CAP_SPLICE_WRITE |  /* read replies spliced from the image */
                    /* POSIX ACLs: the kernel checks them (cached from GETXATTR),
                     * the device stores them, keeps the mode in step and
                     * inherits default ACLs, so the umask is the device's to
                     * apply (only without a default ACL: engine prepare_create) */
                    FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
    if (f->writeback) {   /* fusefs.h, invariant 5 */
        want |= FUSE_CAP_WRITEBACK_CACHE;
        /* Write-back sends page WRITEs as background requests, at most
         * max_background in flight (libfuse's default 12): more lets the
         * device cores run them side by side while one waits. */
        conn->max_background = FUSEFS_MAX_BACKGROUND;
        conn->congestion_threshold = FUSEFS_MAX_BACKGROUND * 3 / 4;
    }
    conn->want |= want & conn->capable;
    /* Locks stay in the kernel (see fusefs.h); no writeback cache unless
     * asked for: without it the device's view of size and times is the
     * truth. No splicing requests
     * in (libfuse's default with write_buf): it costs small requests a
     * second system call, and write data would still be copied out of
     * the pipe. */
    conn->want &= ~(unsigned)(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS |
                              (f->writeback ? 0 : FUSE_CAP_WRITEBACK_CACHE) |
                              FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_SPLICE_READ);
}

static void ff_destroy(void *userdata)
{
}

/* ---- names and attributes ------------------------------------------- */

/* The common shape: parent inode + one name, reply with entry or status. */
static void name_op(fuse_req_t req, unsigned op, fuse_ino_t parent, const char *name,
                    freq_reply_fn reply, struct freq **out)
{
    struct freq *r = freq_new(req, op, reply);
    *out = r;
    if (!r)
        return;
    r->c.ino = parent;
    r->c.name = r->name;
    int err = freq_name(r, r->name, name);
    if (err) {
        *out = NULL;
        freq_submit(r, err);
    }
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct freq *r;
    name_op(req, ENG_OP_LOOKUP, parent, name, reply_entry, &r);
    if (r)
        freq_submit(r, 0);
}

static void ff_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    background(fuse_req_userdata(req), ENG_OP_FORGET, ino, nlookup, 0);
    fuse_reply_none(req);
}

static void ff_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *fd)
{
    for (size_t i = 0; i < count; i++)
        background(fuse_req_userdata(req), ENG_OP_FORGET, fd[i].ino, fd[i].nlookup, 0);
    fuse_reply_none(req);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct freq *r = freq_new(req, ENG_OP_GETATTR, reply_attr);
    if (!r)
        return;
    r->c.ino = ino;
    freq_submit(r, 0);
}

static unsigned setattr_valid(int to_set)
{
    static const struct { int fuse; unsigned sfs; } map[] = {
        { FUSE_SET_ATTR_MODE, SFS_SET_MODE },   { FUSE_SET_ATTR_UID, SFS_SET_UID },
        { FUSE_SET_ATTR_GID, SFS_SET_GID },     { FUSE_SET_ATTR_SIZE, SFS_SET_SIZE },
        { FUSE_SET_ATTR_ATIME, SFS_SET_ATIME }, { FUSE_SET_ATTR_MTIME, SFS_SET_MTIME },
        { FUSE_SET_ATTR_ATIME_NOW, SFS_SET_ATIME_NOW },
        { FUSE_SET_ATTR_MTIME_NOW, SFS_SET_MTIME_NOW },
        { FUSE_SET_ATTR_CTIME, SFS_SET_CTIME },
    };
    unsigned v = 0;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (to_set & map[i].fuse)
            v |= map[i].sfs;
    /* "now" wins over an explicit time the kernel may also have filled */
    if (v & SFS_SET_ATIME_NOW)
        v &= ~SFS_SET_ATIME;
    if (v & SFS_SET_MTIME_NOW)
        v &= ~SFS_SET_MTIME;
    return v;
}

static void setattr_fill(struct eng_cmd *c, fuse_ino_t ino, const struct stat *attr,
                         int to_set, const struct fuse_file_info *fi)
{
    c->ino = ino;
    c->fh = fi ? fi->fh : 0;
    c->valid = setattr_valid(to_set);
    c->sattr.mode = attr->st_mode;
    c->sattr.uid = attr->st_uid;
    c->sattr.gid = attr->st_gid;
    c->sattr.size = (uint64_t)attr->st_size;
    c->sattr.atime = attr->st_atim;
    c->sattr.mtime = attr->st_mtim;
    c->sattr.ctime = attr->st_ctim;
}

/* A reply of a handler that waited for the engine itself (flush_times,
 * open_upgraded): held, like a freq's, until the media stamp of its
 * commands (fusefs_delay_call) under the flash model. */
struct held_sync {
    struct fusefs_held h;          /* first */
    fuse_req_t req;
    struct fusefs *f;
    int64_t r;                     /* the last command's result */
    struct stat st;                /* SETATTR */
    struct fuse_file_info fi;      /* OPEN */
    uint64_t ino, fh;              /* OPEN */
    void (*send)(struct held_sync *s);
};

static void sync_fire(struct fusefs_held *h)
{
    struct held_sync *s = (struct held_sync *)h;
    s->send(s);
    free(s);
}

/* Sends s's reply now, or a copy of s at at_ns when that lies ahead. */
static void sync_reply(struct held_sync *s, uint64_t submit_ns, uint64_t at_ns)
{
    struct held_sync *c = at_ns ? malloc(sizeof(*c)) : NULL;
    if (c) {
        *c = *s;
        c->h.fire = sync_fire;
        if (fusefs_delay_hold_at(s->f, &c->h, submit_ns, at_ns))
            return;
        free(c);
    }
    s->send(s);
}

static void send_attr(struct held_sync *s)
{
    if (s->r < 0)
        fuse_reply_err(s->req, (int)-s->r);
    else
        fuse_reply_attr(s->req, &s->st, FUSEFS_TIMEOUT);
}

/* Under the writeback cache the kernel keeps the times of the writes it
 * caches and sends them when it writes the inode back (fuse_flush_times:
 * mtime and ctime, through the writer's handle, with the credentials of
 * whoever closes the file or of the flusher). Explicit times are the
 * owner's to set; for another writer they become "now", which a writer may
 * set. Waits for the engine (twice at most). */
static void flush_times(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                        struct fuse_file_info *fi)
{
    struct held_sync s = { .req = req, .f = fuse_req_userdata(req), .send = send_attr };
    struct fusefs_call k;
    cmd_init(&k.c, ENG_OP_SETATTR, req);
    setattr_fill(&k.c, ino, attr, to_set, fi);
    s.r = fusefs_delay_call(s.f->eng, &k);
    uint64_t submit = k.c.item.t_submit_ns, at = k.at_ns;
    if (s.r == -EPERM) {
        cmd_init(&k.c, ENG_OP_SETATTR, req);
        setattr_fill(&k.c, ino, attr, to_set, fi);
        k.c.valid = SFS_SET_MTIME_NOW;
        s.r = fusefs_delay_call(s.f->eng, &k);
        at = k.at_ns > at ? k.at_ns : at;
    }
    if (s.r >= 0)
        fusefs_to_stat(&k.c.attr, &s.st);
    sync_reply(&s, submit, at);
}

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    struct fusefs *f = fuse_req_userdata(req);
    if (f->writeback && (to_set & FUSE_SET_ATTR_MODE) &&
        fusefs_wback_park(f, ino, (uint32_t)fuse_req_ctx(req)->pid, req))
        return;   /* a hold: answered when released (wback.c, 2) */
    if (f->writeback && (to_set & FUSE_SET_ATTR_SIZE) &&
        fusefs_wback_resizing(f, ino, (uint32_t)fuse_req_ctx(req)->pid)) {
        ff_getattr(req, ino, fi);   /* the kernel takes the device's size (wback.c, 3) */
        return;
    }
    if (f->writeback && fi && (to_set & ~FUSE_SET_ATTR_CTIME) == FUSE_SET_ATTR_MTIME) {
        flush_times(req, ino, attr, to_set, fi);
        return;
    }
    struct freq *r = freq_new(req, ENG_OP_SETATTR, reply_attr);
    if (!r)
        return;
    setattr_fill(&r->c, ino, attr, to_set, fi);
    freq_submit(r, 0);
}

static void ff_readlink(fuse_req_t req, fuse_ino_t ino)
{
    struct freq *r = freq_new(req, ENG_OP_READLINK, reply_readlink);
    if (!r)
        return;
    r->buf = malloc(SFS_SYMLINK_MAX + 1);
    r->c.ino = ino;
    r->c.out = r->buf;
    r->c.size = SFS_SYMLINK_MAX;
    freq_submit(r, r->buf ? 0 : -ENOMEM);
}

static void ff_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev)
{
    struct freq *r;
    name_op(req, ENG_OP_MKNOD, parent, name, reply_entry, &r);
    if (!r)
        return;
    r->c.mode = mode;
    r->c.rdev = rdev;
    freq_submit(r, 0);
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    struct freq *r;
    name_op(req, ENG_OP_MKDIR, parent, name, reply_entry, &r);
    if (!r)
        return;
    r->c.mode = mode;
    freq_submit(r, 0);
}

static void ff_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    struct freq *r;
    name_op(req, ENG_OP_SYMLINK, parent, name, reply_entry, &r);
    if (!r)
        return;
    r->buf = strdup(link);
    r->c.in = r->buf;
    freq_submit(r, r->buf ? 0 : -ENOMEM);
}

static void ff_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    struct freq *r;
    name_op(req, ENG_OP_LINK, newparent, newname, reply_entry, &r);
    if (!r)
        return;
    r->c.ino = ino;
    r->c.ino2 = newparent;
    freq_submit(r, 0);
}

static void ff_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct freq *r;
    name_op(req, ENG_OP_UNLINK, parent, name, reply_status, &r);
    if (r)
        freq_submit(r, 0);
}

static void ff_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct freq *r;
    name_op(req, ENG_OP_RMDIR, parent, name, reply_status, &r);
    if (r)
        freq_submit(r, 0);
}

static void ff_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
    if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
        fuse_reply_err(req, EINVAL);   /* RENAME_WHITEOUT: no overlay support */
        return;
    }
    struct freq *r;
    name_op(req, ENG_OP_RENAME, parent, name, reply_status, &r);
    if (!r)
        return;
    r->c.ino2 = newparent;
    r->c.name2 = r->name2;
    r->c.flags = (flags & RENAME_NOREPLACE ? ENG_RENAME_NOREPLACE : 0) |
                 (flags & RENAME_EXCHANGE ? ENG_RENAME_EXCHANGE : 0);
    freq_submit(r, freq_name(r, r->name2, newname));
}

/* ---- files ------------------------------------------------------------ */

/* The flags the engine opens a file with. Under the writeback cache the
 * kernel writes dirty pages at their offsets (so no O_APPEND: it keeps
 * appends in order itself) and reads a page before writing part of it,
 * through any handle (so a write-only open becomes read-write). */
static uint32_t engine_open_flags(const struct fusefs *f, int flags)
{
    if (!f->writeback)
        return (uint32_t)flags;
    flags &= ~O_APPEND;
    if ((flags & O_ACCMODE) == O_WRONLY)
        flags = (flags & ~O_ACCMODE) | O_RDWR;
    return (uint32_t)flags;
}

static void send_open(struct held_sync *s)
{
    if (s->r < 0)
        fuse_reply_err(s->req, (int)-s->r);
    else
        open_replied(s->req, s->f, &s->fi, s->ino, s->fh);
}

/* OPEN of a write-only file under the writeback cache: read-write if the
 * caller may read it too, else write-only (then the kernel cannot fill a
 * page it writes part of: such writes fail with EBADF). Waits for the
 * engine, like a large write. */
static void open_upgraded(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct held_sync s = { .req = req, .f = fuse_req_userdata(req), .r = -EACCES,
                           .fi = *fi, .ino = ino, .send = send_open };
    struct fusefs_call k;
    uint32_t flags[2] = { engine_open_flags(s.f, fi->flags), (uint32_t)fi->flags & ~O_APPEND };
    uint64_t submit = 0, at = 0;
    for (int i = 0; i < 2 && s.r == -EACCES; i++) {
        cmd_init(&k.c, ENG_OP_OPEN, req);
        k.c.ino = ino;
        k.c.flags = flags[i];
        s.r = fusefs_delay_call(s.f->eng, &k);
        submit = i ? submit : k.c.item.t_submit_ns;
        at = k.at_ns > at ? k.at_ns : at;
    }
    s.fh = k.c.out_fh;
    sync_reply(&s, submit, at);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct fusefs *f = fuse_req_userdata(req);
    if (f->writeback && (fi->flags & O_ACCMODE) == O_WRONLY) {
        open_upgraded(req, ino, fi);
        return;
    }
    struct freq *r = freq_new(req, ENG_OP_OPEN, reply_open);
    if (!r)
        return;
    r->fi = *fi;
    r->c.ino = ino;
    r->c.flags = engine_open_flags(f, fi->flags);
    freq_submit(r, 0);
}

/* O_TMPFILE (renamed CREATE, tmpfile.c): an unnamed file in parent,
 * answered as a create. */
static void unnamed_create(fuse_req_t req, fuse_ino_t parent, mode_t mode,
                           struct fuse_file_info *fi)
{
    struct freq *r = freq_new(req, ENG_OP_TMPFILE, reply_create);
    if (!r)
        return;
    r->fi = *fi;
    r->c.ino = parent;
    r->c.mode = mode;
    r->c.flags = engine_open_flags(r->f, fi->flags);
    freq_submit(r, 0);
}

static void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    if (fusefs_tmpfile_name(name)) {
        unnamed_create(req, parent, mode, fi);
        return;
    }
    struct freq *r;
    name_op(req, ENG_OP_CREATE, parent, name, reply_create, &r);
    if (!r)
        return;
    r->fi = *fi;
    r->c.mode = mode;
    r->c.flags = engine_open_flags(r->f, fi->flags);   /* a new file: any access */
    freq_submit(r, 0);
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct freq *r = freq_new(req, ENG_OP_READ, reply_read);
    if (!r)
        return;
    r->c.fh = fi->fh;
    r->c.off = (uint64_t)off;
    r->c.size = size > FUSEFS_MAX_READ ? FUSEFS_MAX_READ : size;
    r->c.map = reply_map;
    r->c.map_arg = r;
    freq_submit(r, 0);
}

/* What the engine learns about a WRITE (ENG_WRITE_*, device/engine/lease.h).
 * The kernel sends the pieces of one write(2) one by one, holding the
 * inode lock (we never ask for FOPEN_PARALLEL_DIRECT_WRITES), so no other
 * write through the mount comes between them. It cuts a buffered write(2)
 * only where a piece ends on a page boundary: after the first page when
 * the write starts inside a page the cache does not hold (kernel 6.x), and
 * after every full piece of max_write bytes (after max_pages pages, the
 * first one partial, before 6.x). An O_DIRECT piece is cut at the pages
 * of the caller's buffer instead: only a size that close to max_write says
 * more may follow. Write-back of mmap'd pages (writepage) continues no
 * write(2); it is ordered too so that no FUSE command ever waits for a
 * lease (eng_drain). */
static uint32_t write_flags(fuse_req_t req, const struct fuse_file_info *fi, off_t off,
                            size_t len)
{
    const uint64_t page = ((struct fusefs *)fuse_req_userdata(req))->page;
    const uint64_t max = FUSEFS_MAX_IO, o = (uint64_t)off, end = o + len;
    bool more = (fi->flags & O_DIRECT) ? len > max - page
                                       : end % page == 0 && (o % page != 0 || len >= max);
    return ENG_WRITE_ORDERED | (more && !fi->writepage ? ENG_WRITE_MORE : 0);
}

/* Large single-buffer writes: the data stays in libfuse's buffer and the
 * FUSE thread waits for the device core. */
static void write_in_place(fuse_req_t req, const void *data, size_t len, off_t off,
                           struct fuse_file_info *fi)
{
    struct fusefs *f = fuse_req_userdata(req);
    struct fusefs_call k;
    cmd_init(&k.c, ENG_OP_WRITE, req);
    k.c.fh = fi->fh;
    k.c.flags = write_flags(req, fi, off, len);
    k.c.off = (uint64_t)off;
    k.c.in = data;
    k.c.size = len;
    fusefs_delay_reply_write(f, req, fusefs_delay_call(f->eng, &k), &k);
}

static void ff_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                         struct fuse_file_info *fi)
{
    size_t len = fuse_buf_size(bufv);
    const struct fuse_buf *b = &bufv->buf[bufv->idx];
    bool simple = bufv->count - bufv->idx == 1 && !(b->flags & FUSE_BUF_IS_FD);
    if (simple && len > FUSEFS_COPY_WRITE) {
        write_in_place(req, (const char *)b->mem + bufv->off, len, off, fi);
        return;
    }
    struct freq *r = freq_new(req, ENG_OP_WRITE, reply_write);
    if (!r)
        return;
    r->buf = malloc(len ? len : 1);
    struct fuse_bufvec dst = FUSE_BUFVEC_INIT(len);
    dst.buf[0].mem = r->buf;
    ssize_t n = r->buf ? fuse_buf_copy(&dst, bufv, 0) : -ENOMEM;
    r->c.fh = fi->fh;
    r->c.off = (uint64_t)off;
    r->c.in = r->buf;
    r->c.size = n > 0 ? (size_t)n : 0;
    r->c.flags = write_flags(req, fi, off, r->c.size);
    freq_submit(r, n < 0 ? (int)n : 0);
}

static void fh_op(fuse_req_t req, unsigned op, struct fuse_file_info *fi, uint32_t flags)
{
    struct freq *r = freq_new(req, op, reply_status);
    if (!r)
        return;
    r->c.fh = fi->fh;
    r->c.flags = flags;
    freq_submit(r, 0);
}

static void ff_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_FLUSH, fi, 0);
}

static void ff_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct fusefs *f = fuse_req_userdata(req);
    /* The kernel wrote the file's dirty pages back before RELEASE. */
    if (f->writeback && fusefs_wback_writable(fi->flags))
        fusefs_wback_release(f, ino);
    fh_op(req, ENG_OP_RELEASE, fi, 0);
}

static void ff_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_FSYNC, fi, datasync ? 1 : 0);
}

/* ---- directories ------------------------------------------------------ */

static void ff_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct freq *r = freq_new(req, ENG_OP_OPENDIR, reply_open);
    if (!r)
        return;
    r->fi = *fi;
    r->c.ino = ino;
    freq_submit(r, 0);
}

static int fill_entry(void *arg, const struct sfs_dirent *de, const struct sfs_attr *a)
{
    struct freq *r = arg;
    size_t n, room = r->c.size - r->len;
    struct fuse_entry_param e = { .attr = { .st_ino = de->ino, .st_mode = de->type << 12 } };
    if (a)
        to_entry(a, &e);   /* else (readdirplus) node 0: the kernel looks it up on use */
    if (!r->c.plus)
        n = fuse_add_direntry(r->req, r->buf + r->len, room, de->name, &e.attr,
                              (off_t)de->next_cookie);
    else
        n = fuse_add_direntry_plus(r->req, r->buf + r->len, room, de->name, &e,
                                   (off_t)de->next_cookie);
    if (n > room)
        return 1;
    r->len += n;
    bool dot = de->name[0] == '.' &&
               (de->namelen == 1 || (de->namelen == 2 && de->name[1] == '.'));
    if (a && !dot) {
        r->refs[r->nrefs++] = de->ino;
        fusefs_known_add(r->f, de->ino);
    }
    return 0;
}

static void do_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
                       bool plus)
{
    struct freq *r = freq_new(req, ENG_OP_READDIR, reply_readdir);
    if (!r)
        return;
    r->buf = malloc(size ? size : 1);
    if (plus)   /* every entry takes at least 24 + 128 bytes */
        r->refs = malloc((size / 152 + 1) * sizeof(uint64_t));
    r->c.fh = fi->fh;
    r->c.off = (uint64_t)off;
    r->c.size = size;
    r->c.fill = fill_entry;
    r->c.fill_arg = r;
    r->c.plus = plus;
    freq_submit(r, !r->buf || (plus && !r->refs) ? -ENOMEM : 0);
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    do_readdir(req, size, off, fi, false);
}

static void ff_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    do_readdir(req, size, off, fi, true);
}

static void ff_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_RELEASEDIR, fi, 0);
}

static void ff_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_FSYNCDIR, fi, datasync ? 1 : 0);
}

/* ---- file system, xattrs, the rest -------------------------------------- */

static void ff_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct freq *r = freq_new(req, ENG_OP_STATFS, reply_statfs);
    if (r)
        freq_submit(r, 0);
}

static void ff_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    struct freq *r;
    name_op(req, ENG_OP_SETXATTR, ino, name, reply_status, &r);
    if (!r)
        return;
    r->buf = malloc(size ? size : 1);
    if (r->buf)
        memcpy(r->buf, value, size);
    r->c.in = r->buf;
    r->c.size = size;
    r->c.flags = (flags & XATTR_CREATE ? ENG_XATTR_CREATE : 0) |
                 (flags & XATTR_REPLACE ? ENG_XATTR_REPLACE : 0);
    freq_submit(r, r->buf ? 0 : -ENOMEM);
}

/* getxattr and listxattr share the size-0 probe convention. */
static void xattr_get(struct freq *r, fuse_ino_t ino, size_t size)
{
    r->buf = size ? malloc(size) : NULL;
    r->c.ino = ino;
    r->c.out = r->buf;
    r->c.size = size;
    freq_submit(r, size && !r->buf ? -ENOMEM : 0);
}

static void ff_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    struct freq *r;
    name_op(req, ENG_OP_GETXATTR, ino, name, reply_xattr, &r);
    if (r)
        xattr_get(r, ino, size);
}

static void ff_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    struct freq *r = freq_new(req, ENG_OP_LISTXATTR, reply_xattr);
    if (r)
        xattr_get(r, ino, size);
}

static void ff_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    struct freq *r;
    name_op(req, ENG_OP_REMOVEXATTR, ino, name, reply_status, &r);
    if (r)
        freq_submit(r, 0);
}

static void ff_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
    struct freq *r = freq_new(req, ENG_OP_ACCESS, reply_status);
    if (!r)
        return;
    r->c.ino = ino;
    r->c.mode = (uint32_t)mask;
    freq_submit(r, 0);
}

static void ff_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                         struct fuse_file_info *fi)
{
    struct freq *r = freq_new(req, ENG_OP_FALLOCATE, reply_status);
    if (!r)
        return;
    r->c.fh = fi->fh;
    r->c.flags = (uint32_t)mode;
    r->c.off = (uint64_t)off;
    r->c.len = (uint64_t)len;
    freq_submit(r, 0);
}

static void ff_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                     struct fuse_file_info *fi)
{
    if (((struct fusefs *)fuse_req_userdata(req))->writeback) {
        /* The kernel does not write dirty pages back before asking, so
         * the device's holes may be stale: ENOSYS makes the kernel answer
         * itself from now on (the whole size is data). */
        fuse_reply_err(req, ENOSYS);
        return;
    }
    struct freq *r = freq_new(req, ENG_OP_LSEEK, reply_lseek);
    if (!r)
        return;
    r->c.fh = fi->fh;
    r->c.off = (uint64_t)off;
    r->c.flags = (uint32_t)whence;
    freq_submit(r, 0);
}

static void ff_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                               struct fuse_file_info *fi_in, fuse_ino_t ino_out,
                               off_t off_out, struct fuse_file_info *fi_out, size_t len,
                               int flags)
{
    if (flags) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    struct freq *r = freq_new(req, ENG_OP_COPY_RANGE, reply_write);
    if (!r)
        return;
    r->c.fh = fi_in->fh;
    r->c.off = (uint64_t)off_in;
    r->c.fh2 = fi_out->fh;
    r->c.off2 = (uint64_t)off_out;
    r->c.len = len;
    freq_submit(r, 0);
}

const struct fuse_lowlevel_ops fusefs_ops = {
    .init = ff_init,
    .destroy = ff_destroy,
    .lookup = ff_lookup,
    .forget = ff_forget,
    .forget_multi = ff_forget_multi,
    .getattr = ff_getattr,
    .setattr = ff_setattr,
    .readlink = ff_readlink,
    .mknod = ff_mknod,
    .mkdir = ff_mkdir,
    .unlink = ff_unlink,
    .rmdir = ff_rmdir,
    .symlink = ff_symlink,
    .link = ff_link,
    .rename = ff_rename,
    .open = ff_open,
    .create = ff_create,
    .read = ff_read,
    .write_buf = ff_write_buf,
    .flush = ff_flush,
    .release = ff_release,
    .fsync = ff_fsync,
    .opendir = ff_opendir,
    .readdir = ff_readdir,
    .readdirplus = ff_readdirplus,
    .releasedir = ff_releasedir,
    .fsyncdir = ff_fsyncdir,
    .statfs = ff_statfs,
    .setxattr = ff_setxattr,
    .getxattr = ff_getxattr,
    .listxattr = ff_listxattr,
    .removexattr = ff_removexattr,
    .access = ff_access,
    .fallocate = ff_fallocate,
    .lseek = ff_lseek,
    .copy_file_range = ff_copy_file_range,
};
