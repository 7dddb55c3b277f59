/* cmd/main.c - `cisc`: dispatches to the subcommand named by argv[1]. */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include <string.h>

static const struct cisc_cmd *const commands[] = {
#define CISC_CMD(name) &cmd_##name,
#include "cmd/commands.h"
#undef CISC_CMD
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_overview(FILE *f)
{
    fputs("usage: cisc COMMAND [ARGS]...\n\n"
          "ciscfs: a computational storage device simulator.\n\n"
          "Commands:\n", f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fputs("\nRun 'cisc COMMAND --help' for a command's options.\n\n" CMD_EXIT_HELP, f);
}

static const struct cisc_cmd *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i]->name, name))
            return commands[i];
    return NULL;
}

/* Called as mount.ciscfs or mount.fuse.ciscfs (by mount(8)). */
static int is_mount_helper(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    return !strcmp(base, "mount.ciscfs") || !strcmp(base, "mount.fuse.ciscfs");
}

int main(int argc, char **argv)
{
    if (argc > 0 && is_mount_helper(argv[0]))
        return cmd_mount_helper(argc, argv);
    if (argc < 2) {
        print_overview(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
        print_overview(stdout);
        return 0;
    }
    if (!strcmp(name, "--version")) {
        printf("cisc %s\n", CISC_VERSION);
        return 0;
    }
    if (!strcmp(name, "help")) {
        const struct cisc_cmd *c = argc > 2 ? find_command(argv[2]) : NULL;
        if (!c) {
            print_overview(stdout);
            return argc > 2 ? 2 : 0;
        }
        return cmd_print_usage(c);
    }
    const struct cisc_cmd *c = find_command(name);
    if (!c) {
        fprintf(stderr, "cisc: unknown command '%s'\n", name);
        print_overview(stderr);
        return 2;
    }
    if (cmd_wants_help(argc - 1, argv + 1))
        return cmd_print_usage(c);
    return c->run(argc - 1, argv + 1);
}
