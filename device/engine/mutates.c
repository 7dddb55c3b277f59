/* device/engine/mutates.c - the read-only rule (engine.h, invariant 6):
 * which commands change the file system. A read-only engine refuses
 * those at dispatch, before they run, whichever door sent them; StorageFS
 * mounted read-only is the backstop beneath (its every write path says
 * -EROFS too), so a command this rule missed still changes nothing. */
#include "device/engine/engine_int.h"
#include "device/engine/fused/fused.h"

#include "proto/wire.h"

#include <fcntl.h>
#include <unistd.h>

/* Opcodes that change something whatever their operands. */
static const bool always[ENG_OP_COUNT] = {
    [ENG_OP_SETATTR] = true,     [ENG_OP_MKNOD] = true,       [ENG_OP_MKDIR] = true,
    [ENG_OP_SYMLINK] = true,     [ENG_OP_LINK] = true,        [ENG_OP_UNLINK] = true,
    [ENG_OP_RMDIR] = true,       [ENG_OP_RENAME] = true,      [ENG_OP_CREATE] = true,
    [ENG_OP_WRITE] = true,       [ENG_OP_SETXATTR] = true,    [ENG_OP_REMOVEXATTR] = true,
    [ENG_OP_FALLOCATE] = true,   [ENG_OP_COPY_RANGE] = true,  [ENG_OP_UNLINK_PATH] = true,
    [ENG_OP_MKDIR_PATH] = true,  [ENG_OP_RMDIR_PATH] = true,  [ENG_OP_RENAME_PATH] = true,
    [ENG_OP_APPEND] = true,      [ENG_OP_FTRUNCATE] = true,   [ENG_OP_TMPFILE] = true,
    [ENG_OP_SETXATTR_PATH] = true, [ENG_OP_REMOVEXATTR_PATH] = true,
};

/* An open that writes, truncates or may create. */
static bool open_mutates(uint32_t oflags)
{
    return (oflags & O_ACCMODE) != O_RDONLY || (oflags & (O_TRUNC | O_CREAT));
}

static bool step_mutates(const struct fop_step *s)
{
    switch (s->kind) {
    case WIRE_STEP_OPEN: return open_mutates(s->oflags);
    case WIRE_STEP_WRITE:
    case WIRE_STEP_APPEND:
    case WIRE_STEP_TRUNCATE:
    case WIRE_STEP_UNLINK: return true;
    default: return false;
    }
}

static bool cisc_mutates(const struct eng_cisc *v, unsigned *step)
{
    for (unsigned i = 0; v && i < v->n && i < WIRE_MAX_STEPS; i++)
        if (step_mutates(&v->st[i])) {
            if (step)
                *step = i;
            return true;
        }
    return false;
}

bool eng_cmd_mutates(const struct eng_cmd *c, unsigned *step)
{
    if (c->op >= ENG_OP_COUNT)
        return false;
    if (always[c->op])
        return true;
    switch (c->op) {
    case ENG_OP_OPEN:
    case ENG_OP_OPEN_PATH: return open_mutates(c->flags);
    case ENG_OP_ACCESS: return (c->mode & W_OK) != 0;
    case ENG_OP_CISC: return cisc_mutates(c->cisc, step);
    default: return false;
    }
}

bool eng_read_only(const struct engine *e)
{
    return e->read_only;
}
