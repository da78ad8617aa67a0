// SPDX-License-Identifier: BSD-2-Clause
#include "cm/cm_event.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "cm/cm_id.h"
#include "common/clock.h"
#include "transport/progress_engine.h"

namespace softrdma::cm {

// The eventfd's counter is non-zero while events wait and 0 otherwise (decided under mu_), so
// the fd polls readable exactly when rdma_get_cm_event has something, and a burst of events
// costs one write and one read instead of one of each per event. One exception saves both in
// a connection storm: while a blocking rdma_get_cm_event is looking for the next event without
// sleeping, that call takes it, so it is queued without raising the counter (any left when the
// call returns raise it then).
//
// The write that raises the counter happens after mu_ is released. Only one is under way at a
// time (writing_): a lower that comes first marks it (lower_after_write_) and the writer reads
// the counter back once its write has landed; a raise that comes while the mark is set just
// clears it, since the write under way will make the counter non-zero.
EventChannel::EventChannel() : rdma_event_channel{}, efd_(eventfd(0, EFD_CLOEXEC)) {
    fd = efd_.get();
}

EventChannel::~EventChannel() {
    // A pusher may still be between its write and its last look at mu_.
    for (;;) {
        {
            std::lock_guard lk(mu_);
            if (!writing_) return;
        }
        sched_yield();
    }
}

bool EventChannel::raise_locked() {
    raised_ = true;
    if (writing_) {
        lower_after_write_ = false;
        return false;
    }
    writing_ = true;
    return true;
}

void EventChannel::finish_raise() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(efd_.get(), &one, sizeof one);
    std::lock_guard lk(mu_);
    writing_ = false;
    if (lower_after_write_) {
        lower_after_write_ = false;
        uint64_t v;
        r = ::read(efd_.get(), &v, sizeof v);  // never blocks: the write has landed
    }
}

void EventChannel::lower_locked() {
    raised_ = false;
    if (writing_) {
        lower_after_write_ = true;
        return;
    }
    uint64_t v;
    [[maybe_unused]] ssize_t r = ::read(efd_.get(), &v, sizeof v);  // the counter is non-zero
}

void EventChannel::queue_emptied_locked() {
    queued_.store(false, std::memory_order_relaxed);
    if (raised_) lower_locked();
}

void EventChannel::push(std::unique_ptr<CmEvent> ev) {
    bool write = false;
    {
        std::lock_guard lk(mu_);
        q_.push_back(std::move(ev));
        queued_.store(true, std::memory_order_release);
        if (!raised_ && !spinners_) write = raise_locked();
    }
    if (write) finish_raise();
}

CmEvent *EventChannel::get() {
    for (;;) {
        CmEvent *ev = nullptr;
        bool write = false;
        {
            std::lock_guard lk(mu_);
            if (!q_.empty()) {
                last_taken_ns_.store(now_ns(), std::memory_order_relaxed);
                ev = q_.front().release();
                q_.pop_front();
                if (q_.empty())
                    queue_emptied_locked();
                else if (!raised_)
                    write = raise_locked();  // queued while a call was looking: others must see it
            }
        }
        if (write) finish_raise();
        if (ev) return ev;
        // Nothing yet. The application chose (O_NONBLOCK on the channel's fd) whether to wait;
        // waiting is a poll(), which leaves the counter to whoever takes the event.
        const int fl = fcntl(efd_.get(), F_GETFL);
        if (fl < 0) return nullptr;
        if (fl & O_NONBLOCK) {
            errno = EAGAIN;
            return nullptr;
        }
        // Events of a connection storm come microseconds apart, and a thread asleep in poll()
        // takes ~20 us to wake on these VMs: right after an event, look again for a moment
        // (yielding the CPU between looks) before sleeping. A quiet channel sleeps at once.
        const uint64_t now = now_ns();
        if (within_ns(now, last_taken_ns_.load(std::memory_order_relaxed), kBusyWindowNs)) {
            {
                std::lock_guard lk(mu_);
                ++spinners_;
            }
            const uint64_t until = now + transport::engine_spin_ns();
            while (!queued_.load(std::memory_order_acquire) && now_ns() < until) sched_yield();
            bool found;
            {
                std::lock_guard lk(mu_);
                --spinners_;
                found = !q_.empty();  // taken (or raised, if more remain) at the top
            }
            if (found) continue;
        }
        pollfd p{efd_.get(), POLLIN, 0};
        if (::poll(&p, 1, -1) < 0 && errno != EINTR) return nullptr;
    }
}

void EventChannel::discard_for(const CmId *id) {
    std::lock_guard lk(mu_);
    if (q_.empty()) return;
    for (auto it = q_.begin(); it != q_.end();)
        it = (*it)->owner.get() == id ? q_.erase(it) : it + 1;
    if (q_.empty()) queue_emptied_locked();
}

void EventChannel::discard_all() {
    std::deque<std::unique_ptr<CmEvent>> gone;
    {
        std::lock_guard lk(mu_);
        if (!q_.empty()) queue_emptied_locked();
        gone.swap(q_);
    }  // events (and the ids they keep alive) die outside the lock
}

bool EventChannel::empty() {
    std::lock_guard lk(mu_);
    return q_.empty();
}

}  // namespace softrdma::cm
