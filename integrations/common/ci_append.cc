// integrations/common/ci_append.cc - a writable file's buffered appends,
// sent to the device as fused ops: [the store's checks], WRITE at the
// file's end, [FSYNC]; plain WRITEs as write-behind ops on the file's own
// queue pair (ci_common.h, invariants 4 to 6).
#include "integrations/common/ci_common.h"

#include <cisc/fused.h>

#include <algorithm>

namespace cisc::integ {

struct Appender::Behind {
    struct cisc_vec v;
    size_t len;
};

void Session::Track(Appender *a)
{
    std::lock_guard<std::mutex> g(live_mu_);
    live_.push_back(a);
}

void Session::Untrack(Appender *a)
{
    std::lock_guard<std::mutex> g(live_mu_);
    live_.erase(std::remove(live_.begin(), live_.end(), a), live_.end());
}

void Session::Settle()
{
    if (behind_.load(std::memory_order_acquire) == 0)
        return;
    std::lock_guard<std::mutex> g(live_mu_);   // the Appenders stay while it is held
    for (Appender *a : live_)
        a->Settle();
}

Appender::Appender(std::shared_ptr<Session> s, uint64_t fh, uint64_t end,
                   std::unique_ptr<WriteChecks> checks)
    : s_(std::move(s)), checks_(std::move(checks)), fh_(fh), end_(end)
{
    s_->Track(this);
}

Appender::~Appender()
{
    Close();
    s_->Untrack(this);
}

void Appender::Settle()
{
    std::lock_guard<std::mutex> g(mu_);
    Reap(true);
}

int Appender::Reap(bool all)
{
    while (!behind_.empty()) {
        Behind &b = *behind_.front();
        int64_t st = all ? cisc_vec_wait(&b.v) : cisc_vec_poll(&b.v);
        if (st == -EAGAIN && !all)
            break;
        if (st == 0) {
            s_->write_ops++;
        } else if (!behind_err_) {
            behind_err_ = st < 0 ? (int)st : -EIO;
        }
        cisc_vec_free(&b.v);
        behind_.pop_front();
        s_->behind_.fetch_sub(1, std::memory_order_release);
    }
    return behind_err_;
}

// The file's own queue pair for write-behind ops, made on first use;
// NULL when it cannot be had (then every op is waited for).
struct cisc_queue *Appender::BehindQueue()
{
    if (!bq_ && !bq_err_) {
        struct cisc_queue_params p = {};
        p.arena_size = kBehindArena;
        bq_err_ = cisc_queue_create_params(s_->raw(), &p, &bq_);
    }
    return bq_;
}

// Builds the op for the first len buffered bytes (no FSYNC) on the file's
// queue and submits it; one that carries checks is waited for (invariant
// 4). Returns 0 (submitted, or done), 1 when it cannot go this way (the
// caller sends it waiting), or -errno (the op's, or the file's earlier
// write-behind error).
int64_t Appender::SendBehind(size_t len)
{
    struct cisc_queue *q = len <= kBehindArena / 4 ? BehindQueue() : nullptr;
    if (!q)
        return 1;
    if (int e = Reap(behind_.size() >= kBehindMax))   // room for one more; errors first
        return e;
    auto b = std::make_unique<Behind>();
    b->len = len;
    if (cisc_vec_init(&b->v, q))
        return 1;   // the arena is full of ops in flight
    int f = cisc_vec_fh(&b->v, fh_);
    unsigned plain = b->v.n;
    int64_t st = checks_ ? checks_->Add(&b->v, buf_.data(), len, end_) : 0;
    bool waited = b->v.n > plain;   // checks ride along: report them on this call
    if (st == 0)
        cisc_vec_write(&b->v, f, end_, CISC_IN_BUF(buf_.data(), len));
    if (st == 0)
        st = b->v.err ? b->v.err : cisc_vec_submit_async(&b->v);
    if (st == 0 && waited) {
        int e = Reap(true);
        int64_t own = cisc_vec_wait(&b->v);
        st = e ? e : own;
    }
    if (checks_)
        checks_->Done(st == 0, len);
    if (st != 0 || waited) {
        cisc_vec_free(&b->v);
        if (st == 0)
            s_->write_ops++;
        return st == -ENOMEM ? 1 : st;   // staging found no room: send it waiting
    }
    s_->behind_.fetch_add(1, std::memory_order_release);
    s_->behind_ops++;
    behind_.push_back(std::move(b));
    return 0;
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
    if (r == 0)
        r = Reap(true);
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
    int b = Reap(true);
    if (bq_)
        cisc_queue_destroy(bq_);
    bq_ = nullptr;
    CloseHandle(*s_, fh_);
    closed_ = true;
    return r ? r : b;
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
// the buffer: plain chunks as write-behind ops, the others waited for, an
// FSYNC only after every write-behind op completed (invariants 4, 5).
int Appender::Push(bool sync)
{
    if (closed_)
        return -EBADF;
    if (int e = Reap(false))
        return e;
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
        bool last = len == buf_.size(), fsync = sync && last;
        int64_t st = fsync || !len ? 1 : SendBehind(len);
        if (st == 1 && fsync && (st = Reap(true)) == 0)   // the FSYNC covers them
            st = 1;
        if (st == 1)
            st = Submit(q, len, fsync);
        if (st < 0)
            return (int)st;
        end_ += len;
        buf_.erase(0, len);
        durable_ = (sync && last) || (durable_ && len == 0);
    } while (!buf_.empty());
    return 0;
}

}  // namespace cisc::integ
