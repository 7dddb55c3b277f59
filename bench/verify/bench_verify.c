/*
 * bench/verify/bench_verify.c - verification time of eBPF objects.
 *
 * Usage: cisc-bench-verify OBJ.o... (directories are scanned for *.o).
 * Every program of every object is verified REPEAT times; the table shows
 * the median and the worst time, instructions, instructions processed and
 * states stored. Rejected programs are listed with their verdict. A
 * benchmark, not a test: nothing here fails on a time.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpf/loader.h"
#include "bpf/verifier.h"

#define REPEAT 21

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void bench_prog(const char *file, struct vm_prog *p)
{
    uint64_t t[REPEAT];
    struct vm_verify_result res;
    int rc = 0;
    for (int k = 0; k < REPEAT; k++) {
        rc = vm_verify(p, NULL, &res);
        t[k] = res.elapsed_ns;
    }
    qsort(t, REPEAT, sizeof(t[0]), cmp_u64);
    const char *base = strrchr(file, '/');
    printf("%-14s %-22s %6u %9llu %7llu %9.3f %9.3f  %s\n", base ? base + 1 : file, p->name,
           p->ninsns, (unsigned long long)res.insns_processed, (unsigned long long)res.states,
           t[REPEAT / 2] / 1e6, t[REPEAT - 1] / 1e6, rc == 0 ? "ok" : "rejected");
}

static void bench_file(const char *path)
{
    struct vm_object *obj;
    char err[256];
    if (vm_object_load_file(path, NULL, &obj, err, sizeof(err)) != 0) {
        printf("%s: %s\n", path, err);
        return;
    }
    for (unsigned i = 0; i < vm_object_nprogs(obj); i++)
        bench_prog(path, vm_object_prog(obj, i));
    vm_object_free(obj);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void bench_dir(const char *dir)
{
    DIR *d = opendir(dir);
    char *names[512];
    size_t n = 0;
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) && n < 512) {
        size_t len = strlen(e->d_name);
        if (len > 2 && strcmp(e->d_name + len - 2, ".o") == 0) {
            names[n] = malloc(strlen(dir) + len + 2);
            sprintf(names[n++], "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str);
    for (size_t k = 0; k < n; k++) {
        bench_file(names[k]);
        free(names[k]);
    }
}

int main(int argc, char **argv)
{
    printf("%-14s %-22s %6s %9s %7s %9s %9s\n", "object", "program", "insns", "processed",
           "states", "median ms", "max ms");
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            bench_dir(argv[i]);
        else
            bench_file(argv[i]);
    }
    return 0;
}
