// integrations/rocksdb/cr_files.cc - RocksDB's kinds of file over libcisc
// handles: sequential reads (read ahead in large fused ops; WALs checked in
// the device), random reads with cisc_pread, and the writable file whose
// buffered appends reach the device as fused ops (cisc_rocksdb.h,
// invariants 3 to 6).
#include "integrations/rocksdb/cr_int.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace cisc::rdb {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

constexpr size_t kWriteBuf = 64 << 10;   // appends gathered before a write
constexpr size_t kChunk = 1 << 20;       // most bytes one command moves (fits the arena)
constexpr size_t kMaxChecks = 30;        // hand-off checks per op: 2 steps each of 64
constexpr uint64_t kHeldMax = 256ull << 20;   // table bytes held in memory per file system

// Opens dpath through the calling thread's queue.
int OpenHandle(Session &s, const std::string &dpath, int flags, uint64_t *fh)
{
    struct cisc_queue *q;
    int r = s.Queue(&q);
    return r ? r : cisc_open(q, dpath.c_str(), flags, 0644, fh);
}

// Closes fh, on whichever thread drops the file.
void CloseHandle(Session &s, uint64_t fh)
{
    struct cisc_queue *q;
    if (s.Queue(&q) == 0)
        cisc_close(q, fh);
}

// Reads up to n bytes at off into buf, in chunks the arena holds; stops at
// end of file. Returns the bytes read or -errno.
ssize_t ReadAt(Session &s, uint64_t fh, char *buf, size_t n, uint64_t off)
{
    struct cisc_queue *q;
    int r = s.Queue(&q);
    if (r)
        return r;
    size_t got = 0;
    while (got < n) {
        ssize_t k = cisc_pread(q, fh, buf + got, std::min(n - got, kChunk), off + got);
        if (k < 0)
            return k;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

// Sequential reads through a read-ahead window of kChunk bytes: RocksDB
// reads a WAL or MANIFEST 32 KiB at a time, and a round trip per 32 KiB
// would cost more than the system call it replaces. A WAL's window is
// filled by WalRead (checked in the device) until it reports damage; from
// there on it is read plainly, so RocksDB sees the damaged bytes itself.
class SeqFile : public rocksdb::FSSequentialFile {
public:
    SeqFile(std::shared_ptr<Session> s, std::string name, uint64_t fh, bool wal)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh), wal_(wal) {}
    ~SeqFile() override { CloseHandle(*s_, fh_); }

    IOStatus Read(size_t n, const IOOptions &, Slice *result, char *scratch,
                  IODebugContext *) override
    {
        size_t got = 0;
        while (got < n) {
            if (pos_ >= win_off_ + win_.size()) {
                ssize_t k = Fill();
                if (k < 0)
                    return Err(name_, (int)k);
                if (k == 0)
                    break;
            }
            size_t at = (size_t)(pos_ - win_off_);
            size_t take = std::min(n - got, win_.size() - at);
            memcpy(scratch + got, win_.data() + at, take);
            got += take;
            pos_ += take;
        }
        *result = Slice(scratch, got);
        return IOStatus::OK();
    }

    IOStatus Skip(uint64_t n) override
    {
        pos_ += n;   // like lseek: past the end reads then return nothing
        return IOStatus::OK();
    }

private:
    // Refills the window at pos_. Returns the bytes now in it or -errno.
    ssize_t Fill()
    {
        win_.resize(kChunk);
        win_off_ = pos_;
        ssize_t k;
        uint32_t prog = wal_ && !damaged_ && s_->wal_check ? s_->WalProg() : 0;
        if (wal_ && !damaged_ && pos_ % 32768 == 0) {
            k = WalRead(*s_, fh_, &win_[0], kChunk, pos_, prog, &damaged_);
            if (k == 0 && damaged_)   // the first record is damaged: RocksDB must see it
                k = ReadAt(*s_, fh_, &win_[0], kChunk, pos_);
        } else {
            k = ReadAt(*s_, fh_, &win_[0], kChunk, pos_);
        }
        win_.resize(k < 0 ? 0 : (size_t)k);
        return k;
    }

    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_, pos_ = 0, win_off_ = 0;
    bool wal_, damaged_ = false;
    std::string win_;
};

class RandFile : public rocksdb::FSRandomAccessFile {
public:
    RandFile(std::shared_ptr<Session> s, std::string name, uint64_t fh)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh) {}
    ~RandFile() override { CloseHandle(*s_, fh_); }

    IOStatus Read(uint64_t off, size_t n, const IOOptions &, Slice *result, char *scratch,
                  IODebugContext *) const override
    {
        ssize_t k = ReadAt(*s_, fh_, scratch, n, off);
        *result = Slice(scratch, k < 0 ? 0 : (size_t)k);
        return k < 0 ? Err(name_, (int)k) : IOStatus::OK();
    }

private:
    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_;
};

// A table file read whole into memory when it is opened (table files never
// change once written): its block reads then cost no round trip, as the
// default file system's reads of a table in the page cache cost no device
// access. The Session caps the bytes held this way (kHeldMax).
class MemFile : public rocksdb::FSRandomAccessFile {
public:
    MemFile(std::shared_ptr<Session> s, std::string data) : s_(std::move(s)), data_(std::move(data)) {}
    ~MemFile() override { s_->held_bytes -= data_.size(); }

    // Copies into scratch: RocksDB's prefetch buffers take the bytes from
    // there unless the database reads with mmap (allow_mmap_reads).
    IOStatus Read(uint64_t off, size_t n, const IOOptions &, Slice *result, char *scratch,
                  IODebugContext *) const override
    {
        size_t at = (size_t)std::min<uint64_t>(off, data_.size());
        size_t len = std::min(n, data_.size() - at);
        memcpy(scratch, data_.data() + at, len);
        *result = Slice(scratch, len);
        return IOStatus::OK();
    }

private:
    std::shared_ptr<Session> s_;
    std::string data_;
};

// Reads the whole file fh into *out if the Session's budget has room for
// its size. Returns 1 when it did, 0 when over budget, or -errno.
int LoadWhole(Session &s, uint64_t fh, std::string *out)
{
    struct cisc_queue *q;
    struct stat st;
    int r = s.Queue(&q);
    if (r || (r = cisc_fstat(q, fh, &st)))
        return r;
    uint64_t size = (uint64_t)st.st_size;
    if (s.held_bytes.fetch_add(size) + size > kHeldMax) {
        s.held_bytes -= size;
        return 0;
    }
    out->resize((size_t)size);
    ssize_t k = ReadAt(s, fh, &(*out)[0], (size_t)size, 0);
    if (k < 0 || (uint64_t)k != size) {
        s.held_bytes -= size;
        return k < 0 ? (int)k : -EIO;   // shorter than its size: changing under us
    }
    return 1;
}

// A run of buffered bytes RocksDB handed over with their CRC-32C.
struct Handoff {
    size_t at, len;   // in the buffer
    unsigned char crc[4];
};

class WriteFile : public rocksdb::FSWritableFile {
public:
    WriteFile(std::shared_ptr<Session> s, std::string name, uint64_t fh, uint64_t end)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh), end_(end) {}
    ~WriteFile() override { Close(IOOptions(), nullptr); }

    IOStatus Append(const Slice &data, const IOOptions &, IODebugContext *) override
    {
        buf_.append(data.data(), data.size());
        return buf_.size() >= kWriteBuf ? Push(false) : IOStatus::OK();
    }

    // The checksum RocksDB passes is the CRC-32C of data, 4 bytes
    // little-endian (WritableFileWriter); anything else is written
    // unchecked.
    IOStatus Append(const Slice &data, const IOOptions &o,
                    const rocksdb::DataVerificationInfo &vi, IODebugContext *dbg) override
    {
        if (vi.checksum.size() != 4 || data.size() == 0 || data.size() > kChunk)
            return Append(data, o, dbg);
        if (checks_.size() >= kMaxChecks) {
            IOStatus st = Push(false);
            if (!st.ok())
                return st;
        }
        Handoff h = { buf_.size(), data.size(), {} };
        memcpy(h.crc, vi.checksum.data(), 4);
        checks_.push_back(h);
        return Append(data, o, dbg);
    }

    // Once two runs of flushes were each followed by a Sync, a flush goes
    // with its FSYNC in one op and the Sync then finds everything durable;
    // a third flush without a Sync ends the streak (unsynced writes).
    IOStatus Flush(const IOOptions &, IODebugContext *) override
    {
        if (buf_.empty())
            return IOStatus::OK();
        if (unsynced_flushes_ >= 2)
            streak_ = 0;
        unsynced_flushes_++;
        return Push(streak_ >= 2);
    }

    IOStatus Sync(const IOOptions &, IODebugContext *) override
    {
        if (unsynced_flushes_) {
            streak_ = std::min(streak_ + 1, 2);
            unsynced_flushes_ = 0;
        }
        if (buf_.empty() && durable_) {
            s_->syncs_answered++;
            return IOStatus::OK();
        }
        return Push(true);
    }
    IOStatus Fsync(const IOOptions &o, IODebugContext *d) override { return Sync(o, d); }

    IOStatus Truncate(uint64_t size, const IOOptions &o, IODebugContext *d) override
    {
        IOStatus st = Flush(o, d);
        struct cisc_queue *q;
        int r = st.ok() ? s_->Queue(&q) : 0;
        if (st.ok() && (r || (r = cisc_truncate(q, fh_, size)) != 0))
            return Err(name_, r);
        if (st.ok())
            end_ = size;
        return st;
    }

    IOStatus Close(const IOOptions &, IODebugContext *) override
    {
        if (closed_)
            return IOStatus::OK();
        IOStatus st = Push(false);
        CloseHandle(*s_, fh_);
        closed_ = true;
        return st;
    }

    uint64_t GetFileSize(const IOOptions &, IODebugContext *) override
    {
        return end_ + buf_.size();
    }

private:
    IOStatus Push(bool sync);
    int64_t Submit(struct cisc_queue *q, size_t len, bool sync);

    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_, end_;   // end_: where the next buffered byte lands
    bool closed_ = false;
    bool durable_ = false;          // nothing written since the last FSYNC
    int unsynced_flushes_ = 0;      // flushes that wrote since the last Sync
    int streak_ = 0;                // flushes followed by a Sync, up to 2
    std::vector<Handoff> checks_;   // hand-off checks of the buffered bytes, in order
    std::string buf_;
};

// One fused op: [CRC + VERIFY per handed-off run within the first len
// bytes], WRITE of those len bytes at end_, [FSYNC]. Returns the op's
// status; on success the runs it checked are dropped.
int64_t WriteFile::Submit(struct cisc_queue *q, size_t len, bool sync)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh_);
    size_t n = 0;
    for (; n < checks_.size() && checks_[n].at + checks_[n].len <= len; n++) {
        const Handoff &h = checks_[n];
        int c = cisc_vec_crc32c(&v, CISC_IN_BUF(buf_.data() + h.at, h.len), 0);
        cisc_vec_verify(&v, c, CISC_IN_BUF(h.crc, 4));
    }
    if (len)
        cisc_vec_write(&v, f, end_, CISC_IN_BUF(buf_.data(), len));
    if (sync)
        cisc_vec_fsync(&v, f, 0);
    int64_t st = cisc_vec_submit(&v);
    cisc_vec_free(&v);
    if (st != 0)
        return st;
    s_->write_ops++;
    s_->sync_ops += sync;
    s_->handoff_checks += n;
    checks_.erase(checks_.begin(), checks_.begin() + (long)n);
    for (Handoff &h : checks_)
        h.at -= len;
    return 0;
}

// Sends the buffered bytes (in chunks the arena holds; the last one
// carries the FSYNC when sync) and empties the buffer.
IOStatus WriteFile::Push(bool sync)
{
    if (closed_)
        return IOStatus::IOError(name_, "write after close");
    if (buf_.empty() && !sync)
        return IOStatus::OK();
    struct cisc_queue *q;
    int r = s_->Queue(&q);
    if (r)
        return Err(name_, r);
    do {
        size_t len = std::min(buf_.size(), kChunk);
        for (const Handoff &h : checks_)   // never split a checked run
            if (h.at < len && h.at + h.len > len)
                len = h.at ? h.at : std::min(buf_.size(), h.len);
        bool last = len == buf_.size();
        int64_t st = Submit(q, len, sync && last);
        if (st < 0)
            return Err(name_, (int)st);
        end_ += len;
        buf_.erase(0, len);
        durable_ = sync || (durable_ && len == 0);
    } while (!buf_.empty());
    return IOStatus::OK();
}

}  // namespace

bool IsWalName(const std::string &fname)
{
    return fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".log") == 0;
}

IOStatus NewCiscSequential(const std::shared_ptr<Session> &s, const std::string &fname,
                           const std::string &dpath,
                           std::unique_ptr<rocksdb::FSSequentialFile> *out)
{
    uint64_t fh;
    int r = OpenHandle(*s, dpath, O_RDONLY, &fh);
    if (r)
        return Err(fname, r);
    out->reset(new SeqFile(s, fname, fh, IsWalName(fname)));
    return IOStatus::OK();
}

IOStatus NewCiscRandom(const std::shared_ptr<Session> &s, const std::string &fname,
                       const std::string &dpath, std::unique_ptr<rocksdb::FSRandomAccessFile> *out)
{
    uint64_t fh;
    int r = OpenHandle(*s, dpath, O_RDONLY, &fh);
    if (r)
        return Err(fname, r);
    std::string data;
    bool table = fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".sst") == 0;
    r = table ? LoadWhole(*s, fh, &data) : 0;
    if (r == 0) {
        out->reset(new RandFile(s, fname, fh));
        return IOStatus::OK();
    }
    CloseHandle(*s, fh);
    if (r < 0)
        return Err(fname, r);
    out->reset(new MemFile(s, std::move(data)));
    return IOStatus::OK();
}

IOStatus NewCiscWritable(const std::shared_ptr<Session> &s, const std::string &fname,
                         const std::string &dpath, bool append,
                         std::unique_ptr<rocksdb::FSWritableFile> *out)
{
    uint64_t fh;
    int r = OpenHandle(*s, dpath, O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC), &fh);
    struct stat st = {};
    struct cisc_queue *q;
    if (r == 0 && append && (r = s->Queue(&q)) == 0 && (r = cisc_fstat(q, fh, &st)) != 0)
        CloseHandle(*s, fh);
    if (r)
        return Err(fname, r);
    out->reset(new WriteFile(s, fname, fh, (uint64_t)st.st_size));
    return IOStatus::OK();
}

}  // namespace cisc::rdb
