/*
 * common/thread.h - starting the device's internal threads.
 *
 * Every thread the device starts for itself (control, pollers, notifier,
 * device cores, lease timer, the slow control worker) takes no signals:
 * SIGTERM and SIGINT go to the main thread, which turns them into an
 * orderly stop. A new thread inherits the creator's signal mask, so the
 * mask is blocked around pthread_create and restored for the caller.
 *
 * Invariants:
 *   1. A thread started here has every signal blocked from its first
 *      instruction on.
 *   2. The caller's signal mask is the same after the call as before.
 */
#ifndef CISC_COMMON_THREAD_H
#define CISC_COMMON_THREAD_H

#include <pthread.h>
#include <signal.h>

/* Starts fn(arg) in *t with all signals blocked (invariant 1).
 * Returns 0 or -errno (pthread_create's error). */
static inline int thread_start_quiet(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = -pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

#endif
