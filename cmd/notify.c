/* cmd/notify.c - sd_notify without libsystemd (see notify.h). */
#include "cmd/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The socket address of $NOTIFY_SOCKET: a path, or '@' for the abstract
 * namespace (a leading NUL). Returns the address length, 0 when unset,
 * or -EINVAL. */
static int notify_addr(struct sockaddr_un *sa)
{
    const char *e = getenv("NOTIFY_SOCKET");
    if (!e || !*e)
        return 0;
    size_t n = strlen(e);
    if ((e[0] != '/' && e[0] != '@') || n >= sizeof(sa->sun_path))
        return -EINVAL;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, e, n);
    if (e[0] == '@')
        sa->sun_path[0] = '\0';
    return (int)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
}

int notify_send(const char *state)
{
    struct sockaddr_un sa;
    int len = notify_addr(&sa);
    if (len <= 0)
        return len;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                       (socklen_t)len);
    int r = n < 0 ? -errno : 1;
    close(fd);
    return r;
}
