/*
 * libcisc/client_int.h - what the library's files share: the session and
 * queue structures and the internal client API on which the public calls
 * (risc.c, and the fused operations in fused.c) are built. Not installed.
 *
 * The internal API, for code inside libcisc:
 *
 *   arena space      lc_arena_alloc / lc_arena_free / lc_arena_ptr / lc_arena_off
 *   submission       lc_submit: n prepared SQEs, one doorbell; each gets a
 *                    token (the SQE's user_data, set by the library)
 *   completion       lc_wait (block), lc_peek (poll once), lc_discard
 *                    (forget a token), lc_call (submit one + wait)
 *
 * A token names one command in flight on its queue until lc_wait/lc_peek
 * returns its completion (or lc_discard). Completions may come back in any
 * order; the queue keeps those not yet asked for in its slot table.
 *
 * Shared memory (proto/wire.h): pointers into the region start with k
 * (ksq_tail ...) beside the private copies the library keeps (sq_tail,
 * cq_head); the library is the only writer of sq_tail, cq_head, cq_flags
 * and sq_doorbell, and reads what the device writes with acquire loads.
 *
 * Invariants:
 *   1. Commands in flight (tokens not yet completed) <= nslots; the
 *      device's flow control keeps the CQ from overflowing, the library
 *      waits for SQ space before writing an SQE.
 *   2. A queue is used by one thread at a time; a session's shared state
 *      (file positions, the queue list, the control socket) is under
 *      session->lock.
 *   3. Every arena range the library names in an SQE was allocated from
 *      this queue's arena (or is a caller's buffer found inside it).
 */
#ifndef CISC_LIBCISC_INTERNAL_H
#define CISC_LIBCISC_INTERNAL_H

#include <cisc/cisc.h>

#include <pthread.h>
#include <stdbool.h>

#include "common/spin.h"
#include "proto/wire.h"
#include "libcisc/arena.h"

/* A file handle's position, kept by the library (the device's handles are
 * position-free): read/write use and advance it. */
struct lc_file {
    uint64_t fh;
    uint64_t pos;
    bool append;
};

struct cisc_session {
    pthread_mutex_t lock;         /* protects everything below but fd's traffic order */
    int fd;                       /* control socket (SOCK_SEQPACKET) */
    uint32_t uid, gid;
    int32_t pid;
    struct cisc_queue *queues;    /* list of live queues */
    struct lc_file *files;        /* open handles (positions), unsorted */
    size_t nfiles, capfiles;
};

/* One command slot: the token's state until its completion is taken. */
struct lc_slot {
    uint32_t gen;                 /* bumped when freed; part of the token */
    uint8_t state;                /* LC_SLOT_* */
    struct wire_cqe cqe;          /* valid in LC_SLOT_DONE and LC_SLOT_ARRIVING */
    uint64_t arrive_at;           /* LC_SLOT_ARRIVING: when it is the caller's (now_ns) */
    uint32_t next_free;           /* free list: index + 1, 0 = end */
};

/* BUSY: submitted; ARRIVING: its CQE reaped but still crossing the link
 * (wire.h WIRE_CQE_ARRIVE), not yet the caller's; DONE: completed. */
enum { LC_SLOT_FREE, LC_SLOT_BUSY, LC_SLOT_DONE, LC_SLOT_DISCARDED, LC_SLOT_ARRIVING };

struct cisc_queue {
    struct cisc_session *s;
    struct cisc_queue *next;      /* session's list, under s->lock */
    uint32_t id;                  /* device's qp id */
    uint8_t *map;                 /* the whole shared region */
    size_t map_size;
    struct wire_qp_hdr *hdr;
    struct wire_sqe *sq;
    const struct wire_cqe *cq;
    uint8_t *arena;
    uint64_t arena_size;
    uint32_t sq_mask, cq_mask, sq_entries, cq_entries;
    uint32_t *ksq_head, *ksq_tail, *ksq_flags, *ksq_doorbell;
    uint32_t *kcq_head, *kcq_tail, *kcq_flags;
    uint32_t sq_tail;             /* private: next SQE index to fill */
    uint32_t cq_head;             /* private: next CQE index to consume */
    struct lc_slot *slots;
    uint32_t nslots, free_slot;   /* free_slot: index + 1 of the first free, 0 = none */
    uint32_t inflight;            /* slots BUSY, ARRIVING or DISCARDED */
    uint32_t arriving;            /* slots ARRIVING */
    uint32_t spin_ns;             /* the full spin budget (cisc_queue_params) */
    struct spin_gov gov;          /* cuts it short on a contended host (common/spin.h) */
    bool busy_poll;
    uint64_t gc_seen;             /* completions flagged WIRE_CQE_GC */
    struct lc_arena alloc;        /* the arena's allocator (private metadata) */
};

/* ---- arena space ------------------------------------------------------ */

/* Allocates len bytes of q's arena (64-byte aligned). Returns 0 and sets
 * *off, or -EINVAL (len 0) / -ENOMEM. */
int lc_arena_alloc(struct cisc_queue *q, size_t len, uint64_t *off);

/* Frees an allocation by its offset; anything else is ignored. */
void lc_arena_free(struct cisc_queue *q, uint64_t off);

/* Host pointer for arena offset off (no check: off comes from the
 * library). */
static inline void *lc_arena_ptr(struct cisc_queue *q, uint64_t off)
{
    return q->arena + off;
}

/* If [p, p + len) lies inside q's arena, sets *off and returns true. */
bool lc_arena_off(const struct cisc_queue *q, const void *p, size_t len, uint64_t *off);

/* ---- submission and completion ---------------------------------------- */

/* Copies n prepared SQEs (1 <= n) into the submission ring, each with
 * user_data replaced by a fresh token (returned in tokens[i]), publishes
 * them with one tail update and rings the doorbell once if the device
 * sleeps. Waits for ring space and free slots (completing earlier
 * commands meanwhile), so n may exceed the ring. Returns n, or -errno
 * before anything was submitted (-EINVAL: n > slots, -ENOTCONN: device
 * gone or queue dead). */
int lc_submit(struct cisc_queue *q, const struct wire_sqe *sqes, unsigned n,
              uint64_t *tokens);

/* Waits for the completion of token (busy-polls up to spin_ns, less while
 * the host is contended: common/spin.h; then sleeps on the CQ futex),
 * copies it into *out and frees the token.
 * Returns 0, or -EINVAL (unknown token), -ENOTCONN (device gone). */
int lc_wait(struct cisc_queue *q, uint64_t token, struct wire_cqe *out);

/* Like lc_wait without waiting: returns 0 with *out filled, or -EAGAIN
 * when the command has not completed yet. */
int lc_peek(struct cisc_queue *q, uint64_t token, struct wire_cqe *out);

/* Gives up on token: its completion will be dropped when it comes. */
void lc_discard(struct cisc_queue *q, uint64_t token);

/* Reaps every completion posted so far into the slot table, in any
 * order of arrival (one still crossing the link waits in its slot, never
 * in front of others); returns how many it took plus how many waiting
 * ones arrived (0: nothing changed). */
unsigned lc_reap(struct cisc_queue *q);

/* Submits one SQE and waits: returns the CQE's res (>= 0 or -errno from
 * the device) or a transport -errno; *out (may be NULL) gets the CQE. */
int64_t lc_call(struct cisc_queue *q, const struct wire_sqe *sqe, struct wire_cqe *out);

/* Frees q's memory and mapping without telling the device (for
 * cisc_session_forget in a fork child). */
void lc_queue_forget(struct cisc_queue *q);

/* ---- step builders (fused.c), for builders in other files (progs) ------ */

/* Appends an empty step of kind to v (in_step, in2_step, file_step none);
 * NULL when v cannot take one (the error is recorded in v). */
struct wire_step *lc_vec_add(struct cisc_vec *v, uint8_t kind, int *idx);
/* Takes back the step just added and records err; returns it. */
int lc_vec_drop(struct cisc_vec *v, int err);
/* The error to return when lc_vec_add gave NULL. */
int lc_vec_bad(const struct cisc_vec *v);
/* Arena bytes for buf (zero-copy if it is an arena buffer, else a copy
 * freed with the vector). Returns 0 or -errno. */
int lc_vec_stage(struct cisc_vec *v, const void *buf, size_t len, uint64_t *off);
/* Sets step s's (index self) first input. Returns 0 or -errno. */
int lc_vec_set_in(struct cisc_vec *v, struct wire_step *s, int self, struct cisc_src in);

/* ---- session helpers (session.c) ---------------------------------------- */

/* Whether the device end of the control socket is still there. */
bool lc_session_alive(struct cisc_session *s);

/* File position table: add on open, drop on close, find for read/write. */
int lc_file_add(struct cisc_session *s, uint64_t fh, bool append);
void lc_file_del(struct cisc_session *s, uint64_t fh);
/* Reads the position of fh into *pos; returns -EBADF if unknown. */
int lc_file_pos(struct cisc_session *s, uint64_t fh, uint64_t *pos, bool *append);
/* Advances (or for append handles sets) the position after a transfer. */
void lc_file_set_pos(struct cisc_session *s, uint64_t fh, uint64_t pos);

#endif
