/*
 * bpf/search.c - byte-string search for the helpers (see search.h).
 */
#include "bpf/search.h"

#include <string.h>

/* How common a byte is in text, logs and binary files, 0 (rare) to 255:
 * the prefilter anchors on the needle byte with the lowest rank. A wrong
 * guess only costs speed (invariant 1 bounds the cost). */
static const uint8_t rank[256] = {
    [' '] = 255, ['e'] = 250, ['t'] = 245, ['a'] = 240, ['o'] = 235, ['i'] = 232,
    ['n'] = 230, ['s'] = 228, ['r'] = 226, ['h'] = 210, ['l'] = 208, ['d'] = 200,
    ['c'] = 198, ['u'] = 196, ['m'] = 194, ['0'] = 192, ['1'] = 190, ['2'] = 188,
    ['\n'] = 186, ['f'] = 184, ['p'] = 182, ['g'] = 180, ['w'] = 178, ['y'] = 176,
    ['b'] = 174, ['.'] = 172, [':'] = 170, ['3'] = 168, ['4'] = 166, ['5'] = 164,
    ['6'] = 162, ['7'] = 160, ['8'] = 158, ['9'] = 156, ['-'] = 154, [','] = 152,
    ['/'] = 150, ['='] = 148, ['v'] = 146, ['k'] = 144, ['"'] = 142, ['_'] = 140,
    ['\t'] = 138, ['('] = 136, [')'] = 134, ['['] = 132, [']'] = 130, ['E'] = 128,
    ['T'] = 126, ['S'] = 124, ['A'] = 122, ['I'] = 120, ['R'] = 118, ['N'] = 116,
    ['O'] = 114, ['C'] = 112, ['D'] = 110, ['L'] = 108, ['P'] = 106, ['M'] = 104,
    ['x'] = 102, ['\''] = 100, ['{'] = 98, ['}'] = 96, [';'] = 94, ['<'] = 92,
    ['>'] = 90, ['H'] = 88, ['U'] = 86, ['F'] = 84, ['G'] = 82, ['B'] = 80,
    ['W'] = 78, ['j'] = 76, ['q'] = 74, ['z'] = 72, ['V'] = 70, ['K'] = 68,
    ['Y'] = 66, ['#'] = 64, ['*'] = 62, ['+'] = 60, ['&'] = 58, ['%'] = 56,
    ['$'] = 54, ['@'] = 52, ['!'] = 50, ['?'] = 48, ['|'] = 46, ['\r'] = 44,
    ['X'] = 42, ['J'] = 40, ['Q'] = 38, ['Z'] = 36, ['\\'] = 34, ['~'] = 32,
    ['^'] = 30, ['`'] = 28, [0x00] = 253, [0xff] = 180,
};

/* Bytes of false candidates the prefilter may compare beyond the bytes it
 * skipped before it hands over to memmem (invariant 1). */
#define PREFILTER_SLACK 4096

/* Index in needle of the byte with the lowest rank. */
static size_t rarest(const uint8_t *needle, size_t len)
{
    size_t best = 0;
    for (size_t i = 1; i < len; i++)
        if (rank[needle[i]] < rank[needle[best]])
            best = i;
    return best;
}

static int64_t via_memmem(const uint8_t *hay, const uint8_t *from, size_t hay_len,
                          const uint8_t *needle, size_t needle_len)
{
    const uint8_t *p = memmem(from, hay_len - (size_t)(from - hay), needle, needle_len);
    return p ? p - hay : -1;
}

int64_t vm_search_fwd(const uint8_t *hay, size_t hay_len, const uint8_t *needle,
                      size_t needle_len)
{
    if (needle_len == 0 || needle_len > hay_len)
        return -1;
    if (needle_len == 1) {
        const uint8_t *p = memchr(hay, needle[0], hay_len);
        return p ? p - hay : -1;
    }
    size_t a = rarest(needle, needle_len), work = 0;
    const uint8_t *p = hay + a, *last = hay + (hay_len - needle_len) + a;
    while (p <= last) {   /* candidates for needle[a] */
        const uint8_t *q = memchr(p, needle[a], (size_t)(last - p) + 1);
        if (!q)
            return -1;
        if (memcmp(q - a, needle, needle_len) == 0)
            return q - a - hay;
        work += needle_len;
        if (work > (size_t)(q - hay) + PREFILTER_SLACK)   /* too many false candidates */
            return via_memmem(hay, q - a + 1, hay_len, needle, needle_len);
        p = q + 1;
    }
    return -1;
}

int64_t vm_search_rchr(const uint8_t *buf, size_t len, uint8_t c)
{
    const uint8_t *p = len ? memrchr(buf, c, len) : NULL;
    return p ? p - buf : -1;
}
