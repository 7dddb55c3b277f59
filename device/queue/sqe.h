/*
 * device/queue/sqe.h - decoding a submission entry: one SQE, already copied
 * out of shared memory by the poller, validated field by field into a
 * private queue command for the engine. Private to device/queue/.
 *
 * Invariants:
 *   1. The decoder reads only the private copy of the SQE; what the SQE
 *      names in the arena (paths, a step vector) is copied once and
 *      checked on the copy (queue.h invariant 1). Buffers a command reads
 *      or writes in place stay in the arena, bounds-checked here.
 *   2. Every field is checked before use: opcodes, flags, arena ranges
 *      (inside the arena, no overflow), sizes. Anything else becomes the
 *      -errno of the SQE's completion: the client's data is never asserted.
 *   3. A decoded command owns its private copies (paths, the CISC vector),
 *      released with the command (queue_done.c).
 */
#ifndef CISC_DEVICE_QUEUE_SQE_H
#define CISC_DEVICE_QUEUE_SQE_H

#include "device/queue/queue_int.h"

/* Validates s, the private copy of an SQE fetched from qp, into a new
 * command (the caller submits it; it is freed when it completes).
 * Returns 0 and sets *out, or -errno for the SQE's error completion
 * (-EINVAL, -EFAULT, -ENOENT, -ENAMETOOLONG, -ENOMEM). */
int qp_sqe_decode(struct qp *qp, const struct wire_sqe *s, struct qp_cmd **out);

#endif
