/* prog_common.h - what the example callers share: connect to a device and
 * make sure a program is loaded (load it from an object file if not). */
#ifndef PROG_COMMON_H
#define PROG_COMMON_H

#include <cisc/cisc.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Opens a session and a queue on the device mounted at mnt. */
static inline int connect_device(const char *mnt, struct cisc_session **s,
                                 struct cisc_queue **q)
{
    int r = cisc_session_open(mnt, s);
    if (r) {
        fprintf(stderr, "no device at %s: %s\n", mnt, strerror(-r));
        return r;
    }
    r = cisc_queue_create(*s, q);
    if (r) {
        fprintf(stderr, "cannot create a queue: %s\n", strerror(-r));
        cisc_session_close(*s);
    }
    return r;
}

/* The id of program `name`, loading it from obj first if the device has
 * no program of that name. */
static inline int ensure_program(struct cisc_session *s, const char *name, const char *obj,
                                 uint32_t *id)
{
    if (cisc_prog_id(s, name, id) == 0)
        return 0;
    struct cisc_prog_load_opts o = { .name = name };
    struct cisc_prog_info info;
    char msg[2048];
    int r = cisc_prog_load_file(s, obj, &o, &info, msg, sizeof(msg));
    if (r) {
        fprintf(stderr, "%s: %s\n", obj, msg[0] ? msg : strerror(-r));
        return r;
    }
    *id = info.id;
    return 0;
}

/* cisc_prog_run sink: the result goes to standard output. */
static inline int to_stdout(void *arg, const void *buf, size_t len)
{
    return fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
}

#endif
