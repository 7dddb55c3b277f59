/* cmd/mnt.c - mount-point helpers (see mnt.h). */
#include "cmd/mnt.h"
#include "cmd/cmd.h"
#include "cmd/holders.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
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

/* Field 3 is major:minor, field 5 the mount point; the type follows the
 * " - " separator. On a match, *dev gets major:minor as the kernel shows
 * it (when dev is not NULL). */
static bool line_matches(char *line, const char *path, char dev[32])
{
    char *save = NULL, *mp = NULL, *mm = NULL;
    char *t = strtok_r(line, " ", &save);
    for (int i = 1; t && i < 5; i++) {
        t = mp = strtok_r(NULL, " ", &save);
        if (i == 2)
            mm = t;
    }
    if (!mp || !mm)
        return false;
    while ((t = strtok_r(NULL, " ", &save)) && strcmp(t, "-"))
        ;
    char *type = t ? strtok_r(NULL, " ", &save) : NULL;
    if (!type || strcmp(type, "fuse.ciscfs"))
        return false;
    unescape(mp);
    if (strcmp(mp, path))
        return false;
    if (dev)
        snprintf(dev, 32, "%s", mm);
    return true;
}

/* Field 5 of a mountinfo line is the mount point; after " - " come the
 * type and the source. True for a ciscfs line, both decoded. */
static bool split_ciscfs(char *line, char **mp, char **source)
{
    char *save = NULL, *t = strtok_r(line, " ", &save);
    for (int i = 1; t && i < 5; i++)
        t = *mp = strtok_r(NULL, " ", &save);
    while (t && (t = strtok_r(NULL, " ", &save)) && strcmp(t, "-"))
        ;
    char *type = t ? strtok_r(NULL, " ", &save) : NULL;
    *source = type ? strtok_r(NULL, " ", &save) : NULL;
    if (!type || !*source || strcmp(type, "fuse.ciscfs"))
        return false;
    unescape(*mp);
    unescape(*source);
    return true;
}

int mnt_each_ciscfs(int (*fn)(void *arg, const char *mnt, const char *source), void *arg)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char *line = NULL, *mp = NULL, *src = NULL;
    size_t cap = 0;
    int r = 0;
    while (!r && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (split_ciscfs(line, &mp, &src))
            r = fn(arg, mp, src);
    }
    free(line);
    fclose(f);
    return r < 0 ? r : 0;
}

/* The ciscfs mount on path (the last one, if stacked): true and its
 * major:minor in dev (may be NULL), or false. Plain system calls and a
 * stack buffer, no stdio or malloc: the reaper (a child forked from the
 * multithreaded device) calls it too. A line longer than the buffer is
 * skipped (mount options that long are not ciscfs's). */
static bool find_ciscfs(const char *path, char dev[32])
{
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[8192], cur[32];
    size_t have = 0;
    bool found = false, skip = false;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', have - (size_t)(start - buf))) != NULL) {
            *nl = '\0';
            if (!skip && line_matches(start, path, cur)) {
                found = true;
                if (dev)
                    memcpy(dev, cur, sizeof(cur));
            }
            skip = false;
            start = nl + 1;
        }
        have -= (size_t)(start - buf);
        memmove(buf, start, have);
        if (have == sizeof(buf) - 1) {   /* a line longer than the buffer */
            have = 0;
            skip = true;
        }
    }
    close(fd);
    return found;
}

bool mnt_is_ciscfs(const char *path)
{
    return find_ciscfs(path, NULL);
}

/* True if the mount on path has lost its device: its FUSE connection is
 * gone, so every call fails with ENOTCONN. A live mount answers. */
static bool mount_is_dead(const char *path)
{
    struct stat st;
    return stat(path, &st) == -1 && errno == ENOTCONN;
}

/* The reaper's life (mnt_reaper_start): waits for EOF on fd, then detaches
 * the mount on path while it is still the one numbered dev and dead. The
 * kernel reuses device numbers: a new device mounted on path after this
 * one ended may have the same major:minor, and it is alive, so it stays. */
static void reap(int fd, const char *path, const char *dev)
{
    char buf[16], now[32];
    ssize_t n;
    do
        n = read(fd, buf, sizeof(buf));   /* nobody writes: EOF when the device ends */
    while (n > 0 || (n < 0 && errno == EINTR));
    for (int i = 0; i < MNT_REAP_TRIES && find_ciscfs(path, now) && !strcmp(now, dev) &&
                    mount_is_dead(path);
         i++) {
        if (mnt_detach(path) == 0)
            break;
        usleep(100000);   /* e.g. fusermount3 holds the mount table lock */
    }
    _exit(0);
}

int mnt_reaper_start(const char *path)
{
    char dev[32];
    if (!find_ciscfs(path, dev))
        return -ENOENT;
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        return -errno;
    /* The child is born with its name: the thread's name is set around the
     * fork, so nobody who lists processes once the device reports ready can
     * see the reaper under the device's name (the child's own prctl would
     * run whenever the scheduler gets to it). */
    char own[16] = "";
    prctl(PR_GET_NAME, own);
    prctl(PR_SET_NAME, "cisc-reaper");
    pid_t pid = fork();
    int e = errno;
    if (pid != 0)
        prctl(PR_SET_NAME, own);
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -e;
    }
    if (pid == 0) {
        /* Hold nothing of the device's (the image lock, /dev/fuse, the
         * control socket): only the pipe's read end. */
        int fd = p[0];
        if (fd > 0)
            close_range(0, (unsigned)fd - 1, 0);
        close_range((unsigned)fd + 1, ~0u, 0);
        reap(fd, path, dev);
    }
    close(p[0]);
    return 0;   /* p[1] stays open, unwritten, until this process ends */
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

int mnt_unmount(const char *path)
{
    if (geteuid() == 0)
        return umount2(path, 0) ? -errno : 0;
    struct mnt_holder h;
    if (mnt_holders(path, &h, 1) > 0)
        return -EBUSY;   /* fusermount3 would say so, but not to us */
    pid_t pid = fork();
    if (pid == 0) {
        execlp("fusermount3", "fusermount3", "-u", "-q", path, (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    return -EBUSY;   /* a holder appeared meanwhile, or one we may not see */
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
