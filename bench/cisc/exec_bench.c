/*
 * bench/cisc/exec_bench.c - cost of the fused-op executor alone: the
 * engine runs vectors in process (fop_exec, no queue pair, no link) on
 * StorageFS over a RAM medium, one thread, and the same sequences as
 * engine RISC commands for comparison. Shows what a fused op costs inside
 * the device, apart from the transport. Prints ns per op. Not a test.
 *
 * The medium is RAM by default; pread or mmap use an image file in
 * $TMPDIR through the file backend or its mapped variant (media_mmap.h).
 * The RAM medium's memory for the blocks the run will write is taken and
 * touched before the clock starts (media_fault_prefault): the first touch
 * of fresh memory (the kernel zeroing it, on a VM the host backing it)
 * costs more than the op, and would be measured instead of the executor.
 *
 *   usage: cisc-bench-exec [OPS] [acw|rmw|all] [ROUNDS] [ram|pread|mmap]
 */
#include "common/crc32c.h"
#include "device/engine/fused/fused.h"
#include "device/media/media_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A measurement: wall and process CPU ns per op, best (lowest) so far. */
struct fig {
    double wall, cpu;
};

struct timer {
    double w0, c0;
};

static struct timer timer_start(void)
{
    return (struct timer){ clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID) };
}

static void timer_stop(const struct timer *t, unsigned ops, struct fig *best)
{
    double w = (clock_ns(CLOCK_MONOTONIC) - t->w0) / ops;
    double c = (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - t->c0) / ops;
    if (best->wall == 0 || w < best->wall)
        best->wall = w;
    if (best->cpu == 0 || c < best->cpu)
        best->cpu = c;
}

static struct wire_step step(uint8_t kind)
{
    struct wire_step s = { .kind = kind, .in_step = WIRE_NO_STEP, .in2_step = WIRE_NO_STEP,
                           .file_step = WIRE_NO_STEP };
    return s;
}

/* Runs a vector of n steps; returns its status. */
static int64_t run(struct engine *e, struct wire_step *st, unsigned n, struct eng_arena *a)
{
    static struct eng_cisc v;
    struct fop_limits lim;
    struct eng_cred root = { .ngroups = -1 };
    eng_fop_limits(e, &lim);
    int r = fop_decode(&v, st, n, a, &lim, NULL);
    int64_t s = r ? r : fop_exec(e, &root, &v);
    fop_release(&v);
    return s;
}

static uint64_t open_fh(struct engine *e, const char *name, uint32_t flags)
{
    struct eng_cred root = { .ngroups = -1 };
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_CREATE, &root);
    c.ino = SFS_ROOT_INO;
    c.name = name;
    c.mode = 0644;
    c.flags = flags;
    if (eng_call(e, &c) < 0) {
        fprintf(stderr, "create %s failed\n", name);
        exit(1);
    }
    return c.out_fh;
}

static int64_t risc(struct engine *e, unsigned op, uint64_t fh, uint64_t off, const void *in,
                    void *out, size_t size)
{
    struct eng_cred root = { .ngroups = -1 };
    struct eng_cmd c;
    eng_cmd_init(&c, op, &root);
    c.fh = fh;
    c.off = off;
    c.in = in;
    c.out = out;
    c.size = size;
    return eng_call(e, &c);
}

/* A formatted 4 GiB medium: RAM (*m is the disk's other handle, closed
 * last), or an image file in $TMPDIR (its path in img) opened with
 * pread/pwrite or mapped (*m NULL). *h is the handle to mount. */
static int open_medium(const char *kind, char *img, struct media **m, struct media **h)
{
    struct sfs_mkfs_opts mo = { 0 };
    uint64_t nblk = 1u << 20;
    img[0] = '\0';
    if (!strcmp(kind, "ram"))
        return media_fault_create(nblk, m) || sfs_mkfs(*m, &mo) || media_fault_open_again(*m, h);
    unsigned flags = !strcmp(kind, "mmap") ? MEDIA_MMAP : 0;
    if (!flags && strcmp(kind, "pread")) {
        fprintf(stderr, "unknown medium %s (ram, pread or mmap)\n", kind);
        return -EINVAL;
    }
    const char *dir = getenv("TMPDIR");
    snprintf(img, 4096, "%s/cisc-bench-exec-%d.img", dir ? dir : "/tmp", (int)getpid());
    struct media *f;
    int r = media_create_file(img, nblk * MEDIA_BLOCK_SIZE, 0, &f);
    if (!r) {
        r = sfs_mkfs(f, &mo);
        media_close(f);
    }
    return r ? r : media_open_file(img, flags, h);
}

int main(int argc, char **argv)
{
    unsigned ops = argc > 1 ? (unsigned)atoi(argv[1]) : 50000;
    const char *wl = argc > 2 ? argv[2] : "all";
    unsigned rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 3;
    bool do_acw = !strcmp(wl, "all") || !strcmp(wl, "acw");
    bool do_rmw = !strcmp(wl, "all") || !strcmp(wl, "rmw");
    if (!ops || !rounds || (!do_acw && !do_rmw)) {
        fprintf(stderr, "usage: cisc-bench-exec [OPS] [acw|rmw|all] [ROUNDS] [ram|pread|mmap]\n");
        return 1;
    }
    const char *medium = argc > 4 ? argv[4] : "ram";
    struct media *m = NULL, *h;
    struct sfs *fs;
    struct engine *e;
    struct sfs_mount_opts so = { 0 };
    struct eng_config cfg = { .cores = 2, .sched = "fifo", .direct = true };
    char img[4096];
    if (open_medium(medium, img, &m, &h) || sfs_mount(h, &so, &fs) || eng_create(fs, &cfg, &e))
        return 1;
    static uint8_t arena[1 << 20];
    struct eng_arena a = { arena, sizeof(arena) };
    memset(arena, 'x', sizeof(arena));
    uint64_t log = open_fh(e, "log", O_RDWR | O_APPEND);
    uint64_t blk = open_fh(e, "blk", O_RDWR);
    for (unsigned i = 0; i < 4096; i++)   /* a 16 MiB file for read-modify-write */
        risc(e, ENG_OP_WRITE, blk, (uint64_t)i * 4096, arena, NULL, 4096);
    if (m) {
        /* New blocks the run writes: the log's (fused and RISC appends of
         * 4100 bytes), a second copy of the rmw file's blocks and the
         * journal's until a flush, and room for metadata. */
        uint64_t appends = do_acw ? 2ull * ops * rounds : 0;
        uint64_t nb = appends + appends / 64 + (do_rmw ? 2 * 4096 : 0) + 16384;
        if (media_fault_prefault(m, nb))
            fprintf(stderr, "cisc-bench-exec: prefault of %llu MiB failed; first touch is "
                            "measured\n", (unsigned long long)(nb / 256));
    }

    /* append-CRC-write: append(4 KiB), crc32c, append(crc) */
    struct wire_step acw[3] = { step(WIRE_STEP_APPEND), step(WIRE_STEP_CRC32C),
                                step(WIRE_STEP_APPEND) };
    acw[0].flags = WIRE_STEP_F_FH, acw[0].fh = log, acw[0].addr = 0, acw[0].alen = 4096;
    acw[1].addr = 0, acw[1].alen = 4096;
    acw[2].flags = WIRE_STEP_F_FH, acw[2].fh = log, acw[2].in_step = 1;
    /* read-modify-write of a random block */
    struct wire_step rmw[3] = { step(WIRE_STEP_READ), step(WIRE_STEP_PATCH),
                                step(WIRE_STEP_WRITE) };
    rmw[0].flags = WIRE_STEP_F_FH, rmw[0].fh = blk, rmw[0].len = 4096;
    rmw[1].in_step = 0, rmw[1].addr = 8192, rmw[1].alen = 64, rmw[1].arg[0] = 100;
    rmw[2].flags = WIRE_STEP_F_FH, rmw[2].fh = blk, rmw[2].in_step = 1;
    struct fig f_acw = { 0 }, r_acw = { 0 }, b_acw = { 0 };
    struct fig f_rmw = { 0 }, r_rmw = { 0 }, b_rmw = { 0 };
    static uint8_t dev[2][4096];   /* where the bytes-alone copies land */
    uint64_t x = 88172645463325252ull;
    for (unsigned round = 0; round < rounds; round++) {
        if (do_acw) {
            struct timer t = timer_start();
            for (unsigned i = 0; i < ops; i++)
                if (run(e, acw, 3, &a))
                    return 2;
            timer_stop(&t, ops, &f_acw);
            t = timer_start();
            for (unsigned i = 0; i < ops; i++) {
                uint32_t c = crc32c(0, arena, 4096);
                risc(e, ENG_OP_WRITE, log, 0, arena, NULL, 4096);
                risc(e, ENG_OP_WRITE, log, 0, &c, NULL, 4);
            }
            timer_stop(&t, ops, &r_acw);
            t = timer_start();
            for (unsigned i = 0; i < ops; i++) {   /* the bytes alone */
                memcpy(dev[i & 1], arena, 4096);
                uint32_t c = crc32c(0, dev[i & 1], 4096);
                memcpy(dev[(i + 1) & 1], &c, 4);
                __asm__ volatile("" : : "r"(dev) : "memory");
            }
            timer_stop(&t, ops, &b_acw);
        }
        if (do_rmw) {
            struct timer t = timer_start();
            for (unsigned i = 0; i < ops; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                rmw[0].off = rmw[2].off = (x % 4096) * 4096;
                if (run(e, rmw, 3, &a))
                    return 3;
            }
            timer_stop(&t, ops, &f_rmw);
            uint8_t b[4096];
            t = timer_start();
            for (unsigned i = 0; i < ops; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                uint64_t off = (x % 4096) * 4096;
                risc(e, ENG_OP_READ, blk, off, NULL, b, 4096);
                memcpy(b + 100, arena + 8192, 64);
                risc(e, ENG_OP_WRITE, blk, off, b, NULL, 4096);
            }
            timer_stop(&t, ops, &r_rmw);
            t = timer_start();
            for (unsigned i = 0; i < ops; i++) {   /* the bytes alone */
                memcpy(b, dev[i & 1], 4096);
                memcpy(b + 100, arena + 8192, 64);
                memcpy(dev[(i + 1) & 1], b, 4096);
                __asm__ volatile("" : : "r"(dev), "r"(b) : "memory");
            }
            timer_stop(&t, ops, &b_rmw);
        }
    }
    printf("in-process, %s medium, %u ops each, best of %u rounds (ns per op, wall / CPU):\n",
           medium, ops, rounds);
    printf("  %-18s %15s %15s %15s %9s\n", "workload", "fused", "engine RISC", "bytes alone",
           "fused/bytes");
    if (do_acw)
        printf("  %-18s %7.0f /%6.0f %7.0f /%6.0f %7.0f /%6.0f %8.1fx\n", "append-CRC-write",
               f_acw.wall, f_acw.cpu, r_acw.wall, r_acw.cpu, b_acw.wall, b_acw.cpu,
               f_acw.cpu / b_acw.cpu);
    if (do_rmw)
        printf("  %-18s %7.0f /%6.0f %7.0f /%6.0f %7.0f /%6.0f %8.1fx\n", "read-modify-write",
               f_rmw.wall, f_rmw.cpu, r_rmw.wall, r_rmw.cpu, b_rmw.wall, b_rmw.cpu,
               f_rmw.cpu / b_rmw.cpu);
    eng_destroy(e);
    sfs_unmount(fs);
    media_close(m);
    if (img[0])
        unlink(img);
    return 0;
}
