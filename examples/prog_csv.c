/* prog_csv.c - `prog-csv MOUNT CSV.o COLUMNS IN OUT`: writes the columns
 * COLUMNS (comma-separated, from 0: "1,3") of the CSV file IN to OUT, both
 * files of the device; the data never leaves the device. */
#include "prog_common.h"

#include <stdlib.h>

/* "1,3" -> bits 1 and 3. */
static int columns(const char *s, uint64_t *mask)
{
    *mask = 0;
    while (*s) {
        char *end;
        unsigned long c = strtoul(s, &end, 10);
        if (end == s || c > 63 || (*end && *end != ','))
            return -EINVAL;
        *mask |= 1ull << c;
        s = *end ? end + 1 : end;
    }
    return *mask ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
    uint64_t mask;
    if (argc != 6 || columns(argv[3], &mask)) {
        fputs("usage: prog-csv MOUNT CSV.o COLUMNS(e.g. 0,2) IN OUT\n", stderr);
        return 2;
    }
    struct cisc_session *s;
    struct cisc_queue *q;
    uint32_t id;
    if (connect_device(argv[1], &s, &q))
        return 2;
    int r = ensure_program(s, "csv", argv[2], &id);
    if (!r) {
        struct cisc_prog_run_opts o = { .prog = "csv", .arg = { mask, ',' }, .output = argv[5] };
        struct cisc_prog_run_stats st;
        r = cisc_prog_run(q, argv[4], &o, &st);
        if (r)
            fprintf(stderr, "prog-csv: %s\n", strerror(-r));
        else
            printf("%s: %llu bytes -> %s: %llu bytes, in the device\n", argv[4],
                   (unsigned long long)st.in_bytes, argv[5], (unsigned long long)st.out_bytes);
    }
    cisc_session_close(s);
    return r ? 1 : 0;
}
