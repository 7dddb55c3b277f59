/*
 * device/storagefs/journal.c - running transaction, handles, the commit
 * thread, ring writes and checkpoint (see journal.h for the model and
 * docs/FORMAT.md for the ring layout).
 *
 * Everything that writes the ring or the journal header runs on one
 * thread at a time, the one that set `busy`: the commit thread, or a
 * thread in jnl_sync_here that commits the running transaction itself
 * when no commit is under way (a synchronous commit without the two thread
 * switches of handing it over), so commits and checkpoints never
 * overlap. `mu` protects every field of struct jnl and of the running
 * transaction.
 */
#include "device/storagefs/journal.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/crc32c.h"
#include "common/le.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"

enum { T_RUNNING = 1, T_LOCKED = 2 };

struct jnl_txn {
    uint64_t seq;
    int state;
    int handles;                 /* active handles */
    uint64_t reserved;           /* credits of active handles */
    struct bbuf **bufs;
    size_t nbufs, bcap;
    struct sfs_inode **inodes;
    size_t ninodes, icap;
};

struct jnl {
    struct sfs *fs;
    struct media *m;
    struct bcache *bc;
    pthread_mutex_t mu;
    pthread_cond_t work;         /* the commit thread waits here: signalled
                                    only when it has something to do */
    pthread_cond_t cv;           /* everyone else waits here: broadcast by
                                    the commit thread on every state change */
    struct jnl_txn *running;
    uint64_t committed;          /* last durable transaction */
    uint64_t ckpt_done;          /* last checkpointed transaction (__atomic:
                                    written by the commit thread, read unlocked) */
    uint64_t commit_target;      /* commit until committed >= this */
    bool want_ckpt, want_space, stop;
    bool ckpt_finishing;         /* used is 0, the frees not yet released (mu) */
    bool busy;                   /* a thread commits or checkpoints (ring I/O
                                    without mu): no other may start one */
    int error;
    uint64_t ring_start;         /* block of ring position 0 */
    uint32_t ring, head;         /* ring size; next position to write */
    uint64_t used;               /* ring blocks not yet checkpointed */
    struct bbuf **ck;            /* buffers holding a checkpoint image */
    size_t nck, ckcap;
    uint32_t interval_ms;
    pthread_t thread;
};

static __thread struct jnl_handle *tls_handle;

/* Each thread keeps one handle for its starts (freed when the thread
 * exits: the key's destructor): a handle per operation would otherwise
 * cost an allocation and a free. spare_h is the thread's handle when it is
 * free, NULL while a start holds it (or before the first); the key holds
 * it for the destructor from its allocation on, so a start and a stop
 * touch only the thread-local pointer. */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static __thread struct jnl_handle *spare_h;
static __thread struct jnl_handle *own_h;   /* the thread's handle (the key's value) */

static void make_spare_key(void)
{
    pthread_key_create(&spare_key, free);
}

static struct jnl_handle *handle_new(void)
{
    struct jnl_handle *h = spare_h;
    if (h) {
        spare_h = NULL;
        memset(h, 0, sizeof(*h));
        return h;
    }
    h = calloc(1, sizeof(*h));
    if (h && !own_h) {   /* the thread's first: it becomes its own */
        pthread_once(&spare_once, make_spare_key);
        if (pthread_setspecific(spare_key, h) == 0)
            own_h = h;
    }
    return h;
}

static void handle_free(struct jnl_handle *h)
{
    if (h == own_h)
        spare_h = h;
    else
        free(h);   /* a nested start's extra handle */
}

#ifndef NDEBUG
/* The invariants of journal.h that hold whenever mu is held, checked in
 * O(1) from assert() after each state change (debug and sanitizer builds
 * only; release builds define NDEBUG and never call it). Numbers are
 * journal.h's; 2 and 7 are orders of I/O, checked by the crash tests. */
static bool jnl_check(const struct jnl *j)
{
    const struct jnl_txn *t = j->running;
    assert(j->ring > 0 && j->head < j->ring);
    assert(j->used <= j->ring);                      /* 3: nothing overwritten */
    assert(j->nck <= j->ckcap);
    assert(j->nck == 0 || j->used > 0);              /* 3: listed images are logged */
    assert(!j->ckpt_finishing || j->used == 0);
    assert(__atomic_load_n(&j->ckpt_done, __ATOMIC_RELAXED) <= j->committed);  /* 3 */
    /* 5: consecutive numbers: only the transaction being written lies
     * between the last durable one and the running one. */
    assert(t->seq == j->committed + 1 || t->seq == j->committed + 2);
    assert(j->commit_target <= t->seq);
    assert(j->error == 0 || j->error == -EIO || j->error == -ENOMEM);   /* 6 */
    assert(t->state == T_RUNNING || t->state == T_LOCKED);
    assert(t->handles >= 0);
    assert(t->handles > 0 || t->reserved == 0);    /* credits belong to handles */
    assert(t->nbufs <= t->bcap && t->ninodes <= t->icap);
    return true;
}
#endif

static uint64_t room_limit(const struct jnl *j)
{
    return j->ring - j->ring / 16 - 4;
}

static uint64_t need(const struct jnl_txn *t, uint64_t extra)
{
    return sfs_txn_blocks(t->nbufs + t->reserved + extra);
}

static struct jnl_txn *txn_new(uint64_t seq)
{
    struct jnl_txn *t = calloc(1, sizeof(*t));
    if (t) {
        t->seq = seq;
        t->state = T_RUNNING;
    }
    return t;
}

static void txn_free(struct jnl_txn *t)
{
    if (t) {
        free(t->bufs);
        free(t->inodes);
        free(t);
    }
}

/* Grows the transaction's lists so that `more` entries fit without
 * allocating while a handle modifies metadata. */
static int reserve_lists(struct jnl_txn *t, uint64_t more)
{
    size_t want = t->nbufs + more + 8;
    if (want > t->bcap) {
        size_t cap = want * 2;
        struct bbuf **b = realloc(t->bufs, cap * sizeof(*b));
        if (!b)
            return -ENOMEM;
        t->bufs = b;
        t->bcap = cap;
    }
    want = t->ninodes + more + 8;
    if (want > t->icap) {
        size_t cap = want * 2;
        struct sfs_inode **p = realloc(t->inodes, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        t->inodes = p;
        t->icap = cap;
    }
    return 0;
}

/* Wakes the commit thread, and a syncing thread draining a transaction
 * (both wait on `work`: a signal could wake the wrong one). */
static void kick(struct jnl *j)
{
    pthread_cond_broadcast(&j->work);
}

static void request_commit(struct jnl *j, uint64_t seq)
{
    if (j->commit_target < seq) {
        j->commit_target = seq;
        kick(j);
    }
}

/* ---- handles ----------------------------------------------------------- */

uint64_t jnl_checkpointed(struct jnl *j)
{
    /* Pairs with the release store in do_checkpoint: a caller that sees
     * transaction N checkpointed also sees its data blocks forgotten from
     * the cache (invariant 7). */
    return __atomic_load_n(&j->ckpt_done, __ATOMIC_ACQUIRE);
}

bool jnl_held(struct jnl *j)
{
    return tls_handle && tls_handle->j == j;
}

/* Waits (mu held) until the running transaction accepts `credits`. */
static int wait_for_room(struct jnl *j, uint32_t credits)
{
    if (sfs_txn_blocks(credits) > room_limit(j) / 2)
        return -E2BIG;
    for (;;) {
        struct jnl_txn *t = j->running;
        if (j->error)
            return j->error;
        if (j->stop)
            return -EROFS;
        if (t->state == T_RUNNING && j->used + need(t, credits) <= room_limit(j))
            return 0;
        if (t->state == T_RUNNING) {         /* no room: commit, then checkpoint */
            if (t->nbufs || t->handles)
                request_commit(j, t->seq);
            j->want_space = true;
            kick(j);
        }                                    /* else a commit is draining: wait */
        pthread_cond_wait(&j->cv, &j->mu);
    }
}

int jnl_start(struct jnl *j, uint32_t credits, struct jnl_handle **out)
{
    if (jnl_held(j)) {
        int r = jnl_join(tls_handle, credits);
        if (r == 0)
            *out = tls_handle;
        return r;
    }
    struct jnl_handle *h = handle_new();
    if (!h)
        return -ENOMEM;
    pthread_mutex_lock(&j->mu);
    int r = wait_for_room(j, credits);
    if (!r)
        r = reserve_lists(j->running, credits);
    if (!r) {
        h->t = j->running;
        h->t->handles++;
        h->t->reserved += credits;
    }
    assert(jnl_check(j));
    pthread_mutex_unlock(&j->mu);
    if (r) {
        handle_free(h);
        return r;
    }
    h->j = j;
    h->seq = h->t->seq;
    h->credits = credits;
    h->saved = tls_handle;
    tls_handle = h;
    *out = h;
    return 0;
}

int jnl_join(struct jnl_handle *h, uint32_t credits)
{
    struct jnl *j = h->j;
    struct jnl_txn *t = h->t;
    if (h->nest == JNL_MAX_NEST)
        return -EDEADLK;         /* runaway recursion: a programming error */
    pthread_mutex_lock(&j->mu);
    int r = 0;
    while (!j->error && j->used + need(t, credits) > room_limit(j) && j->used > 0) {
        /* Only a checkpoint can make room: we hold a handle of the
         * running transaction, so it cannot commit before we stop. */
        j->want_ckpt = true;
        kick(j);
        pthread_cond_wait(&j->cv, &j->mu);
    }
    if (j->error)
        r = j->error;
    else if (j->used + need(t, credits) > room_limit(j))
        r = -ENOSPC;
    else
        r = reserve_lists(t, credits);
    if (!r) {
        t->reserved += credits;
        h->nest_credits[h->nest++] = credits;
    }
    assert(jnl_check(j));
    pthread_mutex_unlock(&j->mu);
    return r;
}

void jnl_stop(struct jnl_handle *h)
{
    struct jnl *j = h->j;
    if (h->nest > 0) {
        pthread_mutex_lock(&j->mu);
        assert(h->t->reserved >= h->nest_credits[h->nest - 1]);
        h->t->reserved -= h->nest_credits[--h->nest];
        assert(jnl_check(j));
        pthread_mutex_unlock(&j->mu);
        return;
    }
    pthread_mutex_lock(&j->mu);
    assert(h->t == j->running && h->t->reserved >= h->credits);   /* 1 */
    h->t->handles--;
    h->t->reserved -= h->credits;
    if (h->t->handles == 0 && h->t->state == T_LOCKED)
        kick(j);                 /* the commit thread is draining */
    assert(jnl_check(j));
    pthread_mutex_unlock(&j->mu);
    if (tls_handle == h)
        tls_handle = h->saved;
    handle_free(h);
}

void jnl_dirty_buf(struct jnl_handle *h, struct bbuf *b)
{
    struct jnl_txn *t = h->t;
    if (__atomic_load_n(&b->tseq, __ATOMIC_RELAXED) == t->seq)
        return;                   /* only handles of t set it to t->seq */
    struct jnl *j = h->j;
    pthread_mutex_lock(&j->mu);
    assert(t == j->running && t->handles > 0);      /* 1: not snapshotted yet */
    if (__atomic_load_n(&b->tseq, __ATOMIC_RELAXED) != t->seq) {
        if (t->nbufs == t->bcap && reserve_lists(t, 64)) {
            fprintf(stderr, "storagefs: out of memory for a transaction\n");
            abort();
        }
        bcache_hold(j->bc, b);
        t->bufs[t->nbufs++] = b;
        __atomic_store_n(&b->tseq, t->seq, __ATOMIC_RELAXED);
        if (t->nbufs > j->ring / 4)
            request_commit(j, t->seq);
    }
    assert(jnl_check(j));
    pthread_mutex_unlock(&j->mu);
}

int jnl_dirty_inode(struct jnl_handle *h, struct sfs_inode *ip)
{
    struct jnl_txn *t = h->t;
    if (__atomic_load_n(&ip->tseq, __ATOMIC_RELAXED) == t->seq)
        return 0;
    struct jnl *j = h->j;
    struct bbuf *b;
    int r = bcache_get(j->bc, sfs_itable_blk(j->fs, ip->ino), SFS_MAGIC_NONE, &b);
    if (r)
        return r;
    jnl_dirty_buf(h, b);
    bcache_put(j->bc, b);
    pthread_mutex_lock(&j->mu);
    assert(t == j->running && t->handles > 0);      /* 1 */
    if (__atomic_load_n(&ip->tseq, __ATOMIC_RELAXED) != t->seq) {
        if (t->ninodes == t->icap && reserve_lists(t, 64)) {
            fprintf(stderr, "storagefs: out of memory for a transaction\n");
            abort();
        }
        inode_hold(j->fs, ip);
        t->inodes[t->ninodes++] = ip;
        __atomic_store_n(&ip->tseq, t->seq, __ATOMIC_RELAXED);
    }
    assert(jnl_check(j));
    pthread_mutex_unlock(&j->mu);
    return 0;
}

/* ---- ring I/O ------------------------------------------------------------ */

static uint64_t ring_blk(const struct jnl *j, uint64_t pos)
{
    return j->ring_start + pos % j->ring;
}

/* Writes n blocks of buf at ring positions pos.. (wrapping). */
static int ring_write(struct jnl *j, uint32_t pos, const uint8_t *buf, uint64_t n)
{
    while (n) {
        uint64_t run = j->ring - pos < n ? j->ring - pos : n;
        int r = media_write(j->m, j->ring_start + pos, (uint32_t)run, buf);
        if (r)
            return r;
        buf += run * SFS_BSIZE;
        n -= run;
        pos = 0;
    }
    return 0;
}

static void fill_desc(const struct jnl *j, uint8_t *d, uint64_t seq, uint32_t index,
                      uint32_t count, uint32_t total)
{
    memset(d, 0, SFS_BSIZE);
    le64_put(d + JD_JID, j->fs->sb.journal_id);
    le64_put(d + JD_SEQ, seq);
    le16_put(d + JD_TYPE, SFS_TXN_METADATA);
    le16_put(d + JD_INDEX, (uint16_t)index);
    le32_put(d + JD_COUNT, count);
    le32_put(d + JD_TOTAL, total);
    /* JD_NSTEPS, JD_STEP_MAP, JD_OPLOG: reserved for MicroTx, zero. */
}

/* Lays out descriptors and images of t into buf (positions from head).
 * Images come from each buffer's fresh checkpoint copy. */
static void build_log(struct jnl *j, const struct jnl_txn *t, uint8_t *buf)
{
    size_t i = 0, k = 0, idx = 0;
    while (i < t->nbufs || idx == 0) {
        uint8_t *d = buf + k * SFS_BSIZE;
        uint32_t cnt = (uint32_t)(t->nbufs - i < SFS_JD_MAX ? t->nbufs - i : SFS_JD_MAX);
        fill_desc(j, d, t->seq, (uint32_t)idx, cnt, (uint32_t)t->nbufs);
        for (uint32_t c = 0; c < cnt; c++) {
            le64_put(d + JD_TARGETS + 8 * c, t->bufs[i + c]->blk);
            memcpy(buf + (k + 1 + c) * SFS_BSIZE, t->bufs[i + c]->ckpt, SFS_BSIZE);
        }
        sfs_block_seal(d, SFS_MAGIC_JDESC, ring_blk(j, j->head + k));
        i += cnt;
        k += 1 + cnt;
        idx++;
    }
}

static void fill_commit(const struct jnl *j, uint8_t *c, const struct jnl_txn *t,
                        uint32_t ndesc, uint32_t txn_crc, uint64_t pos)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memset(c, 0, SFS_BSIZE);
    le64_put(c + JC_JID, j->fs->sb.journal_id);
    le64_put(c + JC_SEQ, t->seq);
    le16_put(c + JC_TYPE, SFS_TXN_METADATA);
    le32_put(c + JC_NBLOCKS, (uint32_t)t->nbufs);
    le32_put(c + JC_NDESC, ndesc);
    le32_put(c + JC_TXN_CRC, txn_crc);
    le64_put(c + JC_SEC, (uint64_t)ts.tv_sec);
    le32_put(c + JC_NSEC, (uint32_t)ts.tv_nsec);
    sfs_block_seal(c, SFS_MAGIC_JCOMMIT, ring_blk(j, pos));
}

/* Writes t (already snapshotted) to the ring at j->head: log, flush,
 * commit record, flush. Runs without mu. */
static int write_txn(struct jnl *j, const struct jnl_txn *t, uint64_t nblk)
{
    uint8_t *buf = malloc(nblk * SFS_BSIZE);
    if (!buf)
        return -ENOMEM;
    build_log(j, t, buf);
    uint64_t nlog = nblk - 1;
    uint32_t ndesc = (uint32_t)(nlog - t->nbufs);
    uint8_t *commit = buf + nlog * SFS_BSIZE;
    fill_commit(j, commit, t, ndesc, crc32c(0, buf, nlog * SFS_BSIZE), j->head + nlog);
    int r = ring_write(j, j->head, buf, nlog);
    if (!r)
        r = media_flush(j->m);    /* log and ordered data before the commit */
    if (!r)
        r = ring_write(j, (uint32_t)((j->head + nlog) % j->ring), commit, 1);
    if (!r)
        r = media_flush(j->m);
    free(buf);
    return r;
}

/* ---- checkpoint ----------------------------------------------------------- */

static int cmp_blk(const void *a, const void *b)
{
    uint64_t x = (*(struct bbuf *const *)a)->blk, y = (*(struct bbuf *const *)b)->blk;
    return x < y ? -1 : x > y;
}

static int write_header(struct jnl *j, uint64_t start_seq, uint32_t start_pos)
{
    uint8_t *b = malloc(SFS_BSIZE);
    if (!b)
        return -ENOMEM;
    struct sfs_jhdr h = {
        .jid = j->fs->sb.journal_id, .start_seq = start_seq,
        .start_pos = start_pos, .ring = j->ring,
    };
    sfs_jhdr_encode(&h, b, j->fs->sb.journal_start);
    int r = media_write(j->m, j->fs->sb.journal_start, 1, b);
    if (!r)
        r = media_flush(j->m);
    free(b);
    return r;
}

/* Writes checkpoint images in place, sorted, in runs of adjacent blocks. */
static int write_in_place(struct jnl *j, struct bbuf **v, size_t n)
{
    enum { RUN = 64 };
    uint8_t *buf = malloc(RUN * SFS_BSIZE);
    if (!buf)
        return -ENOMEM;
    int r = 0;
    for (size_t i = 0; !r && i < n;) {
        size_t k = 0;
        while (i + k < n && k < RUN && v[i + k]->blk == v[i]->blk + k) {
            memcpy(buf + k * SFS_BSIZE, v[i + k]->ckpt, SFS_BSIZE);
            k++;
        }
        r = media_write(j->m, v[i]->blk, (uint32_t)k, buf);
        i += k;
    }
    free(buf);
    return r;
}

static void set_error(struct jnl *j, int r)
{
    if (!j->error) {
        j->error = r == -ENOMEM ? -ENOMEM : -EIO;
        fprintf(stderr, "storagefs: journal I/O failed (%s); file system is now read-only\n",
                strerror(-r));
    }
    assert(jnl_check(j));                           /* 6 */
    pthread_cond_broadcast(&j->cv);
    kick(j);
}

/* Drops the journal's references to checkpointed buffers, and forgets
 * file data blocks nobody else holds (invariant 7): they are in place now,
 * and a cached copy would go stale under the next in-place write. */
static void release_checkpointed(struct jnl *j, struct bbuf **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t blk = v[i]->blk;
        bool data = v[i]->magic == SFS_MAGIC_DATA;
        bcache_put(j->bc, v[i]);
        if (data)
            bcache_forget(j->bc, blk);
    }
}

/* Checkpoints every committed transaction (mu held; dropped for I/O). */
static void do_checkpoint(struct jnl *j)
{
    struct bbuf **v = j->ck;
    size_t n = j->nck;
    uint64_t target = j->committed;
    uint32_t tail = j->head;
    j->ck = NULL;
    j->nck = j->ckcap = 0;
    pthread_mutex_unlock(&j->mu);
    qsort(v, n, sizeof(*v), cmp_blk);
    int r = write_in_place(j, v, n);
    if (!r)
        r = media_flush(j->m);
    if (!r)
        r = write_header(j, target + 1, tail);
    pthread_mutex_lock(&j->mu);
    if (r) {
        set_error(j, r);
        j->ck = v;               /* keep them; never written again */
        j->nck = j->ckcap = n;
        assert(jnl_check(j));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        free(v[i]->ckpt);
        v[i]->ckpt = NULL;
        v[i]->ckpt_seq = 0;
    }
    j->used = 0;
    j->want_ckpt = j->want_space = false;
    j->ckpt_finishing = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    release_checkpointed(j, v, n);
    free(v);
    alloc_txn_checkpointed(j->fs, target);
    /* Pairs with the acquire load in jnl_checkpointed: whoever sees the
     * new value finds the forgotten data blocks on the media. */
    __atomic_store_n(&j->ckpt_done, target, __ATOMIC_RELEASE);
    pthread_mutex_lock(&j->mu);
    j->ckpt_finishing = false;   /* jnl_sync_checkpoint's callers may reuse the frees */
    assert(jnl_check(j));
    pthread_cond_broadcast(&j->cv);
}

/* ---- commit --------------------------------------------------------------- */

/* Copies every dirty buffer into its checkpoint image (sealed). */
static int snapshot(struct jnl_txn *t)
{
    assert(t->state == T_LOCKED && t->handles == 0);   /* 1: whole operations only */
    for (size_t i = 0; i < t->nbufs; i++) {
        struct bbuf *b = t->bufs[i];
        if (!b->ckpt && !(b->ckpt = malloc(SFS_BSIZE)))
            return -ENOMEM;
        memcpy(b->ckpt, b->data, SFS_BSIZE);
        if (b->magic != SFS_MAGIC_NONE && b->magic != SFS_MAGIC_DATA)
            sfs_block_seal(b->ckpt, b->magic, b->blk);
        __atomic_store_n(&b->tseq, 0, __ATOMIC_RELAXED);
    }
    return 0;
}

/* Moves the committed buffers onto the checkpoint list (mu held). */
static int to_checkpoint_list(struct jnl *j, struct jnl_txn *t)
{
    if (j->nck + t->nbufs > j->ckcap) {
        size_t cap = (j->nck + t->nbufs) * 2;
        struct bbuf **v = realloc(j->ck, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        j->ck = v;
        j->ckcap = cap;
    }
    for (size_t i = 0; i < t->nbufs; i++) {
        struct bbuf *b = t->bufs[i];
        if (b->ckpt_seq == 0)
            j->ck[j->nck++] = b;              /* the transaction's ref moves here */
        else
            bcache_put(j->bc, b);             /* already listed (and pinned) */
        b->ckpt_seq = t->seq;
    }
    return 0;
}

static void encode_inodes(struct jnl *j, struct jnl_txn *t)
{
    for (int pass = 0; pass < 2; pass++) {      /* freed slots first */
        for (size_t i = 0; i < t->ninodes; i++) {
            struct sfs_inode *ip = t->inodes[i];
            if (ip->deleted == (pass == 0)) {
                inode_commit_encode(j->fs, ip);
                __atomic_store_n(&ip->tseq, 0, __ATOMIC_RELAXED);
            }
        }
    }
}

static void finish_commit(struct jnl *j, struct jnl_txn *t, uint64_t nblk)
{
    assert(t->seq == j->committed + 1);             /* 5: consecutive */
    assert(j->used + nblk <= j->ring);              /* 3: checkpointed first */
    j->head = (uint32_t)((j->head + nblk) % j->ring);
    j->used += nblk;
    j->committed = t->seq;
    int r = to_checkpoint_list(j, t);
    if (r)
        set_error(j, r);
    if (j->used > j->ring / 2)
        j->want_ckpt = true;
    assert(jnl_check(j));
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    for (size_t i = 0; i < t->ninodes; i++)
        inode_put(j->fs, t->inodes[i]);
    alloc_txn_committed(j->fs, t->seq);
    txn_free(t);
    pthread_mutex_lock(&j->mu);
}

/* Waits for t's handles, checkpointing meanwhile if a handle needs room. */
static void drain(struct jnl *j, struct jnl_txn *t)
{
    t->state = T_LOCKED;
    while (t->handles > 0) {
        if (j->want_ckpt && j->used > 0 && !j->error) {
            do_checkpoint(j);
            continue;
        }
        pthread_cond_wait(&j->work, &j->mu);
    }
}

/* Commits the running transaction (mu held; dropped for I/O). */
static void do_commit(struct jnl *j)
{
    struct jnl_txn *t = j->running, *nt = txn_new(t->seq + 1);
    if (!nt) {
        set_error(j, -ENOMEM);
        return;
    }
    drain(j, t);
    if (t->nbufs == 0 && t->ninodes == 0) {
        /* Nothing to log: reopen it under the same number. Sequence
         * numbers on the ring must stay consecutive, or replay would
         * stop at the gap and lose every later commit. */
        t->state = T_RUNNING;
        if (j->commit_target >= t->seq)
            j->commit_target = t->seq - 1;
        assert(jnl_check(j));
        pthread_cond_broadcast(&j->cv);
        txn_free(nt);
        return;
    }
    encode_inodes(j, t);
    uint64_t nblk = sfs_txn_blocks(t->nbufs);
    if (j->used + nblk > j->ring && j->used > 0)
        do_checkpoint(j);
    int r = nblk > j->ring ? -ENOSPC : snapshot(t);
    j->running = nt;
    assert(jnl_check(j));
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!r && !j->error)
        r = write_txn(j, t, nblk);
    pthread_mutex_lock(&j->mu);
    if (r || j->error) {
        set_error(j, r ? r : j->error);
        txn_free(t);             /* its pins stay: teardown frees everything */
        return;
    }
    finish_commit(j, t, nblk);
}

/* ---- the commit thread ------------------------------------------------- */

static bool running_dirty(const struct jnl *j)
{
    return j->running->nbufs || j->running->ninodes || j->running->handles;
}

static bool has_work(const struct jnl *j)
{
    return !j->busy &&
           (j->stop || j->want_ckpt || j->want_space || j->committed < j->commit_target);
}

static void deadline_after(struct timespec *ts, uint32_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Ends a commit or checkpoint (mu held): waiters may start the next. */
static void set_idle(struct jnl *j)
{
    j->busy = false;
    pthread_cond_broadcast(&j->cv);
}

/* One round of work (mu held). Returns false when the thread should end. */
static bool thread_step(struct jnl *j)
{
    if (j->error)
        return !j->stop;
    if (j->committed < j->commit_target) {
        j->busy = true;
        do_commit(j);
        set_idle(j);
        return true;
    }
    if ((j->want_ckpt || j->want_space) && j->used > 0) {
        j->busy = true;
        do_checkpoint(j);
        set_idle(j);
        return true;
    }
    j->want_space = false;
    j->want_ckpt = false;
    if (j->stop) {
        if (!running_dirty(j))
            return false;
        request_commit(j, j->running->seq);
    }
    return true;
}

static void *commit_thread(void *arg)
{
    struct jnl *j = arg;
    struct timespec dl;
    pthread_mutex_lock(&j->mu);
    deadline_after(&dl, j->interval_ms);
    for (;;) {
        while (!has_work(j)) {
            if (pthread_cond_timedwait(&j->work, &j->mu, &dl) == ETIMEDOUT) {
                deadline_after(&dl, j->interval_ms);
                if (running_dirty(j))
                    request_commit(j, j->running->seq);
            }
        }
        if (!thread_step(j))
            break;
        if (j->error && j->stop)
            break;
        if (j->error)
            pthread_cond_wait(&j->work, &j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* ---- open / close / sync ------------------------------------------------- */

static int jnl_alloc(struct sfs *fs, uint64_t seq, uint32_t pos, uint32_t interval_ms,
                     struct jnl **out)
{
    struct jnl *j = calloc(1, sizeof(*j));
    if (!j || !(j->running = txn_new(seq))) {
        free(j);
        return -ENOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_cond_init(&j->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j->mu, NULL);
    j->fs = fs;
    j->m = fs->m;
    j->bc = fs->bc;
    j->committed = seq - 1;
    j->commit_target = seq - 1;
    j->ckpt_done = seq - 1;      /* before the commit thread exists */
    j->ring_start = fs->sb.journal_start + 1;
    j->ring = (uint32_t)(fs->sb.journal_blocks - 1);
    j->head = pos % j->ring;
    j->interval_ms = interval_ms ? interval_ms : 1000;
    assert(jnl_check(j));
    *out = j;
    return 0;
}

static void jnl_free(struct jnl *j)
{
    for (size_t i = 0; i < j->nck; i++)
        bcache_put(j->bc, j->ck[i]);
    free(j->ck);
    txn_free(j->running);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    pthread_cond_destroy(&j->work);
    free(j);
}

int jnl_open(struct sfs *fs, uint64_t seq, uint32_t pos, uint32_t interval_ms,
             struct jnl **out)
{
    struct jnl *j;
    int r = jnl_alloc(fs, seq, pos, interval_ms, &j);
    if (r)
        return r;
    r = write_header(j, seq, j->head);
    if (!r)
        r = -pthread_create(&j->thread, NULL, commit_thread, j);
    if (r) {
        jnl_free(j);
        return r;
    }
    *out = j;
    return 0;
}

int jnl_close(struct jnl *j)
{
    if (!j)
        return 0;
    pthread_mutex_lock(&j->mu);
    j->stop = true;
    request_commit(j, j->running->seq);
    kick(j);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    pthread_mutex_lock(&j->mu);
    if (!j->error && j->used > 0)
        do_checkpoint(j);        /* the thread is gone: do the last one here */
    int r = j->error;
    pthread_mutex_unlock(&j->mu);
    jnl_free(j);
    return r;
}

static int sync_commit(struct jnl *j, bool here)
{
    if (jnl_held(j))
        return -EDEADLK;
    bool flushed = false;        /* our own commit's last flush covers the caller */
    pthread_mutex_lock(&j->mu);
    for (;;) {                   /* re-evaluated: an empty txn reopens */
        uint64_t target = running_dirty(j) ? j->running->seq : j->running->seq - 1;
        if (j->committed >= target || j->error)
            break;
        if (here && !j->busy && !j->stop && j->committed + 1 == target) {
            /* Nothing being written: commit it here (group commit still
             * holds: every handle of the transaction is drained first). */
            j->busy = true;
            if (j->commit_target < target)
                j->commit_target = target;
            do_commit(j);
            flushed |= j->committed == target;
            set_idle(j);
            if (has_work(j))
                kick(j);         /* a checkpoint it asked for, a waiting request */
            continue;
        }
        request_commit(j, target);
        pthread_cond_wait(&j->cv, &j->mu);
    }
    int r = j->error;
    pthread_mutex_unlock(&j->mu);
    return r ? r : flushed ? 0 : media_flush(j->m);
}

int jnl_sync(struct jnl *j)
{
    return sync_commit(j, false);
}

int jnl_sync_here(struct jnl *j)
{
    return sync_commit(j, true);
}

int jnl_sync_checkpoint(struct jnl *j)
{
    int r = jnl_sync(j);
    if (r)
        return r;
    pthread_mutex_lock(&j->mu);
    if (j->used > 0) {
        j->want_ckpt = true;
        kick(j);
    }
    while ((j->used > 0 || j->ckpt_finishing) && !j->error)
        pthread_cond_wait(&j->cv, &j->mu);
    r = j->error;
    pthread_mutex_unlock(&j->mu);
    return r;
}
