// SPDX-License-Identifier: BSD-2-Clause
#include "transport/ud_flow.h"

#include <cstring>

#include "common/clock.h"

namespace softrdma::transport {
namespace {

// The entry for a new peer: a free one, else the least recently used (forgotten).
template <typename Entry, size_t N>
Entry &claim(Entry (&table)[N]) {
    Entry *slot = &table[0];
    for (Entry &e : table) {
        if (!e.used) return e;
        if (e.last_use < slot->last_use) slot = &e;
    }
    return *slot;
}

}  // namespace

UdFlow::Dest *UdFlow::find_dest(const uint8_t gid[16], uint32_t qpn, bool exact_gid) const {
    Dest *by_qpn = nullptr;
    int qpn_matches = 0;
    for (Dest &d : dests_) {
        if (!d.used || d.qpn != qpn) continue;
        if (std::memcmp(d.gid, gid, 16) == 0) return &d;
        by_qpn = &d;
        ++qpn_matches;
    }
    // A grant may come from another address of the same host (the peer answers from
    // whatever address routing picks): a QPN names one UDP port, so accept a unique match.
    return !exact_gid && qpn_matches == 1 ? by_qpn : nullptr;
}

UdFlow::Dest &UdFlow::dest(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns) {
    if (Dest *d = find_dest(gid, qpn, true)) {
        d->last_use = now_ns;
        return *d;
    }
    Dest *slot = &claim(dests_);
    *slot = Dest{};
    std::memcpy(slot->gid, gid, 16);
    slot->qpn = qpn;
    slot->used = true;
    slot->last_use = now_ns;
    return *slot;
}

bool UdFlow::may_send(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns, bool *released) {
    Dest &d = dest(gid, qpn, now_ns);
    if (d.unmetered || d.sent - d.acked < d.window) {
        d.blocked_since = 0;
        return true;
    }
    if (!d.blocked_since) d.blocked_since = now_ns;
    // Stamps come from several threads' clocks, each a little ahead of the others at times: a
    // stamp after `now_ns` is now, not an unsigned wrap to "long ago" (which released the
    // window at once).
    if (within_ns(now_ns, d.blocked_since, kWatchdogNs)) return false;
    d.unmetered = true;  // nobody grants: do not stall this peer's traffic any longer
    d.blocked_since = 0;
    if (released) *released = true;
    return true;
}

void UdFlow::sent(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns) {
    ++dest(gid, qpn, now_ns).sent;
}

void UdFlow::granted(const uint8_t gid[16], uint32_t qpn, uint32_t consumed, uint32_t window,
                     bool restart) {
    Dest *d = find_dest(gid, qpn, false);
    if (!d) return;  // a peer we never sent to, or forgot
    const bool released = d->unmetered;
    d->unmetered = false;
    d->window = window ? window : kInitialWindow;
    if (restart && !released) {
        // The peer counts afresh from some datagram still in flight: all it counted came out
        // of those, and the rest stay in flight (none is forgiven, so its buffer cannot
        // overfill by what it had not counted).
        const uint32_t in_flight = d->sent - d->acked;
        d->sent = consumed + (in_flight > consumed ? in_flight - consumed : 0);
    } else if (released || int32_t(d->sent - consumed) < 0 || int32_t(consumed - d->acked) < 0) {
        // After a watchdog release, or when the peer reports more than we sent or less than
        // it did before (one side forgot the other), datagrams went uncounted or were lost:
        // the peer's count becomes the truth, so lost datagrams do not shrink the window for
        // good.
        d->sent = consumed;
    }
    d->acked = consumed;
}

bool UdFlow::unreachable(const uint8_t gid[16], uint32_t qpn) {
    Dest *d = find_dest(gid, qpn, true);
    if (!d || d->unmetered) return false;
    d->unmetered = true;
    d->blocked_since = 0;
    return true;
}

uint64_t UdFlow::retry_at(const uint8_t gid[16], uint32_t qpn) const {
    const Dest *d = find_dest(gid, qpn, true);
    return d && d->blocked_since ? d->blocked_since + kWatchdogNs : 0;
}

bool UdFlow::consumed(const uint8_t gid[16], uint32_t qpn, uint64_t now_ns, uint32_t window,
                      uint32_t &grant_consumed, bool &restart) {
    Source *s = nullptr;
    for (Source &e : sources_)
        if (e.used && e.qpn == qpn && std::memcmp(e.gid, gid, 16) == 0) {
            s = &e;
            break;
        }
    restart = !s;
    if (!s) {
        s = &claim(sources_);
        *s = Source{};
        std::memcpy(s->gid, gid, 16);
        s->qpn = qpn;
        s->used = true;
    }
    s->last_use = now_ns;
    ++s->count;
    // One grant per quarter window keeps the sender streaming without a grant per datagram.
    if (!restart && s->count - s->granted_at < (window / 4 ? window / 4 : 1)) return false;
    s->granted_at = s->count;
    grant_consumed = s->count;
    return true;
}

}  // namespace softrdma::transport
