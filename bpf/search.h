/*
 * bpf/search.h - byte-string search for the search helpers (cisc_memmem,
 * cisc_memchr, cisc_input_find, cisc_input_rchr in bpf/helpers.c).
 *
 * Forward search looks for the needle's rarest byte (by a fixed ranking of
 * how common bytes are in text, logs and binary data) with memchr and
 * compares the needle only around candidates, the way grep and ripgrep's
 * prefilters do; a rare pattern is then found at memchr speed.
 *
 * Invariants:
 *   1. Linear time in the worst case: the prefilter stops as soon as the
 *      work spent comparing false candidates exceeds the bytes it skipped
 *      (plus a constant), and the rest of the haystack is searched with
 *      glibc's memmem (two-way, linear). A hostile needle or haystack
 *      costs a constant factor, never a product of the lengths.
 *   2. Reads only hay[0, hay_len) and needle[0, needle_len).
 *   3. No state, no allocation: thread-safe.
 */
#ifndef CISC_BPF_SEARCH_H
#define CISC_BPF_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* Index of the first occurrence of needle in hay, or -1 (also for an
 * empty needle or one longer than hay). */
int64_t vm_search_fwd(const uint8_t *hay, size_t hay_len, const uint8_t *needle,
                      size_t needle_len);

/* Index of the last byte equal to c in buf[0, len), or -1. */
int64_t vm_search_rchr(const uint8_t *buf, size_t len, uint8_t c);

#endif
