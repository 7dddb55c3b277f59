/* cmd/commands.h - the list of subcommands, in the order `cisc --help` shows them.
 * One line per subcommand; no include guard (X-macro). */
CISC_CMD(bpf)
