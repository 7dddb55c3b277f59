/*
 * cmd/holders.h - who keeps a mount busy, as fuser -m finds them: the
 * processes with an open file, their working directory or their root
 * directory under the mount point (from /proc/PID/fd, cwd and root).
 * `cisc down` names them when it refuses a busy mount, and a device run
 * by a user (which cannot ask the kernel to unmount without the lazy
 * flag through fusermount3 and learn why it failed) checks with them.
 *
 * Only processes the caller may inspect are seen: all of them for root;
 * for a user, their own, which are the only ones that can use a mount
 * made without allow_other.
 */
#ifndef CISC_CMD_HOLDERS_H
#define CISC_CMD_HOLDERS_H

#include <stdbool.h>
#include <stdio.h>

struct mnt_holder {
    int pid;
    char comm[32];       /* the process's command name */
    char what[24];       /* "cwd", "root", or "fd 3" */
    bool writing;        /* an fd open for writing */
    char path[256];      /* the file, as the process sees it */
};

/* Finds the holders of the mount at mnt (absolute, normalised), the first
 * max of them into out. Returns how many there are (may be more than
 * max), or -errno when /proc cannot be read. */
int mnt_holders(const char *mnt, struct mnt_holder *out, unsigned max);

/* Prints n holders to f, one "  PID COMMAND WHAT PATH" line each, and a
 * line saying how many more there are when total > n. */
void mnt_holders_print(FILE *f, const struct mnt_holder *h, unsigned n, unsigned total);

#endif
