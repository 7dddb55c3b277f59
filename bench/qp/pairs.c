/*
 * bench/qp/pairs.c - a libcisc call against the same call through the FUSE
 * mount, and what each costs the host:
 *
 *   pwrite   a small cisc_pwrite   vs  pwrite(2) on the mount
 *   wsync    one cisc_write_fsync  vs  pwrite(2) + fdatasync(2) on the mount
 *
 *   cisc-bench-pairs MOUNTPOINT [ITERATIONS [BYTES [DEVICE_PID]]]
 *
 * Each iteration writes BYTES (default 128, a small key-value record) at
 * the next offset of a log-like file (wrapping at 1 MiB). Latency: the two
 * ways interleaved one call for one, so that both see the same host load
 * (mean, median, p99). CPU: then ITERATIONS calls of each way alone, with
 * the CPU time the calling thread used and, given DEVICE_PID, the CPU time
 * every thread of the device used (/proc/PID/task/TID/schedstat), per call:
 * what a spinning or a sleeping wait costs the host, whatever its load.
 *
 * Prints CSV: case,way,iterations,mean_ns,p50_ns,p99_ns,client_cpu_ns,
 * device_cpu_ns (the CPU columns per call; -1 without DEVICE_PID), then
 * "# CASE: mount / libcisc medians R". A benchmark, not a test: nothing
 * here checks a time.
 */
#include <cisc/cisc.h>
#include <cisc/fused.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WRAP (1u << 20)

static uint64_t clock_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_of(CLOCK_MONOTONIC);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* CPU time of every thread of process pid so far (ns), or 0. */
static uint64_t proc_cpu_ns(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *d = pid > 0 ? opendir(path) : NULL;
    uint64_t sum = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char f[320];
        snprintf(f, sizeof(f), "/proc/%d/task/%s/schedstat", pid, e->d_name);
        FILE *fp = e->d_name[0] != '.' ? fopen(f, "r") : NULL;
        unsigned long long run = 0;
        if (fp && fscanf(fp, "%llu", &run) == 1)
            sum += run;
        if (fp)
            fclose(fp);
    }
    if (d)
        closedir(d);
    return sum;
}

struct bench {
    struct cisc_queue *q;
    uint64_t fh;
    int fd;
    void *buf;        /* arena buffer (the libcisc way) */
    char *kbuf;       /* ordinary memory (the mount way) */
    size_t len;
    unsigned n;
    int dev_pid;
    uint64_t *lat[2];
};

static const char *const CASES[2] = { "pwrite", "wsync" };
static const char *const WAYS[2] = { "libcisc", "mount" };

/* One call of case c the way w at off. Returns 0 or -errno. */
static int call(struct bench *b, int c, int w, uint64_t off)
{
    ssize_t r;
    if (w == 0) {
        r = c ? cisc_write_fsync(b->q, b->fh, b->buf, b->len, off)
              : cisc_pwrite(b->q, b->fh, b->buf, b->len, off);
        return r == (ssize_t)b->len ? 0 : r < 0 ? (int)r : -EIO;
    }
    r = pwrite(b->fd, b->kbuf, b->len, (off_t)off);
    if (r != (ssize_t)b->len)
        return r < 0 ? -errno : -EIO;
    return c && fdatasync(b->fd) ? -errno : 0;
}

/* n calls of case c, the ways in `ways` (bit w) alternating; latencies
 * into b->lat[w]. */
static int calls(struct bench *b, int c, unsigned ways, unsigned n)
{
    uint64_t off = 0;
    for (unsigned i = 0; i < n; i++) {
        for (int w = 0; w < 2; w++) {
            if (!(ways & (1u << w)))
                continue;
            uint64_t t0 = now_ns();
            int r = call(b, c, w, off);
            b->lat[w][i] = now_ns() - t0;
            if (r)
                return r;
        }
        off = (off + b->len) % WRAP;
    }
    return 0;
}

/* Sorts lat; returns its median. */
static uint64_t stats(uint64_t *lat, unsigned n, uint64_t *mean, uint64_t *p99)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += lat[i];
    qsort(lat, n, sizeof(*lat), cmp_u64);
    *mean = sum / n;
    *p99 = lat[(uint64_t)n * 99 / 100];
    return lat[n / 2];
}

/* Way w of case c alone: CPU per call of this thread and of the device. */
static int cpu_alone(struct bench *b, int c, int w, long long *client, long long *device)
{
    uint64_t c0 = clock_of(CLOCK_THREAD_CPUTIME_ID), d0 = proc_cpu_ns(b->dev_pid);
    int r = calls(b, c, 1u << w, b->n);
    uint64_t c1 = clock_of(CLOCK_THREAD_CPUTIME_ID), d1 = proc_cpu_ns(b->dev_pid);
    *client = (long long)((c1 - c0) / b->n);
    *device = b->dev_pid > 0 ? (long long)((d1 - d0) / b->n) : -1;
    return r;
}

static int run_case(struct bench *b, int c)
{
    int r = calls(b, c, 3, b->n);
    long long cl[2], dv[2];
    for (int w = 0; !r && w < 2; w++)
        r = cpu_alone(b, c, w, &cl[w], &dv[w]);
    if (r)
        return r;
    uint64_t med[2];
    for (int w = 0; w < 2; w++) {
        uint64_t mean, p99;
        med[w] = stats(b->lat[w], b->n, &mean, &p99);
        printf("%s,%s,%u,%llu,%llu,%llu,%lld,%lld\n", CASES[c], WAYS[w], b->n,
               (unsigned long long)mean, (unsigned long long)med[w],
               (unsigned long long)p99, cl[w], dv[w]);
    }
    printf("# %s: mount / libcisc medians %.2f\n", CASES[c],
           med[0] ? (double)med[1] / (double)med[0] : 0.0);
    return 0;
}

static int open_files(const char *mnt, struct bench *b)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/pairs-bench-mount", mnt);
    b->fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (b->fd < 0)
        return -errno;
    int r = cisc_open(b->q, "pairs-bench-cisc", O_CREAT | O_TRUNC | O_WRONLY, 0644, &b->fh);
    if (!r)
        r = cisc_buf_alloc(b->q, b->len, &b->buf);
    b->kbuf = malloc(b->len);
    if (!r && !b->kbuf)
        r = -ENOMEM;
    if (!r) {
        memset(b->buf, 'c', b->len);
        memset(b->kbuf, 'm', b->len);
    }
    return r;
}

static int run(const char *mnt, struct bench *b)
{
    struct cisc_session *s;
    b->lat[0] = malloc(b->n * sizeof(uint64_t));
    b->lat[1] = malloc(b->n * sizeof(uint64_t));
    int r = b->lat[0] && b->lat[1] ? cisc_session_open(mnt, &s) : -ENOMEM;
    if (r)
        goto out;
    r = cisc_queue_create(s, &b->q);
    if (!r)
        r = open_files(mnt, b);
    if (!r)
        r = calls(b, 1, 3, b->n / 10 ? b->n / 10 : 1);   /* warm up */
    if (!r)
        printf("case,way,iterations,mean_ns,p50_ns,p99_ns,client_cpu_ns,device_cpu_ns\n");
    for (int c = 0; !r && c < 2; c++)
        r = run_case(b, c);
    if (b->fd >= 0)
        close(b->fd);
    free(b->kbuf);
    cisc_session_close(s);
out:
    free(b->lat[0]);
    free(b->lat[1]);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cisc-bench-pairs MOUNTPOINT [ITERATIONS [BYTES [DEVICE_PID]]]\n");
        return 2;
    }
    struct bench b = { .fd = -1 };
    b.n = argc > 2 ? (unsigned)atoi(argv[2]) : 2000;
    long len = argc > 3 ? atol(argv[3]) : 128;
    b.dev_pid = argc > 4 ? atoi(argv[4]) : 0;
    if (b.n == 0 || len <= 0 || len > (1 << 20)) {
        fprintf(stderr, "cisc-bench-pairs: bad ITERATIONS or BYTES\n");
        return 2;
    }
    b.len = (size_t)len;
    int r = run(argv[1], &b);
    if (r) {
        fprintf(stderr, "cisc-bench-pairs: %s\n", strerror(-r));
        return 1;
    }
    return 0;
}
