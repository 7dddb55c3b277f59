/* cmd/tenant.c - `cisc tenant set`: a tenant's scheduling weight on a
 * running device (root only; see sched.h for what a weight does). */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include "common/le.h"
#include "proto/ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char tenant_usage[] =
    "usage: cisc tenant set MOUNTPOINT TENANT --weight N\n"
    "\n"
    "Sets the scheduling weight of TENANT (a uid, or a pid when the device runs\n"
    "with --tenant pid) on the device serving MOUNTPOINT: under cfs and drf a\n"
    "tenant's virtual time runs 1/N as fast, so it gets N/100 of the device\n"
    "cores a default tenant gets (N = 1..10000, default 100). Root only.\n";

/* Sends the request; 0 or 2 after the message. */
static int send_weight(const char *mnt, uint32_t tenant, uint32_t weight)
{
    char sock[PATH_MAX];
    if (ctl_socket_path(mnt, sock, sizeof(sock)))
        return cmd_fail("tenant", "mount point path too long");
    int fd = ctl_connect(sock);
    if (fd < 0)
        return cmd_fail("tenant", "no device at %s (%s: %s)", mnt, sock, strerror(-fd));
    uint8_t req[8];
    le32_put(req, tenant);
    le32_put(req + 4, weight);
    int32_t st = 0;
    char rep[4];
    ssize_t n = ctl_call(fd, CTL_TENANT_SET, req, sizeof(req), &st, rep, sizeof(rep));
    close(fd);
    if (n < 0)
        return cmd_fail("tenant", "device at %s: %s", mnt, strerror((int)-n));
    if (st == -EPERM)
        return cmd_fail("tenant", "only root may set weights");
    if (st)
        return cmd_fail("tenant", "device at %s refused: %s", mnt, strerror(-st));
    printf("cisc tenant: %u has weight %u on %s\n", tenant, weight, mnt);
    return 0;
}

static int run_tenant(int argc, char **argv)
{
    uint64_t tenant, weight;
    if (argc != 6 || strcmp(argv[1], "set") || strcmp(argv[4], "--weight"))
        return cmd_fail("tenant", "usage: cisc tenant set MOUNTPOINT TENANT --weight N");
    if (cmd_parse_u64(argv[3], &tenant) || tenant > UINT32_MAX)
        return cmd_fail("tenant", "TENANT wants a uid or pid, not '%s'", argv[3]);
    if (cmd_parse_u64(argv[5], &weight) || weight < 1 || weight > 10000)
        return cmd_fail("tenant", "--weight wants 1..10000, not '%s'", argv[5]);
    char mnt[PATH_MAX];
    int r = mnt_absolute(argv[2], mnt, sizeof(mnt));
    if (r)
        return cmd_fail("tenant", "bad mount point: %s", strerror(-r));
    return send_weight(mnt, (uint32_t)tenant, (uint32_t)weight);
}

const struct cisc_cmd cmd_tenant = {
    .name = "tenant",
    .summary = "set a tenant's share of the device cores (weight)",
    .usage = tenant_usage,
    .run = run_tenant,
};
