// integrations/leveldb/cl_files.cc - LevelDB's three kinds of file over
// libcisc handles: sequential and random reads with cisc_pread, and the
// writable file whose buffered appends reach the device as fused ops
// (cisc_leveldb.h, invariants 3 and 4).
#include "integrations/leveldb/cl_int.h"

#include <fcntl.h>

#include <algorithm>

namespace cisc::ldb {
namespace {

constexpr size_t kWriteBuf = 64 << 10;   // appends gathered before a write
constexpr size_t kChunk = 1 << 20;       // most bytes one command moves (fits the arena)
constexpr unsigned kMaxChecked = 30;
constexpr uint64_t kHeldMax = 256ull << 20;   // table bytes held in memory per Env     // records checked per op: 2 steps each of 64

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

// Reads up to n bytes at off into scratch, in chunks the arena holds;
// stops at end of file. Returns the bytes read or -errno.
ssize_t ReadAt(Session &s, uint64_t fh, char *scratch, size_t n, uint64_t off)
{
    struct cisc_queue *q;
    int r = s.Queue(&q);
    if (r)
        return r;
    size_t got = 0;
    while (got < n) {
        ssize_t k = cisc_pread(q, fh, scratch + got, std::min(n - got, kChunk), off + got);
        if (k < 0)
            return k;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

class SeqFile : public leveldb::SequentialFile {
public:
    SeqFile(std::shared_ptr<Session> s, std::string name, uint64_t fh)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh) {}
    ~SeqFile() override { CloseHandle(*s_, fh_); }

    leveldb::Status Read(size_t n, leveldb::Slice *result, char *scratch) override
    {
        ssize_t k = ReadAt(*s_, fh_, scratch, n, pos_);
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
    ~RandFile() override { CloseHandle(*s_, fh_); }

    leveldb::Status Read(uint64_t off, size_t n, leveldb::Slice *result,
                         char *scratch) const override
    {
        ssize_t k = ReadAt(*s_, fh_, scratch, n, off);
        if (k < 0) {
            *result = leveldb::Slice(scratch, 0);
            return Err(name_, (int)k);
        }
        *result = leveldb::Slice(scratch, (size_t)k);
        return leveldb::Status::OK();
    }

private:
    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_;
};

// A table file read whole into memory when it is opened (LevelDB opens
// RandomAccessFiles only on tables, which never change once written): its
// reads then cost no round trip, as the default Env's mmap of the file
// costs no system call. The Session caps the bytes held this way.
class MemFile : public leveldb::RandomAccessFile {
public:
    MemFile(std::shared_ptr<Session> s, std::string data) : s_(std::move(s)), data_(std::move(data)) {}
    ~MemFile() override { s_->held_bytes -= data_.size(); }

    leveldb::Status Read(uint64_t off, size_t n, leveldb::Slice *result,
                         char *scratch) const override
    {
        size_t at = (size_t)std::min<uint64_t>(off, data_.size());
        *result = leveldb::Slice(data_.data() + at, std::min(n, data_.size() - at));
        return leveldb::Status::OK();
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
        return k < 0 ? (int)k : -EIO;   // a table shorter than its size: changing under us
    }
    return 1;
}

class WriteFile : public leveldb::WritableFile {
public:
    WriteFile(std::shared_ptr<Session> s, std::string name, uint64_t fh, uint64_t end, bool log)
        : s_(std::move(s)), name_(std::move(name)), fh_(fh), end_(end), log_(log)
    {
        cur_.next = end;
    }
    ~WriteFile() override { Close(); }

    leveldb::Status Append(const leveldb::Slice &data) override
    {
        buf_.append(data.data(), data.size());
        return buf_.size() >= kWriteBuf ? Push(false) : leveldb::Status::OK();
    }

    // Once two runs of flushes were each followed by a Sync, a flush goes
    // with its FSYNC in one op (LevelDB's synced writes: AddRecord flushes
    // the record - one flush per fragment where it crosses a 32 KiB block -
    // then the DB syncs), and the Sync then finds everything durable. A
    // third flush without a Sync ends the streak (unsynced writes).
    leveldb::Status Flush() override
    {
        if (buf_.empty())
            return leveldb::Status::OK();
        if (unsynced_flushes_ >= 2)
            streak_ = 0;
        unsynced_flushes_++;
        return Push(streak_ >= 2);
    }

    leveldb::Status Sync() override
    {
        if (unsynced_flushes_) {
            streak_ = std::min(streak_ + 1, 2);
            unsynced_flushes_ = 0;
        }
        if (buf_.empty() && durable_) {
            s_->syncs_answered++;
            return leveldb::Status::OK();
        }
        return Push(true);
    }

    leveldb::Status Close() override
    {
        if (closed_)
            return leveldb::Status::OK();
        leveldb::Status st = Push(false);
        CloseHandle(*s_, fh_);
        closed_ = true;
        return st;
    }

private:
    leveldb::Status Push(bool sync);
    int64_t Submit(struct cisc_queue *q, size_t len, bool sync);

    std::shared_ptr<Session> s_;
    std::string name_;
    uint64_t fh_, end_;   // end_: where the next buffered byte lands
    bool log_, closed_ = false;
    bool durable_ = false;          // nothing written since the last FSYNC
    int unsynced_flushes_ = 0;      // flushes that wrote since the last Sync
    int streak_ = 0;                // flushes followed by a Sync, up to 2
    LogCursor cur_;
    std::string buf_;
};

// One fused op: [CRC + VERIFY per log record], WRITE of buf_'s first len
// bytes at end_, [FSYNC]. Returns the op's status.
int64_t WriteFile::Submit(struct cisc_queue *q, size_t len, bool sync)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh_);
    int checked = 0;
    LogCursor before = cur_;   // a failed op wrote nothing: check its records again
    if (log_ && !cur_.lost)
        checked = LogCheckAdd(&v, &cur_, buf_.data(), len, end_, kMaxChecked);
    if (len)
        cisc_vec_write(&v, f, end_, CISC_IN_BUF(buf_.data(), len));
    if (sync)
        cisc_vec_fsync(&v, f, 0);
    int64_t st = checked < 0 ? checked : cisc_vec_submit(&v);
    cisc_vec_free(&v);
    if (st != 0)
        cur_ = before;
    if (st == 0) {
        s_->write_ops++;
        s_->sync_ops += sync;
        s_->verified_records += (uint64_t)checked;
    }
    return st;
}

// Sends the buffered bytes (in chunks the arena holds; the last one
// carries the FSYNC when sync) and empties the buffer.
leveldb::Status WriteFile::Push(bool sync)
{
    if (closed_)
        return leveldb::Status::IOError(name_, "write after close");
    if (buf_.empty() && !sync)
        return leveldb::Status::OK();
    struct cisc_queue *q;
    int r = s_->Queue(&q);
    if (r)
        return Err(name_, r);
    do {
        size_t len = std::min(buf_.size(), kChunk);
        bool last = len == buf_.size();
        int64_t st = Submit(q, len, sync && last);
        if (st < 0)
            return Err(name_, (int)st);
        end_ += len;
        buf_.erase(0, len);
        durable_ = sync || (durable_ && len == 0);
    } while (!buf_.empty());
    return leveldb::Status::OK();
}

}  // namespace

leveldb::Status NewCiscSequential(const std::shared_ptr<Session> &s, const std::string &fname,
                                  const std::string &dpath, leveldb::SequentialFile **out)
{
    uint64_t fh;
    int r = OpenHandle(*s, dpath, O_RDONLY, &fh);
    if (r)
        return Err(fname, r);
    *out = new SeqFile(s, fname, fh);
    return leveldb::Status::OK();
}

leveldb::Status NewCiscRandom(const std::shared_ptr<Session> &s, const std::string &fname,
                              const std::string &dpath, leveldb::RandomAccessFile **out)
{
    uint64_t fh;
    int r = OpenHandle(*s, dpath, O_RDONLY, &fh);
    if (r)
        return Err(fname, r);
    std::string data;
    r = LoadWhole(*s, fh, &data);
    if (r == 0) {
        *out = new RandFile(s, fname, fh);
        return leveldb::Status::OK();
    }
    CloseHandle(*s, fh);
    if (r < 0)
        return Err(fname, r);
    *out = new MemFile(s, std::move(data));
    return leveldb::Status::OK();
}

leveldb::Status NewCiscWritable(const std::shared_ptr<Session> &s, const std::string &fname,
                                const std::string &dpath, bool append,
                                leveldb::WritableFile **out)
{
    uint64_t fh;
    int r = OpenHandle(*s, dpath, O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC), &fh);
    struct stat st = {};
    struct cisc_queue *q;
    if (r == 0 && append && (r = s->Queue(&q)) == 0 && (r = cisc_fstat(q, fh, &st)) != 0)
        CloseHandle(*s, fh);
    if (r)
        return Err(fname, r);
    *out = new WriteFile(s, fname, fh, (uint64_t)st.st_size, IsLogName(fname));
    return leveldb::Status::OK();
}

}  // namespace cisc::ldb
