/*
 * bench/flash/flash_lib.c - random 4 KiB reads of one file through libcisc
 * (cisc_pread), for bench_flash.py: THREADS threads, each with its own
 * session and queue, for SECONDS. Prints one line:
 *   iops N mean_us X p50_us X p99_us X client_cpu_s X wall_s X
 * (client CPU: this process's user + system time; the libcisc client
 * spins while a completion it has seen is still in flight, wire.h
 * WIRE_CQE_ARRIVE). Not a test: nothing is asserted.
 *
 * usage: cisc-bench-flash-lib MOUNTPOINT FILE SECONDS THREADS
 */
#include <cisc/cisc.h>

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
    if (cisc_session_open(w->mnt, &s) || cisc_queue_create(s, &q) ||
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

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s MOUNTPOINT FILE SECONDS THREADS\n", argv[0]);
        return 2;
    }
    unsigned nt = (unsigned)atoi(argv[4]);
    double secs = atof(argv[3]);
    struct worker *w = calloc(nt, sizeof(*w));
    pthread_t *th = calloc(nt, sizeof(*th));
    uint64_t start = now_ns(), blocks = 0;
    {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
        FILE *f = fopen(path, "r");
        if (f && !fseek(f, 0, SEEK_END))
            blocks = (uint64_t)ftell(f) / 4096;
        if (f)
            fclose(f);
    }
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
    double sum = 0;
    for (unsigned i = 0; i < nt; i++)
        for (uint64_t k = 0; k < w[i].n && k < MAX_SAMPLES; k++) {
            all[kept++] = w[i].lat_us[k];
            sum += w[i].lat_us[k];
        }
    qsort(all, kept, sizeof(*all), cmp_u32);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("iops %.0f mean_us %.1f p50_us %u p99_us %u client_cpu_s %.3f wall_s %.3f\n",
           (double)total / wall, kept ? sum / (double)kept : 0.0, kept ? all[kept / 2] : 0,
           kept ? all[kept * 99 / 100] : 0, cpu, wall);
    return 0;
}
