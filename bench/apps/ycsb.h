// bench/apps/ycsb.h - the workloads of the application benchmarks, over
// any key-value store: db_bench's fills and reads (fillseq, fillrandom,
// overwrite, readrandom; 16-byte keys, 100-byte values) and YCSB's load
// phase and core workloads A-F (scrambled zipfian, constant 0.99; D:
// latest; E: scans of 1-100 keys). cisc-ldb-bench runs them on LevelDB,
// cisc-rdb-ycsb on RocksDB.
//
// A Store has
//   void Put(const std::string &k, const std::string &v);   // exits on error
//   bool Get(const std::string &k, std::string *v);         // false: missing
//   void Scan(const std::string &from, int n);              // n values from `from`
// DbStore makes one of a LevelDB or RocksDB database (same API shape).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace ycsb {

// Exits naming what failed when status s (a LevelDB or RocksDB Status) is
// not OK.
template <class Status> void Check(const Status &s, const char *who, const char *what)
{
    if (!s.ok()) {
        fprintf(stderr, "%s: %s: %s\n", who, what, s.ToString().c_str());
        exit(1);
    }
}

// A LevelDB or RocksDB database (DB, its WriteOptions and ReadOptions) as
// a Store; who names the program in error messages.
template <class DB, class WriteOptions, class ReadOptions> struct DbStore {
    DB *db = nullptr;
    WriteOptions wo;
    const char *who;
    std::string got;

    void Put(const std::string &k, const std::string &v) { Check(db->Put(wo, k, v), who, "put"); }

    bool Get(const std::string &k, std::string *v)
    {
        auto s = db->Get(ReadOptions(), k, v);
        if (!s.ok() && !s.IsNotFound())
            Check(s, who, "get");
        return s.ok();
    }

    void Scan(const std::string &from, int n)
    {
        using It = std::remove_pointer_t<decltype(db->NewIterator(ReadOptions()))>;
        std::unique_ptr<It> it(db->NewIterator(ReadOptions()));
        for (it->Seek(from); it->Valid() && n > 0; it->Next(), n--)
            got = it->value().ToString();
    }
};

inline std::string Key(long k)
{
    char b[32];   // 16 digits for every k below 10^16
    snprintf(b, sizeof(b), "%016ld", k);
    return b;
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

inline double Since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// YCSB workload w ('a'..'f') on a store loaded with keys [0, num): num
// operations. A update-heavy (50% read, 50% update), B read-mostly
// (95/5), C read-only, D read-latest (95% reads of recent keys, 5%
// inserts), E short ranges (95% scans of 1-100 keys, 5% inserts), F
// read-modify-write (50% read, 50% RMW). Returns operations per second.
template <class Store> double RunYcsb(Store &db, char w, long num)
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
            db.Put(Key(next++), value);
            continue;
        }
        long k = w == 'd' ? next - 1 - (long)zipf.Rank(rng) % next : (long)zipf.Next(rng);
        if (write) {
            db.Put(Key(k), value);
        } else if (w == 'e') {
            db.Scan(Key(k), scan(rng));
        } else {
            db.Get(Key(k), &got);
            if (w == 'f' && p < 50)
                db.Put(Key(k), got + "!");
        }
    }
    return (double)num / Since(t0);
}

// db_bench's benchmark bench (fillseq, fillrandom, overwrite, readrandom;
// ycsbload: YCSB's load phase, a fillseq) on db: num operations. Returns
// operations per second.
template <class Store> double RunFill(Store &db, const std::string &bench, long num)
{
    bool seq = bench == "fillseq" || bench == "ycsbload";
    std::mt19937_64 rng(301);
    std::string value(100, 'x'), got;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < num; i++) {
        long k = seq ? i : (long)(rng() % (uint64_t)num);
        value[i % 100] = (char)('a' + rng() % 26);
        if (bench == "readrandom")
            db.Get(Key(k), &got);
        else
            db.Put(Key(k), value);
    }
    return (double)num / Since(t0);
}

// Runs bench on db: a YCSB workload (ycsba .. ycsbf) or a fill.
template <class Store> double Run(Store &db, const std::string &bench, long num)
{
    if (bench.rfind("ycsb", 0) == 0 && bench.size() == 5)
        return RunYcsb(db, bench[4], num);
    return RunFill(db, bench, num);
}

// Whether bench starts from an empty database.
inline bool Fresh(const std::string &bench)
{
    return bench == "fillseq" || bench == "ycsbload" || bench == "fillrandom";
}

inline std::vector<std::string> Split(const std::string &s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        out.push_back(x);
    return out;
}

}  // namespace ycsb
