/* fusefs/fusefs.c - the FUSE session: options, mount, loop, unmount. */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUSEFS_THREADS 8u

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return r;
}

/* Appends s to buf with ',' and '\' escaped, as libfuse's -o parser wants. */
static void put_escaped(char *buf, size_t size, size_t *len, const char *s)
{
    for (; *s && *len + 2 < size; s++) {
        if (*s == ',' || *s == '\\')
            buf[(*len)++] = '\\';
        buf[(*len)++] = *s;
    }
    buf[*len] = '\0';
}

static void build_opts(const struct fusefs_opts *o, char *buf, size_t size)
{
    size_t len = 0;
    int n = snprintf(buf, size,
                     "default_permissions,subtype=ciscfs,max_read=%u,auto_unmount%s,fsname=",
                     FUSEFS_MAX_READ, o->allow_other ? ",allow_other" : "");
    len = n > 0 && (size_t)n < size ? (size_t)n : 0;
    put_escaped(buf, size, &len, o->fsname ? o->fsname : "ciscfs");
    if (o->extra && *o->extra && len + strlen(o->extra) + 2 < size) {
        strcat(buf, ",");
        strcat(buf, o->extra);
    }
}

/* The "major:minor" of the mount at path, from /proc/self/mountinfo (no
 * stat(): the session is not serving requests yet). Last match wins. */
static bool mount_devno(const char *path, char *devno, size_t size)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (f && getline(&line, &cap, f) > 0) {
        char mp[4096], dn[64];
        if (sscanf(line, "%*s %*s %63s %*s %4095s", dn, mp) == 2 && !strcmp(mp, path)) {
            snprintf(devno, size, "%s", dn);
            found = true;
        }
    }
    free(line);
    if (f)
        fclose(f);
    return found;
}

void fusefs_raise_readahead(struct fusefs *f)
{
    if (__atomic_exchange_n(&f->ra_done, true, __ATOMIC_RELAXED))
        return;
    const char *mnt = f->mountpoint;
    char devno[64], path[128];
    if (!mount_devno(mnt, devno, sizeof(devno)))
        return;
    snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", devno);
    FILE *sysfs = fopen(path, "we");
    if (sysfs) {
        fprintf(sysfs, "%u\n", FUSEFS_MAX_IO / 1024);
        fclose(sysfs);
    }
}

int fusefs_mount(struct engine *eng, const struct fusefs_opts *o, struct fusefs **out,
                 char *err, size_t errlen)
{
    char opts[8192];
    build_opts(o, opts, sizeof(opts));
    char *argv[] = { "ciscfs", "-o", opts, NULL };
    struct fuse_args args = FUSE_ARGS_INIT(3, argv);
    struct fusefs *f = calloc(1, sizeof(*f));
    if (!f)
        return fail(err, errlen, -ENOMEM, "out of memory");
    f->eng = eng;
    f->tenant_pid = eng_tenant_is_pid(eng);
    f->writeback = o->writeback;
    f->mountpoint = strdup(o->mountpoint);
    pthread_mutex_init(&f->lock, NULL);
    if (fusefs_known_init(f) || fusefs_wback_init(f)) {
        fusefs_destroy(f);
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    f->se = fuse_session_new(&args, &fusefs_ops, sizeof(fusefs_ops), f);
    fuse_opt_free_args(&args);
    if (!f->se) {
        fusefs_destroy(f);
        return fail(err, errlen, -EINVAL, "cannot create the FUSE session (options: %s)", opts);
    }
    if (fuse_session_mount(f->se, o->mountpoint)) {
        fusefs_destroy(f);
        return fail(err, errlen, -EIO, "cannot mount on %s (is /dev/fuse usable?)",
                    o->mountpoint);
    }
    if (fusefs_killpriv_io(f)) {
        fusefs_destroy(f);
        return fail(err, errlen, -EIO, "cannot route the FUSE session's I/O");
    }
    fusefs_watch(f, true);   /* libcisc changes invalidate the kernel's caches */
    f->watching = true;
    *out = f;
    return 0;
}

/* libfuse's multi-threaded loop (the scheduler places its threads). */
static int libfuse_loop(struct fusefs *f)
{
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    int r = -ENOMEM;
    if (cfg) {
        fuse_loop_cfg_set_clone_fd(cfg, 1);
        fuse_loop_cfg_set_max_threads(cfg, FUSEFS_THREADS);
        fuse_loop_cfg_set_idle_threads(cfg, FUSEFS_THREADS);
        r = fuse_session_loop_mt(f->se, cfg);
        fuse_loop_cfg_destroy(cfg);
    }
    return r;
}

int fusefs_loop(struct fusefs *f)
{
    if (fuse_set_signal_handlers(f->se))
        return -EIO;
    struct fusefs_loop *l = NULL;
    int r = fusefs_loop_create(f, &l);
    if (r && r != -EOPNOTSUPP) {
        fuse_remove_signal_handlers(f->se);
        return r;
    }
    pthread_mutex_lock(&f->lock);
    f->loop_thread = pthread_self();
    f->looping = true;
    f->loop = l;
    bool exited = fuse_session_exited(f->se);
    pthread_mutex_unlock(&f->lock);
    r = exited ? 0 : l ? fusefs_loop_pinned(f, l) : libfuse_loop(f);
    pthread_mutex_lock(&f->lock);
    f->looping = false;
    f->loop = NULL;
    pthread_mutex_unlock(&f->lock);
    fusefs_loop_destroy(l);
    fuse_remove_signal_handlers(f->se);
    /* A signal ends the loop with its number; that is a clean stop. */
    return r > 0 ? 0 : r;
}

void fusefs_exit(struct fusefs *f)
{
    fuse_session_exit(f->se);
    pthread_mutex_lock(&f->lock);
    /* Wakes the loop thread out of its wait; libfuse's handler runs. */
    if (f->loop)
        fusefs_loop_stop(f->loop);
    else if (f->looping)
        pthread_kill(f->loop_thread, SIGTERM);
    pthread_mutex_unlock(&f->lock);
}

void fusefs_destroy(struct fusefs *f)
{
    if (!f)
        return;
    fusefs_delay_fini(f);   /* held replies go before the session */
    if (f->se) {
        /* Unmount first: an invalidation blocked in the kernel then fails
         * instead of waiting for requests nobody will answer. */
        fuse_session_unmount(f->se);
        if (f->watching)
            fusefs_watch(f, false);
        fuse_session_destroy(f->se);
    }
    fusefs_known_fini(f);
    fusefs_wback_fini(f);
    pthread_mutex_destroy(&f->lock);
    free(f->mountpoint);
    free(f);
}
