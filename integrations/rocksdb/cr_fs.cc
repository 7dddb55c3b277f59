// integrations/rocksdb/cr_fs.cc - the FileSystem itself: decides which
// names are under the mount (served through libcisc) and delegates the
// rest, and everything that is not a file, to FileSystem::Default()
// (cisc_rocksdb.h, invariant 1); registers "ciscfs://MOUNT" with RocksDB's
// object registry when the library is loaded.
#include "integrations/rocksdb/cr_int.h"

#include <rocksdb/utilities/object_registry.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <vector>

namespace cisc {
namespace rdb {
namespace {

using rocksdb::FileOptions;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

constexpr const char *kScheme = "ciscfs://";

int CollectName(void *arg, const struct cisc_dirent *de)
{
    std::string n = de->name;
    if (n != "." && n != "..")
        static_cast<std::vector<std::string> *>(arg)->push_back(n);
    return 0;
}

class CiscFs : public rocksdb::FileSystemWrapper {
public:
    CiscFs(std::shared_ptr<Session> s, std::string mount)
        : FileSystemWrapper(rocksdb::FileSystem::Default()), s_(std::move(s)),
          mount_(std::move(mount)) {}

    static const char *kClassName() { return "CiscFileSystem"; }
    const char *Name() const override { return kClassName(); }
    Session &session() const { return *s_; }

    IOStatus NewSequentialFile(const std::string &f, const FileOptions &o,
                               std::unique_ptr<rocksdb::FSSequentialFile> *r,
                               IODebugContext *dbg) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscSequential(s_, f, d, r) : target()->NewSequentialFile(f, o, r, dbg);
    }

    IOStatus NewRandomAccessFile(const std::string &f, const FileOptions &o,
                                 std::unique_ptr<rocksdb::FSRandomAccessFile> *r,
                                 IODebugContext *dbg) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscRandom(s_, f, d, r) : target()->NewRandomAccessFile(f, o, r, dbg);
    }

    IOStatus NewWritableFile(const std::string &f, const FileOptions &o,
                             std::unique_ptr<rocksdb::FSWritableFile> *r,
                             IODebugContext *dbg) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscWritable(s_, f, d, false, r)
                          : target()->NewWritableFile(f, o, r, dbg);
    }

    IOStatus ReopenWritableFile(const std::string &f, const FileOptions &o,
                                std::unique_ptr<rocksdb::FSWritableFile> *r,
                                IODebugContext *dbg) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscWritable(s_, f, d, true, r)
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
        if (!Map(f, &d) || !Map(old, &od))
            return target()->ReuseWritableFile(f, old, o, r, dbg);
        IOStatus st = RenameFile(old, f, IOOptions(), dbg);
        return st.ok() ? NewCiscWritable(s_, f, d, false, r) : st;
    }

    IOStatus FileExists(const std::string &f, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        struct stat st;
        if (!Map(f, &d))
            return target()->FileExists(f, o, dbg);
        IOStatus r = Call(f, [&](struct cisc_queue *q) { return cisc_stat(q, d.c_str(), &st); });
        return r.IsPathNotFound() ? IOStatus::NotFound(f) : r;
    }

    IOStatus GetChildren(const std::string &dir, const IOOptions &o, std::vector<std::string> *r,
                         IODebugContext *dbg) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->GetChildren(dir, o, r, dbg);
        r->clear();
        return Call(dir, [&](struct cisc_queue *q) {
            return cisc_readdir(q, d.c_str(), CollectName, r);
        });
    }

    IOStatus DeleteFile(const std::string &f, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        if (!Map(f, &d))
            return target()->DeleteFile(f, o, dbg);
        return Call(f, [&](struct cisc_queue *q) { return cisc_unlink(q, d.c_str()); });
    }

    IOStatus CreateDir(const std::string &dir, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->CreateDir(dir, o, dbg);
        return Call(dir, [&](struct cisc_queue *q) { return cisc_mkdir(q, d.c_str(), 0755); });
    }

    IOStatus CreateDirIfMissing(const std::string &dir, const IOOptions &o,
                                IODebugContext *dbg) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->CreateDirIfMissing(dir, o, dbg);
        return Call(dir, [&](struct cisc_queue *q) {
            struct stat st;
            int r = cisc_mkdir(q, d.c_str(), 0755);
            if (r == -EEXIST && cisc_stat(q, d.c_str(), &st) == 0)
                r = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
            return r;
        });
    }

    IOStatus DeleteDir(const std::string &dir, const IOOptions &o, IODebugContext *dbg) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->DeleteDir(dir, o, dbg);
        return Call(dir, [&](struct cisc_queue *q) { return cisc_rmdir(q, d.c_str()); });
    }

    IOStatus GetFileSize(const std::string &f, const IOOptions &o, uint64_t *size,
                         IODebugContext *dbg) override
    {
        std::string d;
        struct stat st;
        if (!Map(f, &d))
            return target()->GetFileSize(f, o, size, dbg);
        IOStatus r = Call(f, [&](struct cisc_queue *q) { return cisc_stat(q, d.c_str(), &st); });
        *size = r.ok() ? (uint64_t)st.st_size : 0;
        return r;
    }

    IOStatus RenameFile(const std::string &from, const std::string &to, const IOOptions &o,
                        IODebugContext *dbg) override
    {
        std::string a, b;
        bool ma = Map(from, &a), mb = Map(to, &b);
        if (!ma && !mb)
            return target()->RenameFile(from, to, o, dbg);
        if (ma != mb)
            return Err(from, -EXDEV);
        return Call(from, [&](struct cisc_queue *q) {
            return cisc_rename(q, a.c_str(), b.c_str(), 0);
        });
    }

private:
    // Runs fn(the thread's queue) and turns its result into an IOStatus.
    template <typename F> IOStatus Call(const std::string &name, F fn)
    {
        struct cisc_queue *q;
        int r = s_->Queue(&q);
        if (r == 0)
            r = fn(q);
        return r ? Err(name, r) : IOStatus::OK();
    }

    // True when name lies under the mount; *dpath is then its device path.
    // Names with ".." components are left to the kernel (they may leave
    // the mount), as `cisc exec` does.
    bool Map(const std::string &name, std::string *dpath) const
    {
        std::string abs = name;
        if (name.empty() || name.find("..") != std::string::npos)
            return false;
        if (name[0] != '/') {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof(cwd)))
                return false;
            abs = std::string(cwd) + "/" + name;
        }
        if (abs.compare(0, mount_.size(), mount_) != 0)
            return false;
        if (abs.size() > mount_.size() && abs[mount_.size()] != '/')
            return false;
        *dpath = abs.size() == mount_.size() ? "/" : abs.substr(mount_.size());
        return true;
    }

    std::shared_ptr<Session> s_;
    std::string mount_;   // canonical, no trailing slash
};

// Makes the file system for mountpoint. Returns 0 or -errno.
int Make(const std::string &mountpoint, CiscFs **out)
{
    char real[PATH_MAX];
    if (!realpath(mountpoint.c_str(), real))
        return -errno;
    std::shared_ptr<Session> s;
    int r = Session::Open(real, &s);
    if (r)
        return r;
    const char *env = getenv("CISC_ROCKSDB_WALCHECK");
    s->wal_check = !(env && strcmp(env, "0") == 0);
    std::string m = real;
    if (m == "/")
        m.clear();
    *out = new CiscFs(std::move(s), m);
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
             s.wal_checked_ops.load(), s.wal_damaged.load() };
}

void RocksDbFsSetWalCheck(rocksdb::FileSystem *fs, bool on)
{
    if (auto *c = dynamic_cast<rdb::CiscFs *>(fs))
        c->session().wal_check = on;
}

}  // namespace cisc
