/*
 * fusefs/tmpfile.c - O_TMPFILE on a libfuse that does not know it.
 *
 * The kernel (FUSE protocol 7.37+) sends open(dir, O_TMPFILE) as
 * FUSE_TMPFILE (opcode 51), laid out exactly as FUSE_CREATE: a struct
 * fuse_create_in, then the name of the kernel's unnamed dentry, "/", and
 * it expects CREATE's reply (fuse_entry_out + fuse_open_out). libfuse 3.14
 * answers opcodes it does not know with ENOSYS, and the kernel then turns
 * every O_TMPFILE into EOPNOTSUPP. So the request is renamed CREATE as it
 * is read from /dev/fuse (killpriv.c's read hook, which every request
 * passes, in our loop and libfuse's alike), and fusefs_ops.c's create
 * handler sends a create named "/" to the engine as TMPFILE: one reply
 * path, one set of bookkeeping (known.c lookup counts, wback.c open
 * counts) for both.
 *
 * Invariants:
 *   1. Only a whole FUSE_TMPFILE request is changed, and only its opcode.
 *   2. A CREATE named "/" comes only from here: the kernel never sends a
 *      name containing '/' (a path component cannot hold one).
 */
#include "fusefs/fusefs_int.h"

#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>

#ifndef FUSE_TMPFILE
#define FUSE_TMPFILE 51   /* linux/fuse.h before protocol 7.37 */
#endif

void fusefs_tmpfile_request(void *buf, size_t n)
{
    struct fuse_in_header h;
    if (n < sizeof(h) + sizeof(struct fuse_create_in))
        return;
    memcpy(&h, buf, sizeof(h));
    if (h.opcode != FUSE_TMPFILE || h.len != n)
        return;
    uint32_t op = FUSE_CREATE;
    memcpy((char *)buf + offsetof(struct fuse_in_header, opcode), &op, sizeof(op));
}

bool fusefs_tmpfile_name(const char *name)
{
    return name[0] == '/' && name[1] == '\0';
}
