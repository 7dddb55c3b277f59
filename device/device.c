/* device/device.c - device lifecycle and its control-socket requests. */
#include "device/device.h"
#include "common/thread.h"

#include "common/clock.h"
#include "common/corrupt.h"
#include "common/le.h"
#include "device/compute/keys.h"
#include "device/control.h"
#include "device/engine/stats.h"
#include "device/engine/fused/fused.h"
#include "device/engine/fused/oplog.h"
#include "proto/wire.h"
#include "device/media/flash_media.h"
#include "device/storagefs/format.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Control work that waits for a queue's commands to finish (destroying a
 * queue pair, ending a session) runs on this thread, never on the control
 * thread: one client's busy queues hold up no other client's requests.
 * Jobs run in order, so a session's queue goes before the session. */
struct slow_job {
    struct slow_job *next;
    struct qp_session *session;
    bool end;                 /* end the session (its connection closed) ... */
    uint32_t qp;              /* ... or destroy this queue and answer `later` */
    struct ctl_later later;
};

struct slow {
    pthread_t thread;
    pthread_mutex_t lock;     /* protects head, tail, stop */
    pthread_cond_t cv;
    struct slow_job *head, **tail;
    bool stop, started;
};

struct device {
    struct sfs *fs;
    struct media *flash;             /* the flash media under fs (owned by it), or NULL */
    struct engine *eng;
    struct qp_service *qps;          /* libcisc queue pairs */
    struct progs *progs;             /* eBPF program registry */
    struct ctl *ctl;
    struct slow slow;                /* the control requests that wait */
    char *image, *mountpoint;
    bool read_only;                  /* dev_opts.read_only: nothing is written */
    const char *media_io;            /* "pread", "mmap" or "mixed" (an array) */
    unsigned cores;
    const char *sched;
    uint64_t started_ns;
    pthread_mutex_t hook_lock;       /* protects the hook and `stopping` */
    bool stopping;                   /* dev_stop began: no more status */
    bool stop_requested;             /* a SHUTDOWN arrived (maybe before the hook) */
    dev_stop_fn stop_hook;
    void *stop_arg;
    char *recovery;                  /* what recovery at start-up did (oplog.h), or NULL */
    size_t recovery_len;
};

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return r;
}

/* Creates a fresh image file of `size` bytes and formats it; the root
 * directory belongs to whoever runs the device. */
static int create_image(const char *path, uint64_t size, char *err, size_t errlen)
{
    struct media *m;
    int r = media_create_file(path, size, MEDIA_CREATE_EXCL, &m);
    if (r == -EEXIST)
        return 0;   /* someone made it meanwhile: open it as it is */
    if (r)
        return fail(err, errlen, r, "cannot create image %s: %s", path, strerror(-r));
    struct sfs_mkfs_opts mo = { .root_uid = geteuid(), .root_gid = getegid() };
    r = sfs_mkfs(m, &mo);
    media_close(m);
    if (r) {
        unlink(path);
        return fail(err, errlen, r, "cannot format new image %s: %s", path, strerror(-r));
    }
    return 0;
}

/* Images are private (README "Images are private"): the image holds every
 * file's bytes whatever the files' own permissions say, so a device
 * refuses an image other users can write (they could change any file, or
 * the device's own programs, under it) and warns when they can read it. */
static int check_private(const char *image, int fd, char *err, size_t errlen)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st))
        return 0;
    unsigned mode = st.st_mode & 07777;
    if (mode & (S_IWGRP | S_IWOTH))
        return fail(err, errlen, -EPERM,
                    "image %s is writable by other users (mode %04o), who could change "
                    "any file in it: make it private with chmod 600 %s", image, mode, image);
    if (mode & (S_IRGRP | S_IROTH))
        fprintf(stderr, "cisc: warning: image %s is readable by other users (mode %04o), "
                "who can read every file in it whatever its permissions: chmod 600 %s\n",
                image, mode, image);
    return 0;
}

/* A file without StorageFS's superblock magic is not an image at all:
 * say so, rather than call it corrupt. */
static int check_is_image(const char *image, struct media *m, char *err, size_t errlen)
{
    uint8_t *b = malloc(MEDIA_BLOCK_SIZE);
    if (!b)
        return fail(err, errlen, -ENOMEM, "out of memory");
    int r = m->nblocks ? media_read(m, 0, 1, b) : -EINVAL;
    bool magic = !r && le32_get(b + BH_MAGIC) == SFS_MAGIC_SUPER;
    free(b);
    if (r == -EIO || r == -ENOMEM)
        return fail(err, errlen, r, "cannot read image %s: %s", image, strerror(-r));
    struct media_array_label l;
    if (!magic && media_array_label_read(m, &l) == 0)
        return fail(err, errlen, -EINVAL, "%s is member %u of an array of %u member images: "
                    "start the array with cisc up --members", image, l.index, l.members);
    return magic ? 0
                 : fail(err, errlen, -EINVAL, "%s is not a ciscfs image (make one with: "
                        "cisc mkfs %s)", image, image);
}

/* A read-only start refuses an image whose journal holds committed
 * transactions: seeing them in place would take writes. */
static int check_replay(const struct dev_opts *o, struct media *m, char *err, size_t errlen)
{
    struct sfs_info in;
    if (!o->read_only || sfs_info(m, &in) || !in.journal_txns)
        return 0;   /* an image sfs_info cannot read: the mount says why */
    return fail(err, errlen, -EROFS,
                "image %s needs its journal replayed (%llu transactions), which writes: "
                "start it read-write once, or read-only with --replay", o->image,
                (unsigned long long)in.journal_txns);
}

/* The last corruption report, naming our source file only when verbose. */
static const char *corrupt_msg(const struct dev_opts *o)
{
    return o->verbose ? cisc_corrupt_last() : cisc_corrupt_what();
}

/* Whether image file path is read through a shared mapping: asked for, or
 * (auto) the file lives in RAM, where no media error can become SIGBUS
 * under the mapping (a full file system cannot either: media_mmap.h
 * reserves backing store before a block's first write). */
static bool image_mapped(const struct dev_opts *o, const char *path)
{
    if (o->media_io != DEV_MEDIA_IO_AUTO)
        return o->media_io == DEV_MEDIA_IO_MMAP;
    struct statfs sf;
    return statfs(path, &sf) == 0 &&
           ((unsigned long)sf.f_type == TMPFS_MAGIC || (unsigned long)sf.f_type == RAMFS_MAGIC);
}

/* The status line's word: how every image file is read. */
static const char *media_io_word(const struct dev_opts *o)
{
    unsigned n = o->nmembers ? o->nmembers : 1, mapped = 0;
    for (unsigned i = 0; i < n; i++)
        mapped += image_mapped(o, o->nmembers ? o->members[i] : o->image);
    return mapped == n ? "mmap" : mapped ? "mixed" : "pread";
}

/* Opens one image file (locked) and checks that it is private. */
static int open_image(const struct dev_opts *o, const char *path, struct media **out,
                      char *err, size_t errlen)
{
    struct media *m;
    unsigned flags = (o->read_only ? MEDIA_RDONLY : 0) | (image_mapped(o, path) ? MEDIA_MMAP : 0);
    int r = media_open_file(path, flags, &m);
    if (r == -EBUSY)
        return fail(err, errlen, r, "image %s is in use by another device (it is locked)",
                    path);
    if (r)
        return fail(err, errlen, r, "cannot open image %s: %s", path, strerror(-r));
    r = check_private(path, media_fd(m), err, errlen);
    if (r) {
        media_close(m);
        return r;
    }
    *out = m;
    return 0;
}

/* Replaces *m (the media of image path) by the NAND model over it, with
 * its FTL state in PATH.ftl and background GC. On failure *m is closed
 * and NULL. */
static int model_flash(const struct dev_opts *o, const char *path, struct media **m,
                       char *err, size_t errlen)
{
    char why[128];
    int r = flash_media_open(*m, o->flash, why, sizeof(why), m);
    if (r) {
        *m = NULL;   /* flash_media_open closed it */
        return fail(err, errlen, r, "cannot model flash for image %s: %s", path,
                    r == -EINVAL ? why : strerror(-r));
    }
    /* The FTL state lives in a side file, IMAGE.ftl (docs/FLASH.md): it is
     * simulator state, not the file system's, so the on-image format and
     * fsck stay untouched. */
    char state[PATH_MAX];
    r = snprintf(state, sizeof(state), "%s.ftl", path) >= (int)sizeof(state)
            ? -ENAMETOOLONG : flash_media_state(*m, state);
    /* Background GC while no I/O crosses the media (docs/FLASH.md). */
    if (!r)
        r = flash_media_idle_gc(*m, FLASH_IDLE_TICK_NS);
    if (r) {
        media_close(*m);
        *m = NULL;
        return fail(err, errlen, r, "cannot start the flash model's state or GC: %s",
                    strerror(-r));
    }
    return 0;
}

/* The checks of a whole file system before anything mounts it. */
static int check_fs(const struct dev_opts *o, struct media *m, char *err, size_t errlen)
{
    int r = check_is_image(o->image, m, err, errlen);
    return r ? r : check_replay(o, m, err, errlen);
}

/* The members' images, labelled as one array in this order (each named if
 * it is not), each modelled as flash when asked, striped into one media. */
static int open_members(const struct dev_opts *o, struct media **mem, char *err,
                        size_t errlen)
{
    unsigned n = o->nmembers;
    if (n > MEDIA_ARRAY_MAX)
        return fail(err, errlen, -EINVAL, "an array has at most %u members", MEDIA_ARRAY_MAX);
    if (o->flash && o->flash->members > 1)
        return fail(err, errlen, -EINVAL, "--flash-members splits one image into models; "
                    "an array of member images has one model per member");
    for (unsigned i = 0; i < n; i++) {
        int r = open_image(o, o->members[i], &mem[i], err, errlen);
        if (r)
            return r;
    }
    char why[PATH_MAX + 128];
    int r = media_array_check(mem, o->members, n, why, sizeof(why));
    if (r)
        return fail(err, errlen, r, "array %s: %s", o->image, why);
    for (unsigned i = 0; o->flash && i < n; i++) {
        r = model_flash(o, o->members[i], &mem[i], err, errlen);
        if (r)
            return r;
    }
    return 0;
}

static int open_array(const struct dev_opts *o, struct media **out, char *err, size_t errlen)
{
    struct media *mem[MEDIA_ARRAY_MAX] = { 0 };
    int r = open_members(o, mem, err, errlen);
    if (!r && (r = media_array_open(mem, o->nmembers, out)) != 0)
        fail(err, errlen, r, "array %s: %s", o->image, strerror(-r));
    if (r) {
        for (unsigned i = 0; i < MEDIA_ARRAY_MAX; i++)
            media_close(mem[i]);
        return r;
    }
    r = check_fs(o, *out, err, errlen);
    if (r)
        media_close(*out);
    return r;
}

/* The image's media, checked (private, an image, replayed when read-only)
 * before anything mounts it, and modelled as flash when asked; or the
 * array of member images (o->members). */
static int open_media(const struct dev_opts *o, struct media **out, char *err, size_t errlen)
{
    if (o->nmembers)
        return open_array(o, out, err, errlen);
    struct stat st;
    if (stat(o->image, &st) && errno == ENOENT && o->create_size && !o->read_only) {
        int r = create_image(o->image, o->create_size, err, errlen);
        if (r)
            return r;
    }
    struct media *m;
    int r = open_image(o, o->image, &m, err, errlen);
    if (r)
        return r;
    r = check_fs(o, m, err, errlen);
    if (r) {
        media_close(m);
        return r;
    }
    *out = m;
    return o->flash ? model_flash(o, o->image, out, err, errlen) : 0;
}

/* The flash media of m: m itself, or member k of an array (NULL past the
 * last, or where it is not flash). */
static struct media *flash_unit(struct media *m, unsigned k)
{
    unsigned n = media_array_members(m);
    struct media *u = n ? media_array_member(m, k) : k == 0 ? m : NULL;
    return flash_media_members(u) ? u : NULL;
}

static int open_fs(const struct dev_opts *o, struct sfs **fs, struct media **model,
                   char *err, size_t errlen)
{
    struct media *m;
    int r = open_media(o, &m, err, errlen);
    if (r)
        return r;
    /* defer_writes: see finish_mount */
    struct sfs_mount_opts mo = { .defer_writes = !o->read_only, .read_only = o->read_only };
    cisc_corrupt_clear();
    *model = flash_unit(m, 0) ? m : NULL;   /* owned by the mount */
    r = sfs_mount(m, &mo, fs);
    if (r) {
        media_close(m);
        if (r == -EUCLEAN)
            return fail(err, errlen, r, "image %s is corrupt: %s (run cisc fsck)", o->image,
                        corrupt_msg(o));
        return fail(err, errlen, r, "cannot mount image %s: %s", o->image, strerror(-r));
    }
    return 0;
}

/* What the start reads of the image beyond the mount (the program
 * store) is checked while the mount still writes nothing: an image the
 * device refuses is left exactly as it was. Then the mount's writes. */
static int finish_mount(struct device *d, const struct dev_opts *o, char *err, size_t errlen)
{
    cisc_corrupt_clear();
    int r = progs_check(d->fs, err, errlen);
    if (r == -EUCLEAN)
        return fail(err, errlen, r, "image %s is corrupt: %s (run cisc fsck)", d->image,
                    corrupt_msg(o));
    if (!r && (r = sfs_mount_finish(d->fs)) != 0)
        fail(err, errlen, r, "cannot mount image %s: %s", d->image, strerror(-r));
    return r;
}

static int handle_ctl(void *arg, struct ctl_req *req);

/* The program registry, with the programs stored in the image (device
 * log: stderr). */
static int open_progs(struct device *d, const struct dev_opts *o, char *err, size_t errlen)
{
    struct progs_config pc = { .trace = o->trace, .read_only = o->read_only };
    if (o->progs)
        pc.lim = *o->progs;
    return progs_open(d->fs, &pc, &d->progs, err, errlen);
}
static void close_session(void *arg, void *session);
static int slow_start(struct device *d);
static void slow_stop(struct device *d);

static int start_control(struct device *d, const char *path, char *err, size_t errlen)
{
    int r = slow_start(d);
    if (!r && (r = ctl_create(path, NULL, handle_ctl, d, &d->ctl)))
        slow_stop(d);
    if (!r)
        ctl_set_close_hook(d->ctl, close_session);
    /* Connecting needs write permission on the socket. A device run by
     * root serves every user (like its allow_other mount): each request
     * acts with the caller's own credentials from SO_PEERCRED. */
    if (!r && chmod(path, geteuid() == 0 ? 0666 : 0600))
        r = -errno;
    if (r == -EADDRINUSE)
        return fail(err, errlen, r, "control socket %s belongs to a running device", path);
    if (r)
        return fail(err, errlen, r, "cannot create control socket %s: %s", path, strerror(-r));
    return 0;
}

static void free_device(struct device *d)
{
    pthread_mutex_destroy(&d->hook_lock);
    free(d->image);
    free(d->mountpoint);
    free(d->recovery);
    free(d);
}

/* A read-only start refuses an image with unfinished logged ops:
 * finishing them writes. */
static int check_oplog(struct device *d, char *err, size_t errlen)
{
    int n = fop_oplog_pending(d->fs);
    if (n > 0)
        return fail(err, errlen, -EROFS,
                    "image %s has %d unfinished fused ops in its operational log, which "
                    "writes to finish: start it read-write once, or read-only with --replay",
                    d->image, n);
    return n < 0 ? fail(err, errlen, n, "cannot read the operational log: %s", strerror(-n))
                 : 0;
}

/* Finishes the ops of the operational log and keeps the report for the
 * log and the status (read-only: refuses them, check_oplog). */
static int recover(struct device *d, const struct dev_opts *o, char *err, size_t errlen)
{
    if (o->read_only)
        return check_oplog(d, err, errlen);
    FILE *f = open_memstream(&d->recovery, &d->recovery_len);
    if (!f)
        return fail(err, errlen, -ENOMEM, "out of memory");
    int r = fop_recover(d->eng, f);
    fclose(f);
    if (r < 0)
        return fail(err, errlen, r, "cannot read the operational log: %s", strerror(-r));
    return 0;
}

/* --replay: the device started read-write without clients, which replays
 * the journal and finishes the logged ops, then stopped cleanly. */
static int replay_first(const struct dev_opts *o, char *err, size_t errlen)
{
    struct dev_opts rw = *o;
    rw.read_only = rw.replay = false;
    rw.control_path = NULL;
    rw.create_size = 0;
    struct device *d;
    int r = dev_start(&rw, &d, err, errlen);
    if (!r && (r = dev_stop(d)) != 0)
        fail(err, errlen, r, "cannot replay image %s: %s", o->image, strerror(-r));
    return r;
}

int dev_start(const struct dev_opts *o, struct device **out, char *err, size_t errlen)
{
    if (o->read_only && o->replay) {
        int r = replay_first(o, err, errlen);
        if (r)
            return r;
    }
    struct device *d = calloc(1, sizeof(*d));
    if (!d)
        return fail(err, errlen, -ENOMEM, "out of memory");
    pthread_mutex_init(&d->hook_lock, NULL);
    d->cores = o->cores ? o->cores : DEV_DEFAULT_CORES;
    d->sched = o->sched ? o->sched : "fifo";
    d->image = strdup(o->image);
    d->mountpoint = strdup(o->mountpoint ? o->mountpoint : "-");
    d->started_ns = now_ns();
    d->read_only = o->read_only;
    struct eng_config ec = { .cores = d->cores, .sched = d->sched, .trace = o->trace,
                             .direct = !o->queue_only, .tx = o->tx, .dev_ram = o->dev_ram,
                             .tx_log_max = o->tx_log_max, .tx_log_entry = o->tx_log_entry,
                             .tenant_pid = o->tenant_pid, .max_queues = o->max_queues,
                             .op_time_ms = o->op_time_limit_ms, .read_only = o->read_only };
    struct dm_model dm = o->model ? *o->model : (struct dm_model){ DM_DEFAULT_LINK_NS, 1.0 };
    if (!sched_policy_find(d->sched) || d->cores > SCHED_MAX_CORES || dm_configure(&dm) ||
        o->pollers > QP_MAX_POLLERS) {
        int bad = fail(err, errlen, -EINVAL,
                       "bad device model: cores %u (1..%u), sched '%s' (%s), link latency "
                       "%llu ns (0..%u), core speed %g (1..%g), pollers %u (1..%u)",
                       d->cores, SCHED_MAX_CORES, d->sched, sched_policy_names,
                       (unsigned long long)dm.link_latency_ns, DM_LINK_MAX_NS, dm.core_speed,
                       DM_CORE_SPEED_MAX, o->pollers, QP_MAX_POLLERS);
        free_device(d);     /* after the message, which reads d */
        return bad;
    }
    struct qp_config qc = { o->pollers, o->poll_us < 0 ? QP_DEFAULT_POLL_US : (unsigned)o->poll_us };
    int r = open_fs(o, &d->fs, &d->flash, err, errlen);
    d->media_io = media_io_word(o);   /* the files exist now */
    if (!r)
        r = finish_mount(d, o, err, errlen);
    if (!r)
        r = open_progs(d, o, err, errlen);
    ec.progs = d->progs;
    if (!r && (r = eng_create(d->fs, &ec, &d->eng)))
        fail(err, errlen, r, "cannot start the engine: %s", strerror(-r));
    if (!r)
        r = recover(d, o, err, errlen);   /* before any client is served */
    if (!r && (r = qp_service_create(d->eng, &qc, &d->qps)))
        fail(err, errlen, r, "cannot start the queue pollers: %s", strerror(-r));
    if (!r && o->control_path)
        r = start_control(d, o->control_path, err, errlen);
    if (r) {
        qp_service_destroy(d->qps);
        eng_destroy(d->eng);
        progs_close(d->progs);
        if (d->fs)
            sfs_unmount(d->fs);
        free_device(d);
        return r;
    }
    *out = d;
    return 0;
}

void dev_log_notes(struct device *d)
{
    progs_log_broken(d->progs);
    if (d->recovery_len)
        fprintf(stderr, "%s", d->recovery);
}

struct engine *dev_engine(struct device *d)
{
    return d->eng;
}

void dev_set_stop_hook(struct device *d, dev_stop_fn hook, void *arg)
{
    pthread_mutex_lock(&d->hook_lock);
    d->stop_hook = hook;
    d->stop_arg = arg;
    if (hook && d->stop_requested)   /* asked to stop before the front end was up */
        hook(arg, false);
    pthread_mutex_unlock(&d->hook_lock);
}

int dev_stop(struct device *d)
{
    pthread_mutex_lock(&d->hook_lock);
    d->stopping = true;   /* the control thread stops reading the engine */
    pthread_mutex_unlock(&d->hook_lock);
    ctl_quiesce(d->ctl);  /* no request or session change after this */
    eng_cancel(d->eng);   /* fused ops still running stop: the waits below are short */
    slow_stop(d);         /* no control job in progress */
    qp_service_destroy(d->qps);
    eng_destroy(d->eng);
    progs_close(d->progs);
    int r = sfs_unmount(d->fs);
    ctl_destroy(d->ctl, r);
    free_device(d);
    return r;
}

/* ---- status ----------------------------------------------------------- */

struct out {
    char *buf;
    size_t size, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    if (o->len + 1 >= o->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len = o->len + (size_t)n < o->size ? o->len + (size_t)n : o->size - 1;
}

static void status_ops(struct device *d, struct out *o)
{
    for (unsigned op = 0; op < ENG_OP_COUNT; op++) {
        struct stats_summary s;
        stats_summary(eng_stats(d->eng), op, &s);
        if (!s.count)
            continue;
        put(o, "op %s count %llu errors %llu bytes %llu mean_ns %llu p50_ns %llu p99_ns %llu "
               "max_ns %llu\n", eng_op_name(op), (unsigned long long)s.count,
            (unsigned long long)s.errors, (unsigned long long)s.bytes,
            (unsigned long long)(s.total_ns / s.count), (unsigned long long)s.p50_ns,
            (unsigned long long)s.p99_ns, (unsigned long long)s.max_ns);
    }
}

/* The control socket's connection counters (the control thread's: status
 * requests run there). */
static void status_ctl(struct device *d, struct out *o)
{
    struct ctl_stats cs;
    if (!d->ctl)
        return;
    ctl_stats_get(d->ctl, &cs);
    put(o, "ctl conns %u accepted %llu refused %llu idle_closed %llu slow_closed %llu\n",
        cs.conns, (unsigned long long)cs.accepted, (unsigned long long)cs.refused,
        (unsigned long long)cs.idle_closed, (unsigned long long)cs.slow_closed);
}

static void status_progs(struct device *d, struct out *o)
{
    uint32_t n, broken;
    uint64_t insns;
    struct progs_limits l;
    progs_totals(d->progs, &n, &broken, &insns);
    progs_limits_get(d->progs, &l);
    put(o, "progs count %u broken %u insns %llu max_progs %u max_insns %llu budget %llu "
           "per_user_progs %u per_user_bytes %llu\n", n, broken, (unsigned long long)insns,
        l.max_progs, (unsigned long long)l.max_insns, (unsigned long long)l.budget,
        l.max_progs_user, (unsigned long long)l.max_bytes_user);
}

#define STATUS_TENANTS 64u   /* the busiest this many (the report has a size limit) */

static int by_core_desc(const void *a, const void *b)
{
    const struct sched_tenant_stats *x = a, *y = b;
    return x->core_ns < y->core_ns ? 1 : x->core_ns > y->core_ns ? -1 : 0;
}

/* One line per tenant, most device-core time first. */
static void status_tenants(struct device *d, struct out *o)
{
    struct sched_tenant_stats *t = calloc(STATUS_TENANTS * 16, sizeof(*t));
    if (!t)
        return;
    unsigned n = eng_tenant_stats(d->eng, t, STATUS_TENANTS * 16);
    n = n < STATUS_TENANTS * 16 ? n : STATUS_TENANTS * 16;
    qsort(t, n, sizeof(*t), by_core_desc);
    for (unsigned i = 0; i < n && i < STATUS_TENANTS; i++)
        put(o, "tenant %u weight %u queues %u vt_ns %llu core_ns %llu share %.3f mem %llu "
               "mem_peak %llu waiting %llu running %llu done %llu throttled_ns %llu "
               "overtaken %llu terminated %llu preempted %llu backlog_ns %llu\n",
            t[i].id, t[i].weight, t[i].queues, (unsigned long long)t[i].vt,
            (unsigned long long)t[i].core_ns, t[i].share, (unsigned long long)t[i].mem_use,
            (unsigned long long)t[i].mem_peak, (unsigned long long)t[i].queued,
            (unsigned long long)t[i].running, (unsigned long long)t[i].done,
            (unsigned long long)t[i].throttled_ns, (unsigned long long)t[i].overtaken,
            (unsigned long long)t[i].terminated, (unsigned long long)t[i].preempted,
            (unsigned long long)t[i].backlog_ns);
    free(t);
}

/* One flash model (an array member): its geometry, write amplification,
 * GC and wear, and how busy each die and channel has been. */
static void status_flash_member(struct device *d, struct out *o, struct media *u,
                                unsigned i, unsigned label)
{
    struct flash *f = flash_media_member(u, i);
    const struct flash_geom *g = flash_geom(f);
    struct flash_stats st;
    flash_stats(f, &st);
    put(o, "flash member %u channels %u dies %u blocks %u pages %u op_permille %u "
           "partitions %u ftl %s gc %s read_ns %llu prog_ns %llu erase_ns %llu xfer_ns %llu "
           "ftl_ns %llu state %s\n", label,
        g->channels, g->dies_per_channel, g->blocks_per_die, g->pages_per_block,
        g->op_permille, g->partitions, g->ftl == FLASH_FTL_CORES ? "cores" : "locks",
        g->gc_policy == FLASH_GC_GREEDY ? "greedy" : "cost-benefit",
        (unsigned long long)g->t_read_ns, (unsigned long long)g->t_prog_ns,
        (unsigned long long)g->t_erase_ns, (unsigned long long)g->t_xfer_ns,
        (unsigned long long)g->t_ftl_ns,
        flash_media_origin(u) == FLASH_STATE_RESTORED ? "restored" : "rebuilt");
    put(o, "flash_ftl member %u waf %.3f host_reads %llu host_writes %llu trims %llu "
           "gc_runs %llu gc_fg %llu gc_bg %llu free_blocks %llu mapped %llu pages_moved %llu "
           "erase_min %u "
           "erase_avg %.2f erase_max %u ops_owned %llu ops_locked %llu ops_foreign %llu\n",
        label, st.waf,
        (unsigned long long)st.host_reads, (unsigned long long)st.host_writes,
        (unsigned long long)st.trims, (unsigned long long)st.gc_runs,
        (unsigned long long)st.gc_fg_runs, (unsigned long long)st.gc_bg_runs,
        (unsigned long long)st.free_blocks, (unsigned long long)st.mapped,
        (unsigned long long)st.pages_moved, st.erase_min, st.erase_avg, st.erase_max,
        (unsigned long long)st.ftl_owned, (unsigned long long)st.ftl_locked,
        (unsigned long long)st.ftl_foreign);
    double span = (double)(st.now_ns > d->started_ns ? st.now_ns - d->started_ns : 1);
    for (uint32_t c = 0; c < g->channels; c++) {
        put(o, "flash_chan member %u channel %u util %.3f dies", label, c,
            (double)flash_chan_busy_ns(f, c) / span);
        for (uint32_t k = 0; k < g->dies_per_channel; k++)
            put(o, " %.3f", (double)flash_die_busy_ns(f, c * g->dies_per_channel + k) / span);
        put(o, "\n");
    }
}

/* The members (of the one image's models, or one per array member), then
 * the FUSE replies held for the model (flash_media.h 8). */
static void status_flash(struct device *d, struct out *o)
{
    unsigned label = 0;
    struct media *u;
    for (unsigned k = 0; d->flash && (k == 0 || media_array_member(d->flash, k)); k++)
        for (unsigned i = 0; (u = flash_unit(d->flash, k)) && i < flash_media_members(u); i++)
            status_flash_member(d, o, u, i, label++);
    if (!d->flash)
        return;
    struct flash_reply_stats rs;
    flash_media_reply_stats(&rs);
    put(o, "flash_replies stamped %llu held %llu held_ns %llu model_max_ns %llu\n",
        (unsigned long long)rs.stamped, (unsigned long long)rs.held,
        (unsigned long long)rs.held_ns, (unsigned long long)rs.model_max_ns);
}

size_t dev_status_text(struct device *d, char *buf, size_t size)
{
    struct out o = { buf, size, 0 };
    struct sched_stats ss;
    if (size)
        buf[0] = '\0';
    eng_sched_stats(d->eng, &ss);
    put(&o, "device pid %d uptime_s %llu\n", (int)getpid(),
        (unsigned long long)((now_ns() - d->started_ns) / 1000000000u));
    put(&o, "image %s\nmountpoint %s\n", d->image, d->mountpoint);
    put(&o, "access %s\n", d->read_only ? "read-only" : "read-write");
    put(&o, "media_io %s\n", d->media_io);
    struct dm_model dm = dm_get();
    struct qp_stats qs;
    qp_service_stats(d->qps, &qs);
    put(&o, "model cores %u sched %s dispatch %s link_latency_ns %llu core_speed %.2f "
            "tenant_by %s\n",
        ss.cores, ss.policy, ss.direct ? "direct" : "queue",
        (unsigned long long)dm.link_latency_ns, dm.core_speed,
        eng_tenant_is_pid(d->eng) ? "pid" : "uid");
    put(&o, "qp sessions %llu queues %llu handles %llu pollers %u poll_us %u fetched %llu "
            "refused %llu completed %llu invalidated %llu dead %llu sleeps %llu contended %llu "
            "done_rings %llu\n",
        (unsigned long long)qs.sessions, (unsigned long long)qs.queues,
        (unsigned long long)qs.handles, qs.pollers, qs.poll_us,
        (unsigned long long)qs.fetched, (unsigned long long)qs.refused,
        (unsigned long long)qs.completed, (unsigned long long)qs.invalidated,
        (unsigned long long)qs.dead, (unsigned long long)qs.sleeps,
        (unsigned long long)qs.contended, (unsigned long long)qs.done_rings);
    put(&o, "queue depth %llu max_depth %llu busy_cores %u submitted %llu completed %llu "
            "direct %llu\n", (unsigned long long)ss.depth, (unsigned long long)ss.max_depth,
        ss.busy, (unsigned long long)ss.submitted, (unsigned long long)ss.completed,
        (unsigned long long)ss.direct_runs);
    put(&o, "preempt parked %llu blocked %llu threads %u\n",
        (unsigned long long)ss.preemptions, (unsigned long long)ss.blocks, ss.threads);
    for (unsigned i = 0; i < ss.cores; i++)
        put(&o, "core %u executed %llu busy_ms %llu\n", i,
            (unsigned long long)ss.core[i].executed,
            (unsigned long long)(ss.core[i].busy_ns / 1000000u));
    put(&o, "tx mode %s\n", eng_tx_name(eng_tx_mode(d->eng)));
    uint64_t lmax, lentry, lused;
    fop_oplog_space(d->eng, &lmax, &lentry, &lused);
    put(&o, "tx log max %llu entry %llu used %llu\n", (unsigned long long)lmax,
        (unsigned long long)lentry, (unsigned long long)lused);
    put(&o, "tx log adopted %llu\n", (unsigned long long)fop_oplog_adopted(d->eng));
    if (d->recovery_len)   /* one line per op recovered at start-up */
        put(&o, "%s", d->recovery);
    status_tenants(d, &o);
    put(&o, "handles %llu\n", (unsigned long long)eng_open_handles(d->eng));
    /* Operations that met corrupt metadata (run cisc fsck when not 0). */
    put(&o, "integrity corrupt %llu\n",
        (unsigned long long)stats_corrupt_count(eng_stats(d->eng)));
    struct fop_limits fl;   /* cisc_limits() reads this line */
    eng_fop_limits(d->eng, &fl);
    put(&o, "limits step_bytes %llu op_bytes %llu\n", (unsigned long long)fl.step_bytes,
        (unsigned long long)fl.op_bytes);
    status_ctl(d, &o);
    status_progs(d, &o);
    status_ops(d, &o);
    status_flash(d, &o);
    return o.len;
}

/* A SHUTDOWN: 0 when the device stops, or the front end's refusal
 * (-EBUSY: a safe stop of a mount in use), which changes nothing. */
static int request_stop(struct device *d, bool safe)
{
    pthread_mutex_lock(&d->hook_lock);
    int r = d->stop_hook ? d->stop_hook(d->stop_arg, safe) : 0;
    if (!r)
        d->stop_requested = true;
    pthread_mutex_unlock(&d->hook_lock);
    if (!r)
        eng_cancel(d->eng);   /* running fused ops stop at their next block */
    return r;
}

static int reply_status(struct device *d, struct ctl_req *req)
{
    char *text = malloc(CTL_MAX_PAYLOAD - 4);
    int r = text ? 0 : -ENOMEM;
    size_t n = 0;
    pthread_mutex_lock(&d->hook_lock);
    if (!r && d->stopping)
        r = -ESHUTDOWN;
    if (!r)
        n = dev_status_text(d, text, CTL_MAX_PAYLOAD - 4);
    pthread_mutex_unlock(&d->hook_lock);
    ctl_reply(req, r, text, n);
    free(text);
    return 0;
}

/* ---- libcisc sessions and queue pairs ------------------------------------ */

static void slow_run(struct device *d, struct slow_job *j)
{
    if (j->end) {
        progs_owner_gone(d->progs, j->session);   /* its bpf streams */
        qp_session_destroy(j->session);
    } else {
        ctl_answer(d->ctl, &j->later, qp_destroy(j->session, j->qp), NULL, 0);
    }
    free(j);
}

static void *slow_main(void *arg)
{
    struct device *d = arg;
    struct slow *w = &d->slow;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->lock);
        struct slow_job *j = w->head;
        if (j && !(w->head = j->next))
            w->tail = &w->head;
        pthread_mutex_unlock(&w->lock);
        if (!j)
            return NULL;   /* stopped, and all done */
        slow_run(d, j);
    }
}

static int slow_start(struct device *d)
{
    struct slow *w = &d->slow;
    w->tail = &w->head;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cv, NULL);
    int r = thread_start_quiet(&w->thread, slow_main, d);
    w->started = r == 0;
    if (r) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->lock);
    }
    return r;
}

/* Runs the jobs left, then stops the thread. */
static void slow_stop(struct device *d)
{
    struct slow *w = &d->slow;
    if (!w->started)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->lock);
    w->started = false;
}

/* Queues a job for the slow thread. */
static void slow_push(struct device *d, struct slow_job *j)
{
    struct slow *w = &d->slow;
    pthread_mutex_lock(&w->lock);
    *w->tail = j;
    w->tail = &j->next;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->lock);
}

static void close_session(void *arg, void *session)
{
    struct device *d = arg;
    struct slow_job *j = calloc(1, sizeof(*j));
    if (!j) {   /* no memory for the job: wait here */
        progs_owner_gone(d->progs, session);
        qp_session_destroy(session);
        return;
    }
    *j = (struct slow_job){ .session = session, .end = true };
    slow_push(d, j);
}

/* The connection's session, opened on first use with the kernel's
 * credentials for the peer. */
static int get_session(struct device *d, struct ctl_req *req, struct qp_session **out)
{
    if (*req->session) {
        *out = *req->session;
        return 0;
    }
    struct eng_cred cred = { .uid = req->peer->uid, .gid = req->peer->gid,
                             .pid = req->peer->pid };
    int n = ctl_peer_groups(req, cred.groups, ENG_GROUPS_MAX);
    cred.ngroups = n < 0 ? 0 : n;
    int r = qp_session_create(d->qps, &cred, out);
    if (!r)
        *req->session = *out;
    return r;
}

static int reply_session(struct device *d, struct ctl_req *req)
{
    struct qp_session *s;
    int r = get_session(d, req, &s);
    uint8_t p[12] = { 0 };
    if (!r) {
        const struct eng_cred *c = qp_session_cred(s);
        le32_put(p, c->uid);
        le32_put(p + 4, c->gid);
        le32_put(p + 8, (uint32_t)c->pid);
    }
    return ctl_reply(req, r, p, r ? 0 : sizeof(p)), 0;
}

static int reply_qp_create(struct device *d, struct ctl_req *req)
{
    struct qp_session *s;
    int r = req->len < 16 ? -EINVAL : get_session(d, req, &s);
    struct qp_geom g = { 0 };
    int fd = -1;
    uint32_t id = 0;
    if (!r) {
        g.sq_entries = le32_get(req->payload);
        g.cq_entries = le32_get(req->payload + 4);
        g.arena_size = le64_get(req->payload + 8);
        r = qp_create(s, &g, &fd, &id);
    }
    uint8_t p[4];
    le32_put(p, id);
    ctl_reply_fd(req, r, p, r ? 0 : sizeof(p), fd);
    if (fd >= 0)
        close(fd);
    return 0;
}

/* Answered from the slow thread: the queue's commands finish first. */
static int reply_qp_destroy(struct device *d, struct ctl_req *req)
{
    if (req->len < 4 || !*req->session)
        return ctl_reply(req, -ENOENT, NULL, 0), 0;
    struct slow_job *j = calloc(1, sizeof(*j));
    if (!j)
        return ctl_reply(req, -ENOMEM, NULL, 0), 0;
    *j = (struct slow_job){ .session = *req->session, .qp = le32_get(req->payload) };
    ctl_later(req, &j->later);
    slow_push(d, j);
    return 0;
}

/* CTL_PROG_*: device/progs/progs_ctl.c; streams belong to the session. */
static int reply_progs(struct device *d, struct ctl_req *req)
{
    struct qp_session *s = NULL;
    int r = req->type == CTL_PROG_STREAM ? get_session(d, req, &s) : 0;
    if (r)
        return ctl_reply(req, r, NULL, 0), 0;
    progs_ctl_handle(d->progs, req, s);
    return 0;
}

/* Encryption keys: kept by the connection's session, never in commands. */
static int reply_key(struct device *d, struct ctl_req *req)
{
    struct qp_session *s;
    uint8_t id[4] = { 0 };
    int r = get_session(d, req, &s);
    if (!r && req->type == CTL_KEY_ADD)
        r = ckey_ctl_add(qp_session_keys(s), req->payload, req->len, id);
    else if (!r)
        r = ckey_ctl_remove(qp_session_keys(s), req->payload, req->len);
    return ctl_reply(req, r, id, !r && req->type == CTL_KEY_ADD ? sizeof(id) : 0), 0;
}

/* Recovery records of the peer's uid (device/engine/fused/oplog.h). */
static int reply_recovery(struct device *d, struct ctl_req *req)
{
    if (req->type == CTL_RECOVERY_ACK) {
        char name[OPLOG_NAME_MAX];
        int r = req->len == 0 || req->len >= sizeof(name) ? -EINVAL : 0;
        if (!r && d->read_only)
            r = -EROFS;   /* removing the record writes (and StorageFS would refuse) */
        if (!r) {
            memcpy(name, req->payload, req->len);
            name[req->len] = '\0';
            r = fop_recovery_ack(d->eng, req->peer->uid, name);
        }
        return ctl_reply(req, r, NULL, 0), 0;
    }
    char *text = malloc(CTL_MAX_PAYLOAD - 4);
    int n = text ? fop_recovery_list(d->eng, req->peer->uid, text, CTL_MAX_PAYLOAD - 4) : -ENOMEM;
    ctl_reply(req, n < 0 ? n : 0, text, n < 0 ? 0 : (size_t)n);
    free(text);
    return 0;
}

/* A tenant's scheduling weight: root only. */
static int reply_tenant(struct device *d, struct ctl_req *req)
{
    int r = req->peer->uid != 0 ? -EPERM : req->len < 8 ? -EINVAL : 0;
    if (!r)
        r = eng_tenant_weight(d->eng, le32_get(req->payload), le32_get(req->payload + 4));
    return ctl_reply(req, r, NULL, 0), 0;
}

/* SHUTDOWN: the device's owner or root only; answered when the device has
 * stopped (CTL_DEFER), or at once when it refuses. */
static int reply_shutdown(struct device *d, struct ctl_req *req)
{
    bool safe = req->len >= 4 && (le32_get(req->payload) & CTL_SHUTDOWN_SAFE);
    int r = req->peer->uid != 0 && req->peer->uid != geteuid() ? -EPERM : 0;
    if (!r)
        r = request_stop(d, safe);
    return r ? (ctl_reply(req, r, NULL, 0), 0) : CTL_DEFER;
}

/* The scheduler's tenants and queues for `cisc top`: anyone may look, as
 * at `cisc status`. */
static int reply_sched_stats(struct device *d, struct ctl_req *req)
{
    char *text = malloc(CTL_MAX_PAYLOAD - 4);
    ssize_t n = text ? eng_sched_report(d->eng, text, CTL_MAX_PAYLOAD - 4) : -ENOMEM;
    ctl_reply(req, n < 0 ? (int)n : 0, text, n < 0 ? 0 : (size_t)n);
    free(text);
    return 0;
}

static int handle_ctl(void *arg, struct ctl_req *req)
{
    struct device *d = arg;
    if (req->type >= CTL_PROG_LOAD && req->type <= CTL_PROG_STREAM)
        return reply_progs(d, req);
    switch (req->type) {
    case CTL_KEY_ADD:
    case CTL_KEY_REMOVE:
        return reply_key(d, req);
    case CTL_SESSION:
        return reply_session(d, req);
    case CTL_TENANT_SET:
        return reply_tenant(d, req);
    case CTL_SCHED_STATS:
        return reply_sched_stats(d, req);
    case CTL_QP_CREATE:
        return reply_qp_create(d, req);
    case CTL_QP_DESTROY:
        return reply_qp_destroy(d, req);
    case CTL_PING: {
        uint8_t p[8];
        le32_put(p, (uint32_t)getpid());
        le32_put(p + 4, (uint32_t)geteuid());
        return ctl_reply(req, 0, p, sizeof(p)), 0;
    }
    case CTL_STATUS:
        return reply_status(d, req);
    case CTL_RECOVERY_LIST:
    case CTL_RECOVERY_ACK:
        return reply_recovery(d, req);
    case CTL_SHUTDOWN:
        return reply_shutdown(d, req);
    default:
        return ctl_reply(req, -EOPNOTSUPP, NULL, 0), 0;
    }
}
