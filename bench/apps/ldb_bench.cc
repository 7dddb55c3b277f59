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

std::string Key(long k)
{
    char b[32];   // 16 digits for every k below 10^16
    snprintf(b, sizeof(b), "%016ld", k);
    return b;
}

void Check(const leveldb::Status &s, const char *what)
{
    if (!s.ok()) {
        fprintf(stderr, "cisc-ldb-bench: %s: %s\n", what, s.ToString().c_str());
        exit(1);
    }
}

// YCSB's scrambled zipfian (constant 0.99) over [0, n): Gray et al.'s
// generator, as YCSB's ZipfianGenerator, with the value hashed (FNV-1a)
// so that popular keys are spread over the key space.
class Zipf {
public:
    explicit Zipf(uint64_t n) : n_(n)
    {
        for (uint64_t i = 1; i <= n; i++)
            zetan_ += 1.0 / std::pow((double)i, kTheta);
        double zeta2 = 1.0 + 1.0 / std::pow(2.0, kTheta);
        alpha_ = 1.0 / (1.0 - kTheta);
        eta_ = (1.0 - std::pow(2.0 / (double)n, 1.0 - kTheta)) / (1.0 - zeta2 / zetan_);
    }

    // The rank drawn (0: most popular).
    uint64_t Rank(std::mt19937_64 &rng)
    {
        double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng), uz = u * zetan_;
        if (uz < 1.0)
            return 0;
        if (uz < 1.0 + std::pow(0.5, kTheta))
            return 1;
        return std::min(n_ - 1, (uint64_t)((double)n_ * std::pow(eta_ * u - eta_ + 1.0, alpha_)));
    }

    // A key index drawn: the rank scrambled.
    uint64_t Next(std::mt19937_64 &rng)
    {
        uint64_t h = 0xcbf29ce484222325ull, r = Rank(rng);
        for (int i = 0; i < 8; i++, r >>= 8)
            h = (h ^ (r & 0xff)) * 0x100000001b3ull;
        return h % n_;
    }

private:
    static constexpr double kTheta = 0.99;
    uint64_t n_;
    double zetan_ = 0, alpha_, eta_;
};

// YCSB workload w ('a'..'f') on a database loaded with keys [0, num):
// num operations. A update-heavy (50% read, 50% update), B read-mostly
// (95/5), C read-only, D read-latest (95% reads of recent keys, 5%
// inserts), E short ranges (95% scans of 1-100 keys, 5% inserts), F
// read-modify-write (50% read, 50% RMW). Returns operations per second.
double RunYcsb(leveldb::DB *db, char w, long num, const leveldb::WriteOptions &wo)
{
    std::mt19937_64 rng(w);
    Zipf zipf((uint64_t)num);
    std::uniform_int_distribution<int> pct(0, 99), scan(1, 100);
    long next = num;   // the next key inserted
    std::string value(100, 'y'), got;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < num; i++) {
        int p = pct(rng);
        bool write = (w == 'a' && p < 50) || (w == 'b' && p < 5) || ((w == 'd' || w == 'e') && p < 5);
        if (write && (w == 'd' || w == 'e')) {
            Check(db->Put(wo, Key(next++), value), "insert");
            continue;
        }
        long k = w == 'd' ? next - 1 - (long)zipf.Rank(rng) % next : (long)zipf.Next(rng);
        if (write) {
            Check(db->Put(wo, Key(k), value), "update");
        } else if (w == 'e') {
            std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
            int n = scan(rng);
            for (it->Seek(Key(k)); it->Valid() && n > 0; it->Next(), n--)
                got = it->value().ToString();
        } else {
            leveldb::Status s = db->Get(leveldb::ReadOptions(), Key(k), &got);
            if (!s.ok() && !s.IsNotFound())
                Check(s, "read");
            if (w == 'f' && p < 50)
                Check(db->Put(wo, Key(k), got + "!"), "read-modify-write");
        }
    }
    return (double)num / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One benchmark on the database at path; returns operations per second.
double RunOne(leveldb::Env *env, const std::string &path, const std::string &bench, long num,
              bool sync)
{
    leveldb::Options o;
    o.env = env;
    o.create_if_missing = true;
    bool seq = bench == "fillseq" || bench == "ycsbload";   // ycsbload: YCSB's load phase
    bool fresh = seq || bench == "fillrandom";
    if (fresh)
        leveldb::DestroyDB(path, o);
    leveldb::DB *db;
    Check(leveldb::DB::Open(o, path, &db), "open");
    if (bench.rfind("ycsb", 0) == 0 && bench.size() == 5) {   // ycsba .. ycsbf, after a fill
        leveldb::WriteOptions wo;
        wo.sync = sync;
        double r = RunYcsb(db, bench[4], num, wo);
        delete db;
        return r;
    }
    std::mt19937_64 rng(301);
    std::string value(100, 'x'), got;
    leveldb::WriteOptions wo;
    wo.sync = sync;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < num; i++) {
        long k = seq ? i : (long)(rng() % (uint64_t)num);
        value[i % 100] = (char)('a' + rng() % 26);
        if (bench == "readrandom") {
            leveldb::Status s = db->Get(leveldb::ReadOptions(), Key(k), &got);
            if (!s.ok() && !s.IsNotFound())
                Check(s, "get");
        } else {
            Check(db->Put(wo, Key(k), value), "put");
        }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    delete db;
    return (double)num / secs;
}

std::vector<std::string> Split(const std::string &s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        out.push_back(x);
    return out;
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
        for (const std::string &b : Split(a.benchmarks))
            for (auto &[name, env] : envs) {
                std::string path = a.compare ? a.dir + "/" + name : a.dir;
                leveldb::Env::Default()->CreateDir(path);   // ok when it exists
                ops[b][name].push_back(RunOne(env, path + "/db", b, a.num, a.sync));
            }
    for (const std::string &b : Split(a.benchmarks)) {
        for (auto &[name, env] : envs)
            printf("ldb,%s,%s,%d,%ld,%.0f\n", b.c_str(), name.c_str(), a.sync, a.num,
                   Median(ops[b][name]));
        if (a.compare)
            printf("ldb-ratio,%s,cisc/default,%d,%ld,%.2f\n", b.c_str(), a.sync, a.num,
                   Median(ops[b]["cisc"]) / Median(ops[b]["default"]));
    }
    return 0;
}
