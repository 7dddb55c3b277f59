// integrations/common/ci_session.cc - the libcisc session of a store and
// the queue pair of each thread that uses it (ci_common.h, invariant 2).
#include "integrations/common/ci_common.h"

namespace cisc::integ {
namespace {

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

int Session::Connect(const std::string &mountpoint)
{
    return cisc_session_open(mountpoint.c_str(), &s_);
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

}  // namespace cisc::integ
