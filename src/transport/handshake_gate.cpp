// SPDX-License-Identifier: BSD-2-Clause
#include "transport/handshake_gate.h"

#include <netinet/in.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "transport/mpa_handshake.h"

namespace softrdma::transport {

namespace {

long env_long(const char *name, long fallback) {
    const char *v = std::getenv(name);
    const long n = v ? std::atol(v) : 0;
    return n > 0 ? n : fallback;
}

}  // namespace

const HandshakeLimits &handshake_limits() {
    static const HandshakeLimits limits{
        uint64_t(env_long("SOFTRDMA_MPA_TIMEOUT_MS", 10000)) * 1000000ull,
        size_t(env_long("SOFTRDMA_MPA_HALF_OPEN", 256)),
        size_t(env_long("SOFTRDMA_MPA_HALF_OPEN_PER_PEER", 64)),
    };
    return limits;
}

HandshakeGate::PeerKey HandshakeGate::key_of(const sockaddr_storage &peer) {
    PeerKey k{};
    if (peer.ss_family == AF_INET6) {
        std::memcpy(k.data(), &reinterpret_cast<const sockaddr_in6 &>(peer).sin6_addr, 16);
    } else if (peer.ss_family == AF_INET) {
        k[10] = k[11] = 0xff;
        std::memcpy(k.data() + 12, &reinterpret_cast<const sockaddr_in &>(peer).sin_addr, 4);
    }
    return k;
}

void HandshakeGate::prune() {
    std::erase_if(entries_, [](const Entry &e) {
        auto hs = e.hs.lock();
        return !hs || !hs->awaiting_request();
    });
}

void HandshakeGate::admit(const sockaddr_storage &peer, const std::shared_ptr<MpaHandshake> &hs) {
    const HandshakeLimits &lim = handshake_limits();
    const PeerKey key = key_of(peer);
    std::vector<std::shared_ptr<MpaHandshake>> shed;
    {
        std::lock_guard lk(mu_);
        prune();
        size_t same_peer = 0;
        for (const Entry &e : entries_) same_peer += e.peer == key;
        // Room for the newcomer: the peer's oldest first, then the listener's oldest.
        for (auto it = entries_.begin(); same_peer >= lim.per_peer && it != entries_.end();) {
            if (it->peer != key) {
                ++it;
                continue;
            }
            if (auto victim = it->hs.lock()) shed.push_back(std::move(victim));
            it = entries_.erase(it);
            --same_peer;
        }
        while (entries_.size() >= lim.per_listener) {
            if (auto victim = entries_.front().hs.lock()) shed.push_back(std::move(victim));
            entries_.pop_front();
        }
        if (hs && hs->awaiting_request()) entries_.push_back({hs, key});
    }
    if (!shed.empty())
        SR_DEBUG(
            "listener: %zu connection(s) closed before their MPA request arrived, to make "
            "room for a newer one (at most %zu waiting per listener, %zu per peer address)",
            shed.size(), lim.per_listener, lim.per_peer);
    // Closed outside our lock: shedding takes the handshake's own lock.
    for (auto &victim : shed) victim->shed();
}

bool HandshakeGate::shed_oldest() {
    std::shared_ptr<MpaHandshake> victim;
    {
        std::lock_guard lk(mu_);
        prune();
        while (!victim && !entries_.empty()) {
            victim = entries_.front().hs.lock();
            entries_.pop_front();
        }
    }
    if (!victim) return false;
    SR_DEBUG(
        "listener: out of file descriptors; closed the oldest connection still waiting "
        "for its MPA request");
    victim->shed();
    return true;
}

size_t HandshakeGate::waiting() {
    std::lock_guard lk(mu_);
    prune();
    return entries_.size();
}

}  // namespace softrdma::transport
