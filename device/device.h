/*
 * device/device.h - the device process's lifecycle: image -> StorageFS ->
 * engine (cores, scheduler) -> control socket, and back down.
 *
 * Front ends are clients of the engine that dev_engine() returns: the
 * FUSE mount (run by the caller), and libcisc's queue pairs (device/queue/,
 * run by the device itself: a control connection that asks for a session
 * gets one, and loses it, with its queues and handles, when it closes). The device does not know FUSE: a
 * front end registers a stop hook, which the control socket's SHUTDOWN
 * request calls; the front end then returns from its loop and the owner
 * calls dev_stop().
 *
 * States: (none) --dev_start--> RUNNING --stop hook--> STOPPING
 *         --dev_stop--> (gone; image checkpointed, unlocked, clean)
 *
 * Read-only (dev_opts.read_only): the image is opened read-only, StorageFS
 * mounted without replay and refusing every write, the engine refuses
 * every mutation with -EROFS (engine.h, invariant 6) and the program
 * registry every load and unload; nothing is ever written, not even the
 * mount count. An image whose journal holds committed transactions, or
 * whose operational log holds unfinished ops, would need writes to be
 * seen as it is: the start is refused unless dev_opts.replay, which
 * first runs the device read-write once, without clients, to replay and
 * recover, and stops it cleanly.
 *
 * Invariants:
 *   1. dev_start either returns a running device or leaves nothing behind
 *      (image unlocked, socket removed), with a message in `err`.
 *   2. dev_stop drains every command before unmounting StorageFS, and
 *      answers a waiting `cisc down` only after the unmount finished.
 *   3. The image is locked (media flock) for the device's whole life.
 */
#ifndef CISC_DEVICE_DEVICE_H
#define CISC_DEVICE_DEVICE_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {   /* also for the StorageFS header included here */
#endif

#include "device/engine/engine.h"
#include "device/media/flash.h"
#include "device/sched/model.h"
#include "device/progs/progs.h"
#include "device/queue/queue.h"

#define DEV_DEFAULT_CORES 4u
#define DEV_DEFAULT_SIZE  (1ull << 30)

/* How the device reads and writes its image files (dev_opts.media_io). */
enum dev_media_io {
    DEV_MEDIA_IO_AUTO,    /* mapped where the file lives in RAM (tmpfs, ramfs), else
                           * pread: a RAM file system has no media errors, which a
                           * mapping would turn into SIGBUS */
    DEV_MEDIA_IO_PREAD,   /* pread/pwrite per block run */
    DEV_MEDIA_IO_MMAP,    /* a shared mapping (MEDIA_MMAP, media_mmap.h) */
};

struct dev_opts {
    const char *image;        /* backing image path */
    uint64_t create_size;     /* create the image (sfs_mkfs) if missing; 0 = never */
    const char *mountpoint;   /* shown in status; may be NULL */
    const char *control_path; /* control socket; NULL = none */
    unsigned cores;           /* 0 = DEV_DEFAULT_CORES */
    const char *sched;        /* NULL = "fifo" (sched.h: fifo, rr, cfs, cfs-cpu, drf) */
    bool tenant_pid;          /* the scheduler's tenants are pids (default: uids) */
    unsigned max_queues;      /* libcisc queue pairs per tenant; 0 = no cap */
    uint64_t dev_ram;         /* device memory budget; 0 = 2 GiB */
    uint64_t op_time_limit_ms; /* fused ops stop after this much device time (-ETIME); 0 = the engine default (ENG_OP_TIME_MS_DEFAULT) */
    bool trace;               /* log every command (engine trace) */
    bool queue_only;          /* no direct dispatch: every command is handed over */
    const struct dm_model *model;  /* link latency, core speed; NULL = defaults */
    unsigned pollers;         /* queue-pair pollers; 0 = QP_DEFAULT_POLLERS */
    int poll_us;              /* pollers spin this long before sleeping; < 0 = default */
    const struct progs_limits *progs;  /* eBPF program limits; NULL = defaults */
    unsigned tx;              /* fused ops' default transaction mode: enum wire_tx
                                 (proto/wire.h); WIRE_TX_DEFAULT = macro */
    uint64_t tx_log_max;      /* autorec's log space; 0 = the engine's default */
    uint64_t tx_log_entry;    /* autorec's inline log entry; 0 = the engine's default */
    const struct flash_geom *flash;    /* NULL: the image file as it is; else the
                                        * NAND model over it (zero fields scaled) */
    const char *const *members;   /* nmembers > 0: the array's member images in
                                   * order (media.h "Arrays"); image is then only
                                   * the array's name, and flash models each member */
    unsigned nmembers;
    uint8_t media_io;         /* enum dev_media_io: how the image files are read */
    bool read_only;           /* change nothing: see "Read-only" above */
    bool verbose;             /* messages name where in our source a problem was found */
    bool replay;              /* read-only: replay the journal and finish logged
                                 ops first (one read-write start and stop) */
};

struct device;

/* Starts a device. On failure writes a one-line reason into err and
 * returns -errno (-EBUSY: the image is in use by another device). */
int dev_start(const struct dev_opts *o, struct device **out, char *err, size_t errlen);

/* Repeats into the device log what start-up found worth keeping there
 * (programs that are not run); for a daemon whose log starts late. */
void dev_log_notes(struct device *d);

/* The engine every front end submits to. */
struct engine *dev_engine(struct device *d);

/* A front end's stop hook, called from the control thread for a
 * SHUTDOWN request. safe (CTL_SHUTDOWN_SAFE, `cisc down` without --force):
 * while the front end is in use (the mount has an open file, a working
 * directory in it) change nothing and return -EBUSY. Otherwise make the
 * front end's loop return soon and return 0; the device then cancels the
 * running fused ops (eng_cancel: they stop at their next block). */
typedef int (*dev_stop_fn)(void *arg, bool safe);

/* Registers the stop hook. If a SHUTDOWN came before, the hook is called
 * at once (not safe: the stop was already granted). */
void dev_set_stop_hook(struct device *d, dev_stop_fn hook, void *arg);

/* Cancels the fused ops still running (eng_cancel: they fail with
 * -ECANCELED and roll back), drains and stops the engine, unmounts
 * StorageFS (commit, checkpoint), answers waiting SHUTDOWN requests,
 * removes the control socket and frees d. Returns 0 or the unmount's
 * -errno. */
int dev_stop(struct device *d);

/* Writes the status report (the CTL_STATUS text) into buf; returns its
 * length (truncated to size - 1). Call it on the control thread: the
 * report reads that thread's connection counters. */
size_t dev_status_text(struct device *d, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
