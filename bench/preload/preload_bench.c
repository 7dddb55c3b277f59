/*
 * bench/preload/preload_bench.c - a plain POSIX program (no libcisc) for
 * `make bench-preload`: it is run on the FUSE mount directly and under
 * `cisc exec` (with and without AutoMerge), and prints its throughput.
 * Not a test.
 *
 *   usage: cisc-bench-preload DIR WORKLOAD THREADS SECONDS
 *
 * Workloads (FusionFS FAST'22 Table 6 and "small synced writes"):
 *   acw    append-CRC-write: every thread appends a 4 KiB block to one
 *          shared O_APPEND log, computes its CRC-32C on the host and
 *          appends the 4-byte checksum after it
 *   sync   every thread pwrites 4 KiB blocks to its own region of one
 *          shared file, each followed by fdatasync
 *   write  the same without fdatasync
 * Prints "WORKLOAD THREADS ops OPS/s MiB/s".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096

static int fd;
static const char *workload;
static atomic_bool stop;
static atomic_ullong ops;

static uint32_t crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = ~0u;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
    }
    return ~c;
}

static void *worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint8_t buf[BLOCK];
    memset(buf, 'a' + (int)t, sizeof(buf));
    unsigned long long n = 0;
    bool acw = !strcmp(workload, "acw"), sync = !strcmp(workload, "sync");
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        buf[0] = (uint8_t)n;
        if (acw) {
            uint32_t c = crc32c(buf, sizeof(buf));
            if (write(fd, buf, sizeof(buf)) != BLOCK || write(fd, &c, 4) != 4)
                return (void *)1;
        } else {
            off_t off = ((off_t)t * 1024 + (off_t)(n % 1024)) * BLOCK;
            if (pwrite(fd, buf, sizeof(buf), off) != BLOCK || (sync && fdatasync(fd)))
                return (void *)1;
        }
        n++;
    }
    atomic_fetch_add(&ops, n);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return fprintf(stderr, "usage: %s DIR acw|sync|write THREADS SECONDS\n", argv[0]), 2;
    char path[4096];
    workload = argv[2];
    int nt = atoi(argv[3]);
    double secs = atof(argv[4]);
    snprintf(path, sizeof(path), "%s/%s.dat", argv[1], workload);
    bool acw = !strcmp(workload, "acw");
    fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | (acw ? O_APPEND : 0), 0644);
    if (fd < 0 || nt < 1 || nt > 64)
        return perror(path), 2;
    pthread_t th[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int t = 0; t < nt; t++)
        pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
    usleep((useconds_t)(secs * 1e6));
    atomic_store(&stop, true);
    int bad = 0;
    for (int t = 0; t < nt; t++) {
        void *r;
        pthread_join(th[t], &r);
        bad |= r != NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double el = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    unsigned long long n = atomic_load(&ops);
    close(fd);
    unlink(path);
    if (bad)
        return fprintf(stderr, "a write failed\n"), 1;
    printf("%s %d ops %llu %.0f/s %.1f MiB/s\n", workload, nt, n, (double)n / el,
           (double)n * (BLOCK + (acw ? 4 : 0)) / el / (1 << 20));
    return 0;
}
