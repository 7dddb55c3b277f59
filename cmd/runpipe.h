/*
 * cmd/runpipe.h - `cisc run` over a pipe (stdin, <(cmd), a FIFO): the
 * host's bytes go to the device chunk by chunk, each a fused op whose
 * program step reads them from the queue's arena (CISC_IN_BUF), its state
 * carried from op to op by a stream, as cisc_prog_run does for a file of
 * the device.
 *
 * Invariants:
 *   1. The program sees one continuous input: blocks of o->block_size at
 *      increasing offsets, the last block flagged only in the last op (a
 *      chunk is sent only once the next byte, or EOF, has been read).
 *   2. With o->output, the result goes to a temporary file beside it that
 *      replaces it only when the whole run succeeded (cisc_prog_run's
 *      promise); otherwise every chunk's result goes to o->sink in order.
 */
#ifndef CISC_CMD_RUNPIPE_H
#define CISC_CMD_RUNPIPE_H

#include <cisc/cisc.h>

/* Runs o->prog over everything read from fd until EOF, on queue q of
 * session s. st as for cisc_prog_run (failed_file 1 is the pipe).
 * Returns 0 or -errno, as cisc_prog_run does. */
int runpipe_run(struct cisc_session *s, struct cisc_queue *q, int fd, const struct cisc_prog_run_opts *o,
                struct cisc_prog_run_stats *st);

/* Arena bytes the run needs beyond cisc_prog_run's: its input chunk. */
uint64_t runpipe_chunk(const struct cisc_prog_run_opts *o);

#endif
