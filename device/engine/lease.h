/*
 * device/engine/lease.h - append leases: an O_APPEND write(2) through the
 * mount that the kernel sends as several FUSE WRITEs lands whole with
 * respect to every other appender.
 *
 * The kernel cuts a write(2) into pieces (at most max_write bytes, and
 * after a first partial page the page cache does not hold) and sends them
 * one after another, each once the previous one is answered, holding the
 * inode lock, so no other write through the mount comes between them. The
 * device appends each piece at the end of the file, so a libcisc append or
 * a fused op's append could land between two pieces. The FUSE door marks
 * every write of a write(2) it receives (ENG_WRITE_ORDERED) and the pieces
 * after which the write(2) may go on (ENG_WRITE_MORE, engine.h). Such a
 * piece, once appended, leaves its handle holding the inode's lease; until
 * the lease ends every other appender (cisc_append, a libcisc write on an
 * O_APPEND handle, a fused op that appends) is *parked*: it gives its
 * device core back and is submitted again when the lease ends. Nothing
 * waits on a core, so parked appenders never keep the holder's next piece
 * from running.
 *
 * A lease ends when its holder appends a piece without ENG_WRITE_MORE (the
 * write(2) is complete), when an ordered write of another handle appends
 * to the inode (the kernel's inode lock says the holder's write(2) is
 * over), or when the holder's handle is released. Each piece of the holder
 * renews it for LEASE_WAIT_NS while nobody is parked; once an appender is
 * parked the deadline stays, and when it passes the lease is *broken*: the
 * parked appenders run and every appender goes through until the holder's
 * write ends. So a parked appender waits at most LEASE_WAIT_NS (a writer
 * that died between pieces, a write(2) whose last piece was full, or one
 * that streams for longer while others wait), and a write(2) is kept whole
 * unless it keeps another appender waiting that long.
 *
 * States of an inode: free --MORE piece--> held --waiter parks--> contended
 * --deadline--> broken; held/contended --holder's last piece, takeover,
 * release--> free; broken --holder's last piece, takeover, release--> free;
 * held --deadline, then another appender--> free.
 *
 * Invariants:
 *   1. At most one lease per inode; a broken lease has no parked appender.
 *   2. Admission (lease_enter), grants and renewals (lease_exit) run with
 *      the inode's stripe held exclusive (engine_int.h), so an appender
 *      that lease_enter admitted appends before a lease on its inode can be
 *      granted, and one that sees a lease parks before that lease can end.
 *   3. Every parked command is submitted again exactly once (eng_resume):
 *      when its lease ends or breaks, or when the table is closed.
 *   4. Lock order: inode stripe -> table mutex; commands are resubmitted
 *      after the mutex is released.
 */
#ifndef CISC_DEVICE_ENGINE_LEASE_H
#define CISC_DEVICE_ENGINE_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#define LEASE_WAIT_NS 1000000000ull   /* longest a parked appender waits (default) */

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct eng_cmd;
struct hdl_table;
struct lease_table;

/* Who appends: the handle, and what the door said about the write. */
struct lease_who {
    const struct hdl_table *tbl;   /* the handle's table */
    uint64_t fh;
    bool ordered;                  /* ENG_WRITE_ORDERED: a piece of a mount write(2) */
    bool more;                     /* ENG_WRITE_MORE: the write(2) may go on */
};

/* Creates the table of engine e and starts its timer thread (which breaks
 * leases whose deadline passed with appenders parked); wait_ns replaces
 * LEASE_WAIT_NS when nonzero. Returns 0 or -errno. */
int lease_table_create(struct engine *e, uint64_t wait_ns, struct lease_table **out);

/* Ends every lease, submits the parked commands again and grants no new
 * lease; for eng_destroy, while the scheduler still takes commands. */
void lease_table_close(struct lease_table *t);

/* Stops the timer and frees t (closed first). */
void lease_table_destroy(struct lease_table *t);

/* Before w appends to ino, with ino's stripe held exclusive. Returns 0:
 * append now; or 1: c is parked (the caller unlocks and returns
 * ENG_PARKED; c runs again when the lease ends). */
int lease_enter(struct lease_table *t, uint64_t ino, const struct lease_who *w,
                struct eng_cmd *c);

/* After an ordered writer w appended to ino (ok: the whole piece went in),
 * still under the stripe: grants or renews w's lease when w->more, else
 * ends it. Does nothing for other appenders. */
void lease_exit(struct lease_table *t, uint64_t ino, const struct lease_who *w, bool ok);

/* Handle fh of tbl, open on ino, is released: ends its lease. */
void lease_release(struct lease_table *t, uint64_t ino, const struct hdl_table *tbl,
                   uint64_t fh);

/* Commands parked now. */
uint64_t lease_parked(struct lease_table *t);

#ifdef __cplusplus
}
#endif

#endif
