/*
 * fusefs/fusefs_ops.c - one handler per FUSE low-level operation. Each
 * builds an engine command from the request, runs it on a device core
 * (eng_call) and replies exactly once.
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/xattr.h>

static struct fusefs *ff(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

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
    struct eng_cred cred = {
        .uid = ctx->uid, .gid = ctx->gid, .pid = ctx->pid, .ngroups = -1,
        .groups_fn = req_groups, .groups_arg = req,
    };
    eng_cmd_init(c, op, &cred);
}

static int64_t call(fuse_req_t req, struct eng_cmd *c)
{
    return eng_call(ff(req)->eng, c);
}

static void to_stat(const struct sfs_attr *a, struct stat *st)
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
    to_stat(a, &e->attr);
    e->attr_timeout = FUSEFS_TIMEOUT;
    e->entry_timeout = FUSEFS_TIMEOUT;
}

/* Gives back `n` references the kernel will never hold. */
static void forget_refs(struct fusefs *f, uint64_t ino, uint64_t n)
{
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_FORGET, NULL);
    c.ino = ino;
    c.len = n;
    eng_call(f->eng, &c);
}

static void reply_entry(fuse_req_t req, struct eng_cmd *c, int64_t r)
{
    if (r) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    struct fuse_entry_param e;
    struct fusefs *f = ff(req);
    to_entry(&c->attr, &e);
    if (fuse_reply_entry(req, &e) < 0)
        forget_refs(f, c->attr.ino, 1);   /* invariant 2 */
}

static void reply_attr(fuse_req_t req, struct eng_cmd *c, int64_t r)
{
    struct stat st;
    if (r) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    to_stat(&c->attr, &st);
    fuse_reply_attr(req, &st, FUSEFS_TIMEOUT);
}

static void reply_status(fuse_req_t req, int64_t r)
{
    fuse_reply_err(req, r < 0 ? (int)-r : 0);
}

/* ---- lifecycle ------------------------------------------------------- */

static void ff_init(void *userdata, struct fuse_conn_info *conn)
{
    conn->max_write = FUSEFS_MAX_IO;
    conn->max_read = FUSEFS_MAX_IO;   /* must match the max_read mount option */
    conn->max_readahead = conn->max_readahead > FUSEFS_MAX_IO ? FUSEFS_MAX_IO
                                                                 : conn->max_readahead;
    unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_PARALLEL_DIROPS |
                    FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO |
                    FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
    conn->want |= want & conn->capable;
    /* Locks stay in the kernel (see fusefs.h); no writeback cache: the
     * device's view of size and times is the truth. */
    conn->want &= ~(unsigned)(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS |
                              FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_HANDLE_KILLPRIV);
}

static void ff_destroy(void *userdata)
{
}

/* ---- names and attributes ------------------------------------------- */

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_LOOKUP, req);
    c.ino = parent;
    c.name = name;
    int64_t r = call(req, &c);
    if (r == -ENOENT) {
        /* Negative entry: the kernel caches the absence for the timeout. */
        struct fuse_entry_param e = { .ino = 0, .entry_timeout = FUSEFS_TIMEOUT };
        fuse_reply_entry(req, &e);
        return;
    }
    reply_entry(req, &c, r);
}

static void ff_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    forget_refs(ff(req), ino, nlookup);
    fuse_reply_none(req);
}

static void ff_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *fd)
{
    for (size_t i = 0; i < count; i++)
        forget_refs(ff(req), fd[i].ino, fd[i].nlookup);
    fuse_reply_none(req);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_GETATTR, req);
    c.ino = ino;
    reply_attr(req, &c, call(req, &c));
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

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_SETATTR, req);
    c.ino = ino;
    c.fh = fi ? fi->fh : 0;
    c.valid = setattr_valid(to_set);
    c.sattr.mode = attr->st_mode;
    c.sattr.uid = attr->st_uid;
    c.sattr.gid = attr->st_gid;
    c.sattr.size = (uint64_t)attr->st_size;
    c.sattr.atime = attr->st_atim;
    c.sattr.mtime = attr->st_mtim;
    c.sattr.ctime = attr->st_ctim;
    reply_attr(req, &c, call(req, &c));
}

static void ff_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char buf[SFS_SYMLINK_MAX + 1];
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_READLINK, req);
    c.ino = ino;
    c.out = buf;
    c.size = SFS_SYMLINK_MAX;
    int64_t r = call(req, &c);
    if (r < 0) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    buf[r] = '\0';
    fuse_reply_readlink(req, buf);
}

static void ff_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_MKNOD, req);
    c.ino = parent;
    c.name = name;
    c.mode = mode;
    c.rdev = rdev;
    reply_entry(req, &c, call(req, &c));
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_MKDIR, req);
    c.ino = parent;
    c.name = name;
    c.mode = mode;
    reply_entry(req, &c, call(req, &c));
}

static void ff_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_SYMLINK, req);
    c.ino = parent;
    c.name = name;
    c.in = link;
    reply_entry(req, &c, call(req, &c));
}

static void ff_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_LINK, req);
    c.ino = ino;
    c.ino2 = newparent;
    c.name = newname;
    reply_entry(req, &c, call(req, &c));
}

static void ff_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_UNLINK, req);
    c.ino = parent;
    c.name = name;
    reply_status(req, call(req, &c));
}

static void ff_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_RMDIR, req);
    c.ino = parent;
    c.name = name;
    reply_status(req, call(req, &c));
}

static void ff_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
    struct eng_cmd c;
    if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
        fuse_reply_err(req, EINVAL);   /* RENAME_WHITEOUT: no overlay support */
        return;
    }
    cmd_init(&c, ENG_OP_RENAME, req);
    c.ino = parent;
    c.name = name;
    c.ino2 = newparent;
    c.name2 = newname;
    c.flags = (flags & RENAME_NOREPLACE ? ENG_RENAME_NOREPLACE : 0) |
              (flags & RENAME_EXCHANGE ? ENG_RENAME_EXCHANGE : 0);
    reply_status(req, call(req, &c));
}

/* ---- files ------------------------------------------------------------ */

static void set_open_flags(struct fuse_file_info *fi, uint64_t fh)
{
    fi->fh = fh;
    fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
    fi->keep_cache = fi->direct_io ? 0 : 1;
}

/* The kernel never saw the handle: release it on the device. */
static void release_fh(struct fusefs *f, uint64_t fh)
{
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_RELEASE, NULL);
    c.fh = fh;
    eng_call(f->eng, &c);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_OPEN, req);
    c.ino = ino;
    c.flags = (uint32_t)fi->flags;
    int64_t r = call(req, &c);
    if (r) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    set_open_flags(fi, c.out_fh);
    if (fuse_reply_open(req, fi) < 0)
        release_fh(ff(req), c.out_fh);
}

static void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_CREATE, req);
    c.ino = parent;
    c.name = name;
    c.mode = mode;
    c.flags = (uint32_t)fi->flags;
    int64_t r = call(req, &c);
    if (r) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    struct fuse_entry_param e;
    to_entry(&c.attr, &e);
    set_open_flags(fi, c.out_fh);
    if (fuse_reply_create(req, &e, fi) < 0) {
        release_fh(ff(req), c.out_fh);
        forget_refs(ff(req), c.attr.ino, 1);
    }
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct eng_cmd c;
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    cmd_init(&c, ENG_OP_READ, req);
    c.fh = fi->fh;
    c.off = (uint64_t)off;
    c.out = buf;
    c.size = size;
    int64_t r = call(req, &c);
    if (r < 0)
        fuse_reply_err(req, (int)-r);
    else
        fuse_reply_buf(req, buf, (size_t)r);
    free(buf);
}

static void ff_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                         struct fuse_file_info *fi)
{
    size_t len = fuse_buf_size(bufv);
    const struct fuse_buf *b = &bufv->buf[bufv->idx];
    char *copy = NULL;
    const void *data;
    if (bufv->count - bufv->idx == 1 && !(b->flags & FUSE_BUF_IS_FD)) {
        data = (const char *)b->mem + bufv->off;
    } else {
        /* Scattered or spliced input: gather it into one buffer. */
        copy = malloc(len ? len : 1);
        struct fuse_bufvec dst = FUSE_BUFVEC_INIT(len);
        dst.buf[0].mem = copy;
        ssize_t n = copy ? fuse_buf_copy(&dst, bufv, 0) : -ENOMEM;
        if (n < 0) {
            free(copy);
            fuse_reply_err(req, (int)-n);
            return;
        }
        len = (size_t)n;
        data = copy;
    }
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_WRITE, req);
    c.fh = fi->fh;
    c.off = (uint64_t)off;
    c.in = data;
    c.size = len;
    int64_t r = call(req, &c);
    if (r < 0)
        fuse_reply_err(req, (int)-r);
    else
        fuse_reply_write(req, (size_t)r);
    free(copy);
}

static void fh_op(fuse_req_t req, unsigned op, struct fuse_file_info *fi, uint32_t flags)
{
    struct eng_cmd c;
    cmd_init(&c, op, req);
    c.fh = fi->fh;
    c.flags = flags;
    reply_status(req, call(req, &c));
}

static void ff_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_FLUSH, fi, 0);
}

static void ff_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_RELEASE, fi, 0);
}

static void ff_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    fh_op(req, ENG_OP_FSYNC, fi, datasync ? 1 : 0);
}

/* ---- directories ------------------------------------------------------ */

static void ff_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_OPENDIR, req);
    c.ino = ino;
    int64_t r = call(req, &c);
    if (r) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    fi->fh = c.out_fh;
    if (fuse_reply_open(req, fi) < 0)
        release_fh(ff(req), c.out_fh);
}

struct dirbuf {
    fuse_req_t req;
    char *buf;
    size_t size, len;
    uint64_t *refs;          /* inodes handed out with a reference (plus) */
    size_t nrefs;
};

static int fill_entry(void *arg, const struct sfs_dirent *de, const struct sfs_attr *a)
{
    struct dirbuf *d = arg;
    size_t n, room = d->size - d->len;
    if (!a) {
        struct stat st = { .st_ino = de->ino, .st_mode = de->type << 12 };
        n = fuse_add_direntry(d->req, d->buf + d->len, room, de->name, &st,
                              (off_t)de->next_cookie);
    } else {
        struct fuse_entry_param e;
        to_entry(a, &e);
        n = fuse_add_direntry_plus(d->req, d->buf + d->len, room, de->name, &e,
                                   (off_t)de->next_cookie);
    }
    if (n > room)
        return 1;
    d->len += n;
    bool dot = de->name[0] == '.' &&
               (de->namelen == 1 || (de->namelen == 2 && de->name[1] == '.'));
    if (a && !dot)
        d->refs[d->nrefs++] = de->ino;
    return 0;
}

static void do_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
                       bool plus)
{
    struct dirbuf d = { req, malloc(size ? size : 1), size, 0, NULL, 0 };
    if (plus)   /* every entry is at least 24 + 128 bytes long */
        d.refs = malloc((size / 152 + 1) * sizeof(uint64_t));
    if (!d.buf || (plus && !d.refs)) {
        free(d.buf);
        free(d.refs);
        fuse_reply_err(req, ENOMEM);
        return;
    }
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_READDIR, req);
    c.fh = fi->fh;
    c.off = (uint64_t)off;
    c.fill = fill_entry;
    c.fill_arg = &d;
    c.plus = plus;
    int64_t r = call(req, &c);
    if (r < 0 && d.len == 0)
        fuse_reply_err(req, (int)-r);
    else if (fuse_reply_buf(req, d.buf, d.len) < 0)
        for (size_t i = 0; i < d.nrefs; i++)
            forget_refs(ff(req), d.refs[i], 1);
    free(d.buf);
    free(d.refs);
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
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_STATFS, req);
    int64_t r = call(req, &c);
    if (r) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    struct statvfs sv = {
        .f_bsize = c.st.block_size, .f_frsize = c.st.block_size,
        .f_blocks = c.st.blocks, .f_bfree = c.st.blocks_free,
        .f_bavail = c.st.blocks_free, .f_files = c.st.inodes,
        .f_ffree = c.st.inodes_free, .f_favail = c.st.inodes_free,
        .f_namemax = c.st.name_max,
    };
    fuse_reply_statfs(req, &sv);
}

static void ff_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    struct eng_cmd c;
    if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    cmd_init(&c, ENG_OP_SETXATTR, req);
    c.ino = ino;
    c.name = name;
    c.in = value;
    c.size = size;
    c.flags = (flags & XATTR_CREATE ? ENG_XATTR_CREATE : 0) |
              (flags & XATTR_REPLACE ? ENG_XATTR_REPLACE : 0);
    reply_status(req, call(req, &c));
}

/* getxattr and listxattr share the size-0 probe convention. */
static void xattr_get(fuse_req_t req, unsigned op, fuse_ino_t ino, const char *name,
                      size_t size)
{
    struct eng_cmd c;
    char *buf = size ? malloc(size) : NULL;
    if (size && !buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    cmd_init(&c, op, req);
    c.ino = ino;
    c.name = name;
    c.out = buf;
    c.size = size;
    int64_t r = call(req, &c);
    if (r < 0)
        fuse_reply_err(req, (int)-r);
    else if (size == 0)
        fuse_reply_xattr(req, (size_t)r);
    else
        fuse_reply_buf(req, buf, (size_t)r);
    free(buf);
}

static void ff_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    xattr_get(req, ENG_OP_GETXATTR, ino, name, size);
}

static void ff_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    xattr_get(req, ENG_OP_LISTXATTR, ino, NULL, size);
}

static void ff_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_REMOVEXATTR, req);
    c.ino = ino;
    c.name = name;
    reply_status(req, call(req, &c));
}

static void ff_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_ACCESS, req);
    c.ino = ino;
    c.mode = (uint32_t)mask;
    reply_status(req, call(req, &c));
}

static void ff_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                         struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_FALLOCATE, req);
    c.fh = fi->fh;
    c.flags = (uint32_t)mode;
    c.off = (uint64_t)off;
    c.len = (uint64_t)len;
    reply_status(req, call(req, &c));
}

static void ff_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                     struct fuse_file_info *fi)
{
    struct eng_cmd c;
    cmd_init(&c, ENG_OP_LSEEK, req);
    c.fh = fi->fh;
    c.off = (uint64_t)off;
    c.flags = (uint32_t)whence;
    int64_t r = call(req, &c);
    if (r < 0)
        fuse_reply_err(req, (int)-r);
    else
        fuse_reply_lseek(req, (off_t)r);
}

static void ff_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                               struct fuse_file_info *fi_in, fuse_ino_t ino_out,
                               off_t off_out, struct fuse_file_info *fi_out, size_t len,
                               int flags)
{
    struct eng_cmd c;
    if (flags) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    cmd_init(&c, ENG_OP_COPY_RANGE, req);
    c.fh = fi_in->fh;
    c.off = (uint64_t)off_in;
    c.fh2 = fi_out->fh;
    c.off2 = (uint64_t)off_out;
    c.len = len;
    int64_t r = call(req, &c);
    if (r < 0)
        fuse_reply_err(req, (int)-r);
    else
        fuse_reply_write(req, (size_t)r);
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
