/*
 * bench/sfs_bench.c - StorageFS through its C API on an image file: a
 * create+stat+unlink storm and 1 MiB sequential writes and reads. Prints
 * numbers; asserts nothing. Usage:
 *   sfs_bench [--files N] [--mib M] [--threads T] [IMAGE]
 * IMAGE (default: a temporary file) is overwritten.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device/media/media.h"
#include "device/storagefs/storagefs.h"

struct opts {
    const char *image;
    int files, mib, threads;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, int r)
{
    fprintf(stderr, "sfs_bench: %s: %s\n", what, strerror(-r));
    return 1;
}

struct storm {
    struct sfs *fs;
    uint64_t dir;
    int first, n, err;
};

static void *storm_thread(void *arg)
{
    struct storm *s = arg;
    char name[32];
    struct sfs_attr a;
    for (int i = s->first; i < s->first + s->n && !s->err; i++) {
        snprintf(name, sizeof(name), "f%07d", i);
        if ((s->err = sfs_mknod(s->fs, NULL, s->dir, name, S_IFREG | 0644, 0, 0, 0, &a)))
            break;
    }
    for (int i = s->first; i < s->first + s->n && !s->err; i++) {
        snprintf(name, sizeof(name), "f%07d", i);
        s->err = sfs_lookup(s->fs, s->dir, name, &a);
    }
    for (int i = s->first; i < s->first + s->n && !s->err; i++) {
        snprintf(name, sizeof(name), "f%07d", i);
        s->err = sfs_unlink(s->fs, NULL, s->dir, name);
    }
    return NULL;
}

static int run_storm(struct sfs *fs, const struct opts *o)
{
    struct sfs_attr d;
    int r = sfs_mkdir(fs, NULL, SFS_ROOT_INO, "storm", 0755, 0, 0, &d);
    if (r)
        return fail("mkdir", r);
    struct storm st[64];
    pthread_t th[64];
    int per = o->files / o->threads;
    double t0 = now();
    for (int t = 0; t < o->threads; t++) {
        st[t] = (struct storm){fs, d.ino, t * per, per, 0};
        pthread_create(&th[t], NULL, storm_thread, &st[t]);
    }
    for (int t = 0; t < o->threads; t++) {
        pthread_join(th[t], NULL);
        if (st[t].err)
            return fail("storm", st[t].err);
    }
    double dt = now() - t0;
    int n = per * o->threads;
    printf("create+stat+unlink: %d files, %d thread(s): %.3f s, %.0f files/s (%.0f ops/s)\n",
           n, o->threads, dt, n / dt, 3 * n / dt);
    return 0;
}

static int run_seq(struct sfs *fs, const struct opts *o)
{
    size_t chunk = 1 << 20;
    char *buf = malloc(chunk);
    struct sfs_attr a;
    int r = sfs_mknod(fs, NULL, SFS_ROOT_INO, "seq", S_IFREG | 0644, 0, 0, 0, &a);
    if (!buf || r)
        return fail("create", r ? r : -ENOMEM);
    memset(buf, 'x', chunk);
    double t0 = now();
    for (int i = 0; i < o->mib; i++)
        if ((r = (int)sfs_write(fs, NULL, a.ino, (uint64_t)i * chunk, buf, chunk)) < 0)
            return fail("write", r);
    double t1 = now();
    if ((r = sfs_fsync(fs, a.ino, false)) != 0)
        return fail("fsync", r);
    double t2 = now();
    for (int i = 0; i < o->mib; i++)
        if ((r = (int)sfs_read(fs, a.ino, (uint64_t)i * chunk, buf, chunk)) < 0)
            return fail("read", r);
    double t3 = now();
    printf("sequential 1 MiB writes: %d MiB in %.3f s = %.0f MB/s (%.0f MB/s incl. fsync)\n",
           o->mib, t1 - t0, o->mib * 1.048576 / (t1 - t0), o->mib * 1.048576 / (t2 - t0));
    printf("sequential 1 MiB reads:  %d MiB in %.3f s = %.0f MB/s\n", o->mib, t3 - t2,
           o->mib * 1.048576 / (t3 - t2));
    free(buf);
    return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--files") && i + 1 < argc)
            o->files = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            o->mib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            o->threads = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            o->image = argv[i];
        else
            return -1;
    }
    return o->files > 0 && o->mib > 0 && o->threads > 0 && o->threads <= 64 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct opts o = {"/tmp/sfs_bench.img", 10000, 1024, 1};
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: sfs_bench [--files N] [--mib M] [--threads T] [IMAGE]\n");
        return 2;
    }
    struct media *m;
    uint64_t size = ((uint64_t)o.mib << 20) * 2 + (1ull << 30);
    int r = media_create_file(o.image, size, 0, &m);
    if (r)
        return fail(o.image, r);
    struct sfs *fs;
    if ((r = sfs_mkfs(m, NULL)) != 0 || (r = sfs_mount(m, NULL, &fs)) != 0)
        return fail("mkfs/mount", r);
    printf("image %s, %.1f GiB\n", o.image, (double)size / (1 << 30));
    r = run_storm(fs, &o) || run_seq(fs, &o);
    int u = sfs_unmount(fs);
    unlink(o.image);
    return r || u ? 1 : 0;
}
