/* fusefs/tgid.c - the process a FUSE request came from. The kernel gives
 * the calling thread's id; a tenant that is a process (cisc up --tenant
 * pid) needs its thread group id, read from /proc/TID/status and cached
 * per FUSE worker thread (no lock on the request path). A cached answer
 * lives TGID_TTL_S seconds, so a thread id the kernel reuses for another
 * process is charged to the old one for at most that long. */
#include "fusefs/fusefs_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TGID_SLOTS 64u   /* per worker thread: a power of two */
#define TGID_TTL_S 2

struct tgid_slot {
    uint32_t tid, tgid;
    int64_t until;       /* CLOCK_MONOTONIC_COARSE seconds; 0: empty */
};

static _Thread_local struct tgid_slot cache[TGID_SLOTS];

static int64_t coarse_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec;
}

/* Reads the Tgid line of /proc/TID/status; 0 if the thread is gone. */
static uint32_t tgid_read(uint32_t tid)
{
    char path[32], buf[512];
    snprintf(path, sizeof(path), "/proc/%u/status", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nTgid:");
    return p ? (uint32_t)strtoul(p + 6, NULL, 10) : 0;
}

uint32_t fusefs_tgid(uint32_t tid)
{
    if (!tid)
        return 0;
    struct tgid_slot *s = &cache[tid & (TGID_SLOTS - 1)];
    int64_t now = coarse_s();
    if (s->until && s->tid == tid && now < s->until)
        return s->tgid;
    uint32_t tgid = tgid_read(tid);
    if (!tgid)
        return tid;   /* gone already: the thread is all we know */
    *s = (struct tgid_slot){ tid, tgid, now + TGID_TTL_S };
    return tgid;
}
