// SPDX-License-Identifier: BSD-2-Clause
// Flow control for UD datagrams between softrdma QPs: what RoCE gets from a lossless fabric
// (PFC), done with credits. A receiver tells each sender how many of its datagrams it has taken
// off its socket and how many more may be in flight (the window its socket buffer can hold);
// a sender holds back work requests, in order, while a destination's window is full. A
// destination the network reports gone is released at once; one that never answers (silent,
// or not softrdma) after a watchdog time, as NICs release a PFC pause storm. The watchdog is
// long enough that a receiver stopped for a moment (a debugger, SIGSTOP, a loaded machine)
// loses nothing, as its NIC would have kept receiving. Pure bookkeeping, no I/O: the QP does the
// sending.
#pragma once
#include <cstdint>

namespace softrdma::transport {

class UdFlow {
  public:
    static constexpr uint32_t kInitialWindow = 8;  // before the first grant arrives
    static constexpr uint64_t kWatchdogNs = 1'000'000'000;
    static constexpr int kTableSize = 64;  // remembered peers per QP; the oldest is forgotten

    // ---- sender side; `dest` names the peer by its GID and QPN.
    // True if one more datagram may go to the peer now (false: hold it back). `released` is set
    // when the watchdog gave up on the peer's grants at this call.
    bool may_send(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns, bool *released = nullptr);
    void sent(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns);
    // A grant from the peer `qpn` at `gid`: it consumed `consumed` datagrams from us in all
    // (mod 2^32) and takes `window` in flight; `restart`: its count started afresh.
    void granted(const uint8_t gid[16], uint32_t qpn, uint32_t consumed, uint32_t window,
                 bool restart = false);
    // The network said the peer is gone (ICMP port unreachable): stop holding its datagrams
    // back until it grants again. False if it was not metered anyway.
    bool unreachable(const uint8_t gid[16], uint32_t qpn);
    // When a held-back datagram to the peer should be looked at again (watchdog), or 0.
    uint64_t retry_at(const uint8_t gid[16], uint32_t qpn) const;

    // ---- receiver side; `src` names the sender by its address (as a GID), UDP port and QPN.
    // Counts one datagram taken off the socket; true when a grant is due, with its fields.
    // A sender without an entry (new, or forgotten) is granted at once with `restart` set, so
    // a table churned by more senders than it holds never leaves one waiting for the watchdog.
    bool consumed(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns, uint32_t window,
                  uint32_t &grant_consumed, bool &restart);

  private:
    struct Dest {
        uint8_t gid[16];
        uint32_t qpn = 0;
        bool used = false;
        bool unmetered = false;  // the watchdog released it; a grant meters it again
        uint32_t sent = 0, acked = 0, window = kInitialWindow;
        uint64_t blocked_since = 0;  // 0: not blocked
        uint64_t last_use = 0;
    };
    struct Source {
        uint8_t gid[16];
        uint32_t qpn = 0;
        bool used = false;
        uint32_t count = 0, granted_at = 0;
        uint64_t last_use = 0;
    };
    Dest *find_dest(const uint8_t gid[16], uint32_t qpn, bool exact_gid) const;
    Dest &dest(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns);
    mutable Dest dests_[kTableSize];
    Source sources_[kTableSize];
};

}  // namespace softrdma::transport
