/*
 * bench/flash/flash_bench.c - the NAND flash model (device/media/flash.h)
 * on its own, in simulated time: WAF against over-provisioning beside
 * Desnoyers' curve, random-read IOPS against queue depth, the GC cliff of
 * random writes on a full device (throughput and p99 per interval), the
 * simulator's own CPU cost per page (thread CPU time), arrays of 1, 2, 4
 * members, the FTL's device cores 1..4, partitioned beside single
 * lock (flash_cores.h: real core threads fed through lock-free rings,
 * their FTL time stretched by the core speed and slept; wall clock), and
 * what the device's two FTL forms (flash_media.h invariant 10: locks, or
 * the FTL cores fed through rings) cost the host per media call (real
 * threads calling the media seam; wall clock and CPU time).
 * Prints the model and writes CSV files into the directory given as
 * argv[1]; further arguments pick sections and options (main). Asserts
 * nothing.
 */
#include "device/media/flash.h"
#include "device/media/flash_cores.h"
#include "device/media/flash_media.h"
#include "device/media/media.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Random reads of one model (or of an array's members, 64 KiB stripes
 * round-robin) for closed_loop. */
struct reader {
    struct flash **f;
    unsigned members;
    uint64_t n, seed;
};

static uint64_t read_at(struct reader *r, uint64_t at)
{
    uint64_t b = rng_next(&r->seed) % r->n, st = b / 16;   /* 1 member: page b */
    return flash_read(r->f[st % r->members], st / r->members * 16 + b % 16, at).done_ns;
}

/* A closed loop of qd reads in simulated time from t0: each slot issues
 * its next read when its previous one completes. Returns the last
 * completion. */
static uint64_t closed_loop(struct reader *r, unsigned qd, uint64_t reads, uint64_t t0)
{
    uint64_t slot[256], last = t0;
    for (unsigned i = 0; i < qd; i++)
        slot[i] = t0;
    for (uint64_t k = 0; k < reads; k++) {
        unsigned m = 0;
        for (unsigned i = 1; i < qd; i++)
            m = slot[i] < slot[m] ? i : m;
        slot[m] = read_at(r, slot[m]);
        last = slot[m] > last ? slot[m] : last;
    }
    return last;
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
           "pages, op %u/1000, gc %s, read %llu ns, prog %llu ns, erase %llu ns, xfer %llu ns, "
           "ftl %llu ns\n",
           g->channels, g->dies_per_channel, g->blocks_per_die, g->pages_per_block,
           (unsigned)n, g->op_permille, g->gc_policy ? "cost-benefit" : "greedy",
           (unsigned long long)g->t_read_ns, (unsigned long long)g->t_prog_ns,
           (unsigned long long)g->t_erase_ns, (unsigned long long)g->t_xfer_ns,
           (unsigned long long)g->t_ftl_ns);
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
 * issues its next read when its previous one completes. Beside it the
 * closed-network expectation: N requests over M dies placed at random
 * leave (M-1)/(N+M-1) of the dies idle, so IOPS ~ N/(N+M-1) of M dies'
 * rate, a die serving a read in t_read + t_xfer (it holds the page until
 * the channel has sent it). */
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
    double die_rate = dies * 1e9 / (double)(k->t_read_ns + k->t_xfer_ns);
    FILE *fp = csv(dir, "flash_qd.csv", "qd,iops,ideal,ratio,expected,expected_ratio");
    printf("\nrandom 4 KiB read IOPS vs queue depth (ideal = dies / t_read = %.0f; "
           "expected = N/(N+M-1) x dies/(t_read+t_xfer)):\n", ideal);
    struct reader rd = {&f, 1, n, 7};
    for (unsigned qd = 1; qd <= 256; qd *= 2) {
        uint64_t reads = 100000, last = closed_loop(&rd, qd, reads, t0);
        double iops = (double)reads * 1e9 / (double)(last - t0);
        double expect = die_rate * qd / (qd + dies - 1);
        printf("  qd %3u  %10.0f IOPS  %.2f of ideal   expected %10.0f (%.2f)\n", qd, iops,
               iops / ideal, expect, expect / ideal);
        fprintf(fp, "%u,%.0f,%.0f,%.4f,%.0f,%.4f\n", qd, iops, ideal, iops / ideal, expect,
                expect / ideal);
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

/* ---- FTL cores: partitioned vs single lock (flash_cores.h) ---- */

struct opts {
    double core_speed;      /* --core-speed: device cores' slowdown */
    unsigned rounds;        /* --rounds: each point is the best of these */
    double secs;            /* --secs: wall time per run */
    unsigned ring;          /* --ring: entries per core ring */
    uint64_t ftl_ns;        /* --ftl-ns: modelled FTL time per sub-request */
};

struct cores_run {
    double mops;            /* sub-requests per microsecond of wall time */
    double cpu_ns;          /* cores' measured CPU per sub-request */
    double host_cpu;        /* process CPU seconds per wall second */
};

static uint64_t cpu_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fills core k's room with random reads of its own stripes (a uniform
 * random page, given that it is k's), issued now. */
static unsigned fill_core(struct flash_cores *c, unsigned k, unsigned cores, uint64_t n,
                          uint64_t *seed, uint32_t *tag)
{
    struct flash_sub b[256];
    unsigned room = flash_cores_room(c, k), stripes = (unsigned)(n / FLASH_DEF_STRIPE / cores);
    room = room < 256 ? room : 256;
    uint64_t now = wall_ns();
    for (unsigned i = 0; i < room; i++) {
        uint64_t st = (rng_next(seed) % stripes) * cores + k;
        b[i] = (struct flash_sub){.page = st * FLASH_DEF_STRIPE + rng_next(seed) % FLASH_DEF_STRIPE,
                                  .at_ns = now, .op = FLASH_SUB_READ, .tag = (*tag)++};
    }
    return flash_cores_submit(c, b, room);
}

/* One run: `cores` FTL cores (single lock or partitioned) kept busy by a
 * controller for o->secs of wall time. */
static struct cores_run run_cores(unsigned cores, bool single, uint64_t ftl_ns,
                                  const struct opts *o)
{
    const uint64_t n = 262144;   /* 1 GiB */
    struct flash_geom g = {.channels = 12, .dies_per_channel = 4,
                           .partitions = single ? 1 : cores};
    struct flash *f = make(g, n);
    for (uint64_t l = 0; l < n; l++)
        flash_write(f, l, 0);
    struct flash_cores_cfg cfg = {.cores = cores, .single_lock = single,
                                  .core_speed = o->core_speed, .ring_entries = o->ring,
                                  .ftl_ns = ftl_ns};
    struct flash_cores *c;
    char err[128];
    if (flash_cores_start(f, &cfg, err, sizeof(err), &c)) {
        fprintf(stderr, "flash_bench: %s\n", err);
        exit(1);
    }
    struct flash_sub got[256];
    uint64_t seed = 77 + cores, done = 0, t0 = wall_ns(), c0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t until = t0 + (uint64_t)(o->secs * 1e9);
    uint32_t tag = 0;
    while (wall_ns() < until) {
        for (unsigned k = 0; k < cores; k++)
            fill_core(c, k, cores, n, &seed, &tag);
        unsigned m = flash_cores_reap(c, got, 256);
        done += m;
        if (!m)
            flash_cores_wait(c);
    }
    uint64_t wall = wall_ns() - t0, host = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
    struct flash_core_stats st[4];
    flash_cores_stop(c, st);
    uint64_t served = 0, cpu = 0;
    for (unsigned k = 0; k < cores; k++) {
        served += st[k].served;
        cpu += st[k].cpu_ns;
    }
    flash_destroy(f);
    return (struct cores_run){(double)done * 1e3 / (double)wall,
                              served ? (double)cpu / (double)served : 0,
                              (double)host / (double)wall};
}

/* FTL throughput (random reads, closed loop) of 1..4 device cores:
 * partitioned beside single lock, single and partitioned runs alternating,
 * each point the best of o->rounds. ftl_ns: the modelled FTL time per
 * sub-request, or 0 for core speed x the measured CPU time. */
static void bench_cores(FILE *fp, uint64_t ftl_ns, const struct opts *o)
{
    if (ftl_ns)
        printf("\n  FTL time per sub-request modelled: %llu ns of device core (ideal rate "
               "%.3f Mops/s a core)\n", (unsigned long long)ftl_ns, 1e3 / (double)ftl_ns);
    else
        printf("\n  FTL time per sub-request: core speed %.1f x the core's measured CPU time\n",
               o->core_speed);
    printf("  cores  single lock Mops/s      partitioned Mops/s     ideal (single/part.)  "
           "core CPU ns/op  host CPU/s\n");
    struct cores_run one[2] = {{0}};
    for (unsigned cores = 1; cores <= 4; cores++) {
        struct cores_run best[2] = {{0}};
        for (unsigned r = 0; r < o->rounds; r++)
            for (int p = 0; p < 2; p++) {
                struct cores_run x = run_cores(cores, p == 0, ftl_ns, o);
                if (x.mops > best[p].mops)
                    best[p] = x;
            }
        if (cores == 1) {
            one[0] = best[0];
            one[1] = best[1];
        }
        printf("  %5u  %8.3f (x%.2f)        %8.3f (x%.2f)       x1 / x%u             "
               "%5.0f / %5.0f    %.2f / %.2f\n",
               cores, best[0].mops, best[0].mops / one[0].mops, best[1].mops,
               best[1].mops / one[1].mops, cores, best[0].cpu_ns, best[1].cpu_ns,
               best[0].host_cpu, best[1].host_cpu);
        fprintf(fp, "%s,%u,%.4f,%.3f,%.4f,%.3f,%.0f,%.0f,%.3f,%.3f\n",
                ftl_ns ? "modelled" : "measured", cores, best[0].mops,
                best[0].mops / one[0].mops, best[1].mops, best[1].mops / one[1].mops,
                best[0].cpu_ns, best[1].cpu_ns, best[0].host_cpu, best[1].host_cpu);
    }
}

/* The same question in the device's own model (flash.h t_ftl_ns, no
 * threads): a closed loop of 256 random reads in simulated time, with one
 * FTL timeline (single lock) or one per partition (a core each). */
static double sim_cores(unsigned cores, bool single, uint64_t ftl_ns)
{
    const uint64_t n = 262144;
    struct flash_geom g = {.channels = 12, .dies_per_channel = 4,
                           .partitions = single ? 1 : cores, .t_ftl_ns = ftl_ns};
    struct flash *f = make(g, n);
    for (uint64_t l = 0; l < n; l++)
        flash_write(f, l, 0);
    struct reader rd = {&f, 1, n, 5};
    uint64_t reads = 200000, t0 = 1000000000000ull, last = closed_loop(&rd, 256, reads, t0);
    flash_destroy(f);
    return (double)reads * 1e3 / (double)(last - t0);
}

static void bench_cores_sim(FILE *fp, uint64_t ftl_ns)
{
    printf("\n  the device's model in simulated time (flash.h t_ftl_ns %llu, one FTL timeline "
           "per partition; no threads):\n"
           "  cores  single lock Mops/s      partitioned Mops/s\n",
           (unsigned long long)ftl_ns);
    double one[2] = {0, 0};
    for (unsigned cores = 1; cores <= 4; cores++) {
        double x[2] = {sim_cores(cores, true, ftl_ns), sim_cores(cores, false, ftl_ns)};
        if (cores == 1) {
            one[0] = x[0];
            one[1] = x[1];
        }
        printf("  %5u  %8.3f (x%.2f)        %8.3f (x%.2f)\n", cores, x[0], x[0] / one[0], x[1],
               x[1] / one[1]);
        fprintf(fp, "simulated,%u,%.4f,%.3f,%.4f,%.3f,0,0,0,0\n", cores, x[0], x[0] / one[0],
                x[1], x[1] / one[1]);
    }
}

static void bench_cores_both(const char *dir, const struct opts *o)
{
    FILE *fp = csv(dir, "flash_cores.csv",
                   "ftl_time,cores,single_lock_mops,single_x,partitioned_mops,partitioned_x,"
                   "single_cpu_ns,partitioned_cpu_ns,single_host_cpu,partitioned_host_cpu");
    printf("\nFTL cores (ScalaCache 5.2): random 4 KiB reads, 12 ch x 4 dies, 1 GiB; "
           "sub-requests handed to real core threads\n"
           "  through lock-free rings of %u; each batch takes its FTL time on the core's "
           "timeline (slept until, never spun);\n"
           "  best of %u runs of %.1f s, wall clock\n", o->ring, o->rounds, o->secs);
    bench_cores(fp, o->ftl_ns, o);
    bench_cores(fp, 0, o);
    bench_cores_sim(fp, o->ftl_ns);
    fclose(fp);
}

/* ---- the simulator's own CPU cost per page ---- */

/* Thread CPU time per page operation of the model alone (one thread,
 * default geometry, 1 GiB): random reads of a full device, sequential
 * writes of a fresh one, random overwrites at steady state (with GC). */
static void bench_cpu(const char *dir)
{
    const uint64_t n = 262144, ops = 2000000;
    FILE *fp = csv(dir, "flash_cpu.csv", "workload,pages,cpu_ns_per_page");
    printf("\nsimulator CPU per 4 KiB page (model alone, one thread, thread CPU time):\n");
    struct flash_geom g = {0};
    struct flash *f = make(g, n);
    uint64_t s = 3, t = 0, c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t l = 0; l < n; l++)
        flash_write(f, l, t += 1000);
    uint64_t c1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < ops; i++)
        flash_read(f, rng_next(&s) % n, t += 1000);
    uint64_t c2 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < 2 * n; i++)       /* warm-up to steady state */
        flash_write(f, rng_next(&s) % n, t += 1000);
    uint64_t c3 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < ops; i++)
        flash_write(f, rng_next(&s) % n, t += 1000);
    uint64_t c4 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    struct flash_stats st;
    flash_stats(f, &st);
    const char *name[] = {"sequential write, fresh", "random read, full", "random write, steady"};
    double per[] = {(double)(c1 - c0) / (double)n, (double)(c2 - c1) / (double)ops,
                    (double)(c4 - c3) / (double)ops};
    uint64_t pages[] = {n, ops, ops};
    for (int i = 0; i < 3; i++) {
        printf("  %-24s %8.0f ns/page  (%llu pages)\n", name[i], per[i],
               (unsigned long long)pages[i]);
        fprintf(fp, "%s,%llu,%.1f\n", name[i], (unsigned long long)pages[i], per[i]);
    }
    printf("  (steady state WAF %.2f: GC moves included; target <= 1000 ns/page)\n", st.waf);
    fclose(fp);
    flash_destroy(f);
}

/* Arrays of 1, 2, 4 members (64 KiB stripes, each member the default
 * geometry for its share): random-read IOPS at queue depth 32 per member. */
static void bench_array(const char *dir)
{
    const uint64_t n = 262144;
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
        struct reader rd = {f, mem, n, 5};
        uint64_t reads = 100000, t0 = 1000000000000ull, last = closed_loop(&rd, qd, reads, t0);
        double iops = (double)reads * 1e9 / (double)(last - t0);
        one = mem == 1 ? iops : one;
        printf("  %u members: %10.0f IOPS (x%.2f)\n", mem, iops, iops / one);
        fprintf(fp, "%u,%u,%.0f,%.3f\n", mem, qd, iops, iops / one);
        for (unsigned i = 0; i < mem; i++)
            flash_destroy(f[i]);
    }
    fclose(fp);
}

/* ---- the device's FTL forms: host cost per media call ---- */

struct forms_worker {
    struct media *m;
    uint64_t blocks, seed, calls;
    uint32_t pages;
    uint64_t until_ns;
    int err;
};

static void *forms_run(void *arg)
{
    struct forms_worker *w = arg;
    char *buf = malloc((size_t)w->pages * MEDIA_BLOCK_SIZE);
    while (buf && wall_ns() < w->until_ns) {
        for (int i = 0; i < 64; i++) {
            uint64_t b = rng_next(&w->seed) % (w->blocks - w->pages);
            w->err |= media_read(w->m, b, w->pages, buf);
            (void)flash_media_deadline_take(NULL);
        }
        w->calls += 64;
    }
    free(buf);
    return NULL;
}

struct forms_run {
    double calls_us;        /* media calls per microsecond, all threads */
    double cpu_ns;          /* process CPU per call */
};

/* threads threads reading `pages`-page runs at random for secs through a
 * flash media of the given form (4 partitions; the lower media an image in
 * /dev/shm, so the page cache serves its bytes). */
static struct forms_run run_forms(const char *img, enum flash_ftl_form form, unsigned threads,
                                  uint32_t pages, double secs)
{
    const uint64_t blocks = 65536;
    struct media *lower, *m;
    char err[160];
    struct flash_geom g = {.channels = 8, .dies_per_channel = 4, .partitions = 4, .ftl = form};
    unlink(img);
    if (media_create_file(img, blocks * MEDIA_BLOCK_SIZE, 0, &lower) ||
        flash_media_open(lower, &g, err, sizeof(err), &m)) {
        fprintf(stderr, "flash_bench: cannot open a flash media on %s\n", img);
        exit(1);
    }
    struct forms_worker w[8];
    pthread_t th[8];
    uint64_t t0 = wall_ns(), c0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), calls = 0;
    for (unsigned i = 0; i < threads; i++) {
        w[i] = (struct forms_worker){m, blocks, 11 + i, 0, pages, t0 + (uint64_t)(secs * 1e9), 0};
        pthread_create(&th[i], NULL, forms_run, &w[i]);
    }
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        calls += w[i].calls;
    }
    uint64_t wall = wall_ns() - t0, cpu = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
    media_close(m);
    unlink(img);
    char state[4200];
    snprintf(state, sizeof(state), "%s.ftl", img);
    unlink(state);
    return (struct forms_run){(double)calls * 1e3 / (double)wall,
                              calls ? (double)cpu / (double)calls : 0};
}

/* Locks beside cores, alternating, best of o->rounds, for 1, 2, 4 caller
 * threads and calls of 1 and 32 pages. */
static void bench_forms(const char *dir, const struct opts *o)
{
    FILE *fp = csv(dir, "flash_forms.csv",
                   "threads,pages,locks_kcalls_s,locks_cpu_ns,cores_kcalls_s,cores_cpu_ns,ratio");
    char img[256];
    snprintf(img, sizeof(img), "/dev/shm/cisc-bench-flash-forms-%d.img", (int)getpid());
    printf("\nthe device's FTL forms (flash_media.h 10), host cost of a media read call, 8 ch x 4 "
           "dies, 4 partitions, 256 MiB in /dev/shm;\n  locks: the caller takes the partition "
           "lock; cores: 4 FTL core threads, pages handed over through their rings;\n  best of "
           "%u runs of %.1f s, alternating, wall clock and process CPU time\n"
           "  threads pages   locks kcalls/s  CPU ns/call   cores kcalls/s  CPU ns/call   "
           "cores/locks\n", o->rounds, o->secs);
    static const unsigned nthreads[] = {1, 2, 4};
    static const uint32_t npages[] = {1, 32};
    for (int pi = 0; pi < 2; pi++)
        for (int ti = 0; ti < 3; ti++) {
            struct forms_run best[2] = {{0, 0}, {0, 0}};
            for (unsigned r = 0; r < o->rounds; r++)
                for (int f = 0; f < 2; f++) {
                    struct forms_run x = run_forms(img, (enum flash_ftl_form)f, nthreads[ti],
                                                   npages[pi], o->secs);
                    if (x.calls_us > best[f].calls_us)
                        best[f] = x;
                }
            printf("  %7u %5u   %14.1f  %11.0f   %14.1f  %11.0f   x%.2f\n", nthreads[ti],
                   npages[pi], best[0].calls_us * 1e3, best[0].cpu_ns, best[1].calls_us * 1e3,
                   best[1].cpu_ns, best[1].calls_us / best[0].calls_us);
            fprintf(fp, "%u,%u,%.1f,%.0f,%.1f,%.0f,%.3f\n", nthreads[ti], npages[pi],
                    best[0].calls_us * 1e3, best[0].cpu_ns, best[1].calls_us * 1e3, best[1].cpu_ns,
                    best[1].calls_us / best[0].calls_us);
        }
    fclose(fp);
}

static bool want(int argc, char **argv, const char *name)
{
    bool any = false;
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-') {
            i++;
            continue;
        }
        any = true;
        if (!strcmp(argv[i], name))
            return true;
    }
    return !any;
}

static double opt(int argc, char **argv, const char *name, double def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return atof(argv[i + 1]);
    return def;
}

/* usage: cisc-bench-flash DIR [qd|waf|cliff|array|cores|cpu|forms ...]
 *        [--core-speed S] [--rounds R] [--secs T] [--ring N] [--ftl-ns T] */
int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    struct opts o = {opt(argc, argv, "--core-speed", 32.0),
                     (unsigned)opt(argc, argv, "--rounds", 3), opt(argc, argv, "--secs", 1.0),
                     (unsigned)opt(argc, argv, "--ring", 16384),
                     (uint64_t)opt(argc, argv, "--ftl-ns", 4000)};
    if (!(o.core_speed >= 1.0) || !o.rounds || !(o.secs > 0) || !o.ftl_ns) {
        fprintf(stderr, "flash_bench: --core-speed >= 1, --rounds >= 1, --secs > 0, "
                        "--ftl-ns > 0\n");
        return 2;
    }
    if (want(argc, argv, "qd"))
        bench_qd(dir);
    if (want(argc, argv, "waf"))
        bench_waf(dir);
    if (want(argc, argv, "cliff"))
        bench_cliff(dir);
    if (want(argc, argv, "array"))
        bench_array(dir);
    if (want(argc, argv, "cpu"))
        bench_cpu(dir);
    if (want(argc, argv, "cores"))
        bench_cores_both(dir, &o);
    if (want(argc, argv, "forms"))
        bench_forms(dir, &o);
    return 0;
}
