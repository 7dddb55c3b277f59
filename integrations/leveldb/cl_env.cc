// integrations/leveldb/cl_env.cc - the Env itself: decides which names are
// under the mount (served through libcisc) and delegates the rest, and
// everything that is not a file, to leveldb::Env::Default()
// (cisc_leveldb.h, invariant 1).
#include "integrations/leveldb/cl_int.h"

#include <climits>
#include <cstdlib>
#include <unistd.h>

#include <vector>

namespace cisc {
namespace ldb {
namespace {

int CollectName(void *arg, const struct cisc_dirent *de)
{
    std::string n = de->name;
    if (n != "." && n != "..")
        static_cast<std::vector<std::string> *>(arg)->push_back(n);
    return 0;
}

class CiscEnv : public leveldb::EnvWrapper {
public:
    CiscEnv(std::shared_ptr<Session> s, std::string mount)
        : EnvWrapper(leveldb::Env::Default()), s_(std::move(s)), mount_(std::move(mount)) {}

    const Session &session() const { return *s_; }

    leveldb::Status NewSequentialFile(const std::string &f, leveldb::SequentialFile **r) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscSequential(s_, f, d, r) : target()->NewSequentialFile(f, r);
    }

    leveldb::Status NewRandomAccessFile(const std::string &f,
                                        leveldb::RandomAccessFile **r) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscRandom(s_, f, d, r) : target()->NewRandomAccessFile(f, r);
    }

    leveldb::Status NewWritableFile(const std::string &f, leveldb::WritableFile **r) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscWritable(s_, f, d, false, r) : target()->NewWritableFile(f, r);
    }

    leveldb::Status NewAppendableFile(const std::string &f, leveldb::WritableFile **r) override
    {
        std::string d;
        return Map(f, &d) ? NewCiscWritable(s_, f, d, true, r)
                          : target()->NewAppendableFile(f, r);
    }

    bool FileExists(const std::string &f) override
    {
        std::string d;
        struct cisc_queue *q;
        struct stat st;
        if (!Map(f, &d))
            return target()->FileExists(f);
        return s_->Queue(&q) == 0 && cisc_stat(q, d.c_str(), &st) == 0;
    }

    leveldb::Status GetChildren(const std::string &dir, std::vector<std::string> *r) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->GetChildren(dir, r);
        r->clear();
        return Call(dir, [&](struct cisc_queue *q) {
            return cisc_readdir(q, d.c_str(), CollectName, r);
        });
    }

    leveldb::Status RemoveFile(const std::string &f) override
    {
        std::string d;
        if (!Map(f, &d))
            return target()->RemoveFile(f);
        return Call(f, [&](struct cisc_queue *q) { return cisc_unlink(q, d.c_str()); });
    }
    leveldb::Status DeleteFile(const std::string &f) override { return RemoveFile(f); }

    leveldb::Status CreateDir(const std::string &dir) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->CreateDir(dir);
        return Call(dir, [&](struct cisc_queue *q) { return cisc_mkdir(q, d.c_str(), 0755); });
    }

    leveldb::Status RemoveDir(const std::string &dir) override
    {
        std::string d;
        if (!Map(dir, &d))
            return target()->RemoveDir(dir);
        return Call(dir, [&](struct cisc_queue *q) { return cisc_rmdir(q, d.c_str()); });
    }
    leveldb::Status DeleteDir(const std::string &dir) override { return RemoveDir(dir); }

    leveldb::Status GetFileSize(const std::string &f, uint64_t *size) override
    {
        std::string d;
        struct stat st;
        if (!Map(f, &d))
            return target()->GetFileSize(f, size);
        leveldb::Status r =
            Call(f, [&](struct cisc_queue *q) { return cisc_stat(q, d.c_str(), &st); });
        *size = r.ok() ? (uint64_t)st.st_size : 0;
        return r;
    }

    leveldb::Status RenameFile(const std::string &from, const std::string &to) override
    {
        std::string a, b;
        bool ma = Map(from, &a), mb = Map(to, &b);
        if (!ma && !mb)
            return target()->RenameFile(from, to);
        if (ma != mb)
            return Err(from, -EXDEV);
        return Call(from, [&](struct cisc_queue *q) {
            return cisc_rename(q, a.c_str(), b.c_str(), 0);
        });
    }

private:
    // Runs fn(the thread's queue) and turns its result into a Status.
    template <typename F> leveldb::Status Call(const std::string &name, F fn)
    {
        struct cisc_queue *q;
        int r = s_->Queue(&q);
        if (r == 0)
            r = fn(q);
        return r ? Err(name, r) : leveldb::Status::OK();
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

}  // namespace
}  // namespace ldb

leveldb::Status NewLevelDbEnv(const std::string &mountpoint, std::unique_ptr<leveldb::Env> *out)
{
    char real[PATH_MAX];
    if (!realpath(mountpoint.c_str(), real))
        return ldb::Err(mountpoint, -errno);
    std::shared_ptr<ldb::Session> s;
    int r = ldb::Session::Open(real, &s);
    if (r)
        return ldb::Err(mountpoint, r);
    std::string m = real;
    if (m == "/")
        m.clear();
    out->reset(new ldb::CiscEnv(std::move(s), m));
    return leveldb::Status::OK();
}

LevelDbEnvStats LevelDbEnvStatsOf(leveldb::Env *env)
{
    auto *e = dynamic_cast<ldb::CiscEnv *>(env);
    if (!e)
        return {};
    const ldb::Session &s = e->session();
    return { s.write_ops.load(), s.sync_ops.load(), s.verified_records.load(), s.queues.load(),
             s.syncs_answered.load() };
}

}  // namespace cisc
