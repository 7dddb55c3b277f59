// Crash consistency with the fault media: a workload with a sync after
// every step is cut at every write index (whole, torn, and with random
// survival of unflushed writes); after each cut the image must mount,
// fsck clean, hold exactly the state after some step, and hold at least
// everything a sync that returned before the cut covered.
#include "sfs_fixture.h"

#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <unistd.h>

using State = std::map<std::string, std::string>;

namespace {

void DumpDir(struct sfs *fs, uint64_t dir, const std::string &path, State &st);

std::string Xattrs(struct sfs *fs, uint64_t ino)
{
    char list[4096];
    ssize_t n = sfs_listxattr(fs, ino, list, sizeof(list));
    EXPECT_GE(n, 0) << "listxattr of inode " << ino;   // n < 0 lists nothing below
    std::string out;
    std::map<std::string, std::string> kv;
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(list + i) + 1) {
        std::string v(70000, '\0');
        ssize_t k = sfs_getxattr(fs, ino, list + i, &v[0], v.size());
        EXPECT_GE(k, 0) << "getxattr " << list + i << " of inode " << ino;
        v.resize(k < 0 ? 0 : (size_t)k);
        kv[list + i] = v;
    }
    for (auto &p : kv)
        out += p.first + "=" + std::to_string(std::hash<std::string>{}(p.second)) + ";";
    return out;
}

void DumpEntry(struct sfs *fs, uint64_t ino, const std::string &p, State &st)
{
    struct sfs_attr a;
    int r = sfs_getattr(fs, ino, &a);
    if (r != 0) {
        ADD_FAILURE() << "getattr " << p << ": " << r;
        st[p] = "<unreadable>";
        return;
    }
    std::string d = std::to_string(a.mode) + "/" + std::to_string(a.nlink) + "/" +
                    std::to_string(a.size) + "/" + Xattrs(fs, ino);
    if (S_ISREG(a.mode)) {
        std::string c(a.size, '\0');
        ssize_t n = sfs_read(fs, ino, 0, &c[0], c.size());
        EXPECT_EQ(n, (ssize_t)c.size()) << "read " << p;   // n is in the state too
        d += "/" + std::to_string(n) + ":" + std::to_string(std::hash<std::string>{}(c));
    } else if (S_ISLNK(a.mode)) {
        char t[5000];
        ssize_t n = sfs_readlink(fs, ino, t, sizeof(t));
        EXPECT_GT(n, 0) << "readlink " << p;
        d += "/" + std::string(t, n > 0 ? (size_t)n : 0);
    }
    st[p] = d;
    if (S_ISDIR(a.mode))
        DumpDir(fs, ino, p, st);
}

void DumpDir(struct sfs *fs, uint64_t dir, const std::string &path, State &st)
{
    std::vector<std::pair<std::string, uint64_t>> ents;
    EXPECT_EQ(sfs_readdir(fs, dir, 0, [](void *arg, const struct sfs_dirent *de) {
        std::string n(de->name, de->namelen);
        if (n != "." && n != "..")
            static_cast<decltype(ents) *>(arg)->emplace_back(n, de->ino);
        return 0;
    }, &ents), 0) << "readdir " << path;
    for (auto &e : ents)
        DumpEntry(fs, e.second, path + "/" + e.first, st);
}

State Dump(struct sfs *fs)
{
    State st;
    DumpDir(fs, SFS_ROOT_INO, "", st);
    return st;
}

uint64_t Ino(struct sfs *fs, uint64_t dir, const char *name)
{
    struct sfs_attr a;
    return sfs_lookup(fs, dir, name, &a) ? 0 : a.ino;
}

std::string Fill(size_t n, char c)
{
    return std::string(n, c);
}

// The fixed workload: each step is followed by a sync. Returns how many
// calls did not give the result they give on a healthy file system: after
// a power cut the doomed file system keeps running and may fail anything,
// but the uncut reference runs must see 0, or the states they record (and
// every comparison with them) would prove nothing.
int RunStep(struct sfs *fs, int i)
{
    struct sfs_attr a;
    uint64_t r = SFS_ROOT_INO;
    int bad = 0;
    switch (i) {
    case 0:
        bad += sfs_mknod(fs, nullptr, r, "a", S_IFREG | 0644, 0, 0, 0, &a) != 0;
        bad += sfs_write(fs, nullptr, a.ino, 0, Fill(5000, 'a').data(), 5000) != 5000;
        break;
    case 1:
        bad += sfs_mkdir(fs, nullptr, r, "d", 0755, 0, 0, &a) != 0;
        bad += sfs_mknod(fs, nullptr, a.ino, "b", S_IFREG | 0600, 0, 0, 0, &a) != 0;
        bad += sfs_write(fs, nullptr, a.ino, 100, Fill(9000, 'b').data(), 9000) != 9000;
        bad += sfs_setxattr(fs, nullptr, a.ino, "user.k", "v", 1, 0) != 0;
        break;
    case 2:
        bad += sfs_rename(fs, nullptr, r, "a", Ino(fs, r, "d"), "c", 0) != 0;
        bad += sfs_symlink(fs, nullptr, r, "s", "d/c", 0, 0, &a) != 0;
        break;
    case 3: {
        uint64_t d = Ino(fs, r, "d");
        bad += sfs_unlink(fs, nullptr, d, "b") != 0;
        struct sfs_attr in = {};
        in.size = 100;
        bad += sfs_setattr(fs, nullptr, Ino(fs, d, "c"), &in, SFS_SET_SIZE, nullptr) != 0;
        bad += sfs_link(fs, nullptr, Ino(fs, d, "c"), r, "hard", &a) != 0;
        break;
    }
    case 4:
        bad += sfs_mknod(fs, nullptr, r, "big", S_IFREG | 0644, 0, 0, 0, &a) != 0;
        bad += sfs_write(fs, nullptr, a.ino, 0, Fill(200000, 'B').data(), 200000) != 200000;
        bad += sfs_setxattr(fs, nullptr, a.ino, "trusted.big", Fill(6000, 'x').data(), 6000,
                            0) != 0;
        break;
    case 5:
        bad += sfs_write(fs, nullptr, Ino(fs, r, "big"), 1 << 20, "far", 3) != 3;
        bad += sfs_rmdir(fs, nullptr, r, "nonexistent") != -ENOENT;
        bad += sfs_mkdir(fs, nullptr, Ino(fs, r, "d"), "e", 0755, 0, 0, &a) != 0;
        break;
    case 6:
        bad += sfs_rename(fs, nullptr, Ino(fs, r, "d"), "e", r, "e2", 0) != 0;
        bad += sfs_unlink(fs, nullptr, r, "big") != 0;
        bad += sfs_removexattr(fs, nullptr, Ino(fs, Ino(fs, r, "d"), "c"), "user.none") !=
               -ENODATA;
        break;
    }
    return bad;
}
const int kSteps = 7;

// Many small synced steps: fills the 256-block journal several times
// over, so checkpoints and ring wrap-around happen under the cuts. Data
// is only appended: in ordered mode (as in ext4 data=ordered) an
// overwrite of an allocated block goes in place and may survive a crash
// that loses the metadata change of the same step, so an exact "state
// of some step" comparison holds only for data written to new space.
// Returns the unexpected results, as RunStep does.
int SmallStep(struct sfs *fs, int i)
{
    struct sfs_attr a;
    std::string name = "n" + std::to_string(i % 9);
    if (i % 4 == 3) {
        int r = sfs_unlink(fs, nullptr, SFS_ROOT_INO, name.c_str());
        return r != 0 && r != -ENOENT;   // absent when its last step was an unlink too
    }
    int r = sfs_lookup(fs, SFS_ROOT_INO, name.c_str(), &a);
    if (r == -ENOENT)
        r = sfs_mknod(fs, nullptr, SFS_ROOT_INO, name.c_str(), S_IFREG | 0644, 0, 0, 0, &a);
    if (r)
        return 1;
    std::string data(100 + i * 37, (char)('a' + i % 26));
    return sfs_write(fs, nullptr, a.ino, a.size, data.data(), data.size()) !=
           (ssize_t)data.size();
}

}  // namespace

class PowerCut : public SfsFixture {
  protected:
    std::vector<State> states;   // states[j]: after j steps
    uint64_t base_writes = 0;
    std::function<int(struct sfs *, int)> step = RunStep;
    int nsteps = kSteps;

    void FreshDisk()
    {
        ASSERT_EQ(media_fault_create(4096, &disk), 0);
        struct sfs_mkfs_opts o = {};
        o.journal_blocks = 256;
        ASSERT_EQ(sfs_mkfs(disk, &o), 0);
        ASSERT_EQ(TryMount(false, 3600 * 1000), 0);   // commits only when asked
        base_writes = media_fault_writes(disk);
    }

    // Runs the workload; returns how many syncs returned before the cut.
    // Until the cut, every call must give its healthy result.
    int RunWorkload(const std::function<void(int)> &after = nullptr)
    {
        int durable = 0;
        for (int i = 0; i < nsteps; i++) {
            int bad = step(fs, i);
            int r = sfs_sync(fs);
            if (!media_fault_is_cut(disk)) {
                EXPECT_EQ(bad, 0) << "step " << i << " before the cut";
                EXPECT_EQ(r, 0) << "sync after step " << i << " before the cut";
                durable = i + 1;
            }
            if (after)
                after(i + 1);
        }
        return durable;
    }

    void ComputeStates()
    {
        FreshDisk();
        states.push_back(Dump(fs));
        RunWorkload([&](int) { states.push_back(Dump(fs)); });
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
    }

    uint64_t TotalWrites()
    {
        FreshDisk();
        RunWorkload();
        uint64_t n = media_fault_writes(disk) - base_writes;
        Unmount();
        media_close(disk);
        disk = nullptr;
        return n;
    }

    // One cut: returns false (with failures recorded) when recovery is wrong.
    void CutAt(uint64_t k, uint64_t tear, enum media_fault_keep keep, uint64_t seed)
    {
        SCOPED_TRACE("cut after write " + std::to_string(k) + " tear " + std::to_string(tear) +
                     " keep " + std::to_string(keep));
        FreshDisk();
        media_fault_cut_after(disk, base_writes + k, tear);
        int durable = RunWorkload();
        Crash(keep, seed);
        auto pre = Fsck();
        for (auto &l : pre)
            ADD_FAILURE() << "fsck before mount: " << l;
        int r = TryMount();
        ASSERT_EQ(r, 0) << cisc_corrupt_last();
        State got = Dump(fs);
        int match = -1;
        for (int j = nsteps; j >= 0; j--)
            if (states[j] == got) {
                match = j;
                break;
            }
        EXPECT_GE(match, durable) << "recovered state is not a synced prefix (match " << match
                                  << ", durable " << durable << ")";
        if (match < durable) {
            for (auto &kv : got)
                printf("got  %s -> %s\n", kv.first.c_str(), kv.second.c_str());
            for (int j = 0; j <= nsteps; j++)
                for (auto &kv : states[j])
                    printf("S%d   %s -> %s\n", j, kv.first.c_str(), kv.second.c_str());
        }
        Unmount();
        auto post = Fsck();
        for (auto &l : post)
            ADD_FAILURE() << "fsck after recovery: " << l;
        media_close(disk);
        disk = nullptr;
    }
};

TEST_F(PowerCut, EveryWriteIndexWholeTornAndRandom)
{
    ComputeStates();
    ASSERT_EQ(states.size(), (size_t)kSteps + 1);
    ASSERT_NE(states[kSteps], states[kSteps - 1]);
    uint64_t n = TotalWrites();
    ASSERT_GT(n, 20u);
    for (uint64_t k = 1; k <= n + 1 && !HasFailure(); k++) {
        CutAt(k, UINT64_MAX, MEDIA_FAULT_KEEP_NONE, 0);
        CutAt(k, 2048, MEDIA_FAULT_KEEP_ALL, 0);
        CutAt(k, UINT64_MAX, MEDIA_FAULT_KEEP_RANDOM, k);
    }
}

TEST_F(PowerCut, EveryWriteIndexAcrossCheckpointsAndRingWrap)
{
    step = SmallStep;
    nsteps = 70;
    ComputeStates();
    uint64_t n = TotalWrites();
    for (uint64_t k = 1; k <= n + 1 && !HasFailure(); k++) {
        if (k % 2)
            CutAt(k, UINT64_MAX, MEDIA_FAULT_KEEP_NONE, 0);
        else
            CutAt(k, 1000, MEDIA_FAULT_KEEP_RANDOM, k);
    }
}

TEST_F(PowerCut, EmptyTransactionsDoNotBreakReplay)
{
    // An open transaction with no changes is caught by the 1 ms
    // background commit, which waits for it and then finds nothing to
    // log. That must not leave a gap in the sequence numbers on the ring:
    // replay stops at the first gap and would lose every later commit.
    ASSERT_EQ(media_fault_create(8192, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 1), 0);
    for (int i = 0; i < 5; i++) {
        struct sfs_txn *tx;
        ASSERT_EQ(sfs_txn_begin(fs, &tx), 0);
        usleep(20000);           // the commit thread now waits for tx
        ASSERT_EQ(sfs_txn_commit(tx, false), 0);
        Create(SFS_ROOT_INO, ("f" + std::to_string(i)).c_str());
        ASSERT_EQ(sfs_sync(fs), 0);
    }
    Crash(MEDIA_FAULT_KEEP_NONE);
    Mount();
    for (int i = 0; i < 5; i++)
        EXPECT_NE(Lookup(SFS_ROOT_INO, ("f" + std::to_string(i)).c_str()), 0u) << i;
    Unmount();
    ExpectClean();
}

TEST_F(PowerCut, TornCommitRecordIsDiscarded)
{
    ASSERT_EQ(media_fault_create(4096, &disk), 0);
    struct sfs_mkfs_opts o = {};
    ASSERT_EQ(sfs_mkfs(disk, &o), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    Create(SFS_ROOT_INO, "kept");
    ASSERT_EQ(sfs_sync(fs), 0);
    Create(SFS_ROOT_INO, "lost");
    // The next commit writes the log (one write), flushes, then writes
    // the commit record: tear that second write inside its header.
    uint64_t w = media_fault_writes(disk);
    media_fault_cut_after(disk, w + 2, 30);
    sfs_sync(fs);
    Crash(MEDIA_FAULT_KEEP_ALL);
    struct sfs_fsck_result res;
    auto p = Fsck(&res);
    EXPECT_TRUE(p.empty());
    EXPECT_NE(std::string(res.journal_note).find("no commit record"), std::string::npos)
        << res.journal_note;
    Mount();
    EXPECT_NE(Lookup(SFS_ROOT_INO, "kept"), 0u);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "lost"), 0u);
    Unmount();
    ExpectClean();
}

TEST_F(PowerCut, FsyncedDataSurvivesAndUnsyncedMayNot)
{
    ASSERT_EQ(media_fault_create(8192, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    uint64_t f = Create(SFS_ROOT_INO, "f");
    Write(f, 0, std::string(50000, 'S'));
    ASSERT_EQ(sfs_fsync(fs, f, false), 0);
    Write(f, 50000, std::string(50000, 'U'));   // never synced
    Crash(MEDIA_FAULT_KEEP_NONE);
    Mount();
    EXPECT_EQ(Size(f), 50000u);
    EXPECT_EQ(Read(f, 0, 50000), std::string(50000, 'S'));
    Unmount();
    ExpectClean();
}

TEST_F(PowerCut, RandomWorkloadRandomCuts)
{
    // A longer random workload (seeded) with syncs, background commits
    // and checkpoints, cut at sampled write indexes: recovery must always
    // mount and fsck clean, and every synced file must be complete.
    const char *env = getenv("SFS_CRASH_SEED");
    uint64_t seed = env ? strtoull(env, nullptr, 0) : 12345;
    printf("crash seed %llu (set SFS_CRASH_SEED to repeat)\n", (unsigned long long)seed);
    std::mt19937_64 rng(seed);
    // Returns the calls that did not give their healthy result (which
    // only a cut excuses).
    auto workload = [&](struct sfs *f, uint64_t s, std::map<std::string, size_t> *synced,
                        struct media *d) {
        std::mt19937_64 w(s);
        std::map<std::string, size_t> sizes;
        std::set<std::string> gone;      // unlinked since the last sync
        int bad = 0;
        for (int i = 0; i < 120; i++) {
            std::string name = "f" + std::to_string(w() % 25);
            struct sfs_attr a;
            switch (w() % 5) {
            case 0:
            case 1: {
                int r = sfs_lookup(f, SFS_ROOT_INO, name.c_str(), &a);
                if (r == -ENOENT)
                    r = sfs_mknod(f, nullptr, SFS_ROOT_INO, name.c_str(), S_IFREG | 0644, 0,
                                  0, 0, &a);
                if (r) {
                    bad++;
                    break;
                }
                size_t n = w() % 30000;
                std::string data(n, (char)('a' + n % 26));
                bad += sfs_write(f, nullptr, a.ino, 0, data.data(), n) != (ssize_t)n;
                if (sizes[name] < n)
                    sizes[name] = n;
                break;
            }
            case 2: {
                int r = sfs_unlink(f, nullptr, SFS_ROOT_INO, name.c_str());
                if (r == 0) {
                    sizes.erase(name);
                    gone.insert(name);
                }
                bad += r != 0 && r != -ENOENT;
                break;
            }
            case 3: {
                int r = sfs_lookup(f, SFS_ROOT_INO, name.c_str(), &a);
                if (r == 0)
                    r = sfs_setxattr(f, nullptr, a.ino, "user.x", name.data(), name.size(), 0);
                bad += r != 0 && r != -ENOENT;
                break;
            }
            case 4: {
                int r = sfs_sync(f);
                if (r == 0 && synced && !media_fault_is_cut(d)) {
                    *synced = sizes;
                    gone.clear();
                }
                bad += r != 0;
                break;
            }
            }
        }
        // A background commit may have made a later unlink durable.
        for (auto &g : gone)
            if (synced)
                synced->erase(g);
        return bad;
    };
    // Count writes of an uncut run.
    ASSERT_EQ(media_fault_create(8192, &disk), 0);
    struct sfs_mkfs_opts o = {};
    o.journal_blocks = 256;
    ASSERT_EQ(sfs_mkfs(disk, &o), 0);
    ASSERT_EQ(TryMount(false, 2), 0);
    uint64_t base = media_fault_writes(disk);
    ASSERT_EQ(workload(fs, seed, nullptr, disk), 0) << "calls failed without a cut";
    uint64_t total = media_fault_writes(disk) - base;
    Unmount();
    ExpectClean();
    media_close(disk);
    disk = nullptr;
    for (int trial = 0; trial < 25 && !HasFailure(); trial++) {
        uint64_t k = 1 + rng() % total;
        SCOPED_TRACE("trial " + std::to_string(trial) + " cut after " + std::to_string(k));
        ASSERT_EQ(media_fault_create(8192, &disk), 0);
        ASSERT_EQ(sfs_mkfs(disk, &o), 0);
        ASSERT_EQ(TryMount(false, 2), 0);
        media_fault_cut_after(disk, media_fault_writes(disk) + k, rng() % 5000);
        std::map<std::string, size_t> synced;
        workload(fs, seed, &synced, disk);   // fails from the cut on: not checked
        Crash(MEDIA_FAULT_KEEP_RANDOM, rng());
        auto p = Fsck();
        for (auto &l : p)
            ADD_FAILURE() << l;
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        for (auto &kv : synced) {
            uint64_t ino = Lookup(SFS_ROOT_INO, kv.first.c_str());
            EXPECT_NE(ino, 0u) << kv.first;
            if (ino) {
                EXPECT_GE(Size(ino), kv.second) << kv.first;
            }
        }
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
    }
}

TEST_F(PowerCut, CutDuringReplayAtMountIsRecoverable)
{
    // An image with committed, unreplayed transactions and an orphan.
    ASSERT_EQ(media_fault_create(8192, &disk), 0);
    ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
    ASSERT_EQ(TryMount(false, 3600 * 1000), 0);
    for (int i = 0; i < 20; i++) {
        uint64_t f = Create(SFS_ROOT_INO, ("r" + std::to_string(i)).c_str());
        Write(f, 0, std::string(3000 + i * 100, (char)('a' + i)));
    }
    uint64_t o = Create(SFS_ROOT_INO, "orphan");
    Write(o, 0, std::string(50000, 'o'));
    ASSERT_EQ(sfs_iget(fs, o), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "orphan"), 0);
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash(MEDIA_FAULT_KEEP_NONE);
    struct media *image = disk;
    disk = nullptr;
    // Count the writes a mount makes, then cut at each of them.
    ASSERT_EQ(media_fault_snapshot(image, MEDIA_FAULT_KEEP_ALL, 0, &disk), 0);
    uint64_t w0 = media_fault_writes(disk);
    Mount();
    uint64_t n = media_fault_writes(disk) - w0;
    Unmount();
    media_close(disk);
    disk = nullptr;
    ASSERT_GT(n, 5u);            // replayed images, superblock, journal header
    for (uint64_t k = 1; k <= n && !HasFailure(); k++) {
        SCOPED_TRACE("cut at mount write " + std::to_string(k));
        ASSERT_EQ(media_fault_snapshot(image, MEDIA_FAULT_KEEP_ALL, 0, &disk), 0);
        media_fault_cut_after(disk, media_fault_writes(disk) + k, k % 2 ? UINT64_MAX : 700);
        if (TryMount() == 0)
            Crash(k % 3 ? MEDIA_FAULT_KEEP_RANDOM : MEDIA_FAULT_KEEP_NONE, k);
        else
            Crash(MEDIA_FAULT_KEEP_NONE);
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        for (int i = 0; i < 20; i++) {
            uint64_t f = Lookup(SFS_ROOT_INO, ("r" + std::to_string(i)).c_str());
            ASSERT_NE(f, 0u) << i;
            EXPECT_EQ(Size(f), 3000u + i * 100);
        }
        struct sfs_attr a;
        EXPECT_EQ(sfs_getattr(fs, o, &a), -ENOENT);   // the orphan is gone
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
    }
    media_close(image);
}

TEST_F(PowerCut, ConcurrentWritersRandomCuts)
{
    const char *env = getenv("SFS_CRASH_SEED");
    uint64_t seed = env ? strtoull(env, nullptr, 0) : 777;
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 8 && !HasFailure(); trial++) {
        SCOPED_TRACE("trial " + std::to_string(trial) + " seed " + std::to_string(seed));
        ASSERT_EQ(media_fault_create(16384, &disk), 0);
        ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
        ASSERT_EQ(TryMount(false, 1), 0);
        media_fault_cut_after(disk, media_fault_writes(disk) + 20 + rng() % 400, rng() % 5000);
        std::vector<std::thread> th;
        for (int t = 0; t < 4; t++)
            th.emplace_back([this, t]() {
                struct sfs_attr a, d;
                std::string dn = "d" + std::to_string(t);
                sfs_mkdir(fs, nullptr, SFS_ROOT_INO, dn.c_str(), 0755, 0, 0, &d);
                for (int i = 0; i < 60; i++) {
                    std::string n = "f" + std::to_string(i % 17);
                    if (sfs_mknod(fs, nullptr, d.ino, n.c_str(), S_IFREG | 0644, 0, 0, 0, &a) ==
                        0) {
                        std::string data(2000 + i * 300, (char)('a' + t));
                        sfs_write(fs, nullptr, a.ino, 0, data.data(), data.size());
                    } else if (i % 3 == 0) {
                        sfs_unlink(fs, nullptr, d.ino, n.c_str());
                    } else {
                        sfs_rename(fs, nullptr, d.ino, n.c_str(), SFS_ROOT_INO,
                                   (dn + n).c_str(), 0);
                    }
                }
            });
        for (auto &x : th)
            x.join();
        Crash(MEDIA_FAULT_KEEP_RANDOM, rng());
        auto p = Fsck();
        for (auto &l : p)
            ADD_FAILURE() << l;
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        Unmount();
        ExpectClean();
        media_close(disk);
        disk = nullptr;
    }
}
