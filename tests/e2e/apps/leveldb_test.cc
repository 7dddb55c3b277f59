// tests/e2e/apps/leveldb_test.cc - LevelDB on a real device through the
// libcisc Env (integrations/leveldb), compared with the same workload run
// by LevelDB's default Env on the same mount (through FUSE): same keys,
// same values, same iteration; a database written by one Env opens with
// the other; a writer killed mid-run loses nothing it had synced.
#include "tests/e2e/apps/apps_fixture.h"

#if CISC_HAVE_LEVELDB

#include "integrations/leveldb/cisc_leveldb.h"

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

extern "C" {
#include "common/crc32c.h"
}

namespace e2e {
namespace {

using namespace apps;

class LevelDbTest : public CiscTest {
protected:
    std::unique_ptr<leveldb::Env> env;

    void SetUp() override
    {
        CiscTest::SetUp();
        if (HasFatalFailure())
            return;
        leveldb::Status st = cisc::NewLevelDbEnv(mnt, &env);
        ASSERT_TRUE(st.ok()) << st.ToString();
    }

    void TearDown() override
    {
        env.reset();
        CiscTest::TearDown();
    }

    leveldb::DB *Open(leveldb::Env *e, const std::string &path)
    {
        leveldb::Options o;
        o.env = e;
        o.create_if_missing = true;
        o.write_buffer_size = 256 << 10;   // several memtable flushes and compactions
        leveldb::DB *db = nullptr;
        leveldb::Status st = leveldb::DB::Open(o, path, &db);
        EXPECT_TRUE(st.ok()) << path << ": " << st.ToString();
        return db;
    }

    // Every key and value in order, one line each.
    std::string Dump(leveldb::DB *db)
    {
        std::string out;
        std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
        for (it->SeekToFirst(); it->Valid(); it->Next())
            out += it->key().ToString() + "=" + it->value().ToString() + "\n";
        EXPECT_TRUE(it->status().ok()) << it->status().ToString();
        return out;
    }

    // The workload: 10k puts (every 5th synced), a batch of overwrites and
    // deletes, point reads of all keys, a dump; closed and reopened, a
    // second dump. Returns both dumps joined.
    std::string Workload(leveldb::Env *e, const std::string &path)
    {
        leveldb::DB *db = Open(e, path);
        if (!db)
            return "";
        leveldb::WriteOptions wo;
        for (int i = 0; i < kKeys; i++) {
            wo.sync = i % 5 == 0;
            EXPECT_TRUE(db->Put(wo, Key(i), Value(i, 0)).ok());
        }
        leveldb::WriteBatch b;
        for (int i = 0; i < kKeys; i += 3)
            i % 2 ? b.Delete(Key(i)) : b.Put(Key(i), Value(i, 1));
        EXPECT_TRUE(db->Write(leveldb::WriteOptions(), &b).ok());
        int found = 0;
        std::string v;
        for (int i = 0; i < kKeys; i++) {
            leveldb::Status st = db->Get(leveldb::ReadOptions(), Key(i), &v);
            found += st.ok();
            bool deleted = i % 3 == 0 && i % 2;
            EXPECT_EQ(st.IsNotFound(), deleted) << i;
            if (st.ok()) {
                EXPECT_EQ(v, Value(i, i % 3 == 0 ? 1 : 0)) << i;
            }
        }
        EXPECT_GT(found, kKeys * 5 / 6 - 2);
        std::string first = Dump(db);
        delete db;
        db = Open(e, path);
        std::string second = db ? Dump(db) : "";
        delete db;
        EXPECT_EQ(first, second) << "reopening changed the contents";
        return first;
    }
};

TEST_F(LevelDbTest, SameAsTheDefaultEnvOnTheMount)
{
    std::string mine = Workload(env.get(), P("cisc-db"));
    std::string theirs = Workload(leveldb::Env::Default(), P("posix-db"));
    EXPECT_EQ(std::count(mine.begin(), mine.end(), '\n'), kKeys - (kKeys / 3 + 1) / 2);
    EXPECT_EQ(mine, theirs);
    cisc::LevelDbEnvStats s = cisc::LevelDbEnvStatsOf(env.get());
    EXPECT_GT(s.write_ops, 1000u);
    EXPECT_GE(s.sync_ops, (uint64_t)kKeys / 5);       // every 5th put was synced
    EXPECT_GE(s.verified_records, (uint64_t)kKeys);   // each put's log record checked
    EXPECT_GE(s.queues, 2u);                          // this thread and the compaction thread
    EXPECT_EQ(cisc::LevelDbEnvStatsOf(leveldb::Env::Default()).write_ops, 0u);
}

// Table files carry no checks, so their writes go behind (submitted, not
// waited for), and the database reads its own tables back at once
// (compactions read tables just written): the workload's contents are the
// same after reopening through the default Env. Fails when table writes
// are waited for (no write-behind ops).
TEST_F(LevelDbTest, TableWritesGoBehind)
{
    std::string mine = Workload(env.get(), P("behind-db"));
    EXPECT_EQ(std::count(mine.begin(), mine.end(), '\n'), kKeys - (kKeys / 3 + 1) / 2);
    EXPECT_GT(cisc::LevelDbEnvStatsOf(env.get()).behind_ops, 0u);
    leveldb::DB *db = Open(leveldb::Env::Default(), P("behind-db"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), mine);
    delete db;
}

// A log record in LevelDB's format (db/log_format.h): masked CRC-32C of
// type and payload, length, type, payload; bit `flip` of the payload
// inverted after the checksum was taken (-1: none).
std::string LogRecord(const std::string &payload, int flip)
{
    std::string tp = "\x01" + payload;   // kFullType
    uint32_t crc = crc32c(0, tp.data(), tp.size());
    uint32_t m = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
    std::string r = { (char)m, (char)(m >> 8), (char)(m >> 16), (char)(m >> 24),
                      (char)payload.size(), (char)(payload.size() >> 8) };
    r += tp;
    if (flip >= 0)
        r[7 + flip / 8] ^= (char)(1 << (flip % 8));
    return r;
}

// The device checks each log record against its checksum in the op that
// writes it: a damaged record is refused as corruption and not written; a
// table file (not in log format) is written as given.
TEST_F(LevelDbTest, DeviceRefusesADamagedLogRecord)
{
    ASSERT_EQ(mkdir(P("t").c_str(), 0755), 0);
    leveldb::WritableFile *f;
    ASSERT_TRUE(env->NewWritableFile(P("t/000007.log"), &f).ok());
    std::string good = LogRecord("a record LevelDB wrote", -1);
    uint64_t checked = cisc::LevelDbEnvStatsOf(env.get()).verified_records;
    ASSERT_TRUE(f->Append(good).ok());
    ASSERT_TRUE(f->Flush().ok());
    EXPECT_EQ(cisc::LevelDbEnvStatsOf(env.get()).verified_records, checked + 1);
    ASSERT_TRUE(f->Append(LogRecord("a record damaged on the way", 13)).ok());
    leveldb::Status st = f->Sync();
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    delete f;   // its close retries the damaged bytes and fails again
    EXPECT_EQ(ReadFile(P("t/000007.log")), good);
    ASSERT_TRUE(env->NewWritableFile(P("t/000008.ldb"), &f).ok());
    std::string bad = LogRecord("not a log", 3);
    ASSERT_TRUE(f->Append(bad).ok());
    EXPECT_TRUE(f->Sync().ok());
    EXPECT_TRUE(f->Close().ok());
    delete f;
    EXPECT_EQ(ReadFile(P("t/000008.ldb")), bad);
}

// Synced puts: from the third on, the record's write carries the FSYNC
// and the DB's Sync is answered without a second op.
TEST_F(LevelDbTest, SyncedPutIsOneFusedOp)
{
    leveldb::DB *db = Open(env.get(), P("synced"));
    ASSERT_NE(db, nullptr);
    cisc::LevelDbEnvStats a = cisc::LevelDbEnvStatsOf(env.get());
    leveldb::WriteOptions wo;
    wo.sync = true;
    for (int i = 0; i < 300; i++) {
        ASSERT_TRUE(db->Put(wo, Key(i), Value(i, 0)).ok());
    }
    cisc::LevelDbEnvStats b = cisc::LevelDbEnvStatsOf(env.get());
    EXPECT_GE(b.syncs_answered - a.syncs_answered, 298u);
    // One op per put; two for the first two, and for a record split where
    // it crosses a 32 KiB log block (about one in 90 here).
    EXPECT_LE(b.write_ops - a.write_ops, 310u);
    EXPECT_GE(b.sync_ops - a.sync_ops, 300u);
    delete db;
    db = Open(leveldb::Env::Default(), P("synced"));
    ASSERT_NE(db, nullptr);
    std::string d = Dump(db);
    EXPECT_EQ(std::count(d.begin(), d.end(), '\n'), 300);
    delete db;
}

// Both doors see the same files: each Env opens what the other wrote.
TEST_F(LevelDbTest, EachEnvOpensTheOthersDatabase)
{
    std::string mine = Workload(env.get(), P("a"));
    std::string theirs = Workload(leveldb::Env::Default(), P("b"));
    leveldb::DB *db = Open(leveldb::Env::Default(), P("a"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), mine);
    delete db;
    db = Open(env.get(), P("b"));
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(Dump(db), theirs);
    delete db;
}

// The files of a database outside the mount go to the default Env.
TEST_F(LevelDbTest, PathsOutsideTheMountUseTheDefaultEnv)
{
    uint64_t before = cisc::LevelDbEnvStatsOf(env.get()).write_ops;
    leveldb::DB *db = Open(env.get(), dir + "/outside-db");
    ASSERT_NE(db, nullptr);
    EXPECT_TRUE(db->Put(leveldb::WriteOptions(), "k", "v").ok());
    delete db;
    EXPECT_EQ(cisc::LevelDbEnvStatsOf(env.get()).write_ops, before);
    struct stat st;
    EXPECT_EQ(stat((dir + "/outside-db/CURRENT").c_str(), &st), 0);
}

// A writer killed in the middle of its puts: on reopen, every put it had
// synced (and printed) is there, and the database keeps working.
TEST_F(LevelDbTest, KilledWriterLosesNothingSynced)
{
    long last = RunAndKill("ldb_writer", mnt, P("crash-db"), 1500);
    ASSERT_GE(last, 1500) << "the writer stopped early";
    leveldb::DB *db = Open(env.get(), P("crash-db"));
    ASSERT_NE(db, nullptr);
    ExpectWritten(last, [&](const std::string &k, std::string *v) {
        return db->Get(leveldb::ReadOptions(), k, v).ok();
    });
    EXPECT_TRUE(db->Put(leveldb::WriteOptions(), "after", "crash").ok());
    delete db;
    ExpectDeviceUp();
}

}  // namespace
}  // namespace e2e

#else

TEST(LevelDbTest, NeedsLevelDb)
{
    GTEST_SKIP() << "LevelDB is not installed (Debian: libleveldb-dev): no LevelDB tests";
}

#endif
