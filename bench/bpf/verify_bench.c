/*
 * bench/bpf/verify_bench.c - the "verifier" section of `make bench-bpf`:
 * how long the verifier takes on every program of the corpus
 * (the programs of tests/bpf/progs, compiled at build time), accepted or
 * rejected.
 *
 * Each program is loaded afresh and verified REPEAT times; the table
 * gives the best and the median wall time of vm_verify() alone, with the
 * instructions it processed and the states it stored. The target
 * is <= 10 ms per corpus program. Not a test: nothing asserts a time.
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

/* Times program i of the object at path; prints one row. */
static int time_prog(const char *path, const char *obj_name, unsigned i, uint64_t *worst)
{
    uint64_t t[REPEAT];
    struct vm_verify_result res;
    char err[512], name[VM_NAME_MAX] = "";
    uint32_t ninsns = 0;
    int rc = 0;
    for (int r = 0; r < REPEAT; r++) {
        struct vm_object *obj;
        if (vm_object_load_file(path, NULL, &obj, err, sizeof(err))) {
            fprintf(stderr, "bench-bpf: %s: %s\n", path, err);
            return -EINVAL;
        }
        struct vm_prog *p = vm_object_prog(obj, i);
        snprintf(name, sizeof(name), "%s", p->name);
        ninsns = p->ninsns;
        uint64_t t0 = now_ns();
        rc = vm_verify(p, NULL, &res);
        t[r] = now_ns() - t0;
        vm_object_free(obj);
    }
    qsort(t, REPEAT, sizeof(t[0]), cmp_u64);
    if (t[REPEAT / 2] > *worst)
        *worst = t[REPEAT / 2];
    printf("%-20s %-16s %6u %-9s %10llu %8llu %9.3f %9.3f\n", obj_name, name, ninsns,
           rc ? "rejected" : "verified", (unsigned long long)res.insns_processed,
           (unsigned long long)res.states, t[0] / 1e6, t[REPEAT / 2] / 1e6);
    return 0;
}

static int time_object(const char *file, uint64_t *worst)
{
    char path[4096], err[512];
    struct vm_object *obj;
    snprintf(path, sizeof(path), "%s/%s", CORPUS_DIR, file);
    if (vm_object_load_file(path, NULL, &obj, err, sizeof(err))) {
        fprintf(stderr, "bench-bpf: %s: %s\n", path, err);
        return -EINVAL;
    }
    unsigned n = vm_object_nprogs(obj);
    vm_object_free(obj);
    int rc = 0;
    for (unsigned i = 0; i < n && !rc; i++)
        rc = time_prog(path, file, i, worst);
    return rc;
}

/* The corpus objects, sorted by name. */
static int list_objects(char ***names, size_t *n)
{
    DIR *d = opendir(CORPUS_DIR);
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

int bench_verifier(void)
{
    char **names;
    size_t n;
    uint64_t worst = 0;
    int rc = list_objects(&names, &n);
    if (rc)
        return rc;
    printf("verifier: every corpus program (%s), %d runs each\n", CORPUS_DIR, REPEAT);
    printf("%-20s %-16s %6s %-9s %10s %8s %9s %9s\n", "object", "program", "insns", "verdict",
           "processed", "states", "best ms", "median ms");
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            rc = time_object(names[i], &worst);
        free(names[i]);
    }
    free(names);
    printf("(slowest median: %.3f ms; target <= 10 ms per program)\n\n", worst / 1e6);
    return rc;
}
