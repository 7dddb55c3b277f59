/* libcisc/limits.c - cisc_limits: the size limits of a fused op on a
 * running device. The fixed ones come from the protocol's constants; the
 * per-step and per-op byte limits depend on the device's memory budget
 * (cisc up --device-ram) and are read from the "limits" line of its
 * status report. */
#include "libcisc/client_int.h"

#include "proto/ctl.h"
#include "proto/progs_wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_BLOCK_MAX (64u << 20)   /* bpf/blocks.h VM_BLOCK_SIZE_MAX */

_Static_assert(CISC_VEC_MAX == WIRE_MAX_STEPS, "steps per op agree");

/* The "limits step_bytes S op_bytes O" line of a status report. */
static int parse_limits(const char *text, struct cisc_limits *out)
{
    const char *l = strstr(text, "\nlimits ");
    unsigned long long step, op;
    if (!l || sscanf(l + 1, "limits step_bytes %llu op_bytes %llu", &step, &op) != 2)
        return -EPROTO;
    out->step_bytes = step;
    out->op_bytes = op;
    return 0;
}

CISC_API int cisc_limits(struct cisc_session *s, struct cisc_limits *out)
{
    if (!s || !out)
        return -EINVAL;
    *out = (struct cisc_limits){ .steps = CISC_VEC_MAX, .handles = CISC_VEC_MAX_FH,
                                 .path_bytes = WIRE_PATH_MAX - 1,
                                 .prog_object_bytes = PROGS_OBJ_MAX,
                                 .prog_block_bytes = LIMIT_BLOCK_MAX };
    char *text = calloc(1, CTL_MAX_PAYLOAD + 1);
    if (!text)
        return -ENOMEM;
    int32_t st = 0;
    pthread_mutex_lock(&s->lock);
    ssize_t n = ctl_call(s->fd, CTL_STATUS, NULL, 0, &st, text, CTL_MAX_PAYLOAD);
    pthread_mutex_unlock(&s->lock);
    int r = n < 0 ? (n == -ECONNRESET || n == -EPIPE ? -ENOTCONN : (int)n) : st;
    if (!r) {
        text[n] = '\0';
        r = parse_limits(text, out);
    }
    free(text);
    return r;
}
