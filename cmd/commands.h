/* cmd/commands.h - the list of subcommands, in the order `cisc --help` shows them.
 * One line per subcommand; no include guard (X-macro). */
CISC_CMD(mkfs)
CISC_CMD(up)
CISC_CMD(down)
CISC_CMD(status)
CISC_CMD(recovery)
CISC_CMD(tenant)
CISC_CMD(top)
CISC_CMD(fsck)
CISC_CMD(info)
CISC_CMD(bpf)
CISC_CMD(prog)
CISC_CMD(run)
