/* cmd/util.c - small helpers shared by subcommands. */
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cmd_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cisc %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

int cmd_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v))
        return -EINVAL;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end != '\0')
        return -EINVAL;
    double bytes = v * mul;
    if (bytes > (double)UINT64_MAX / 2)
        return -EINVAL;
    *out = (uint64_t)bytes;
    return 0;
}

int cmd_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    }
    return 0;
}

int cmd_print_usage(const struct cisc_cmd *cmd)
{
    fputs(cmd->usage, stdout);
    return 0;
}

static int mkdir_p(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0755);
        *p = '/';
        if (r && errno != EEXIST)
            return -errno;
    }
    if (mkdir(path, 0755) && errno != EEXIST)
        return -errno;
    return 0;
}

int cmd_default_image(char *buf, size_t size)
{
    char dir[PATH_MAX];
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && *xdg == '/')
        n = snprintf(dir, sizeof(dir), "%s/ciscfs", xdg);
    else if (home && *home)
        n = snprintf(dir, sizeof(dir), "%s/.local/share/ciscfs", home);
    else
        return -ENOENT;
    if (n < 0 || (size_t)n >= sizeof(dir))
        return -ENAMETOOLONG;
    int r = mkdir_p(dir);
    if (r)
        return r;
    n = snprintf(buf, size, "%s/default.img", dir);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
