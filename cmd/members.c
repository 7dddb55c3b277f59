/* cmd/members.c - `--members` of mkfs, fsck and resize (members.h). */
#include "cmd/members.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

/* "N": IMAGE.0 .. IMAGE.N-1. */
static int parse_count(const char *cmd, const char *spec, const char *image,
                       struct cmd_members *a)
{
    unsigned n = (unsigned)atoi(spec);
    if (strlen(spec) > 2 || n < 1 || n > MEDIA_ARRAY_MAX || !image)
        return cmd_fail(cmd, "--members N wants 1..%u and IMAGE (the members are "
                        "IMAGE.0 .. IMAGE.N-1)", MEDIA_ARRAY_MAX);
    for (; a->n < n; a->n++)
        if (asprintf(&a->path[a->n], "%s.%u", image, a->n) < 0) {
            a->path[a->n] = NULL;
            return cmd_fail(cmd, "out of memory");
        }
    a->name = image;
    return 0;
}

/* "IMG1,IMG2,...": each member named. */
static int parse_list(const char *cmd, const char *spec, struct cmd_members *a)
{
    for (const char *p = spec; *p; a->n++) {
        size_t len = strcspn(p, ",");
        if (!len || a->n == MEDIA_ARRAY_MAX || !(a->path[a->n] = strndup(p, len)))
            return cmd_fail(cmd, "--members wants a count 1..%u or a list IMG1,IMG2,... "
                            "of at most that many, not '%s'", MEDIA_ARRAY_MAX, spec);
        p += len + (p[len] == ',');
    }
    if (!a->n)
        return cmd_fail(cmd, "--members wants a count or a list of member images");
    a->name = a->path[0];
    return 0;
}

int cmd_members_parse(const char *cmd, const char *spec, const char *image,
                      struct cmd_members *a)
{
    memset(a, 0, sizeof(*a));
    bool count = *spec && strspn(spec, "0123456789") == strlen(spec);
    if (count)
        return parse_count(cmd, spec, image, a);
    if (image)
        return cmd_fail(cmd, "--members IMG1,IMG2,... names every member: no IMAGE");
    return parse_list(cmd, spec, a);
}

int cmd_members_open(const char *cmd, const struct cmd_members *a, unsigned flags,
                     struct media **out)
{
    char why[2 * 4096];
    int r = media_array_open_files((const char *const *)a->path, a->n, flags, why,
                                   sizeof(why), out);
    return r ? cmd_fail(cmd, "array %s: %s", a->name, why) : 0;
}

void cmd_members_free(struct cmd_members *a)
{
    for (unsigned i = 0; i < MEDIA_ARRAY_MAX; i++) {
        free(a->path[i]);
        a->path[i] = NULL;
    }
    a->n = 0;
}
