// SPDX-License-Identifier: BSD-2-Clause
// Joining two raw-verbs QPs: the QP with the smaller (GID, QPN) dials the other's listener
// once it reaches RTR; the other answers from its listener. See docs/wire.md §3.
#include <sys/epoll.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "verbs/context.h"
#include "transport/shm_link.h"
#include "verbs/cm_token.h"
#include "verbs/qp.h"

namespace softrdma::verbs {
namespace {

constexpr uint64_t kHandshakeTimeoutNs = 5'000'000'000ull;
constexpr uint64_t kDialBackoffMinNs = 2'000'000ull;
constexpr uint64_t kDialBackoffMaxNs = 100'000'000ull;

bool want_crc() {
    static const bool on = [] {
        const char *v = std::getenv("SOFTRDMA_MPA_CRC");
        return v && std::strcmp(v, "1") == 0;
    }();
    return on;
}

}  // namespace

bool Qp::i_dial() const {
    if (cm_managed_ || qp_base.qp_type == IBV_QPT_UD || qp_base.qp_type == IBV_QPT_RAW_PACKET)
        return false;  // nothing to dial
    const auto gids = ctx_->dev()->gids();
    const uint8_t idx = attr_.ah_attr.grh.sgid_index;
    if (idx >= gids.size()) return false;
    const int c = std::memcmp(gids[idx].raw, remote_gid_, 16);
    if (c != 0) return c < 0;
    return qp_base.qp_num < remote_qpn_;
}

std::vector<uint8_t> Qp::build_hello(bool reply, wire::QpHelloStatus st) const {
    wire::QpHello h;
    h.status = st;
    h.qp_type = uint8_t(qp_base.qp_type);
    h.src_qpn = qp_base.qp_num;
    h.dst_qpn = remote_qpn_;
    const auto gids = ctx_->dev()->gids();
    if (attr_.ah_attr.grh.sgid_index < gids.size())
        std::memcpy(h.src_gid, gids[attr_.ah_attr.grh.sgid_index].raw, 16);
    std::memcpy(h.dst_gid, remote_gid_, 16);
    wire::MpaFrame f;
    f.reply = reply;
    f.flags = wire::kMpaFlagEnhanced | wire::kMpaFlagSoftrdmaExt |
              (want_crc() ? wire::kMpaFlagCrc : 0) |
              (transport::shm_enabled() ? wire::kMpaFlagSoftrdmaShm : 0);
    f.ird = uint16_t(attr_.max_dest_rd_atomic);
    f.ord = uint16_t(attr_.max_rd_atomic);
    f.private_data.resize(wire::kQpHelloLen);
    wire::encode_qp_hello(h, f.private_data.data());
    return wire::encode_mpa_frame(f);
}

void Qp::start_connect(Lock &lk) {
    if (connecting_ || stream_ || destroyed_) return;
    sockaddr_storage ss;
    socklen_t len;
    if (!gid_to_sockaddr(remote_gid_, transport::qpn_port(remote_qpn_), ss, len)) return;
    SR_DEBUG("qp %u: dials qpn %u (the smaller GID and QPN dials) at port %u", qp_base.qp_num,
             remote_qpn_, unsigned(transport::qpn_port(remote_qpn_)));
    UniqueFd fd = transport::tcp_connect_nonblocking(reinterpret_cast<sockaddr *>(&ss), len);
    if (!fd) {
        next_dial_ns_ = now_ns() + kDialBackoffMaxNs;
        arm_timer(lk);
        return;
    }
    connecting_ = true;
    auto request = build_hello(false, wire::QpHelloStatus::kRequest);
    std::weak_ptr<Qp> self = shared_from_this();
    lk.unlock();
    auto hs = transport::MpaHandshake::start_active(std::move(fd), std::move(request),
                                                    now_ns() + kHandshakeTimeoutNs,
                                                    [self](transport::MpaHandshake::Result &&r) {
                                                        if (auto qp = self.lock())
                                                            qp->on_active_done(std::move(r));
                                                    });
    lk.lock();
    if (connecting_ && !stream_) handshake_ = hs;
}

void Qp::on_active_done(transport::MpaHandshake::Result &&r) {
    Lock lk(mu_);
    connecting_ = false;
    handshake_.reset();
    const ibv_qp_state st = qp_base.state;
    if (destroyed_ || stream_ || st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR)
        return;
    wire::QpHello hello;
    if (r.err == 0 &&
        (!wire::decode_qp_hello(r.peer.private_data, hello) ||
         hello.status != wire::QpHelloStatus::kAccept || hello.src_qpn != remote_qpn_))
        r.err = ECONNREFUSED;
    if (r.err) {
        // The peer QP may not exist yet (it reaches RTR later): try again shortly. The
        // retry budget of posted work decides when to give up.
        dial_backoff_ns_ = dial_backoff_ns_ ? std::min(dial_backoff_ns_ * 2, kDialBackoffMaxNs)
                                            : kDialBackoffMinNs;
        next_dial_ns_ = now_ns() + dial_backoff_ns_;
        SR_DEBUG("qp %u: dial to qpn %u (port %u) failed: %s; retry in %llu us", qp_base.qp_num,
                 remote_qpn_, unsigned(transport::qpn_port(remote_qpn_)), std::strerror(r.err),
                 (unsigned long long)(dial_backoff_ns_ / 1000));
        arm_timer(lk);
        return;
    }
    adopt_stream(std::move(r), lk);
}

transport::MpaHandshake::Decision Qp::on_hello(const wire::MpaFrame &req,
                                               const wire::QpHello &hello) {
    using Kind = transport::MpaHandshake::Decision::Kind;
    transport::MpaHandshake::Decision d;
    Lock lk(mu_);
    const ibv_qp_state st = qp_base.state;
    auto reject = [&](wire::QpHelloStatus s) {
        d.kind = Kind::kReply;
        d.reply = transport::encode_hello_reply(hello, s, 0, 0, 0);
        d.accepted = false;
        return d;
    };
    if (destroyed_ || cm_managed_ || st == IBV_QPS_ERR)
        return reject(wire::QpHelloStatus::kNoSuchQp);
    // RC meets RC and UC meets UC; an XRC send QP meets an XRC receive QP.
    const uint8_t peer_type = qp_base.qp_type == IBV_QPT_XRC_SEND   ? uint8_t(IBV_QPT_XRC_RECV)
                              : qp_base.qp_type == IBV_QPT_XRC_RECV ? uint8_t(IBV_QPT_XRC_SEND)
                                                                    : uint8_t(qp_base.qp_type);
    if (hello.qp_type != peer_type || qp_base.qp_type == IBV_QPT_RAW_PACKET)
        return reject(wire::QpHelloStatus::kBadType);
    if (st == IBV_QPS_RESET || st == IBV_QPS_INIT) {
        d.kind = Kind::kDefer;  // the application has not given us the peer yet
        return d;
    }
    // The requester must be exactly the peer the application named (GID and QPN), as an
    // HCA drops packets from anyone else.
    if (hello.src_qpn != remote_qpn_ || std::memcmp(hello.src_gid, remote_gid_, 16) != 0)
        return reject(wire::QpHelloStatus::kWrongPeer);
    uint16_t flags = wire::kMpaFlagEnhanced;
    if (req.flags & wire::kMpaFlagSoftrdmaExt) flags |= wire::kMpaFlagSoftrdmaExt;
    if ((req.flags & wire::kMpaFlagSoftrdmaShm) && transport::shm_enabled())
        flags |= wire::kMpaFlagSoftrdmaShm;
    if ((req.flags & wire::kMpaFlagCrc) || want_crc()) flags |= wire::kMpaFlagCrc;
    d.kind = Kind::kReply;
    d.reply = transport::encode_hello_reply(hello, wire::QpHelloStatus::kAccept, flags,
                                            uint16_t(attr_.max_dest_rd_atomic),
                                            uint16_t(attr_.max_rd_atomic));
    d.accepted = true;
    return d;
}

void Qp::on_passive_connected(transport::MpaHandshake::Result &&r) {
    Lock lk(mu_);
    const ibv_qp_state st = qp_base.state;
    if (destroyed_ || st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR) return;
    if (stream_) {
        // The peer reconnected (it lost the old stream first): the new one wins.
        transport::ProgressEngine::get().unwatch(stream_->fd());
        stream_.reset();
    }
    adopt_stream(std::move(r), lk);
}

bool Qp::adopt_stream(transport::MpaHandshake::Result &&r, Lock &lk) {
    // The request and the reply agree on both flags (the passive side echoes them).
    const uint16_t peer = r.peer.flags;
    const bool crc = (peer & wire::kMpaFlagCrc) || want_crc();
    ext_ = (peer & wire::kMpaFlagSoftrdmaExt) != 0;
    shm_ok_ = ext_ && (peer & wire::kMpaFlagSoftrdmaShm) && transport::shm_enabled();
    shm_offerer_ = !r.peer.reply;        // we took the peer's request: we accepted the connection
    if (!ext_) fire_established_hook();  // such a peer sends no RTU
    peer_ird_ = r.peer.ird & wire::kMpaV2IrdOrdMask;
    stream_ = std::make_unique<transport::FpduStream>(std::move(r.fd), crc);
    // A CM connection names its peer by address: no QPN to show (the CM's placeholder is 1).
    const bool named = !is_cm_token(remote_qpn_) && remote_qpn_ > 1;
    stats_->peer_qpn.store(named ? remote_qpn_ : 0, std::memory_order_relaxed);
    uint64_t gid[2];
    std::memcpy(gid, remote_gid_, 16);
    stats_->peer_gid[0].store(gid[0], std::memory_order_relaxed);
    stats_->peer_gid[1].store(gid[1], std::memory_order_relaxed);
    stats_->shm.store(0, std::memory_order_relaxed);
    tx_srqn_ = kNoSrqn;  // a new stream: the peer knows no XRC SRQ number yet
    tx_blocked_ = false;
    dial_backoff_ns_ = 0;
    next_dial_ns_ = 0;
    last_progress_ns_ = now_ns();
    // Publish before arming (this may run on an application thread): the event can fire, and
    // on_io clear the mask, before watch() even returns.
    const uint32_t events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    armed_mask_ = events;
    if (!transport::ProgressEngine::get().watch(stream_->fd(), shared_from_this(), events)) {
        SR_DEBUG("qp %u: cannot watch the connection: %s", qp_base.qp_num, std::strerror(errno));
        armed_mask_ = 0;
        stream_.reset();
        return false;
    }
    SR_DEBUG("qp %u: connected to qpn %u (softrdma extensions %s, CRC %s)", qp_base.qp_num,
             remote_qpn_, ext_ ? "on" : "off", crc ? "on" : "off");
    shm_offer_due_ = true;  // made with the first request either way (qp_shm.cpp)
    // Sends posted before the connection came up leave now. No read: the peer sends nothing
    // before it has our reply or RTU, and anything that did arrive makes the re-armed socket
    // report at once.
    progress(lk, false);
    return true;
}

void Qp::set_cm_managed(std::function<void()> hook) {
    Lock lk(mu_);
    cm_managed_ = true;
    cm_hook_ = std::move(hook);
}

void Qp::set_established_hook(std::function<void()> hook) {
    Lock lk(mu_);
    established_hook_ = std::move(hook);
}

void Qp::fire_established_hook() {
    if (!established_hook_) return;
    transport::ProgressEngine::get().post(std::move(established_hook_));
    established_hook_ = nullptr;
}

void Qp::send_rtu() {
    Lock lk(mu_);
    if (!stream_ || !ext_ || qp_base.state == IBV_QPS_ERR) return;
    queue_control(wire::ControlType::kRtu, 0, 0);
    progress(lk);
}

int Qp::attach_cm_stream(UniqueFd fd, const wire::MpaFrame &peer) {
    Lock lk(mu_);
    if (destroyed_ || stream_) return EINVAL;
    const ibv_qp_state st = qp_base.state;
    if (st != IBV_QPS_RTR && st != IBV_QPS_RTS) return EINVAL;
    transport::MpaHandshake::Result r;
    r.fd = std::move(fd);
    r.peer = peer;
    // The stream may already have died inside (the peer's first message can fail the QP):
    // the connection was made, and the CM hears of its end through the hook.
    return adopt_stream(std::move(r), lk) ? 0 : EIO;
}

void Qp::on_stream_lost(Lock &lk, bool protocol_error) {
    SR_DEBUG("qp %u: stream lost (%s)", qp_base.qp_num,
             protocol_error ? "protocol error" : "closed");
    transport::ProgressEngine::get().unwatch(stream_->fd());
    stream_.reset();
    if (cm_managed_) {
        // The CM connection ended (DREQ on IB): the QP goes to ERR, the CM reports
        // DISCONNECTED.
        if (protocol_error)
            for (uint32_t i = 0; i < sq_tx_; ++i)
                if (!sq_[sq_slot(*this, i)].done) {
                    sq_[sq_slot(*this, i)].done = true;
                    sq_[sq_slot(*this, i)].status = IBV_WC_REM_OP_ERR;
                    break;
                }
        move_to_error(lk);
        if (cm_hook_) transport::ProgressEngine::get().post(cm_hook_);
        return;
    }
    // Work the peer never acknowledged cannot be delivered any more.
    bool outstanding = recv_active_;
    for (uint32_t i = 0; i < sq_tx_ && !outstanding; ++i)
        outstanding = !sq_[sq_slot(*this, i)].done;
    if (fatal_pending_) {
        // The peer terminated the connection (or we did): everything not completed yet is
        // flushed; the failing WQE already carries its own status from the NAK.
        move_to_error(lk);
        return;
    }
    if (protocol_error) {
        for (uint32_t i = 0; i < sq_tx_; ++i) {
            SendWqe &w = sq_[sq_slot(*this, i)];
            if (!w.done) {
                w.done = true;
                w.status = IBV_WC_REM_OP_ERR;
                break;
            }
        }
        move_to_error(lk);
        return;
    }
    recv_active_ = false;
    if (!reliable()) {
        // UC never learns whether data arrived: what was sent counts as sent.
        for (uint32_t i = 0; i < sq_tx_; ++i) sq_[sq_slot(*this, i)].done = true;
        retire_sends();
    } else if (outstanding) {
        // The peer is gone, but hardware only finds out when its retries run dry: the retry
        // budget (timeout x (retry_cnt + 1)) since the last acknowledgement decides, as it
        // does for a silent peer.
        SR_DEBUG("qp %u: peer closed with work outstanding (acked %u, next %u)", qp_base.qp_num,
                 acked_seq_, next_seq_);
    }
    // Idle: redial when there is something to send (the dialing side only).
    tx_off_ = 0;
    arm_timer(lk);
}

}  // namespace softrdma::verbs
