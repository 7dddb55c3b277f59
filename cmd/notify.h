/*
 * cmd/notify.h - systemd's readiness protocol (sd_notify), spoken without
 * libsystemd: one datagram of "KEY=VALUE" lines to the AF_UNIX socket
 * named by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 *
 * `cisc up` sends READY=1 (with MAINPID and a STATUS line) once the file
 * system is mounted and STOPPING=1 when the device starts to stop, so a
 * unit of Type=notify running `cisc up -f` is "active" exactly while the
 * mount serves.
 *
 * Invariants:
 *   1. Without $NOTIFY_SOCKET nothing is sent and nothing fails.
 *   2. A failure to notify never stops the device: it is reported by the
 *      return value only (the caller logs it).
 */
#ifndef CISC_CMD_NOTIFY_H
#define CISC_CMD_NOTIFY_H

/* Sends state (newline-separated assignments) to $NOTIFY_SOCKET.
 * Returns 1 when sent, 0 when there is no socket to notify, or -errno. */
int notify_send(const char *state);

#endif
