// integrations/rocksdb/cr_int.h - the pieces of the libcisc
// rocksdb::FileSystem (cisc_rocksdb.h) and how they fit: integrations/
// common (ci_common.h) owns the libcisc session, the per-thread queues,
// the name mapping, the reads and the buffered appends; cr_files.cc makes
// RocksDB's file classes of them, cr_walread.cc the WAL reads checked in
// the device (and loads the checking program), cr_fs.cc the FileSystem
// that maps names to the mount and its registration as "ciscfs://".
//
// Invariants: those of ci_common.h (a Session outlives its files; a
// thread's queue is used by that thread only).
#pragma once

#include "integrations/common/ci_common.h"
#include "integrations/rocksdb/cisc_rocksdb.h"

#include <memory>
#include <mutex>
#include <string>

namespace cisc::rdb {

// The shared session plus the file system's own counters and its WAL
// check.
class Session : public integ::Session {
public:
    // The id of the device's WAL-check program, loading it on first use;
    // 0 when it cannot be had (then WAL reads are plain reads).
    uint32_t WalProg();

    std::atomic<uint64_t> handoff_checks{0};
    std::atomic<uint64_t> wal_read_ops{0}, wal_checked_ops{0}, wal_damaged{0};
    std::atomic<bool> wal_check{true};

private:
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
