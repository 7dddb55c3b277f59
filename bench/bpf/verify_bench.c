/*
 * bench/bpf/verify_bench.c - the "verifier" section of `make bench-bpf`:
 * how long the verifier takes on every program of the corpus
 * (the programs of tests/bpf/progs, compiled at build time), accepted or
 * rejected.
 *
 * Each program is loaded afresh and verified REPEAT times; the table
 * gives the best and the median wall time of vm_verify() alone, with the
 * instructions it processed and the states it stored. The target
 * is <= 10 ms per corpus program. A second table does the same for the
 * precision corpus (tests/bpf/precision), every program at -O1, -O2 and
 * -O3, with the ratio of each median to the 10 ms target, which holds
 * for rejections as well as acceptances. Not a test:
 * nothing asserts a time.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/loader.h"
#include "bpf/verifier.h"

#define REPEAT 7

int bench_verifier(void);

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct meas {
    char name[VM_NAME_MAX];
    uint32_t ninsns;
    int rc;
    uint64_t processed, states, best, median;
};

/* Verifies program i of the object at path REPEAT times (loaded afresh
 * each time): best and median wall time of vm_verify() alone. */
static int measure(const char *path, unsigned i, struct meas *m)
{
    uint64_t t[REPEAT];
    struct vm_verify_result res;
    char err[512];
    for (int r = 0; r < REPEAT; r++) {
        struct vm_object *obj;
        if (vm_object_load_file(path, NULL, &obj, err, sizeof(err))) {
            fprintf(stderr, "bench-bpf: %s: %s\n", path, err);
            return -EINVAL;
        }
        struct vm_prog *p = vm_object_prog(obj, i);
        snprintf(m->name, sizeof(m->name), "%s", p->name);
        m->ninsns = p->ninsns;
        uint64_t t0 = now_ns();
        m->rc = vm_verify(p, NULL, &res);
        t[r] = now_ns() - t0;
        vm_object_free(obj);
    }
    qsort(t, REPEAT, sizeof(t[0]), cmp_u64);
    m->processed = res.insns_processed;
    m->states = res.states;
    m->best = t[0];
    m->median = t[REPEAT / 2];
    return 0;
}

/* Times program i of the object at path; prints one row. */
static int time_prog(const char *path, const char *obj_name, unsigned i, uint64_t *worst)
{
    struct meas m;
    int rc = measure(path, i, &m);
    if (rc)
        return rc;
    if (m.median > *worst)
        *worst = m.median;
    printf("%-20s %-16s %6u %-9s %10llu %8llu %9.3f %9.3f\n", obj_name, m.name, m.ninsns,
           m.rc ? "rejected" : "verified", (unsigned long long)m.processed,
           (unsigned long long)m.states, m.best / 1e6, m.median / 1e6);
    return 0;
}

static unsigned count_progs(const char *path)
{
    char err[512];
    struct vm_object *obj;
    if (vm_object_load_file(path, NULL, &obj, err, sizeof(err))) {
        fprintf(stderr, "bench-bpf: %s: %s\n", path, err);
        return 0;
    }
    unsigned n = vm_object_nprogs(obj);
    vm_object_free(obj);
    return n;
}

static int time_object(const char *file, uint64_t *worst)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", CORPUS_DIR, file);
    unsigned n = count_progs(path);
    int rc = n ? 0 : -EINVAL;
    for (unsigned i = 0; i < n && !rc; i++)
        rc = time_prog(path, file, i, worst);
    return rc;
}

/* The objects of a folder, sorted by name. */
static int list_objects(const char *dir, char ***names, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    if (!d)
        return -errno;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".o"))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 32;
            char **p = realloc(*names, cap * sizeof(*p));
            if (!p)
                break;
            *names = p;
        }
        (*names)[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(*names, *n, sizeof(**names), cmp_name);
    return 0;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* One row of the precision table: program i of kind/file at -O1..-O3. */
static int precision_row(const char *kind, const char *file, unsigned i, uint64_t worst[3],
                         uint64_t worst_rej[3], unsigned *over)
{
    struct meas m[3];
    for (int o = 0; o < 3; o++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/O%d/%s/%s", PRECISION_DIR, o + 1, kind, file);
        int rc = measure(path, i, &m[o]);
        if (rc)
            return rc;
        /* accepted and rejected apart: a rejection may run the second,
         * no-join exploration to its (smaller) budget */
        uint64_t *w = m[o].rc ? &worst_rej[o] : &worst[o];
        if (m[o].median > *w)
            *w = m[o].median;
        *over += m[o].median > 10000000;
    }
    printf("%-6s %-22s", kind, m[0].name);
    for (int o = 0; o < 3; o++)
        printf(" %-3s %8.3f %5.2f", m[o].rc ? "rej" : "ok", m[o].median / 1e6,
               m[o].median / 1e7);
    printf("\n");
    return 0;
}

/* The precision corpus (tests/bpf/precision): every program at -O1, -O2
 * and -O3, median verification time and its ratio to the 10 ms target. */
static int bench_precision(void)
{
    uint64_t worst[3] = {0, 0, 0}, worst_rej[3] = {0, 0, 0};
    unsigned over = 0, rows = 0;
    int rc = 0;
    printf("verifier: precision corpus (%s), median of %d runs; ratio = median / 10 ms "
           "target\n", PRECISION_DIR, REPEAT);
    printf("%-6s %-22s %-3s %8s %5s %-3s %8s %5s %-3s %8s %5s\n", "kind", "program", "-O1",
           "ms", "ratio", "-O2", "ms", "ratio", "-O3", "ms", "ratio");
    for (int k = 0; k < 2 && !rc; k++) {
        const char *kind = k ? "unsafe" : "safe";
        char dir[2048], **names;
        size_t n;
        snprintf(dir, sizeof(dir), "%s/O2/%s", PRECISION_DIR, kind);
        rc = list_objects(dir, &names, &n);
        for (size_t f = 0; f < n && !rc; f++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
            unsigned np = count_progs(path);
            for (unsigned i = 0; i < np && !rc; i++, rows++)
                rc = precision_row(kind, names[f], i, worst, worst_rej, &over);
        }
        if (!rc)
            free_names(names, n);
    }
    printf("(%u programs; slowest median of the accepted ones -O1 %.3f ms, -O2 %.3f ms, -O3 "
           "%.3f ms;\n of the rejected ones -O1 %.3f ms, -O2 %.3f ms, -O3 %.3f ms; %u "
           "verdicts over the 10 ms target)\n\n", rows, worst[0] / 1e6, worst[1] / 1e6,
           worst[2] / 1e6, worst_rej[0] / 1e6, worst_rej[1] / 1e6, worst_rej[2] / 1e6, over);
    return rc;
}

int bench_verifier(void)
{
    char **names;
    size_t n;
    uint64_t worst = 0;
    int rc = list_objects(CORPUS_DIR, &names, &n);
    if (rc)
        return rc;
    printf("verifier: every corpus program (%s), %d runs each\n", CORPUS_DIR, REPEAT);
    printf("%-20s %-16s %6s %-9s %10s %8s %9s %9s\n", "object", "program", "insns", "verdict",
           "processed", "states", "best ms", "median ms");
    for (size_t i = 0; i < n && !rc; i++)
        rc = time_object(names[i], &worst);
    free_names(names, n);
    printf("(slowest median: %.3f ms; target <= 10 ms per program)\n\n", worst / 1e6);
    return rc ? rc : bench_precision();
}
