/* Verifies (memory safety holds on every path) but never terminates: the
 * instruction budget stops it with -ETIME. */
#include <cisc_bpf.h>

SEC("cisc")
int infinite_loop(struct cisc_ctx *ctx)
{
    volatile __u64 spin = 1;
    while (spin)
        ;
    return 0;
}
