/* prog_grep.c - `prog-grep MOUNT GREP.o PATTERN PATH`: the lines of PATH
 * (a file of the device) that contain PATTERN, found inside the device by
 * examples/bpf/grep.c; only the matching lines cross to this process. */
#include "prog_common.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 5 || strlen(argv[3]) == 0 || strlen(argv[3]) > 32) {
        fputs("usage: prog-grep MOUNT GREP.o PATTERN(1..32 bytes) PATH\n", stderr);
        return 2;
    }
    struct cisc_session *s;
    struct cisc_queue *q;
    uint32_t id;
    if (connect_device(argv[1], &s, &q))
        return 2;
    int r = ensure_program(s, "grep", argv[2], &id);
    if (!r) {
        struct cisc_prog_run_opts o = { .prog = "grep", .sink = to_stdout };
        memcpy(o.arg, argv[3], strlen(argv[3]));   /* the pattern, NUL-padded */
        struct cisc_prog_run_stats st;
        r = cisc_prog_run(q, argv[4], &o, &st);
        if (r)
            fprintf(stderr, "prog-grep: %s: %s\n", argv[4], strerror(-r));
        else
            fprintf(stderr, "prog-grep: %llu bytes searched in the device, %llu bytes of "
                    "matching lines came back\n", (unsigned long long)st.in_bytes,
                    (unsigned long long)st.out_bytes);
    }
    cisc_session_close(s);
    return r ? 1 : 0;
}
