// integrations/leveldb/cl_int.h - the pieces of the libcisc leveldb::Env
// (cisc_leveldb.h) and how they fit: integrations/common (ci_common.h)
// owns the libcisc session, the per-thread queues, the name mapping, the
// reads and the buffered appends; cl_files.cc makes LevelDB's three file
// classes of them, cl_logcheck.cc the in-device check of log records,
// cl_env.cc the Env that maps names to the mount and hands out files.
//
// Invariants: those of ci_common.h (a Session outlives its files; a
// thread's queue is used by that thread only).
#pragma once

#include "integrations/common/ci_common.h"
#include "integrations/leveldb/cisc_leveldb.h"

#include <memory>
#include <string>

namespace cisc::ldb {

// The shared session plus the Env's own counter.
class Session : public integ::Session {
public:
    std::atomic<uint64_t> verified_records{0};
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
