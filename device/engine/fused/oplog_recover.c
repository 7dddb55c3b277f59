/* device/engine/fused/oplog_recover.c - recovery from the operational
 * log (oplog.h): at start-up every logged op without its completion is
 * finished (in parallel, reports in log order), its recovery record kept
 * for its owner; and the offline check cisc fsck runs. Decoding is
 * oplog_rec.c's (oplog_int.h). */
#include "device/engine/fused/oplog_int.h"
#include "device/engine/fused/crash.h"
#include "device/engine/sysdir.h"

#include "common/thread.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>

/* The log file's bytes in memory: its blocks in the image are mapped
 * read-only where they can be (no copy, no fresh pages: a log holds the
 * op's inputs, megabytes), the rest (holes, cached pieces, unaligned
 * ones) copied into the same private region. */
struct lmap {
    uint8_t *base;
    size_t len;
};

static int map_piece(uint8_t *at, const struct sfs_seg *g)
{
    long page = sysconf(_SC_PAGESIZE);
    bool aligned = (uintptr_t)at % (uintptr_t)page == 0 && g->pos % (uint64_t)page == 0;
    if (g->kind == SFS_SEG_FD && aligned &&
        mmap(at, g->len, PROT_READ, MAP_SHARED | MAP_FIXED | MAP_POPULATE, g->fd,
             (off_t)g->pos) != MAP_FAILED)
        return 0;
    if (g->kind == SFS_SEG_FD) {
        ssize_t n = pread(g->fd, at, g->len, (off_t)g->pos);
        return n == (ssize_t)g->len ? 0 : n < 0 ? -errno : -EIO;
    }
    if (g->kind == SFS_SEG_MEM)
        memcpy(at, g->mem, g->len);
    return 0;   /* SFS_SEG_ZERO: the region is zeros already */
}

static int map_fn(void *arg, const struct sfs_seg *segs, unsigned n, size_t total)
{
    struct lmap *m = arg;
    size_t at = 0;
    for (unsigned k = 0; k < n; k++) {
        if (segs[k].len > m->len - at)
            return -EIO;
        int r = map_piece(m->base + at, &segs[k]);
        if (r)
            return r;
        at += segs[k].len;
    }
    return 0;
}

static size_t map_size(size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return len ? (len + page - 1) / page * page : page;
}

static int read_log(struct sfs *fs, uint64_t ino, uint8_t **out, size_t *len)
{
    struct sfs_attr a;
    int r = sfs_getattr(fs, ino, &a);
    if (r)
        return r;
    if (a.size > OPLOG_MAX)
        return -EFBIG;
    void *base = mmap(NULL, map_size(a.size), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -ENOMEM;
    struct lmap m = { base, a.size };
    ssize_t n = a.size ? sfs_read_map(fs, ino, 0, a.size, map_fn, &m) : 0;
    if (n != (ssize_t)a.size) {
        munmap(base, map_size(a.size));
        return n < 0 ? (int)n : -EIO;
    }
    *out = base;
    *len = a.size;
    return 0;
}

static void unmap_log(uint8_t *p, size_t len)
{
    if (p)
        munmap(p, map_size(len));
}

/* Why step i failed, for the report. */
static const char *step_why(const struct recovered *rc, unsigned i, char *buf, size_t size)
{
    const struct fop_step *s = &rc->v.st[i];
    int64_t err = rc->v.res[i].ret;
    if (s->kind == WIRE_STEP_BPF && err == -ESTALE && rc->rp.prog_id[i])
        snprintf(buf, size, "program %.*s changed or unloaded", (int)PROGS_NAME_MAX - 1,
                 (const char *)rc->rp.prog_id[i] + 32);
    else if (oplog_keyed(s) && err == -ENOKEY)
        snprintf(buf, size, "key %u is gone with the client's session", s->key_id);
    else
        snprintf(buf, size, "%s", strerror((int)-err));
    return buf;
}

/* Step i's output for the recovery record (F_OUT_ARENA: the client had
 * asked for it), in hex, or why it is not there. */
static void report_output(FILE *out, const char *name, const struct recovered *rc, unsigned i)
{
    const uint8_t *p = NULL;
    uint64_t n = rc->v.res[i].out_len;
    if (rc->rp.done >> i & 1) {   /* copied before the replay (keep_outputs) */
        n = rc->rp.out_len[i];
        p = rc->rp.out[i] && n <= FOP_REC_OUT_MAX ? rc->kept[i] : NULL;
    } else if (rc->v.res[i].ret >= 0 && n <= FOP_REC_OUT_MAX) {
        p = rc->kept[i];
    }
    if (rc->v.res[i].ret < 0)
        return;
    fprintf(out, "recovery op %s step %u output %" PRIu64 " bytes", name, i, n);
    if (!p && n)
        fprintf(out, " not kept (over %u)", FOP_REC_OUT_MAX);
    for (uint64_t k = 0; p && k < n; k++)
        fprintf(out, "%s%02x", k ? "" : " ", p[k]);
    fputc('\n', out);
}

static void report(FILE *out, const char *name, const struct recovered *rc, int64_t status)
{
    unsigned done = 0;
    char why[160];
    for (unsigned i = 0; i < rc->v.n; i++)
        done += (unsigned)(rc->rp.done >> i & 1);
    fprintf(out, "recovery op %s uid %u steps %u committed %u status %" PRId64 "%s%s\n", name,
            rc->cred.uid, rc->v.n, done, status,
            status < 0 ? " " : "", status < 0 ? strerror((int)-status) : "");
    for (unsigned i = 0; i < rc->v.n && status < 0; i++)
        if (rc->v.res[i].ret < 0)
            fprintf(out, "recovery op %s step %u error %s\n", name, i,
                    step_why(rc, i, why, sizeof(why)));
    for (unsigned i = 0; i < rc->v.n; i++)
        if (rc->v.st[i].flags & WIRE_STEP_F_OUT_ARENA)
            report_output(out, name, rc, i);
}

/* Recovery delivers F_OUT_ARENA outputs into the record, not an arena. */
static void keep_outputs(struct recovered *rc)
{
    for (unsigned i = 0; i < rc->v.n; i++) {
        struct fop_step *s = &rc->v.st[i];
        s->dst = s->flags & WIRE_STEP_F_OUT_ARENA ? rc->kept[i] : NULL;
        s->dst_cap = s->dst ? FOP_REC_OUT_MAX : 0;
        /* The log (and its mapping's blocks) goes when the replay ends. */
        if (s->dst && rc->rp.out[i] && rc->rp.out_len[i] <= FOP_REC_OUT_MAX)
            memcpy(rc->kept[i], rc->rp.out[i], rc->rp.out_len[i]);
    }
}

/* ---- recovery records ---------------------------------------------------- */

#define REC_SUB "recovery"

/* Keeps text as the recovery record of op name, owned by uid (the
 * file's owner is the record's owner). */
static void keep_record(struct engine *e, const char *name, uint32_t uid, const char *text,
                        size_t len)
{
    uint64_t dir;
    struct sfs_attr a;
    int r = sysdir_open(e->fs, REC_SUB, &dir);
    if (!r && sfs_lookup(e->fs, dir, name, &a) == 0)
        r = sfs_unlink(e->fs, NULL, dir, name);   /* a crash during recovery: the newer one */
    if (!r)
        r = sfs_mknod(e->fs, NULL, dir, name, S_IFREG | 0600, 0, uid, uid, &a);
    if (!r && sfs_write(e->fs, NULL, a.ino, 0, text, len) != (ssize_t)len)
        r = -EIO;
    if (r)
        fprintf(stderr, "cisc device: cannot keep the recovery record of %s: %s\n", name,
                strerror(-r));
}

struct rec_list {
    struct engine *e;
    uint32_t uid;
    char *buf;
    size_t size, len;
    int err;
};

static int list_one(void *arg, const struct sfs_dirent *de)
{
    struct rec_list *l = arg;
    struct sfs_attr a;
    if (de->name[0] == '.' || sfs_getattr(l->e->fs, de->ino, &a) || !S_ISREG(a.mode))
        return 0;
    if (l->uid != 0 && a.uid != l->uid)
        return 0;
    if (a.size > l->size - l->len) {
        l->err = -ENOSPC;
        return 1;
    }
    ssize_t n = sfs_read(l->e->fs, de->ino, 0, l->buf + l->len, a.size);
    l->len += n > 0 ? (size_t)n : 0;
    return 0;
}

int fop_recovery_list(struct engine *e, uint32_t uid, char *buf, size_t size)
{
    uint64_t dir;
    int r = sysdir_find(e->fs, REC_SUB, &dir);
    if (r)
        return r == -ENOENT ? 0 : r;
    struct rec_list l = { e, uid, buf, size, 0, 0 };
    r = sfs_readdir(e->fs, dir, 0, list_one, &l);
    r = r ? r : l.err;
    return r ? r : (int)l.len;
}

int fop_recovery_ack(struct engine *e, uint32_t uid, const char *name)
{
    uint64_t dir;
    struct sfs_attr a;
    if (!name[0] || name[0] == '.' || strchr(name, '/') || strlen(name) >= OPLOG_NAME_MAX)
        return -EINVAL;
    int r = sysdir_find(e->fs, REC_SUB, &dir);
    if (!r)
        r = sfs_lookup(e->fs, dir, name, &a);
    if (!r && uid != 0 && a.uid != uid)
        r = -ENOENT;   /* another user's record does not exist for you */
    return r ? r : sfs_unlink(e->fs, NULL, dir, name);
}

/* Reads and checks log (dir, name) into a new *out (the caller frees it
 * with free_recovered, also on failure). Returns NULL, or why nothing of
 * it may run (*bad_at: the byte of the log where the check failed). */
static const char *load(struct sfs *fs, uint64_t dir, const char *name, struct recovered **out,
                        uint64_t *ino, size_t *bad_at)
{
    struct sfs_attr a;
    struct recovered *rc = *out = calloc(1, sizeof(*rc));
    size_t len = 0;
    int r = rc ? sfs_lookup(fs, dir, name, &a) : -ENOMEM;
    if (!r)
        r = read_log(fs, a.ino, &rc->data, &rc->len);
    len = rc ? rc->len : 0;
    *bad_at = 0;
    if (r)
        return strerror(-r);
    *ino = a.ino;
    snprintf(rc->name, sizeof(rc->name), "%s", name);   /* v3 logs name the op */
    fop_res_fill(&rc->v, -ECANCELED);
    const char *why = oplog_parse(rc, bad_at);
    rc->rp.oplog_size = len;
    return why;
}

static void free_recovered(struct recovered *rc)
{
    if (rc) {
        fop_release(&rc->v);
        unmap_log(rc->data, rc->len);
    }
    free(rc);
}

/* A recovery task: one log, what load() made of it, its report. */
struct rtask {
    struct engine *e;
    uint64_t dir;
    const char *name;
    struct recovered *rc;        /* load(): the log's bytes and its op */
    const char *why;             /* load(): why nothing of it may run, or NULL */
    uint64_t ino;
    size_t at;                   /* load(): the byte where the check failed */
    char op[OPLOG_NAME_MAX];     /* the op's name (reports go in its order) */
    char *text;
    size_t len;
};

/* Finishes the op of t's log (loaded); reports to out (a memory stream)
 * and names the op in t->op. Returns the owner of its recovery record:
 * the op's uid, root for a log that does not check. An empty slot or one
 * whose op had completed is no op (op: ""); neither that nor a completed
 * op reports anything. */
static uint32_t recover_one(struct rtask *t, FILE *out)
{
    struct engine *e = t->e;
    struct recovered *rc = t->rc;
    const char *why = t->why, *name = t->name;
    char *op = t->op;
    snprintf(op, OPLOG_NAME_MAX, "%s", rc && !why ? rc->name : name);
    if (why && rc && rc->len == 0 && oplog_is_slot(name)) {
        why = NULL;   /* an empty slot: no op */
        op[0] = '\0';
    } else if (why) {
        fprintf(out, "recovery op %s unrecoverable (%s at byte %zu, log block %zu): nothing "
                "of it runs, the log is kept\n", name, why, t->at, t->at / SFS_BLOCK_SIZE);
    } else if (!oplog_pending(rc)) {   /* it had completed: no record */
        if (oplog_is_slot(name))
            op[0] = '\0';   /* a slot between ops: no op, it stays */
        else
            sfs_unlink(e->fs, NULL, t->dir, name);
    } else {
        oplog_settle_done_opens(rc);
        keep_outputs(rc);
        rc->rp.oplog = t->ino;
        memcpy(rc->rp.name, name, sizeof(rc->rp.name) - 1);
        rc->v.tx = WIRE_TX_AUTOREC;
        rc->v.replay = &rc->rp;
        int64_t st = fop_exec(e, &rc->cred, &rc->v);
        report(out, op, rc, st);
    }
    uint32_t owner = why || !rc ? 0 : rc->cred.uid;
    free_recovered(rc);
    t->rc = NULL;
    return owner;
}

bool oplog_slot_reusable(struct sfs *fs, uint64_t ino)
{
    struct sfs_attr a;
    if (sfs_getattr(fs, ino, &a))
        return false;
    if (a.size == 0)
        return true;
    struct recovered *rc = calloc(1, sizeof(*rc));
    size_t at;
    bool ok = rc && read_log(fs, ino, &rc->data, &rc->len) == 0;
    if (ok) {
        fop_res_fill(&rc->v, -ECANCELED);
        ok = !oplog_parse(rc, &at) && !oplog_pending(rc);
    }
    free_recovered(rc);
    return ok;
}

static void run_task(struct rtask *t)
{
    FILE *out = open_memstream(&t->text, &t->len);
    if (!out) {
        fprintf(stderr, "cisc device: out of memory recovering %s\n", t->name);
        free_recovered(t->rc);
        t->rc = NULL;
        return;
    }
    uint32_t owner = recover_one(t, out);
    fclose(out);
    if (t->len)
        keep_record(t->e, t->op, owner, t->text, t->len);
}

#define RECOVER_MAX 4096u

struct names {
    char (*name)[OPLOG_NAME_MAX];
    unsigned n;
};

static int collect(void *arg, const struct sfs_dirent *de)
{
    struct names *ns = arg;
    if (de->name[0] == '.' || de->namelen >= OPLOG_NAME_MAX || ns->n == RECOVER_MAX)
        return 0;
    memcpy(ns->name[ns->n], de->name, de->namelen);
    ns->name[ns->n++][de->namelen] = '\0';
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

static int cmp_task(const void *a, const void *b)
{
    return strcmp(((const struct rtask *)a)->op, ((const struct rtask *)b)->op);
}

/* The logs recovery works through, claimed one at a time, in two
 * passes: every log is loaded before any op runs. A log is mapped from
 * the image where its blocks are (no copy), which StorageFS allows only
 * for a file without data-journaled blocks in the cache (jdata.h); an
 * inode loaded after any data-journaled transaction of this mount counts
 * as such (jdata.h invariant 6), and the ops' step commits are such
 * transactions. Loading first keeps every log's inputs (megabytes each)
 * a mapping instead of a copy. */
struct rpool {
    struct rtask *t;
    unsigned n;
    bool run;                    /* the second pass: the ops run */
    unsigned next;               /* atomic */
};

static void load_task(struct rtask *t)
{
    t->why = load(t->e->fs, t->dir, t->name, &t->rc, &t->ino, &t->at);
}

static void *recover_worker(void *arg)
{
    struct rpool *p = arg;
    for (;;) {
        unsigned k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (k >= p->n)
            return NULL;
        if (!p->run) {
            load_task(&p->t[k]);
            continue;
        }
        fop_crash_point(FOP_CRASH_RECOVERY, k);
        run_task(&p->t[k]);
    }
}

/* One pass over the tasks on up to `cores` threads at once. */
static void recover_pass(struct rpool *p, unsigned cores)
{
    pthread_t th[SCHED_MAX_CORES];
    unsigned nt = 0, want = p->n < cores ? p->n : cores;
    while (nt + 1 < want && nt < SCHED_MAX_CORES &&
           thread_start_quiet(&th[nt], recover_worker, p) == 0)
        nt++;
    recover_worker(p);
    for (unsigned k = 0; k < nt; k++)
        pthread_join(th[k], NULL);
}

/* Loads every log, then runs the ops, each pass on up to `cores` threads:
 * the logs of unfinished ops name disjoint files (each was written with
 * its op's stripes held, exec.c), so their order does not matter; the
 * reports keep log order. */
static void recover_all(struct rpool *p, unsigned cores)
{
    recover_pass(p, cores);
    p->run = true;
    p->next = 0;
    recover_pass(p, cores);
}

/* The names of the logs in dir, sorted (submission order). */
static int list_logs(struct sfs *fs, uint64_t dir, struct names *ns)
{
    ns->name = calloc(RECOVER_MAX, OPLOG_NAME_MAX);
    ns->n = 0;
    int r = ns->name ? sfs_readdir(fs, dir, 0, collect, ns) : -ENOMEM;
    if (!r)
        qsort(ns->name, ns->n, OPLOG_NAME_MAX, cmp_name);
    return r;
}

int fop_recover(struct engine *e, FILE *out)
{
    uint64_t dir;
    struct names ns = { NULL, 0 };
    int r = sysdir_find(e->fs, OPLOG_SUB, &dir);
    if (r == -ENOENT)
        return 0;
    if (!r)
        r = list_logs(e->fs, dir, &ns);
    struct rpool p = { .t = calloc(ns.n ? ns.n : 1, sizeof(struct rtask)), .n = ns.n };
    if (!r && !p.t)
        r = -ENOMEM;
    for (unsigned k = 0; !r && k < ns.n; k++)
        p.t[k] = (struct rtask){ .e = e, .dir = dir, .name = ns.name[k] };
    if (!r)
        recover_all(&p, e->cores);
    if (!r)
        qsort(p.t, ns.n, sizeof(*p.t), cmp_task);   /* slots are not in op order */
    int ops = 0;
    for (unsigned k = 0; !r && k < ns.n; k++) {
        fwrite(p.t[k].text, 1, p.t[k].len, out);
        free(p.t[k].text);
        ops += p.t[k].op[0] != '\0';
    }
    free(p.t);
    free(ns.name);
    return r ? r : ops;
}

/* ---- what is left in the log (read-only start, cisc fsck) ---------------- */

/* Whether log name is a slot with nothing to say: empty, or its op had
 * completed (the normal state of a slot between ops). */
static bool quiet_slot(const char *name, const struct recovered *rc, const char *why)
{
    if (!oplog_is_slot(name) || !rc)
        return false;
    return why ? rc->len == 0 : !oplog_pending(rc);
}

/* Calls fn for each log of the oplog directory that is not a quiet slot,
 * with its name, what load() found wrong with it (NULL: nothing), its
 * decoded contents and the byte where the check failed; sums fn's results.
 * Returns the sum, or -errno when the directory cannot be listed. */
static int each_log(struct sfs *fs,
                    int (*fn)(void *arg, const char *name, const char *why,
                              const struct recovered *rc, size_t at),
                    void *arg)
{
    uint64_t dir;
    struct names ns = { NULL, 0 };
    int r = sysdir_find(fs, OPLOG_SUB, &dir);
    if (r == -ENOENT)
        return 0;
    if (!r)
        r = list_logs(fs, dir, &ns);
    int sum = 0;
    for (unsigned k = 0; !r && k < ns.n; k++) {
        struct recovered *rc;
        uint64_t ino;
        size_t at;
        const char *why = load(fs, dir, ns.name[k], &rc, &ino, &at);
        if (!quiet_slot(ns.name[k], rc, why))
            sum += fn(arg, ns.name[k], why, rc, at);
        free_recovered(rc);
    }
    free(ns.name);
    return r ? r : sum;
}

static int count_one(void *arg, const char *name, const char *why,
                     const struct recovered *rc, size_t at)
{
    return 1;
}

int fop_oplog_pending(struct sfs *fs)
{
    return each_log(fs, count_one, NULL);
}

struct check_out {
    void (*line)(void *arg, const char *msg);
    void *arg;
};

/* One line on one log for fop_oplog_check; 1 when the log is damaged. */
static int check_one(void *arg, const char *name, const char *why,
                     const struct recovered *rc, size_t at)
{
    const struct check_out *o = arg;
    char msg[256];
    if (why)
        snprintf(msg, sizeof(msg), "operational log /.cisc-system/" OPLOG_SUB "/%s: %s at "
                 "byte %zu (log block %zu): the op is unrecoverable, nothing of it runs",
                 name, why, at, at / SFS_BLOCK_SIZE);
    else
        snprintf(msg, sizeof(msg), "operational log /.cisc-system/" OPLOG_SUB "/%s: op of "
                 "uid %u, %u steps: %s", name, rc->cred.uid, rc->v.n,
                 oplog_pending(rc) ? "the next start finishes it" : "complete, the next start "
                 "removes its log");
    o->line(o->arg, msg);
    return why != NULL;
}

int fop_oplog_check(struct sfs *fs, void (*line)(void *arg, const char *msg), void *arg)
{
    struct check_out o = { line, arg };
    return each_log(fs, check_one, &o);
}
