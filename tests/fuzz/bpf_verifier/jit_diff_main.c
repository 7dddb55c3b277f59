/*
 * tests/fuzz/bpf_verifier/jit_diff_main.c - the differential run of
 * fuzz_verifier.c without libFuzzer: feeds it inputs from a seeded PRNG
 * (so it builds with any compiler and runs in every `make test`). Each
 * input becomes a random program; accepted ones run in the interpreter's
 * checked and fast modes and as JIT code, and any difference aborts.
 *
 *   bpf_jit_diff [RUNS [SEED [SEEDS-DIR]]]     (defaults 20000, 1, none)
 *   bpf_jit_diff -f FILE                       (one input: a reproducer)
 *
 * Random bytes seldom make a program the verifier accepts, so most inputs
 * are files of SEEDS-DIR (inputs that do) with a few bytes changed.
 *
 * Exits 1 when too few programs reached the JIT comparison for the run to
 * mean anything (the generator or the verifier changed).
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/jit_x86_64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern unsigned long fuzz_jit_compared;

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define MAX_SEEDS 64

struct seed {
    uint8_t *d;
    size_t n;
};

/* Reads every regular file of dir (up to MAX_SEEDS); returns how many. */
static size_t read_seeds(const char *dir, struct seed *out)
{
    size_t k = 0;
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && k < MAX_SEEDS && (e = readdir(d))) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "rb") : NULL;
        if (!f)
            continue;
        out[k].d = malloc(2048);
        out[k].n = out[k].d ? fread(out[k].d, 1, 2048, f) : 0;
        fclose(f);
        if (out[k].n)
            k++;
        else
            free(out[k].d);
    }
    if (d)
        closedir(d);
    return k;
}

/* `bpf_jit_diff -f FILE`: runs the one input FILE holds (a reproducer;
 * FUZZ_VM_DUMP=1 prints its program and the verifier's log). */
static int run_file(const char *path)
{
    static uint8_t buf[2048];
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 2;
    }
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    printf("bpf_jit_diff: %s: no difference\n", path);
    return 0;
}

/* With BPF_JIT_DIFF_LAST=FILE, each input is written to FILE before it
 * runs: after an abort, FILE reproduces it (`bpf_jit_diff -f FILE`). */
static void save_last(const char *path, const uint8_t *d, size_t n)
{
    FILE *f = path ? fopen(path, "wb") : NULL;
    if (f) {
        fwrite(d, 1, n, f);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "-f") == 0)
        return run_file(argv[2]);
    const char *last = getenv("BPF_JIT_DIFF_LAST");
    unsigned long runs = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    static uint8_t buf[2048];

    static struct seed seeds[MAX_SEEDS];
    size_t nseeds = read_seeds(argc > 3 ? argv[3] : NULL, seeds);

    seed = seed * 0x9e3779b97f4a7c15ull + 1;
    for (unsigned long r = 0; r < runs; r++) {
        size_t len;
        if (nseeds && r % 8) {
            const struct seed *s = &seeds[next(&seed) % nseeds];
            len = s->n;
            memcpy(buf, s->d, len);
            for (unsigned m = 1 + next(&seed) % 4; m; m--)
                buf[next(&seed) % len] = (uint8_t)next(&seed);
        } else {
            len = 40 + next(&seed) % 120;   /* short ones verify more often */
            for (size_t k = 0; k < len; k++)
                buf[k] = (uint8_t)next(&seed);
        }
        if (len > 32 && buf[32] == 0xff)
            buf[32] = 0;   /* after the 32 rodata bytes: never the raw-instructions mode */
        save_last(last, buf, len);
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("bpf_jit_diff: %lu inputs, %lu runs compared between interpreter and JIT\n", runs,
           fuzz_jit_compared);
    if (vm_jit_available() && fuzz_jit_compared < runs / 200) {
        fprintf(stderr, "bpf_jit_diff: too few programs reached the JIT\n");
        return 1;
    }
    return 0;
}
