// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/comp_channel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace softrdma::verbs {

CompChannel::CompChannel(ibv_context *ctx)
    : ibv_comp_channel{}, efd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)) {
    context = ctx;
    fd = efd_.get();
    refcnt = 0;
}

void CompChannel::notify(Cq *cq) {
    {
        std::lock_guard lk(mu_);
        pending_.push_back(cq);
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(efd_.get(), &one, sizeof one);
}

Cq *CompChannel::wait() {
    for (;;) {
        uint64_t v;
        const ssize_t r = ::read(efd_.get(), &v, sizeof v);
        if (r < 0) {
            if (errno == EINTR) continue;
            return nullptr;
        }
        std::lock_guard lk(mu_);
        if (pending_.empty()) continue;  // the event was withdrawn by a CQ destroy
        Cq *cq = pending_.front();
        pending_.erase(pending_.begin());
        return cq;
    }
}

void CompChannel::forget(Cq *cq) {
    std::lock_guard lk(mu_);
    pending_.erase(std::remove(pending_.begin(), pending_.end(), cq), pending_.end());
}

}  // namespace softrdma::verbs
