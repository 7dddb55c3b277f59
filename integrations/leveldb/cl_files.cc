// integrations/leveldb/cl_files.cc - LevelDB's three kinds of file over
// the shared libcisc pieces (ci_common.h): sequential and random reads,
// tables held in memory, and the writable file whose buffered appends
// reach the device as fused ops with each log record checked next to its
// data (cisc_leveldb.h, invariants 3 to 5).
#include "integrations/leveldb/cl_int.h"

#include <fcntl.h>

namespace cisc::ldb {
namespace {

constexpr unsigned kMaxChecked = 30;   // records checked per op: 2 steps each of 64

class SeqFile : public leveldb::SequentialFile {
public:
    SeqFile(std::shared_ptr<Session> s, std::string name, uint64_t fh)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh) {}
    ~SeqFile() override { integ::CloseHandle(*s_, fh_); }

    leveldb::Status Read(size_t n, leveldb::Slice *result, char *scratch) override
    {
        ssize_t k = integ::ReadAt(*s_, fh_, scratch, n, pos_);
        if (k < 0)
            return Err(name_, (int)k);
        pos_ += (uint64_t)k;
        *result = leveldb::Slice(scratch, (size_t)k);
        return leveldb::Status::OK();
    }

    leveldb::Status Skip(uint64_t n) override
    {
        pos_ += n;   // like lseek: past the end reads then return nothing
        return leveldb::Status::OK();
    }

private:
    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_, pos_ = 0;
};

class RandFile : public leveldb::RandomAccessFile {
public:
    RandFile(std::shared_ptr<Session> s, std::string name, uint64_t fh)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh) {}
    ~RandFile() override { integ::CloseHandle(*s_, fh_); }

    leveldb::Status Read(uint64_t off, size_t n, leveldb::Slice *result,
                         char *scratch) const override
    {
        ssize_t k = integ::ReadAt(*s_, fh_, scratch, n, off);
        *result = leveldb::Slice(scratch, k < 0 ? 0 : (size_t)k);
        return k < 0 ? Err(name_, (int)k) : leveldb::Status::OK();
    }

private:
    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_;
};

// A table file read whole into memory when it is opened (LevelDB opens
// RandomAccessFiles only on tables, which never change once written): its
// reads then cost no round trip, as the default Env's mmap of the file
// costs no system call.
class MemFile : public leveldb::RandomAccessFile {
public:
    explicit MemFile(std::unique_ptr<integ::Held> held) : held_(std::move(held)) {}

    leveldb::Status Read(uint64_t off, size_t n, leveldb::Slice *result,
                         char *) const override
    {
        const char *p;
        size_t len = held_->At(off, n, &p);
        *result = leveldb::Slice(p, len);
        return leveldb::Status::OK();
    }

private:
    std::unique_ptr<integ::Held> held_;
};

// The device checks each whole log record an op carries against the
// record's own checksum (cl_logcheck.cc).
class LogChecks : public integ::WriteChecks {
public:
    LogChecks(std::atomic<uint64_t> &count, uint64_t end) : count_(count) { cur_.next = end; }

    int Note(size_t, size_t, const void *) override { return 0; }
    size_t Cut(size_t len, size_t) const override { return len; }

    int Add(struct cisc_vec *v, const char *buf, size_t len, uint64_t off) override
    {
        before_ = cur_;   // a failed op wrote nothing: check its records again
        checked_ = cur_.lost ? 0 : LogCheckAdd(v, &cur_, buf, len, off, kMaxChecked);
        return checked_ < 0 ? checked_ : 0;
    }

    void Done(bool ok, size_t) override
    {
        if (!ok)
            cur_ = before_;
        else
            count_ += (uint64_t)checked_;
    }

private:
    std::atomic<uint64_t> &count_;
    LogCursor cur_, before_;
    int checked_ = 0;
};

class WriteFile : public leveldb::WritableFile {
public:
    WriteFile(std::shared_ptr<Session> s, std::string name, uint64_t fh, uint64_t end)
        : name_(std::move(name)),
          out_(s, fh, end, IsLogName(name_) ? std::make_unique<LogChecks>(s->verified_records, end)
                                            : nullptr) {}

    leveldb::Status Append(const leveldb::Slice &data) override
    {
        return St(out_.Append(data.data(), data.size()));
    }
    leveldb::Status Flush() override { return St(out_.Flush()); }
    leveldb::Status Sync() override { return St(out_.Sync()); }
    leveldb::Status Close() override { return St(out_.Close()); }

private:
    leveldb::Status St(int r) const { return r ? Err(name_, r) : leveldb::Status::OK(); }

    std::string name_;
    integ::Appender out_;
};

}  // namespace

leveldb::Status Err(const std::string &fname, int err)
{
    const char *why = cisc_strerror(err);
    if (err == -ENOENT)
        return leveldb::Status::NotFound(fname, why);
    if (err == -EBADMSG)
        return leveldb::Status::Corruption(fname, why);
    return leveldb::Status::IOError(fname, why);
}

leveldb::Status NewCiscSequential(const std::shared_ptr<Session> &s, const std::string &fname,
                                  const std::string &dpath, leveldb::SequentialFile **out)
{
    uint64_t fh;
    int r = integ::OpenHandle(*s, dpath, O_RDONLY, &fh);
    if (r)
        return Err(fname, r);
    *out = new SeqFile(s, fname, fh);
    return leveldb::Status::OK();
}

leveldb::Status NewCiscRandom(const std::shared_ptr<Session> &s, const std::string &fname,
                              const std::string &dpath, leveldb::RandomAccessFile **out)
{
    uint64_t fh;
    std::unique_ptr<integ::Held> held;
    int r = integ::OpenRandom(s, dpath, true, &fh, &held);
    if (r < 0)
        return Err(fname, r);
    if (r > 0)
        *out = new MemFile(std::move(held));
    else
        *out = new RandFile(s, fname, fh);
    return leveldb::Status::OK();
}

leveldb::Status NewCiscWritable(const std::shared_ptr<Session> &s, const std::string &fname,
                                const std::string &dpath, bool append,
                                leveldb::WritableFile **out)
{
    uint64_t fh, end;
    int r = integ::OpenWritable(*s, dpath, append, &fh, &end);
    if (r)
        return Err(fname, r);
    *out = new WriteFile(s, fname, fh, end);
    return leveldb::Status::OK();
}

}  // namespace cisc::ldb
