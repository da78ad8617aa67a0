#include "cm/cm_event.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "cm/cm_id.h"

namespace softrdma::cm {

EventChannel::EventChannel() : rdma_event_channel{}, efd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)) {
    fd = efd_.get();
}

void EventChannel::push(std::unique_ptr<CmEvent> ev) {
    {
        std::lock_guard lk(mu_);
        q_.push_back(std::move(ev));
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(efd_.get(), &one, sizeof one);
}

CmEvent *EventChannel::get() {
    for (;;) {
        uint64_t v;
        if (::read(efd_.get(), &v, sizeof v) < 0) {
            if (errno == EINTR) continue;
            return nullptr;
        }
        std::lock_guard lk(mu_);
        if (q_.empty()) continue;  // the event was discarded with its id
        CmEvent *ev = q_.front().release();
        q_.pop_front();
        return ev;
    }
}

void EventChannel::discard_for(const CmId *id) {
    std::lock_guard lk(mu_);
    for (auto it = q_.begin(); it != q_.end();)
        it = (*it)->owner.get() == id ? q_.erase(it) : it + 1;
}

void EventChannel::discard_all() {
    std::deque<std::unique_ptr<CmEvent>> gone;
    {
        std::lock_guard lk(mu_);
        gone.swap(q_);
    }  // events (and the ids they keep alive) die outside the lock
}

bool EventChannel::empty() {
    std::lock_guard lk(mu_);
    return q_.empty();
}

}  // namespace softrdma::cm
