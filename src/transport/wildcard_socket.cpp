// SPDX-License-Identifier: BSD-2-Clause
#include "transport/wildcard_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "common/clock.h"

namespace softrdma::transport {
namespace {

constexpr int kPrivatePortTries = 32;

// Inclusive; first == 0 when the host leaves no port outside its ephemeral range.
struct PortRange {
    uint16_t first = 0;
    uint16_t last = 0;
};

PortRange read_private_ports() {
    unsigned lo = 0, hi = 0;
    FILE *f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    if (!f) return {};
    const int n = std::fscanf(f, "%u %u", &lo, &hi);
    std::fclose(f);
    if (n != 2 || lo > hi) return {};
    // 0xffff is left out: the UD QPN port << 8 | 0xff would be the multicast QPN.
    if (hi < 0xfffe) return {uint16_t(hi + 1), 0xfffe};
    if (lo > 1025) return {1024, uint16_t(lo - 1)};
    return {};
}

// Not a secret, only spread: processes starting together should not all try the same port.
uint32_t next_random() {
    static std::atomic<uint64_t> state{now_ns() ^ (uint64_t(::getpid()) << 32)};
    uint64_t z = state.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return uint32_t(z ^ (z >> 31));
}

bool bind_port(int fd, int family, uint16_t port) {
    if (family == AF_INET6) {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons(port);
        return ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    return ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
}

// A private port when one is free, else one the kernel picks.
bool bind_somewhere(int fd, int family) {
    static const PortRange r = read_private_ports();
    if (r.first != 0) {
        const uint32_t span = uint32_t(r.last - r.first) + 1;
        for (int i = 0; i < kPrivatePortTries; ++i)
            if (bind_port(fd, family, uint16_t(r.first + next_random() % span))) return true;
    }
    return bind_port(fd, family, 0);
}

UniqueFd open_socket(int family, int type) {
    UniqueFd fd(::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fd;
    if (family == AF_INET6) {
        int zero = 0;
        setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (type == SOCK_STREAM) {
        // Accepted connections of an earlier process may linger in TIME_WAIT on a private port.
        int one = 1;
        setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    return fd;
}

}  // namespace

UniqueFd bind_wildcard(int type, uint16_t &port) {
    int family = AF_INET6;
    UniqueFd fd = open_socket(AF_INET6, type);
    if (!fd || !bind_somewhere(fd.get(), AF_INET6)) {
        family = AF_INET;
        fd = open_socket(AF_INET, type);
        if (!fd) return fd;
        if (!bind_somewhere(fd.get(), AF_INET)) return UniqueFd();
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd.get(), reinterpret_cast<sockaddr *>(&ss), &len);
    port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6 &>(ss).sin6_port
                                    : reinterpret_cast<sockaddr_in &>(ss).sin_port);
    return fd;
}

}  // namespace softrdma::transport
