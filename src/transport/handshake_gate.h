// SPDX-License-Identifier: BSD-2-Clause
// What a TCP listener (the CM's, or a QP listener) allows connections that have not yet
// delivered a complete MPA request: a bounded time, and a bounded number per listener and per
// peer address, the oldest closed first. A listener never stops accepting because of them, so
// junk, half requests, silent or trickling peers cost the attacker a socket each and never
// keep a legitimate client out (the kernel's iWARP CM gives them its MPA timer; RoCE's CM
// speaks MADs and cannot be reached this way at all).
#pragma once
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace softrdma::transport {

class MpaHandshake;

struct HandshakeLimits {
    uint64_t request_timeout_ns;  // SOFTRDMA_MPA_TIMEOUT_MS: 10 s, siw's MPA timer
    size_t per_listener;          // SOFTRDMA_MPA_HALF_OPEN: 256
    size_t per_peer;              // SOFTRDMA_MPA_HALF_OPEN_PER_PEER: 64
};
// Read from the environment once.
const HandshakeLimits &handshake_limits();

class HandshakeGate {
  public:
    // Records a passive handshake from `peer` that waits for its request, and closes the
    // oldest waiting ones that put the peer or the listener beyond its bound.
    void admit(const sockaddr_storage &peer, const std::shared_ptr<MpaHandshake> &hs);
    // Closes the oldest waiting handshake (the process is out of file descriptors). False
    // when none waits.
    bool shed_oldest();
    // Handshakes still waiting for their request (for tests and diagnostics).
    size_t waiting();

  private:
    using PeerKey = std::array<uint8_t, 16>;  // IPv4 as IPv4-mapped IPv6
    struct Entry {
        std::weak_ptr<MpaHandshake> hs;
        PeerKey peer;
    };
    static PeerKey key_of(const sockaddr_storage &peer);
    void prune();  // drops entries whose handshake got its request or ended

    std::mutex mu_;
    std::deque<Entry> entries_;  // oldest first
};

}  // namespace softrdma::transport
