/* libcisc/error.c - cisc_strerror: one table of the error values libcisc
 * gives a meaning of its own; every other value is strerror's. */
#include <cisc/cisc.h>

#include <errno.h>
#include <string.h>

static const struct {
    int err;
    const char *msg;
} meanings[] = {
    { ENODEV, "not a ciscfs mount point (no ciscfs device serves it)" },
    { ECONNREFUSED, "the ciscfs device of this mount does not answer (it died: cisc down "
                    "detaches the mount)" },
    { ENOTCONN, "the device went away" },
    { EPROTONOSUPPORT, "the device speaks another protocol version than this libcisc" },
    { E2BIG, "over a size limit of the device: a step's output or READ length (64 MiB at "
             "most), all of one op's buffers (256 MiB at most), steps per op (64) or "
             "handles per op (16); see cisc_limits()" },
    { ETIME, "stopped by a time limit: a program's instruction budget or the op's device "
             "time limit" },
    { ENOEXEC, "the program is stored but no longer verifies" },
    { EOVERFLOW, "a step's output is larger than its capacity" },
    { ECANCELED, "the step did not run (an earlier step failed)" },
    { EDQUOT, "over a per-user or per-tenant limit of the device (queues, arena, programs)" },
};

CISC_API const char *cisc_strerror(int err)
{
    int e = err < 0 ? -err : err;
    for (size_t i = 0; i < sizeof(meanings) / sizeof(meanings[0]); i++)
        if (meanings[i].err == e)
            return meanings[i].msg;
    return strerror(e);
}
