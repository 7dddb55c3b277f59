// tests/unit/compute/keys_test.cc - the per-session key registry and its
// control-socket payloads.
#include <gtest/gtest.h>

#include "common/le.h"
#include "device/compute/keys.h"

#include <errno.h>
#include <string.h>

#include <thread>
#include <vector>

namespace {

int Probe(const uint8_t key[CKEY_BYTES], void *arg)
{
    memcpy(arg, key, CKEY_BYTES);
    return 7;
}

}  // namespace

TEST(Keys, AddUseRemove)
{
    struct ckey_table *t;
    ASSERT_EQ(ckey_table_create(&t), 0);
    uint8_t k[CKEY_BYTES], seen[CKEY_BYTES];
    memset(k, 0xab, sizeof(k));
    uint32_t id;
    ASSERT_EQ(ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id), 0);
    EXPECT_EQ(ckey_with(t, id, Probe, seen), 7);
    EXPECT_EQ(memcmp(seen, k, sizeof(k)), 0);
    EXPECT_EQ(ckey_with(t, 0, Probe, seen), -ENOKEY);
    EXPECT_EQ(ckey_remove(t, id), 0);
    EXPECT_EQ(ckey_remove(t, id), -ENOKEY);
    EXPECT_EQ(ckey_with(t, id, Probe, seen), -ENOKEY);
    ckey_table_destroy(t);
}

TEST(Keys, BadAlgorithmOrLength)
{
    struct ckey_table *t;
    ASSERT_EQ(ckey_table_create(&t), 0);
    uint8_t k[CKEY_BYTES + 1] = {};
    uint32_t id;
    EXPECT_EQ(ckey_add(t, 99, k, CKEY_BYTES, &id), -EINVAL);
    EXPECT_EQ(ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, CKEY_BYTES - 1, &id), -EINVAL);
    EXPECT_EQ(ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, CKEY_BYTES + 1, &id), -EINVAL);
    ckey_table_destroy(t);
}

TEST(Keys, IdsAreNeverReusedAndTableIsBounded)
{
    struct ckey_table *t;
    ASSERT_EQ(ckey_table_create(&t), 0);
    uint8_t k[CKEY_BYTES] = {};
    std::vector<uint32_t> ids;
    for (unsigned i = 0; i < CKEY_MAX; i++) {
        uint32_t id;
        ASSERT_EQ(ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id), 0);
        ids.push_back(id);
    }
    uint32_t id;
    EXPECT_EQ(ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id), -ENOSPC);
    ASSERT_EQ(ckey_remove(t, ids[3]), 0);
    ASSERT_EQ(ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id), 0);
    for (uint32_t old : ids)
        EXPECT_NE(id, old);
    ckey_table_destroy(t);
}

TEST(Keys, ControlPayloadsAndWipe)
{
    struct ckey_table *t;
    ASSERT_EQ(ckey_table_create(&t), 0);
    std::vector<uint8_t> p(8 + CKEY_BYTES, 0x11);
    le32_put(p.data(), CKEY_ALG_XCHACHA20POLY1305);
    le32_put(p.data() + 4, CKEY_BYTES);
    uint8_t reply[4];
    ASSERT_EQ(ckey_ctl_add(t, p.data(), p.size(), reply), 0);
    for (size_t i = 8; i < p.size(); i++)
        EXPECT_EQ(p[i], 0) << "key byte " << i << " left in the request buffer";
    uint32_t id = le32_get(reply);
    uint8_t seen[CKEY_BYTES];
    EXPECT_EQ(ckey_with(t, id, Probe, seen), 7);
    EXPECT_EQ(seen[0], 0x11);
    // Malformed: declared length disagrees with the payload.
    std::vector<uint8_t> bad(8 + 10, 0x22);
    le32_put(bad.data(), CKEY_ALG_XCHACHA20POLY1305);
    le32_put(bad.data() + 4, CKEY_BYTES);
    EXPECT_EQ(ckey_ctl_add(t, bad.data(), bad.size(), reply), -EPROTO);
    EXPECT_EQ(bad[9], 0);
    EXPECT_EQ(ckey_ctl_add(t, bad.data(), 3, reply), -EPROTO);
    uint8_t rm[4];
    le32_put(rm, id);
    EXPECT_EQ(ckey_ctl_remove(t, rm, 3), -EPROTO);
    EXPECT_EQ(ckey_ctl_remove(t, rm, 4), 0);
    EXPECT_EQ(ckey_ctl_remove(t, rm, 4), -ENOKEY);
    ckey_table_destroy(t);
}

TEST(Keys, ConcurrentUseAndRemoval)
{
    struct ckey_table *t;
    ASSERT_EQ(ckey_table_create(&t), 0);
    uint8_t k[CKEY_BYTES] = {1};
    std::vector<std::thread> th;
    for (int i = 0; i < 4; i++)
        th.emplace_back([t, &k] {
            for (int j = 0; j < 200; j++) {
                uint32_t id;
                if (ckey_add(t, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id))
                    continue;
                uint8_t seen[CKEY_BYTES];
                EXPECT_EQ(ckey_with(t, id, Probe, seen), 7);
                EXPECT_EQ(ckey_remove(t, id), 0);
            }
        });
    for (auto &x : th)
        x.join();
    ckey_table_destroy(t);
}
