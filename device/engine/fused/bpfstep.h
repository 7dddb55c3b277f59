/*
 * device/engine/fused/bpfstep.h - the bpf step of CISC vectors (WIRE_STEP_BPF; the
 * wire encoding is in proto/wire.h): its part of each phase of a fused
 * op (device/engine/fused/fused.h), on top of the program registry (device/progs/progs.h).
 *
 *   decode   fields, the argument block (copied once from the arena), the
 *            output capacity (blocks * bytes per invocation's output, or
 *            the client's out_cap);
 *   check    the program exists, verified, and the client may run it (its
 *            owner, root, or shared); a stream is claimed (same uid, not
 *            in use by another step) - all before any step of the op runs;
 *   execute  the program over the input in blocks (bpf/blocks.h) with the
 *            client's uid, into the step's device buffer; the device
 *            model's core speed is charged for the time it took; the
 *            step stops at a block boundary past the engine's floor
 *            (engine.h): -ETIME past its instructions (ENG_STEP_BUDGETS,
 *            or what is left of the op's ENG_OP_BUDGETS) or the op's
 *            device-time deadline, -ECANCELED once eng_cancel was called;
 *   end      references and streams are returned (also on failure).
 *
 * A failing program fails its step like any other step: later steps are
 * cancelled and the op's mutations are not applied (MacroTx).
 */
#ifndef CISC_DEVICE_BPFSTEP_H
#define CISC_DEVICE_BPFSTEP_H

#include <stdint.h>

#include "device/engine/fused/fused.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fop_run;

/* Decodes the BPF-specific fields of w into s (after the generic fields
 * and operands); in_cap is the input's capacity. Sets s->cap. Returns 0,
 * -EINVAL (bad field, block size or flags), -EFAULT (argument block
 * outside the arena) or -E2BIG (output over the step limit). */
int fop_bpf_decode(const struct wire_step *w, const struct eng_arena *a, struct fop_step *s,
                    uint64_t in_cap, const struct fop_limits *lim);

/* Check phase of step i: takes the program and the stream. -ENOENT,
 * -EACCES, -ENOEXEC, -EBUSY, or -EOPNOTSUPP when the engine has no
 * registry. */
int fop_bpf_prep(struct fop_run *x, unsigned i);

/* Releases what fop_bpf_prep took, for every step. */
void fop_bpf_unprep(struct fop_run *x);

/* Execute phase of step i: returns the output length or -errno. */
int64_t fop_bpf_exec(struct fop_run *x, unsigned i);

#ifdef __cplusplus
}
#endif

#endif
