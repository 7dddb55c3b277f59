// integrations/common/ci_files.cc - names mapped onto the mount, the
// name-space calls, opening files, reads and the table files held in
// memory (ci_common.h, invariants 3 and 7).
#include "integrations/common/ci_common.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace cisc::integ {
namespace {

int CollectName(void *arg, const struct cisc_dirent *de)
{
    std::string n = de->name;
    if (n != "." && n != "..")
        static_cast<std::vector<std::string> *>(arg)->push_back(n);
    return 0;
}

// Runs fn(the calling thread's queue of s). Returns its result or -errno.
template <typename F> int OnQueue(Session &s, F fn)
{
    struct cisc_queue *q;
    int r = s.Queue(&q);
    return r ? r : fn(q);
}

// The same after the session's write-behind ops completed (ci_common.h,
// invariant 5): for the calls that read what the store wrote.
template <typename F> int Settled(Session &s, F fn)
{
    s.Settle();
    return OnQueue(s, fn);
}

// Reads fh whole into *out if the budget has room for its size. Returns 1
// when it did, 0 when over budget, or -errno.
int LoadWhole(Session &s, uint64_t fh, std::string *out)
{
    struct stat st;
    int r = Settled(s, [&](struct cisc_queue *q) { return cisc_fstat(q, fh, &st); });
    if (r)
        return r;
    uint64_t size = (uint64_t)st.st_size;
    if (s.held_bytes.fetch_add(size) + size > kHeldMax) {
        s.held_bytes -= size;
        return 0;
    }
    out->resize((size_t)size);
    ssize_t k = ReadAt(s, fh, &(*out)[0], (size_t)size, 0);
    if (k < 0 || (uint64_t)k != size) {
        s.held_bytes -= size;
        return k < 0 ? (int)k : -EIO;   // shorter than its size: changing under us
    }
    return 1;
}

}  // namespace

int Mount::Canon(const std::string &mountpoint, std::string *out)
{
    char real[PATH_MAX];
    if (!realpath(mountpoint.c_str(), real))
        return -errno;
    *out = real;
    if (*out == "/")
        out->clear();
    return 0;
}

// Names with ".." components are left to the kernel (they may leave the
// mount), as `cisc exec` does.
bool Mount::Map(const std::string &name, std::string *dpath) const
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

int Mount::Exists(const std::string &dpath)
{
    struct stat st;
    return Settled(*s_, [&](struct cisc_queue *q) { return cisc_stat(q, dpath.c_str(), &st); });
}

int Mount::List(const std::string &dpath, std::vector<std::string> *names)
{
    names->clear();
    return Settled(*s_, [&](struct cisc_queue *q) {
        return cisc_readdir(q, dpath.c_str(), CollectName, names);
    });
}

int Mount::Unlink(const std::string &dpath)
{
    return Settled(*s_, [&](struct cisc_queue *q) { return cisc_unlink(q, dpath.c_str()); });
}

int Mount::Mkdir(const std::string &dpath, bool if_missing)
{
    return OnQueue(*s_, [&](struct cisc_queue *q) {
        struct stat st;
        int r = cisc_mkdir(q, dpath.c_str(), 0755);
        if (r == -EEXIST && if_missing && cisc_stat(q, dpath.c_str(), &st) == 0)
            r = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
        return r;
    });
}

int Mount::Rmdir(const std::string &dpath)
{
    return OnQueue(*s_, [&](struct cisc_queue *q) { return cisc_rmdir(q, dpath.c_str()); });
}

int Mount::Size(const std::string &dpath, uint64_t *size)
{
    struct stat st;
    int r = Settled(*s_, [&](struct cisc_queue *q) { return cisc_stat(q, dpath.c_str(), &st); });
    *size = r == 0 ? (uint64_t)st.st_size : 0;
    return r;
}

int Mount::Rename(const std::string &from, const std::string &to)
{
    return Settled(*s_, [&](struct cisc_queue *q) {
        return cisc_rename(q, from.c_str(), to.c_str(), 0);
    });
}

int OpenHandle(Session &s, const std::string &dpath, int flags, uint64_t *fh)
{
    return OnQueue(s, [&](struct cisc_queue *q) {
        return cisc_open(q, dpath.c_str(), flags, 0644, fh);
    });
}

void CloseHandle(Session &s, uint64_t fh)
{
    OnQueue(s, [&](struct cisc_queue *q) { return cisc_close(q, fh); });
}

ssize_t ReadAt(Session &s, uint64_t fh, char *buf, size_t n, uint64_t off)
{
    struct cisc_queue *q;
    s.Settle();
    int r = s.Queue(&q);
    if (r)
        return r;
    size_t got = 0;
    while (got < n) {
        ssize_t k = cisc_pread(q, fh, buf + got, std::min(n - got, kChunk), off + got);
        if (k < 0)
            return k;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

size_t Held::At(uint64_t off, size_t n, const char **p) const
{
    size_t at = (size_t)std::min<uint64_t>(off, data_.size());
    *p = data_.data() + at;
    return std::min(n, data_.size() - at);
}

int OpenRandom(const std::shared_ptr<Session> &s, const std::string &dpath, bool whole,
               uint64_t *fh, std::unique_ptr<Held> *held)
{
    int r = OpenHandle(*s, dpath, O_RDONLY, fh);
    if (r || !whole)
        return r;
    std::string data;
    r = LoadWhole(*s, *fh, &data);
    if (r == 0)
        return 0;
    CloseHandle(*s, *fh);
    if (r > 0)
        held->reset(new Held(s, std::move(data)));
    return r;
}

int OpenWritable(Session &s, const std::string &dpath, bool append, uint64_t *fh, uint64_t *end)
{
    s.Settle();   // its size, or a truncation, after the writes in flight
    int r = OpenHandle(s, dpath, O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC), fh);
    struct stat st = {};
    if (r == 0 && append &&
        (r = OnQueue(s, [&](struct cisc_queue *q) { return cisc_fstat(q, *fh, &st); })) != 0)
        CloseHandle(s, *fh);
    *end = (uint64_t)st.st_size;
    return r;
}

}  // namespace cisc::integ
