// Shared fixture for StorageFS tests: a RAM disk (the fault media) that
// survives unmount, so tests can format, mount, remount, crash and fsck.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

extern "C" {
#include "common/corrupt.h"
#include "device/media/media_fault.h"
#include "device/storagefs/storagefs.h"
}

class SfsFixture : public ::testing::Test {
  protected:
    struct media *disk = nullptr;   // our own handle on the RAM disk
    struct sfs *fs = nullptr;

    void TearDown() override
    {
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        fs = nullptr;
        media_close(disk);
        disk = nullptr;
    }

    // Formats a fresh disk of nblocks and mounts it.
    void Format(uint64_t nblocks = 8192, uint64_t inodes = 0, uint32_t journal = 0)
    {
        ASSERT_EQ(media_fault_create(nblocks, &disk), 0);
        struct sfs_mkfs_opts o = {};
        o.inodes = inodes;
        o.journal_blocks = journal;
        ASSERT_EQ(sfs_mkfs(disk, &o), 0);
        Mount();
    }

    int TryMount(bool ro = false, uint32_t interval_ms = 0)
    {
        struct media *h;
        int r = media_fault_open_again(disk, &h);
        if (r) {                 // no handle to mount: the test cannot go on
            ADD_FAILURE() << "media_fault_open_again: " << r;
            fs = nullptr;
            return r;
        }
        struct sfs_mount_opts mo = {};
        mo.read_only = ro;
        mo.commit_interval_ms = interval_ms;
        r = sfs_mount(h, &mo, &fs);
        if (r) {
            media_close(h);
            fs = nullptr;
        }
        return r;
    }

    void Mount(bool ro = false)
    {
        int r = TryMount(ro);
        ASSERT_EQ(r, 0) << cisc_corrupt_last();
    }

    void Unmount()
    {
        ASSERT_EQ(sfs_unmount(fs), 0);
        fs = nullptr;
    }

    void Remount()
    {
        Unmount();
        Mount();
    }

    // Loses power now: what survives is the flushed state plus the
    // unflushed writes chosen by keep. The old fs is torn down with its
    // writes dropped; the survivor is mounted.
    void Crash(enum media_fault_keep keep = MEDIA_FAULT_KEEP_NONE, uint64_t seed = 1)
    {
        struct media *snap;
        ASSERT_EQ(media_fault_snapshot(disk, keep, seed, &snap), 0);
        media_fault_cut_after(disk, media_fault_writes(disk), UINT64_MAX);
        sfs_unmount(fs);
        fs = nullptr;
        media_close(disk);
        disk = snap;
    }

    // fsck of the disk (fs must be unmounted); returns problem lines.
    std::vector<std::string> Fsck(struct sfs_fsck_result *res = nullptr)
    {
        std::vector<std::string> out;
        struct sfs_fsck_result r = {};
        int rc = sfs_fsck(disk, [](void *a, const char *msg) {
            static_cast<std::vector<std::string> *>(a)->push_back(msg);
        }, &out, &r);
        EXPECT_EQ(rc, 0) << cisc_corrupt_last();
        if (res)
            *res = r;
        return out;
    }

    void ExpectClean()
    {
        auto p = Fsck();
        for (auto &l : p)
            ADD_FAILURE() << "fsck: " << l;
    }

    uint64_t Create(uint64_t dir, const char *name, uint32_t mode = 0644)
    {
        struct sfs_attr a;
        int r = sfs_mknod(fs, nullptr, dir, name, S_IFREG | mode, 0, 1000, 1000, &a);
        EXPECT_EQ(r, 0) << name;
        return r ? 0 : a.ino;
    }

    uint64_t Mkdir(uint64_t dir, const char *name)
    {
        struct sfs_attr a;
        int r = sfs_mkdir(fs, nullptr, dir, name, 0755, 1000, 1000, &a);
        EXPECT_EQ(r, 0) << name;
        return r ? 0 : a.ino;
    }

    uint64_t Lookup(uint64_t dir, const char *name)
    {
        struct sfs_attr a;
        int r = sfs_lookup(fs, dir, name, &a);
        return r ? 0 : a.ino;
    }

    void Write(uint64_t ino, uint64_t off, const std::string &s)
    {
        ASSERT_EQ(sfs_write(fs, nullptr, ino, off, s.data(), s.size()), (ssize_t)s.size());
    }

    // Reads into *s (left empty when the read fails: its result sizes s).
    void ReadInto(uint64_t ino, uint64_t off, size_t len, std::string *s)
    {
        s->assign(len, '\0');
        ssize_t n = sfs_read(fs, ino, off, &(*s)[0], len);
        if (n < 0)
            s->clear();
        ASSERT_GE(n, 0) << "read of inode " << ino << " at " << off;
        ASSERT_LE((size_t)n, len);
        s->resize((size_t)n);
    }

    std::string Read(uint64_t ino, uint64_t off, size_t len)
    {
        std::string s;
        ReadInto(ino, off, len, &s);
        return s;
    }

    // n letters from rng.
    std::string RandomBytes(size_t n, std::mt19937 &rng)
    {
        std::string s(n, '\0');
        for (auto &c : s)
            c = (char)('A' + rng() % 26);
        return s;
    }

    // The blocks ino holds (its extents' data blocks and tree nodes).
    uint64_t DataBlocks(uint64_t ino)
    {
        struct sfs_attr a = {};
        EXPECT_EQ(sfs_getattr(fs, ino, &a), 0);
        return a.blocks / 8;
    }

    uint64_t Size(uint64_t ino)
    {
        struct sfs_attr a = {};   // zeros if getattr fails (the test has failed then)
        EXPECT_EQ(sfs_getattr(fs, ino, &a), 0);
        return a.size;
    }

    std::vector<std::string> List(uint64_t dir)
    {
        std::vector<std::string> names;
        EXPECT_EQ(sfs_readdir(fs, dir, 0, [](void *arg, const struct sfs_dirent *de) {
            std::string n(de->name, de->namelen);
            if (n != "." && n != "..")
                static_cast<std::vector<std::string> *>(arg)->push_back(n);
            return 0;
        }, &names), 0);
        return names;
    }
};
