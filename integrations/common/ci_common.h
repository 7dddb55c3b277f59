// integrations/common/ci_common.h - what the LevelDB Env (integrations/
// leveldb) and the RocksDB FileSystem (integrations/rocksdb) share: a
// libcisc session with a queue pair per thread, the mapping of a store's
// file names onto the device's paths, the name-space calls, the reads, the
// table files held in memory, and the writable file's buffered appends
// that reach the device as fused ops. Everything here speaks libcisc and
// returns 0, a count or -errno; each store turns that into its own Status
// and its own file classes (ci_session.cc, ci_files.cc, ci_append.cc).
//
// Invariants:
//  1. A Session outlives every Mount and file made from it (they hold a
//     shared_ptr).
//  2. A thread's queue of a session is used only by that thread; a thread
//     that exits destroys its queues of the sessions still alive, and a
//     session that closes takes every queue of its own with it.
//  3. Only names under the mount point (no ".." component) map to device
//     paths; a store hands every other name to its default Env/FileSystem.
//  4. An Appender's bytes reach the device in file order, each op a WRITE
//     at the file's end (plus the store's check steps over exactly the
//     bytes written, plus FSYNC when asked). An op with checks or an
//     FSYNC is waited for: its bytes leave the buffer only once it
//     succeeded, so a failed op is retried by the next call with the same
//     bytes and checks, and a check that fails is reported by the call
//     that sent it. A plain WRITE without FSYNC is submitted and not
//     waited for (write-behind, on the Appender's own queue pair, at most
//     kBehindMax at once): its bytes leave the buffer when submitted
//     (the op carries a copy), and its failure is reported by the next
//     call on the file and by every call after it (the file failed: a
//     later write may have landed past the failed one).
//  5. A Flush submits the buffered bytes before it returns, so what a
//     store flushed survives the process dying (the device runs every
//     command a client published, even one that died right after:
//     device/queue/queue.h); once a file's flushes were twice followed by
//     a Sync, each flush carries the FSYNC and the Sync returns at once (a
//     synced write is one round trip); a third flush without a Sync ends
//     it. An FSYNC is only ever added, never left out, and is submitted
//     only after every write-behind op of the file completed, so it covers
//     them. Reads and the name-space calls of the session (ReadAt,
//     OpenRandom, Mount's calls) first wait for the session's write-behind
//     ops (Session::Settle), so the store reads what it flushed. With the
//     session's hold_flushes on, a Flush sends nothing: the bytes go with
//     the next Sync (one op, WRITE + FSYNC), a full buffer or Close, and a
//     process that dies loses what it flushed since (RocksDB's
//     manual_wal_flush, chosen by the file system's user).
//  6. An Appender's calls may come from several threads at once (RocksDB's
//     SyncWAL beside the writer's appends): one mutex orders them, and a
//     Sync makes durable every byte appended before it began.
//  7. The bytes of held table files count against one budget per session
//     (kHeldMax); a table over it is read with one pread per block.
#pragma once

#include <cisc/cisc.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct cisc_vec;

namespace cisc::integ {

constexpr size_t kWriteBuf = 64 << 10;        // appends gathered before a write
constexpr size_t kChunk = 1 << 20;            // most bytes one command moves (fits the arena)
constexpr uint64_t kHeldMax = 256ull << 20;   // table bytes held in memory per session
constexpr size_t kBehindMax = 32;             // write-behind ops in flight per file
constexpr uint64_t kBehindArena = 4ull << 20; // arena of an Appender's own queue pair

class Appender;

// One libcisc session plus the counters both stores keep; a store derives
// its own Session to add counters.
class Session : public std::enable_shared_from_this<Session> {
public:
    virtual ~Session();
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    // Opens a session of class S (derived from Session) on mountpoint, a
    // canonical path. Returns 0 and sets *out, or -errno (libcisc's).
    template <class S> static int Open(const std::string &mountpoint, std::shared_ptr<S> *out)
    {
        std::shared_ptr<S> s(new S());
        int r = s->Connect(mountpoint);
        if (r == 0)
            *out = std::move(s);
        return r;
    }

    // The calling thread's queue of this session (made on first use).
    // Returns 0 and sets *q, or -errno from cisc_queue_create.
    int Queue(struct cisc_queue **q);

    struct cisc_session *raw() const { return s_; }

    std::atomic<uint64_t> write_ops{0}, sync_ops{0}, syncs_answered{0}, queues{0};
    std::atomic<uint64_t> held_bytes{0};   // table files held in memory (invariant 7)
    std::atomic<uint64_t> flushes_held{0};   // Flushes that sent nothing (invariant 5)
    // Flushes keep the bytes in the buffer until a Sync, Close or a full
    // buffer (invariant 5); off by default.
    std::atomic<bool> hold_flushes{false};
    std::atomic<uint64_t> behind_ops{0};   // write-behind ops submitted (invariant 4)

    // Waits for the write-behind ops of every Appender of this session
    // (invariant 5). Never call it holding an Appender's lock.
    void Settle();

protected:
    Session() = default;

private:
    friend class Appender;
    int Connect(const std::string &mountpoint);
    void Track(Appender *a);     // a exists (lock order: live_mu_, then a's lock)
    void Untrack(Appender *a);
    struct cisc_session *s_ = nullptr;
    std::mutex live_mu_;                 // protects live_
    std::vector<Appender *> live_;       // this session's Appenders
    std::atomic<int> behind_{0};         // write-behind ops in flight, all files
};

// The mount a store serves: its session and canonical path; maps names
// and runs the name-space calls on the calling thread's queue.
class Mount {
public:
    // Canonicalises mountpoint and opens a session of class S on it.
    // Returns 0 and sets *out and *session, or -errno.
    template <class S>
    static int Open(const std::string &mountpoint, std::unique_ptr<Mount> *out,
                    std::shared_ptr<S> *session)
    {
        std::string canon;
        int r = Canon(mountpoint, &canon);
        if (r == 0 && (r = Session::Open(canon.empty() ? "/" : canon, session)) == 0)
            out->reset(new Mount(*session, canon));
        return r;
    }

    // True when name lies under the mount (invariant 3); *dpath is then its
    // device path.
    bool Map(const std::string &name, std::string *dpath) const;

    const std::shared_ptr<Session> &session() const { return s_; }

    // The name-space calls on device paths; each returns 0 or -errno.
    int Exists(const std::string &dpath);
    int List(const std::string &dpath, std::vector<std::string> *names);   // no "." ".."
    int Unlink(const std::string &dpath);
    int Mkdir(const std::string &dpath, bool if_missing);
    int Rmdir(const std::string &dpath);
    int Size(const std::string &dpath, uint64_t *size);
    int Rename(const std::string &from, const std::string &to);

private:
    Mount(std::shared_ptr<Session> s, std::string mount) : s_(std::move(s)), mount_(std::move(mount)) {}
    // realpath of mountpoint without a trailing slash ("" for "/").
    static int Canon(const std::string &mountpoint, std::string *out);

    std::shared_ptr<Session> s_;
    std::string mount_;   // canonical, no trailing slash
};

// Opens dpath with flags through the calling thread's queue. Returns 0 and
// sets *fh, or -errno.
int OpenHandle(Session &s, const std::string &dpath, int flags, uint64_t *fh);

// Closes fh, on whichever thread drops the file.
void CloseHandle(Session &s, uint64_t fh);

// Reads up to n bytes at off into buf in chunks the arena holds; stops at
// end of file. Returns the bytes read or -errno.
ssize_t ReadAt(Session &s, uint64_t fh, char *buf, size_t n, uint64_t off);

// A table file read whole into memory; gives its bytes back to the
// session's budget when destroyed (invariant 7).
class Held {
public:
    Held(std::shared_ptr<Session> s, std::string data) : s_(std::move(s)), data_(std::move(data)) {}
    ~Held() { s_->held_bytes -= data_.size(); }

    // Up to n bytes at off (fewer at the end): sets *p, returns the count.
    size_t At(uint64_t off, size_t n, const char **p) const;

private:
    std::shared_ptr<Session> s_;
    std::string data_;
};

// Opens dpath for random reads: when whole and the budget has room, reads
// it into *held (and closes it) and returns 1; else leaves it open as *fh
// and returns 0. Returns -errno when it cannot be opened or read.
int OpenRandom(const std::shared_ptr<Session> &s, const std::string &dpath, bool whole,
               uint64_t *fh, std::unique_ptr<Held> *held);

// Opens dpath for writing: created if missing; append keeps its contents
// (*end its size), else truncates it (*end 0). Returns 0 or -errno.
int OpenWritable(Session &s, const std::string &dpath, bool append, uint64_t *fh, uint64_t *end);

// The check steps a store wants the device to run over the bytes a write
// op carries (LevelDB's log records, RocksDB's hand-off checksums). Called
// by an Appender under its lock.
class WriteChecks {
public:
    virtual ~WriteChecks() = default;
    // Bytes the store handed with meta (its checksum ...) now lie at
    // buffer offset at, len long. Returns 0, or 1 when the buffer must be
    // sent first (too many checks pending; then called again).
    virtual int Note(size_t at, size_t len, const void *meta) = 0;
    // How much of the first len of buffered bytes (buffered in all) one
    // op may carry: never part of a checked run.
    virtual size_t Cut(size_t len, size_t buffered) const = 0;
    // Adds to v the checks of buf's first len bytes, which land at file
    // offset off. Returns 0 or -errno.
    virtual int Add(struct cisc_vec *v, const char *buf, size_t len, uint64_t off) = 0;
    // The op with those checks wrote its len bytes (ok), or nothing.
    virtual void Done(bool ok, size_t len) = 0;
};

// A writable file's buffered appends (invariants 4 to 6). Each call
// returns 0 or -errno; -EBADF after Close.
class Appender {
public:
    // fh open for writing, end its size; checks may be null (no checks).
    Appender(std::shared_ptr<Session> s, uint64_t fh, uint64_t end,
             std::unique_ptr<WriteChecks> checks);
    ~Appender();

    // Buffers len bytes (meta: see WriteChecks::Note); sends at kWriteBuf.
    int Append(const char *data, size_t len, const void *meta = nullptr);
    int Flush();
    int Sync();
    // Sends what is buffered, then sets the file's size.
    int Truncate(uint64_t size);
    // Sends what is buffered and closes the handle (once).
    int Close();
    // The file's size as the store sees it (written + buffered).
    uint64_t Size();

    // Waits for this file's write-behind ops (Session::Settle).
    void Settle();

private:
    struct Behind;                  // one write-behind op in flight

    int FlushLocked();
    int Push(bool sync);
    int64_t Submit(struct cisc_queue *q, size_t len, bool sync);
    struct cisc_queue *BehindQueue();
    int64_t SendBehind(size_t len);
    // Takes the completions of write-behind ops: all of them (waiting), or
    // those done. Returns the file's write-behind error (0: none).
    int Reap(bool all);

    std::mutex mu_;   // orders all calls (invariant 6)
    std::shared_ptr<Session> s_;
    std::unique_ptr<WriteChecks> checks_;
    uint64_t fh_, end_;             // end_: where the next buffered byte lands
    bool closed_ = false;
    bool durable_ = false;          // nothing written since the last FSYNC
    int unsynced_flushes_ = 0;      // flushes that wrote since the last Sync
    int streak_ = 0;                // flushes followed by a Sync, up to 2
    std::string buf_;
    // write-behind (invariant 4): the file's own queue pair, made on first
    // use (none: -errno, and every op is waited for), its ops in flight
    struct cisc_queue *bq_ = nullptr;
    int bq_err_ = 0;
    std::deque<std::unique_ptr<Behind>> behind_;
    int behind_err_ = 0;            // the first write-behind op that failed
};

}  // namespace cisc::integ
