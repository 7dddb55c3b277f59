/* common/corrupt.c - per-thread record of the last corruption report. */
#include "common/corrupt.h"

#include <stdarg.h>
#include <stdio.h>

static __thread char last_msg[512];
static __thread size_t last_what;   /* length of the message before " (file:line)" */

int cisc_corrupt_report(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    last_what = (size_t)n < sizeof(last_msg) ? (size_t)n : sizeof(last_msg) - 1;
    if ((size_t)n < sizeof(last_msg))
        snprintf(last_msg + n, sizeof(last_msg) - (size_t)n, " (%s:%d)", file, line);
    return -EUCLEAN;
}

const char *cisc_corrupt_last(void)
{
    return last_msg;
}

const char *cisc_corrupt_what(void)
{
    static __thread char what[sizeof(last_msg)];
    snprintf(what, sizeof(what), "%.*s", (int)last_what, last_msg);
    return what;
}

void cisc_corrupt_clear(void)
{
    last_msg[0] = '\0';
    last_what = 0;
}
