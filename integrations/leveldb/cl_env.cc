// integrations/leveldb/cl_env.cc - the Env itself: decides which names are
// under the mount (served through libcisc) and delegates the rest, and
// everything that is not a file, to leveldb::Env::Default()
// (cisc_leveldb.h, invariant 1).
#include "integrations/leveldb/cl_int.h"

#include <vector>

namespace cisc {
namespace ldb {
namespace {

class CiscEnv : public leveldb::EnvWrapper {
public:
    CiscEnv(std::shared_ptr<Session> s, std::unique_ptr<integ::Mount> m)
        : EnvWrapper(leveldb::Env::Default()), s_(std::move(s)), m_(std::move(m)) {}

    const Session &session() const { return *s_; }

    leveldb::Status NewSequentialFile(const std::string &f, leveldb::SequentialFile **r) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscSequential(s_, f, d, r) : target()->NewSequentialFile(f, r);
    }

    leveldb::Status NewRandomAccessFile(const std::string &f,
                                        leveldb::RandomAccessFile **r) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscRandom(s_, f, d, r) : target()->NewRandomAccessFile(f, r);
    }

    leveldb::Status NewWritableFile(const std::string &f, leveldb::WritableFile **r) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscWritable(s_, f, d, false, r)
                              : target()->NewWritableFile(f, r);
    }

    leveldb::Status NewAppendableFile(const std::string &f, leveldb::WritableFile **r) override
    {
        std::string d;
        return m_->Map(f, &d) ? NewCiscWritable(s_, f, d, true, r)
                              : target()->NewAppendableFile(f, r);
    }

    bool FileExists(const std::string &f) override
    {
        std::string d;
        return m_->Map(f, &d) ? m_->Exists(d) == 0 : target()->FileExists(f);
    }

    leveldb::Status GetChildren(const std::string &dir, std::vector<std::string> *r) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->List(d, r)) : target()->GetChildren(dir, r);
    }

    leveldb::Status RemoveFile(const std::string &f) override
    {
        std::string d;
        return m_->Map(f, &d) ? St(f, m_->Unlink(d)) : target()->RemoveFile(f);
    }
    leveldb::Status DeleteFile(const std::string &f) override { return RemoveFile(f); }

    leveldb::Status CreateDir(const std::string &dir) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->Mkdir(d, false)) : target()->CreateDir(dir);
    }

    leveldb::Status RemoveDir(const std::string &dir) override
    {
        std::string d;
        return m_->Map(dir, &d) ? St(dir, m_->Rmdir(d)) : target()->RemoveDir(dir);
    }
    leveldb::Status DeleteDir(const std::string &dir) override { return RemoveDir(dir); }

    leveldb::Status GetFileSize(const std::string &f, uint64_t *size) override
    {
        std::string d;
        return m_->Map(f, &d) ? St(f, m_->Size(d, size)) : target()->GetFileSize(f, size);
    }

    leveldb::Status RenameFile(const std::string &from, const std::string &to) override
    {
        std::string a, b;
        bool ma = m_->Map(from, &a), mb = m_->Map(to, &b);
        if (!ma && !mb)
            return target()->RenameFile(from, to);
        return St(from, ma != mb ? -EXDEV : m_->Rename(a, b));
    }

private:
    static leveldb::Status St(const std::string &name, int r)
    {
        return r ? Err(name, r) : leveldb::Status::OK();
    }

    std::shared_ptr<Session> s_;
    std::unique_ptr<integ::Mount> m_;
};

}  // namespace
}  // namespace ldb

leveldb::Status NewLevelDbEnv(const std::string &mountpoint, std::unique_ptr<leveldb::Env> *out)
{
    std::unique_ptr<integ::Mount> m;
    std::shared_ptr<ldb::Session> s;
    int r = integ::Mount::Open(mountpoint, &m, &s);
    if (r)
        return ldb::Err(mountpoint, r);
    out->reset(new ldb::CiscEnv(std::move(s), std::move(m)));
    return leveldb::Status::OK();
}

LevelDbEnvStats LevelDbEnvStatsOf(leveldb::Env *env)
{
    auto *e = dynamic_cast<ldb::CiscEnv *>(env);
    if (!e)
        return {};
    const ldb::Session &s = e->session();
    return { s.write_ops.load(), s.sync_ops.load(), s.verified_records.load(), s.queues.load(),
             s.syncs_answered.load(), s.behind_ops.load() };
}

}  // namespace cisc
