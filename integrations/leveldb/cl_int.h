// integrations/leveldb/cl_int.h - the pieces of the libcisc leveldb::Env
// (cisc_leveldb.h) and how they fit: cl_session.cc owns the libcisc
// session and the per-thread queues, cl_files.cc the three file classes,
// cl_logcheck.cc the in-device check of log records, cl_env.cc the Env that
// maps names to the mount and hands out files.
//
// Invariants:
//  1. A Session outlives every file made from it (files hold a shared_ptr).
//  2. A thread's queue of a session is used only by that thread; a thread
//     that exits destroys its queues of the sessions still alive, and a
//     session that closes takes every queue of its own with it.
#pragma once

#include "integrations/leveldb/cisc_leveldb.h"

#include <cisc/cisc.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <string>

namespace cisc::ldb {

// One libcisc session plus the Env's counters.
class Session : public std::enable_shared_from_this<Session> {
public:
    // Opens a session on mountpoint. Returns 0 or -errno (libcisc's).
    static int Open(const std::string &mountpoint, std::shared_ptr<Session> *out);
    ~Session();

    // The calling thread's queue of this session (made on first use).
    // Returns 0 and sets *q, or -errno from cisc_queue_create.
    int Queue(struct cisc_queue **q);

    struct cisc_session *raw() const { return s_; }

    std::atomic<uint64_t> write_ops{0}, sync_ops{0}, verified_records{0}, queues{0};
    std::atomic<uint64_t> syncs_answered{0};
    std::atomic<uint64_t> held_bytes{0};   // table files held in memory (cl_files.cc)

private:
    Session() = default;
    struct cisc_session *s_ = nullptr;
};

// A leveldb::Status for libcisc error err (negative errno) on fname:
// NotFound for -ENOENT, Corruption for -EBADMSG, IOError otherwise.
leveldb::Status Err(const std::string &fname, int err);

// File factories; dpath is the device path, fname LevelDB's name (for
// messages). Each returns OK and sets *out, or the open's error.
leveldb::Status NewCiscSequential(const std::shared_ptr<Session> &s, const std::string &fname,
                                  const std::string &dpath, leveldb::SequentialFile **out);
leveldb::Status NewCiscRandom(const std::shared_ptr<Session> &s, const std::string &fname,
                              const std::string &dpath, leveldb::RandomAccessFile **out);
// append: keep the contents and write at the end (NewAppendableFile),
// else truncate.
leveldb::Status NewCiscWritable(const std::shared_ptr<Session> &s, const std::string &fname,
                                const std::string &dpath, bool append,
                                leveldb::WritableFile **out);

// Where the next log record header is expected, for the in-device check.
struct LogCursor {
    uint64_t next = 0;   // file offset of the next record header
    bool lost = false;   // a header was split across flushes: stop checking
};

// True for the names LevelDB writes in its log format (NNNNNN.log,
// MANIFEST-NNNNNN).
bool IsLogName(const std::string &fname);

// Adds to v, for each record that lies wholly in buf (len bytes that will
// land at file offset off), a CRC-32C step over its type and payload and
// a VERIFY step against its header's checksum; at most max_records of
// them. Moves c past every record header it reads. Returns the number of
// records checked, or -errno from the builder.
int LogCheckAdd(struct cisc_vec *v, LogCursor *c, const char *buf, size_t len, uint64_t off,
                unsigned max_records);

}  // namespace cisc::ldb
