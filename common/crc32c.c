/* common/crc32c.c - CRC-32C with SSE4.2 when present (three streams at
 * once over buffers of 768 bytes and more), slicing-by-8 otherwise. */
#include "common/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
#if defined(__x86_64__)
static int have_hw;
#define HW_LANE 256u                 /* bytes per stream in one round of three */
static uint32_t lane_shift[4][256];  /* crc -> crc * x^(8 * HW_LANE), a byte at a time */
static void lane_shift_init(void);
#endif
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^
                              crc_table[0][crc_table[k - 1][n] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2");
    lane_shift_init();
#endif
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    pthread_once(&crc_once, crc32c_init);
    crc = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;   /* little-endian host assumed by slicing layout */
        crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
              crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
              crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
              crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* a * b modulo the polynomial, in the reflected representation (bit 31
 * is x^0). */
static uint32_t mul_mod(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (uint32_t m = 1u << 31; m; m >>= 1) {
        if (a & m)
            prod ^= b;
        b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return prod;
}

/* x^(8n) modulo the polynomial: appending n bytes multiplies by it. */
static uint32_t x_pow_8n(uint64_t n)
{
    uint32_t r = 1u << 31, sq = 1u << 23;   /* 1, and x^8 */
    for (; n; n >>= 1) {
        if (n & 1)
            r = mul_mod(r, sq);
        sq = mul_mod(sq, sq);
    }
    return r;
}

#if defined(__x86_64__)
#define HW_SPLIT_MIN (64u << 10)   /* below this, one stream: the combine costs more */

/* The one-stream loop over whole words. */
__attribute__((target("sse4.2")))
static uint64_t hw_words(uint64_t c, const uint8_t *p, size_t words)
{
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    return c;
}

/* Three streams over three equal parts at once (the instruction's
 * latency is three times its throughput), then combined:
 * crc(A || B) = crc(A) * x^(8|B|) + crc(B) for CRCs started at 0. */
__attribute__((target("sse4.2")))
static uint32_t hw_three(uint32_t crc, const uint8_t *p, size_t part)
{
    uint64_t a = ~crc, b = ~0u, c = ~0u;
    const uint8_t *q = p + part, *r = p + 2 * part;
    for (size_t i = 0; i < part; i += 8) {
        uint64_t x, y, z;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        memcpy(&z, r + i, 8);
        a = __builtin_ia32_crc32di(a, x);
        b = __builtin_ia32_crc32di(b, y);
        c = __builtin_ia32_crc32di(c, z);
    }
    uint32_t shift = x_pow_8n(part);
    uint32_t ab = mul_mod(shift, ~(uint32_t)a) ^ ~(uint32_t)b;
    return mul_mod(shift, ab) ^ ~(uint32_t)c;
}

/* Multiplying by a constant is linear over GF(2): the product of a
 * 32-bit value is the xor of its four bytes' products, tabled once. */
static void lane_shift_init(void)
{
    uint32_t k = x_pow_8n(HW_LANE);
    for (unsigned b = 0; b < 4; b++)
        for (uint32_t v = 0; v < 256; v++)
            lane_shift[b][v] = mul_mod(v << (8 * b), k);
}

/* c * x^(8 * HW_LANE) modulo the polynomial (appending HW_LANE zero
 * bytes to a raw CRC state). */
static inline uint32_t lane_shift_by(uint32_t c)
{
    return lane_shift[0][c & 0xff] ^ lane_shift[1][(c >> 8) & 0xff] ^
           lane_shift[2][(c >> 16) & 0xff] ^ lane_shift[3][c >> 24];
}

/* Rounds of three HW_LANE-byte streams (a small buffer: a 4 KiB block
 * takes five): raw state c (not inverted) over rounds * 3 * HW_LANE
 * bytes. The second and third streams start from 0 and are folded in
 * with the table shift: raw(c, A||B||C) = sh(sh(raw(c, A)) ^ raw(0, B)) ^
 * raw(0, C), sh appending HW_LANE zero bytes. The instruction's latency
 * is three times its throughput, so three chains run at once. */
__attribute__((target("sse4.2")))
static uint64_t hw_rounds(uint64_t c, const uint8_t *p, size_t rounds)
{
    for (; rounds; rounds--, p += 3 * HW_LANE) {
        uint64_t b = 0, d = 0;
        for (size_t i = 0; i < HW_LANE; i += 8) {
            uint64_t x, y, z;
            memcpy(&x, p + i, 8);
            memcpy(&y, p + HW_LANE + i, 8);
            memcpy(&z, p + 2 * HW_LANE + i, 8);
            c = __builtin_ia32_crc32di(c, x);
            b = __builtin_ia32_crc32di(b, y);
            d = __builtin_ia32_crc32di(d, z);
        }
        c = lane_shift_by(lane_shift_by((uint32_t)c) ^ (uint32_t)b) ^ (uint32_t)d;
    }
    return c;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    if (len >= HW_SPLIT_MIN) {
        size_t part = len / 3 / 8 * 8;
        crc = hw_three(crc, p, part);
        p += 3 * part;
        len -= 3 * part;
    }
    uint64_t c = ~crc;
    size_t rounds = len / (3 * HW_LANE);
    c = hw_rounds(c, p, rounds);
    p += rounds * 3 * HW_LANE;
    len -= rounds * 3 * HW_LANE;
    c = hw_words(c, p, len / 8);
    p += len / 8 * 8;
    len %= 8;
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc32c_init);
#if defined(__x86_64__)
    if (have_hw)
        return crc32c_hw(crc, buf, len);
#endif
    return crc32c_sw(crc, buf, len);
}
