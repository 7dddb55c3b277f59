// tests/unit/engine/handle_test.cc - the open-file table.
#include <gtest/gtest.h>

#include "device/engine/handle.h"

#include <errno.h>

#include <set>

TEST(Handle, OpenGetCloseAndStaleHandles)
{
    struct hdl_table *t;
    ASSERT_EQ(hdl_table_create(&t), 0);
    struct hdl h = { 42, 2, false }, out;
    uint64_t fh;
    ASSERT_EQ(hdl_open(t, &h, &fh), 0);
    ASSERT_EQ(hdl_get(t, fh, &out), 0);
    EXPECT_EQ(out.ino, 42u);
    EXPECT_EQ(hdl_count(t), 1u);
    EXPECT_EQ(hdl_get(t, 0, &out), -EBADF);
    EXPECT_EQ(hdl_get(t, fh + 1, &out), -EBADF);
    EXPECT_EQ(hdl_get(t, fh ^ (1ull << 40), &out), -EBADF);
    ASSERT_EQ(hdl_close(t, fh, &out), 0);
    EXPECT_EQ(hdl_close(t, fh, &out), -EBADF);   // double close
    uint64_t fh2;
    ASSERT_EQ(hdl_open(t, &h, &fh2), 0);         // same slot, new generation
    EXPECT_NE(fh2, fh);
    EXPECT_EQ(hdl_get(t, fh, &out), -EBADF);     // the old handle stays dead
    hdl_table_destroy(t);
}

TEST(Handle, ManyAndDrain)
{
    struct hdl_table *t;
    ASSERT_EQ(hdl_table_create(&t), 0);
    std::set<uint64_t> fhs;
    for (uint64_t i = 0; i < 1000; i++) {
        struct hdl h = { i, 0, i % 2 == 0 };
        uint64_t fh;
        ASSERT_EQ(hdl_open(t, &h, &fh), 0);
        fhs.insert(fh);
    }
    EXPECT_EQ(fhs.size(), 1000u);
    struct hdl out;
    int n = 0;
    while (hdl_drain(t, &out))
        n++;
    EXPECT_EQ(n, 1000);
    EXPECT_EQ(hdl_count(t), 0u);
    hdl_table_destroy(t);
}
