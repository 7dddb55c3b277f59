// integrations/rocksdb/cr_files.cc - RocksDB's kinds of file over the
// shared libcisc pieces (ci_common.h): sequential reads (read ahead in
// large fused ops; WALs checked in the device), random reads, tables held
// in memory, and the writable file whose buffered appends reach the device
// as fused ops with RocksDB's hand-off checksums checked next to the data
// (cisc_rocksdb.h, invariants 3 to 6).
#include "integrations/rocksdb/cr_int.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace cisc::rdb {
namespace {

using integ::kChunk;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

constexpr size_t kMaxChecks = 30;   // hand-off checks per op: 2 steps each of 64

IOStatus St(const std::string &name, int r)
{
    return r ? Err(name, r) : IOStatus::OK();
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
    ~SeqFile() override { integ::CloseHandle(*s_, fh_); }

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
                k = integ::ReadAt(*s_, fh_, &win_[0], kChunk, pos_);
        } else {
            k = integ::ReadAt(*s_, fh_, &win_[0], kChunk, pos_);
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
    ~RandFile() override { integ::CloseHandle(*s_, fh_); }

    IOStatus Read(uint64_t off, size_t n, const IOOptions &, Slice *result, char *scratch,
                  IODebugContext *) const override
    {
        ssize_t k = integ::ReadAt(*s_, fh_, scratch, n, off);
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
// access.
class MemFile : public rocksdb::FSRandomAccessFile {
public:
    explicit MemFile(std::unique_ptr<integ::Held> held) : held_(std::move(held)) {}

    // Copies into scratch: RocksDB's prefetch buffers take the bytes from
    // there unless the database reads with mmap (allow_mmap_reads).
    IOStatus Read(uint64_t off, size_t n, const IOOptions &, Slice *result, char *scratch,
                  IODebugContext *) const override
    {
        const char *p;
        size_t len = held_->At(off, n, &p);
        memcpy(scratch, p, len);
        *result = Slice(scratch, len);
        return IOStatus::OK();
    }

private:
    std::unique_ptr<integ::Held> held_;
};

// RocksDB's checksum hand-off: each run of buffered bytes it handed over
// with their CRC-32C is checked by the device in the op that writes it.
class HandoffChecks : public integ::WriteChecks {
public:
    explicit HandoffChecks(std::atomic<uint64_t> &count) : count_(count) {}

    // meta: the 4 bytes of the CRC-32C, little-endian.
    int Note(size_t at, size_t len, const void *meta) override
    {
        if (runs_.size() >= kMaxChecks)
            return 1;
        Run h = { at, len, {} };
        memcpy(h.crc, meta, 4);
        runs_.push_back(h);
        return 0;
    }

    size_t Cut(size_t len, size_t buffered) const override
    {
        for (const Run &h : runs_)   // never split a checked run
            if (h.at < len && h.at + h.len > len)
                len = h.at ? h.at : std::min(buffered, h.len);
        return len;
    }

    int Add(struct cisc_vec *v, const char *buf, size_t len, uint64_t) override
    {
        for (n_ = 0; n_ < runs_.size() && runs_[n_].at + runs_[n_].len <= len; n_++) {
            const Run &h = runs_[n_];
            int c = cisc_vec_crc32c(v, CISC_IN_BUF(buf + h.at, h.len), 0);
            cisc_vec_verify(v, c, CISC_IN_BUF(h.crc, 4));
        }
        return 0;
    }

    // The runs an op checked leave with its bytes.
    void Done(bool ok, size_t len) override
    {
        if (!ok)
            return;
        count_ += n_;
        runs_.erase(runs_.begin(), runs_.begin() + (long)n_);
        for (Run &h : runs_)
            h.at -= len;
    }

private:
    struct Run {
        size_t at, len;   // in the buffer
        unsigned char crc[4];
    };
    std::atomic<uint64_t> &count_;
    std::vector<Run> runs_;   // of the buffered bytes, in order
    size_t n_ = 0;            // runs the op being built checks
};

class WriteFile : public rocksdb::FSWritableFile {
public:
    WriteFile(std::shared_ptr<Session> s, std::string name, uint64_t fh, uint64_t end)
        : name_(std::move(name)),
          out_(s, fh, end, std::make_unique<HandoffChecks>(s->handoff_checks)) {}

    IOStatus Append(const Slice &data, const IOOptions &, IODebugContext *) override
    {
        return St(name_, out_.Append(data.data(), data.size()));
    }

    // The checksum RocksDB passes is the CRC-32C of data, 4 bytes
    // little-endian (WritableFileWriter); anything else is written
    // unchecked.
    IOStatus Append(const Slice &data, const IOOptions &, const rocksdb::DataVerificationInfo &vi,
                    IODebugContext *) override
    {
        bool check = vi.checksum.size() == 4 && data.size() > 0 && data.size() <= kChunk;
        return St(name_, out_.Append(data.data(), data.size(), check ? vi.checksum.data() : nullptr));
    }

    IOStatus Flush(const IOOptions &, IODebugContext *) override { return St(name_, out_.Flush()); }
    IOStatus Sync(const IOOptions &, IODebugContext *) override { return St(name_, out_.Sync()); }
    IOStatus Fsync(const IOOptions &o, IODebugContext *d) override { return Sync(o, d); }

    // Sync may run beside appends from other threads (DB::SyncWAL,
    // FlushWAL(true)): the Appender orders them and syncs all appended.
    bool IsSyncThreadSafe() const override { return true; }

    IOStatus Truncate(uint64_t size, const IOOptions &, IODebugContext *) override
    {
        return St(name_, out_.Truncate(size));
    }

    IOStatus Close(const IOOptions &, IODebugContext *) override { return St(name_, out_.Close()); }

    uint64_t GetFileSize(const IOOptions &, IODebugContext *) override { return out_.Size(); }

private:
    std::string name_;
    integ::Appender out_;
};

}  // namespace

IOStatus Err(const std::string &fname, int err)
{
    const char *why = cisc_strerror(err);
    if (err == -ENOENT)
        return IOStatus::PathNotFound(fname, why);
    if (err == -EBADMSG)
        return IOStatus::Corruption(fname, why);
    if (err == -ENOSPC)
        return IOStatus::NoSpace(fname, why);
    return IOStatus::IOError(fname, why);
}

bool IsWalName(const std::string &fname)
{
    return fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".log") == 0;
}

IOStatus NewCiscSequential(const std::shared_ptr<Session> &s, const std::string &fname,
                           const std::string &dpath,
                           std::unique_ptr<rocksdb::FSSequentialFile> *out)
{
    uint64_t fh;
    int r = integ::OpenHandle(*s, dpath, O_RDONLY, &fh);
    if (r)
        return Err(fname, r);
    out->reset(new SeqFile(s, fname, fh, IsWalName(fname)));
    return IOStatus::OK();
}

IOStatus NewCiscRandom(const std::shared_ptr<Session> &s, const std::string &fname,
                       const std::string &dpath, std::unique_ptr<rocksdb::FSRandomAccessFile> *out)
{
    uint64_t fh;
    std::unique_ptr<integ::Held> held;
    bool table = fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".sst") == 0;
    int r = integ::OpenRandom(s, dpath, table, &fh, &held);
    if (r < 0)
        return Err(fname, r);
    if (r > 0)
        out->reset(new MemFile(std::move(held)));
    else
        out->reset(new RandFile(s, fname, fh));
    return IOStatus::OK();
}

IOStatus NewCiscWritable(const std::shared_ptr<Session> &s, const std::string &fname,
                         const std::string &dpath, bool append,
                         std::unique_ptr<rocksdb::FSWritableFile> *out)
{
    uint64_t fh, end;
    int r = integ::OpenWritable(*s, dpath, append, &fh, &end);
    if (r)
        return Err(fname, r);
    out->reset(new WriteFile(s, fname, fh, end));
    return IOStatus::OK();
}

}  // namespace cisc::rdb
