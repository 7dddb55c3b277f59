/*
 * bench/flash/flash_lib.c - random 4 KiB reads of one file through libcisc,
 * for bench_flash.py. Two modes, for SECONDS:
 *   THREADS      THREADS threads, each with its own session and queue,
 *                each doing cisc_pread one at a time;
 *   qd N         one thread keeping N reads in flight: N queues (sessions
 *                of up to 64 queues), each with one asynchronous one-step
 *                fused read (cisc_vec_submit_async) at a time, polled;
 *                when a pass over them finds none done it sleeps 20 us.
 *                One read per queue, because a queue's completions are
 *                reaped in the order the device posted them, and under the
 *                flash model an earlier-posted one may arrive later.
 * Prints one line:
 *   iops N mean_us X p50_us X p99_us X client_cpu_s X wall_s X
 * (client CPU: this process's user + system time). Every queue is made
 * with spin_ns 1, so the client sleeps instead of spinning while a
 * completion it has seen is still in flight (wire.h WIRE_CQE_ARRIVE):
 * what is measured is the device, not a spinning client. Not a test:
 * nothing is asserted.
 *
 * usage: cisc-bench-flash-lib MOUNTPOINT FILE SECONDS (THREADS | qd N)
 */
#include <cisc/cisc.h>
#include <cisc/fused.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_SAMPLES (1u << 20)

struct worker {
    const char *mnt, *file;
    uint64_t until_ns, seed, n, blocks;
    uint32_t *lat_us;   /* per read, up to MAX_SAMPLES */
    int err;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    struct cisc_session *s;
    struct cisc_queue *q;
    uint64_t fh;
    char buf[4096];
    struct cisc_queue_params qp = {.spin_ns = 1};   /* sleep, never spin */
    if (cisc_session_open(w->mnt, &s) || cisc_queue_create_params(s, &qp, &q) ||
        cisc_open(q, w->file, O_RDONLY, 0, &fh)) {
        w->err = 1;
        return NULL;
    }
    for (uint64_t t = now_ns(); t < w->until_ns; t = now_ns()) {
        w->seed ^= w->seed << 13;
        w->seed ^= w->seed >> 7;
        w->seed ^= w->seed << 17;
        if (cisc_pread(q, fh, buf, sizeof(buf), (off_t)(w->seed % w->blocks) * 4096) < 0) {
            w->err = 1;
            break;
        }
        if (w->n < MAX_SAMPLES)
            w->lat_us[w->n] = (uint32_t)((now_ns() - t) / 1000);
        w->n++;
    }
    cisc_close(q, fh);
    cisc_session_close(s);
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- qd mode: N reads in flight from one thread ---- */

#define QD_MAX 1024
#define QD_PER_SESSION 64

struct qd_slot {
    struct cisc_queue *q;
    uint64_t fh;
    struct cisc_vec v;
    uint64_t t0;
};

static uint64_t next_off(uint64_t *seed, uint64_t blocks)
{
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    return (*seed % blocks) * 4096;
}

static int qd_submit(struct qd_slot *sl, uint64_t *seed, uint64_t blocks)
{
    cisc_vec_reset(&sl->v);
    int f = cisc_vec_fh(&sl->v, sl->fh);
    cisc_vec_read(&sl->v, f, next_off(seed, blocks), 4096);
    sl->t0 = now_ns();
    return cisc_vec_submit_async(&sl->v);
}

/* Opens n queues (sessions of QD_PER_SESSION), each with the file open
 * and one read in flight. */
static int qd_open(const char *mnt, const char *file, unsigned n, struct qd_slot *sl,
                   struct cisc_session **ss, uint64_t *seed, uint64_t blocks)
{
    struct cisc_queue_params qp = {.spin_ns = 1};
    for (unsigned i = 0; i < n; i++) {
        if (i % QD_PER_SESSION == 0 && cisc_session_open(mnt, &ss[i / QD_PER_SESSION]))
            return -1;
        struct cisc_session *s = ss[i / QD_PER_SESSION];
        if (cisc_queue_create_params(s, &qp, &sl[i].q) ||
            cisc_open(sl[i].q, file, O_RDONLY, 0, &sl[i].fh) || cisc_vec_init(&sl[i].v, sl[i].q) ||
            qd_submit(&sl[i], seed, blocks))
            return -1;
    }
    return 0;
}

/* Polls every slot until the deadline; resubmits each completed read. */
static int qd_run(struct qd_slot *sl, unsigned n, uint64_t until, uint64_t *seed,
                  uint64_t blocks, uint32_t *lat, uint64_t *count)
{
    while (now_ns() < until) {
        unsigned done = 0;
        for (unsigned i = 0; i < n; i++) {
            int64_t r = cisc_vec_poll(&sl[i].v);
            if (r == -EAGAIN)
                continue;
            if (r < 0 || cisc_vec_ret(&sl[i].v, 0) != 4096)
                return -1;
            if (*count < MAX_SAMPLES)
                lat[*count] = (uint32_t)((now_ns() - sl[i].t0) / 1000);
            (*count)++;
            done++;
            if (qd_submit(&sl[i], seed, blocks))
                return -1;
        }
        if (!done) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    for (unsigned i = 0; i < n; i++)
        cisc_vec_wait(&sl[i].v);
    return 0;
}

static uint64_t file_blocks(const char *mnt, const char *file)
{
    char path[4096];
    uint64_t blocks = 0;
    snprintf(path, sizeof(path), "%s/%s", mnt, file);
    FILE *f = fopen(path, "r");
    if (f && !fseek(f, 0, SEEK_END))
        blocks = (uint64_t)ftell(f) / 4096;
    if (f)
        fclose(f);
    return blocks;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Prints the result line from kept latency samples (sorted here). */
static void report(uint32_t *all, uint64_t kept, uint64_t total, double wall)
{
    double sum = 0;
    for (uint64_t k = 0; k < kept; k++)
        sum += all[k];
    qsort(all, kept, sizeof(*all), cmp_u32);
    printf("iops %.0f mean_us %.1f p50_us %u p99_us %u client_cpu_s %.3f wall_s %.3f\n",
           (double)total / wall, kept ? sum / (double)kept : 0.0, kept ? all[kept / 2] : 0,
           kept ? all[kept * 99 / 100] : 0, cpu_s(), wall);
}

static int main_qd(const char *mnt, const char *file, double secs, unsigned n)
{
    uint64_t blocks = file_blocks(mnt, file), seed = 88172645463325252ull, count = 0;
    struct qd_slot *sl = calloc(n, sizeof(*sl));
    struct cisc_session *ss[QD_MAX / QD_PER_SESSION] = {0};
    uint32_t *lat = malloc(MAX_SAMPLES * sizeof(uint32_t));
    if (!blocks || !sl || !lat || qd_open(mnt, file, n, sl, ss, &seed, blocks)) {
        fprintf(stderr, "cisc-bench-flash-lib: cannot open %u queues on %s/%s\n", n, mnt, file);
        return 1;
    }
    uint64_t start = now_ns();
    if (qd_run(sl, n, start + (uint64_t)(secs * 1e9), &seed, blocks, lat, &count))
        return 1;
    double wall = (double)(now_ns() - start) / 1e9;
    report(lat, count < MAX_SAMPLES ? count : MAX_SAMPLES, count, wall);
    for (unsigned i = 0; i < (n + QD_PER_SESSION - 1) / QD_PER_SESSION; i++)
        cisc_session_close(ss[i]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[4], "qd")) {
        unsigned n = (unsigned)atoi(argv[5]);
        if (!n || n > QD_MAX) {
            fprintf(stderr, "%s: qd 1..%u\n", argv[0], QD_MAX);
            return 2;
        }
        return main_qd(argv[1], argv[2], atof(argv[3]), n);
    }
    if (argc != 5) {
        fprintf(stderr, "usage: %s MOUNTPOINT FILE SECONDS (THREADS | qd N)\n", argv[0]);
        return 2;
    }
    unsigned nt = (unsigned)atoi(argv[4]);
    double secs = atof(argv[3]);
    struct worker *w = calloc(nt, sizeof(*w));
    pthread_t *th = calloc(nt, sizeof(*th));
    uint64_t start = now_ns(), blocks = file_blocks(argv[1], argv[2]);
    if (!w || !th || !blocks)
        return 1;
    for (unsigned i = 0; i < nt; i++) {
        w[i] = (struct worker){ argv[1], argv[2], start + (uint64_t)(secs * 1e9), 88172645463325252ull + i,
                                0, blocks, malloc(MAX_SAMPLES * sizeof(uint32_t)), 0 };
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    uint64_t total = 0, kept = 0;
    for (unsigned i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        if (w[i].err)
            return 1;
        total += w[i].n;
    }
    double wall = (double)(now_ns() - start) / 1e9;
    uint32_t *all = malloc((total ? total : 1) * sizeof(uint32_t));
    for (unsigned i = 0; i < nt; i++)
        for (uint64_t k = 0; k < w[i].n && k < MAX_SAMPLES; k++)
            all[kept++] = w[i].lat_us[k];
    report(all, kept, total, wall);
    return 0;
}
