// bench/apps/rdb_ycsb.cc - YCSB's load phase and core workloads A-F (and
// db_bench's fills) on RocksDB (ycsb.h), with the default FileSystem or
// the libcisc one: Debian's db_bench has no YCSB workloads.
//
//   cisc-rdb-ycsb [--fs default|cisc] [--mount M] [--num N] [--sync 0|1]
//                 [--benchmarks LIST] DIR
//
// Default benchmarks: ycsbload,ycsba,...,ycsbf (A-F run on the keys the
// load put). The libcisc FileSystem honours CISC_ROCKSDB_HOLD_FLUSH.
// Prints one CSV line per benchmark: "rdb,BENCH,FS,SYNC,NUM,OPS_PER_S".
// Not a test: nothing is checked but the stores' statuses.
#include "bench/apps/ycsb.h"
#include "integrations/rocksdb/cisc_rocksdb.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <cstdlib>
#include <map>
#include <memory>

namespace {

void Check(const rocksdb::Status &s, const char *what)
{
    ycsb::Check(s, "cisc-rdb-ycsb", what);
}

// --name value pairs and the one operand (key ""); exits on anything else.
std::map<std::string, std::string> Parse(int argc, char **argv)
{
    std::map<std::string, std::string> a = {
        { "--fs", "default" }, { "--num", "20000" }, { "--sync", "0" },
        { "--benchmarks", "ycsbload,ycsba,ycsbb,ycsbc,ycsbd,ycsbe,ycsbf" }, { "--mount", "" }
    };
    for (int i = 1; i < argc; i++) {
        if (a.count(argv[i]) && i + 1 < argc) {
            a[argv[i]] = argv[i + 1];
            i++;
        }
        else if (argv[i][0] != '-' && !a.count(""))
            a[""] = argv[i];
        else
            a["?"] = argv[i];
    }
    bool cisc = a["--fs"] == "cisc";
    if (a.count("?") || !a.count("") || (cisc && a["--mount"].empty()) ||
        (!cisc && a["--fs"] != "default") || atol(a["--num"].c_str()) <= 0) {
        fprintf(stderr, "usage: cisc-rdb-ycsb [--fs default|cisc] [--mount M] [--num N] "
                        "[--sync 0|1] [--benchmarks LIST] DIR\n");
        exit(2);
    }
    return a;
}

}  // namespace

int main(int argc, char **argv)
{
    std::map<std::string, std::string> a = Parse(argc, argv);
    std::shared_ptr<rocksdb::FileSystem> fs;
    std::unique_ptr<rocksdb::Env> env;
    if (a["--fs"] == "cisc") {
        Check(cisc::NewRocksDbFileSystem(a["--mount"], &fs), "ciscfs FileSystem");
        env = rocksdb::NewCompositeEnv(fs);
    }
    long num = atol(a["--num"].c_str());
    int sync = atoi(a["--sync"].c_str());
    std::string path = a[""] + "/db";
    rocksdb::Env::Default()->CreateDirIfMissing(a[""]);
    for (const std::string &b : ycsb::Split(a["--benchmarks"])) {
        rocksdb::Options o;
        o.env = env ? env.get() : rocksdb::Env::Default();
        o.create_if_missing = true;
        o.compression = rocksdb::kNoCompression;
        if (ycsb::Fresh(b))
            rocksdb::DestroyDB(path, o);
        ycsb::DbStore<rocksdb::DB, rocksdb::WriteOptions, rocksdb::ReadOptions> db;
        db.who = "cisc-rdb-ycsb";
        Check(rocksdb::DB::Open(o, path, &db.db), "open");
        db.wo.sync = sync;
        double ops = ycsb::Run(db, b, num);
        delete db.db;
        printf("rdb,%s,%s,%d,%ld,%.0f\n", b.c_str(), a["--fs"].c_str(), sync, num, ops);
        fflush(stdout);
    }
    return 0;
}
