// integrations/rocksdb/cr_fs.cc - the FileSystem itself: decides which
// names are under the mount (served through libcisc) and delegates the
// rest, and everything that is not a file, to FileSystem::Default()
// (cisc_rocksdb.h, invariant 1); registers "ciscfs://MOUNT" with RocksDB's
// object registry when the library is loaded.
#include "integrations/rocksdb/cr_int.h"

#include <rocksdb/utilities/object_registry.h>

#include <cstdlib>
#include <cstring>

#include <vector>

namespace cisc {
namespace rdb {
namespace {

using rocksdb::FileOptions;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

constexpr const char *kScheme = "ciscfs://";

class CiscFs : public rocksdb::FileSystemWrapper {
public:
    CiscFs(std::shared_ptr<Session> s, std::unique_ptr<integ::Mount> m)
        : FileSystemWrapper(rocksdb::FileSystem::Default()), s_(std::move(s)), m_(std::move(m)) {}

    static const char *kClassName() { return "CiscFileSystem"; }
    const char *Name() const override { return kClassName(); }
    Session &session() const { return *s_; }

    IOStatus NewSequentialFile(const std::string &f, const FileOptions &o,
                               std::unique_ptr<rocksdb::FSSequentialFile> *r,
                               IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscSequential(s_, f, d, r)
                              : target()->NewSequentialFile(f, o, r, dbg);
    }

    IOStatus NewRandomAccessFile(const std::string &f, const FileOptions &o,
                                 std::unique_ptr<rocksdb::FSRandomAccessFile> *r,
                                 IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscRandom(s_, f, d, r)
                              : target()->NewRandomAccessFile(f, o, r, dbg);
    }

    IOStatus NewWritableFile(const std::string &f, const FileOptions &o,
                             std::unique_ptr<rocksdb::FSWritableFile> *r,
                             IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscWritable(s_, f, d, false, r)
                              : target()->NewWritableFile(f, o, r, dbg);
    }

    IOStatus ReopenWritableFile(const std::string &f, const FileOptions &o,
                                std::unique_ptr<rocksdb::FSWritableFile> *r,
                                IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscWritable(s_, f, d, true, r)
                              : target()->ReopenWritableFile(f, o, r, dbg);
    }

    // A recycled WAL: renamed, then written from the start (truncated;
    // RocksDB's recyclable records tell old bytes by their log number, so
    // dropping them is safe).
    IOStatus ReuseWritableFile(const std::string &f, const std::string &old,
                               const FileOptions &o, std::unique_ptr<rocksdb::FSWritableFile> *r,
                               IODebugContext *dbg) override
    {
        std::string d, od;
        if (!m_->Map(f, &d) || !m_->Map(old, &od))
            return target()->ReuseWritableFile(f, old, o, r, dbg);
        IOStatus st = RenameFile(old, f, IOOptions(), dbg);
        return st.ok() ? NewCiscWritable(s_, f, d, false, r) : st;
    }

    IOStatus FileExists(const std::string &f, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        if (!m_->Map(f, &d))
            return target()->FileExists(f, o, dbg);
        int r = m_->Exists(d);
        return r == -ENOENT ? IOStatus::NotFound(f) : St(f, r);
    }

    IOStatus GetChildren(const std::string &dir, const IOOptions &o, std::vector<std::string> *r,
                         IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->List(d, r)) : target()->GetChildren(dir, o, r, dbg);
    }

    IOStatus DeleteFile(const std::string &f, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(f, &d) ? St(f, m_->Unlink(d)) : target()->DeleteFile(f, o, dbg);
    }

    IOStatus CreateDir(const std::string &dir, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->Mkdir(d, false)) : target()->CreateDir(dir, o, dbg);
    }

    IOStatus CreateDirIfMissing(const std::string &dir, const IOOptions &o,
                                IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->Mkdir(d, true))
                                : target()->CreateDirIfMissing(dir, o, dbg);
    }

    IOStatus DeleteDir(const std::string &dir, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->Rmdir(d)) : target()->DeleteDir(dir, o, dbg);
    }

    IOStatus GetFileSize(const std::string &f, const IOOptions &o, uint64_t *size,
                         IODebugContext *dbg) override
    {
        std::string d;
        return m_->Map(f, &d) ? St(f, m_->Size(d, size)) : target()->GetFileSize(f, o, size, dbg);
    }

    IOStatus RenameFile(const std::string &from, const std::string &to, const IOOptions &o,
                        IODebugContext *dbg) override
    {
        std::string a, b;
        bool ma = m_->Map(from, &a), mb = m_->Map(to, &b);
        if (!ma && !mb)
            return target()->RenameFile(from, to, o, dbg);
        return St(from, ma != mb ? -EXDEV : m_->Rename(a, b));
    }

private:
    static IOStatus St(const std::string &name, int r) { return r ? Err(name, r) : IOStatus::OK(); }

    std::shared_ptr<Session> s_;
    std::unique_ptr<integ::Mount> m_;
};

// Makes the file system for mountpoint. Returns 0 or -errno.
int Make(const std::string &mountpoint, CiscFs **out)
{
    std::unique_ptr<integ::Mount> m;
    std::shared_ptr<Session> s;
    int r = integ::Mount::Open(mountpoint, &m, &s);
    if (r)
        return r;
    const char *env = getenv("CISC_ROCKSDB_WALCHECK");
    s->wal_check = !(env && strcmp(env, "0") == 0);
    env = getenv("CISC_ROCKSDB_HOLD_FLUSH");
    s->hold_flushes = env && strcmp(env, "1") == 0;
    *out = new CiscFs(std::move(s), std::move(m));
    return 0;
}

// "ciscfs://MOUNT" in RocksDB's registry (--fs_uri, FileSystem::CreateFromString).
rocksdb::FileSystem *Factory(const std::string &uri, std::unique_ptr<rocksdb::FileSystem> *guard,
                             std::string *errmsg)
{
    CiscFs *fs = nullptr;
    int r = Make(uri.substr(strlen(kScheme)), &fs);
    if (r) {
        *errmsg = uri + ": " + cisc_strerror(r);
        return nullptr;
    }
    guard->reset(fs);
    return fs;
}

[[maybe_unused]] const bool registered = [] {
    rocksdb::ObjectLibrary::Default()->AddFactory<rocksdb::FileSystem>(
        rocksdb::ObjectLibrary::PatternEntry("ciscfs", false).AddSeparator("://", false),
        Factory);
    return true;
}();

}  // namespace
}  // namespace rdb

rocksdb::Status NewRocksDbFileSystem(const std::string &mountpoint,
                                     std::shared_ptr<rocksdb::FileSystem> *out)
{
    rdb::CiscFs *fs = nullptr;
    int r = rdb::Make(mountpoint, &fs);
    if (r)
        return rdb::Err(mountpoint, r);
    out->reset(fs);
    return rocksdb::Status::OK();
}

RocksDbFsStats RocksDbFsStatsOf(const rocksdb::FileSystem *fs)
{
    auto *c = dynamic_cast<const rdb::CiscFs *>(fs);
    if (!c)
        return {};
    const rdb::Session &s = c->session();
    return { s.write_ops.load(),      s.sync_ops.load(),        s.syncs_answered.load(),
             s.handoff_checks.load(), s.queues.load(),          s.wal_read_ops.load(),
             s.wal_checked_ops.load(), s.wal_damaged.load(), s.flushes_held.load(),
             s.behind_ops.load() };
}

void RocksDbFsSetWalCheck(rocksdb::FileSystem *fs, bool on)
{
    if (auto *c = dynamic_cast<rdb::CiscFs *>(fs))
        c->session().wal_check = on;
}

void RocksDbFsSetHoldFlush(rocksdb::FileSystem *fs, bool on)
{
    if (auto *c = dynamic_cast<rdb::CiscFs *>(fs))
        c->session().hold_flushes = on;
}

}  // namespace cisc
