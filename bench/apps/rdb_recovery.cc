// bench/apps/rdb_recovery.cc - RocksDB's recovery from a large WAL
// (FusionFS Figure 11's recovery): a writer fills a WAL and dies without
// closing the database; each later run times DB::Open, which replays it.
//
//   cisc-rdb-recovery write   [--mb N] DIR     puts 1 KiB values (sync=0)
//                                              until the WAL holds N MiB
//                                              (default 256), a synced one,
//                                              and exits without closing
//   cisc-rdb-recovery recover [--fs default|cisc --mount M --walcheck 0|1] DIR
//                                              opens DIR, timing DB::Open
//   cisc-rdb-recovery read    [same options] DIR   reads DIR's WALs, timed
//                                              (the I/O part of a recovery)
//
// Recovery keeps the WAL (avoid_flush_during_recovery, and a close never
// flushes a memtable whose WAL is on), so the same WAL is replayed by every
// run: runs can alternate between file systems over one database. Both
// phases use the default FileSystem unless --fs cisc.
//
// Prints "rdb-recovery,FS,WALCHECK,WAL_MB,MS" (read: "rdb-walread,..."). Not a test: it checks only
// that the last key written is there after the replay.
#include "integrations/rocksdb/cisc_rocksdb.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct Args {
    std::string phase, dir, fs = "default", mount;
    long mb = 256;
    int walcheck = 1;
};

[[noreturn]] void Usage()
{
    fprintf(stderr, "usage: cisc-rdb-recovery write [--mb N] DIR\n"
                    "       cisc-rdb-recovery recover|read [--fs default|cisc] [--mount M] "
                    "[--walcheck 0|1] DIR\n");
    exit(2);
}

Args Parse(int argc, char **argv)
{
    Args a;
    for (int i = 1; i < argc; i++) {
        std::string o = argv[i];
        bool more = i + 1 < argc;
        if (o == "--mb" && more)
            a.mb = atol(argv[++i]);
        else if (o == "--fs" && more)
            a.fs = argv[++i];
        else if (o == "--mount" && more)
            a.mount = argv[++i];
        else if (o == "--walcheck" && more)
            a.walcheck = atoi(argv[++i]);
        else if (o[0] != '-' && a.phase.empty())
            a.phase = o;
        else if (o[0] != '-' && a.dir.empty())
            a.dir = o;
        else
            Usage();
    }
    if ((a.phase != "write" && a.phase != "recover" && a.phase != "read") || a.dir.empty() || a.mb <= 0 ||
        (a.fs == "cisc" && a.mount.empty()) || (a.fs != "cisc" && a.fs != "default"))
        Usage();
    return a;
}

rocksdb::Options BaseOptions(rocksdb::Env *env)
{
    rocksdb::Options o;
    o.env = env;
    o.create_if_missing = true;
    o.write_buffer_size = 4ull << 30;       // the whole WAL stays in one memtable
    o.max_total_wal_size = 8ull << 30;
    o.avoid_flush_during_recovery = true;   // recovery reads, never writes tables
    return o;
}

std::string Key(long i)
{
    char b[24];
    snprintf(b, sizeof(b), "key%016ld", i);
    return b;
}

int Write(const Args &a, rocksdb::Env *env)
{
    rocksdb::DB *db;
    rocksdb::Status st = rocksdb::DB::Open(BaseOptions(env), a.dir, &db);
    std::string v(1024, 'v');
    long n = a.mb * 1024 - a.mb * 1024 / 16;   // record headers and keys make up the rest
    for (long i = 0; st.ok() && i < n; i++) {
        v[i % v.size()] = (char)('a' + i % 26);
        st = db->Put(rocksdb::WriteOptions(), Key(i), v);
    }
    rocksdb::WriteOptions synced;
    synced.sync = true;
    if (st.ok())
        st = db->Put(synced, "synced", "the WAL is durable up to here");
    if (!st.ok()) {
        fprintf(stderr, "cisc-rdb-recovery: %s\n", st.ToString().c_str());
        return 1;
    }
    printf("rdb-write,%ld\n", n);
    fflush(stdout);
    _exit(0);   // the writer dies: no close, the data lives only in the WAL
}

int Recover(const Args &a, rocksdb::Env *env)
{
    auto t0 = std::chrono::steady_clock::now();
    rocksdb::DB *db;
    rocksdb::Status st = rocksdb::DB::Open(BaseOptions(env), a.dir, &db);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) {
        fprintf(stderr, "cisc-rdb-recovery: %s\n", st.ToString().c_str());
        return 1;
    }
    std::string v;
    long last = a.mb * 1024 - a.mb * 1024 / 16 - 1;
    st = db->Get(rocksdb::ReadOptions(), Key(last), &v);
    delete db;
    if (!st.ok()) {
        fprintf(stderr, "cisc-rdb-recovery: the last key is missing: %s\n", st.ToString().c_str());
        return 1;
    }
    printf("rdb-recovery,%s,%d,%ld,%.1f\n", a.fs.c_str(), a.fs == "cisc" ? a.walcheck : 0, a.mb, ms);
    return 0;
}

// Reads every WAL of the database to its end, 32 KiB per Read as RocksDB's
// log reader does: the I/O part of a recovery, without the replay.
int ReadWals(const Args &a, rocksdb::Env *env)
{
    std::vector<std::string> kids;
    rocksdb::Status st = env->GetChildren(a.dir, &kids);
    auto t0 = std::chrono::steady_clock::now();
    uint64_t bytes = 0;
    std::string scratch(32768, '\0');
    for (const std::string &k : kids) {
        if (!st.ok() || k.size() < 4 || k.compare(k.size() - 4, 4, ".log") != 0)
            continue;
        std::unique_ptr<rocksdb::FSSequentialFile> f;
        st = env->GetFileSystem()->NewSequentialFile(a.dir + "/" + k, rocksdb::FileOptions(), &f,
                                                     nullptr);
        rocksdb::Slice got("x", 1);
        while (st.ok() && got.size() > 0) {
            st = f->Read(scratch.size(), rocksdb::IOOptions(), &got, &scratch[0], nullptr);
            bytes += got.size();
        }
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) {
        fprintf(stderr, "cisc-rdb-recovery: %s\n", st.ToString().c_str());
        return 1;
    }
    printf("rdb-walread,%s,%d,%.0f,%.1f\n", a.fs.c_str(), a.fs == "cisc" ? a.walcheck : 0,
           (double)bytes / (1 << 20), ms);
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    Args a = Parse(argc, argv);
    std::shared_ptr<rocksdb::FileSystem> fs;
    std::unique_ptr<rocksdb::Env> own;
    rocksdb::Env *env = rocksdb::Env::Default();
    if (a.fs == "cisc") {
        rocksdb::Status st = cisc::NewRocksDbFileSystem(a.mount, &fs);
        if (!st.ok()) {
            fprintf(stderr, "cisc-rdb-recovery: %s\n", st.ToString().c_str());
            return 1;
        }
        cisc::RocksDbFsSetWalCheck(fs.get(), a.walcheck != 0);
        own = rocksdb::NewCompositeEnv(fs);
        env = own.get();
    }
    if (a.phase == "read")
        return ReadWals(a, env);
    return a.phase == "write" ? Write(a, env) : Recover(a, env);
}
