// integrations/rocksdb/cr_int.h - the pieces of the libcisc
// rocksdb::FileSystem (cisc_rocksdb.h) and how they fit: cr_session.cc
// owns the libcisc session and the per-thread queues, cr_files.cc the
// file classes, cr_walread.cc the WAL reads checked in the device,
// cr_fs.cc the FileSystem that maps names to the mount and its
// registration as "ciscfs://".
//
// Invariants:
//  1. A Session outlives every file made from it (files hold a shared_ptr).
//  2. A thread's queue of a session is used only by that thread; a thread
//     that exits destroys its queues of the sessions still alive, and a
//     session that closes takes every queue of its own with it.
#pragma once

#include "integrations/rocksdb/cisc_rocksdb.h"

#include <cisc/cisc.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>
#include <string>

namespace cisc::rdb {

// One libcisc session plus the file system's counters.
class Session : public std::enable_shared_from_this<Session> {
public:
    // Opens a session on mountpoint. Returns 0 or -errno (libcisc's).
    static int Open(const std::string &mountpoint, std::shared_ptr<Session> *out);
    ~Session();

    // The calling thread's queue of this session (made on first use).
    // Returns 0 and sets *q, or -errno from cisc_queue_create.
    int Queue(struct cisc_queue **q);

    // The id of the device's WAL-check program, loading it on first use;
    // 0 when it cannot be had (then WAL reads are plain reads).
    uint32_t WalProg();

    struct cisc_session *raw() const { return s_; }

    std::atomic<uint64_t> write_ops{0}, sync_ops{0}, syncs_answered{0}, handoff_checks{0};
    std::atomic<uint64_t> queues{0}, wal_read_ops{0}, wal_checked_ops{0}, wal_damaged{0};
    std::atomic<uint64_t> held_bytes{0};   // table files held in memory (cr_files.cc)
    std::atomic<bool> wal_check{true};

private:
    Session() = default;
    struct cisc_session *s_ = nullptr;
    std::once_flag prog_once_;
    uint32_t prog_ = 0;
};

// A rocksdb::IOStatus for libcisc error err (negative errno) on fname:
// PathNotFound for -ENOENT, Corruption for -EBADMSG, NoSpace for -ENOSPC,
// IOError otherwise.
rocksdb::IOStatus Err(const std::string &fname, int err);

// File factories; dpath is the device path, fname RocksDB's name (for
// messages). Each returns OK and sets *out, or the open's error.
rocksdb::IOStatus NewCiscSequential(const std::shared_ptr<Session> &s, const std::string &fname,
                                    const std::string &dpath,
                                    std::unique_ptr<rocksdb::FSSequentialFile> *out);
rocksdb::IOStatus NewCiscRandom(const std::shared_ptr<Session> &s, const std::string &fname,
                                const std::string &dpath,
                                std::unique_ptr<rocksdb::FSRandomAccessFile> *out);
// append: keep the contents and write at the end (ReopenWritableFile),
// else truncate.
rocksdb::IOStatus NewCiscWritable(const std::shared_ptr<Session> &s, const std::string &fname,
                                  const std::string &dpath, bool append,
                                  std::unique_ptr<rocksdb::FSWritableFile> *out);

// True for RocksDB's WAL names (NNNNNN.log).
bool IsWalName(const std::string &fname);

// Reads up to len bytes of fh at off into buf in one fused op: READ, then
// (prog != 0) the WAL-check program over them. Returns the bytes that may
// be handed to RocksDB as read (all of them, or those before the first
// damaged record the device found; *damaged then set), or -errno. When
// the program itself fails (its budget, a missing program), the bytes are
// read again without it.
ssize_t WalRead(Session &s, uint64_t fh, char *buf, size_t len, uint64_t off, uint32_t prog,
                bool *damaged);

}  // namespace cisc::rdb
