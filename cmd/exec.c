/* cmd/exec.c - `cisc exec MOUNTPOINT -- COMMAND...`: runs an unmodified
 * program with libcisc-preload.so, which serves its file calls under
 * MOUNTPOINT through libcisc queues (integrations/preload/preload.h). */
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char exec_usage[] =
    "usage: cisc exec [--no-merge] [MOUNTPOINT] -- COMMAND [ARG]...\n"
    "\n"
    "Runs COMMAND with the library libcisc-preload.so preloaded: its file\n"
    "calls on paths under MOUNTPOINT (open, read, write, fsync, stat, rename,\n"
    "unlink, mkdir, readdir, stdio ...) go to the device through libcisc\n"
    "queue pairs, one per thread, instead of through the kernel and the FUSE\n"
    "mount; what the library does not serve (mmap, locks, ioctl ...) goes to\n"
    "the mount, which sees the same files. Children and programs COMMAND\n"
    "executes inherit it. Without MOUNTPOINT, the default mount.\n"
    "\n"
    "  --no-merge   do not merge concurrent writes into fused ops (AutoMerge)\n"
    "\n"
    "Environment: CISC_PRELOAD_LIB names the library to preload instead of the\n"
    "installed one; CISC_EXEC_STATS=1 makes every process print, at exit, its\n"
    "opens, write-side calls sent alone and merged, and demotions to the mount;\n"
    "CISC_EXEC_MERGE_INFLIGHT=N lets N merged ops of one descriptor run at once\n"
    "(default 2).\n"
    "\n"
    "Exit status: COMMAND's; 127 when it cannot be found, 126 when it cannot\n"
    "be run, 2 for a usage or mount error.\n";

/* The preload library: $CISC_PRELOAD_LIB, else beside this program's
 * installed libraries, else in the build tree it came from. */
static int find_lib(char *buf, size_t size)
{
    const char *env = getenv("CISC_PRELOAD_LIB");
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return access(buf, R_OK) ? -errno : 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        int k = snprintf(buf, size, "%s/../%s/libcisc-preload.so", exe, CISC_INSTALL_LIBDIR);
        if (k > 0 && (size_t)k < size && access(buf, R_OK) == 0)
            return 0;
    }
    snprintf(buf, size, "%s", CISC_PRELOAD_BUILD);
    return access(buf, R_OK) ? -ENOENT : 0;
}

/* LD_PRELOAD with lib first (kept once). */
static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old)
        return setenv("LD_PRELOAD", lib, 1);
    size_t n = strlen(lib) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s:%s", lib, old);
    int r = setenv("LD_PRELOAD", v, 1);
    free(v);
    return r;
}

static int run_exec(int argc, char **argv)
{
    bool merge = true;
    int i = 1;
    if (i < argc && !strcmp(argv[i], "--no-merge")) {
        merge = false;
        i++;
    }
    int dash = i;
    while (dash < argc && strcmp(argv[dash], "--"))
        dash++;
    if (dash >= argc - 1 || dash - i > 1)
        return cmd_fail("exec", "usage: cisc exec [--no-merge] [MOUNTPOINT] -- COMMAND...");
    char mnt[PATH_MAX], lib[PATH_MAX];
    int r = dash > i ? mnt_absolute(argv[i], mnt, sizeof(mnt)) : mnt_default(mnt, sizeof(mnt));
    if (r)
        return cmd_fail("exec", "bad mount point: %s", strerror(-r));
    if (!mnt_is_ciscfs(mnt))
        return cmd_fail("exec", "no ciscfs device is mounted on %s", mnt);
    if ((r = find_lib(lib, sizeof(lib))) != 0)
        return cmd_fail("exec", "libcisc-preload.so not found: %s", strerror(-r));
    if (setenv("CISC_EXEC_MOUNT", mnt, 1) || setenv("CISC_EXEC_MERGE", merge ? "1" : "0", 1) ||
        set_preload(lib))
        return cmd_fail("exec", "environment: %s", strerror(errno));
    execvp(argv[dash + 1], argv + dash + 1);
    int e = errno;
    fprintf(stderr, "cisc exec: %s: %s\n", argv[dash + 1], strerror(e));
    return e == ENOENT ? 127 : 126;
}

const struct cisc_cmd cmd_exec = {
    .name = "exec",
    .summary = "run a program with its file calls on the direct path (libcisc)",
    .usage = exec_usage,
    .run = run_exec,
};
