// SPDX-License-Identifier: BSD-2-Clause
#include "preload/fork_mode.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "preload/fd_table.h"
#include "preload/real_calls.h"

namespace softrdma::preload {
namespace {

enum : uint8_t { kNone = 0, kActive = 1, kPassive = 2 };
std::array<std::atomic<uint8_t>, kMaxFds> g_pending{};
std::array<std::atomic<bool>, kMaxFds> g_app{};

// The offer the accepting side sends: a tag, then the port of its rsocket listener.
constexpr uint32_t kOfferTag = 0x5253464b;  // "RSFK"
constexpr size_t kOfferLen = 8;
constexpr int kAcceptWaitMs = 10000;

void set_pending(int fd, uint8_t v) {
    if (fd >= 0 && fd < kMaxFds) g_pending[size_t(fd)].store(v, std::memory_order_release);
}

// fd, an ordinary TCP socket, now stands for rs: a placeholder takes its number.
bool swap_in(int fd, int rs) {
    const int fl = real().fcntl(fd, F_GETFL);
    const int fdfl = real().fcntl(fd, F_GETFD);
    const int ph = make_placeholder(false);
    if (ph < 0) return false;
    if (real().dup3(ph, fd, fdfl > 0 && (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
        real().close(ph);
        return false;
    }
    real().close(ph);
    if (fl > 0 && (fl & O_NONBLOCK)) rfcntl(rs, F_SETFL, O_NONBLOCK);
    map_fd(fd, rs);
    return true;
}

bool write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        const ssize_t w = real().send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w < 0 && errno == EAGAIN) {
                pollfd q{fd, POLLOUT, 0};
                real().poll(&q, 1, -1);
                continue;
            }
            return false;
        }
        p += w;
        n -= size_t(w);
    }
    return true;
}

void move_passive(int fd) {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (real().getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) != 0) return;
    const int lrs = rsocket(local.ss_family, SOCK_STREAM, 0);
    if (lrs < 0) return;
    if (local.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in *>(&local)->sin_port = 0;
    else
        reinterpret_cast<sockaddr_in6 *>(&local)->sin6_port = 0;
    sockaddr_storage bound{};
    socklen_t blen = sizeof bound;
    if (rbind(lrs, reinterpret_cast<sockaddr *>(&local), len) != 0 || rlisten(lrs, 1) != 0 ||
        rgetsockname(lrs, reinterpret_cast<sockaddr *>(&bound), &blen) != 0) {
        rclose(lrs);
        return;
    }
    const uint16_t port = bound.ss_family == AF_INET
                              ? reinterpret_cast<sockaddr_in *>(&bound)->sin_port
                              : reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port;
    uint8_t offer[kOfferLen] = {};
    const uint32_t tag = htonl(kOfferTag);
    std::memcpy(offer, &tag, 4);
    std::memcpy(offer + 4, &port, 2);
    int rs = -1;
    if (write_all(fd, offer, sizeof offer)) {
        pollfd q{lrs, POLLIN, 0};
        if (rpoll(&q, 1, kAcceptWaitMs) == 1) rs = raccept(lrs, nullptr, nullptr);
    }
    rclose(lrs);
    if (rs >= 0 && !swap_in(fd, rs)) rclose(rs);
}

void move_active(int fd) {
    // Wait for the peer's offer without taking any byte that is not one.
    uint8_t offer[kOfferLen];
    size_t have = 0;
    for (;;) {
        const ssize_t n = real().recv(fd, offer, sizeof offer, MSG_PEEK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            pollfd q{fd, POLLIN, 0};
            real().poll(&q, 1, -1);
            continue;
        }
        if (n <= 0) return;
        have = size_t(n);
        const uint32_t want = htonl(kOfferTag);
        if (std::memcmp(offer, &want, std::min<size_t>(4, have)) != 0) return;  // data: stay on TCP
        if (have == kOfferLen) break;
        pollfd q{fd, POLLIN, 0};
        real().poll(&q, 1, 100);  // the rest of the offer is on its way
    }
    uint8_t drop[kOfferLen];
    if (real().recv(fd, drop, sizeof drop, MSG_WAITALL) != ssize_t(kOfferLen)) return;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (real().getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &len) != 0) return;
    uint16_t port;
    std::memcpy(&port, offer + 4, 2);
    if (peer.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in *>(&peer)->sin_port = port;
    else
        reinterpret_cast<sockaddr_in6 *>(&peer)->sin6_port = port;
    const int rs = rsocket(peer.ss_family, SOCK_STREAM, 0);
    if (rs < 0) return;
    if (rconnect(rs, reinterpret_cast<sockaddr *>(&peer), len) != 0 || !swap_in(fd, rs)) rclose(rs);
}

}  // namespace

bool fork_mode() {
    static const bool on = [] {
        const char *v = std::getenv("RDMAV_FORK_SAFE");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

void fork_pending(int fd, bool passive) {
    set_pending(fd, passive ? kPassive : kActive);
}

void fork_pending_clear(int fd) {
    set_pending(fd, kNone);
    if (fd >= 0 && fd < kMaxFds) g_app[size_t(fd)].store(false, std::memory_order_release);
}

void mark_app_socket(int fd) {
    if (fd >= 0 && fd < kMaxFds) g_app[size_t(fd)].store(true, std::memory_order_release);
}

bool app_socket(int fd) {
    return fd >= 0 && fd < kMaxFds && g_app[size_t(fd)].load(std::memory_order_acquire);
}

void settle_fork(int fd) {
    if (fd < 0 || fd >= kMaxFds) return;
    if (g_pending[size_t(fd)].load(std::memory_order_acquire) == kNone) return;
    const uint8_t role = g_pending[size_t(fd)].exchange(kNone, std::memory_order_acq_rel);
    if (role == kPassive) move_passive(fd);
    if (role == kActive) move_active(fd);
}

}  // namespace softrdma::preload
