/*
 * bpf/loader_int.h - private to the loader: one-line error messages for the loader's internal modules
 * (elf.c, btfext.c, loader.c).
 *
 * A struct vm_diag is the caller's buffer; the first failure fills it and
 * every caller up the stack returns the same -errno without overwriting
 * the message, so the text names the innermost problem.
 * Invariants:
 *   1. The message is always NUL-terminated (truncated if needed) and one
 *      line: control characters (names from a hostile object may hold
 *      any byte) are replaced by '?'.
 *   2. Only the first report is kept; vm_diagf() never fails.
 */
#ifndef CISC_BPF_LOADER_INT_H
#define CISC_BPF_LOADER_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct vm_diag {
    char *buf;       /* may be NULL: messages dropped */
    size_t len;
    bool set;
};

/* Records the formatted message as the failure reason unless one is already recorded.
 * Returns code (a negative errno) so callers can `return vm_diagf(...)`. */
static inline int __attribute__((format(printf, 3, 4)))
vm_diagf(struct vm_diag *d, int code, const char *fmt, ...)
{
    if (d && !d->set && d->buf && d->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->buf, d->len, fmt, ap);
        va_end(ap);
        for (char *c = d->buf; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        d->set = true;
    }
    return code;
}

#endif
