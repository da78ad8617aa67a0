// SPDX-License-Identifier: BSD-2-Clause
// epoll over rsockets: the kernel's epoll instance keeps the ordinary descriptors; the
// rsockets a program adds are kept here, beside it. A wait looks at both through rpoll (the
// epoll descriptor is an ordinary one to it, readable when a kernel member is ready), then
// takes the kernel's events with a zero timeout. Readiness is level-triggered: an
// edge-triggered program (EPOLLET) reads until EAGAIN anyway, so it is only woken more often.
#include <poll.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <sys/epoll.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "preload/epoll_calls.h"
#include "preload/fd_table.h"
#include "preload/real_calls.h"

using softrdma::preload::real;
using softrdma::preload::rsocket_of;

namespace softrdma::preload {
namespace {

struct Member {
    epoll_event ev;
};

// epoll descriptor -> its rsocket members, by the application's descriptor.
struct Sets {
    std::mutex mu;
    std::unordered_map<int, std::map<int, Member>> by_epfd;
    std::atomic<bool> any{false};  // by_epfd is not empty: close() must look
};

Sets &sets() {
    static auto *s = std::make_unique<Sets>().release();  // never destroyed
    return *s;
}

uint64_t now_ms() {
    return now_ns() / 1'000'000;
}

short to_poll(uint32_t ev) {
    short p = 0;
    if (ev & (EPOLLIN | EPOLLRDHUP)) p |= POLLIN;
    if (ev & EPOLLOUT) p |= POLLOUT;
    if (ev & EPOLLPRI) p |= POLLPRI;
    return p;
}

uint32_t to_epoll(short p, uint32_t wanted) {
    uint32_t e = 0;
    if (p & POLLIN) e |= EPOLLIN;
    if (p & POLLOUT) e |= EPOLLOUT;
    if (p & POLLPRI) e |= EPOLLPRI;
    if (p & POLLERR) e |= EPOLLERR;
    if (p & POLLHUP) e |= EPOLLHUP | (wanted & EPOLLRDHUP);
    return e & (wanted | EPOLLERR | EPOLLHUP);
}

}  // namespace

void forget_epoll_member(int fd) {
    auto &s = sets();
    std::lock_guard lk(s.mu);
    for (auto &[epfd, members] : s.by_epfd) members.erase(fd);
}

bool forget_epoll_set(int epfd) {
    auto &s = sets();
    std::lock_guard lk(s.mu);
    const bool had = s.by_epfd.erase(epfd) != 0;
    s.any.store(!s.by_epfd.empty(), std::memory_order_relaxed);
    return had;
}

bool any_epoll_sets() {
    return sets().any.load(std::memory_order_relaxed);
}

}  // namespace softrdma::preload

namespace {

int wait_common(int epfd, epoll_event *events, int maxevents, int timeout, const sigset_t *mask) {
    using softrdma::preload::Member;
    if (maxevents <= 0) {
        errno = EINVAL;
        return -1;
    }
    auto &s = softrdma::preload::sets();
    static thread_local std::vector<std::pair<int, Member>> members;
    static thread_local std::vector<pollfd> p;
    const uint64_t deadline =
        timeout < 0 ? UINT64_MAX : softrdma::preload::now_ms() + uint64_t(timeout);
    for (;;) {
        members.clear();
        {
            std::lock_guard lk(s.mu);
            auto it = s.by_epfd.find(epfd);
            if (it != s.by_epfd.end())
                for (const auto &m : it->second)
                    if (m.second.ev.events) members.emplace_back(m.first, m.second);
        }
        if (members.empty()) {
            const int left =
                deadline == UINT64_MAX
                    ? -1
                    : int(std::min<uint64_t>(
                          INT_MAX, deadline - std::min(deadline, softrdma::preload::now_ms())));
            return mask ? real().epoll_pwait(epfd, events, maxevents, left, mask)
                        : real().epoll_wait(epfd, events, maxevents, left);
        }
        p.clear();
        for (const auto &[fd, m] : members) {
            const int rs = rsocket_of(fd);
            p.push_back({rs, softrdma::preload::to_poll(m.ev.events), 0});
        }
        p.push_back({epfd, POLLIN, 0});
        const uint64_t now = softrdma::preload::now_ms();
        const int left = deadline == UINT64_MAX
                             ? -1
                             : int(std::min<uint64_t>(INT_MAX, deadline - std::min(deadline, now)));
        const int r = rpoll(p.data(), p.size(), left);
        if (r < 0) return -1;
        int n = 0;
        for (size_t i = 0; i < members.size() && n < maxevents; ++i) {
            const uint32_t e =
                softrdma::preload::to_epoll(p[i].revents, members[i].second.ev.events);
            if (!e) continue;
            events[n].events = e;
            events[n].data = members[i].second.ev.data;
            ++n;
            if (members[i].second.ev.events & EPOLLONESHOT) {
                std::lock_guard lk(s.mu);
                auto it = s.by_epfd.find(epfd);
                if (it != s.by_epfd.end()) {
                    auto m = it->second.find(members[i].first);
                    if (m != it->second.end()) m->second.ev.events = 0;  // until EPOLL_CTL_MOD
                }
            }
        }
        if (n < maxevents && (p.back().revents & POLLIN)) {
            const int k = real().epoll_wait(epfd, events + n, maxevents - n, 0);
            if (k > 0) n += k;
        }
        if (n > 0 || r == 0 || softrdma::preload::now_ms() >= deadline) return n;
    }
}

}  // namespace

extern "C" {

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
    if (rsocket_of(fd) < 0) return real().epoll_ctl(epfd, op, fd, ev);
    auto &s = softrdma::preload::sets();
    std::lock_guard lk(s.mu);
    auto &members = s.by_epfd[epfd];
    s.any.store(true, std::memory_order_relaxed);
    auto it = members.find(fd);
    switch (op) {
        case EPOLL_CTL_ADD:
            if (it != members.end()) {
                errno = EEXIST;
                return -1;
            }
            if (!ev) {
                errno = EFAULT;
                return -1;
            }
            members[fd] = {*ev};
            return 0;
        case EPOLL_CTL_MOD:
            if (it == members.end()) {
                errno = ENOENT;
                return -1;
            }
            if (!ev) {
                errno = EFAULT;
                return -1;
            }
            it->second.ev = *ev;
            return 0;
        case EPOLL_CTL_DEL:
            if (it == members.end()) {
                errno = ENOENT;
                return -1;
            }
            members.erase(it);
            return 0;
        default:
            errno = EINVAL;
            return -1;
    }
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    return wait_common(epfd, events, maxevents, timeout, nullptr);
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                const sigset_t *mask) {
    return wait_common(epfd, events, maxevents, timeout, mask);
}

}  // extern "C"
