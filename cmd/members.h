/*
 * cmd/members.h - the `--members` argument of cisc mkfs, fsck and resize:
 * an array of member images (device/media/media.h "Arrays") named by a
 * count and IMAGE (IMAGE.0 .. IMAGE.N-1) or by a list IMG1,IMG2,...
 * (cisc up reads the same two forms in cmd/upopts.c, resolving paths).
 *
 * Invariants:
 *   1. After a successful parse, path[0..n) are the members in array
 *      order (1 <= n <= MEDIA_ARRAY_MAX) and name is what messages call
 *      the array: IMAGE in the count form, member 0 in the list form.
 *   2. cmd_members_free frees whatever a parse allocated, also after a
 *      failed one.
 */
#ifndef CISC_CMD_MEMBERS_H
#define CISC_CMD_MEMBERS_H

#include "device/media/media.h"

struct cmd_members {
    char *path[MEDIA_ARRAY_MAX];
    unsigned n;
    const char *name;             /* invariant 1 */
};

/* Parses spec ("N" with image, or "IMG1,IMG2,..." with image NULL) for
 * subcommand cmd. Returns 0, or CMD_USAGE after printing the error. */
int cmd_members_parse(const char *cmd, const char *spec, const char *image,
                      struct cmd_members *a);

/* Opens the array as the device does (media_array_open_files: labels
 * checked, a missing, swapped or foreign member named) with the media
 * flags of media_open_file. Returns 0 and sets *out, or CMD_USAGE after
 * printing the reason ("in use by a running device" when locked). */
int cmd_members_open(const char *cmd, const struct cmd_members *a, unsigned flags,
                     struct media **out);

/* Frees what cmd_members_parse allocated. */
void cmd_members_free(struct cmd_members *a);

#endif
