/* device/engine/engine.c - engine lifecycle, dispatch on the device cores,
 * completion and statistics. The operations are in engine_ops.c. */
#include "device/engine/engine_int.h"
#include "device/engine/fused/fused.h"
#include "device/engine/fused/oplog.h"
#include "device/engine/sysdir.h"
#include "device/sched/model.h"

#include "common/clock.h"
#include "common/done.h"
#include "proto/wire.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const eng_op_fn op_table[ENG_OP_COUNT] = {
#define X(N, n) [ENG_OP_##N] = eop_##n,
    ENG_OPS(X)
#undef X
};

static const char *const op_names[ENG_OP_COUNT] = {
#define X(N, n) [ENG_OP_##N] = #n,
    ENG_OPS(X)
#undef X
};

const char *eng_op_name(unsigned op)
{
    return op < ENG_OP_COUNT ? op_names[op] : "?";
}

static uint64_t bytes_moved(const struct eng_cmd *c)
{
    bool data = c->op == ENG_OP_READ || c->op == ENG_OP_WRITE || c->op == ENG_OP_COPY_RANGE;
    return data && c->ret > 0 ? (uint64_t)c->ret : 0;
}

static void complete(struct eng_cmd *c)
{
    if (c->done) {
        c->done(c);
        return;
    }
    /* The results written above are visible to the waiter in eng_call
     * once it returns (done.h invariant 2); no system call when the
     * submitter ran the command itself and so never slept. */
    done_post(&c->state);
}

/* One line per command: core, op, caller, operands, result, latency. */
static void trace(const struct eng_cmd *c, unsigned core, uint64_t ns)
{
    fprintf(stderr, "trace core %u %s uid %u pid %d ino %llu fh %llx name %s off %llu "
                    "size %zu -> %lld (%llu ns)\n",
            core, eng_op_name(c->op), c->cred.uid, c->cred.pid, (unsigned long long)c->ino,
            (unsigned long long)c->fh, c->name ? c->name : "-", (unsigned long long)c->off,
            c->size, (long long)c->ret, (unsigned long long)ns);
}

/* The read-only rule (engine.h, invariant 6), for every door at once:
 * -EROFS for a command that would change something (a fused op's results
 * name the step), else 0. A fused op that changes nothing needs no
 * operational log: autorec runs as micro. */
static int64_t read_only_gate(struct engine *e, struct eng_cmd *c)
{
    unsigned step = 0;
    if (!e->read_only)
        return 0;
    if (!eng_cmd_mutates(c, &step)) {
        if (c->op == ENG_OP_CISC && c->cisc && c->cisc->tx == WIRE_TX_AUTOREC)
            c->cisc->tx = WIRE_TX_MICRO;
        return 0;
    }
    if (c->op == ENG_OP_CISC && c->cisc && !c->cisc->status)
        fop_fail(c->cisc, step, -EROFS);
    return -EROFS;
}

static void run(void *arg, struct sched_item *it, unsigned core)
{
    struct engine *e = arg;
    struct eng_cmd *c = (struct eng_cmd *)((char *)it - offsetof(struct eng_cmd, item));
    unsigned op = c->op;
    c->cred.acl_fs = e->fs;   /* perm.h: ACLs are this device's */
    struct dm_meter dm;
    c->mem_held = 0;
    dm_meter_begin(&dm);   /* a slow core is slow at StorageFS work too (model.h) */
    int64_t ret = read_only_gate(e, c);
    if (!ret)
        ret = op < ENG_OP_COUNT ? op_table[op](e, c) : -EINVAL;
    if (ret == ENG_PARKED) {   /* lease.h: it may run again already: c is not ours */
        dm_meter_end_handed_off(&dm);
        return;
    }
    dm_meter_end(&dm, NULL);   /* done, locks released: it may be parked meanwhile */
    fop_mem_done(e, c);   /* its buffers, held as long as the slow core ran it */
    c->ret = ret;
    if (c->ret >= 0 && c->attr.ino == SFS_ROOT_INO)
        sysdir_root_attr(e->fs, &c->attr);   /* the hidden directory is not counted */
    if (c->chg && c->ret >= 0)
        eng_note_changes(e, c);
    uint64_t ns = now_ns() - it->t_submit_ns;
    core = sched_core_now(core);   /* its slot now: a parked op may come back in another */
    if (e->trace)
        trace(c, core, ns);
    stats_record(e->stats, core, op, ns, bytes_moved(c), c->ret < 0);
    if (c->ret == -EUCLEAN)
        stats_corrupt(e->stats);
    complete(c);   /* c may be gone after this */
}

void eng_resume(struct engine *e, struct eng_cmd *c)
{
    int r = sched_submit_handoff(e->sched, &c->item);
    if (r) {
        c->ret = r;
        complete(c);
    }
}

/* Destroys the engine's locks and frees it. */
static void free_locks(struct engine *e)
{
    for (unsigned i = 0; i < ENG_INO_STRIPES; i++)
        pthread_rwlock_destroy(&e->ino_lock[i]);
    eng_spares_drain(e);
    pthread_mutex_destroy(&e->mem_mu);
    pthread_cond_destroy(&e->mem_cv);
    pthread_rwlock_destroy(&e->watch_lock);
    fop_oplog_free(e);
    pthread_mutex_destroy(&e->oplog_mu);
    pthread_cond_destroy(&e->oplog_cv);
    free(e);
}

int eng_create(struct sfs *fs, const struct eng_config *cfg, struct engine **out)
{
    const struct sched_policy *pol = sched_policy_find(cfg->sched ? cfg->sched : "fifo");
    if (!pol || cfg->cores < 1 || cfg->cores > SCHED_MAX_CORES || cfg->tx > WIRE_TX_AUTOREC)
        return -EINVAL;
    struct engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->fs = fs;
    e->cores = cfg->cores;
    e->trace = cfg->trace;
    e->progs = cfg->progs;
    uint64_t ms = cfg->op_time_ms ? cfg->op_time_ms : ENG_OP_TIME_MS_DEFAULT;
    e->op_time_ns = ms < (1ull << 62) / 1000000u ? ms * 1000000u : 1ull << 62;   /* no overflow */
    e->tx = cfg->tx ? cfg->tx : WIRE_TX_MACRO;
    e->read_only = cfg->read_only;
    if (e->read_only && e->tx == WIRE_TX_AUTOREC)
        e->tx = WIRE_TX_MICRO;   /* nothing to log: no op may change anything */
    for (unsigned i = 0; i < ENG_INO_STRIPES; i++)
        pthread_rwlock_init(&e->ino_lock[i], NULL);
    pthread_mutex_init(&e->mem_mu, NULL);
    pthread_cond_init(&e->mem_cv, NULL);
    pthread_rwlock_init(&e->watch_lock, NULL);
    pthread_mutex_init(&e->oplog_mu, NULL);
    pthread_cond_init(&e->oplog_cv, NULL);
    e->tx_log_max = cfg->tx_log_max ? cfg->tx_log_max : ENG_TX_LOG_MAX_DEFAULT;
    e->tx_log_entry = cfg->tx_log_entry ? cfg->tx_log_entry : ENG_TX_LOG_ENTRY_DEFAULT;
    e->mem_budget = cfg->dev_ram ? cfg->dev_ram : ENG_DEV_RAM_DEFAULT;
    e->tenant_pid = cfg->tenant_pid;
    int r = stats_create(ENG_OP_COUNT, cfg->cores, &e->stats);
    if (!r)
        r = hdl_table_create(&e->hdl);
    if (!r)
        r = lease_table_create(e, cfg->lease_wait_ns, &e->lease);
    if (!r)
        r = sched_create(pol,
                         &(struct sched_config){ cfg->cores, cfg->direct, e->mem_budget,
                                                 cfg->max_queues, cfg->tenant_pid },
                         run, e, &e->sched);
    if (r) {
        lease_table_destroy(e->lease);
        hdl_table_destroy(e->hdl);
        stats_destroy(e->stats);
        free_locks(e);
        return r;
    }
    *out = e;
    return 0;
}

void eng_destroy(struct engine *e)
{
    if (!e)
        return;
    lease_table_close(e->lease);   /* parked commands run before the cores stop */
    sched_destroy(e->sched);
    lease_table_destroy(e->lease);
    struct hdl h;
    while (hdl_drain(e->hdl, &h))
        sfs_iput(e->fs, h.ino);
    hdl_table_destroy(e->hdl);
    stats_destroy(e->stats);
    free_locks(e);
}

void eng_drain(struct engine *e)
{
    sched_drain(e->sched);
}

void eng_cmd_init(struct eng_cmd *cmd, unsigned op, const struct eng_cred *cred)
{
    memset(cmd, 0, sizeof(*cmd));
    cmd->op = op;
    if (cred)
        cmd->cred = *cred;
    else
        cmd->cred.ngroups = -1;
}

uint32_t eng_tenant(const struct engine *e, const struct eng_cred *cred)
{
    return e->tenant_pid ? (uint32_t)cred->pid : cred->uid;
}

bool eng_tenant_is_pid(const struct engine *e)
{
    return e->tenant_pid;
}

/* Who the scheduler charges cmd to, the device memory it will hold (a
 * fused op's reservation, fused.h; other commands hold none), and whether
 * it may be parked at its preemption points: a macro fused op only, whose
 * changes nobody sees before its commit (sched.h, "Preemption"). */
static void tag(struct engine *e, struct eng_cmd *cmd)
{
    bool fop = cmd->op == ENG_OP_CISC && cmd->cisc && !cmd->cisc->status;
    cmd->item.tenant = eng_tenant(e, &cmd->cred);
    cmd->item.mem = fop ? cmd->cisc->mem : 0;
    cmd->item.preemptible = fop && (cmd->cisc->tx > e->tx ? cmd->cisc->tx : e->tx) == WIRE_TX_MACRO;
}

int eng_submit(struct engine *e, struct eng_cmd *cmd)
{
    tag(e, cmd);
    return sched_submit(e->sched, &cmd->item);
}

int eng_submit_handoff(struct engine *e, struct eng_cmd *cmd)
{
    tag(e, cmd);
    return sched_submit_handoff(e->sched, &cmd->item);
}

void eng_cancel(struct engine *e)
{
    /* Relaxed: ops poll it at their boundaries; seeing it a block late
     * costs one block, and nothing else is published with it. */
    __atomic_store_n(&e->cancel, 1, __ATOMIC_RELAXED);
}

struct batch_mine {
    bool (*mine)(const struct eng_cmd *c);
};

static bool batch_mine(void *arg, const struct sched_item *it)
{
    const struct batch_mine *m = arg;
    return m->mine((const struct eng_cmd *)((const char *)it - offsetof(struct eng_cmd, item)));
}

void eng_submit_batch(struct engine *e, struct eng_cmd **cmds, unsigned n, int *err,
                      bool (*mine)(const struct eng_cmd *c))
{
    struct sched_item *items[ENG_BATCH_MAX];
    struct batch_mine m = { mine };
    assert(n <= ENG_BATCH_MAX);
    /* another door's commands see the mount's cached writes */
    void *hold = eng_watch_writeback(e, n);
    for (unsigned i = 0; i < n; i++) {
        cmds[i]->hold = hold;
        tag(e, cmds[i]);
        items[i] = &cmds[i]->item;
    }
    sched_submit_batch(e->sched, items, n, err, batch_mine, &m);
}

unsigned eng_tenant_stats(struct engine *e, struct sched_tenant_stats *out, unsigned max)
{
    return sched_tenant_stats(e->sched, out, max);
}

ssize_t eng_sched_report(struct engine *e, char *buf, size_t size)
{
    return sched_report(e->sched, buf, size);
}

int eng_tenant_weight(struct engine *e, uint32_t tenant, uint32_t weight)
{
    return sched_tenant_weight(e->sched, tenant, weight);
}

int eng_queue_open(struct engine *e, const struct eng_cred *cred)
{
    return sched_queue_open(e->sched, eng_tenant(e, cred));
}

void eng_queue_close(struct engine *e, const struct eng_cred *cred)
{
    sched_queue_close(e->sched, eng_tenant(e, cred));
}

int64_t eng_call(struct engine *e, struct eng_cmd *cmd)
{
    cmd->done = NULL;
    done_arm(&cmd->state);
    int r = eng_submit(e, cmd);
    if (r)
        return cmd->ret = r;
    done_wait(&cmd->state);   /* pairs with done_post in complete() */
    return cmd->ret;
}

uint64_t eng_parked(struct engine *e)
{
    return lease_parked(e->lease);
}

const struct stats *eng_stats(struct engine *e)
{
    return e->stats;
}

void eng_sched_stats(struct engine *e, struct sched_stats *st)
{
    sched_get_stats(e->sched, st);
}

uint64_t eng_open_handles(struct engine *e)
{
    return hdl_count(e->hdl);
}

unsigned eng_tx_mode(struct engine *e)
{
    return e->tx;
}

const char *eng_tx_name(unsigned tx)
{
    static const char *const names[] = { "default", "macro", "micro", "autorec" };
    return tx <= WIRE_TX_AUTOREC ? names[tx] : "?";
}

void eng_release_handles(struct engine *e, struct hdl_table *t)
{
    struct hdl h;
    while (hdl_drain(t, &h))
        sfs_iput(e->fs, h.ino);
}
