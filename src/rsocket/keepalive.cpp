// SPDX-License-Identifier: BSD-2-Clause
#include "rsocket/keepalive.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "rsocket/stream_socket.h"

namespace softrdma::rs {
namespace {

struct Watch {
    std::mutex mu;
    std::vector<std::weak_ptr<StreamSocket>> sockets;
    bool running = false;
};

Watch &watch() {
    static auto *w = std::make_unique<Watch>().release();  // never destroyed
    return *w;
}

[[noreturn]] void run() {
    auto &w = watch();
    std::vector<std::shared_ptr<StreamSocket>> live;
    for (;;) {
        timespec one{1, 0};
        nanosleep(&one, nullptr);
        live.clear();
        {
            std::lock_guard lk(w.mu);
            auto &v = w.sockets;
            v.erase(std::remove_if(v.begin(), v.end(), [](auto &p) { return p.expired(); }),
                    v.end());
            for (auto &p : v)
                if (auto s = p.lock()) live.push_back(std::move(s));
        }
        const uint64_t now = now_ns() / 1'000'000'000;
        for (auto &s : live) s->keepalive_tick(now);
    }
}

}  // namespace

void watch_keepalive(const std::shared_ptr<StreamSocket> &s) {
    auto &w = watch();
    std::lock_guard lk(w.mu);
    for (auto &p : w.sockets)
        if (p.lock() == s) return;
    w.sockets.push_back(s);
    if (w.running) return;
    // The thread lives in other people's processes: no signal of theirs may land on it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread(run).detach();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    w.running = true;
}

}  // namespace softrdma::rs
