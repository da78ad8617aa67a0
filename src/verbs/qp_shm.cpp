// SPDX-License-Identifier: BSD-2-Clause
// Same-host connections move to shared memory: with the first request, the end that accepted
// the TCP connection offers a segment, the other opens it or declines, and each direction
// switches at a marker frame (docs/wire.md §3.6). The protocol above (sequence numbers, ACKs,
// RNR, errors) does not change: the ring carries the very frames TCP would.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "transport/shm_link.h"
#include "verbs/qp.h"

namespace softrdma::verbs {

namespace {

const char *decline_words(wire::ShmDecline why) {
    switch (why) {
        case wire::ShmDecline::kNotSameHost:
            return "the ends are on different hosts or network namespaces";
        case wire::ShmDecline::kCannotOpen:
            return "the segment cannot be opened (another user, or another pid namespace)";
        case wire::ShmDecline::kBadSegment:
            return "the segment found is not this connection's";
    }
    return "unknown reason";
}

}  // namespace

void Qp::shm_offer() {
    if (!stream_) return;
    const int fd = stream_->fd();
    if (!shm_ok_) {
        SR_DEBUG(
            "qp %u: stays on TCP: %s", qp_base.qp_num,
            !transport::shm_enabled() ? "SOFTRDMA_SHM=0" : "the peer does not offer shared memory");
        return;
    }
    if (!transport::shm_same_host(fd)) {
        SR_DEBUG("qp %u: stays on TCP: the peer is on another host or network namespace",
                 qp_base.qp_num);
        return;
    }
    if (!shm_offerer_) return;  // the peer offers; our answer is logged
    auto link = transport::ShmLink::create(fd);
    if (!link) {
        SR_DEBUG("qp %u: stays on TCP: no shared memory segment: %s", qp_base.qp_num,
                 std::strerror(errno));
        return;
    }
    const int seg = link->fd();
    stream_->shm_attach(std::move(link));
    publish_responder();
    queue_control(wire::ControlType::kShmOffer, uint32_t(getpid()), uint32_t(seg));
}

// The switch frame goes out as the last frame on TCP, once everything queued before it left.
void Qp::shm_send_switch(wire::ControlType t, uint32_t seq, uint32_t arg) {
    wire::SegmentHeader h;
    h.op = wire::RdmapOp::kControl;
    h.qn = wire::kQnControl;
    h.payload_len = wire::kControlLen;
    uint8_t c[wire::kControlLen];
    wire::encode_control({t, seq, arg}, c);
    stream_->shm_switch_tx_after(h, c);
}

bool Qp::handle_shm_control(const wire::ControlPayload &c) {
    if (!shm_ok_) return false;  // never offered: a peer that breaks the protocol
    const int fd = stream_->fd();
    switch (c.type) {
        case wire::ControlType::kShmOffer: {
            if (stream_->shm() || shm_offerer_) return false;  // we offer, or twice
            auto decline = [&](wire::ShmDecline why) {
                SR_DEBUG("qp %u: stays on TCP: declined the offer: %s", qp_base.qp_num,
                         decline_words(why));
                queue_control(wire::ControlType::kShmDecline, 0, uint32_t(why));
                return true;
            };
            if (!transport::shm_same_host(fd)) return decline(wire::ShmDecline::kNotSameHost);
            transport::ShmLink::OpenError err;
            auto link = transport::ShmLink::open(fd, c.seq, c.arg, err);
            if (!link)
                return decline(err == transport::ShmLink::OpenError::kCannotOpen
                                   ? wire::ShmDecline::kCannotOpen
                                   : wire::ShmDecline::kBadSegment);
            SR_DEBUG("qp %u: shared memory with qpn %u (pid %u's segment, %llu KiB rings)",
                     qp_base.qp_num, remote_qpn_, c.seq,
                     (unsigned long long)(link->ring_bytes() / 1024));
            stream_->shm_attach(std::move(link));
            publish_responder();
            stats_->shm.store(1, std::memory_order_relaxed);
            stream_->shm_allow_refs(reliable() && !foreign_.used);
            shm_send_switch(wire::ControlType::kShmAccept, uint32_t(getpid()), 0);
            return true;
        }
        case wire::ControlType::kShmAccept:
            // The peer's frames now come through the ring; ours follow after our switch.
            if (!stream_->shm() || stream_->shm_rx()) return false;
            stream_->shm()->close_fd();
            stats_->shm.store(1, std::memory_order_relaxed);
            stream_->shm()->set_peer(c.seq);  // the accepter's pid (0 from an older peer)
            stream_->shm_allow_refs(reliable() && !foreign_.used);
            stream_->shm_switch_rx();
            shm_send_switch(wire::ControlType::kShmSwitch, 0, 0);
            SR_DEBUG("qp %u: shared memory with qpn %u (%llu KiB rings)", qp_base.qp_num,
                     remote_qpn_, (unsigned long long)(stream_->shm()->ring_bytes() / 1024));
            return true;
        case wire::ControlType::kShmSwitch:
            if (!stream_->shm() || stream_->shm_rx() || shm_offerer_) return false;
            stream_->shm_switch_rx();
            return true;
        case wire::ControlType::kShmDecline:
            if (!stream_->shm() || stream_->shm_rx()) return false;
            SR_DEBUG("qp %u: stays on TCP: the peer declined: %s", qp_base.qp_num,
                     decline_words(wire::ShmDecline(c.arg)));
            stream_->shm_detach();
            return true;
        default:
            return false;
    }
}

}  // namespace softrdma::verbs
