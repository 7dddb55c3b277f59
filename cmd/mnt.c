/* cmd/mnt.c - mount-point helpers (see mnt.h). */
#include "cmd/mnt.h"
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

static int append_part(char *buf, size_t size, size_t *len, const char *p, size_t n)
{
    if (n == 0 || (n == 1 && p[0] == '.'))
        return 0;
    if (n == 2 && p[0] == '.' && p[1] == '.') {
        while (*len > 0 && buf[*len - 1] != '/')
            (*len)--;
        if (*len > 0)
            (*len)--;
        buf[*len] = '\0';
        return 0;
    }
    if (*len + n + 2 > size)
        return -ENAMETOOLONG;
    buf[(*len)++] = '/';
    memcpy(buf + *len, p, n);
    *len += n;
    buf[*len] = '\0';
    return 0;
}

static int normalize(const char *in, char *buf, size_t size, size_t *len)
{
    for (const char *p = in; *p;) {
        while (*p == '/')
            p++;
        const char *e = strchrnul(p, '/');
        int r = append_part(buf, size, len, p, (size_t)(e - p));
        if (r)
            return r;
        p = e;
    }
    return 0;
}

int mnt_absolute(const char *path, char *buf, size_t size)
{
    size_t len = 0;
    if (size < 2)
        return -ENAMETOOLONG;
    buf[0] = '\0';
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            return -errno;
        int r = normalize(cwd, buf, size, &len);
        if (r)
            return r;
    }
    int r = normalize(path, buf, size, &len);
    if (!r && len == 0)
        strcpy(buf, "/");
    return r;
}

/* Decodes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
            *o++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
}

/* Field 5 is the mount point; the type follows the " - " separator. */
static bool line_matches(char *line, const char *path)
{
    char *save = NULL, *mp = NULL;
    char *t = strtok_r(line, " ", &save);
    for (int i = 1; t && i < 5; i++)
        t = mp = strtok_r(NULL, " ", &save);
    if (!mp)
        return false;
    while ((t = strtok_r(NULL, " ", &save)) && strcmp(t, "-"))
        ;
    char *type = t ? strtok_r(NULL, " ", &save) : NULL;
    if (!type || strcmp(type, "fuse.ciscfs"))
        return false;
    unescape(mp);
    return !strcmp(mp, path);
}

bool mnt_is_ciscfs(const char *path)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getline(&line, &cap, f) > 0)
        found = line_matches(line, path);
    free(line);
    fclose(f);
    return found;
}

int mnt_detach(const char *path)
{
    if (umount2(path, MNT_DETACH) == 0)
        return 0;
    int saved = errno;
    pid_t pid = fork();
    if (pid == 0) {
        execlp("fusermount3", "fusermount3", "-u", "-z", "-q", path, (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    errno = saved;
    return -1;
}

int mnt_default(char *buf, size_t size)
{
    char img[PATH_MAX];
    int r = cmd_default_image(img, sizeof(img));
    if (r)
        return r;
    int n = snprintf(buf, size, "%.*s/mnt", (int)(strrchr(img, '/') - img), img);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
