/*
 * bench/fs/mdstorm.c - metadata storm: create, stat and unlink N files in
 * one directory, timing each phase. Used by `make bench-fs` on the mount
 * and on tmpfs.
 *
 * usage: cisc-mdstorm DIR [N]     (N defaults to 10000)
 * prints: "files N create_s X stat_s Y unlink_s Z total_s T ops_per_s R"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void name_of(char *buf, size_t size, const char *dir, long i)
{
    snprintf(buf, size, "%s/storm/file-%08ld", dir, i);
}

static int phase(const char *dir, long n, int which)
{
    char path[4096];
    struct stat st;
    for (long i = 0; i < n; i++) {
        name_of(path, sizeof(path), dir, i);
        int r = 0;
        if (which == 0) {
            int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
            r = fd < 0 ? -1 : close(fd);
        } else if (which == 1) {
            r = stat(path, &st);
        } else {
            r = unlink(path);
        }
        if (r) {
            fprintf(stderr, "cisc-mdstorm: %s: %s\n", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cisc-mdstorm DIR [N]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 10000;
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/storm", argv[1]);
    if (mkdir(sub, 0755) && errno != EEXIST) {
        fprintf(stderr, "cisc-mdstorm: %s: %s\n", sub, strerror(errno));
        return 1;
    }
    double t[4];
    t[0] = now();
    for (int p = 0; p < 3; p++) {
        if (phase(argv[1], n, p))
            return 1;
        t[p + 1] = now();
    }
    rmdir(sub);
    double total = t[3] - t[0];
    printf("files %ld create_s %.4f stat_s %.4f unlink_s %.4f total_s %.4f ops_per_s %.0f\n", n,
           t[1] - t[0], t[2] - t[1], t[3] - t[2], total, 3.0 * (double)n / total);
    return 0;
}
