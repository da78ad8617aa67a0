// SPDX-License-Identifier: BSD-2-Clause
// poll() and select() over a mix of rsockets and ordinary descriptors: the placeholders are
// swapped for their rsockets and rpoll waits on both kinds at once.
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/select.h>

#include <cerrno>
#include <vector>

#include "preload/fd_table.h"
#include "preload/real_calls.h"

using softrdma::preload::real;
using softrdma::preload::rsocket_of;

extern "C" {

int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
    bool any = false;
    for (nfds_t i = 0; i < nfds && !any; ++i) any = rsocket_of(fds[i].fd) >= 0;
    if (!any) return real().poll(fds, nfds, timeout);
    static thread_local std::vector<pollfd> p;
    p.assign(fds, fds + nfds);
    for (auto &q : p) {
        const int rs = rsocket_of(q.fd);
        if (rs >= 0) q.fd = rs;
    }
    const int r = rpoll(p.data(), nfds, timeout);
    if (r < 0) return r;
    for (nfds_t i = 0; i < nfds; ++i) fds[i].revents = p[i].revents;
    return r;
}

int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout) {
    if (nfds < 0 || nfds > FD_SETSIZE) {
        errno = EINVAL;
        return -1;
    }
    bool any = false;
    for (int fd = 0; fd < nfds && !any; ++fd)
        if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) || (ex && FD_ISSET(fd, ex)))
            any = rsocket_of(fd) >= 0;
    if (!any) return real().select(nfds, rd, wr, ex, timeout);
    static thread_local std::vector<pollfd> p;
    static thread_local std::vector<int> app;
    p.clear();
    app.clear();
    for (int fd = 0; fd < nfds; ++fd) {
        short ev = 0;
        if (rd && FD_ISSET(fd, rd)) ev |= POLLIN;
        if (wr && FD_ISSET(fd, wr)) ev |= POLLOUT;
        if (ex && FD_ISSET(fd, ex)) ev |= POLLPRI;
        if (!ev) continue;
        const int rs = rsocket_of(fd);
        p.push_back({rs >= 0 ? rs : fd, ev, 0});
        app.push_back(fd);
    }
    const int ms = timeout ? int(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000) : -1;
    const int r = rpoll(p.data(), p.size(), ms);
    if (r < 0) return -1;
    for (const auto &q : p)
        if (q.revents & POLLNVAL) {
            errno = EBADF;
            return -1;
        }
    if (rd) FD_ZERO(rd);
    if (wr) FD_ZERO(wr);
    if (ex) FD_ZERO(ex);
    int n = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const short re = p[i].revents, ev = p[i].events;
        if (rd && (ev & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR))) {
            FD_SET(app[i], rd);
            ++n;
        }
        if (wr && (ev & POLLOUT) && (re & (POLLOUT | POLLHUP | POLLERR))) {
            FD_SET(app[i], wr);
            ++n;
        }
        if (ex && (ev & POLLPRI) && (re & POLLPRI)) {
            FD_SET(app[i], ex);
            ++n;
        }
    }
    if (timeout && r == 0) *timeout = {0, 0};
    return n;
}

}  // extern "C"
