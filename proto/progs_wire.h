/*
 * proto/progs_wire.h - control-socket payloads of the program requests
 * (device/control.h has the framing), shared by the device
 * (device/progs/progs_ctl.c) and libcisc (libcisc/progs.c). Little-endian,
 * encoded field by field.
 *
 *   CTL_PROG_LOAD    u32 flags (PW_LOAD_SHARED), u32 zero, name[64],
 *                    func[64] (NUL-padded; "" = default), and the object
 *                    as a memfd in SCM_RIGHTS, sealed against writing,
 *                    shrinking and growing (F_SEAL_WRITE | F_SEAL_SHRINK |
 *                    F_SEAL_GROW), at most PROGS_OBJ_MAX bytes.
 *                    -> s32 status; success: one info record;
 *                       failure: the reason as text (the verifier's full
 *                       message for a rejected program)
 *   CTL_PROG_LIST    u32 first id -> s32 status, u32 count, u32 next id
 *                    (0: no more; else ask again from it), count records
 *   CTL_PROG_SHOW    u32 id (0: by name), name[64] -> s32 status, one
 *                    record, then text (why it is not run, recent traces)
 *   CTL_PROG_UNLOAD  u32 id (0: by name), name[64] -> s32 status
 *   CTL_PROG_STREAM  u32 op (PW_STREAM_OPEN / PW_STREAM_CLOSE), u32 zero,
 *                    u64 token (close) -> s32 status, u64 token (open)
 *
 * Why a memfd: an object may be far larger than one frame
 * (CTL_MAX_PAYLOAD, 60 KiB), and a sealed memfd arrives whole in one
 * request with no upload state in the device; the seals guarantee that
 * reading it cannot block (not a pipe or a FUSE file) and that its size
 * cannot change while the device reads it (F_GET_SEALS fails for any
 * other kind of descriptor).
 *
 * Info record (PW_INFO_SIZE bytes):
 *   0 u32 id        4 u32 owner uid   8 u32 flags (PROGS_F_*)
 *  12 u32 insns    16 u64 load time (ns since the epoch)
 *  24 u64 runs     32 u64 invocations 40 u64 instructions executed
 *  48 u64 budget exhaustions          56 u64 errors
 *  64 u64 bytes in 72 u64 bytes out   80 u32 object size  84 u32 zero
 *  88 sha256[32]  120 name[64]       184 func[64]        248 zero[8]
 */
#ifndef CISC_PROTO_PROGS_WIRE_H
#define CISC_PROTO_PROGS_WIRE_H

#include <assert.h>   /* static_assert, in C and in the C++ tests */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/le.h"

/* Wire-level facts of programs, shared by the device and its clients. */
#define PROGS_NAME_MAX          64u           /* names and functions, with the NUL */
#define PROGS_OBJ_MAX           (16u << 20)   /* largest object accepted */
#define PROGS_MAX_BUDGET        (1ull << 40)  /* largest per-invocation budget */
#define PROGS_F_SHARED (1u << 0)   /* anyone may run it */
#define PROGS_F_BROKEN (1u << 1)   /* does not verify or load: never run */

/* A program as CTL_PROG_LIST / _SHOW describe it (decoded info record). */
struct progs_info {
    uint32_t id;
    uint32_t owner;            /* uid */
    uint32_t flags;            /* PROGS_F_* */
    uint32_t insns;            /* after linking; 0 when broken */
    uint64_t load_time_ns;     /* CLOCK_REALTIME of the load */
    uint64_t runs;             /* steps that ran it */
    uint64_t invocations;      /* blocks (program invocations) */
    uint64_t insns_run;        /* instructions executed, all invocations */
    uint64_t budget_hits;      /* invocations stopped by the budget */
    uint64_t errors;           /* steps that failed in the program */
    uint64_t bytes_in, bytes_out;
    uint32_t obj_size;
    uint8_t sha256[32];        /* of the object as loaded */
    char name[PROGS_NAME_MAX];
    char func[PROGS_NAME_MAX];
};

#define PW_LOAD_SHARED   (1u << 0)
#define PW_LOAD_REQ_SIZE (8u + 2 * PROGS_NAME_MAX)
#define PW_NAME_REQ_SIZE (4u + PROGS_NAME_MAX)     /* SHOW, UNLOAD */
#define PW_STREAM_OPEN   1u
#define PW_STREAM_CLOSE  2u
#define PW_STREAM_SIZE   16u
#define PW_INFO_SIZE     256u
#define PW_LIST_HDR      8u

static_assert(120 + 2 * PROGS_NAME_MAX + 8 == PW_INFO_SIZE, "info record is 256 bytes");

/* Copies a NUL-terminated name (or "" for NULL) into a 64-byte field. */
static inline void pw_put_name(uint8_t *f, const char *s)
{
    memset(f, 0, PROGS_NAME_MAX);
    if (s)
        memcpy(f, s, strnlen(s, PROGS_NAME_MAX - 1));   /* the last byte stays NUL */
}

/* Reads a 64-byte name field into out (always NUL-terminated); returns
 * -EINVAL when the field is not NUL-terminated. */
static inline int pw_get_name(const uint8_t *f, char out[PROGS_NAME_MAX])
{
    if (!memchr(f, '\0', PROGS_NAME_MAX))
        return -EINVAL;
    memcpy(out, f, PROGS_NAME_MAX);
    return 0;
}

static inline void pw_info_encode(const struct progs_info *i, uint8_t *b)
{
    memset(b, 0, PW_INFO_SIZE);
    le32_put(b, i->id);
    le32_put(b + 4, i->owner);
    le32_put(b + 8, i->flags);
    le32_put(b + 12, i->insns);
    le64_put(b + 16, i->load_time_ns);
    le64_put(b + 24, i->runs);
    le64_put(b + 32, i->invocations);
    le64_put(b + 40, i->insns_run);
    le64_put(b + 48, i->budget_hits);
    le64_put(b + 56, i->errors);
    le64_put(b + 64, i->bytes_in);
    le64_put(b + 72, i->bytes_out);
    le32_put(b + 80, i->obj_size);
    memcpy(b + 88, i->sha256, 32);
    pw_put_name(b + 120, i->name);
    pw_put_name(b + 184, i->func);
}

/* Decodes a record from the device; names are cut to fit, never trusted
 * to be terminated. */
static inline void pw_info_decode(const uint8_t *b, struct progs_info *i)
{
    memset(i, 0, sizeof(*i));
    i->id = le32_get(b);
    i->owner = le32_get(b + 4);
    i->flags = le32_get(b + 8);
    i->insns = le32_get(b + 12);
    i->load_time_ns = le64_get(b + 16);
    i->runs = le64_get(b + 24);
    i->invocations = le64_get(b + 32);
    i->insns_run = le64_get(b + 40);
    i->budget_hits = le64_get(b + 48);
    i->errors = le64_get(b + 56);
    i->bytes_in = le64_get(b + 64);
    i->bytes_out = le64_get(b + 72);
    i->obj_size = le32_get(b + 80);
    memcpy(i->sha256, b + 88, 32);
    memcpy(i->name, b + 120, PROGS_NAME_MAX - 1);
    memcpy(i->func, b + 184, PROGS_NAME_MAX - 1);
}

#endif
