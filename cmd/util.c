/* cmd/util.c - small helpers shared by subcommands. */
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void vmessage(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "cisc %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cmd_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    return CMD_USAGE;
}

int cmd_failed(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    return CMD_FAILED;
}

int cmd_no_option(const char *cmd, const char *arg)
{
    if (!arg || arg[0] != '-' || !arg[1])
        return 0;
    return cmd_fail(cmd, "unknown option '%s' (see cisc %s --help)", arg, cmd);
}

const char *cmd_user_name(uint32_t uid, char *buf, size_t size)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r((uid_t)uid, &pw, tmp, sizeof(tmp), &res) == 0 && res && res->pw_name)
        snprintf(buf, size, "%s", res->pw_name);
    else
        snprintf(buf, size, "%u", uid);
    return buf;
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

int cmd_parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    if (*s == '-')
        *v = (uint64_t)strtoll(s, &end, 0);
    else
        *v = strtoull(s, &end, 0);
    return end == s || *end || errno ? -EINVAL : 0;
}

int cmd_parse_prog_arg(const char *cmd, const char *s, uint64_t arg[4])
{
    if (s[0] < '0' || s[0] > '3' || s[1] != '=')
        return cmd_fail(cmd, "--arg %s: want N=V with N from 0 to 3", s);
    unsigned n = (unsigned)(s[0] - '0');
    const char *v = s + 2;
    if (strncmp(v, "str:", 4) != 0) {
        uint64_t x;
        if (cmd_parse_u64(v, &x))
            return cmd_fail(cmd, "--arg %s: '%s' is not a number or str:TEXT", s, v);
        arg[n] = x;
        return 0;
    }
    v += 4;
    size_t len = strlen(v), room = (4 - n) * 8;
    if (len > room)
        return cmd_fail(cmd, "--arg %s: %zu bytes do not fit in arg[%u..3] (%zu bytes)", s, len,
                        n, room);
    size_t words = len ? (len + 7) / 8 : 1;
    for (size_t w = 0; w < words; w++) {
        uint8_t b[8] = { 0 };
        memcpy(b, v + 8 * w, len - 8 * w < 8 ? len - 8 * w : 8);
        arg[n + w] = 0;   /* replaced, not OR-ed into an earlier --arg */
        for (unsigned i = 0; i < 8; i++)
            arg[n + w] |= (uint64_t)b[i] << (8 * i);
    }
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
    if (cmd->help)
        cmd->help(stdout);
    else
        fputs(cmd->usage, stdout);
    /* The exit statuses are the same for every command (cmd.h): a help
     * text that does not spell out its own cases gets the common line. */
    if (!cmd->help && !strstr(cmd->usage, "Exit status:"))
        fputs("\n" CMD_EXIT_HELP, stdout);
    return 0;
}

int cmd_mkdir_p(const char *p)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s", p) >= (int)sizeof(path))
        return -ENAMETOOLONG;
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
    int r = cmd_mkdir_p(dir);
    if (r)
        return r;
    n = snprintf(buf, size, "%s/default.img", dir);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
