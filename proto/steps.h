/*
 * proto/steps.h - the step kinds of fused (CISC) ops: one row per kind of
 * enum wire_step_kind (wire.h) with its name and the operand rules that
 * both sides derive their checks from: the device's decoder and executor
 * (device/engine/fused), its compute module (device/compute) and
 * libcisc's step builder. wire.h says what each kind does; this table says
 * which operands it takes and what it gives, once.
 *
 * Properties (STEP_*, a row has any combination the invariants allow):
 *   FILE     acts on a file: names an earlier OPEN step in file_step, or a
 *            session handle (WIRE_STEP_F_FH and fh). Only these kinds may
 *            set either.
 *   PATH     (addr, alen) is a path, without NUL.
 *   INPUT    consumes data: the output of step in_step, or the arena bytes
 *            (addr, alen) when in_step is WIRE_NO_STEP. Only these kinds
 *            may set in_step.
 *   INPUT2   takes a second operand: the first comes from in_step
 *            (required), the second from in2_step, or from (addr, alen)
 *            when in2_step is WIRE_NO_STEP. Only these kinds may set
 *            in2_step.
 *   OUTPUT   produces an output buffer: a later step may take it as its
 *            input, and WIRE_STEP_F_OUT_ARENA may copy it to the arena.
 *   COMPUTE  needs nothing from the file system: it runs on any core, and
 *            a run of WIRE_STEP_F_INDEPENDENT compute steps may run in
 *            parallel.
 *   PARSER   parses its input (decompression, decryption): the device
 *            runs it on a private copy of an arena input, which the client
 *            could change while it runs.
 * out_size is the fixed size of the output (CRC32C 4, XXH3 8 bytes), or 0
 * when the input, the length or out_cap sizes it.
 *
 * Invariants (tests/unit/proto checks them over the whole table):
 *   1. Every kind of enum wire_step_kind has exactly one row, and a row's
 *      kind is the kind it is looked up by; step_kind() returns NULL for
 *      any other value, which the decoder refuses.
 *   2. A row's name is its enumerator without WIRE_STEP_, in lower case;
 *      names are unique.
 *   3. INPUT2 and PARSER imply INPUT; COMPUTE implies INPUT; PARSER implies
 *      COMPUTE; out_size != 0 implies OUTPUT; FILE and PATH exclude COMPUTE
 *      and each other.
 */
#ifndef CISC_PROTO_STEPS_H
#define CISC_PROTO_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STEP_FILE    (1u << 0)
#define STEP_PATH    (1u << 1)
#define STEP_INPUT   (1u << 2)
#define STEP_INPUT2  (1u << 3)
#define STEP_OUTPUT  (1u << 4)
#define STEP_COMPUTE (1u << 5)
#define STEP_PARSER  (1u << 6)

struct step_kind {
    uint8_t kind;        /* enum wire_step_kind */
    uint8_t props;       /* STEP_* */
    uint8_t out_size;    /* fixed output bytes; 0 = sized by input, len or out_cap */
    const char *name;    /* "open", "zstd_compress", ... */
};

/* The row of kind (an enum wire_step_kind value, as read from a client),
 * or NULL when kind is not a step kind. */
const struct step_kind *step_kind(unsigned kind);

/* The row whose name is `name`, or NULL (also for a NULL name). */
const struct step_kind *step_kind_named(const char *name);

/* True when kind is a step kind with every property in props (STEP_*). */
bool step_has(unsigned kind, unsigned props);

#ifdef __cplusplus
}
#endif

#endif
