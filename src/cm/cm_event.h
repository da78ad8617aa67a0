// SPDX-License-Identifier: BSD-2-Clause
// CM event channels: a pollable fd (an eventfd, readable while events wait) and the queue of events
// the application reads with rdma_get_cm_event.
#pragma once
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "common/adaptive_mutex.h"
#include "common/unique_fd.h"

namespace softrdma::cm {

class CmId;

// What the application receives; the private data lives inside the event.
struct CmEvent : rdma_cm_event {
    uint8_t pd_buf[256];
    std::shared_ptr<CmId> owner;   // keeps the id alive until the event is acked
    std::shared_ptr<CmId> new_id;  // CONNECT_REQUEST: the id the event created
};

class EventChannel : public rdma_event_channel {
  public:
    EventChannel();
    ~EventChannel();
    EventChannel(const EventChannel &) = delete;
    EventChannel &operator=(const EventChannel &) = delete;
    static EventChannel *from(rdma_event_channel *c) { return static_cast<EventChannel *>(c); }
    void push(std::unique_ptr<CmEvent> ev);
    // Blocks unless the fd is non-blocking (then nullptr with errno EAGAIN).
    CmEvent *get();
    // Drops queued, not yet delivered events of an id that is being destroyed.
    void discard_for(const CmId *id);
    // Drops every queued event (the channel is being destroyed).
    void discard_all();
    bool empty();

  private:
    // Raising is decided under mu_ but written after it is released: the write wakes the
    // reader, which at once wants mu_ (on a pinned process the woken thread preempts the
    // writer, finds the lock held, and sleeps again: two more switches per event).
    [[nodiscard]] bool raise_locked();
    void finish_raise();
    void lower_locked();
    void queue_emptied_locked();
    static constexpr uint64_t kBusyWindowNs = 1'000'000;  // "right after an event"
    std::atomic<bool> queued_{false};                     // q_ is not empty (read without mu_)
    bool raised_ = false;             // the counter is, or is about to be, non-zero (under mu_)
    bool writing_ = false;            // a raise's write is under way (under mu_)
    bool lower_after_write_ = false;  // lowered while writing_: the writer reads it back
    int spinners_ = 0;                // get() calls looking without sleeping (under mu_)
    std::atomic<uint64_t> last_taken_ns_{0};  // when get() last returned an event
    UniqueFd efd_;
    AdaptiveMutex mu_;
    std::deque<std::unique_ptr<CmEvent>> q_;
};

}  // namespace softrdma::cm
