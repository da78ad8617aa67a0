// SPDX-License-Identifier: BSD-2-Clause
#include "rsocket/rpoll.h"

#include <time.h>

#include <climits>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "rsocket/socket_table.h"

namespace softrdma::rs {
namespace {

constexpr uint64_t kSpinNs = 10'000;  // look again for this long before sleeping

// One look at everything: rsockets through their state, ordinary fds through poll(0).
int look(pollfd *fds, nfds_t nfds, const std::vector<std::shared_ptr<Socket>> &socks,
         std::vector<pollfd> &plain, std::vector<nfds_t> &plain_at) {
    int n = 0;
    plain.clear();
    plain_at.clear();
    for (nfds_t i = 0; i < nfds; ++i) {
        if (socks[i]) {
            fds[i].revents = socks[i]->ready(fds[i].events);
            if (fds[i].revents) ++n;
        } else {
            fds[i].revents = 0;
            plain.push_back({fds[i].fd, fds[i].events, 0});
            plain_at.push_back(i);
        }
    }
    if (!plain.empty() && ::poll(plain.data(), plain.size(), 0) > 0) {
        for (size_t k = 0; k < plain.size(); ++k) {
            fds[plain_at[k]].revents = plain[k].revents;
            if (plain[k].revents) ++n;
        }
    }
    return n;
}

}  // namespace

int poll_fds(pollfd *fds, nfds_t nfds, int timeout_ms) {
    std::vector<std::shared_ptr<Socket>> socks(nfds);
    bool any_rsocket = false;
    for (nfds_t i = 0; i < nfds; ++i) {
        if (fds[i].fd >= 0) socks[i] = find_socket(fds[i].fd);
        any_rsocket |= socks[i] != nullptr;
    }
    const uint64_t start = now_ns();
    const uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : start + uint64_t(timeout_ms) * 1'000'000ull;
    std::vector<pollfd> plain, kernel;
    std::vector<nfds_t> plain_at;
    for (;;) {
        const int n = look(fds, nfds, socks, plain, plain_at);
        if (n > 0 || timeout_ms == 0) return n;
        const uint64_t now = now_ns();
        if (now >= deadline) return 0;
        if (any_rsocket && now - start < kSpinNs) continue;

        // Sleep on the kernel fds behind each rsocket, next to the ordinary ones.
        kernel.assign(plain.begin(), plain.end());
        for (nfds_t i = 0; i < nfds; ++i)
            if (socks[i]) socks[i]->arm(fds[i].events, kernel);
        bool now_ready = false;
        for (nfds_t i = 0; i < nfds && !now_ready; ++i)
            now_ready = socks[i] && socks[i]->ready(fds[i].events);
        int r = 0;
        if (!now_ready) {
            const uint64_t left = deadline - now_ns();
            const int ms = deadline == UINT64_MAX ? -1
                           : left > uint64_t(INT_MAX) * 1'000'000ull
                               ? INT_MAX
                               : int((left + 999'999) / 1'000'000);
            r = ::poll(kernel.data(), kernel.size(), ms);
        }
        const int e = errno;
        for (nfds_t i = 0; i < nfds; ++i)
            if (socks[i]) socks[i]->disarm();
        if (r < 0) {
            errno = e;
            return -1;
        }
    }
}

int select_fds(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, timeval *timeout) {
    if (nfds < 0 || nfds > FD_SETSIZE) {
        errno = EINVAL;
        return -1;
    }
    std::vector<pollfd> p;
    for (int fd = 0; fd < nfds; ++fd) {
        short ev = 0;
        if (rd && FD_ISSET(fd, rd)) ev |= POLLIN;
        if (wr && FD_ISSET(fd, wr)) ev |= POLLOUT;
        if (ex && FD_ISSET(fd, ex)) ev |= POLLPRI;
        if (ev) p.push_back({fd, ev, 0});
    }
    const int ms = timeout ? int(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000) : -1;
    const int r = poll_fds(p.data(), p.size(), ms);
    if (r < 0) return -1;
    if (rd) FD_ZERO(rd);
    if (wr) FD_ZERO(wr);
    if (ex) FD_ZERO(ex);
    int n = 0;
    for (const auto &q : p) {
        if (q.revents & POLLNVAL) {
            errno = EBADF;
            return -1;
        }
        if (rd && (q.revents & (POLLIN | POLLHUP | POLLERR)) && (q.events & POLLIN)) {
            FD_SET(q.fd, rd);
            ++n;
        }
        if (wr && (q.revents & (POLLOUT | POLLERR | POLLHUP)) && (q.events & POLLOUT)) {
            FD_SET(q.fd, wr);
            ++n;
        }
        if (ex && (q.revents & POLLPRI) && (q.events & POLLPRI)) {
            FD_SET(q.fd, ex);
            ++n;
        }
    }
    if (timeout && r == 0) *timeout = {0, 0};
    return n;
}

}  // namespace softrdma::rs
