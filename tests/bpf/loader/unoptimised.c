/* Refused by the loader when built with -O0 (see CMakeLists.txt): helper
 * declarations stay variables in .data instead of becoming call ids. */
#include <cisc_bpf.h>

SEC("cisc")
int unoptimised(struct cisc_ctx *ctx)
{
    __u64 *st = cisc_state();
    return (int)*st;
}
