// integrations/common/ci_append.cc - a writable file's buffered appends,
// sent to the device as fused ops: [the store's checks], WRITE at the
// file's end, [FSYNC] (ci_common.h, invariants 4 to 6).
#include "integrations/common/ci_common.h"

#include <algorithm>

namespace cisc::integ {

Appender::Appender(std::shared_ptr<Session> s, uint64_t fh, uint64_t end,
                   std::unique_ptr<WriteChecks> checks)
    : s_(std::move(s)), checks_(std::move(checks)), fh_(fh), end_(end)
{
}

Appender::~Appender()
{
    Close();
}

int Appender::Append(const char *data, size_t len, const void *meta)
{
    std::lock_guard<std::mutex> g(mu_);
    if (checks_ && meta && checks_->Note(buf_.size(), len, meta) == 1) {
        int r = Push(false);   // too many checks pending: send them first
        if (r)
            return r;
        checks_->Note(buf_.size(), len, meta);
    }
    buf_.append(data, len);
    return buf_.size() >= kWriteBuf ? Push(false) : 0;
}

// Stores flush each log record, then sync it (LevelDB's AddRecord, one
// flush per fragment where a record crosses a 32 KiB block; RocksDB's
// Append, Flush, Sync): invariant 5.
int Appender::Flush()
{
    std::lock_guard<std::mutex> g(mu_);
    return FlushLocked();
}

int Appender::FlushLocked()
{
    if (buf_.empty())
        return 0;
    if (s_->hold_flushes) {
        s_->flushes_held++;
        return 0;
    }
    if (unsynced_flushes_ >= 2)
        streak_ = 0;
    unsynced_flushes_++;
    return Push(streak_ >= 2);
}

int Appender::Sync()
{
    std::lock_guard<std::mutex> g(mu_);
    if (unsynced_flushes_) {
        streak_ = std::min(streak_ + 1, 2);
        unsynced_flushes_ = 0;
    }
    if (buf_.empty() && durable_) {
        s_->syncs_answered++;
        return 0;
    }
    return Push(true);
}

int Appender::Truncate(uint64_t size)
{
    std::lock_guard<std::mutex> g(mu_);
    int r = Push(false);
    struct cisc_queue *q;
    if (r == 0 && (r = s_->Queue(&q)) == 0 && (r = cisc_truncate(q, fh_, size)) == 0)
        end_ = size;
    return r;
}

int Appender::Close()
{
    std::lock_guard<std::mutex> g(mu_);
    if (closed_)
        return 0;
    int r = Push(false);
    CloseHandle(*s_, fh_);
    closed_ = true;
    return r;
}

uint64_t Appender::Size()
{
    std::lock_guard<std::mutex> g(mu_);
    return end_ + buf_.size();
}

// One fused op: [checks of the first len buffered bytes], WRITE of them
// at end_, [FSYNC]. Returns the op's status.
int64_t Appender::Submit(struct cisc_queue *q, size_t len, bool sync)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_fh(&v, fh_);
    int checked = checks_ ? checks_->Add(&v, buf_.data(), len, end_) : 0;
    if (len)
        cisc_vec_write(&v, f, end_, CISC_IN_BUF(buf_.data(), len));
    if (sync)
        cisc_vec_fsync(&v, f, 0);
    int64_t st = checked < 0 ? checked : cisc_vec_submit(&v);
    cisc_vec_free(&v);
    if (checks_)
        checks_->Done(st == 0, len);
    if (st == 0) {
        s_->write_ops++;
        s_->sync_ops += sync;
    }
    return st;
}

// Sends the buffered bytes in chunks the arena holds (never splitting a
// checked run; the last chunk carries the FSYNC when sync) and empties
// the buffer.
int Appender::Push(bool sync)
{
    if (closed_)
        return -EBADF;
    if (buf_.empty() && !sync)
        return 0;
    struct cisc_queue *q;
    int r = s_->Queue(&q);
    if (r)
        return r;
    do {
        size_t len = std::min(buf_.size(), kChunk);
        if (checks_)
            len = checks_->Cut(len, buf_.size());
        bool last = len == buf_.size();
        int64_t st = Submit(q, len, sync && last);
        if (st < 0)
            return (int)st;
        end_ += len;
        buf_.erase(0, len);
        durable_ = (sync && last) || (durable_ && len == 0);
    } while (!buf_.empty());
    return 0;
}

}  // namespace cisc::integ
