/* device/engine/fused/prep.c - phase 2 of a fused op (cisc.h): resolve every
 * step's file and check its permission with the client's credentials
 * before any step runs. */
#include "device/engine/fused/fused_int.h"

#include "device/engine/fused/bpfstep.h"
#include "device/engine/sysdir.h"
#include "device/compute/keys.h"
#include "device/engine/path.h"
#include "device/engine/perm.h"
#include "device/progs/progs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The files[] entry of inode ino, added (with a reference) if new. */
static int file_of_ino(struct fop_run *x, uint64_t ino, uint8_t *out)
{
    for (unsigned i = 0; i < x->nfiles; i++)
        if (x->files[i].ino == ino) {
            *out = (uint8_t)i;
            return 0;
        }
    if (x->nfiles == WIRE_MAX_STEPS)
        return -EINVAL;   /* cannot happen: at most one new file per step */
    struct sfs_inode *ip;
    int r = sfs_iget_ino(x->e->fs, ino, &ip);
    if (r)
        return r;
    x->files[x->nfiles] = (struct cfile){ .ino = ino, .ip = ip };
    *out = (uint8_t)x->nfiles++;
    return 0;
}

/* The op's own view of (dir, name): its file, FOP_NOFILE if removed,
 * or -1 when the op has not touched the name. */
static int ns_find(const struct fop_run *x, uint64_t dir, const char *name)
{
    for (unsigned i = x->nns; i-- > 0;)
        if (x->ns[i].parent == dir && !strcmp(x->ns[i].name, name))
            return x->ns[i].file;
    return -1;
}

static void ns_set(struct fop_run *x, uint64_t dir, const char *name, uint8_t file)
{
    if (x->nns < WIRE_MAX_STEPS)
        x->ns[x->nns++] = (struct fop_ns){ dir, name, file };
}

/* OPEN of a file that exists in StorageFS. */
static int open_existing(struct fop_run *x, unsigned i, const struct path_res *pr)
{
    const struct fop_step *s = &x->v->st[i];
    if ((s->oflags & O_CREAT) && (s->oflags & O_EXCL))
        return -EEXIST;
    if (S_ISDIR(pr->attr.mode))
        return -EISDIR;
    if (S_ISLNK(pr->attr.mode))
        return -ELOOP;   /* O_NOFOLLOW on a link */
    if (!S_ISREG(pr->attr.mode))
        return -EINVAL;
    int r = perm_check(x->cred, &pr->attr, perm_open_mask(s->oflags));
    return r ? r : file_of_ino(x, pr->attr.ino, &x->sfile[i]);
}

/* OPEN with O_CREAT of a missing name: a file the op will create. */
static int open_create(struct fop_run *x, unsigned i, const struct path_res *pr)
{
    const struct fop_step *s = &x->v->st[i];
    struct sfs_attr dir = pr->dir;
    int r = sysdir_check(pr->parent, pr->name, SYSDIR_RESERVED);   /* device/engine/sysdir.h */
    if (!r)
        r = perm_may_create(x->cred, &dir);
    if (r)
        return r;
    struct cfile *f = &x->files[x->nfiles];
    *f = (struct cfile){ .parent = pr->parent, .create = true,
                         .excl = (s->oflags & O_EXCL) != 0,
                         .cmode = S_IFREG | (s->mode & 07777) };
    perm_new_owner(x->cred, &dir, &f->cmode, &f->cuid, &f->cgid);
    memcpy(f->name, pr->name, sizeof(f->name));
    x->sfile[i] = (uint8_t)x->nfiles++;
    ns_set(x, f->parent, f->name, x->sfile[i]);
    return 0;
}

static int prep_open(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    struct path_res pr;
    int r = path_walk(x->e->fs, x->cred, s->path, !(s->oflags & O_NOFOLLOW), &pr);
    if (r)
        return r;
    if (!pr.name[0])
        return -EISDIR;   /* the root, "." or ".." */
    x->sacc[i] = s->oflags;
    int mine = ns_find(x, pr.parent, pr.name);
    if (mine >= 0 && mine != FOP_NOFILE) {   /* created earlier in this op */
        if ((s->oflags & O_CREAT) && (s->oflags & O_EXCL))
            return -EEXIST;
        x->sfile[i] = (uint8_t)mine;
        return 0;
    }
    if (pr.exists && mine < 0)
        return open_existing(x, i, &pr);
    if (!(s->oflags & O_CREAT))
        return -ENOENT;
    if (mine == FOP_NOFILE)
        return -EAGAIN;   /* re-creating a name the op removes: not supported */
    return open_create(x, i, &pr);
}

static int prep_unlink(struct fop_run *x, unsigned i)
{
    struct path_res pr;
    int r = path_walk(x->e->fs, x->cred, x->v->st[i].path, false, &pr);
    if (r)
        return r;
    if (!pr.name[0])
        return -EISDIR;
    int mine = ns_find(x, pr.parent, pr.name);
    if (mine == FOP_NOFILE || (mine < 0 && !pr.exists))
        return -ENOENT;
    if (mine >= 0) {
        x->sfile[i] = (uint8_t)mine;
    } else {
        if (S_ISDIR(pr.attr.mode))
            return -EISDIR;
        r = perm_may_delete(x->cred, &pr.dir, &pr.attr);
        if (!r)
            r = file_of_ino(x, pr.attr.ino, &x->sfile[i]);
        if (r)
            return r;
    }
    x->uparent[i] = pr.parent;
    memcpy(x->uname[i], pr.name, sizeof(pr.name));
    ns_set(x, pr.parent, x->uname[i], FOP_NOFILE);
    return 0;
}

static bool fh_closed(const struct fop_run *x, uint64_t fh)
{
    for (unsigned i = 0; i < x->nclosed_fh; i++)
        if (x->closed_fh[i] == fh)
            return true;
    return false;
}

/* Binds file step i to its file and the O_* flags of its handle. */
static int bind_file(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    if (!(s->flags & WIRE_STEP_F_FH)) {
        if (x->closed[s->file])
            return -EBADF;
        x->sfile[i] = x->sfile[s->file];
        x->sacc[i] = x->sacc[s->file];
        return 0;
    }
    if (fh_closed(x, s->fh))
        return -EBADF;
    for (unsigned j = 0; j < i; j++) {
        const struct fop_step *t = &x->v->st[j];
        if ((t->flags & WIRE_STEP_F_FH) && t->fh == s->fh && x->sfile[j] != FOP_NOFILE &&
            t->kind != WIRE_STEP_OPEN && t->kind != WIRE_STEP_UNLINK) {
            x->sfile[i] = x->sfile[j];   /* bound already: one handle lookup per op */
            x->sacc[i] = x->sacc[j];
            return 0;
        }
    }
    struct hdl h;
    int r = hdl_get(x->hdl, s->fh, &h);
    if (r)
        return r;
    if (h.dir)
        return -EISDIR;
    x->sacc[i] = h.flags;
    return file_of_ino(x, h.ino, &x->sfile[i]);
}

/* Access the step needs from its handle, as the POSIX call checks it. */
static int file_access(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    uint32_t acc = x->sacc[i] & O_ACCMODE;
    struct cfile *f = &x->files[x->sfile[i]];
    switch (s->kind) {
    case WIRE_STEP_READ:
        return acc == O_WRONLY ? -EBADF : 0;
    case WIRE_STEP_WRITE: case WIRE_STEP_APPEND: case WIRE_STEP_TRUNCATE:
        f->mutated = true;
        return acc == O_RDONLY ? -EBADF : 0;
    case WIRE_STEP_FSYNC:
        f->fsync = x->fsync = true;
        f->datasync = s->oflags & 1;
        return 0;
    case WIRE_STEP_CLOSE:
        if (s->flags & WIRE_STEP_F_FH)
            x->closed_fh[x->nclosed_fh++] = s->fh;
        else
            x->closed[s->file] = true;
        return 0;
    default:
        return -EINVAL;
    }
}

static int no_op(const uint8_t key[CKEY_BYTES], void *arg)
{
    return 0;
}

/* ---- recovery (oplog.h): what a replayed step needs ------------------- */

static bool replay_done(const struct fop_run *x, unsigned i)
{
    return x->v->replay && (x->v->replay->done >> i & 1);
}

/* A replayed step that cannot run fails alone (micro semantics): the
 * steps that depend on it are cancelled, the others still run. */
static int replay_fail(struct fop_run *x, unsigned i, int err)
{
    x->failed[i] = true;
    fop_fail_one(x->v, i, err);
    return 0;
}

/* Whether the registry's program info is the one the log names. */
static bool same_prog(const struct progs_info *info, const uint8_t *id)
{
    return !memcmp(info->sha256, id, 32) &&
           !strncmp(info->name, (const char *)id + 32, PROGS_NAME_MAX) &&
           !strncmp(info->func, (const char *)id + 32 + PROGS_NAME_MAX, PROGS_NAME_MAX);
}

/* A bpf step of a replayed op: its logged program, by id, or by name
 * when it was reloaded under a new id; run only when its content is the
 * logged one. -ESTALE when changed or unloaded. */
static int prep_bpf_replay(struct fop_run *x, unsigned i)
{
    struct fop_step *s = &x->v->st[i];
    const uint8_t *id = x->v->replay->prog_id[i];
    struct progs *p = x->e->progs;
    struct progs_info info;
    if (!p || !id)
        return replay_fail(x, i, -ESTALE);
    if (progs_show(p, 0, s->key_id, NULL, &info, NULL, 0) || !same_prog(&info, id)) {
        char name[PROGS_NAME_MAX];
        memcpy(name, id + 32, sizeof(name));
        name[sizeof(name) - 1] = '\0';
        /* Names are per owner: look in the op's owner's names first. */
        if (progs_show(p, x->cred->uid, 0, name, &info, NULL, 0) || !same_prog(&info, id))
            return replay_fail(x, i, -ESTALE);
        s->key_id = info.id;
    }
    int r = fop_bpf_prep(x, i);
    return r ? replay_fail(x, i, r == -ENOENT ? -ESTALE : r) : 0;
}

/* A replayed op: a committed UNLINK (its name is gone), bpf or keyed
 * step (their logged result stands in) needs nothing; the others are
 * checked as usual, with the logged credentials. Returns 1 when step i
 * needs its usual check. */
static int prep_replay(struct fop_run *x, unsigned i, int *r)
{
    unsigned kind = x->v->st[i].kind;
    bool special = kind == WIRE_STEP_UNLINK || kind == WIRE_STEP_BPF ||
                   kind == WIRE_STEP_ENCRYPT || kind == WIRE_STEP_DECRYPT;
    *r = 0;
    if (replay_done(x, i) || !special)
        return !special;
    if (kind == WIRE_STEP_BPF)
        *r = prep_bpf_replay(x, i);
    else if (kind == WIRE_STEP_ENCRYPT || kind == WIRE_STEP_DECRYPT)
        *r = replay_fail(x, i, -ENOKEY);   /* keys are not durable (oplog.h) */
    else
        return 1;   /* UNLINK not done: resolved and checked again */
    return 0;
}

static int prep_step(struct fop_run *x, unsigned i)
{
    const struct fop_step *s = &x->v->st[i];
    int r;
    x->sfile[i] = FOP_NOFILE;
    if (x->v->replay && !prep_replay(x, i, &r))
        return r;
    switch (s->kind) {
    case WIRE_STEP_OPEN:
        r = prep_open(x, i);
        if (!r && (s->oflags & O_TRUNC) && (s->oflags & O_ACCMODE) != O_RDONLY)
            x->files[x->sfile[i]].mutated = true;
        return r;
    case WIRE_STEP_UNLINK:
        return prep_unlink(x, i);
    case WIRE_STEP_ENCRYPT: case WIRE_STEP_DECRYPT:
        return ckey_with(x->v->keys, s->key_id, no_op, NULL);
    case WIRE_STEP_BPF:
        return fop_bpf_prep(x, i);   /* the program and its stream */
    case WIRE_STEP_CLOSE: case WIRE_STEP_READ: case WIRE_STEP_WRITE:
    case WIRE_STEP_APPEND: case WIRE_STEP_TRUNCATE: case WIRE_STEP_FSYNC:
        r = bind_file(x, i);
        return r ? r : file_access(x, i);
    default:
        return 0;   /* compute steps need nothing from the file system */
    }
}

int fop_prepare(struct fop_run *x)
{
    for (unsigned i = 0; i < x->v->n; i++) {
        int r = prep_step(x, i);
        if (r) {
            fop_res_fill(x->v, -ECANCELED);
            fop_fail(x->v, i, r);
            return r;
        }
    }
    return 0;
}

void fop_unprepare(struct fop_run *x)
{
    fop_bpf_unprep(x);
    for (unsigned i = 0; i < x->nfiles; i++)
        if (x->files[i].ip)
            sfs_iput_ino(x->e->fs, x->files[i].ip);
    for (unsigned i = 0; i < x->ndead; i++)
        sfs_iput_ino(x->e->fs, x->dead[i]);
    x->nfiles = x->ndead = 0;
}
