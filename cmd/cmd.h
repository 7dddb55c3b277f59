/*
 * cmd/cmd.h - the `cisc` command line: one subcommand per file.
 *
 * Each cmd/<name>.c defines `const struct cisc_cmd cmd_<name>` and adds a
 * CISC_CMD(<name>) line to cmd/commands.h; main.c dispatches on argv[1].
 * Invariants:
 *   1. A subcommand returns its exit status (0 ok, 1 "checked and found a
 *      problem", 2 usage or operational error); it never calls exit()
 *      except after fork.
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

#define CISC_CMD(name) extern const struct cisc_cmd cmd_##name;
#include "cmd/commands.h"
#undef CISC_CMD

/* Prints "cisc <cmd>: <message>\n" to stderr. Returns 2. */
int cmd_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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
