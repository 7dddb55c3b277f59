/*
 * device/engine/fused/crash.h - crash-point injection for tests: the
 * device stops dead, as a power cut would, at a named point of the next
 * fused op that reaches it (FusionFS Table 10a's F1..F6 are such points).
 *
 * Points (the spec fop_crash_arm() takes):
 *   before-commit:N   step N ran, its changes are about to be applied
 *                     and committed (the point fires before their
 *                     transaction opens: after a crash the same as inside
 *                     it, and a waiting "@K" thread holds no handle)
 *                     (macro: every step's commit is the op's one
 *                     commit, made after its last mutating step; before
 *                     that, the point fires right after step N executed)
 *   after-commit:N    step N's commit has returned (macro: durable when
 *                     the op asked for durability, an FSYNC step; micro:
 *                     the journal commits its running transaction first,
 *                     which holds steps ..N whole, if they are not
 *                     durable yet - a power cut just after a group commit
 *                     the journal may make at that moment, fused.h;
 *                     autorec: never flushed, its receipt covers it,
 *                     oplog.h)
 *   after-log         the op's operational log is durable, no step ran
 *                     (autorec)
 *   recovery:K        recovery at start-up is about to finish the K-th
 *                     op of the operational log (0-based, in log order;
 *                     ops are recovered several at once, so others may be
 *                     under way) (autorec)
 * A point of a step that changes nothing (a compute step, a read) fires
 * after the step ran. A spec may end in "@K" (e.g. before-commit:1@4):
 * the point fires when the K-th op reaches it; the K-1 that reached it
 * before wait there (at most 10 s) until then, so that several ops are
 * cut at the same point, as in FusionFS Table 10c's threads. A spec may
 * end in "#K" instead (e.g. after-log#3): the K-th op to reach the point
 * fires it, the K-1 before it pass on (ops one after the other: a point
 * in a later op without a restart in between).
 *
 * Stopping: SIGKILL of the device itself. Nothing is flushed that the
 * device had not flushed already; what it wrote to the image file before
 * stays (the host's page cache survives the process).
 *
 * Reach: only in builds with CISC_CRASH_POINTS, only armed by the process
 * itself (cmd/up.c reads $CISC_CRASH_POINT when it runs as root; tests
 * call fop_crash_arm). Clients have no way to arm one.
 *
 * Invariants:
 *   1. At most one point is armed; it fires at most once.
 */
#ifndef CISC_DEVICE_FUSED_CRASH_H
#define CISC_DEVICE_FUSED_CRASH_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FOP_CRASH_ENV "CISC_CRASH_POINT"

enum fop_crash_kind {
    FOP_CRASH_NONE = 0,
    FOP_CRASH_BEFORE_COMMIT,
    FOP_CRASH_AFTER_COMMIT,
    FOP_CRASH_AFTER_LOG,
    FOP_CRASH_RECOVERY,
};

/* Arms the point spec names (see above; "" or "none" disarms). Returns 0
 * or -EINVAL (unknown spec), -EOPNOTSUPP in builds without
 * CISC_CRASH_POINTS. */
int fop_crash_arm(const char *spec);

/* Whether point (kind, n) is the armed one (it has not fired yet): lets
 * the caller bring about first what the point models (fused.h, micro's
 * "after-commit"). */
bool fop_crash_armed(enum fop_crash_kind kind, unsigned n);

/* Stops the process dead when point (kind, n) is the armed one. Cheap
 * when nothing is armed. */
void fop_crash_point(enum fop_crash_kind kind, unsigned n);

#ifdef __cplusplus
}
#endif

#endif
