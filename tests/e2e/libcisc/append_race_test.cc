// tests/e2e/libcisc/append_race_test.cc - appends through both doors at
// once land whole: O_APPEND write(2)s through the mount, large enough that
// the kernel sends each as several FUSE WRITEs, race libcisc cisc_append
// calls and fused ops that append, all on one file. Every record describes
// itself (header with its length and id, body derived from the id), so the
// file can be walked afterwards: every record must be whole and appear
// exactly once, and nothing else may be in the file.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace e2e {
namespace {

using AppendRace = CiscTest;

constexpr uint64_t kMagic = 0x3143455250415343ull;   // "CSAPREC1"
constexpr size_t kHeader = 24;                       // magic, len, id, check

enum Door : uint32_t { kMount = 1, kRisc = 2, kFused = 3 };

constexpr int kMountWriters = 2;
constexpr int kMountRecords = 10;           // per mount writer
constexpr size_t kMountMin = 200 << 10;     // mount records: 200 KiB ..
constexpr size_t kMountMax = (2 << 20) + 3; // .. 2 MiB (several FUSE pieces)
constexpr size_t kSmallMax = 1024;          // libcisc and fused records
constexpr int kSmallCap = 20000;            // per libcisc writer, at most
constexpr int kSmallWriters = 3;            // two cisc_append, one fused

static uint64_t HeaderCheck(uint32_t len, uint32_t id)
{
    return ((uint64_t)len * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)id * 0xC2B2AE3D27D4EB4Full) ^
           kMagic;
}

// Body byte k of record id: a xorshift stream seeded by the id.
static void FillBody(uint32_t id, uint8_t *p, size_t n)
{
    uint64_t x = 0x2545F4914F6CDD1Dull ^ ((uint64_t)id << 17) ^ id;
    for (size_t k = 0; k < n; k++) {
        if (k % 8 == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        p[k] = (uint8_t)(x >> (8 * (k % 8)));
    }
}

static uint32_t RecordId(Door door, uint32_t writer, uint32_t seq)
{
    return door << 28 | writer << 20 | seq;
}

static std::string Record(uint32_t id, size_t len)
{
    std::string r(len, '\0');
    uint8_t *p = (uint8_t *)&r[0];
    le64_put(p, kMagic);
    le32_put(p + 8, (uint32_t)len);
    le32_put(p + 12, id);
    le64_put(p + 16, HeaderCheck((uint32_t)len, id));
    FillBody(id, p + kHeader, len - kHeader);
    return r;
}

// True when a whole record starts at f[p]; sets its id and length.
static bool WholeAt(const std::string &f, size_t p, uint32_t *id, size_t *len)
{
    if (f.size() - p < kHeader)
        return false;
    const uint8_t *h = (const uint8_t *)f.data() + p;
    uint32_t n = le32_get(h + 8), i = le32_get(h + 12);
    if (le64_get(h) != kMagic || le64_get(h + 16) != HeaderCheck(n, i) || n < kHeader ||
        n > f.size() - p)
        return false;
    std::string body(n - kHeader, '\0');
    FillBody(i, (uint8_t *)&body[0], body.size());
    if (memcmp(h + kHeader, body.data(), body.size()) != 0)
        return false;
    *id = i;
    *len = n;
    return true;
}

struct Walk {
    std::map<uint32_t, int> whole;   // id -> times found whole
    std::vector<uint32_t> order;     // whole records, in file order
    size_t foreign = 0;              // bytes in no whole record
    int gaps = 0;                    // runs of such bytes
};

// Walks the file record by record; after bytes that start no whole
// record, resumes at the next header magic.
static Walk WalkFile(const std::string &f)
{
    Walk w;
    size_t p = 0;
    const uint8_t magic[8] = { 0x43, 0x53, 0x41, 0x50, 0x52, 0x45, 0x43, 0x31 };
    while (p < f.size()) {
        uint32_t id;
        size_t len;
        if (WholeAt(f, p, &id, &len)) {
            w.whole[id]++;
            w.order.push_back(id);
            p += len;
            continue;
        }
        const void *m = memmem(f.data() + p + 1, f.size() - p - 1, magic, sizeof(magic));
        size_t next = m ? (size_t)((const char *)m - f.data()) : f.size();
        w.foreign += next - p;
        w.gaps++;
        p = next;
    }
    return w;
}

struct Written {
    std::mutex mu;
    std::map<uint32_t, size_t> len;   // every record some writer wrote
    std::atomic<int> errors{ 0 };
    std::atomic<long> small{ 0 };     // libcisc and fused records so far
    std::atomic<int> small_done{ 0 }; // libcisc and fused writers that returned

    void Add(uint32_t id, size_t n)
    {
        std::lock_guard<std::mutex> g(mu);
        len[id] = n;
        if (id >> 28 != kMount)
            small++;
    }

    // Returns once a libcisc or fused record went in after `seen` of them
    // (or no such writer is left): the doors' writes overlap.
    void AwaitSmall(long seen) const
    {
        while (small.load() == seen && small_done.load() < kSmallWriters)
            std::this_thread::yield();
    }
};

// Writer w's O_APPEND write(2)s of large records through the mount.
static void MountWriter(const std::string &path, int w, Written *out)
{
    int fd = open(path.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) {
        out->errors++;
        return;
    }
    std::mt19937_64 rng(1000 + w);
    std::uniform_int_distribution<size_t> size(kMountMin, kMountMax);
    for (int i = 0; i < kMountRecords; i++) {
        uint32_t id = RecordId(kMount, (uint32_t)w, (uint32_t)i);
        std::string r = Record(id, size(rng));
        out->AwaitSmall(out->small.load());
        if (write(fd, r.data(), r.size()) != (ssize_t)r.size()) {
            out->errors++;
            break;
        }
        out->Add(id, r.size());
    }
    close(fd);
}

// Writer w's cisc_append calls (RISC) until the mount writers are done.
static void RiscWriter(struct cisc_session *s, int w, const std::atomic<bool> *stop,
                       Written *out)
{
    struct cisc_queue *q;
    uint64_t fh;
    if (cisc_queue_create(s, &q) || cisc_open(q, "race", O_WRONLY, 0, &fh)) {
        out->errors++;
        out->small_done++;
        return;
    }
    std::mt19937_64 rng(2000 + w);
    std::uniform_int_distribution<size_t> size(kHeader, kSmallMax);
    for (int i = 0; i < kSmallCap && !stop->load(); i++) {
        uint32_t id = RecordId(kRisc, (uint32_t)w, (uint32_t)i);
        std::string r = Record(id, size(rng));
        if (cisc_append(q, fh, r.data(), r.size(), nullptr) != (ssize_t)r.size()) {
            out->errors++;
            break;
        }
        out->Add(id, r.size());
    }
    cisc_close(q, fh);
    cisc_queue_destroy(q);
    out->small_done++;
}

// Fused ops that append one record in two APPEND steps (header, body).
static void FusedWriter(struct cisc_session *s, const std::atomic<bool> *stop, Written *out)
{
    struct cisc_queue *q;
    uint64_t fh;
    if (cisc_queue_create(s, &q) || cisc_open(q, "race", O_WRONLY, 0, &fh)) {
        out->errors++;
        out->small_done++;
        return;
    }
    std::mt19937_64 rng(3000);
    std::uniform_int_distribution<size_t> size(kHeader, kSmallMax);
    for (int i = 0; i < kSmallCap && !stop->load(); i++) {
        uint32_t id = RecordId(kFused, 0, (uint32_t)i);
        std::string r = Record(id, size(rng));
        struct cisc_vec v;
        if (cisc_vec_init(&v, q)) {
            out->errors++;
            break;
        }
        int f = cisc_vec_fh(&v, fh);
        cisc_vec_append(&v, f, CISC_IN_BUF(r.data(), kHeader));
        cisc_vec_append(&v, f, CISC_IN_BUF(r.data() + kHeader, r.size() - kHeader));
        int64_t st = cisc_vec_submit(&v);
        cisc_vec_free(&v);
        if (st != 0) {
            out->errors++;
            break;
        }
        out->Add(id, r.size());
    }
    cisc_close(q, fh);
    cisc_queue_destroy(q);
    out->small_done++;
}

TEST_F(AppendRace, MountWritesStayWholeAmongLibciscAppends)
{
    Put("race", "");
    Written wr;
    std::atomic<bool> stop{ false };
    std::vector<std::thread> small, mount;
    for (int w = 0; w < kSmallWriters - 1; w++)
        small.emplace_back(RiscWriter, s, w, &stop, &wr);
    small.emplace_back(FusedWriter, s, &stop, &wr);
    for (int w = 0; w < kMountWriters; w++)
        mount.emplace_back(MountWriter, P("race"), w, &wr);
    for (auto &t : mount)
        t.join();
    stop = true;
    for (auto &t : small)
        t.join();
    ASSERT_EQ(wr.errors.load(), 0);

    std::string f = Get("race");
    Walk w = WalkFile(f);
    size_t total = 0, torn = 0, mount_records = 0;
    for (const auto &[id, n] : wr.len) {
        total += n;
        mount_records += id >> 28 == kMount;
        auto it = w.whole.find(id);
        if (it == w.whole.end())
            torn++;
        else
            EXPECT_EQ(it->second, 1) << "record " << std::hex << id << " appears "
                                     << it->second << " times";
    }
    EXPECT_EQ(mount_records, (size_t)kMountWriters * kMountRecords);
    // The doors did race: small records lie among the mount's (AwaitSmall).
    size_t first = w.order.size(), last = 0, among = 0;
    for (size_t i = 0; i < w.order.size(); i++)
        if (w.order[i] >> 28 == kMount) {
            first = std::min(first, i);
            last = i;
        }
    for (size_t i = first; i < last; i++)
        among += w.order[i] >> 28 != kMount;
    EXPECT_GT(among, 0u);
    EXPECT_EQ(f.size(), total);
    EXPECT_EQ(torn, 0u) << "of " << wr.len.size() << " records (" << mount_records
                        << " through the mount), " << torn << " are not whole; "
                        << w.foreign << " bytes in " << w.gaps << " runs belong to none";
    EXPECT_EQ(w.foreign, 0u);
    EXPECT_EQ(w.whole.size(), wr.len.size());
}

}  // namespace
}  // namespace e2e
