// Randomized model test: thousands of random operations applied both to
// StorageFS and to a simple in-memory model (std::map), comparing every
// return code, reading back after every step, comparing the whole tree
// every 100 steps and after every remount, and fsck after each remount.
// Some writes are data-journaled transactions; checkpoints come every few
// dozen steps.
// The seed is printed; set SFS_MODEL_SEED to repeat a run.
#include "sfs_fixture.h"

#include <map>
#include <random>

#include "sfs_probe.h"

namespace {

enum Type { REG, DIR_, LNK };

struct MInode {
    Type type;
    std::string data;                           // file data / symlink target
    std::map<std::string, std::string> xattrs;
    std::map<std::string, int> entries;         // directories
    int parent = 0;
    int nlink = 1;
};

class Model {
  public:
    std::map<int, MInode> in;
    int next = 1;
    Model() { in[0] = MInode{DIR_, "", {}, {}, 0, 2}; }

    int Lookup(int dir, const std::string &name) const
    {
        auto &e = in.at(dir).entries;
        auto it = e.find(name);
        return it == e.end() ? -1 : it->second;
    }
    bool Under(int a, int x) const   // a is x or an ancestor of x
    {
        for (int cur = x;; cur = in.at(cur).parent) {
            if (cur == a)
                return true;
            if (cur == 0)
                return false;
        }
    }
    void Drop(int id)
    {
        MInode &m = in.at(id);
        if (m.type == DIR_)
            m.nlink = 0;
        else
            m.nlink--;
        if (m.nlink == 0)
            in.erase(id);
    }
};

const char *kNames[] = {"a", "b", "c", "d", "e", "f", "g", "long-name-0123456789"};

}  // namespace

class ModelTest : public SfsFixture {
  protected:
    Model m;
    std::map<int, uint64_t> real;   // model id -> inode number
    std::mt19937_64 rng;
    int steps = 0;

    uint64_t R(uint64_t n) { return rng() % n; }

    std::vector<int> Ids(Type t)
    {
        std::vector<int> v;
        for (auto &p : m.in)
            if (p.second.type == t)
                v.push_back(p.first);
        return v;
    }
    int Pick(Type t)
    {
        auto v = Ids(t);
        return v.empty() ? -1 : v[R(v.size())];
    }
    std::string Name() { return kNames[R(sizeof(kNames) / sizeof(kNames[0]))]; }

    std::string Data(size_t n)
    {
        std::string s(n, '\0');
        uint64_t x = rng();
        for (size_t i = 0; i < n; i++)
            s[i] = (char)('A' + (x + i * 13) % 50);
        return s;
    }

    void OpCreate(Type t)
    {
        int d = Pick(DIR_);
        std::string n = Name();
        struct sfs_attr a;
        int r;
        if (t == REG)
            r = sfs_mknod(fs, nullptr, real[d], n.c_str(), S_IFREG | 0644, 0, 1, 2, &a);
        else if (t == DIR_)
            r = sfs_mkdir(fs, nullptr, real[d], n.c_str(), 0755, 1, 2, &a);
        else
            r = sfs_symlink(fs, nullptr, real[d], n.c_str(), Data(1 + R(400)).c_str(), 1, 2,
                            &a);
        int want = m.Lookup(d, n) >= 0 ? -EEXIST : 0;
        ASSERT_EQ(r, want) << "create " << n;
        if (r)
            return;
        int id = m.next++;
        MInode mi{t, "", {}, {}, d, t == DIR_ ? 2 : 1};
        if (t == LNK) {
            char buf[5000];
            ssize_t k = sfs_readlink(fs, a.ino, buf, sizeof(buf));
            mi.data.assign(buf, k > 0 ? (size_t)k : 0);
        }
        m.in[id] = mi;
        m.in[d].entries[n] = id;
        if (t == DIR_)
            m.in[d].nlink++;
        real[id] = a.ino;
    }

    void OpWrite()
    {
        int f = Pick(REG);
        if (f < 0)
            return;
        std::string &cur = m.in[f].data;
        uint64_t off = R(cur.size() + 9000);
        std::string s = Data(R(4) == 0 ? R(70000) : R(6000));
        // Some writes run in a data-journaled transaction (the file is then
        // hot: later reads, writes, truncates and punches take the journal
        // path until the next checkpoint).
        struct sfs_txn *tx = nullptr;
        if (R(4) == 0) {
            ASSERT_EQ(sfs_txn_begin_flags(fs, SFS_TXN_DATA_JOURNAL, &tx), 0);
        }
        ssize_t n = sfs_write(fs, tx, real[f], off, s.data(), s.size());
        if (tx) {
            ASSERT_EQ(sfs_txn_commit(tx, false), 0);
        }
        ASSERT_EQ(n, (ssize_t)s.size());
        if (s.empty())
            return;              /* a zero-length write changes nothing */
        if (off + s.size() > cur.size())
            cur.resize(off + s.size(), '\0');
        cur.replace(off, s.size(), s);
    }

    void OpTruncateOrPunch()
    {
        int f = Pick(REG);
        if (f < 0)
            return;
        std::string &cur = m.in[f].data;
        if (R(2)) {
            uint64_t size = R(cur.size() + 20000);
            struct sfs_attr in = {};
            in.size = size;
            ASSERT_EQ(sfs_setattr(fs, nullptr, real[f], &in, SFS_SET_SIZE, nullptr), 0);
            cur.resize(size, '\0');
        } else if (!cur.empty()) {
            uint64_t off = R(cur.size()), len = 1 + R(cur.size() - off + 5000);
            ASSERT_EQ(sfs_fallocate(fs, nullptr, real[f],
                                    SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_KEEP_SIZE, off, len), 0);
            uint64_t end = std::min<uint64_t>(off + len, cur.size());
            cur.replace(off, end - off, end - off, '\0');
        }
    }

    void OpRemove(bool dir)
    {
        int d = Pick(DIR_);
        std::string n = Name();
        int r = dir ? sfs_rmdir(fs, nullptr, real[d], n.c_str())
                    : sfs_unlink(fs, nullptr, real[d], n.c_str());
        int id = m.Lookup(d, n), want = 0;
        if (id < 0)
            want = -ENOENT;
        else if (dir && m.in[id].type != DIR_)
            want = -ENOTDIR;
        else if (!dir && m.in[id].type == DIR_)
            want = -EISDIR;
        else if (dir && !m.in[id].entries.empty())
            want = -ENOTEMPTY;
        ASSERT_EQ(r, want) << (dir ? "rmdir " : "unlink ") << n;
        if (r)
            return;
        m.in[d].entries.erase(n);
        if (dir)
            m.in[d].nlink--;
        m.Drop(id);
    }

    int RenameExpect(int od, const std::string &on, int nd, const std::string &nn,
                     unsigned fl, int s, int t)
    {
        if (s < 0)
            return -ENOENT;
        if ((fl & SFS_RENAME_NOREPLACE) && t >= 0)
            return -EEXIST;
        if (s == t)
            return 0;
        if ((fl & SFS_RENAME_EXCHANGE) && t < 0)
            return -ENOENT;
        bool sdir = m.in[s].type == DIR_, tdir = t >= 0 && m.in[t].type == DIR_;
        if (od != nd && sdir && m.Under(s, nd))
            return -EINVAL;
        if ((fl & SFS_RENAME_EXCHANGE) && od != nd && tdir && m.Under(t, od))
            return -EINVAL;
        if ((fl & SFS_RENAME_EXCHANGE) || t < 0)
            return 0;
        if (sdir && !tdir)
            return -ENOTDIR;
        if (!sdir && tdir)
            return -EISDIR;
        return tdir && !m.in[t].entries.empty() ? -ENOTEMPTY : 0;
    }

    void MoveDirLink(int id, int from, int to)
    {
        if (m.in[id].type != DIR_ || from == to)
            return;
        m.in[from].nlink--;
        m.in[to].nlink++;
        m.in[id].parent = to;
    }

    void OpRename()
    {
        int od = Pick(DIR_), nd = Pick(DIR_);
        std::string on = Name(), nn = Name();
        unsigned fl = R(4) == 0 ? SFS_RENAME_NOREPLACE : R(4) == 0 ? SFS_RENAME_EXCHANGE : 0;
        int s = m.Lookup(od, on), t = m.Lookup(nd, nn);
        int want = RenameExpect(od, on, nd, nn, fl, s, t);
        int r = sfs_rename(fs, nullptr, real[od], on.c_str(), real[nd], nn.c_str(), fl);
        ASSERT_EQ(r, want) << "rename " << on << " -> " << nn << " flags " << fl;
        if (r || s == t)
            return;
        if (fl & SFS_RENAME_EXCHANGE) {
            m.in[od].entries[on] = t;
            m.in[nd].entries[nn] = s;
            MoveDirLink(s, od, nd);
            MoveDirLink(t, nd, od);
            return;
        }
        m.in[od].entries.erase(on);
        m.in[nd].entries[nn] = s;
        if (t >= 0) {
            if (m.in[t].type == DIR_)
                m.in[nd].nlink--;
            m.Drop(t);
        }
        MoveDirLink(s, od, nd);
    }

    void OpLink()
    {
        int f = Pick(REG), d = Pick(DIR_);
        if (f < 0)
            return;
        std::string n = Name();
        struct sfs_attr a;
        int r = sfs_link(fs, nullptr, real[f], real[d], n.c_str(), &a);
        ASSERT_EQ(r, m.Lookup(d, n) >= 0 ? -EEXIST : 0);
        if (r == 0) {
            m.in[d].entries[n] = f;
            m.in[f].nlink++;
        }
    }

    void OpXattr()
    {
        std::vector<int> all;
        for (auto &p : m.in)
            all.push_back(p.first);
        int id = all[R(all.size())];
        std::string name = std::string(R(2) ? "user." : "trusted.") + Name();
        auto &xs = m.in[id].xattrs;
        if (R(3) == 0) {
            int r = sfs_removexattr(fs, nullptr, real[id], name.c_str());
            ASSERT_EQ(r, xs.count(name) ? 0 : -ENODATA);
            xs.erase(name);
            return;
        }
        std::string v = Data(R(3) == 0 ? R(9000) : R(60));
        unsigned fl = R(4) == 0 ? SFS_XATTR_CREATE : R(4) == 0 ? SFS_XATTR_REPLACE : 0;
        int want = (fl == SFS_XATTR_CREATE && xs.count(name)) ? -EEXIST
                   : (fl == SFS_XATTR_REPLACE && !xs.count(name)) ? -ENODATA : 0;
        int r = sfs_setxattr(fs, nullptr, real[id], name.c_str(), v.data(), v.size(), fl);
        if (r == -ENOSPC && want == 0)
            return;               // one xattr block per inode: a legal limit
        ASSERT_EQ(r, want) << name;
        if (r == 0)
            xs[name] = v;
    }

    void CheckFile(int id)
    {
        const MInode &mi = m.in.at(id);
        struct sfs_attr a;
        ASSERT_EQ(sfs_getattr(fs, real[id], &a), 0);
        ASSERT_EQ(a.nlink, (uint32_t)mi.nlink) << "inode " << real[id];
        if (mi.type == REG) {
            ASSERT_EQ(a.size, mi.data.size());
            std::string got = Read(real[id], 0, mi.data.size() + 10);
            if (got != mi.data) {
                size_t i = 0;
                while (i < got.size() && i < mi.data.size() && got[i] == mi.data[i])
                    i++;
                size_t j = i;
                while (j < got.size() && j < mi.data.size() && got[j] != mi.data[j])
                    j++;
                FAIL() << "inode " << real[id] << ": data differs from offset " << i
                       << " to " << j << " (size " << mi.data.size() << ")";
            }
        } else if (mi.type == LNK) {
            char buf[5000];
            ssize_t k = sfs_readlink(fs, real[id], buf, sizeof(buf));
            ASSERT_EQ(std::string(buf, k > 0 ? (size_t)k : 0), mi.data);
        } else {
            ASSERT_EQ(a.size, mi.entries.size());
        }
        for (auto &x : mi.xattrs) {
            std::string v(70000, '\0');
            ssize_t k = sfs_getxattr(fs, real[id], x.first.c_str(), &v[0], v.size());
            ASSERT_EQ(k, (ssize_t)x.second.size()) << x.first;
            v.resize((size_t)k);
            ASSERT_EQ(v, x.second);
        }
        ssize_t ln = sfs_listxattr(fs, real[id], nullptr, 0);
        size_t want = 0;
        for (auto &x : mi.xattrs)
            want += x.first.size() + 1;
        ASSERT_EQ(ln, (ssize_t)want);
    }

    void CheckTree(int dir)
    {
        std::map<std::string, uint64_t> got;
        ASSERT_EQ(sfs_readdir(fs, real[dir], 0, [](void *arg, const struct sfs_dirent *de) {
            std::string n(de->name, de->namelen);
            if (n != "." && n != "..")
                (*static_cast<std::map<std::string, uint64_t> *>(arg))[n] = de->ino;
            return 0;
        }, &got), 0);
        const auto &want = m.in.at(dir).entries;
        ASSERT_EQ(got.size(), want.size()) << "directory " << real[dir];
        for (auto &e : want) {
            ASSERT_EQ(got[e.first], real[e.second]) << e.first;
            CheckFile(e.second);
            if (m.in.at(e.second).type == DIR_)
                CheckTree(e.second);
        }
    }

    void Step()
    {
        switch (R(16)) {
        case 0: case 1: OpCreate(REG); break;
        case 2: OpCreate(DIR_); break;
        case 3: OpCreate(LNK); break;
        case 4: case 5: case 6: OpWrite(); break;
        case 7: OpTruncateOrPunch(); break;
        case 8: case 9: OpRemove(false); break;
        case 10: OpRemove(true); break;
        case 11: case 12: OpRename(); break;
        case 13: OpLink(); break;
        default: OpXattr(); break;
        }
    }
};

TEST_F(ModelTest, ThousandsOfRandomOperations)
{
    const char *env = getenv("SFS_MODEL_SEED");
    uint64_t seed = env ? strtoull(env, nullptr, 0) : 20240611;
    printf("model seed %llu (set SFS_MODEL_SEED to repeat)\n", (unsigned long long)seed);
    rng.seed(seed);
    Format(32768, 4096);
    real[0] = SFS_ROOT_INO;
    const int N = 4000;
    for (steps = 0; steps < N; steps++) {
        SCOPED_TRACE("step " + std::to_string(steps) + " seed " + std::to_string(seed));
        ASSERT_NO_FATAL_FAILURE(Step());
        if (steps % 37 == 36) {  // hot files (data journaling) turn cold
            ASSERT_EQ(sfs_probe_checkpoint(fs), 0);
        }
        if (steps % 100 == 99 || getenv("SFS_MODEL_CHECK_ALL")) {
            ASSERT_NO_FATAL_FAILURE(CheckTree(0));
        }
        if (steps % 1000 == 999) {
            Unmount();
            ExpectClean();
            Mount();
            ASSERT_NO_FATAL_FAILURE(CheckTree(0));
        }
    }
}
