/*
 * integrations/preload/pl_merge.c - the data path of served descriptors and
 * AutoMerge (FusionFS §4.3.4).
 *
 * Data path. The caller's bytes move between its buffer and arena memory
 * with process_vm_readv/writev on this very process, so a bad pointer or
 * length gets -EFAULT, as from the kernel, instead of a crash inside the
 * library.
 *
 * AutoMerge. Write-side calls on one open file description (write, pwrite,
 * O_APPEND writes, fsync) that are pending at the same time - from several
 * threads - go to the device as ONE fused op: a caller that finds fewer
 * than pl.merge_inflight batches running becomes a leader, takes every
 * call queued so far (up to PL_MERGE_MAX_OPS), builds
 * a vector of WRITE / APPEND steps on the session handle followed by one
 * FSYNC step if any call asked for durability, submits it from its own
 * queue (one doorbell, one round trip), hands each caller its step's
 * result and wakes them; calls that arrive meanwhile form the next batch
 * (group commit; CISC_EXEC_MERGE_INFLIGHT sets how many batches, default
 * 2, so merging costs the device no parallelism until that many run).
 * Nothing of what a call observes changes (invariant 5 of
 * preload.h): every call returns after its data is in the device; each
 * thread's calls run in its order; an append is one APPEND step, atomic;
 * one FSYNC at the end covers every fsync of the batch, as it makes at
 * least the writes that preceded each of them durable; and if the merged
 * op fails (all-or-nothing: nothing of it applied), its calls are re-run
 * one by one in order, so each gets its own result.
 */
#include "integrations/preload/preload.h"

#include "common/clock.h"
#include "common/spin.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PL_CHUNK (1u << 20)   /* positional transfers move at most this per command */

static pid_t self_pid(void)
{
    static _Thread_local pid_t pid;
    static _Thread_local unsigned gen = ~0u;
    if (gen != pl.gen) {   /* a fork child has a new pid */
        pid = getpid();
        gen = pl.gen;
    }
    return pid;
}

int pl_copy_in(void *dst, const void *src, size_t len)
{
    struct iovec l = { dst, len }, r = { (void *)src, len };
    if (len == 0)
        return 0;
    ssize_t n = process_vm_readv(self_pid(), &l, 1, &r, 1, 0);
    return n == (ssize_t)len ? 0 : -EFAULT;
}

int pl_copy_out(void *dst, const void *src, size_t len)
{
    struct iovec l = { (void *)src, len }, r = { dst, len };
    if (len == 0)
        return 0;
    ssize_t n = process_vm_writev(self_pid(), &l, 1, &r, 1, 0);
    return n == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- reads ------------------------------------------------------------------ */

int64_t pl_data_pread(struct cisc_queue *q, uint64_t fh, void *buf, size_t len, uint64_t off)
{
    size_t chunk = len < PL_CHUNK ? len : PL_CHUNK, done = 0;
    void *a;
    if (len == 0)
        return cisc_pread(q, fh, NULL, 0, off);
    int r = cisc_buf_alloc(q, chunk, &a);
    if (r)
        return r;
    while (done < len) {
        size_t want = len - done < chunk ? len - done : chunk;
        ssize_t n = cisc_pread(q, fh, a, want, off + done);
        if (n > 0 && (r = pl_copy_out((char *)buf + done, a, (size_t)n)) != 0)
            n = r;
        if (n <= 0) {
            if (done == 0)
                done = (size_t)n;   /* the error, as int64_t below */
            break;
        }
        done += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    cisc_buf_free(q, a);
    return (int64_t)done;
}

/* ---- one call on its own ------------------------------------------------ */

/* A write or append of the caller's bytes, staged in the arena (one piece
 * for an append: it must land whole). */
static int64_t solo_write(struct cisc_queue *q, struct pl_ofd *o, struct pl_mop *m)
{
    bool app = m->kind == PL_MOP_APPEND;
    size_t chunk = app || m->len < PL_CHUNK ? m->len : PL_CHUNK, done = 0;
    void *a;
    if (m->len == 0)
        return 0;
    int r = cisc_buf_alloc(q, chunk, &a);
    if (r)
        return r == -ENOMEM && app ? -EFBIG : r;
    while (done < m->len) {
        size_t want = m->len - done < chunk ? m->len - done : chunk;
        ssize_t n = pl_copy_in(a, (const char *)m->buf + done, want);
        if (n == 0)
            n = app ? cisc_append(q, o->fh, a, want, &m->at)
                    : cisc_pwrite(q, o->fh, a, want, m->off + done);
        if (n <= 0) {
            if (done == 0)
                done = (size_t)n;
            break;
        }
        done += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    cisc_buf_free(q, a);
    return (int64_t)done;
}

static int64_t solo(struct cisc_queue *q, struct pl_ofd *o, struct pl_mop *m)
{
    if (m->kind == PL_MOP_FSYNC)
        return cisc_fsync(q, o->fh, (int)m->off);
    int64_t r = solo_write(q, o, m);
    if (m->sync)
        m->sync_res = r >= 0 ? cisc_fsync(q, o->fh, 0) : 1;
    return r;
}

/* ---- a merged op ---------------------------------------------------------- */

/* Adds m's step to v (its bytes staged in the arena first, through the
 * checked copy). Returns the step index, -1 for an fsync, or -errno. */
static int add_step(struct cisc_vec *v, struct cisc_queue *q, int f, struct pl_mop *m,
                    void **stage)
{
    *stage = NULL;
    if (m->kind == PL_MOP_FSYNC)
        return -1;
    int r = cisc_buf_alloc(q, m->len, stage);
    if (r == 0 && (r = pl_copy_in(*stage, m->buf, m->len)) == 0)
        r = m->kind == PL_MOP_APPEND ? cisc_vec_append(v, f, CISC_IN_BUF(*stage, m->len))
                                     : cisc_vec_write(v, f, m->off, CISC_IN_BUF(*stage, m->len));
    return r < -1 ? r : r == -1 ? -EINVAL : r;
}

/* Builds and submits one op for ms[0..n); on success every ms[i] holds
 * its result. Returns 0, or nonzero when the calls must run one by one. */
static int merged(struct cisc_queue *q, struct pl_ofd *o, struct pl_mop **ms, int n)
{
    struct cisc_vec v;
    int idx[PL_MERGE_MAX_OPS], fs = -1, bad = 0;
    void *stage[PL_MERGE_MAX_OPS];
    bool sync = false, datasync = true;
    if (cisc_vec_init(&v, q))
        return -1;
    int f = cisc_vec_fh(&v, o->fh);
    for (int i = 0; i < n; i++) {
        idx[i] = add_step(&v, q, f, ms[i], &stage[i]);
        bad |= idx[i] < -1;
        if (ms[i]->kind == PL_MOP_FSYNC || ms[i]->sync) {
            sync = true;
            datasync &= ms[i]->kind == PL_MOP_FSYNC && ms[i]->off != 0;
        }
    }
    if (sync)
        fs = cisc_vec_fsync(&v, f, datasync);
    int64_t st = bad ? -1 : cisc_vec_submit(&v);
    for (int i = 0; st == 0 && i < n; i++) {
        int k = idx[i] >= 0 ? idx[i] : fs;
        ms[i]->res = cisc_vec_ret(&v, k);
        if (ms[i]->kind == PL_MOP_APPEND)
            ms[i]->at = cisc_vec_out_len(&v, k);
        if (ms[i]->sync)
            ms[i]->sync_res = cisc_vec_ret(&v, fs);
    }
    cisc_vec_free(&v);
    for (int i = 0; i < n; i++)
        cisc_buf_free(q, stage[i]);
    return st != 0;
}

/* Runs a batch: merged when it has two calls or more, else (or when the
 * merged op failed) each call on its own, in order. */
static void run_batch(struct pl_ofd *o, struct pl_mop **ms, int n)
{
    int err = 0;
    sigset_t old;
    pl_enter(&old);
    struct cisc_queue *q = pl_queue(&err);
    if (!q) {
        for (int i = 0; i < n; i++)
            ms[i]->res = err;
    } else if ((n >= 2 || ms[0]->sync) && merged(q, o, ms, n) == 0) {
        atomic_fetch_add_explicit(&pl.st.merged_ops, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&pl.st.merged_calls, (unsigned)n, memory_order_relaxed);
    } else {
        for (int i = 0; i < n; i++)
            ms[i]->res = solo(q, o, ms[i]);
        atomic_fetch_add_explicit(&pl.st.solo_calls, (unsigned)n, memory_order_relaxed);
    }
    pl_leave(&old);
}

/* Whether a call may join a merged op (small writes, and fsyncs). */
static bool mergeable(const struct pl_mop *m)
{
    return m->kind == PL_MOP_FSYNC || (m->len > 0 && m->len <= PL_MERGE_MAX_LEN);
}

/* Takes up to PL_MERGE_MAX_OPS queued calls into ms. Under mq_lock. */
static int take_batch(struct pl_ofd *o, struct pl_mop **ms)
{
    int n = 0;
    while (o->mq_head && n < PL_MERGE_MAX_OPS) {
        ms[n] = o->mq_head;
        ms[n++]->taken = true;
        o->mq_head = o->mq_head->next;
    }
    if (!o->mq_head)
        o->mq_tail = &o->mq_head;
    return n;
}

#define PL_SPIN_NS 20000

/* This thread's spins (common/spin.h): cut short while the host has no
 * CPU to spare, as libcisc's own. */
static _Thread_local struct spin_gov spin_gov;

/* Waits up to PL_SPIN_NS (less on a contended host) for m to be done by
 * a leader. */
static bool spin_done(struct pl_mop *m)
{
    uint64_t t0 = now_ns(), budget = spin_budget(&spin_gov, t0, PL_SPIN_NS);
    spin_rest(&spin_gov);
    for (unsigned k = 1;; k++) {
        if (__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
            return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (k % 64 == 0) {
            uint64_t t = now_ns();
            if (spin_round(&spin_gov, t) || t - t0 > budget)
                return false;
        }
    }
}

int64_t pl_merge_call(struct pl_ofd *o, struct pl_mop *m)
{
    if (!pl.merge || !mergeable(m)) {
        run_batch(o, &m, 1);
        return m->res;
    }
    struct pl_mop *ms[PL_MERGE_MAX_OPS];
    m->done = m->taken = false;
    m->next = NULL;
    pthread_mutex_lock(&o->mq_lock);
    *o->mq_tail = m;
    o->mq_tail = &m->next;
    while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
        if (m->taken || o->mq_leaders >= pl.merge_inflight) {
            /* Spin a little first, as libcisc does on a completion: a
             * sleep and a wake-up cost more than a short op. */
            bool d = false;
            if (!o->mq_spinner) {   /* one spinner at most: the others sleep, the
                                       device needs the CPUs more than they do */
                o->mq_spinner = true;
                pthread_mutex_unlock(&o->mq_lock);
                d = spin_done(m);
                pthread_mutex_lock(&o->mq_lock);
                o->mq_spinner = false;
            }
            if (!d && !__atomic_load_n(&m->done, __ATOMIC_ACQUIRE) &&
                (m->taken || o->mq_leaders >= pl.merge_inflight))
                pthread_cond_wait(&o->mq_cond, &o->mq_lock);
            continue;
        }
        o->mq_leaders++;   /* lead one batch: it holds m, or m is further back */
        int n = take_batch(o, ms);
        pthread_mutex_unlock(&o->mq_lock);
        run_batch(o, ms, n);
        pthread_mutex_lock(&o->mq_lock);
        for (int i = 0; i < n; i++)   /* pairs with spin_done's acquire load */
            __atomic_store_n(&ms[i]->done, true, __ATOMIC_RELEASE);
        o->mq_leaders--;
        pthread_cond_broadcast(&o->mq_cond);
    }
    pthread_mutex_unlock(&o->mq_lock);
    return m->res;
}

/* ---- write followed by fsync ------------------------------------------------ */

/* Predicted "fsync follows" after this many write + fsync pairs in a row. */
#define PL_SYNC_STREAK 2

int64_t pl_merge_write(struct pl_ofd *o, const void *buf, size_t len, uint64_t off,
                       uint64_t *at)
{
    bool osync = (o->flags & (O_SYNC | O_DSYNC)) != 0;
    uint64_t gen = __atomic_add_fetch(&o->wgen, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&o->wgen_fsync, __ATOMIC_ACQUIRE) != gen - 1)
        __atomic_store_n(&o->streak, 0, __ATOMIC_RELAXED);   /* a write without fsync */
    struct pl_mop m = { .kind = (o->flags & O_APPEND) ? PL_MOP_APPEND : PL_MOP_WRITE,
                        .buf = buf, .len = len, .off = off, .sync_res = 1 };
    m.sync = len > 0 && pl.merge && (osync || __atomic_load_n(&o->streak, __ATOMIC_RELAXED) >=
                                                  PL_SYNC_STREAK);
    if (osync && !m.sync) {   /* --no-merge: the sync as a call of its own */
        int64_t r = pl_merge_call(o, &m);
        struct pl_mop f = { .kind = PL_MOP_FSYNC, .off = (o->flags & O_SYNC) != O_SYNC };
        int64_t s = r >= 0 && len > 0 ? pl_merge_call(o, &f) : 0;
        if (at)
            *at = m.kind == PL_MOP_APPEND ? m.at : off;
        return s < 0 ? s : r;
    }
    int64_t r = pl_merge_call(o, &m);
    if (r >= 0 && m.sync && m.sync_res == 0) {
        /* Durable up to this write, if no other write started since. */
        uint64_t want = gen;
        __atomic_compare_exchange_n(&o->wgen, &want, gen, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        if (want == gen)
            __atomic_store_n(&o->synced_gen, gen, __ATOMIC_RELEASE);
    }
    if (at)
        *at = m.kind == PL_MOP_APPEND ? m.at : off;
    if (osync && r >= 0 && m.sync_res != 0)
        return m.sync_res < 0 ? m.sync_res : -EIO;   /* O_SYNC: the write is not done */
    return r;
}

int64_t pl_merge_fsync(struct pl_ofd *o, bool datasync)
{
    uint64_t gen = __atomic_load_n(&o->wgen, __ATOMIC_ACQUIRE);
    if (__atomic_exchange_n(&o->wgen_fsync, gen, __ATOMIC_ACQ_REL) != gen)
        __atomic_add_fetch(&o->streak, 1, __ATOMIC_RELAXED);   /* it followed a write */
    if (pl.merge && gen != 0 && __atomic_load_n(&o->synced_gen, __ATOMIC_ACQUIRE) == gen) {
        atomic_fetch_add_explicit(&pl.st.fsyncs_merged, 1, memory_order_relaxed);
        return 0;   /* the write + sync op of the last write covered it */
    }
    struct pl_mop m = { .kind = PL_MOP_FSYNC, .off = datasync };
    return pl_merge_call(o, &m);
}
