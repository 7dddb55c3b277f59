// tests/e2e/apps/rocksdb_test.cc - RocksDB on a real device through the
// libcisc FileSystem (integrations/rocksdb), compared with the same
// workload run by RocksDB's default FileSystem on the same mount (through
// FUSE): same keys, values and iteration; a writer killed mid-run loses no
// synced put; the device checks hand-off checksums on writes and WAL
// records on recovery, and a damaged WAL record is reported as RocksDB
// reports it with the default FileSystem.
#include "tests/e2e/apps/apps_fixture.h"

#if CISC_HAVE_ROCKSDB

#include "integrations/rocksdb/cisc_rocksdb.h"

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/write_batch.h>

extern "C" {
#include "common/crc32c.h"
}

namespace e2e {
namespace {

using namespace apps;

class RocksDbTest : public CiscTest {
protected:
    std::shared_ptr<rocksdb::FileSystem> fs;
    std::unique_ptr<rocksdb::Env> env;

    void SetUp() override
    {
        CiscTest::SetUp();
        if (HasFatalFailure())
            return;
        rocksdb::Status st = cisc::NewRocksDbFileSystem(mnt, &fs);
        ASSERT_TRUE(st.ok()) << st.ToString();
        env = rocksdb::NewCompositeEnv(fs);
    }

    void TearDown() override
    {
        env.reset();
        fs.reset();
        CiscTest::TearDown();
    }

    cisc::RocksDbFsStats Stats() { return cisc::RocksDbFsStatsOf(fs.get()); }

    rocksdb::Status Open(rocksdb::Env *e, const std::string &path, rocksdb::DB **db,
                         rocksdb::WALRecoveryMode mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery)
    {
        rocksdb::Options o;
        o.env = e;
        o.create_if_missing = true;
        o.write_buffer_size = 256 << 10;   // several memtable flushes and compactions
        o.wal_recovery_mode = mode;
        o.checksum_handoff_file_types.Add(rocksdb::FileType::kWalFile);
        o.checksum_handoff_file_types.Add(rocksdb::FileType::kTableFile);
        o.checksum_handoff_file_types.Add(rocksdb::FileType::kDescriptorFile);
        *db = nullptr;
        return rocksdb::DB::Open(o, path, db);
    }

    rocksdb::DB *MustOpen(rocksdb::Env *e, const std::string &path)
    {
        rocksdb::DB *db;
        rocksdb::Status st = Open(e, path, &db);
        EXPECT_TRUE(st.ok()) << path << ": " << st.ToString();
        return st.ok() ? db : nullptr;
    }

    // Every key and value in order, one line each.
    std::string Dump(rocksdb::DB *db)
    {
        std::string out;
        std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
        for (it->SeekToFirst(); it->Valid(); it->Next())
            out += it->key().ToString() + "=" + it->value().ToString() + "\n";
        EXPECT_TRUE(it->status().ok()) << it->status().ToString();
        return out;
    }

    // 10k puts (every 5th synced), a batch of overwrites and deletes, point
    // reads of all keys, a dump; closed and reopened (WAL replayed), a
    // second dump. Returns the first dump.
    std::string Workload(rocksdb::Env *e, const std::string &path)
    {
        rocksdb::DB *db = MustOpen(e, path);
        if (!db)
            return "";
        rocksdb::WriteOptions wo;
        for (int i = 0; i < kKeys; i++) {
            wo.sync = i % 5 == 0;
            rocksdb::Status pst = db->Put(wo, Key(i), Value(i, 0));
            EXPECT_TRUE(pst.ok()) << pst.ToString();
            if (!pst.ok())
                break;
        }
        rocksdb::WriteBatch b;
        for (int i = 0; i < kKeys; i += 3)
            i % 2 ? b.Delete(Key(i)) : b.Put(Key(i), Value(i, 1));
        EXPECT_TRUE(db->Write(rocksdb::WriteOptions(), &b).ok());
        std::string v;
        for (int i = 0; i < kKeys; i++) {
            rocksdb::Status st = db->Get(rocksdb::ReadOptions(), Key(i), &v);
            bool deleted = i % 3 == 0 && i % 2;
            EXPECT_EQ(st.IsNotFound(), deleted) << i << " " << st.ToString();
            if (st.ok()) {
                EXPECT_EQ(v, Value(i, i % 3 == 0 ? 1 : 0)) << i;
            }
        }
        std::string first = Dump(db);
        delete db;
        db = MustOpen(e, path);
        std::string second = db ? Dump(db) : "";
        delete db;
        EXPECT_EQ(first, second) << "reopening changed the contents";
        return first;
    }

    // The WAL files of the database at path (through the mount).
    std::vector<std::string> Wals(const std::string &path)
    {
        std::vector<std::string> out;
        DIR *d = opendir(path.c_str());
        while (struct dirent *e = d ? readdir(d) : nullptr) {
            std::string n = e->d_name;
            if (n.size() > 4 && n.compare(n.size() - 4, 4, ".log") == 0)
                out.push_back(path + "/" + n);
        }
        if (d)
            closedir(d);
        return out;
    }
};

TEST_F(RocksDbTest, SameAsTheDefaultFileSystemOnTheMount)
{
    std::string mine = Workload(env.get(), P("cisc-db"));
    std::string theirs = Workload(rocksdb::Env::Default(), P("posix-db"));
    EXPECT_EQ(std::count(mine.begin(), mine.end(), '\n'), kKeys - (kKeys / 3 + 1) / 2);
    EXPECT_EQ(mine, theirs);
    cisc::RocksDbFsStats s = Stats();
    EXPECT_GT(s.write_ops, 1000u);
    EXPECT_GE(s.sync_ops, (uint64_t)kKeys / 5);         // every 5th put was synced
    EXPECT_GE(s.handoff_checks, (uint64_t)kKeys);       // each put's WAL append checked
    EXPECT_GE(s.queues, 2u);                            // this thread and a background one
    EXPECT_GE(s.wal_checked_ops, 1u);                   // the reopen replayed a WAL
    EXPECT_EQ(s.wal_damaged, 0u);
}

// Each FileSystem opens what the other wrote.
TEST_F(RocksDbTest, EachFileSystemOpensTheOthersDatabase)
{
    std::string mine = Workload(env.get(), P("a"));
    std::string theirs = Workload(rocksdb::Env::Default(), P("b"));
    rocksdb::DB *db = MustOpen(rocksdb::Env::Default(), P("a"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), mine);
    delete db;
    db = MustOpen(env.get(), P("b"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), theirs);
    delete db;
}

// Synced puts: from the third on, the WAL record's write carries the FSYNC
// and RocksDB's Sync is answered without a second op.
TEST_F(RocksDbTest, SyncedPutIsOneFusedOp)
{
    rocksdb::DB *db = MustOpen(env.get(), P("synced"));
    ASSERT_NE(db, nullptr);
    cisc::RocksDbFsStats a = Stats();
    rocksdb::WriteOptions wo;
    wo.sync = true;
    for (int i = 0; i < 300; i++) {
        ASSERT_TRUE(db->Put(wo, Key(i), Value(i, 0)).ok());
    }
    cisc::RocksDbFsStats b = Stats();
    EXPECT_GE(b.syncs_answered - a.syncs_answered, 298u);
    EXPECT_LE(b.write_ops - a.write_ops, 310u);
    EXPECT_GE(b.sync_ops - a.sync_ops, 300u);
    delete db;
}

// DB::SyncWAL and FlushWAL(true) sync the WAL from their own thread while
// other threads append to it (the WAL file says its Sync is thread-safe):
// every call succeeds and reaches the device as an FSYNC (or finds the
// WAL already durable), and the database has every put afterwards.
TEST_F(RocksDbTest, SyncWalBesideWriters)
{
    rocksdb::DB *db = MustOpen(env.get(), P("syncwal"));
    ASSERT_NE(db, nullptr);
    cisc::RocksDbFsStats a = Stats();
    std::atomic<int> running{3};
    std::vector<std::thread> writers;
    for (int t = 0; t < 3; t++)
        writers.emplace_back([&, t] {
            for (int i = t; i < kKeys; i += 3) {
                EXPECT_TRUE(db->Put(rocksdb::WriteOptions(), Key(i), Value(i, 4)).ok());
            }
            running--;
        });
    int syncs = 0, failed = 0;
    for (; running > 0 || syncs < 10; syncs++) {
        rocksdb::Status st = syncs % 2 ? db->SyncWAL() : db->FlushWAL(true);
        failed += !st.ok();
        EXPECT_TRUE(st.ok()) << st.ToString();
        if (failed > 3)
            break;
        // Not flat out: each call writes a line to RocksDB's info LOG.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (std::thread &t : writers)
        t.join();
    cisc::RocksDbFsStats b = Stats();
    EXPECT_GE(b.sync_ops + b.syncs_answered - a.sync_ops - a.syncs_answered, (uint64_t)syncs);
    delete db;
    db = MustOpen(rocksdb::Env::Default(), P("syncwal"));
    ASSERT_NE(db, nullptr);
    std::string v;
    for (int i = 0; i < kKeys; i++) {
        ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), Key(i), &v).ok()) << i;
        ASSERT_EQ(v, Value(i, 4));
    }
    delete db;
}

// With flushes held, unsynced puts cost no round trip each: their WAL
// bytes wait in the file's buffer, and a synced put sends them with its
// FSYNC in one op; the database has every put afterwards.
TEST_F(RocksDbTest, HeldFlushesGoWithTheNextSync)
{
    cisc::RocksDbFsSetHoldFlush(fs.get(), true);
    rocksdb::DB *db = MustOpen(env.get(), P("held"));
    ASSERT_NE(db, nullptr);
    cisc::RocksDbFsStats a = Stats();
    for (int i = 0; i < 1000; i++) {
        ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), Key(i), "v" + std::to_string(i)).ok());
    }
    cisc::RocksDbFsStats b = Stats();
    EXPECT_GE(b.flushes_held - a.flushes_held, 1000u);
    // One op per 30 puts: the most hand-off checks (Open asks for them on
    // WAL appends) one op carries.
    EXPECT_LE(b.write_ops - a.write_ops, 1000u / 30 + 2);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(db->Put(wo, "last", "synced").ok());
    cisc::RocksDbFsStats c = Stats();
    EXPECT_EQ(c.write_ops - b.write_ops, 1u);
    EXPECT_EQ(c.sync_ops - b.sync_ops, 1u);
    delete db;
    db = MustOpen(rocksdb::Env::Default(), P("held"));
    ASSERT_NE(db, nullptr);
    std::string v;
    for (int i = 0; i < 1000; i++) {
        ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), Key(i), &v).ok()) << i;
        ASSERT_EQ(v, "v" + std::to_string(i));
    }
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "last", &v).ok());
    delete db;
}

// Checksum hand-off: bytes whose CRC does not match what RocksDB handed
// over are refused by the device as corruption and not written.
TEST_F(RocksDbTest, DeviceRefusesAppendWithWrongHandoffChecksum)
{
    std::unique_ptr<rocksdb::FSWritableFile> f;
    rocksdb::IOOptions io;
    ASSERT_TRUE(fs->NewWritableFile(P("000009.log"), rocksdb::FileOptions(), &f, nullptr).ok());
    auto append = [&](const std::string &data, uint32_t crc) {
        char le[4] = { (char)crc, (char)(crc >> 8), (char)(crc >> 16), (char)(crc >> 24) };
        rocksdb::DataVerificationInfo vi;
        vi.checksum = rocksdb::Slice(le, 4);
        rocksdb::IOStatus st = f->Append(data, io, vi, nullptr);
        return st.ok() ? f->Flush(io, nullptr) : st;
    };
    std::string good = "bytes RocksDB appended", bad = "bytes damaged on the way";
    uint64_t before = Stats().handoff_checks;
    ASSERT_TRUE(append(good, crc32c(0, good.data(), good.size())).ok());
    EXPECT_EQ(Stats().handoff_checks, before + 1);
    rocksdb::IOStatus st = append(bad, crc32c(0, bad.data(), bad.size()) ^ 4);
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    f.reset();   // its close retries the damaged bytes and fails again
    EXPECT_EQ(ReadFile(P("000009.log")), good);
}

// A WAL replayed on open is read in large ops that check its records in
// the device; with the check off the same reads are plain and the
// database is the same.
TEST_F(RocksDbTest, WalRecoveryIsCheckedInTheDevice)
{
    rocksdb::DB *db = MustOpen(env.get(), P("wal"));
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->SetOptions({ { "write_buffer_size", "64000000" } }).ok());
    for (int i = 0; i < kKeys; i++) {
        ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), Key(i), Value(i, 2)).ok());
    }
    std::string want = Dump(db);
    delete db;   // the memtable stays in the WAL only
    std::vector<std::string> wals = Wals(P("wal"));
    ASSERT_FALSE(wals.empty());
    struct stat st;
    ASSERT_EQ(stat(wals.back().c_str(), &st), 0);
    EXPECT_GT(st.st_size, 3 << 20);
    cisc::RocksDbFsStats a = Stats();
    db = MustOpen(env.get(), P("wal"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), want);
    delete db;
    cisc::RocksDbFsStats b = Stats();
    EXPECT_GE(b.wal_checked_ops - a.wal_checked_ops, 3u);   // a few MiB, 1 MiB per op
    EXPECT_EQ(b.wal_damaged, a.wal_damaged);
    cisc::RocksDbFsSetWalCheck(fs.get(), false);
    db = MustOpen(env.get(), P("wal"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), want);
    delete db;
    EXPECT_EQ(Stats().wal_checked_ops, b.wal_checked_ops);
}

// A damaged WAL record: the device stops at it, RocksDB still sees it and
// reports it exactly as with the default FileSystem - Corruption under
// kAbsoluteConsistency, the records before it under point-in-time recovery.
TEST_F(RocksDbTest, DamagedWalRecordIsReportedAsCorruption)
{
    rocksdb::DB *db = MustOpen(env.get(), P("dmg"));
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->SetOptions({ { "write_buffer_size", "64000000" } }).ok());
    for (int i = 0; i < 2000; i++) {
        ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "key" + std::to_string(i), Value(i, 3)).ok());
    }
    delete db;
    std::vector<std::string> wals = Wals(P("dmg"));
    ASSERT_EQ(wals.size(), 1u);
    std::string wal = ReadFile(wals[0]);
    ASSERT_GT(wal.size(), 300000u);
    {   // one payload byte in the middle of the WAL
        int fd = open(wals[0].c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        char c = (char)(wal[wal.size() / 2] ^ 0x20);
        ASSERT_EQ(pwrite(fd, &c, 1, (off_t)wal.size() / 2), 1);
        close(fd);
    }
    ASSERT_EQ(Sh("cp -a " + P("dmg") + " " + P("dmg2")).status, 0);
    uint64_t damaged = Stats().wal_damaged;
    rocksdb::Status mine = Open(env.get(), P("dmg"), &db, rocksdb::WALRecoveryMode::kAbsoluteConsistency);
    EXPECT_TRUE(mine.IsCorruption()) << mine.ToString();
    EXPECT_EQ(Stats().wal_damaged, damaged + 1);
    delete db;
    rocksdb::Status theirs = Open(rocksdb::Env::Default(), P("dmg2"), &db,
                                  rocksdb::WALRecoveryMode::kAbsoluteConsistency);
    EXPECT_TRUE(theirs.IsCorruption()) << theirs.ToString();
    delete db;
    ASSERT_TRUE(Open(env.get(), P("dmg"), &db).ok());
    std::string a = Dump(db);
    delete db;
    ASSERT_TRUE(Open(rocksdb::Env::Default(), P("dmg2"), &db).ok());
    std::string b = Dump(db);
    delete db;
    EXPECT_EQ(a, b);
    EXPECT_GT(std::count(a.begin(), a.end(), '\n'), 500);
    EXPECT_LT(std::count(a.begin(), a.end(), '\n'), 2000);
}

// The files of a database outside the mount go to the default FileSystem.
TEST_F(RocksDbTest, PathsOutsideTheMountUseTheDefaultFileSystem)
{
    uint64_t before = Stats().write_ops;
    rocksdb::DB *db = MustOpen(env.get(), dir + "/outside-db");
    ASSERT_NE(db, nullptr);
    EXPECT_TRUE(db->Put(rocksdb::WriteOptions(), "k", "v").ok());
    delete db;
    EXPECT_EQ(Stats().write_ops, before);
    struct stat st;
    EXPECT_EQ(stat((dir + "/outside-db/CURRENT").c_str(), &st), 0);
}

// A writer killed in the middle of its synced puts: on reopen, every put
// it had synced (and printed) is there, and the database keeps working.
TEST_F(RocksDbTest, KilledWriterLosesNothingSynced)
{
    long last = RunAndKill("rdb_writer", mnt, P("crash-db"), 1500);
    ASSERT_GE(last, 1500) << "the writer stopped early";
    rocksdb::DB *db = MustOpen(env.get(), P("crash-db"));
    ASSERT_NE(db, nullptr);
    ExpectWritten(last, [&](const std::string &k, std::string *v) {
        return db->Get(rocksdb::ReadOptions(), k, v).ok();
    });
    EXPECT_TRUE(db->Put(rocksdb::WriteOptions(), "after", "crash").ok());
    delete db;
    ExpectDeviceUp();
}

// A writer killed in the middle of unsynced puts (no hand-off checks, so
// its WAL flushes are write-behind: not waited for): every put that
// returned was flushed, so it survives the process (not the machine):
// the device runs what the process submitted before it died.
TEST_F(RocksDbTest, KilledWriterLosesNothingFlushedBehind)
{
    setenv("RDB_WRITER_NOSYNC", "1", 1);
    long last = RunAndKill("rdb_writer", mnt, P("crash-nosync-db"), 3000);
    unsetenv("RDB_WRITER_NOSYNC");
    ASSERT_GE(last, 3000) << "the writer stopped early";
    rocksdb::DB *db = MustOpen(env.get(), P("crash-nosync-db"));
    ASSERT_NE(db, nullptr);
    ExpectWritten(last, [&](const std::string &k, std::string *v) {
        return db->Get(rocksdb::ReadOptions(), k, v).ok();
    });
    delete db;
    ExpectDeviceUp();
}

// Unsynced flushes without hand-off checks go behind (submitted, not
// waited for) on a slow device core (core speed 200: each write takes a
// while), and a read of the file right after the last flush waits for
// them: it sees every flushed byte. A flush after a Sync is covered by
// it. Fails when flushes are waited for (no write-behind ops), or when a
// read does not wait for them (short or stale contents).
TEST_F(RocksDbTest, UnsyncedFlushesGoBehindAndReadsSeeThem)
{
    env.reset();
    fs.reset();
    Restart("--core-speed 200");
    ASSERT_TRUE(cisc::NewRocksDbFileSystem(mnt, &fs).ok());
    std::unique_ptr<rocksdb::FSWritableFile> f;
    rocksdb::IOOptions io;
    ASSERT_TRUE(fs->NewWritableFile(P("000011.log"), rocksdb::FileOptions(), &f, nullptr).ok());
    std::string want;
    for (int i = 0; i < 40; i++) {
        std::string rec = "record " + std::to_string(i) + std::string((size_t)i, '.');
        ASSERT_TRUE(f->Append(rec, io, nullptr).ok());
        ASSERT_TRUE(f->Flush(io, nullptr).ok());
        want += rec;
    }
    EXPECT_GE(Stats().behind_ops, 35u);
    uint64_t size = 0;
    ASSERT_TRUE(fs->GetFileSize(P("000011.log"), io, &size, nullptr).ok());
    EXPECT_EQ(size, want.size());
    std::unique_ptr<rocksdb::FSSequentialFile> r;
    ASSERT_TRUE(fs->NewSequentialFile(P("000011.log"), rocksdb::FileOptions(), &r, nullptr).ok());
    std::string got(want.size() + 16, '\0');
    rocksdb::Slice sl;
    ASSERT_TRUE(r->Read(got.size(), io, &sl, &got[0], nullptr).ok());
    EXPECT_EQ(sl.ToString(), want);
    ASSERT_TRUE(f->Append("synced", io, nullptr).ok());
    ASSERT_TRUE(f->Flush(io, nullptr).ok());
    ASSERT_TRUE(f->Sync(io, nullptr).ok());
    EXPECT_TRUE(f->Close(io, nullptr).ok());
    EXPECT_EQ(ReadFile(P("000011.log")), want + "synced");
}

// Debian's prebuilt db_bench, unmodified, takes the file system from the
// preloaded library by URI: the database lands in the mount, and the
// second run's WAL replay ran the device's WAL check.
TEST_F(RocksDbTest, DbBenchUsesItThroughFsUri)
{
    if (access("/usr/bin/db_bench", X_OK) != 0)
        GTEST_SKIP() << "db_bench not installed (Debian: rocksdb-tools)";
#ifdef CISC_ASAN_RUNTIME   /* an ASan build: db_bench has no sanitizer runtime */
    std::string pre = std::string("ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD='") +
                      CISC_ASAN_RUNTIME + " " +
                      Bin("integrations/rocksdb/libcisc-rocksdb.so") + "'" +
#else
    std::string pre = "LD_PRELOAD=" + Bin("integrations/rocksdb/libcisc-rocksdb.so") +
#endif
                      " /usr/bin/db_bench --fs_uri=ciscfs://" + mnt + " --db=" + P("bench") +
                      " --num=20000 --value_size=100 --threads=1 --compression_type=none";
    RunResult r = Sh(pre + " --benchmarks=fillseq");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("fillseq"), std::string::npos) << r.out;
    struct stat st;
    EXPECT_EQ(stat(P("bench/CURRENT").c_str(), &st), 0);
    r = Sh(pre + " --benchmarks=readseq --use_existing_db=1");
    ASSERT_EQ(r.status, 0) << r.out;
    struct cisc_prog_info info;
    ASSERT_EQ(cisc_prog_show(s, "rocksdb-walcheck-1", &info, nullptr, 0), 0);
    EXPECT_GE(info.runs, 1u);
    r = Sh("/usr/bin/db_bench --fs_uri=ciscfs://" + mnt + " --db=" + P("b2") +
           " --benchmarks=fillseq --num=10");
    EXPECT_NE(r.status, 0) << "without the library the scheme is unknown: " << r.out;
}

// RocksDB's default file system under `cisc exec` preallocates every file
// it writes (fallocate KEEP_SIZE, then a punch of the unused tail at
// close), probes fstatfs and sync_file_range and sets a write life-time
// hint on each: none of these takes a descriptor off the direct path
// (fallocate runs in the kernel on a second descriptor), and the
// database is sound.
TEST_F(RocksDbTest, CiscExecKeepsPreallocatedFilesServed)
{
    if (access("/usr/bin/db_bench", X_OK) != 0)
        GTEST_SKIP() << "db_bench not installed (Debian: rocksdb-tools)";
    std::string exec = "CISC_EXEC_STATS=1 " + cisc + " exec " + mnt + " -- ";
    RunResult r = Sh(exec + "sh -c 'cd " + mnt + " && fallocate -l 1048576 pre && stat -c %s pre'");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("1048576"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("demotions 0"), std::string::npos) << r.out;
    r = Sh(exec + "/usr/bin/db_bench --db=" + P("exec-db") +
           " --num=3000 --value_size=100 --benchmarks=fillrandom --sync=1 --compression_type=none");
    ASSERT_EQ(r.status, 0) << r.out;
    // The WAL stayed served: its synced writes went out with their sync
    // (only the LOCK file leaves, for its fcntl lock).
    size_t p = r.out.find("fsyncs answered by a write + sync op ");
    ASSERT_NE(p, std::string::npos) << r.out;
    EXPECT_GE(atol(r.out.c_str() + p + 37), 2900) << r.out;
    rocksdb::DB *db = MustOpen(env.get(), P("exec-db"));
    ASSERT_NE(db, nullptr);
    EXPECT_GT(Dump(db).size(), 1000u);
    delete db;
}

}  // namespace
}  // namespace e2e

#else

TEST(RocksDbTest, NeedsRocksDb)
{
    GTEST_SKIP() << "RocksDB is not installed (Debian: librocksdb-dev): no RocksDB tests";
}

#endif
