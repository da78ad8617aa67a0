// SPDX-License-Identifier: BSD-2-Clause
// Completion channel: a real pollable fd (an eventfd in semaphore mode, one count per event)
// plus the queue of CQs whose events are waiting to be read.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "common/unique_fd.h"

namespace softrdma::verbs {

class Cq;

class CompChannel : public ibv_comp_channel {
  public:
    explicit CompChannel(ibv_context *ctx);
    static CompChannel *from(ibv_comp_channel *c) { return static_cast<CompChannel *>(c); }

    void attach() { users_.fetch_add(1); }
    void detach() { users_.fetch_sub(1); }
    bool busy() const { return users_.load() > 0; }

    void notify(Cq *cq);
    // Blocks unless the fd is non-blocking; -1/EAGAIN when empty in that mode.
    Cq *wait();
    // Drops pending events of a CQ being destroyed.
    void forget(Cq *cq);

  private:
    UniqueFd efd_;
    std::mutex mu_;
    std::vector<Cq *> pending_;
    std::atomic<int> users_{0};
};

}  // namespace softrdma::verbs
