// Pins down CRC-32C: the standard check value, chaining, and that the
// hardware and table paths agree on every length and alignment.
#include <gtest/gtest.h>

#include <random>
#include <vector>

extern "C" {
#include "common/crc32c.h"
}

TEST(Crc32c, CheckValue)
{
    EXPECT_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32c_sw(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32c(0, "", 0), 0u);
}

TEST(Crc32c, ChainsAcrossSplits)
{
    const char *s = "the quick brown fox jumps over the lazy dog";
    size_t n = strlen(s);
    uint32_t whole = crc32c(0, s, n);
    for (size_t k = 0; k <= n; k++)
        EXPECT_EQ(crc32c(crc32c(0, s, k), s + k, n - k), whole) << k;
}

TEST(Crc32c, HardwareMatchesTable)
{
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(5000);
    for (auto &b : buf)
        b = (uint8_t)rng();
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 600; len += 7)
            ASSERT_EQ(crc32c(off, buf.data() + off, len),
                      crc32c_sw(off, buf.data() + off, len)) << off << " " << len;
}

// Large buffers take three streams at once, combined: the same CRC as the
// table, for lengths not divisible by 3 or 8, any alignment and seed.
TEST(Crc32c, ThreeStreamsMatchTable)
{
    std::mt19937 rng(11);
    std::vector<uint8_t> buf((1u << 20) + 64);
    for (auto &b : buf)
        b = (uint8_t)rng();
    for (size_t len : { (size_t)65535, (size_t)65536, (size_t)65537, (size_t)196613,
                        (size_t)(1u << 20) + 5 })
        for (size_t off = 0; off < 4; off++) {
            uint32_t seed = (uint32_t)rng();
            ASSERT_EQ(crc32c(seed, buf.data() + off, len), crc32c_sw(seed, buf.data() + off, len))
                << off << " " << len;
        }
}

// Buffers of 768 bytes and more (a 4 KiB block) take rounds of three
// 256-byte streams folded with a table shift: the same CRC as the table
// around every round boundary, at any alignment and seed.
TEST(Crc32c, SmallRoundsMatchTable)
{
    std::mt19937 rng(13);
    std::vector<uint8_t> buf(70000);
    for (auto &b : buf)
        b = (uint8_t)rng();
    for (size_t len : { (size_t)767, (size_t)768, (size_t)769, (size_t)775, (size_t)776,
                        (size_t)1535, (size_t)1536, (size_t)1543, (size_t)4096, (size_t)4100,
                        (size_t)4101, (size_t)65535 - 8, (size_t)65535 })
        for (size_t off = 0; off < 9; off++) {
            uint32_t seed = (uint32_t)rng();
            ASSERT_EQ(crc32c(seed, buf.data() + off, len), crc32c_sw(seed, buf.data() + off, len))
                << off << " " << len;
        }
}
