/*
 * fusefs/fusefs_int.h - shared by fusefs.c (session, mount, loop) and
 * fusefs_ops.c (one handler per FUSE operation). Not for other modules.
 */
#ifndef CISC_FUSEFS_INT_H
#define CISC_FUSEFS_INT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "fusefs/fusefs.h"

#define FUSEFS_KNOWN_STRIPES 64u
#define FUSEFS_KNOWN_BUCKETS 256u

struct known_stripe;

struct fusefs {
    struct engine *eng;
    struct known_stripe *known;   /* inodes the kernel holds (known.c) */
    bool watching;                /* registered with the engine (eng_set_watch) */
    struct fuse_session *se;
    char *mountpoint;
    pthread_t loop_thread;        /* the thread in fusefs_loop */
    bool looping;                 /* protected by lock */
    pthread_mutex_t lock;
    bool ra_done;                 /* fusefs_raise_readahead ran */
};

/* Lets the kernel read ahead FUSEFS_MAX_IO per request instead of its
 * 128 KiB default: writes /sys/class/bdi/MAJ:MIN/read_ahead_kb (root
 * only, best effort). INIT resets the value to what the kernel proposed,
 * so this runs once, on the first request after INIT. */
void fusefs_raise_readahead(struct fusefs *f);

extern const struct fuse_lowlevel_ops fusefs_ops;

/* known.c: the kernel's lookup references, counted, and the engine watch
 * (eng_set_watch) that invalidates the kernel's caches when another door
 * changes something the kernel may cache. */
int fusefs_known_init(struct fusefs *f);
void fusefs_known_fini(struct fusefs *f);
void fusefs_known_add(struct fusefs *f, uint64_t ino);
void fusefs_known_sub(struct fusefs *f, uint64_t ino, uint64_t n);
void fusefs_watch(struct fusefs *f, bool on);

#endif
