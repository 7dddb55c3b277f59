// integrations/rocksdb/cr_session.cc - the file system's libcisc session,
// the queue pair of each thread that uses it (cr_int.h, invariant 2), and
// the device's WAL-check program (cisc_rocksdb.h, invariant 6).
#include "integrations/rocksdb/cr_int.h"

#include <vector>

// The WAL-check program's object (bpf/walcheck.c, compiled by the build),
// linked into the library so that it needs no file at run time.
extern "C" const unsigned char cr_walcheck_obj[], cr_walcheck_obj_end[];
asm(".section .rodata\n"
    ".balign 8\n"
    ".global cr_walcheck_obj\n"
    ".hidden cr_walcheck_obj\n"
    "cr_walcheck_obj:\n"
    ".incbin \"" CR_WALCHECK_OBJ "\"\n"
    ".global cr_walcheck_obj_end\n"
    ".hidden cr_walcheck_obj_end\n"
    "cr_walcheck_obj_end:\n"
    ".previous\n");

namespace cisc::rdb {
namespace {

// The program's name in the device: versioned, because a stored program
// of the same name stays in the image across library upgrades.
constexpr const char *kWalProgName = "rocksdb-walcheck-1";

// The queues this thread made, one per live session. On thread exit the
// destructor gives back those whose session is still open; the others
// went away with their session.
struct ThreadQueues {
    struct Slot {
        std::weak_ptr<Session> owner;
        const Session *key;
        struct cisc_queue *q;
    };
    std::vector<Slot> slots;

    ~ThreadQueues()
    {
        for (Slot &sl : slots)
            if (std::shared_ptr<Session> live = sl.owner.lock())
                cisc_queue_destroy(sl.q);
    }

    // The queue of session key, dropping slots of sessions that closed (a
    // new session may reuse an old one's address).
    struct cisc_queue *Find(const Session *key)
    {
        for (size_t i = 0; i < slots.size();) {
            if (slots[i].owner.expired()) {
                slots[i] = slots.back();
                slots.pop_back();
            } else if (slots[i].key == key) {
                return slots[i].q;
            } else {
                i++;
            }
        }
        return nullptr;
    }
};

thread_local ThreadQueues t_queues;

}  // namespace

int Session::Open(const std::string &mountpoint, std::shared_ptr<Session> *out)
{
    std::shared_ptr<Session> s(new Session());
    int r = cisc_session_open(mountpoint.c_str(), &s->s_);
    if (r)
        return r;
    *out = std::move(s);
    return 0;
}

Session::~Session()
{
    cisc_session_close(s_);   // destroys the queues threads still hold
}

int Session::Queue(struct cisc_queue **q)
{
    if ((*q = t_queues.Find(this)))
        return 0;
    int r = cisc_queue_create(s_, q);
    if (r)
        return r;
    t_queues.slots.push_back({ weak_from_this(), this, *q });
    queues++;
    return 0;
}

uint32_t Session::WalProg()
{
    std::call_once(prog_once_, [this] {
        struct cisc_prog_load_opts o = {};
        o.name = kWalProgName;
        struct cisc_prog_info info;
        size_t size = (size_t)(cr_walcheck_obj_end - cr_walcheck_obj);
        int r = cisc_prog_load(s_, cr_walcheck_obj, size, &o, &info, nullptr, 0);
        if (r == 0)
            prog_ = info.id;
        else if (r == -EEXIST && cisc_prog_id(s_, kWalProgName, &prog_) != 0)
            prog_ = 0;
    });
    return prog_;
}

rocksdb::IOStatus Err(const std::string &fname, int err)
{
    const char *why = cisc_strerror(err);
    if (err == -ENOENT)
        return rocksdb::IOStatus::PathNotFound(fname, why);
    if (err == -EBADMSG)
        return rocksdb::IOStatus::Corruption(fname, why);
    if (err == -ENOSPC)
        return rocksdb::IOStatus::NoSpace(fname, why);
    return rocksdb::IOStatus::IOError(fname, why);
}

}  // namespace cisc::rdb
