/*
 * libcisc/xattr.c - extended attributes (and with them POSIX ACLs) and
 * fallocate through libcisc: one command each, like risc.c's calls, with
 * the names and errors of the xattr(7) system calls and fallocate(2).
 * The device checks them with the session's credentials (engine_ops.c),
 * exactly as it checks the mount's requests.
 */
#include "libcisc/client_int.h"

#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#define LC_XATTR_NAME_MAX 255u
#define LC_XATTR_SIZE_MAX 65536u

/* "path\0name" in the arena; *off to free with lc_arena_free. name NULL:
 * the path alone (listxattr). */
static int stage_path_name(struct cisc_queue *q, const char *path, const char *name,
                           uint64_t *off, size_t *len)
{
    size_t a = strlen(path), b = name ? strlen(name) : 0;
    if (a >= WIRE_PATH_MAX)
        return -ENAMETOOLONG;
    if (a == 0)
        return -ENOENT;
    if (name && (b == 0 || b > LC_XATTR_NAME_MAX))
        return -ERANGE;   /* as getxattr(2) for an empty or too long name */
    *len = name ? a + 1 + b : a;
    int r = lc_arena_alloc(q, *len, off);
    if (r)
        return r;
    char *p = lc_arena_ptr(q, *off);
    memcpy(p, path, a);
    if (name) {
        p[a] = '\0';
        memcpy(p + a + 1, name, b);
    }
    return 0;
}

/* One xattr command: (path, name) staged, the value buffer staged in
 * the result area (copied in for set, out for get/list). */
static int64_t xattr_call(struct cisc_queue *q, uint8_t op, const char *path,
                          const char *name, void *value, size_t size, unsigned flags,
                          bool in)
{
    if (!q)
        return -EINVAL;
    if (!path || (size && !value) || (op != WIRE_OP_LISTXATTR && !name))
        return -EFAULT;
    uint64_t off, voff = 0;
    size_t len;
    int r = stage_path_name(q, path, op == WIRE_OP_LISTXATTR ? NULL : name, &off, &len);
    if (r)
        return r;
    if (size && (r = lc_arena_alloc(q, size, &voff)) != 0) {
        lc_arena_free(q, off);
        return r;
    }
    if (size && in)
        memcpy(lc_arena_ptr(q, voff), value, size);
    struct wire_sqe e = { .opcode = op, .flags = flags, .addr = off, .len = len,
                          .res_off = voff, .res_len = (uint32_t)size };
    int64_t n = lc_call(q, &e, NULL);
    if (n > 0 && size && !in)
        memcpy(value, lc_arena_ptr(q, voff), (size_t)n <= size ? (size_t)n : size);
    if (size)
        lc_arena_free(q, voff);
    lc_arena_free(q, off);
    return n;
}

/* Buffers larger than any value or list are capped: the device answers
 * -ERANGE only when the buffer is too small, never for a large one. */
static size_t out_cap(size_t size)
{
    return size > LC_XATTR_SIZE_MAX ? LC_XATTR_SIZE_MAX : size;
}

CISC_API ssize_t cisc_getxattr(struct cisc_queue *q, const char *path, const char *name,
                               void *value, size_t size)
{
    return (ssize_t)xattr_call(q, WIRE_OP_GETXATTR, path, name, value, out_cap(size), 0,
                               false);
}

CISC_API int cisc_setxattr(struct cisc_queue *q, const char *path, const char *name,
                           const void *value, size_t size, int flags)
{
    if (size > LC_XATTR_SIZE_MAX)
        return -E2BIG;
    if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
        return -EINVAL;
    return (int)xattr_call(q, WIRE_OP_SETXATTR, path, name, (void *)value, size,
                           (unsigned)flags, true);
}

CISC_API ssize_t cisc_listxattr(struct cisc_queue *q, const char *path, char *list,
                                size_t size)
{
    return (ssize_t)xattr_call(q, WIRE_OP_LISTXATTR, path, NULL, list, out_cap(size), 0,
                               false);
}

CISC_API int cisc_removexattr(struct cisc_queue *q, const char *path, const char *name)
{
    return (int)xattr_call(q, WIRE_OP_REMOVEXATTR, path, name, NULL, 0, 0, false);
}

CISC_API int cisc_fallocate(struct cisc_queue *q, uint64_t fh, int mode, uint64_t off,
                            uint64_t len)
{
    if (!q)
        return -EINVAL;
    struct wire_sqe e = { .opcode = WIRE_OP_FALLOCATE, .fh = fh, .flags = (uint32_t)mode,
                          .off = off, .len = len };
    return (int)lc_call(q, &e, NULL);
}
