// bench/apps/ldb_bench.cc - a small db_bench for LevelDB: fillseq,
// fillrandom, overwrite, readrandom (LevelDB's db_bench names and key
// format: 16-byte keys, 100-byte values), with WriteOptions.sync 0 or 1,
// and YCSB's core workloads ycsba .. ycsbf (scrambled zipfian, constant
// 0.99; D: latest; E: scans of 1-100 keys) on the keys a fill loaded.
//
//   cisc-ldb-bench [options] DIR
//     --env default|cisc   the Env (cisc needs --mount; default: default)
//     --mount M            the ciscfs mount the cisc Env serves
//     --compare            both Envs, alternating rounds, DIR/default and
//                          DIR/cisc (DIR under --mount); prints the ratio
//     --num N              operations per benchmark (default 20000)
//     --sync 0|1           WriteOptions.sync (default 0)
//     --rounds R           repetitions; the median is printed (default 1)
//     --benchmarks LIST    comma-separated (default the four db_bench ones;
//                          ycsba..ycsbf run on the keys ycsbload puts)
//
// Prints one CSV line per benchmark and Env: "ldb,BENCH,ENV,SYNC,NUM,OPS_PER_S",
// and with --compare "ldb-ratio,BENCH,cisc/default,SYNC,NUM,RATIO".
// Not a test: it checks only that every read finds its key.
#include "bench/apps/ycsb.h"
#include "integrations/leveldb/cisc_leveldb.h"

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Args {
    std::string dir, mount, env = "default", benchmarks = "fillseq,fillrandom,overwrite,readrandom";
    long num = 20000;
    int sync = 0, rounds = 1;
    bool compare = false;
};

void Usage()
{
    fprintf(stderr, "usage: cisc-ldb-bench [--env default|cisc] [--mount M] [--compare] "
                    "[--num N] [--sync 0|1] [--rounds R] [--benchmarks LIST] DIR\n");
    exit(2);
}

Args Parse(int argc, char **argv)
{
    Args a;
    for (int i = 1; i < argc; i++) {
        std::string o = argv[i];
        bool more = i + 1 < argc;
        if (o == "--compare")
            a.compare = true;
        else if (o == "--env" && more)
            a.env = argv[++i];
        else if (o == "--mount" && more)
            a.mount = argv[++i];
        else if (o == "--num" && more)
            a.num = atol(argv[++i]);
        else if (o == "--sync" && more)
            a.sync = atoi(argv[++i]);
        else if (o == "--rounds" && more)
            a.rounds = atoi(argv[++i]);
        else if (o == "--benchmarks" && more)
            a.benchmarks = argv[++i];
        else if (o[0] != '-' && a.dir.empty())
            a.dir = o;
        else
            Usage();
    }
    if (a.dir.empty() || a.num <= 0 || a.rounds <= 0 || ((a.compare || a.env == "cisc") && a.mount.empty()))
        Usage();
    return a;
}

void Check(const leveldb::Status &s, const char *what)
{
    ycsb::Check(s, "cisc-ldb-bench", what);
}

// One benchmark on the database at path; returns operations per second.
double RunOne(leveldb::Env *env, const std::string &path, const std::string &bench, long num,
              bool sync)
{
    leveldb::Options o;
    o.env = env;
    o.create_if_missing = true;
    if (ycsb::Fresh(bench))
        leveldb::DestroyDB(path, o);
    ycsb::DbStore<leveldb::DB, leveldb::WriteOptions, leveldb::ReadOptions> db;
    db.who = "cisc-ldb-bench";
    Check(leveldb::DB::Open(o, path, &db.db), "open");
    db.wo.sync = sync;
    double r = ycsb::Run(db, bench, num);
    delete db.db;
    return r;
}

double Median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv)
{
    Args a = Parse(argc, argv);
    std::unique_ptr<leveldb::Env> cisc_env;
    if (!a.mount.empty())
        Check(cisc::NewLevelDbEnv(a.mount, &cisc_env), "ciscfs Env");
    std::vector<std::pair<std::string, leveldb::Env *>> envs;
    if (a.compare || a.env == "default")
        envs.push_back({ "default", leveldb::Env::Default() });
    if (a.compare || a.env == "cisc")
        envs.push_back({ "cisc", cisc_env.get() });
    // Results per benchmark and Env; rounds alternate the Envs.
    std::map<std::string, std::map<std::string, std::vector<double>>> ops;
    for (int r = 0; r < a.rounds; r++)
        for (const std::string &b : ycsb::Split(a.benchmarks))
            for (auto &[name, env] : envs) {
                std::string path = a.compare ? a.dir + "/" + name : a.dir;
                leveldb::Env::Default()->CreateDir(path);   // ok when it exists
                ops[b][name].push_back(RunOne(env, path + "/db", b, a.num, a.sync));
            }
    for (const std::string &b : ycsb::Split(a.benchmarks)) {
        for (auto &[name, env] : envs)
            printf("ldb,%s,%s,%d,%ld,%.0f\n", b.c_str(), name.c_str(), a.sync, a.num,
                   Median(ops[b][name]));
        if (a.compare)
            printf("ldb-ratio,%s,cisc/default,%d,%ld,%.2f\n", b.c_str(), a.sync, a.num,
                   Median(ops[b]["cisc"]) / Median(ops[b]["default"]));
    }
    return 0;
}
