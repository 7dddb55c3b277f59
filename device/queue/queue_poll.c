/*
 * device/queue/queue_poll.c - the pollers: sweep queue pairs, fetch submissions
 * within the CQ's room, copy each SQE once, validate it into an engine
 * command, hand the sweep's commands to the scheduler; spin, then sleep
 * on every doorbell at once. See queue.h for the design.
 */
#include "device/queue/queue_int.h"

#include "common/clock.h"
#include "device/engine/fused/fused.h"
#include "device/sched/model.h"
#include "device/sched/sched.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449   /* the same number on every architecture */
#endif

#define OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECTORY | O_NOFOLLOW)

/* ---- validation: one SQE (already copied) -> one command ------------------ */

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
    qc->c.item.queue = qp->id;
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

static int fill_dirent(void *arg, const struct sfs_dirent *de, const struct sfs_attr *attr);

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
    qc->c.fill = fill_dirent;
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
    if (s->res_len < n * sizeof(struct wire_step_res) || s->flags)
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
    free(steps);   /* the vector keeps what it needs (paths copied) */
    qc->c.cisc = qc->cisc;
    qc->res_off = s->res_off;
    qc->res_len = s->res_len;
    *out = qc;
    return 0;
}

/* Validates the private copy s into a command. Returns 0 or -errno. */
static int decode(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out)
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
    case WIRE_OP_CISC: return dec_cisc(qp, s, out);
    default: return -EINVAL;
    }
}

/* READDIR output: one struct wire_dirent record per entry, written with
 * one copy into the result area. Returns 1 when full. */
static int fill_dirent(void *arg, const struct sfs_dirent *de, const struct sfs_attr *attr)
{
    struct qp_cmd *qc = arg;
    size_t nl = de->namelen > SFS_NAME_MAX ? SFS_NAME_MAX : de->namelen;
    size_t rec = (sizeof(struct wire_dirent) + nl + 1 + 7) & ~(size_t)7;
    if (qc->rd_used + rec > qc->res_len) {
        qc->rd_small = qc->rd_used == 0;
        return 1;
    }
    union {
        struct wire_dirent d;
        uint8_t b[sizeof(struct wire_dirent) + SFS_NAME_MAX + 8];
    } u;
    memset(&u, 0, rec);
    u.d.ino = de->ino;
    u.d.next = de->next_cookie;
    u.d.reclen = (uint16_t)rec;
    u.d.namelen = (uint16_t)nl;
    u.d.type = (uint8_t)de->type;
    memcpy(u.b + sizeof(struct wire_dirent), de->name, nl);
    qp_arena_write(&qc->qp->arena, qc->res_off + qc->rd_used, u.b, rec);
    qc->rd_used += (uint32_t)rec;
    qc->rd_next = de->next_cookie;
    return 0;
}

/* ---- fetching ---------------------------------------------------------------- */

/* How many more commands qp's CQ has room for (invariant 3). */
static uint32_t cq_room(struct qp *qp)
{
    /* inflight first, then cq_tail: a completion between the two loads is
     * counted twice, never missed (the completer bumps cq_tail, then
     * drops inflight). */
    uint32_t inflight = __atomic_load_n(&qp->inflight, __ATOMIC_ACQUIRE);
    uint32_t tail = __atomic_load_n(&qp->cq_tail, __ATOMIC_ACQUIRE);
    /* Pairs with the client's release store of cq_head once it has read
     * the entries: slots below cq_head may be overwritten. */
    uint32_t head = __atomic_load_n(&qp->hdr->cq_head, __ATOMIC_ACQUIRE);
    uint32_t used = tail - head;
    if (used > qp->cq_entries || used + inflight >= qp->cq_entries)
        return 0;   /* full, or a garbage cq_head: only this queue stalls */
    return qp->cq_entries - used - inflight;
}

/* SQEs waiting on qp that may be fetched now; kills qp on garbage. */
static uint32_t fetchable(struct qp *qp)
{
    if (qp->dead)
        return 0;
    /* Pairs with the client's release store of sq_tail after it wrote the
     * entries: everything below sq_tail is visible. */
    uint32_t tail = __atomic_load_n(&qp->hdr->sq_tail, __ATOMIC_ACQUIRE);
    uint32_t avail = tail - qp->sq_head;
    if (avail > qp->sq_entries) {
        __atomic_add_fetch(&qp->sess->svc->dead, 1, __ATOMIC_RELAXED);
        qp_kill(qp);
        return 0;
    }
    if (!avail)
        return 0;
    uint32_t room = cq_room(qp);
    uint32_t n = avail < room ? avail : room;
    return n < QP_FETCH_BATCH ? n : QP_FETCH_BATCH;
}

/* Fetches what qp allows; appends commands to *tail. Returns SQEs taken. */
static unsigned fetch(struct qp *qp, struct qp_cmd ***tail)
{
    uint32_t n = fetchable(qp);
    if (!n)
        return 0;
    struct qp_service *svc = qp->sess->svc;
    dm_link_cross();   /* one crossing for the batch */
    for (uint32_t i = 0; i < n; i++) {
        struct wire_sqe s;
        memcpy(&s, &qp->sq[(qp->sq_head + i) & (qp->sq_entries - 1)], sizeof(s));
        __atomic_add_fetch(&qp->inflight, 1, __ATOMIC_RELAXED);
        struct qp_cmd *qc = NULL;
        int r = decode(qp, &s, &qc);
        if (r) {
            __atomic_add_fetch(&svc->refused, 1, __ATOMIC_RELAXED);
            qp_post_error(qp, s.user_data, r);
            continue;
        }
        **tail = qc;
        *tail = &qc->next;
    }
    qp->sq_head += n;
    /* Pairs with the client's acquire load of sq_head: the slots are
     * copied (above), it may reuse them. */
    __atomic_store_n(&qp->hdr->sq_head, qp->sq_head, __ATOMIC_RELEASE);
    __atomic_add_fetch(&svc->fetched, n, __ATOMIC_RELAXED);
    return n;
}

/* A command moving fewer bytes than this is run by the poller itself
 * (direct dispatch, in a free core's slot) even when more of its batch
 * follow: waking a device core costs a thread switch (5-20 us measured on
 * a 2-CPU host), more than such a command's whole work (an append-CRC of
 * 4 KiB takes about 3 us), so handing it over only adds switches. Larger
 * commands are worth spreading over free cores. */
#define QP_HANDOFF_MIN_BYTES (64u << 10)

/* Worth handing to another core: large, or may block or run long (an
 * fsync waits for a journal commit; a program may run its whole budget). */
static bool worth_handoff(const struct eng_cmd *c)
{
    switch (c->op) {
    case ENG_OP_READ: case ENG_OP_WRITE: case ENG_OP_APPEND:
        return c->len >= QP_HANDOFF_MIN_BYTES;
    case ENG_OP_STAT_PATH: case ENG_OP_FSTAT: case ENG_OP_NOP:
        return false;
    case ENG_OP_CISC:
        break;
    default:
        return true;
    }
    const struct eng_cisc *v = c->cisc;
    if (!v || v->status)
        return false;   /* refused by the decoder: completes at once */
    uint64_t bytes = v->mem;
    for (unsigned i = 0; i < v->n; i++) {
        const struct fop_step *s = &v->st[i];
        if (s->kind == WIRE_STEP_FSYNC || s->kind == WIRE_STEP_BPF)
            return true;
        bytes += s->src_len;
    }
    return bytes >= QP_HANDOFF_MIN_BYTES;
}

/* Hands a sweep's commands to the scheduler: small ones (above) and the
 * last run right here when a core slot is free (direct), the others go
 * to the device cores' queue so that a batch of large commands spreads
 * over free cores. */
static void dispatch(struct engine *e, struct qp_cmd *list)
{
    while (list) {
        struct qp_cmd *qc = list;
        list = qc->next;
        qc->next = NULL;
        int r = list && worth_handoff(&qc->c) ? eng_submit_handoff(e, &qc->c)
                                              : eng_submit(e, &qc->c);
        if (r) {
            qc->c.ret = r;
            qp_cmd_done(&qc->c);
        }
    }
}

static unsigned sweep(struct qp_poller *p)
{
    struct qp_cmd *list = NULL, **tail = &list;
    unsigned did = 0;
    for (unsigned i = 0; i < p->nsnap; i++)
        did += fetch(p->snap[i], &tail);
    dispatch(p->svc->eng, list);
    return did;
}

/* ---- the poller's queue list ----------------------------------------------- */

static void poller_wake(struct qp_poller *p)
{
    __atomic_add_fetch(&p->wake, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &p->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Bumps gen, wakes the thread and waits until it works with the new list. */
static void poller_sync(struct qp_poller *p)
{
    uint32_t want = ++p->gen;
    poller_wake(p);
    while (p->started && (int32_t)(p->seen - want) < 0)
        pthread_cond_wait(&p->acked, &p->lock);
}

void qp_poller_add(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    qp->pnext = p->list;
    p->list = qp;
    __atomic_store_n(&p->n, p->n + 1, __ATOMIC_RELAXED);
    poller_sync(p);
    pthread_mutex_unlock(&p->lock);
}

void qp_poller_remove(struct qp_poller *p, struct qp *qp)
{
    pthread_mutex_lock(&p->lock);
    for (struct qp **pp = &p->list; *pp; pp = &(*pp)->pnext) {
        if (*pp == qp) {
            *pp = qp->pnext;
            __atomic_store_n(&p->n, p->n - 1, __ATOMIC_RELAXED);
            break;
        }
    }
    poller_sync(p);   /* the thread no longer touches qp after this */
    pthread_mutex_unlock(&p->lock);
}

/* The thread adopts the current list. Returns false when told to stop. */
static bool adopt(struct qp_poller *p)
{
    pthread_mutex_lock(&p->lock);
    bool go = !p->stop;
    if (p->n > p->capsnap) {
        struct qp **s = realloc(p->snap, p->n * sizeof(*s));
        if (s) {
            p->snap = s;
            p->capsnap = p->n;
        }
    }
    p->nsnap = 0;
    for (struct qp *q = p->list; q && p->nsnap < p->capsnap; q = q->pnext)
        p->snap[p->nsnap++] = q;
    p->seen = p->gen;
    pthread_cond_broadcast(&p->acked);
    pthread_mutex_unlock(&p->lock);
    return go;
}

/* ---- sleeping ------------------------------------------------------------------- */

static void set_need_wakeup(struct qp *qp, bool on)
{
    if (qp->dead)
        return;
    qp->sq_flags = on ? qp->sq_flags | WIRE_SQ_NEED_WAKEUP : qp->sq_flags & ~WIRE_SQ_NEED_WAKEUP;
    __atomic_store_n(&qp->hdr->sq_flags, qp->sq_flags, __ATOMIC_RELAXED);
}

/* Sleeps on the private word and every doorbell (futex_waitv), or, when
 * the kernel lacks it or there are too many queues, up to 1 ms. */
static void wait_bells(struct qp_poller *p, uint32_t wk, const uint32_t *bells)
{
    struct futex_waitv w[FUTEX_WAITV_MAX];
    unsigned n = 0;
    w[n++] = (struct futex_waitv){ .val = wk, .uaddr = (uintptr_t)&p->wake,
                                   .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
    for (unsigned i = 0; i < p->nsnap && n < FUTEX_WAITV_MAX; i++)
        if (!p->snap[i]->dead)
            w[n++] = (struct futex_waitv){ .val = bells[i],
                                           .uaddr = (uintptr_t)&p->snap[i]->hdr->sq_doorbell,
                                           .flags = FUTEX_32 };
    if (p->nsnap < FUTEX_WAITV_MAX &&
        (syscall(SYS_futex_waitv, w, n, 0, NULL, CLOCK_MONOTONIC) >= 0 || errno != ENOSYS))
        return;
    struct timespec ms = { 0, 1000000 };
    syscall(SYS_futex, &p->wake, FUTEX_WAIT_PRIVATE, wk, &ms, NULL, 0);
}

/* Announces sleep on every queue, rechecks, sleeps. */
static void poller_sleep(struct qp_poller *p)
{
    uint32_t wk = __atomic_load_n(&p->wake, __ATOMIC_ACQUIRE);
    uint32_t *bells = calloc(p->nsnap + 1, sizeof(uint32_t));
    if (!bells)
        return;
    for (unsigned i = 0; i < p->nsnap; i++) {
        bells[i] = __atomic_load_n(&p->snap[i]->hdr->sq_doorbell, __ATOMIC_RELAXED);
        set_need_wakeup(p->snap[i], true);
    }
    /* Pairs with the client's fence between its sq_tail store and its
     * sq_flags load: either it sees NEED_WAKEUP, or we see its tail. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    bool work = __atomic_load_n(&p->gen, __ATOMIC_RELAXED) != p->seen;
    for (unsigned i = 0; i < p->nsnap && !work; i++)
        work = fetchable(p->snap[i]) > 0;
    if (!work) {
        __atomic_add_fetch(&p->svc->sleeps, 1, __ATOMIC_RELAXED);
        wait_bells(p, wk, bells);
    }
    for (unsigned i = 0; i < p->nsnap; i++)
        set_need_wakeup(p->snap[i], false);
    free(bells);
}

static void *poller_main(void *arg)
{
    struct qp_poller *p = arg;
    uint64_t spin_ns = (uint64_t)p->svc->poll_us * 1000u, idle_since = now_ns();
    bool woke = false;
    for (;;) {
        if (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) != p->seen && !adopt(p))
            break;
        if (sweep(p)) {
            idle_since = now_ns();
            woke = false;
            continue;
        }
        /* Spin only after real work: a doorbell that brought nothing (a
         * client ringing for fun) sends the poller straight back to sleep. */
        if (!woke && now_ns() - idle_since < spin_ns) {
            dm_cpu_relax();
            continue;
        }
        poller_sleep(p);
        woke = true;
    }
    return NULL;
}

int qp_poller_start(struct qp_poller *p)
{
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->acked, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);   /* signals go to the main thread */
    int r = -pthread_create(&p->thread, NULL, poller_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    p->started = r == 0;
    return r;
}

void qp_poller_stop(struct qp_poller *p)
{
    if (!p->svc)
        return;   /* never initialised */
    if (p->started) {
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        p->gen++;
        poller_wake(p);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
    }
    free(p->snap);
    pthread_cond_destroy(&p->acked);
    pthread_mutex_destroy(&p->lock);
}
