// SPDX-License-Identifier: BSD-2-Clause
#include "rsocket/keepalive.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "rsocket/stream_socket.h"

namespace softrdma::rs {
namespace {

struct Watch {
    std::mutex mu;
    std::vector<std::weak_ptr<StreamSocket>> sockets;
    bool running = false;
};

Watch &watch() {
    alignas(Watch) static unsigned char storage[sizeof(Watch)];
    static Watch *w = std::construct_at(reinterpret_cast<Watch *>(storage));
    return *w;
}

uint64_t now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec);
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
        const uint64_t now = now_s();
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
