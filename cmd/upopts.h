/*
 * cmd/upopts.h - the options of `cisc up` and of the mount(8) helper
 * (mount.ciscfs, mount.fuse.ciscfs), from one table in cmd/upopts.c.
 *
 * A row of the table is one option: its `cisc up` spelling (--name, -x),
 * its key in the helper's -o list, its kind (flag, number in a range,
 * size, choice of words, log file, mount option list), the field of
 * struct up_opts it sets, and its help text. The getopt parser of
 * `cisc up`, the helper's -o parser, `cisc up --help` and the error
 * messages are all derived from that row.
 *
 * Invariants:
 *   1. Every option the helper knows, `cisc up` knows, with the same
 *      values and ranges: a bad value fails both with exit status 2 and
 *      the same message ("cisc up: SPELLING wants WHAT, not 'VALUE'"),
 *      where only SPELLING differs (--cores / -o cores).
 *   2. `cisc up -o LIST` and the helper's -o LIST are read by one parser:
 *      table keys set options, other keys go to the FUSE mount (the helper
 *      also drops mount(8)'s generic options, e.g. defaults, x-*).
 *   3. A log path is absolute and was opened for appending when parsing
 *      succeeded (the daemon changes to / and opens it again).
 */
#ifndef CISC_CMD_UPOPTS_H
#define CISC_CMD_UPOPTS_H

#include "device/device.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct up_opts {
    struct dev_opts dev;        /* cores, sched, trace, queue_only, pollers, poll_us;
                                 * start() fills in the paths, model and progs */
    struct dm_model model;      /* --link-latency-ns, --core-speed */
    struct progs_limits progs;  /* --max-progs, --max-prog-insns, --prog-budget */
    unsigned tx;                /* --tx: index of macro, micro, autorec */
    unsigned media;             /* --media: 0 file, 1 flash */
    struct flash_geom flash;    /* --flash-*: 0 = scaled to the image */
    char members[4096];         /* --members N or IMG1,IMG2,...; "" = one image */
    char **member_paths;        /* upopts_members: the members, absolute */
    unsigned nmembers;          /* ... and how many (0: one image) */
    bool foreground;            /* -f: no daemon */
    bool helper;                /* run by mount(8): quiet, drops its generic -o keys */
    bool writeback;             /* --writeback: the kernel's writeback cache on the mount */
    uint64_t size;              /* --size: create IMAGE if missing; 0 = never */
    char log[PATH_MAX];         /* --log, absolute; "" = none */
    char fuse_opts[1024];       /* -o keys that are not ours: for the FUSE mount */
    const char *image, *mnt;    /* positional; NULL = the default ones */
};

/* Sets every option to its default: the table's for numbers, zero (none,
 * the first choice, off) for the rest. */
void upopts_init(struct up_opts *o);

/* Parses `cisc up`'s arguments (argv[0] is "up") into o, initialised by
 * upopts_init. Returns 0, or 2 after printing the error. */
int upopts_parse_args(int argc, char **argv, struct up_opts *o);

/* Parses the helper's arguments (`mount.ciscfs IMAGE DIR [-sfnv] [-o OPTS]
 * [-t TYPE] [-N NS]`) into o, initialised by upopts_init. Returns 0, or 2
 * after printing the error. */
int upopts_parse_helper(int argc, char **argv, struct up_opts *o);

/* Resolves --members into o->member_paths (absolute, each existing):
 * "N" names IMAGE.0 .. IMAGE.N-1 (IMAGE required), a list names the
 * members in order, member 0 then also naming the array (a single
 * positional argument is the mount point). Returns 0 (nothing to do
 * without --members), or 2 after printing the error, which names a
 * missing member. */
int upopts_members(struct up_opts *o);

/* Frees what upopts_members allocated. */
void upopts_free(struct up_opts *o);

/* Prints `cisc up --help`: the usage, then every option of the table. */
void upopts_help(FILE *f);

#endif
