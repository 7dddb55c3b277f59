/* bench/recovery/bench_recovery.c - the client side of `make
 * bench-recovery` (bench_recovery.py drives it): append-CRC-write and a
 * ten-write vector over libcisc in a chosen transaction mode, and the
 * re-execution an application does after a crash (POSIX on the mount, or
 * re-submitting the fused op). Not a test.
 *
 *   cisc-bench-recovery lat MNT macro|micro|autorec N [acw|vw]
 *       mean latency (us) of N append-CRC-writes (4 KiB) and N ten-write
 *       vectors (10 x 4 KiB), each with an FSYNC step: "acw_us vw_us"
 *       (with acw or vw: only that op runs, the other's figure is 0)
 *   cisc-bench-recovery fused MNT macro|autorec THREADS MIB
 *       each thread appends MIB MiB to file tI, its CRC-32C after it (the
 *       threads submit together once every one has its data ready)
 *   cisc-bench-recovery missing MNT THREADS MIB
 *       like fused (macro) for the threads whose file lacks its op's
 *       effect (an op the device had not given a receipt for)
 *   cisc-bench-recovery posix MNT THREADS MIB
 *       the same through the mount: write, CRC on the host, write, fsync
 */
#include <cisc/cisc.h>

#include "common/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *mnt;
static int tx;
static size_t bytes;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int mode_of(const char *m)
{
    return !strcmp(m, "micro") ? CISC_TX_MICRO : !strcmp(m, "autorec") ? CISC_TX_AUTOREC
                                                                       : CISC_TX_MACRO;
}

static int64_t acw(struct cisc_queue *q, const char *file, const void *buf, size_t len)
{
    struct cisc_vec v;
    cisc_vec_init(&v, q);
    cisc_vec_set_tx(&v, tx);
    int f = cisc_vec_open(&v, file, O_CREAT | O_RDWR, 0644);
    cisc_vec_append(&v, f, CISC_IN_BUF(buf, len));
    int c = cisc_vec_crc32c(&v, CISC_IN_BUF(buf, len), 0);
    cisc_vec_append(&v, f, CISC_IN_STEP(c));
    cisc_vec_fsync(&v, f, 0);
    int64_t st = cisc_vec_submit(&v);
    cisc_vec_free(&v);
    return st;
}

static int64_t ten_writes(struct cisc_queue *q, const void *buf)
{
    struct cisc_vec v;
    cisc_vec_init(&v, q);
    cisc_vec_set_tx(&v, tx);
    int f = cisc_vec_open(&v, "vw", O_CREAT | O_RDWR, 0644);
    for (int k = 0; k < 10; k++)
        cisc_vec_write(&v, f, (uint64_t)k * 4096, CISC_IN_BUF(buf, 4096));
    cisc_vec_fsync(&v, f, 0);
    int64_t st = cisc_vec_submit(&v);
    cisc_vec_free(&v);
    return st;
}

static int open_queue(size_t arena, struct cisc_session **s, struct cisc_queue **q)
{
    struct cisc_queue_params p = { .arena_size = arena };
    int r = cisc_session_open(mnt, s);
    return r ? r : cisc_queue_create_params(*s, &p, q);
}

/* kind: "acw" or "vw" runs only that op (the other's figure is 0), NULL
 * both. */
static int run_lat(int n, const char *kind)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    if (open_queue(0, &s, &q))
        return 1;
    static char buf[4096];
    memset(buf, 'x', sizeof(buf));
    int na = kind && strcmp(kind, "acw") ? 0 : n, nv = kind && strcmp(kind, "vw") ? 0 : n;
    double t0 = now_s();
    for (int i = 0; i < na; i++)
        if (acw(q, "acw", buf, sizeof(buf)))
            return 1;
    double t1 = now_s();
    for (int i = 0; i < nv; i++)
        if (ten_writes(q, buf))
            return 1;
    double t2 = now_s();
    n = n ? n : 1;
    printf("%.1f %.1f\n", (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6);
    cisc_session_close(s);
    return 0;
}

static bool missing_only;
static pthread_barrier_t ready;   /* fused: every thread's data is ready, all submit */

static void *fused_thread(void *arg)
{
    long t = (long)arg;
    if (missing_only) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/t%ld", mnt, t);
        if (stat(path, &st) == 0 && (size_t)st.st_size == bytes + 4)
            return NULL;   /* the device finished it */
    }
    struct cisc_session *s;
    struct cisc_queue *q;
    char file[32];
    snprintf(file, sizeof(file), "t%ld", t);
    void *buf = NULL;
    int opened = open_queue(2 * bytes + (1 << 20), &s, &q) == 0;
    int bad = opened ? cisc_buf_alloc(q, bytes, &buf) : -1;
    if (!bad)
        memset(buf, 'a' + (int)t, bytes);
    if (!missing_only)
        pthread_barrier_wait(&ready);   /* the ops are in flight together */
    int64_t st = bad ? bad : acw(q, file, buf, bytes);
    if (opened)
        cisc_session_close(s);
    return (void *)(long)(st != 0);
}

static void *posix_thread(void *arg)
{
    long t = (long)arg;
    char path[4096];
    snprintf(path, sizeof(path), "%s/t%ld", mnt, t);
    char *buf = malloc(bytes);
    memset(buf, 'a' + (int)t, bytes);
    int fd = open(path, O_CREAT | O_WRONLY | O_APPEND, 0644);
    long bad = fd < 0 || write(fd, buf, bytes) != (ssize_t)bytes;
    uint32_t c = crc32c(0, buf, bytes);
    bad |= write(fd, &c, 4) != 4 || fsync(fd);   /* little-endian host */
    close(fd);
    free(buf);
    return (void *)bad;
}

static int run_threads(void *(*fn)(void *), int threads)
{
    pthread_t th[64];
    long bad = 0;
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, fn, (void *)t);
    for (int t = 0; t < threads; t++) {
        void *r;
        pthread_join(th[t], &r);
        bad |= (long)r;
    }
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    mnt = argv[2];
    if (!strcmp(argv[1], "lat") && (argc == 5 || argc == 6)) {
        tx = mode_of(argv[3]);
        return run_lat(atoi(argv[4]), argc == 6 ? argv[5] : NULL);
    }
    if (!strcmp(argv[1], "fused") && argc == 6) {
        tx = mode_of(argv[3]);
        bytes = (size_t)atoi(argv[5]) << 20;
        int threads = atoi(argv[4]) > 64 ? 64 : atoi(argv[4]) < 1 ? 1 : atoi(argv[4]);
        pthread_barrier_init(&ready, NULL, (unsigned)threads);
        return run_threads(fused_thread, threads);
    }
    if (!strcmp(argv[1], "missing") && argc == 5) {
        tx = CISC_TX_MACRO;
        missing_only = true;
        bytes = (size_t)atoi(argv[4]) << 20;
        return run_threads(fused_thread, atoi(argv[3]) > 64 ? 64 : atoi(argv[3]));
    }
    if (!strcmp(argv[1], "posix") && argc == 5) {
        bytes = (size_t)atoi(argv[4]) << 20;
        return run_threads(posix_thread, atoi(argv[3]) > 64 ? 64 : atoi(argv[3]));
    }
    return 2;
}
