/*
 * bench/qp/rtt.c - round trip of one libcisc command through a running
 * device (queue pair -> poller -> scheduler -> engine -> completion), and
 * for comparison the same 4 KiB read through the FUSE mount with O_DIRECT
 * (one system call and one /dev/fuse round trip per read).
 *
 *   cisc-bench-rtt MOUNTPOINT [ITERATIONS]
 *
 * Prints one CSV line per case: case,iterations,mean_ns,p50_ns,p99_ns.
 * A benchmark, not a test: nothing here checks a time.
 */
#include <cisc/cisc.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (16u << 20)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, uint64_t *lat, unsigned n)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += lat[i];
    qsort(lat, n, sizeof(*lat), cmp_u64);
    printf("%s,%u,%llu,%llu,%llu\n", name, n, (unsigned long long)(sum / n),
           (unsigned long long)lat[n / 2], (unsigned long long)lat[(uint64_t)n * 99 / 100]);
}

static uint64_t rnd_block(unsigned *seed)
{
    return (uint64_t)(rand_r(seed) % (FILE_SIZE / 4096)) * 4096;
}

static int bench_nop(struct cisc_queue *q, uint64_t *lat, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        int r = cisc_nop(q);
        lat[i] = now_ns() - t0;
        if (r)
            return r;
    }
    report("libcisc_nop", lat, n);
    return 0;
}

static int bench_read(struct cisc_queue *q, uint64_t fh, void *buf, uint64_t *lat, unsigned n)
{
    unsigned seed = 1;
    for (unsigned i = 0; i < n; i++) {
        uint64_t off = rnd_block(&seed), t0 = now_ns();
        ssize_t r = cisc_pread(q, fh, buf, 4096, off);
        lat[i] = now_ns() - t0;
        if (r != 4096)
            return r < 0 ? (int)r : -EIO;
    }
    report("libcisc_pread_4k", lat, n);
    return 0;
}

static int bench_fuse(const char *mnt, void *buf, uint64_t *lat, unsigned n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/rtt-bench-file", mnt);
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0)
        return -errno;
    unsigned seed = 1;
    for (unsigned i = 0; i < n; i++) {
        uint64_t off = rnd_block(&seed), t0 = now_ns();
        ssize_t r = pread(fd, buf, 4096, (off_t)off);
        lat[i] = now_ns() - t0;
        if (r != 4096) {
            close(fd);
            return -EIO;
        }
    }
    close(fd);
    report("fuse_odirect_pread_4k", lat, n);
    return 0;
}

/* The file the reads use, written through libcisc. */
static int make_file(struct cisc_queue *q, void *buf, uint64_t *fh)
{
    int r = cisc_open(q, "rtt-bench-file", O_CREAT | O_RDWR, 0644, fh);
    for (uint64_t off = 0; !r && off < FILE_SIZE; off += 1 << 20) {
        memset(buf, (int)(off >> 20), 1 << 20);
        r = cisc_pwrite(q, *fh, buf, 1 << 20, off) == 1 << 20 ? 0 : -EIO;
    }
    return r;
}

static int run(const char *mnt, unsigned n, uint64_t *lat)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    void *buf, *big;
    uint64_t fh;
    int r = cisc_session_open(mnt, &s);
    if (r)
        return r;
    r = cisc_queue_create(s, &q);
    if (!r)
        r = cisc_buf_alloc(q, 1 << 20, &big);
    if (!r)
        r = make_file(q, big, &fh);
    if (!r)
        r = posix_memalign(&buf, 4096, 4096) ? -ENOMEM : 0;
    for (unsigned i = 0; !r && i < n / 10; i++)   /* warm up */
        r = cisc_nop(q);
    if (!r)
        r = bench_nop(q, lat, n);
    if (!r)
        r = bench_read(q, fh, big, lat, n);
    if (!r)
        r = bench_fuse(mnt, buf, lat, n);
    cisc_session_close(s);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cisc-bench-rtt MOUNTPOINT [ITERATIONS]\n");
        return 2;
    }
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 100000;
    uint64_t *lat = n ? malloc(n * sizeof(uint64_t)) : NULL;
    if (!lat)
        return 2;
    int r = run(argv[1], n, lat);
    free(lat);
    if (r) {
        fprintf(stderr, "cisc-bench-rtt: %s\n", strerror(-r));
        return 1;
    }
    return 0;
}
