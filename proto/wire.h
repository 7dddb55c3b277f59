/*
 * proto/wire.h - the host <-> device queue-pair ABI (shared memory).
 *
 * This header is the contract between libcisc (the host side) and the
 * device (device/queue/sqe.c decodes it). It is not installed: applications use
 * <cisc/cisc.h>. All fields are little-endian fixed-width; both sides run
 * on the same host, so they are accessed as native structs, but every
 * size is asserted and every field the device reads is copied once into
 * private memory and validated before use (no double fetch).
 *
 * A queue pair is one memfd the device creates and passes to the client
 * with SCM_RIGHTS over the control socket (request CTL_QP_CREATE). Layout:
 *
 *   offset          size                 what
 *   0               4096                 struct wire_qp_hdr (ring indices, doorbells)
 *   sq_off          sq_entries * 64      submission entries (struct wire_sqe)
 *   cq_off          cq_entries * 32      completion entries (struct wire_cqe)
 *   arena_off       arena_size           data arena ("DMA-able memory")
 *
 * sq_entries and cq_entries are powers of two; cq_entries >= sq_entries.
 * Indices are free-running u32 (mask with entries - 1).
 *
 * Rings (single producer, single consumer each):
 *   SQ: the client writes entries, then advances sq_tail (release);
 *       the device reads sq_tail (acquire), copies entries, then advances
 *       sq_head (release) so the client may reuse the slots.
 *   CQ: the device writes entries, then advances cq_tail (release);
 *       the client reads cq_tail (acquire), consumes, advances cq_head.
 * Doorbells (futex words, FUTEX_WAKE/WAIT without FUTEX_PRIVATE_FLAG,
 * since the two sides are different processes):
 *   sq_flags & WIRE_SQ_NEED_WAKEUP: set by the device before it sleeps on
 *       sq_doorbell; the client, after publishing sq_tail, checks it (with
 *       a full fence between the tail store and the flag load) and if set
 *       increments sq_doorbell and FUTEX_WAKEs it.
 *   cq_flags & WIRE_CQ_WAITING: set by a client thread before it sleeps on
 *       cq_tail; the device, after publishing cq_tail, checks it and
 *       FUTEX_WAKEs cq_tail.
 *
 * Arena references: every (off, len) pair names bytes inside the arena
 * (0 <= off, off + len <= arena_size, no overflow). The device refuses
 * anything else with -EFAULT in the completion. The device writes results
 * only into ranges the command named as outputs.
 *
 * Commands: a RISC command is one SQE (opcode WIRE_OP_*). A CISC command is
 * one SQE with opcode WIRE_OP_CISC whose (addr, len) names an array of
 * `nsteps` struct wire_step in the arena, and whose res_off names an array
 * of nsteps struct wire_step_res where the device writes each step's
 * result. Steps run in order; a step may name an earlier step whose output
 * buffer it takes as input (in_step), and an earlier OPEN step whose file
 * it acts on (file_step). Forward and self references are refused.
 *
 * Flow control: the device fetches an SQE only when it can reserve a CQ
 * slot for its completion (completions not yet posted + CQEs the client
 * has not consumed < cq_entries), so the CQ never overflows; a client
 * that stops consuming completions only stalls its own queue.
 *
 * Garbage indices: a sq_tail more than sq_entries ahead of the device's
 * own sq_head, or a cq_head that is not between the completions already
 * posted, cannot come from a correct client. For sq_tail the device marks
 * the queue dead (WIRE_SQ_DEAD in sq_flags, waiters woken) and never
 * reads it again; a bad cq_head counts as "CQ full". The device keeps its
 * own copies of sq_head and cq_tail and never reads them back.
 *
 * Invariants:
 *   1. Nothing in shared memory is trusted by the device: it is read once
 *      into private copies, validated, then used.
 *   2. A malformed command gets an error completion with the SQE's
 *      user_data; it never affects other queue pairs or clients.
 *   3. Each accepted SQE produces exactly one CQE (unless its queue pair
 *      is destroyed or declared dead first).
 *   4. The device bounds the work it does per poll of one queue
 *      (at most sq_entries SQEs), whatever the indices say.
 *
 * Changes from the first draft (qp branch): WIRE_SQ_DEAD; struct
 * wire_dirent for READDIR output; OPEN/READDIR/STAT results spelled out;
 * unknown sqe_flags bits are refused (-EINVAL) so they can gain meaning.
 */
#ifndef CISC_DEVICE_WIRE_H
#define CISC_DEVICE_WIRE_H

#include <assert.h>   /* static_assert, in C and in the C++ tests */
#include <stddef.h>
#include <stdint.h>

#define WIRE_MAGIC    0x31505143u   /* "CQP1" */
#define WIRE_VERSION  1u
#define WIRE_HDR_SIZE 4096u
#define WIRE_MAX_STEPS 64u
#define WIRE_NO_STEP   0xffffu       /* in_step / file_step: none */

/* Flags in sq_flags / cq_flags. */
#define WIRE_SQ_NEED_WAKEUP (1u << 0)
#define WIRE_SQ_DEAD        (1u << 1)   /* device stopped serving this queue (garbage indices) */
#define WIRE_CQ_WAITING     (1u << 0)

/* Each index on its own cache line: the two sides write different ones. */
struct wire_qp_hdr {
    uint32_t magic, version;
    uint32_t sq_entries, cq_entries;
    uint64_t sq_off, cq_off, arena_off, arena_size, total_size;
    uint32_t qp_id;                      /* device's id for this queue pair */
    uint8_t pad0[64 - 60];
    uint32_t sq_head;   uint8_t pad1[60];   /* device writes */
    uint32_t sq_tail;   uint8_t pad2[60];   /* client writes */
    uint32_t sq_flags;  uint8_t pad3[60];   /* device writes */
    uint32_t sq_doorbell; uint8_t pad4[60]; /* client increments + wakes */
    uint32_t cq_head;   uint8_t pad5[60];   /* client writes */
    uint32_t cq_tail;   uint8_t pad6[60];   /* device writes; futex word */
    uint32_t cq_flags;  uint8_t pad7[60];   /* client writes */
};
static_assert(sizeof(struct wire_qp_hdr) <= WIRE_HDR_SIZE, "qp header fits a page");
static_assert(offsetof(struct wire_qp_hdr, sq_head) == 64, "sq_head on line 1");

/* RISC opcodes (and WIRE_OP_CISC). Paths are (addr, len) in the arena,
 * 1..WIRE_PATH_MAX bytes without NUL, relative to the file system's root
 * (a leading '/' means the same root; ".." stops at the root; symlinks
 * are followed, absolute targets from the root too). Results: res >= 0
 * or -errno, as the POSIX call would give. */
enum wire_op {
    WIRE_OP_NOP = 0,     /* -> res = 0 (a round trip, for measurement) */
    WIRE_OP_OPEN,        /* addr,len = path; flags = O_*; mode -> res = 0, aux = fh */
    WIRE_OP_CLOSE,       /* fh */
    WIRE_OP_READ,        /* fh off; addr,len = destination -> res = bytes */
    WIRE_OP_WRITE,       /* fh off; addr,len = source -> res = bytes */
    WIRE_OP_APPEND,      /* fh; addr,len = source -> res = bytes, aux = offset written */
    WIRE_OP_TRUNCATE,    /* fh; off = new size */
    WIRE_OP_FSYNC,       /* fh; flags = 1 for datasync */
    WIRE_OP_STAT,        /* fh, or path (addr,len) when fh = 0; res_off,res_len =
                            struct wire_stat (res_len >= 72) */
    WIRE_OP_UNLINK,      /* addr,len = path */
    WIRE_OP_MKDIR,       /* addr,len = path; mode */
    WIRE_OP_RENAME,      /* addr,len = "old\0new"; flags = RENAME_NOREPLACE/EXCHANGE */
    WIRE_OP_READDIR,     /* addr,len = path; off = cookie (0 = start); res_off,res_len =
                            output -> res = bytes of struct wire_dirent records
                            (0: no more entries), aux = cookie to continue with */
    WIRE_OP_RMDIR,       /* addr,len = path */
    WIRE_OP_FALLOCATE,   /* fh off; len = bytes of the range (no buffer); flags =
                            FALLOC_FL_* (collapse/insert range included) */
    /* Extended attributes of a path (symlinks followed, as getxattr(2));
     * "path\0name" is the path and the attribute's name, with its prefix
     * ("user.", "trusted.", "security.", "system.posix_acl_access" ...).
     * Values and lists travel in the result area. */
    WIRE_OP_GETXATTR,    /* addr,len = "path\0name"; res_off,res_len = value buffer
                            (res_len 0: the size only) -> res = value size */
    WIRE_OP_SETXATTR,    /* addr,len = "path\0name"; res_off,res_len = the value
                            (0..65536 bytes); flags = XATTR_CREATE / XATTR_REPLACE */
    WIRE_OP_LISTXATTR,   /* addr,len = path; res_off,res_len = buffer (res_len 0:
                            the size only) -> res = bytes of NUL-ended names */
    WIRE_OP_REMOVEXATTR, /* addr,len = "path\0name" */
    WIRE_OP_CISC = 64,   /* addr,len = steps; nsteps; res_off = results */
};

#define WIRE_PATH_MAX 4096u

#define WIRE_SQE_F_NOLATENCY (1u << 0)  /* reserved: device model hints */

/* CISC: the op's transaction mode, in the SQE's flags (FusionFS §4.4;
 * device/engine/fused/fused.h "Transaction modes"). The device runs the
 * op in the stronger of this and its start-up default (`cisc up --tx`);
 * DEFAULT asks for nothing more. Other flag bits are refused (-EINVAL). */
enum wire_tx {
    WIRE_TX_DEFAULT = 0,
    WIRE_TX_MACRO = 1,     /* all or nothing */
    WIRE_TX_MICRO = 2,     /* each mutating step commits on its own */
    WIRE_TX_AUTOREC = 3,   /* micro + operational log, finished after a crash */
};
#define WIRE_CISC_TX_MASK 0x3u

struct wire_sqe {
    uint64_t user_data;  /* echoed in the CQE */
    uint8_t opcode;      /* enum wire_op */
    uint8_t sqe_flags;
    uint16_t nsteps;     /* CISC: number of steps */
    uint32_t flags;      /* op flags (O_*, RENAME_*, datasync) */
    uint64_t fh;         /* device file handle (from OPEN) */
    uint64_t off;        /* file offset, cookie, or new size */
    uint64_t addr;       /* arena offset of the main buffer */
    uint64_t len;        /* its length */
    uint64_t res_off;    /* arena offset of the result area (stat, readdir, step results) */
    uint32_t res_len;    /* its capacity */
    uint32_t mode;       /* create mode */
};
static_assert(sizeof(struct wire_sqe) == 64, "SQE is 64 bytes");

struct wire_cqe {
    uint64_t user_data;
    int64_t res;         /* >= 0 result, or -errno (CISC: overall status) */
    uint64_t aux;        /* OPEN: fh; APPEND: offset; CISC: steps run */
    uint32_t flags;      /* WIRE_CQE_* */
    uint32_t arrive;     /* WIRE_CQE_ARRIVE: see below */
};
static_assert(sizeof(struct wire_cqe) == 32, "CQE is 32 bytes");

/* The completion crosses the link: it arrives at the host when the low 32
 * bits of CLOCK_MONOTONIC in nanoseconds reach `arrive` (compared modulo
 * 2^32; never more than the device's link latency after it was posted,
 * unless the media model completes it later: then at most 1 s after).
 * The library does not report it before; the device core that posted it
 * does not wait for it. */
#define WIRE_CQE_ARRIVE (1u << 0)
/* With a flash media model (cisc up --media flash): garbage collection was
 * running on a die that served this command (for GC-aware host caches). */
#define WIRE_CQE_GC     (1u << 1)

struct wire_stat {
    uint64_t ino, size, blocks, nlink;
    uint32_t mode, uid, gid, reserved;
    int64_t atime_ns, mtime_ns, ctime_ns;
};
static_assert(sizeof(struct wire_stat) == 72, "wire_stat is 72 bytes");

/* READDIR output: records back to back, each 8-byte aligned:
 * the header, then namelen name bytes, then a NUL, then padding to 8. */
struct wire_dirent {
    uint64_t ino;
    uint64_t next;       /* cookie that continues after this entry */
    uint16_t reclen;     /* whole record, multiple of 8 */
    uint16_t namelen;
    uint8_t type;        /* DT_* */
    uint8_t pad[3];
    /* char name[namelen + 1] follows */
};
static_assert(sizeof(struct wire_dirent) == 24, "wire_dirent header is 24 bytes");

/* ---- CISC steps ------------------------------------------------------- */

enum wire_step_kind {
    WIRE_STEP_OPEN = 1,    /* addr,alen = path; flags2 = O_*; mode. Output: none; file for later steps */
    WIRE_STEP_CLOSE,       /* file (F_FH: closes the session handle when the op succeeds) */
    WIRE_STEP_READ,        /* file off len -> output buffer of <= len bytes */
    WIRE_STEP_WRITE,       /* file off; input -> res = bytes (O_APPEND file: appends) */
    WIRE_STEP_APPEND,      /* file; input -> res = bytes; out_len = file offset written */
    WIRE_STEP_TRUNCATE,    /* file; off = size */
    WIRE_STEP_FSYNC,       /* file; flags2 = datasync: the op commits durably */
    WIRE_STEP_UNLINK,      /* addr,alen = path */
    WIRE_STEP_CRC32C,      /* input -> 4-byte output (LE), arg0 = seed */
    WIRE_STEP_XXH3,        /* input -> 8-byte output (LE), arg0 = seed */
    WIRE_STEP_ZSTD_COMPRESS,    /* input -> output; arg0 = level (signed) */
    WIRE_STEP_ZSTD_DECOMPRESS,  /* input -> output; out_cap (required) bounds it */
    WIRE_STEP_ENCRYPT,     /* input -> nonce||ciphertext||tag; key_id */
    WIRE_STEP_DECRYPT,     /* nonce||ciphertext||tag -> plaintext; key_id; -EBADMSG if forged */
    WIRE_STEP_VERIFY,      /* in_step output must equal the second operand: -EBADMSG otherwise; no output */
    WIRE_STEP_PATCH,       /* in_step output with the second operand copied over it at arg0 -> output */
    WIRE_STEP_CONCAT,      /* in_step output followed by the second operand -> output */
    WIRE_STEP_BPF,         /* program key_id over the input in blocks -> output (see below) */
};

/*
 * Step operands (the device's decoder, device/engine/fused/decode.c, enforces
 * these; anything else refuses the whole vector with the step's errno):
 *   - Data input of WRITE, APPEND and compute steps: the output of step
 *     in_step (< this step, of a kind that produces output: READ or a
 *     compute step other than VERIFY), or arena bytes (addr, alen) when
 *     in_step is WIRE_NO_STEP.
 *   - VERIFY, PATCH, CONCAT take their first operand from in_step
 *     (required) and their second from in2_step, or from (addr, alen)
 *     when in2_step is WIRE_NO_STEP. Other kinds must leave in2_step none.
 *   - File steps (CLOSE READ WRITE APPEND TRUNCATE FSYNC) name an earlier
 *     OPEN step in file_step, or set F_FH and give a session handle in fh
 *     (file_step none). Other kinds must leave both unset.
 *   - out_cap: output capacity of compute steps (0 = what the kind needs
 *     for its input's capacity; required for ZSTD_DECOMPRESS);
 *     with F_OUT_ARENA also the size of the arena range (out_off,
 *     out_cap), which must hold the step's whole output capacity.
 *   - reserved must be 0.
 * Results: ret is >= 0 (bytes for READ/WRITE/APPEND, output bytes for
 * compute steps, 0 otherwise) or -errno; the CQE's res is the op's status
 * and aux the number of steps that completed (ret >= 0).
 */

/* Step flags. */
#define WIRE_STEP_F_INDEPENDENT (1u << 0)  /* may run in parallel with neighbours */
#define WIRE_STEP_F_OUT_ARENA   (1u << 1)  /* copy the output to arena (out_off, out_cap) */
#define WIRE_STEP_F_FH          (1u << 2)  /* file is the session handle `fh`, not file_step */

struct wire_step {
    uint8_t kind;        /* enum wire_step_kind */
    uint8_t flags;       /* WIRE_STEP_F_* */
    uint16_t in_step;    /* earlier step whose output is the input, or WIRE_NO_STEP */
    uint16_t in2_step;   /* second input (VERIFY, CONCAT), or WIRE_NO_STEP */
    uint16_t file_step;  /* earlier OPEN step, or WIRE_NO_STEP (see F_FH) */
    uint64_t fh;         /* session file handle when F_FH; BPF: argument block */
    uint64_t off;        /* file offset / new size */
    uint64_t len;        /* READ length; BPF block size */
    uint64_t addr;       /* arena input (when in_step is none) or path/patch/expected */
    uint32_t alen;       /* its length */
    uint32_t key_id;     /* ENCRYPT/DECRYPT key, BPF program id */
    uint64_t out_off;    /* F_OUT_ARENA: arena destination */
    uint32_t out_cap;    /* output capacity (also bounds device memory use) */
    uint32_t flags2;     /* O_* for OPEN, datasync for FSYNC, WIRE_BPF_* for BPF */
    uint64_t arg[2];     /* seed, level, patch offset; BPF arg0, arg1 (all four in
                            the BPF argument block, struct wire_bpf_args) */
    uint32_t mode;       /* OPEN create mode */
    uint32_t reserved;
};
static_assert(sizeof(struct wire_step) == 88, "wire_step is 88 bytes");

struct wire_step_res {
    int64_t ret;         /* >= 0 or -errno; -ECANCELED: did not run */
    uint64_t out_len;    /* bytes of output produced (copied if F_OUT_ARENA) */
};
static_assert(sizeof(struct wire_step_res) == 16, "wire_step_res is 16 bytes");

/* ---- the bpf step (issue 6; docs/BPF.md "Programs in the device") -------
 *
 * WIRE_STEP_BPF runs a program loaded into the device (CTL_PROG_LOAD)
 * over its input in blocks; the blocks' outputs, concatenated, are the
 * step's output. Fields:
 *   key_id     the program's id (libcisc resolves names: cisc_prog_id)
 *   in_step    input: an earlier step's output, or arena (addr, alen)
 *   off        ctx->offset of the input's first byte (its file offset)
 *   len        block size: bytes per invocation (0 = 4096; at most 64 MiB)
 *   out_cap    output capacity (0 = blocks * bytes per invocation's output)
 *   arg[0..1]  ctx->arg[0..1] (arg[2..3] are 0) unless an argument block
 *   flags2     WIRE_BPF_* below
 *   fh         with WIRE_BPF_ARGS: arena offset of a struct wire_bpf_args
 *              (read once when the vector is decoded)
 * Errors of the step: the program's own negative return value as it
 * returned it; -ETIME when an invocation exhausted the instruction budget
 * (cisc up --prog-budget); -ERANGE when an invocation returned more than
 * its output buffer; -EOVERFLOW when the outputs exceed out_cap; -ENOENT
 * (no such program), -EACCES (not the owner's and not shared), -ENOEXEC
 * (stored but no longer verifies), -EBUSY (stream in use) before any step
 * runs.
 */
#define WIRE_BPF_ARGS (1u << 0)   /* fh names a struct wire_bpf_args */
#define WIRE_BPF_MORE (1u << 1)   /* stream: input continues in a later op (no LAST_BLOCK) */

struct wire_bpf_args {
    uint64_t arg[4];     /* ctx->arg[0..3] */
    uint64_t stream;     /* a stream (CTL_PROG_STREAM) carrying state and block count; 0 = none */
    uint32_t block_out;  /* output bytes per invocation; 0 = 2 * block size */
    uint32_t reserved;   /* 0 */
    uint64_t reserved2[2];
};
static_assert(sizeof(struct wire_bpf_args) == 64, "wire_bpf_args is 64 bytes");

#endif
