/*
 * bench/flash/flash_bench.c - the NAND flash model (device/media/flash.h)
 * on its own, in simulated time: WAF against over-provisioning beside
 * Desnoyers' curve, random-read IOPS against queue depth, the GC cliff of
 * random writes on a full device (throughput and p99 per interval), the
 * simulator's own CPU cost per page, and single-lock vs partitioned FTL
 * with 1..4 threads (wall-clock model throughput), arrays of 1, 2, 4
 * members. Prints the model and
 * writes CSV files into the directory given as argv[1]. Asserts nothing.
 */
#include "device/media/flash.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static struct flash *make(struct flash_geom g, uint64_t n)
{
    struct flash *f;
    char err[128];
    flash_geom_default(&g, n);
    if (flash_geom_check(&g, n, err, sizeof(err)) || flash_create(&g, n, &f)) {
        fprintf(stderr, "flash_bench: %s\n", err);
        exit(1);
    }
    return f;
}

static FILE *csv(const char *dir, const char *name, const char *header)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        exit(1);
    }
    fprintf(fp, "%s\n", header);
    return fp;
}

static void print_model(const struct flash_geom *g, uint64_t n)
{
    printf("model: %u channels x %u dies, %u blocks/die x %u pages x 4 KiB, %u logical "
           "pages, op %u/1000, gc %s, read %llu ns, prog %llu ns, erase %llu ns, xfer %llu ns\n",
           g->channels, g->dies_per_channel, g->blocks_per_die, g->pages_per_block,
           (unsigned)n, g->op_permille, g->gc_policy ? "cost-benefit" : "greedy",
           (unsigned long long)g->t_read_ns, (unsigned long long)g->t_prog_ns,
           (unsigned long long)g->t_erase_ns, (unsigned long long)g->t_xfer_ns);
}

/* WAF of uniform random overwrites at steady state, beside the model. */
static void bench_waf(const char *dir)
{
    static const unsigned ops[] = {50, 70, 100, 150, 250, 500, 1000};
    FILE *fp = csv(dir, "flash_waf.csv", "op_permille,alpha,model,greedy,cost_benefit");
    printf("\nWAF vs over-provisioning (2x2 dies, 128-page blocks, 65536 pages):\n"
           "  op    alpha   model   greedy  cost-benefit\n");
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        double w[2], alpha = 0;
        for (int pol = 0; pol < 2; pol++) {
            const uint64_t n = 65536;
            struct flash_geom g = {.channels = 2, .dies_per_channel = 2,
                                   .pages_per_block = 128, .op_permille = ops[i],
                                   .gc_policy = (enum flash_gc_policy)pol};
            struct flash *f = make(g, n);
            const struct flash_geom *k = flash_geom(f);
            alpha = 4.0 * (k->blocks_per_die - k->gc_free_blocks - 0.5) * k->pages_per_block / n;
            uint64_t s = 42;
            for (uint64_t l = 0; l < n; l++)
                flash_write(f, l, 0);
            for (uint64_t j = 0; j < 4 * n; j++)
                flash_write(f, rng_next(&s) % n, 0);
            struct flash_stats a, b;
            flash_stats(f, &a);
            for (uint64_t j = 0; j < 4 * n; j++)
                flash_write(f, rng_next(&s) % n, 0);
            flash_stats(f, &b);
            double h = (double)(b.host_writes - a.host_writes);
            w[pol] = (h + (double)(b.pages_moved - a.pages_moved)) / h;
            flash_destroy(f);
        }
        double m = flash_waf_model(alpha);
        printf("  %4u  %.3f  %6.3f  %6.3f  %6.3f\n", ops[i], alpha, m, w[0], w[1]);
        fprintf(fp, "%u,%.4f,%.4f,%.4f,%.4f\n", ops[i], alpha, m, w[0], w[1]);
    }
    fclose(fp);
}

/* Closed loop of qd random 4 KiB reads in simulated time: each slot
 * issues its next read when its previous one completes. */
static void bench_qd(const char *dir)
{
    const uint64_t n = 262144;   /* 1 GiB */
    struct flash_geom g = {0};
    struct flash *f = make(g, n);
    const struct flash_geom *k = flash_geom(f);
    print_model(k, n);
    for (uint64_t l = 0; l < n; l++)
        flash_write(f, l, 0);
    struct flash_stats st;
    flash_stats(f, &st);
    uint64_t t0 = st.now_ns + 1000000;
    double dies = (double)k->channels * k->dies_per_channel;
    double ideal = dies * 1e9 / (double)k->t_read_ns;
    FILE *fp = csv(dir, "flash_qd.csv", "qd,iops,ideal,ratio");
    printf("\nrandom 4 KiB read IOPS vs queue depth (ideal = dies / t_read = %.0f):\n", ideal);
    uint64_t s = 7;
    for (unsigned qd = 1; qd <= 256; qd *= 2) {
        uint64_t slot[256], reads = 100000, last = 0;
        for (unsigned i = 0; i < qd; i++)
            slot[i] = t0;
        for (uint64_t r = 0; r < reads; r++) {
            unsigned m = 0;
            for (unsigned i = 1; i < qd; i++)
                m = slot[i] < slot[m] ? i : m;
            slot[m] = flash_read(f, rng_next(&s) % n, slot[m]).done_ns;
            last = slot[m] > last ? slot[m] : last;
        }
        double iops = (double)reads * 1e9 / (double)(last - t0);
        printf("  qd %3u  %10.0f IOPS  %.2f of ideal\n", qd, iops, iops / ideal);
        fprintf(fp, "%u,%.0f,%.0f,%.4f\n", qd, iops, ideal, iops / ideal);
        t0 = last + 1000000;
    }
    fclose(fp);
    flash_destroy(f);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Random writes at queue depth 32 on a full device: throughput and p99
 * latency per 50 ms of simulated time, through the GC cliff. */
static void bench_cliff(const char *dir)
{
    const uint64_t n = 65536;
    struct flash_geom g = {.channels = 8, .dies_per_channel = 4, .pages_per_block = 64};
    struct flash *f = make(g, n);
    enum { QD = 32, MAXW = 4000000 };
    uint64_t slot[QD] = {0}, s = 9, start = 0, bucket_ns = 50000000, bucket = 0, cnt = 0;
    uint64_t *lat = malloc(sizeof(uint64_t) * MAXW);
    FILE *fp = csv(dir, "flash_cliff.csv", "t_ms,mib_s,p99_us,waf");
    printf("\nrandom 4 KiB writes, qd 32, 8x4 dies, fresh 256 MiB device (per 50 ms):\n");
    for (uint64_t w = 0; w < 12 * n && w < MAXW; w++) {
        unsigned m = 0;
        for (unsigned i = 1; i < QD; i++)
            m = slot[i] < slot[m] ? i : m;
        uint64_t issue = slot[m];
        if (issue >= start + bucket_ns) {
            qsort(lat, cnt, sizeof(*lat), cmp_u64);
            struct flash_stats st;
            flash_stats(f, &st);
            double mib = (double)cnt * 4096 / (1 << 20) / ((double)bucket_ns / 1e9);
            fprintf(fp, "%llu,%.1f,%.1f,%.3f\n", (unsigned long long)(bucket * 50), mib,
                    cnt ? (double)lat[cnt * 99 / 100] / 1000 : 0, st.waf);
            if (bucket % 10 == 0)
                printf("  t %5llu ms  %7.1f MiB/s  p99 %8.1f us  waf %.2f\n",
                       (unsigned long long)(bucket * 50), mib,
                       cnt ? (double)lat[cnt * 99 / 100] / 1000 : 0, st.waf);
            bucket++;
            start += bucket_ns;
            cnt = 0;
        }
        slot[m] = flash_write(f, rng_next(&s) % n, issue).done_ns;
        lat[cnt++] = slot[m] - issue;
    }
    free(lat);
    fclose(fp);
    flash_destroy(f);
}

struct worker {
    struct flash *f;
    uint64_t n, t, ops;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    uint64_t s = w->t + 11, stripes = w->n / 32 / 4;
    for (uint64_t i = 0; i < w->ops; i++) {
        uint64_t st = (rng_next(&s) % stripes) * 4 + w->t;   /* thread t's stripes */
        flash_read(w->f, st * 32 + rng_next(&s) % 32, i * 100);
    }
    return NULL;
}

/* Wall-clock model throughput (random reads) with 1..4 threads, each on
 * its own stripes: partitioned (4 partitions) vs single-lock. Also the
 * simulator's CPU cost per page. */
static void bench_threads(const char *dir)
{
    FILE *fp = csv(dir, "flash_threads.csv", "threads,single_lock_mops,partitioned_mops");
    printf("\nmodel throughput, random reads, own stripes per thread (wall clock):\n");
    double base[2] = {0, 0};
    for (unsigned th = 1; th <= 4; th++) {
        double mops[2];
        for (int p = 0; p < 2; p++) {
            const uint64_t n = 262144;
            struct flash_geom g = {.partitions = p ? 4 : 1};
            struct flash *f = make(g, n);
            for (uint64_t l = 0; l < n; l++)
                flash_write(f, l, 0);
            struct worker w[4];
            pthread_t tid[4];
            uint64_t t0 = wall_ns();
            for (unsigned i = 0; i < th; i++) {
                w[i] = (struct worker){f, n, i, 2000000};
                pthread_create(&tid[i], NULL, work, &w[i]);
            }
            for (unsigned i = 0; i < th; i++)
                pthread_join(tid[i], NULL);
            mops[p] = (double)th * 2000000 / ((double)(wall_ns() - t0) / 1e3);
            flash_destroy(f);
        }
        if (th == 1) {
            base[0] = mops[0];
            base[1] = mops[1];
            printf("  simulator CPU per page: %.0f ns (single lock), %.0f ns (partitioned)\n",
                   1e3 / mops[0], 1e3 / mops[1]);
        }
        printf("  %u threads: single lock %.2f Mops/s (x%.2f), partitioned %.2f Mops/s (x%.2f)\n",
               th, mops[0], mops[0] / base[0], mops[1], mops[1] / base[1]);
        fprintf(fp, "%u,%.3f,%.3f\n", th, mops[0], mops[1]);
    }
    fclose(fp);
}

/* Arrays of 1, 2, 4 members (64 KiB stripes, each member the default
 * geometry for its share): random-read IOPS at queue depth 32 per member. */
static void bench_array(const char *dir)
{
    const uint64_t n = 262144, stripe = 16;
    FILE *fp = csv(dir, "flash_array.csv", "members,qd,iops,x_one");
    printf("\narrays (64 KiB stripes), random 4 KiB reads, qd 32 per member:\n");
    double one = 0;
    for (unsigned mem = 1; mem <= 4; mem *= 2) {
        struct flash *f[4];
        uint64_t share = n / mem;
        for (unsigned i = 0; i < mem; i++) {
            struct flash_geom g = {0};
            f[i] = make(g, share);
            for (uint64_t l = 0; l < share; l++)
                flash_write(f[i], l, 0);
        }
        unsigned qd = 32 * mem;
        uint64_t slot[128], s = 5, reads = 100000, t0 = 1000000000000ull, last = 0;
        for (unsigned i = 0; i < qd; i++)
            slot[i] = t0;
        for (uint64_t r = 0; r < reads; r++) {
            unsigned m = 0;
            for (unsigned i = 1; i < qd; i++)
                m = slot[i] < slot[m] ? i : m;
            uint64_t b = rng_next(&s) % n, st = b / stripe;
            uint64_t l = st / mem * stripe + b % stripe;
            slot[m] = flash_read(f[st % mem], l, slot[m]).done_ns;
            last = slot[m] > last ? slot[m] : last;
        }
        double iops = (double)reads * 1e9 / (double)(last - t0);
        one = mem == 1 ? iops : one;
        printf("  %u members: %10.0f IOPS (x%.2f)\n", mem, iops, iops / one);
        fprintf(fp, "%u,%u,%.0f,%.3f\n", mem, qd, iops, iops / one);
        for (unsigned i = 0; i < mem; i++)
            flash_destroy(f[i]);
    }
    fclose(fp);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    bench_qd(dir);
    bench_waf(dir);
    bench_cliff(dir);
    bench_array(dir);
    bench_threads(dir);
    return 0;
}
