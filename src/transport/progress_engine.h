// SPDX-License-Identifier: BSD-2-Clause
// The process-wide progress engine: one background thread on epoll that keeps one-sided
// operations and connection setup moving while the application is not in the library.
// Application threads that poll CQs drive their own QPs; this thread is the fallback.
#pragma once
#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/unique_fd.h"

namespace softrdma::transport {

// Something the engine can call back: a socket owner, a listener, a timer user.
class Pollable {
  public:
    virtual ~Pollable() = default;
    virtual void on_io(uint32_t epoll_events) = 0;
    virtual void on_timer() {}
    // Called on every turn of the engine after spin(), until it returns false.
    virtual bool on_spin() { return false; }
};

// Microseconds the engine polls on after socket activity (SOFTRDMA_ENGINE_SPIN_US), and keeps
// reading a shared-memory ring nobody polls after frames last came through it.
inline constexpr uint64_t kDefaultSpinUs = 50;
uint64_t engine_spin_ns();

class ProgressEngine {
  public:
    static ProgressEngine &get();

    // Registers `fd` (or takes over its registration, if a previous owner left it registered);
    // the engine holds only a weak reference, so an owner that dies is simply skipped.
    // Returns false (errno set) if epoll refuses the fd.
    bool watch(int fd, const std::shared_ptr<Pollable> &owner, uint32_t events);
    bool rearm(int fd, const std::shared_ptr<Pollable> &owner, uint32_t events);
    void unwatch(int fd);
    // One-shot timer: owner->on_timer() at or after `deadline_ns` (CLOCK_MONOTONIC).
    void schedule(const std::shared_ptr<Pollable> &owner, uint64_t deadline_ns);
    // owner->on_spin() on every turn until it returns false: for an owner that looks at
    // memory (a shared-memory ring nobody polls) for a while, without a timer per turn.
    // The caller registers an owner at most once until its on_spin() has returned false.
    void spin(const std::shared_ptr<Pollable> &owner);
    // Runs `task` on the engine thread, outside every lock its caller holds.
    void post(std::function<void()> task);

    ProgressEngine();
    ~ProgressEngine();
    ProgressEngine(const ProgressEngine &) = delete;
    ProgressEngine &operator=(const ProgressEngine &) = delete;

  private:
    struct Timer {
        uint64_t deadline;
        std::weak_ptr<Pollable> owner;
        bool operator>(const Timer &o) const { return deadline > o.deadline; }
    };
    void run();
    void wake();
    // Marks that tasks, spinners, timers or stop_ changed: the engine takes mu_ on its next turn.
    void note_news() { news_.store(true, std::memory_order_release); }
    bool take_news(bool slept);
    int64_t next_timeout_ns();
    // The earliest timer's deadline, UINT64_MAX if none. mu_ held.
    uint64_t earliest_deadline() const {
        return timers_.empty() ? UINT64_MAX : timers_.top().deadline;
    }
    static constexpr uint64_t kWaitEveryNs = 5'000;  // while work is due, see run()
    int wait(epoll_event *events, int max, int64_t timeout_ns);
    void fire_due_timers();
    void run_tasks();
    void run_spinners();

    UniqueFd epfd_;
    UniqueFd wakefd_;
    std::mutex mu_;
    std::unordered_map<int, std::weak_ptr<Pollable>> owners_;
    std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
    std::vector<std::function<void()>> tasks_;
    // Weak, as the timers: an owner that dies is dropped. spin_new_ under mu_; spinners_ is
    // the engine thread's own.
    std::vector<std::weak_ptr<Pollable>> spin_new_;
    std::vector<std::weak_ptr<Pollable>> spinners_;
    std::vector<std::function<void()>> running_;  // the engine thread's: tasks taken from tasks_
    // A turn of a spinning engine takes no lock unless something was added since the last
    // one that did (a turn took five lock pairs, a third of its time, with a 64 B WRITE stream).
    std::atomic<bool> news_{false};
    uint64_t next_deadline_ = 0;  // the engine thread's: the earliest timer when it last looked
    std::thread thread_;
    bool stop_ = false;
    // The engine sleeps (or is about to) with a timeout chosen before the newest timer or
    // task: only then does adding one need a wake-up. Under mu_.
    bool sleeping_ = false;
    bool have_pwait2_ = true;  // engine thread only
};

}  // namespace softrdma::transport
