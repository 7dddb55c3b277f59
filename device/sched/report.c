/*
 * device/sched/report.c - the scheduler's report for `cisc top`
 * (CTL_SCHED_STATS): one "sched" line, then one line per tenant and one per
 * queue, each group busiest (most device-core time) first:
 *
 *   sched policy P cores N tenants T queues Q freed_tenants A freed_queues B
 *         rows R shown S tenant_by uid|pid preemptions K
 *   tenant ID weight W queues Q vt_ns V core_ns C share F mem M mem_peak P
 *         waiting W running R done D throttled_ns T overtaken O
 *         terminated X lat HIST preempted K backlog_ns B
 *   queue ID tenant T vt_ns V core_ns C share F mem M mem_peak P waiting W
 *         running R done D lat HIST
 *
 * (each on one line). HIST is the latency histogram's non-empty buckets
 * (hist.h) as BUCKET:COUNT joined by commas, "-" if empty; counts and
 * times are totals since the device started. Rows that do not fit the
 * buffer are left out (shown < rows). Lines only ever grow at the end.
 */
#include "device/sched/sched.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_ROWS 512u    /* rows copied at most (the buffer holds fewer) */
#define LINE_MAX_LEN 4096u  /* the longest line: fields plus every bucket */

struct out {
    char *buf;
    size_t size, len;
};

static void put(char *line, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(char *line, size_t *n, const char *fmt, ...)
{
    if (*n + 1 >= LINE_MAX_LEN)
        return;
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(line + *n, LINE_MAX_LEN - *n, fmt, ap);
    va_end(ap);
    if (r > 0)
        *n = *n + (size_t)r < LINE_MAX_LEN ? *n + (size_t)r : LINE_MAX_LEN - 1;
}

/* Appends line if it fits whole; false if not. */
static bool emit(struct out *o, const char *line, size_t n)
{
    if (o->len + n + 1 > o->size)
        return false;
    memcpy(o->buf + o->len, line, n);
    o->len += n;
    o->buf[o->len] = '\0';
    return true;
}

static void put_hist(char *line, size_t *n, const struct hist *h)
{
    bool any = false;
    put(line, n, " lat ");
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        if (h->n[i]) {
            put(line, n, "%s%u:%llu", any ? "," : "", i, (unsigned long long)h->n[i]);
            any = true;
        }
    if (!any)
        put(line, n, "-");
}

static size_t row_line(const struct sched_row *r, char *line)
{
    const struct sched_tenant_stats *t = &r->st;
    size_t n = 0;
    if (r->is_queue)
        put(line, &n, "queue %u tenant %u vt_ns %llu", r->queue, t->id,
            (unsigned long long)t->vt);
    else
        put(line, &n, "tenant %u weight %u queues %u vt_ns %llu", t->id, t->weight, t->queues,
            (unsigned long long)t->vt);
    put(line, &n, " core_ns %llu share %.4f mem %llu mem_peak %llu waiting %llu running %llu "
                  "done %llu", (unsigned long long)t->core_ns, t->share,
        (unsigned long long)t->mem_use, (unsigned long long)t->mem_peak,
        (unsigned long long)t->queued, (unsigned long long)t->running,
        (unsigned long long)t->done);
    if (!r->is_queue)
        put(line, &n, " throttled_ns %llu overtaken %llu terminated %llu",
            (unsigned long long)t->throttled_ns, (unsigned long long)t->overtaken,
            (unsigned long long)t->terminated);
    put_hist(line, &n, &r->lat);
    if (!r->is_queue)
        put(line, &n, " preempted %llu backlog_ns %llu", (unsigned long long)t->preempted,
            (unsigned long long)t->backlog_ns);
    put(line, &n, "\n");
    return n;
}

/* Tenants before queues, each busiest first. */
static int by_kind_then_core(const void *a, const void *b)
{
    const struct sched_row *x = a, *y = b;
    if (x->is_queue != y->is_queue)
        return x->is_queue ? 1 : -1;
    return x->st.core_ns < y->st.core_ns ? 1 : x->st.core_ns > y->st.core_ns ? -1 : 0;
}

ssize_t sched_report(struct sched *s, char *buf, size_t size)
{
    struct sched_row *rows = malloc(REPORT_ROWS * sizeof(*rows));
    char *line = malloc(LINE_MAX_LEN);
    if (!rows || !line || !size) {
        free(rows);
        free(line);
        return -ENOMEM;
    }
    struct sched_stats st;
    sched_get_stats(s, &st);
    unsigned total = sched_rows(s, rows, REPORT_ROWS);
    unsigned n = total < REPORT_ROWS ? total : REPORT_ROWS;
    qsort(rows, n, sizeof(*rows), by_kind_then_core);
    /* the head line goes last into its reserved place: it says how many fit */
    struct out o = { buf, size, 0 };
    buf[0] = '\0';
    size_t hlen = 0;
    char head[256];
    unsigned shown = 0;
    o.len = sizeof(head) < size ? sizeof(head) : size - 1;
    for (unsigned i = 0; i < n && emit(&o, line, row_line(&rows[i], line)); i++)
        shown++;
    hlen = (size_t)snprintf(head, sizeof(head),
                            "sched policy %s cores %u tenants %llu queues %llu freed_tenants %llu "
                            "freed_queues %llu rows %u shown %u tenant_by %s preemptions %llu\n",
                            st.policy, st.cores, (unsigned long long)st.tenants,
                            (unsigned long long)st.queues, (unsigned long long)st.freed_tenants,
                            (unsigned long long)st.freed_queues, total, shown,
                            st.tenant_pid ? "pid" : "uid", (unsigned long long)st.preemptions);
    size_t reserved = sizeof(head) < size ? sizeof(head) : size - 1;
    hlen = hlen < reserved ? hlen : reserved;
    /* move the rows up against the head line */
    size_t body = o.len - reserved;
    memmove(buf + hlen, buf + reserved, body);
    memcpy(buf, head, hlen);
    buf[hlen + body] = '\0';
    free(rows);
    free(line);
    return (ssize_t)(hlen + body);
}
