/* prog_wc.c - `prog-wc MOUNT WC.o PATH`: lines, words and bytes of PATH
 * (a file of the device), counted inside the device by examples/bpf/wc.c. */
#include "prog_common.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fputs("usage: prog-wc MOUNT WC.o PATH\n", stderr);
        return 2;
    }
    struct cisc_session *s;
    struct cisc_queue *q;
    uint32_t id;
    if (connect_device(argv[1], &s, &q))
        return 2;
    int r = ensure_program(s, "wc", argv[2], &id);
    if (!r) {
        struct cisc_prog_run_opts o = { .prog = "wc", .sink = to_stdout };
        r = cisc_prog_run(q, argv[3], &o, NULL);
        if (r)
            fprintf(stderr, "prog-wc: %s: %s\n", argv[3], strerror(-r));
    }
    cisc_session_close(s);
    return r ? 1 : 0;
}
