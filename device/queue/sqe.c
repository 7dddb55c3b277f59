/*
 * device/queue/sqe.c - one submission entry, already copied out of shared
 * memory, validated field by field into a private queue command (see
 * sqe.h).
 */
#include "device/queue/sqe.h"

#include "device/engine/fused/fused.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECTORY | O_NOFOLLOW)

static struct qp_cmd *cmd_new(struct qp *qp, const struct wire_sqe *s, unsigned op,
                              size_t extra)
{
    struct qp_cmd *qc = malloc(sizeof(*qc) + extra);
    if (!qc)
        return NULL;
    eng_cmd_init(&qc->c, op, &qp->sess->cred);
    qc->c.hdl = qp->sess->hdl;
    qc->c.chg = &qc->chg;
    qc->c.done = qp_cmd_done;
    qc->c.item.queue = qp->sched_id;
    qc->qp = qp;
    qc->next = NULL;
    qc->user_data = s->user_data;
    qc->wop = s->opcode;
    qc->res_off = 0;
    qc->res_len = 0;
    qc->rd_used = 0;
    qc->rd_next = 0;
    qc->rd_small = false;
    qc->chg.next = NULL;
    qc->chg.ninodes = qc->chg.nentries = 0;
    qc->cisc = NULL;
    return qc;
}

/* Checks a path reference: inside the arena, 1..PATH_MAX-1 bytes, no NUL. */
static int check_path(const struct qp *qp, uint64_t addr, uint64_t len)
{
    if (!qp_arena_ok(&qp->arena, addr, len))
        return -EFAULT;
    if (len == 0)
        return -ENOENT;
    if (len >= WIRE_PATH_MAX)
        return -ENAMETOOLONG;
    return 0;
}

/* Copies the path once into dst (len + 1 bytes) and checks it has no NUL. */
static int copy_path(const struct qp *qp, uint64_t addr, uint64_t len, char *dst)
{
    memcpy(dst, qp->arena.base + addr, len);
    dst[len] = '\0';
    return memchr(dst, '\0', len) ? -EINVAL : 0;
}

/* A command whose only operand is a path (OPEN, UNLINK, MKDIR, RMDIR,
 * READDIR, STAT by path). */
static int path_cmd(struct qp *qp, const struct wire_sqe *s, unsigned op,
                    struct qp_cmd **out)
{
    int r = check_path(qp, s->addr, s->len);
    if (r)
        return r;
    struct qp_cmd *qc = cmd_new(qp, s, op, s->len + 1);
    if (!qc)
        return -ENOMEM;
    r = copy_path(qp, s->addr, s->len, qc->paths);
    if (r) {
        free(qc);
        return r;
    }
    qc->c.path = qc->paths;
    *out = qc;
    return 0;
}

static int dec_open(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    if ((s->flags & O_ACCMODE) == O_ACCMODE)
        return -EINVAL;
    int r = path_cmd(qp, s, ENG_OP_OPEN_PATH, out);
    if (!r) {
        (*out)->c.flags = s->flags & OPEN_FLAGS;
        (*out)->c.mode = s->mode & 07777;
    }
    return r;
}

/* A data transfer: fh, off, and (addr, len) inside the arena. */
static int dec_data(struct qp *qp, const struct wire_sqe *s, unsigned op,
                    struct qp_cmd **out)
{
    if (!qp_arena_ok(&qp->arena, s->addr, s->len))
        return -EFAULT;
    if (s->off > INT64_MAX || s->len > INT64_MAX - s->off)
        return -EINVAL;
    struct qp_cmd *qc = cmd_new(qp, s, op, 0);
    if (!qc)
        return -ENOMEM;
    qc->c.fh = s->fh;
    qc->c.off = s->off;
    qc->c.size = s->len;
    if (op == ENG_OP_READ)
        qc->c.out = qp->arena.base + s->addr;
    else
        qc->c.in = qp->arena.base + s->addr;
    *out = qc;
    return 0;
}

/* A command on a handle with no buffer (CLOSE, TRUNCATE, FSYNC). */
static int dec_fh(struct qp *qp, const struct wire_sqe *s, unsigned op, struct qp_cmd **out)
{
    if (op == ENG_OP_FSYNC && (s->flags & ~1u))
        return -EINVAL;
    if (op == ENG_OP_FTRUNCATE && s->off > INT64_MAX)
        return -EINVAL;
    struct qp_cmd *qc = cmd_new(qp, s, op, 0);
    if (!qc)
        return -ENOMEM;
    qc->c.fh = s->fh;
    qc->c.off = s->off;
    qc->c.flags = op == ENG_OP_FSYNC ? s->flags : 0;
    *out = qc;
    return 0;
}

/* The result area (res_off, res_len) must lie in the arena and hold min. */
static int check_res(const struct qp *qp, const struct wire_sqe *s, uint32_t min)
{
    if (!qp_arena_ok(&qp->arena, s->res_off, s->res_len))
        return -EFAULT;
    return s->res_len < min ? -EINVAL : 0;
}

static int dec_stat(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    int r = check_res(qp, s, sizeof(struct wire_stat));
    if (r)
        return r;
    if (s->fh) {
        *out = cmd_new(qp, s, ENG_OP_FSTAT, 0);
        if (!*out)
            return -ENOMEM;
        (*out)->c.fh = s->fh;
    } else if ((r = path_cmd(qp, s, ENG_OP_STAT_PATH, out)) != 0) {
        return r;
    }
    (*out)->res_off = s->res_off;
    (*out)->res_len = s->res_len;
    return 0;
}

static int dec_mkdir(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    int r = path_cmd(qp, s, ENG_OP_MKDIR_PATH, out);
    if (!r)
        (*out)->c.mode = s->mode & 07777;
    return r;
}

static int dec_readdir(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    int r = check_res(qp, s, sizeof(struct wire_dirent) + 8);
    if (!r)
        r = path_cmd(qp, s, ENG_OP_READDIR_PATH, out);
    if (r)
        return r;
    struct qp_cmd *qc = *out;
    qc->res_off = s->res_off;
    qc->res_len = s->res_len;
    qc->c.off = s->off;
    qc->c.fill = qp_fill_dirent;
    qc->c.fill_arg = qc;
    return 0;
}

/* "old\0new": two non-empty paths without further NULs. */
static int dec_rename(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    if (s->flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE))
        return -EINVAL;
    if (!qp_arena_ok(&qp->arena, s->addr, s->len))
        return -EFAULT;
    if (s->len < 3 || s->len >= 2 * (uint64_t)WIRE_PATH_MAX)
        return s->len < 3 ? -ENOENT : -ENAMETOOLONG;
    struct qp_cmd *qc = cmd_new(qp, s, ENG_OP_RENAME_PATH, s->len + 1);
    if (!qc)
        return -ENOMEM;
    memcpy(qc->paths, qp->arena.base + s->addr, s->len);   /* the one copy */
    qc->paths[s->len] = '\0';
    size_t l1 = strlen(qc->paths);
    size_t l2 = l1 < s->len ? strlen(qc->paths + l1 + 1) : 0;
    int r = l1 == 0 || l1 >= s->len || l2 == 0 || l1 + 1 + l2 != s->len ? -EINVAL : 0;
    if (!r && (l1 >= WIRE_PATH_MAX || l2 >= WIRE_PATH_MAX))
        r = -ENAMETOOLONG;
    if (r) {
        free(qc);
        return r;
    }
    qc->c.path = qc->paths;
    qc->c.path2 = qc->paths + l1 + 1;
    qc->c.flags = ((s->flags & RENAME_NOREPLACE) ? ENG_RENAME_NOREPLACE : 0) |
                  ((s->flags & RENAME_EXCHANGE) ? ENG_RENAME_EXCHANGE : 0);
    *out = qc;
    return 0;
}

/* FALLOCATE: a handle and a range, no buffer. */
static int dec_fallocate(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    if (s->off > INT64_MAX || s->len > INT64_MAX - s->off)
        return -EFBIG;
    struct qp_cmd *qc = cmd_new(qp, s, ENG_OP_FALLOCATE, 0);
    if (!qc)
        return -ENOMEM;
    qc->c.fh = s->fh;
    qc->c.off = s->off;
    qc->c.len = s->len;
    qc->c.flags = s->flags;
    *out = qc;
    return 0;
}

/* "path\0name" (extended attributes), copied once with `extra` bytes of
 * room after it. An empty or too long name is -ERANGE before the path is
 * looked at, as the xattr(7) calls check it. */
static int path_name_cmd(struct qp *qp, const struct wire_sqe *s, unsigned op, size_t extra,
                         struct qp_cmd **out)
{
    if (!qp_arena_ok(&qp->arena, s->addr, s->len))
        return -EFAULT;
    if (s->len >= (uint64_t)WIRE_PATH_MAX + SFS_XATTR_NAME_MAX + 2)
        return -ENAMETOOLONG;
    struct qp_cmd *qc = cmd_new(qp, s, op, s->len + 1 + extra);
    if (!qc)
        return -ENOMEM;
    memcpy(qc->paths, qp->arena.base + s->addr, s->len);   /* the one copy */
    qc->paths[s->len] = '\0';
    size_t l1 = strlen(qc->paths);
    int r = l1 == s->len ? -EINVAL
            : l1 == 0    ? -ENOENT
            : l1 >= WIRE_PATH_MAX ? -ENAMETOOLONG
                                  : 0;
    size_t l2 = r ? 0 : s->len - l1 - 1;
    if (!r && strlen(qc->paths + l1 + 1) != l2)
        r = -EINVAL;   /* a NUL inside the name */
    if (!r && (l2 == 0 || l2 > SFS_XATTR_NAME_MAX))
        r = -ERANGE;
    if (r) {
        free(qc);
        return r;
    }
    qc->c.path = qc->paths;
    qc->c.name = qc->paths + l1 + 1;
    *out = qc;
    return 0;
}

/* The result area as an output buffer (res_len 0: the size only). */
static int xattr_out(struct qp *qp, const struct wire_sqe *s, struct qp_cmd *qc)
{
    if (!qp_arena_ok(&qp->arena, s->res_off, s->res_len))
        return -EFAULT;
    qc->c.out = s->res_len ? qp->arena.base + s->res_off : NULL;
    qc->c.size = s->res_len;
    return 0;
}

static int dec_getxattr(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    int r = path_name_cmd(qp, s, ENG_OP_GETXATTR_PATH, 0, out);
    if (!r && (r = xattr_out(qp, s, *out)) != 0)
        free(*out);
    return r;
}

static int dec_listxattr(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    int r = path_cmd(qp, s, ENG_OP_LISTXATTR_PATH, out);
    if (!r && (r = xattr_out(qp, s, *out)) != 0)
        free(*out);
    return r;
}

/* The value is copied once, after the names: the engine validates it
 * (an ACL) and stores what it validated. */
static int dec_setxattr(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    if (s->flags & ~(uint32_t)(XATTR_CREATE | XATTR_REPLACE))
        return -EINVAL;
    if (!qp_arena_ok(&qp->arena, s->res_off, s->res_len))
        return -EFAULT;
    if (s->res_len > SFS_XATTR_SIZE_MAX)
        return -E2BIG;
    int r = path_name_cmd(qp, s, ENG_OP_SETXATTR_PATH, s->res_len, out);
    if (r)
        return r;
    struct qp_cmd *qc = *out;
    char *v = qc->paths + s->len + 1;
    memcpy(v, qp->arena.base + s->res_off, s->res_len);
    qc->c.in = v;
    qc->c.size = s->res_len;
    qc->c.flags = (s->flags & XATTR_CREATE ? ENG_XATTR_CREATE : 0) |
                  (s->flags & XATTR_REPLACE ? ENG_XATTR_REPLACE : 0);
    return 0;
}

/* CISC: the step array and the result array inside the arena; the steps
 * are copied once into private memory and decoded (fop_decode checks
 * every step) into the command's vector. A vector the decoder refuses
 * still goes to the engine, which completes it with the decoder's status
 * and per-step results (and counts it). */
static int dec_cisc(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    uint64_t n = s->nsteps;
    if (n == 0 || n > WIRE_MAX_STEPS || s->len != n * sizeof(struct wire_step))
        return -EINVAL;
    if (!qp_arena_ok(&qp->arena, s->addr, s->len) ||
        !qp_arena_ok(&qp->arena, s->res_off, s->res_len))
        return -EFAULT;
    if (s->res_len < n * sizeof(struct wire_step_res) || (s->flags & ~WIRE_CISC_TX_MASK))
        return -EINVAL;
    struct qp_cmd *qc = cmd_new(qp, s, ENG_OP_CISC, 0);
    struct wire_step *steps = qc ? malloc(s->len) : NULL;
    if (qc)
        qc->cisc = steps ? malloc(sizeof(struct eng_cisc)) : NULL;
    if (!qc || !qc->cisc) {
        free(steps);
        free(qc);
        return -ENOMEM;
    }
    memcpy(steps, qp->arena.base + s->addr, s->len);   /* the one fetch */
    struct eng_arena a = { qp->arena.base, qp->arena.size };
    struct fop_limits lim;
    eng_fop_limits(qp->sess->svc->eng, &lim);
    fop_decode(qc->cisc, steps, (unsigned)n, &a, &lim, qp->sess->keys);
    qc->cisc->tx = (uint8_t)(s->flags & WIRE_CISC_TX_MASK);
    free(steps);   /* the vector keeps what it needs (paths copied) */
    qc->c.cisc = qc->cisc;
    qc->res_off = s->res_off;
    qc->res_len = s->res_len;
    *out = qc;
    return 0;
}

int qp_sqe_decode(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
{
    if (s->sqe_flags)
        return -EINVAL;   /* no flag has a meaning yet */
    switch (s->opcode) {
    case WIRE_OP_NOP: return (*out = cmd_new(qp, s, ENG_OP_NOP, 0)) ? 0 : -ENOMEM;
    case WIRE_OP_OPEN: return dec_open(qp, s, out);
    case WIRE_OP_CLOSE: return dec_fh(qp, s, ENG_OP_RELEASE, out);
    case WIRE_OP_READ: return dec_data(qp, s, ENG_OP_READ, out);
    case WIRE_OP_WRITE: return dec_data(qp, s, ENG_OP_WRITE, out);
    case WIRE_OP_APPEND: return dec_data(qp, s, ENG_OP_APPEND, out);
    case WIRE_OP_TRUNCATE: return dec_fh(qp, s, ENG_OP_FTRUNCATE, out);
    case WIRE_OP_FSYNC: return dec_fh(qp, s, ENG_OP_FSYNC, out);
    case WIRE_OP_STAT: return dec_stat(qp, s, out);
    case WIRE_OP_UNLINK: return path_cmd(qp, s, ENG_OP_UNLINK_PATH, out);
    case WIRE_OP_MKDIR: return dec_mkdir(qp, s, out);
    case WIRE_OP_RENAME: return dec_rename(qp, s, out);
    case WIRE_OP_READDIR: return dec_readdir(qp, s, out);
    case WIRE_OP_RMDIR: return path_cmd(qp, s, ENG_OP_RMDIR_PATH, out);
    case WIRE_OP_FALLOCATE: return dec_fallocate(qp, s, out);
    case WIRE_OP_GETXATTR: return dec_getxattr(qp, s, out);
    case WIRE_OP_SETXATTR: return dec_setxattr(qp, s, out);
    case WIRE_OP_LISTXATTR: return dec_listxattr(qp, s, out);
    case WIRE_OP_REMOVEXATTR: return path_name_cmd(qp, s, ENG_OP_REMOVEXATTR_PATH, 0, out);
    case WIRE_OP_CISC: return dec_cisc(qp, s, out);
    default: return -EINVAL;
    }
}
