// SPDX-License-Identifier: BSD-2-Clause
#include "transport/progress_engine.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "common/clock.h"
#include "common/unique_fd.h"

namespace softrdma::transport {

namespace {

// Every CM id and QP connection is a socket, where the kernel's rdma_cm uses none. Each time
// a multi-threaded process outgrows its fd table (256, 512, 1024, ... entries) the kernel
// waits out an RCU grace period inside socket()/accept(): 7-30 ms measured here, a stall in
// the middle of opening connections (and most of rdma_resolve_addr's time over 1,000 ids).
// So the table grows once, before the engine's thread exists (a process with one thread
// grows it without waiting), to what the fd limit allows up to 4,096 entries: 32 KiB of
// kernel memory.
constexpr rlim_t kFdTablePresize = 4096;

void presize_fd_table(int any_fd) {
    rlimit rl{};
    if (any_fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    const rlim_t want = std::min(rl.rlim_cur, kFdTablePresize);
    if (want <= 256) return;  // the table every process starts with
    // The lowest free fd at or above want - 1: the table must reach it. Closed at once.
    UniqueFd high(fcntl(any_fd, F_DUPFD_CLOEXEC, int(want - 1)));
}

}  // namespace

ProgressEngine &ProgressEngine::get() {
    // Deliberately never destroyed: application threads may still call into the library
    // while static destructors run at exit.
    static ProgressEngine *engine = std::make_unique<ProgressEngine>().release();
    return *engine;
}

ProgressEngine::ProgressEngine()
    : epfd_(epoll_create1(EPOLL_CLOEXEC)), wakefd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wakefd_.get();
    epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, wakefd_.get(), &ev);
    presize_fd_table(wakefd_.get());
    // Our thread lives in other people's processes: it must never be the one a process-directed
    // signal lands on (a server that blocks SIGTERM everywhere to sigwait() for it would lose
    // it to us). Blocked before the thread exists, so it is never without the mask.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_setname_np(thread_.native_handle(), "softrdma-prog");
}

ProgressEngine::~ProgressEngine() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
        note_news();
    }
    wake();
    if (thread_.joinable()) thread_.join();
}

bool ProgressEngine::watch(int fd, const std::shared_ptr<Pollable> &owner, uint32_t events) {
    bool known;
    {
        std::lock_guard lk(mu_);
        auto [it, added] = owners_.try_emplace(fd, owner);
        if (!added) it->second = owner;
        known = !added;
    }
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    // A socket handed over still registered (a finished MPA exchange) takes one MOD. An entry
    // may also be left from a socket closed while registered (the kernel dropped it): ADD then.
    const int first = known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(epfd_.get(), first, fd, &ev) == 0) return true;
    if (errno == (known ? ENOENT : EEXIST) &&
        epoll_ctl(epfd_.get(), known ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) == 0)
        return true;
    const int err = errno;
    std::lock_guard lk(mu_);
    owners_.erase(fd);
    errno = err;
    return false;
}

bool ProgressEngine::rearm(int fd, const std::shared_ptr<Pollable> &owner, uint32_t events) {
    {
        std::lock_guard lk(mu_);
        owners_[fd] = owner;
    }
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epfd_.get(), EPOLL_CTL_MOD, fd, &ev) == 0;
}

void ProgressEngine::unwatch(int fd) {
    epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, fd, nullptr);
    std::lock_guard lk(mu_);
    owners_.erase(fd);
}

void ProgressEngine::schedule(const std::shared_ptr<Pollable> &owner, uint64_t deadline_ns) {
    bool earliest;
    {
        std::lock_guard lk(mu_);
        earliest = sleeping_ && (timers_.empty() || deadline_ns < timers_.top().deadline);
        timers_.push({deadline_ns, owner});
        note_news();
    }
    if (earliest) wake();
}

void ProgressEngine::spin(const std::shared_ptr<Pollable> &owner) {
    bool sleeping;
    {
        std::lock_guard lk(mu_);
        spin_new_.push_back(owner);
        note_news();
        sleeping = sleeping_;
    }
    if (sleeping) wake();
}

void ProgressEngine::run_spinners() {
    for (size_t i = 0; i < spinners_.size();) {
        const std::shared_ptr<Pollable> owner = spinners_[i].lock();
        if (owner && owner->on_spin()) {
            ++i;
            continue;
        }
        spinners_[i] = std::move(spinners_.back());
        spinners_.pop_back();
    }
}

void ProgressEngine::post(std::function<void()> task) {
    bool sleeping;
    {
        std::lock_guard lk(mu_);
        tasks_.push_back(std::move(task));
        note_news();
        sleeping = sleeping_;
    }
    if (sleeping) wake();
}

void ProgressEngine::run_tasks() {
    for (auto &t : running_) t();
    running_.clear();
}

// Takes what other threads added since the engine last looked (spinners, tasks, an earlier
// timer), and ends a sleep. Producers set news_ under mu_, so one that adds after the lock
// below sets it again for the next turn. False: the engine is to stop.
bool ProgressEngine::take_news(bool slept) {
    if (!slept && !news_.load(std::memory_order_acquire)) return true;
    news_.store(false, std::memory_order_relaxed);
    std::lock_guard lk(mu_);
    sleeping_ = false;
    if (stop_) return false;
    for (auto &w : spin_new_) spinners_.push_back(std::move(w));
    spin_new_.clear();
    running_.swap(tasks_);  // running_ is empty: run_tasks cleared it
    next_deadline_ = earliest_deadline();
    return true;
}

void ProgressEngine::wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wakefd_.get(), &one, sizeof one);
}

// The wait's timeout; a non-zero one marks the engine as sleeping until it looks again.
int64_t ProgressEngine::next_timeout_ns() {
    std::lock_guard lk(mu_);
    if (!tasks_.empty() || !spin_new_.empty() || !spinners_.empty()) {
        sleeping_ = false;
        return 0;
    }
    int64_t t = -1;
    if (!timers_.empty()) {
        const uint64_t now = now_ns();
        const uint64_t d = timers_.top().deadline;
        t = d <= now ? 0 : int64_t(std::min<uint64_t>(d - now, uint64_t(INT64_MAX)));
    }
    sleeping_ = t != 0;
    return t;
}

// Waits for events until `timeout_ns` (-1: no limit). Timers need microseconds (a send held
// back for batching leaves within tens of them), finer than epoll_wait's milliseconds:
// epoll_pwait2 where the kernel has it (5.11), else epoll_wait rounded up.
int ProgressEngine::wait(epoll_event *events, int max, int64_t timeout_ns) {
    if (have_pwait2_) {
        timespec ts{};
        if (timeout_ns >= 0) {
            ts.tv_sec = time_t(timeout_ns / 1'000'000'000);
            ts.tv_nsec = long(timeout_ns % 1'000'000'000);
        }
        const int n =
            epoll_pwait2(epfd_.get(), events, max, timeout_ns < 0 ? nullptr : &ts, nullptr);
        if (n >= 0 || errno != ENOSYS) return n;
        have_pwait2_ = false;
    }
    const int64_t ms = timeout_ns < 0 ? -1 : (timeout_ns + 999'999) / 1'000'000;
    return epoll_wait(epfd_.get(), events, max, ms > INT_MAX ? INT_MAX : int(ms));
}

void ProgressEngine::fire_due_timers() {
    const uint64_t now = now_ns();
    if (now < next_deadline_) return;  // an earlier timer added since would have set news_
    for (;;) {
        std::shared_ptr<Pollable> owner;
        {
            std::lock_guard lk(mu_);
            next_deadline_ = earliest_deadline();
            if (next_deadline_ > now) return;
            owner = timers_.top().owner.lock();
            timers_.pop();
        }
        if (owner) owner->on_timer();
    }
}

// How long the engine keeps polling after socket activity before it sleeps in epoll_wait.
// A sleeping thread takes ~20 us to wake on these VMs, several TCP round trips: a READ or
// atomic served by the engine (its target does not poll) would pay that every time, where
// a NIC answers at once. SOFTRDMA_ENGINE_SPIN_US overrides it; 0 turns spinning off.
uint64_t engine_spin_ns() {
    const char *v = std::getenv("SOFTRDMA_ENGINE_SPIN_US");
    if (!v || !*v) return kDefaultSpinUs * 1000;
    char *end = nullptr;
    const unsigned long us = std::strtoul(v, &end, 10);
    if (*end || us > 1'000'000) return kDefaultSpinUs * 1000;
    return uint64_t(us) * 1000;
}

void ProgressEngine::run() {
    const uint64_t spin_ns = engine_spin_ns();
    uint64_t spin_until = 0, last_wait = 0;
    epoll_event events[64];
    for (;;) {
        const uint64_t now = now_ns();
        const bool spinning = spin_ns && now < spin_until;
        // With spinners the engine does not sleep: no need to look at the rest under mu_.
        const int64_t timeout = spinning || !spinners_.empty() ? 0 : next_timeout_ns();
        // A QP reading its shared-memory ring is a spinner (spin()): the engine turns through
        // it back to back, and a zero-timeout epoll_pwait2 on every turn took a quarter of this
        // thread (a 64 B WRITE stream). With only work due (not the spin after socket
        // activity, which is for socket events), sockets are looked at every kWaitEveryNs: an
        // event waits at most that long, far less than a wake-up.
        int n = 0;
        if (timeout != 0 || spinning || !within_ns(now, last_wait, kWaitEveryNs)) {
            n = wait(events, 64, timeout);
            last_wait = now;
        }
        if (!take_news(timeout != 0)) return;
        bool io = false;
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == wakefd_.get()) {
                uint64_t v;
                [[maybe_unused]] ssize_t r = ::read(fd, &v, sizeof v);
                continue;
            }
            std::shared_ptr<Pollable> owner;
            {
                std::lock_guard lk(mu_);
                auto it = owners_.find(fd);
                if (it != owners_.end()) owner = it->second.lock();
            }
            if (owner) owner->on_io(events[i].events);
            io = true;
        }
        fire_due_timers();
        run_tasks();
        run_spinners();
        if (io) {
            spin_until = now_ns() + spin_ns;
        } else if (spinning) {
            sched_yield();  // a thread of the application sharing this CPU goes first
        }
    }
}

}  // namespace softrdma::transport
