/*
 * common/le.h - little-endian encode/decode of fixed-width fields.
 *
 * Every on-image and on-wire structure is read and written field by field
 * through these helpers; nothing casts a packed struct over a buffer.
 * Invariants:
 *   1. get/put never assume alignment of the buffer.
 *   2. Encoding is little-endian regardless of host order.
 */
#ifndef CISC_COMMON_LE_H
#define CISC_COMMON_LE_H

#include <stdint.h>
#include <string.h>

static inline uint16_t le16_get(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint16_t)(b[0] | (uint16_t)b[1] << 8);
}

static inline uint32_t le32_get(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static inline uint64_t le64_get(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)le32_get(b) | (uint64_t)le32_get(b + 4) << 32;
}

static inline void le16_put(void *p, uint16_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static inline void le32_put(void *p, uint32_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

static inline void le64_put(void *p, uint64_t v)
{
    le32_put(p, (uint32_t)v);
    le32_put((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#endif
