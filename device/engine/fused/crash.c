/* device/engine/fused/crash.c - crash-point injection (crash.h). */
#include "device/engine/fused/crash.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The armed point: written before the device starts serving, read by
 * device cores (relaxed: arming happens-before the cores exist). */
static int armed_kind;
static unsigned armed_n;
static unsigned armed_count = 1;   /* "@K" or "#K": the K-th arrival fires */
static bool armed_pass;            /* "#K": the earlier arrivals pass on */
static unsigned arrived;           /* atomic */

#define CRASH_COUNT_MAX 1024u
#define CRASH_WAIT_MS 10000        /* an early arrival waits at most this long */

static const struct {
    const char *name;
    enum fop_crash_kind kind;
    bool numbered;
} crash_names[] = {
    { "before-commit", FOP_CRASH_BEFORE_COMMIT, true },
    { "after-commit", FOP_CRASH_AFTER_COMMIT, true },
    { "after-log", FOP_CRASH_AFTER_LOG, false },
    { "recovery", FOP_CRASH_RECOVERY, true },
};

int fop_crash_arm(const char *spec)
{
#ifndef CISC_CRASH_POINTS
    (void)spec;
    return -EOPNOTSUPP;
#else
    if (!spec || !*spec || !strcmp(spec, "none")) {
        __atomic_store_n(&armed_kind, FOP_CRASH_NONE, __ATOMIC_RELAXED);
        return 0;
    }
    for (size_t i = 0; i < sizeof(crash_names) / sizeof(crash_names[0]); i++) {
        size_t l = strlen(crash_names[i].name);
        if (strncmp(spec, crash_names[i].name, l))
            continue;
        const char *p = spec + l;
        unsigned long n = 0;
        if (crash_names[i].numbered) {
            char *end;
            if (*p != ':' || p[1] < '0' || p[1] > '9')
                return -EINVAL;
            n = strtoul(p + 1, &end, 10);
            p = end;
        }
        unsigned long count = 1;
        bool pass = *p == '#';
        if (*p == '@' || pass) {
            char *end;
            if (p[1] < '1' || p[1] > '9')
                return -EINVAL;
            count = strtoul(p + 1, &end, 10);
            p = end;
        }
        if (*p || n > 0xffffu || count > CRASH_COUNT_MAX)
            return -EINVAL;
        armed_n = (unsigned)n;
        armed_count = (unsigned)count;
        armed_pass = pass;
        __atomic_store_n(&arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&armed_kind, (int)crash_names[i].kind, __ATOMIC_RELAXED);
        return 0;
    }
    return -EINVAL;
#endif
}

bool fop_crash_armed(enum fop_crash_kind kind, unsigned n)
{
    int k = __atomic_load_n(&armed_kind, __ATOMIC_RELAXED);
    return k != FOP_CRASH_NONE && k == (int)kind && n == armed_n;
}

void fop_crash_point(enum fop_crash_kind kind, unsigned n)
{
    int k = __atomic_load_n(&armed_kind, __ATOMIC_RELAXED);
    if (k == FOP_CRASH_NONE || k != (int)kind || n != armed_n)
        return;
    /* "@K": the first K-1 threads to get here stop here, as a power cut
     * at the K-th would find them (bounded, so that fewer ops than K
     * still end in the crash). */
    unsigned a = __atomic_add_fetch(&arrived, 1, __ATOMIC_RELAXED);
    if (armed_pass && a < armed_count)
        return;   /* "#K": only the K-th stops the device */
    for (int ms = 0; a < armed_count && ms < CRASH_WAIT_MS; ms++)
        usleep(1000);
    /* Only the first thread to get here stops the device (1). */
    if (!__atomic_compare_exchange_n(&armed_kind, &k, FOP_CRASH_NONE, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    static const char msg[] = "cisc device: crash point reached, stopping dead\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);   /* unbuffered: nothing else is flushed */
    (void)w;
    kill(getpid(), SIGKILL);
    _exit(137);   /* not reached */
}
