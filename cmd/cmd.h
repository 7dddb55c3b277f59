/*
 * cmd/cmd.h - the `cisc` command line: one subcommand per file.
 *
 * Each cmd/<name>.c defines `const struct cisc_cmd cmd_<name>` and adds a
 * CISC_CMD(<name>) line to cmd/commands.h; main.c dispatches on argv[1].
 * Invariants:
 *   1. A subcommand returns its exit status, one of enum cmd_exit (the
 *      same three meanings for every subcommand, listed in its help, the
 *      man pages and the README); it never calls exit() except after fork.
 *   2. `cisc CMD --help` prints the same text as `cisc help CMD`, to stdout,
 *      and exits 0.
 *   3. Errors go to stderr as one line: "cisc CMD: what went wrong".
 */
#ifndef CISC_CMD_H
#define CISC_CMD_H

#include <stdint.h>
#include <stdio.h>

struct cisc_cmd {
    const char *name;
    const char *summary;                 /* one line for `cisc --help` */
    const char *usage;                   /* full help text, or NULL and: */
    void (*help)(FILE *f);               /* prints it (a text built from a table) */
    int (*run)(int argc, char **argv);   /* argv[0] is the subcommand name */
};

/* Exit statuses. The one table of what they mean:
 *   0  the operation succeeded;
 *   1  the operation ran and failed: fsck found problems, an image is not
 *      a valid StorageFS image, a program was rejected (by the verifier,
 *      a limit of the device) or failed (its error, its budget), the
 *      device stopped with an error;
 *   2  usage or environment error: a bad option or argument, a file,
 *      image, mount point, device or program that is missing or may not
 *      be used (permission), a resource that ran out. */
enum cmd_exit { CMD_OK = 0, CMD_FAILED = 1, CMD_USAGE = 2 };

/* The exit-status paragraph every help text ends with. */
#define CMD_EXIT_HELP \
    "Exit status: 0 success, 1 the operation failed, 2 usage or environment error.\n"

#define CISC_CMD(name) extern const struct cisc_cmd cmd_##name;
#include "cmd/commands.h"
#undef CISC_CMD

/* Prints "cisc <cmd>: <message>\n" to stderr. Returns CMD_USAGE (2): a
 * usage or environment error. */
int cmd_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Same message; returns CMD_FAILED (1): the operation ran and failed. */
int cmd_failed(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Rejects an option where a subcommand takes none: returns 0 when arg is
 * an operand (or "-", or NULL), else prints "unknown option" and returns 2. */
int cmd_no_option(const char *cmd, const char *arg);

/* The user name of uid ("root"), or the number when it has none. */
const char *cmd_user_name(uint32_t uid, char *buf, size_t size);

/* mkdir -p path (mode 0755). Returns 0 or -errno. */
int cmd_mkdir_p(const char *path);

/* Parses a size such as "4096", "64K", "1G", "1.5T" (binary units).
 * Returns 0 and sets *out, or -EINVAL. */
int cmd_parse_size(const char *s, uint64_t *out);

/* Parses a number in C syntax (123, 0x1f, 017), a negative one (-5) as
 * its two's complement. Returns 0 and sets *v, or -EINVAL. */
int cmd_parse_u64(const char *s, uint64_t *v);

/* Parses one `--arg N=V` of a device program (ctx->arg[N], N = 0..3) into
 * arg[]: V is a number (123, -5, 0x1f) or str:TEXT, whose bytes fill
 * arg[N], arg[N+1], ... little-endian, the last of them NUL-padded. The
 * words it fills are replaced, never merged with an earlier --arg (an
 * empty str: fills arg[N] with zeros). Returns 0, or 2 after printing
 * "cisc CMD: --arg ...: why". */
int cmd_parse_prog_arg(const char *cmd, const char *s, uint64_t arg[4]);

/* True when argv holds -h or --help before any "--". */
int cmd_wants_help(int argc, char **argv);

/* Prints cmd's help text to stdout; returns 0. */
int cmd_print_usage(const struct cisc_cmd *cmd);

/* Default image path: $XDG_DATA_HOME/ciscfs/default.img, else
 * $HOME/.local/share/ciscfs/default.img. Creates the directory.
 * Returns 0 or -errno. */
int cmd_default_image(char *buf, size_t size);

#endif
