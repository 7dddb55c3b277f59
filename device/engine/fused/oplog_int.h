/*
 * device/engine/fused/oplog_int.h - what the three modules of the
 * operational log (oplog.h) share: oplog.c writes logs (what autorec
 * covers, log files, log space, the records of a running op),
 * oplog_rec.c encodes and decodes the records (docs/FORMAT.md
 * "Operational log", byte by byte), oplog_recover.c finishes logged ops
 * at start-up, keeps their recovery records and checks logs offline.
 *
 * Invariants:
 *   1. The record layout lives in oplog_rec.c only: the writer hands it a
 *      run and gets bytes, recovery hands it bytes and gets a run.
 *   2. Decoding never trusts the log: every length is checked against the
 *      bytes there are before it is used, and a record that fails a check
 *      ends the parse (the op record: nothing runs; a step record: the
 *      steps from it on count as not committed).
 */
#ifndef CISC_DEVICE_FUSED_OPLOG_INT_H
#define CISC_DEVICE_FUSED_OPLOG_INT_H

#include "device/engine/fused/oplog.h"
#include "device/engine/fused/fused_int.h"
#include "device/progs/progs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPLOG_SUB "oplog"
#define OP_MAGIC 0x4c4f6673u      /* "sfOL" */
#define STEP_MAGIC 0x534f6673u    /* "sfOS" */
#define END_MAGIC 0x454f6673u     /* "sfOE": v3 end record, the op completed */
#define END_BYTES 8u              /* its magic and CRC */
#define OP_VERSION 4u           /* a record with block operands (the others are 3) */
#define OP_VERSION_PLAIN 3u     /* without; 2: nor an op name (the file's); 1: nor
                                   program identities */
#define OP_HDR 32u                /* magic version nsteps uid gid ngroups mem(8) */
#define OP_HDR_NAME 12u           /* v3: then the op's name: stamp(8) seq(4) */
#define SLOT_PREFIX "slot-"       /* a reusable log file (oplog.h "Slots") */
#define STEP_FIXED 96u            /* one step's fixed fields */
#define REC_FIXED 28u             /* step record: magic step flags ret out_len data_len */
#define REC_F_BLOCKS 1u           /* its output is in whole log blocks after it */
#define OPLOG_MAX (512ull << 20)  /* one op's log (inputs included) */
#define SRC_SAME (1ull << 63)     /* src_len: the operand of step (low 16 bits) again */
#define SRC_BLOCKS (1ull << 62)   /* src_len (v4): the operand is in whole log blocks */
#define OPND_LOC 12u              /* a block operand's locator: ext_off(8) crc(4) */
#define PROG_ID_BYTES (32u + 2u * PROGS_NAME_MAX)   /* sha256 name func */

/* A growable byte buffer. */
struct obuf {
    uint8_t *p;
    size_t len, cap;
    int err;
};

/* The arena operands of an op record that go to whole log blocks
 * (FORMAT.md "Block operands"): where each one's locator is in the
 * encoded record, where its bytes go in the log, their CRC-32C. */
struct opnds {
    unsigned n;
    struct opnd {
        unsigned step;           /* the first step that takes it */
        const uint8_t *p;        /* its bytes (the client's arena) */
        uint64_t len;
        size_t at;               /* its locator in the record */
        uint64_t off;            /* its first byte in the log (a block boundary) */
        uint32_t crc;
    } o[WIRE_MAX_STEPS];
    uint64_t end;                /* the log's size with them: records start there */
};

/* A parsed log: the op, its credentials, and what its steps committed. */
struct recovered {
    struct eng_cisc v;
    struct eng_cred cred;
    struct fop_replay rp;
    char name[OPLOG_NAME_MAX];   /* the op's name (v3: logged; else the file's) */
    uint8_t *data;               /* the file's bytes (inputs and outputs point here) */
    size_t len;                  /* and their length (read_log's mapping) */
    uint8_t kept[WIRE_MAX_STEPS][FOP_REC_OUT_MAX];   /* F_OUT_ARENA outputs of recovery */
    bool ended;                  /* its end record is there: the op completed */
};

/* Whether s takes a session key (ENCRYPT/DECRYPT: oplog.h "Keys"). */
bool oplog_keyed(const struct fop_step *s);

/* The op name of stamp and seq ("%016x-%08x": names sort in submission
 * order) into name (OPLOG_NAME_MAX bytes). */
void oplog_op_name(char *name, uint64_t stamp, uint32_t seq);

/* The earlier step of v whose arena operand holds the same bytes as step
 * i's (one buffer given to two steps, or two copies of it: logged once,
 * FORMAT.md "src_len" bit 63), or -1. */
int oplog_same_src(const struct eng_cisc *v, unsigned i);

/* Encodes x's op record (FORMAT.md "Op record"), named by stamp and seq,
 * into b, but for its CRC and its block operands' CRCs: ops gets the
 * operands over the log entry size, placed in whole log blocks after the
 * record, their locators in b filled but for the CRC. Returns b->err. */
int oplog_encode_op(const struct fop_run *x, uint64_t stamp, uint32_t seq, struct obuf *b,
                    struct opnds *ops);

/* Puts ops' CRCs (computed as their bytes were written) into b's
 * locators and ends the record with its CRC. Returns b->err. */
int oplog_seal_op(struct obuf *b, const struct opnds *ops);

/* Encodes step i's record, to go at log offset at, into b; *ext: where
 * its output's log blocks go (0: inline; the caller writes them). */
void oplog_encode_step(const struct fop_run *x, unsigned i, uint64_t at, struct obuf *b,
                       uint64_t *ext);

/* Encodes the end record (FORMAT.md "End record") into b. */
void oplog_encode_end(struct obuf *b);

/* An upper bound of the log bytes step i's record takes. */
uint64_t oplog_step_need(const struct fop_run *x, unsigned i);

/* Decodes rc->data[0, rc->len): the op record into rc->v and rc->cred,
 * then the step records up to the first that does not check into rc->rp;
 * then, if the op still has work, checks the CRC of every block operand
 * a step that will run reads (one that committed needs none: an
 * adopting append may have taken its blocks; a CRC step whose result is
 * the operand's logged CRC reads nothing). Returns NULL, or why nothing
 * of the op may run (*bad_at: the byte where the check failed). */
const char *oplog_parse(struct recovered *rc, size_t *bad_at);

/* Whether the logged op still has work (a step that may change a file,
 * or feeds a later step, without its record). */
bool oplog_pending(const struct recovered *rc);

/* Whether log file name is a slot (oplog.h "Slots"). */
bool oplog_is_slot(const char *name);

/* Whether the slot file ino may take a new op: it is empty, or holds an
 * op that had completed (a damaged or unfinished log is kept). */
bool oplog_slot_reusable(struct sfs *fs, uint64_t ino);

/* Committed OPENs are opened again without creating or truncating. */
void oplog_settle_done_opens(struct recovered *rc);

#endif
