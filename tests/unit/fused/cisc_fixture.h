// Shared fixture for the fused-op tests: an engine on StorageFS on a RAM
// disk (the fault media, so tests can also cut the power), an arena in
// ordinary memory, and a small builder of wire step vectors.
#pragma once

#include <gtest/gtest.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <string>
#include <vector>

extern "C" {
#include "common/corrupt.h"
#include "device/engine/fused/fused.h"
#include "device/compute/keys.h"
#include "device/media/media_fault.h"
#include "device/storagefs/storagefs.h"
}

// The client's arena: bytes the steps refer to by offset.
struct Arena {
    std::vector<uint8_t> mem;
    uint64_t used = 0;
    explicit Arena(size_t size = 8 << 20) : mem(size) {}
    uint64_t Alloc(size_t n)
    {
        uint64_t off = used;
        used += (n + 63) / 64 * 64;
        EXPECT_LE(used, mem.size());
        return off;
    }
    uint64_t Put(const void *p, size_t n)
    {
        uint64_t off = Alloc(n);
        memcpy(mem.data() + off, p, n);
        return off;
    }
    uint64_t Put(const std::string &s) { return Put(s.data(), s.size()); }
    std::string Get(uint64_t off, size_t n) const
    {
        return std::string(reinterpret_cast<const char *>(mem.data() + off), n);
    }
    struct eng_arena View() { return { mem.data(), mem.size() }; }
};

// Builds a vector of wire steps; every call returns the step's index.
struct Vec {
    std::vector<struct wire_step> st;
    Arena &a;
    explicit Vec(Arena &arena) : a(arena) {}

    struct wire_step &Add(uint8_t kind)
    {
        struct wire_step s = {};
        s.kind = kind;
        s.in_step = s.in2_step = s.file_step = WIRE_NO_STEP;
        st.push_back(s);
        return st.back();
    }
    uint16_t Last() const { return (uint16_t)(st.size() - 1); }
    uint16_t Open(const std::string &path, uint32_t flags, uint32_t mode = 0644)
    {
        auto &s = Add(WIRE_STEP_OPEN);
        s.addr = a.Put(path);
        s.alen = (uint32_t)path.size();
        s.flags2 = flags;
        s.mode = mode;
        return Last();
    }
    uint16_t Unlink(const std::string &path)
    {
        auto &s = Add(WIRE_STEP_UNLINK);
        s.addr = a.Put(path);
        s.alen = (uint32_t)path.size();
        return Last();
    }
    void File(struct wire_step &s, int64_t file)
    {
        if (file < 0) {   // a session handle: -fh
            s.flags |= WIRE_STEP_F_FH;
            s.fh = (uint64_t)-file;
        } else {
            s.file_step = (uint16_t)file;
        }
    }
    uint16_t Read(int64_t file, uint64_t off, uint64_t len)
    {
        auto &s = Add(WIRE_STEP_READ);
        File(s, file);
        s.off = off;
        s.len = len;
        return Last();
    }
    // Data input: an earlier step (in >= 0) or these bytes in the arena.
    void Input(struct wire_step &s, int in, const std::string &data)
    {
        if (in >= 0) {
            s.in_step = (uint16_t)in;
        } else {
            s.addr = a.Put(data);
            s.alen = (uint32_t)data.size();
        }
    }
    uint16_t Write(int64_t file, uint64_t off, int in, const std::string &data = "")
    {
        auto &s = Add(WIRE_STEP_WRITE);
        File(s, file);
        s.off = off;
        Input(s, in, data);
        return Last();
    }
    uint16_t Append(int64_t file, int in, const std::string &data = "")
    {
        auto &s = Add(WIRE_STEP_APPEND);
        File(s, file);
        Input(s, in, data);
        return Last();
    }
    uint16_t Truncate(int64_t file, uint64_t size)
    {
        auto &s = Add(WIRE_STEP_TRUNCATE);
        File(s, file);
        s.off = size;
        return Last();
    }
    uint16_t Fsync(int64_t file)
    {
        File(Add(WIRE_STEP_FSYNC), file);
        return Last();
    }
    uint16_t Close(int64_t file)
    {
        File(Add(WIRE_STEP_CLOSE), file);
        return Last();
    }
    uint16_t Compute(uint8_t kind, int in, const std::string &data = "", uint64_t arg0 = 0,
                     uint32_t out_cap = 0)
    {
        auto &s = Add(kind);
        Input(s, in, data);
        s.arg[0] = arg0;
        s.out_cap = out_cap;
        return Last();
    }
    uint16_t Two(uint8_t kind, int in, int in2, const std::string &data = "",
                 uint64_t arg0 = 0)
    {
        auto &s = Add(kind);
        s.in_step = (uint16_t)in;
        if (in2 >= 0) {
            s.in2_step = (uint16_t)in2;
        } else {
            s.addr = a.Put(data);
            s.alen = (uint32_t)data.size();
        }
        s.arg[0] = arg0;
        return Last();
    }
    // Copies step i's output to a fresh arena range; returns its offset.
    uint64_t OutTo(uint16_t i, uint32_t cap)
    {
        st[i].flags |= WIRE_STEP_F_OUT_ARENA;
        st[i].out_off = a.Alloc(cap);
        st[i].out_cap = cap;
        return st[i].out_off;
    }
};

class CiscFixture : public ::testing::Test {
protected:
    struct media *disk = nullptr;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct ckey_table *keys = nullptr;
    struct eng_cred root = {}, user = {};
    unsigned cores = 4;
    uint64_t dev_ram = 0;
    uint64_t op_time_ms = 0;   // eng_config.op_time_ms: 0 = the default ceiling
    uint64_t tx_log_max = 0, tx_log_entry = 0;   // autorec's log space, inline entry

    void SetUp() override { Boot(16384); }

    void TearDown() override
    {
        Shutdown();
        media_close(disk);
        disk = nullptr;
        ckey_table_destroy(keys);
    }

    void Boot(uint64_t nblocks)
    {
        ASSERT_EQ(media_fault_create(nblocks, &disk), 0);
        struct sfs_mkfs_opts o = {};
        ASSERT_EQ(sfs_mkfs(disk, &o), 0);
        Start();
        root.ngroups = -1;
        user.uid = user.gid = 1000;
        user.ngroups = -1;
        if (!keys) {
            ASSERT_EQ(ckey_table_create(&keys), 0);
        }
    }

    void Start()
    {
        struct media *h;
        ASSERT_EQ(media_fault_open_again(disk, &h), 0);
        struct sfs_mount_opts mo = {};
        ASSERT_EQ(sfs_mount(h, &mo, &fs), 0) << cisc_corrupt_last();
        struct eng_config cfg = {};
        cfg.cores = cores;
        cfg.sched = "fifo";
        cfg.direct = true;
        cfg.dev_ram = dev_ram;
        cfg.op_time_ms = op_time_ms;
        cfg.tx_log_max = tx_log_max;
        cfg.tx_log_entry = tx_log_entry;
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
    }

    void Shutdown()
    {
        eng_destroy(eng);
        eng = nullptr;
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        fs = nullptr;
    }

    // Loses power now (only flushed data survives, unless keep says
    // otherwise) and starts again on what survived.
    void Crash(enum media_fault_keep keep = MEDIA_FAULT_KEEP_NONE, uint64_t seed = 1)
    {
        struct media *snap;
        ASSERT_EQ(media_fault_snapshot(disk, keep, seed, &snap), 0);
        media_fault_cut_after(disk, media_fault_writes(disk), UINT64_MAX);
        eng_destroy(eng);
        eng = nullptr;
        sfs_unmount(fs);
        fs = nullptr;
        media_close(disk);
        disk = snap;
        Start();
    }

    // Decodes and runs v (asking for mode tx); fills res. Returns the op's
    // status.
    int64_t Run(Vec &v, struct eng_cisc *out, const struct eng_cred *cred = nullptr,
                uint8_t tx = WIRE_TX_DEFAULT)
    {
        struct fop_limits lim;
        eng_fop_limits(eng, &lim);
        struct eng_arena a = v.a.View();
        int r = fop_decode(out, v.st.data(), (unsigned)v.st.size(), &a, &lim, keys);
        out->tx = tx;
        int64_t s = r ? r : fop_exec(eng, cred ? cred : &root, out);
        fop_release(out);
        return s;
    }

    int64_t Run(Vec &v, const struct eng_cred *cred = nullptr)
    {
        static thread_local struct eng_cisc out;
        return Run(v, &out, cred);
    }

    // StorageFS helpers (root-owned files at the top level).
    uint64_t Ino(const std::string &name)
    {
        struct sfs_attr at;
        return sfs_lookup(fs, SFS_ROOT_INO, name.c_str(), &at) ? 0 : at.ino;
    }
    bool Exists(const std::string &name) { return Ino(name) != 0; }
    uint64_t Put(const std::string &name, const std::string &data, uint32_t mode = 0644,
                 uint32_t uid = 0)
    {
        struct sfs_attr at;
        uint64_t ino = Ino(name);
        if (!ino) {
            int r = sfs_mknod(fs, nullptr, SFS_ROOT_INO, name.c_str(), S_IFREG | mode, 0, uid,
                              uid, &at);
            if (r) {             // no inode to fill
                ADD_FAILURE() << "mknod " << name << ": " << r;
                return 0;
            }
            ino = at.ino;
        }
        struct sfs_attr in = {};
        EXPECT_EQ(sfs_setattr(fs, nullptr, ino, &in, SFS_SET_SIZE, nullptr), 0);
        if (!data.empty()) {
            EXPECT_EQ(sfs_write(fs, nullptr, ino, 0, data.data(), data.size()),
                      (ssize_t)data.size());
        }
        return ino;
    }
    std::string Get(const std::string &name)
    {
        uint64_t ino = Ino(name);
        if (!ino)
            return "<absent>";
        struct sfs_attr at;
        int r = sfs_getattr(fs, ino, &at);
        if (r) {                 // no size to read
            ADD_FAILURE() << "getattr " << name << ": " << r;
            return "<getattr " + std::to_string(r) + ">";
        }
        std::string s(at.size, '\0');
        ssize_t n = sfs_read(fs, ino, 0, &s[0], s.size());
        EXPECT_EQ(n, (ssize_t)s.size());
        return s;
    }
    uint32_t AddKey(uint8_t fill)
    {
        uint8_t k[CKEY_BYTES];
        memset(k, fill, sizeof(k));
        uint32_t id = 0;
        EXPECT_EQ(ckey_add(keys, CKEY_ALG_XCHACHA20POLY1305, k, sizeof(k), &id), 0);
        return id;
    }
    // Opens name through the engine (a session handle, as RISC OPEN gives).
    uint64_t OpenFh(const std::string &name, uint32_t flags)
    {
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_OPEN, &root);
        c.ino = Ino(name);
        c.flags = flags;
        EXPECT_EQ(eng_call(eng, &c), 0);
        return c.out_fh;
    }
};

static inline std::string Pattern(size_t n, unsigned seed)
{
    std::string s(n, '\0');
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        s[i] = (char)('a' + (x >> 16) % 26);
    }
    return s;
}
