/* bench/sched/sched_bench.c - one tenant's workload for `make bench-sched`
 * (bench/sched/bench_sched.py runs several at once, one process each, on a
 * device started with --tenant pid). Not a test.
 *
 *   cisc-bench-sched WORKLOAD THREADS MOUNTPOINT SECONDS
 *
 * WORKLOAD: wo  4 KiB random writes (libcisc RISC), a 16 MiB file per thread
 *           acw append-CRC-write: 16 KiB record + its CRC-32C, one fused op
 *           rcw read-compress-write: 1 MiB read, zstd, write (memory-hungry)
 *           fio 4 KiB random pwrite on the FUSE mount (POSIX)
 * Prints "ready" once every thread has set up (opened and filled its
 * file), then waits for a line (or EOF) on stdin before the timed run, so
 * the runner starts every tenant's timed ops together and the set-up,
 * which a slow device makes long, is not part of anyone's run. Then prints
 * "ops N secs S p99_us P": ops done, the time they took, and the 99th
 * percentile of the op latency. */
#include <cisc/cisc.h>
#include <cisc/fused.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (16u << 20)
#define WO_BYTES   4096u
#define ACW_BYTES  (16u << 10)
#define RCW_BYTES  (1u << 20)
#define MAX_LAT    (1u << 20)

struct worker {
    unsigned id;
    const char *wl, *mnt;
    double secs, end;
    uint64_t ops, nlat, rng;
    double *lat;   /* seconds per op (the first MAX_LAT) */
    int err;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every worker's set-up is done, then the run starts (main's "go"). */
static pthread_barrier_t set_up, go;
static double run_secs, run_end;

/* Waits for the start of the timed run; sets w's end. */
static void start(struct worker *w)
{
    pthread_barrier_wait(&set_up);
    pthread_barrier_wait(&go);
    w->end = run_end;
}

static uint64_t rnd(struct worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static void note(struct worker *w, double t0)
{
    w->ops++;
    if (w->nlat < MAX_LAT)
        w->lat[w->nlat++] = now() - t0;
}

/* The POSIX workload on the mount. */
static void run_fio(struct worker *w, char *path)
{
    int fd = open(path, O_CREAT | O_RDWR, 0644);
    static const char blk[WO_BYTES];
    if (fd < 0 || ftruncate(fd, FILE_BYTES))
        w->err = errno;
    start(w);
    while (!w->err && now() < w->end) {
        double t0 = now();
        off_t off = (off_t)(rnd(w) % (FILE_BYTES / WO_BYTES)) * WO_BYTES;
        if (pwrite(fd, blk, WO_BYTES, off) != WO_BYTES)
            w->err = errno;
        note(w, t0);
    }
    if (fd >= 0)
        close(fd);
}

/* One libcisc op of the workload. Returns 0 or -errno. */
static int one_op(struct worker *w, struct cisc_queue *q, uint64_t fh, const char *path,
                  uint8_t *buf)
{
    if (!strcmp(w->wl, "wo"))
        return cisc_pwrite(q, fh, buf, WO_BYTES,
                           (rnd(w) % (FILE_BYTES / WO_BYTES)) * WO_BYTES) == WO_BYTES ? 0 : -EIO;
    if (!strcmp(w->wl, "acw")) {
        uint64_t off;
        return cisc_append_crc_write(q, fh, buf, ACW_BYTES, &off) < 0 ? -EIO : 0;
    }
    struct cisc_vec v;   /* rcw */
    uint64_t off = (rnd(w) % (FILE_BYTES / RCW_BYTES)) * RCW_BYTES;
    cisc_vec_init(&v, q);
    int f = cisc_vec_open(&v, path, O_RDWR, 0);
    int r = cisc_vec_read(&v, f, off, RCW_BYTES);
    int c = cisc_vec_compress(&v, CISC_IN_STEP(r), 1);
    cisc_vec_write(&v, f, off, CISC_IN_STEP(c));
    cisc_vec_close(&v, f);
    int64_t st = cisc_vec_submit(&v);
    cisc_vec_free(&v);
    return (int)st;
}

static void run_cisc(struct worker *w, const char *path)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    uint64_t fh;
    uint8_t *buf = calloc(1, RCW_BYTES);
    for (unsigned i = 0; buf && i < RCW_BYTES; i++)
        buf[i] = (uint8_t)("abcdefgh"[i % 8] + (i / 4096) % 7);
    int r = buf ? cisc_session_open(w->mnt, &s) : -ENOMEM;
    if (!r)
        r = cisc_queue_create(s, &q);
    if (!r)
        r = cisc_open(q, path, O_CREAT | O_RDWR | (strcmp(w->wl, "acw") ? 0 : O_TRUNC), 0644,
                      &fh);
    for (uint64_t o = 0; !r && strcmp(w->wl, "acw") && o < FILE_BYTES; o += RCW_BYTES)
        r = cisc_pwrite(q, fh, buf, RCW_BYTES, o) == RCW_BYTES ? 0 : -EIO;
    start(w);
    while (!r && now() < w->end) {
        double t0 = now();
        r = one_op(w, q, fh, path, buf);
        note(w, t0);
    }
    w->err = -r;
    free(buf);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    char path[4096];
    bool fio = !strcmp(w->wl, "fio");   /* a host path; libcisc's are the device's */
    snprintf(path, sizeof(path), "%s%ssb-%d-%s-%u", fio ? w->mnt : "", fio ? "/" : "",
             (int)getpid(), w->wl, w->id);
    if (!strcmp(w->wl, "fio"))
        run_fio(w, path);
    else
        run_cisc(w, path);
    w->secs = now() - (run_end - run_secs);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: cisc-bench-sched wo|acw|rcw|fio THREADS MOUNTPOINT SECONDS\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[2]);
    run_secs = atof(argv[4]);
    struct worker *w = calloc(n, sizeof(*w));
    pthread_t *t = calloc(n, sizeof(*t));
    pthread_barrier_init(&set_up, NULL, n + 1);
    pthread_barrier_init(&go, NULL, n + 1);
    for (unsigned i = 0; i < n; i++) {
        w[i] = (struct worker){ .id = i, .wl = argv[1], .mnt = argv[3],
                                .rng = 0x9E3779B97F4A7C15ull * (i + 1) + (uint64_t)getpid() };
        w[i].lat = malloc(MAX_LAT * sizeof(double));
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    pthread_barrier_wait(&set_up);
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof(line), stdin))
        line[0] = 0;   /* EOF: go at once */
    run_end = now() + run_secs;
    pthread_barrier_wait(&go);
    uint64_t ops = 0, nlat = 0;
    double longest = 0;
    int err = 0;
    for (unsigned i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        ops += w[i].ops;
        nlat += w[i].nlat;
        longest = w[i].secs > longest ? w[i].secs : longest;
        err = err ? err : w[i].err;
    }
    double *all = malloc((nlat ? nlat : 1) * sizeof(double));
    uint64_t k = 0;
    for (unsigned i = 0; i < n; i++)
        for (uint64_t j = 0; j < w[i].nlat; j++)
            all[k++] = w[i].lat[j];
    qsort(all, nlat, sizeof(double), cmp_d);
    double p99 = nlat ? all[(nlat * 99) / 100 < nlat ? (nlat * 99) / 100 : nlat - 1] : 0;
    printf("ops %llu secs %.3f p99_us %.1f err %d\n", (unsigned long long)ops, longest,
           p99 * 1e6, err);
    return err ? 1 : 0;
}
