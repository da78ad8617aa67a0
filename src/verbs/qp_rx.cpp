// SPDX-License-Identifier: BSD-2-Clause
// Reception: every incoming segment is checked (key, bounds, access, state) before a byte is
// placed; requests are executed in order; responses complete the requester's WQEs.
#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/clock.h"
#include "common/tsan_annotations.h"
#include "common/log.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/mw.h"
#include "verbs/pd.h"
#include "verbs/xrcd.h"
#include "verbs/qp.h"
#include "verbs/qp_state_table.h"
#include "verbs/srq.h"

namespace softrdma::verbs {

bool read_sink_slot(uint32_t stag, uint32_t &slot);

namespace {

// IB RNR timer encoding (min_rnr_timer) in microseconds.
constexpr uint32_t kRnrTimerUs[32] = {655360, 10,    20,    30,     40,     60,     80,     120,
                                      160,    240,   320,   480,    640,    960,    1280,   1920,
                                      2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
                                      40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

bool seq_le(uint32_t a, uint32_t b) {
    return int32_t(a - b) <= 0;
}

bool is_send_op(wire::RdmapOp op) {
    switch (op) {
        case wire::RdmapOp::kSend:
        case wire::RdmapOp::kSendInv:
        case wire::RdmapOp::kSendSe:
        case wire::RdmapOp::kSendSeInv:
        case wire::RdmapOp::kSendImm:
        case wire::RdmapOp::kSendImmSe:
            return true;
        default:
            return false;
    }
}

}  // namespace

void Qp::request_executed() {
    ++executed_seq_;
    if (ack_due_ns_) return;
    // Frames arrive only in a pass, so the pass's clock reading is now.
    ack_due_ns_ = pass_ns_ + (stream_ && stream_->shm_tx() ? kShmAckDelayNs : kAckDelayNs);
}

bool Qp::take_recv(RecvWqe &out) {
    if (srq_) return srq_->take(out, cur_recv_sges_);
    if (rq_.empty()) return false;
    out = rq_.front();
    std::copy(rq_.front_sges(), rq_.front_sges() + out.num_sge, cur_recv_sges_.begin());
    rq_.pop();
    return true;
}

void Qp::responder_fail(wire::NakCode code, uint8_t etype, uint8_t ecode) {
    if (code == wire::NakCode::kRemoteAccess) stats_->add(stats::kRemoteAccessErr);
    if (!reliable()) return;  // UC drops silently
    SR_DEBUG("qp %u: responder refuses the request (%s); terminating the connection",
             qp_base.qp_num, wire::nak_name(code));
    queue_control(wire::ControlType::kNak, executed_seq_ + 1, uint32_t(code));
    queue_terminate(etype, ecode);
    fatal_pending_ = true;
}

bool Qp::place(const wire::SegmentHeader &h, transport::Placement &p) {
    using K = transport::Placement::Kind;
    p.kind = K::kDiscard;
    if (wire::op_is_extension(h.op) && !ext_) return false;
    // Control frames are read even while the QP fails: the stream's own switches (shared
    // memory) travel among them, and the stream must not lose its place.
    if (h.op == wire::RdmapOp::kControl) {
        if (h.qn != wire::kQnControl || h.payload_len != wire::kControlLen) return false;
        p.kind = K::kScratch;
        return true;
    }
    if (fatal_pending_ || qp_base.state == IBV_QPS_ERR) return true;
    if (qp_base.qp_type == IBV_QPT_XRC_RECV && !xrc_srq_ && h.op != wire::RdmapOp::kControl &&
        h.op != wire::RdmapOp::kTerminate) {
        responder_fail(wire::NakCode::kInvalidRequest, wire::kTermEtypeRemoteOperation,
                       wire::kTermEcodeUnspecified);
        return true;  // a request for no SRQ of ours
    }
    switch (h.op) {
        case wire::RdmapOp::kWrite:
            return place_write(h, p);
        case wire::RdmapOp::kReadResponse:
            return place_read_response(h, p);
        case wire::RdmapOp::kReadRequest:
            if (h.qn != wire::kQnReadRequest || h.payload_len != wire::kReadRequestLen)
                return false;
            p.kind = K::kScratch;
            return true;
        case wire::RdmapOp::kAtomicRequest:
            if (h.qn != wire::kQnAtomicRequest || h.payload_len != wire::kAtomicRequestLen)
                return false;
            p.kind = K::kScratch;
            return true;
        case wire::RdmapOp::kAtomicResponse:
            if (h.qn != wire::kQnAtomicResponse || h.payload_len != wire::kAtomicResponseLen)
                return false;
            p.kind = K::kScratch;
            return true;
        case wire::RdmapOp::kImmediate:
        case wire::RdmapOp::kImmediateSe:
            if (h.qn != wire::kQnSend || h.payload_len != wire::kImmediateLen) return false;
            p.kind = K::kScratch;
            return true;
        case wire::RdmapOp::kTerminate:
            if (h.qn != wire::kQnTerminate || h.payload_len < wire::kTerminateLen ||
                h.payload_len > transport::kScratchPayloadMax)
                return false;
            p.kind = K::kScratch;
            return true;
        default:
            if (is_send_op(h.op)) {
                if (h.qn != wire::kQnSend) return false;
                return place_send(h, p);
            }
            return false;
    }
}

bool Qp::place_write(const wire::SegmentHeader &h, transport::Placement &p) {
    if (rnr_dropping_) return true;
    if (h.payload_len == 0) {
        p.kind = transport::Placement::Kind::kIov;
        p.iovcnt = 0;
        return true;
    }
    MemView v;
    KeyCheck kc = KeyCheck::kAccess;
    if (access_ & IBV_ACCESS_REMOTE_WRITE)
        kc = keys_.remote(h.stag, pd_, qp_base.qp_num, h.to, h.payload_len, IBV_ACCESS_REMOTE_WRITE,
                          v);
    if (kc != KeyCheck::kOk) {
        responder_fail(wire::NakCode::kRemoteAccess, wire::kTermEtypeRemoteProtection,
                       kc == KeyCheck::kBounds   ? wire::kTermEcodeBaseBounds
                       : kc == KeyCheck::kAccess ? wire::kTermEcodeAccessRights
                                                 : wire::kTermEcodeInvalidStag);
        return true;  // payload discarded: nothing lands
    }
    p.kind = transport::Placement::Kind::kIov;
    p.iov[0] = {v.host, h.payload_len};
    p.iovcnt = 1;
    if (v.foreign) {
        foreign_.get().region[0] = v.foreign;
        stage_rx(p, ForeignStaging::Sink::kWrite);
    }
    return true;
}

bool Qp::place_send(const wire::SegmentHeader &h, transport::Placement &p) {
    if (rnr_dropping_) return true;
    if (!recv_active_) {
        if (h.mo != 0) return false;
        cur_recv_msn_ = h.msn;
        cur_recv_len_ = 0;
        cur_recv_error_ = false;
        if (injected_rnr() || !take_recv(cur_recv_)) {
            if (reliable()) {
                // Receiver not ready: tell the requester to back off and replay from here.
                queue_control(wire::ControlType::kRnrNak, executed_seq_ + 1, attr_.min_rnr_timer);
                stats_->add(stats::kSendRnrErr);
                rnr_dropping_ = true;
                return true;
            }
            cur_recv_error_ = true;  // UC: the message is lost
        }
        recv_active_ = true;
    } else if (h.msn != cur_recv_msn_ || h.mo != cur_recv_len_) {
        return false;
    }
    // Every segment of the message moves the offset, placed or not (UC drops keep the
    // stream's accounting intact).
    const uint64_t mo = h.mo;
    cur_recv_len_ += h.payload_len;
    if (cur_recv_error_) return true;
    const bool rc = reliable();
    if (mo + h.payload_len > cur_recv_.total_len) {
        complete_recv(cur_recv_, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, false);
        cur_recv_error_ = true;  // UC: the rest is dropped; the message still counts
        if (rc) {
            recv_active_ = false;
            responder_fail(wire::NakCode::kInvalidRequest, wire::kTermEtypeRemoteOperation,
                           wire::kTermEcodeUnspecified);
        }
        return true;
    }
    int cnt = 0;
    if (!sge_iov(cur_recv_sges_.data(), cur_recv_.num_sge, mo, h.payload_len, p.iov.data(), cnt,
                 transport::kMaxPlacementIov, IBV_ACCESS_LOCAL_WRITE)) {
        complete_recv(cur_recv_, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, false);
        cur_recv_error_ = true;
        if (rc) {
            recv_active_ = false;
            responder_fail(wire::NakCode::kRemoteOperation, wire::kTermEtypeRemoteOperation,
                           wire::kTermEcodeUnspecified);
        }
        return true;
    }
    p.kind = transport::Placement::Kind::kIov;
    p.iovcnt = cnt;
    if (foreign_.any) stage_rx(p, ForeignStaging::Sink::kRecv);
    return true;
}

bool Qp::place_read_response(const wire::SegmentHeader &h, transport::Placement &p) {
    uint32_t slot;
    if (!read_sink_slot(h.stag, slot) || slot >= sq_.size()) return false;
    SendWqe &w = sq_[slot];
    if (w.opcode != IBV_WR_RDMA_READ || !w.queued || w.done) return false;
    if (h.to != w.received || h.to + h.payload_len > w.total_len) return false;
    const Sge *sg = &sq_sges_[size_t(slot) * max_send_sge_];
    int cnt = 0;
    if (!sge_iov(sg, w.num_sge, h.to, h.payload_len, p.iov.data(), cnt, transport::kMaxPlacementIov,
                 IBV_ACCESS_LOCAL_WRITE))
        return false;
    p.kind = transport::Placement::Kind::kIov;
    p.iovcnt = cnt;
    if (foreign_.any) stage_rx(p, ForeignStaging::Sink::kReadResponse, slot);
    return true;
}

// The responder's ring is allocated with the first READ or atomic the QP serves: most QPs
// (and every connection of a storm) never serve one.
bool Qp::room_for_response() {
    if (resp_count_ >= attr_.max_dest_rd_atomic) return false;
    if (responses_.empty()) responses_.resize(kMaxRdAtomic);
    return resp_count_ < responses_.size();
}

bool Qp::handle_read_request(std::span<const uint8_t> payload) {
    if (rnr_dropping_) return true;
    if (!reliable()) return false;
    const wire::ReadRequest r = wire::decode_read_request(payload.data());
    if (!room_for_response()) {
        responder_fail(wire::NakCode::kInvalidRequest, wire::kTermEtypeRemoteOperation,
                       wire::kTermEcodeUnspecified);
        return true;
    }
    MemView v{nullptr};
    if (r.length) {
        KeyCheck kc = KeyCheck::kAccess;
        if (access_ & IBV_ACCESS_REMOTE_READ)
            kc = keys_.remote(r.src_stag, pd_, qp_base.qp_num, r.src_to, r.length,
                              IBV_ACCESS_REMOTE_READ, v);
        if (kc != KeyCheck::kOk) {
            responder_fail(wire::NakCode::kRemoteAccess, wire::kTermEtypeRemoteProtection,
                           kc == KeyCheck::kBounds ? wire::kTermEcodeBaseBounds
                                                   : wire::kTermEcodeAccessRights);
            return true;
        }
    }
    ResponseJob &j = responses_[(resp_head_ + resp_count_) % uint32_t(responses_.size())];
    j = ResponseJob{};
    j.kind = ResponseJob::Kind::kReadResponse;
    j.src = v.host;
    j.foreign = v.foreign;
    j.length = r.length;
    j.sink_stag = r.sink_stag;
    j.sink_to = r.sink_to;
    ++resp_count_;
    request_executed();
    return true;
}

bool Qp::handle_atomic_request(const wire::SegmentHeader &h, std::span<const uint8_t> payload) {
    if (rnr_dropping_) return true;
    if (!reliable()) return false;
    wire::AtomicRequest r;
    if (!wire::decode_atomic_request(payload.data(), r)) return false;
    if (!room_for_response()) {
        responder_fail(wire::NakCode::kInvalidRequest, wire::kTermEtypeRemoteOperation,
                       wire::kTermEcodeUnspecified);
        return true;
    }
    MemView v;
    KeyCheck kc = KeyCheck::kAccess;
    if ((r.to & 7) != 0) {
        responder_fail(wire::NakCode::kInvalidRequest, wire::kTermEtypeRemoteOperation,
                       wire::kTermEcodeUnspecified);
        return true;
    }
    // ATOMIC WRITE needs write rights, the others atomic ones (as rxe checks them).
    const int need =
        r.op == wire::AtomicOp::kWrite ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_ATOMIC;
    if (access_ & need) kc = keys_.remote(r.stag, pd_, qp_base.qp_num, r.to, 8, need, v);
    if (kc != KeyCheck::kOk) {
        responder_fail(wire::NakCode::kRemoteAccess, wire::kTermEtypeRemoteProtection,
                       wire::kTermEcodeAccessRights);
        return true;
    }
    uint64_t orig;
    if (v.foreign) {
        if (!foreign_atomic(v, r, orig)) {
            responder_fail(wire::NakCode::kRemoteAccess, wire::kTermEtypeRemoteProtection,
                           wire::kTermEcodeInvalidStag);
            return true;
        }
    } else {
        // Processes sharing the region's context (an importer's read-modify-write) take the
        // same lock.
        AtomicsGuard lock(v.atomics);
        local_atomic(v.host, r, orig);
    }
    ResponseJob &j = responses_[(resp_head_ + resp_count_) % uint32_t(responses_.size())];
    j = ResponseJob{};
    j.kind = ResponseJob::Kind::kAtomicResponse;
    j.msn = h.msn;
    j.atomic_value = orig;
    ++resp_count_;
    request_executed();
    return true;
}

void Qp::local_atomic(uint8_t *host, const wire::AtomicRequest &r, uint64_t &orig) {
    AppMemoryAccess app;
    std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t *>(host));
    if (r.op == wire::AtomicOp::kFetchAdd) {
        orig = target.fetch_add(r.add_or_swap);
    } else if (r.op == wire::AtomicOp::kWrite) {
        target.store(r.add_or_swap);
        orig = 0;
    } else {
        orig = r.compare;
        target.compare_exchange_strong(orig, r.add_or_swap);
    }
}

bool Qp::handle_atomic_response(const wire::SegmentHeader &h, std::span<const uint8_t> payload) {
    for (uint32_t i = 0; i < sq_tx_; ++i) {
        SendWqe &w = sq_[sq_slot(*this, i)];
        if (w.done || !wr_has_response(w.opcode) || w.opcode == IBV_WR_RDMA_READ) continue;
        if (w.resp_msn != h.msn) return false;  // responses come back in request order
        uint64_t v = 0;
        for (int k = 0; k < 8; ++k) v = v << 8 | payload[size_t(k)];
        const Sge &sg = sq_sges_[size_t(sq_slot(*this, i)) * max_send_sge_];
        MemView mv;
        if (w.opcode == IBV_WR_ATOMIC_WRITE) {
            // Nothing comes back to place: the response only says it was done.
        } else if (keys_.local(sg.lkey, pd_, sg.addr, 8, IBV_ACCESS_LOCAL_WRITE, mv) !=
                   KeyCheck::kOk) {
            w.status = IBV_WC_LOC_PROT_ERR;
            fatal_pending_ = true;
        } else if (mv.foreign) {
            if (!foreign_write(mv.foreign, uint64_t(uintptr_t(mv.host)), &v, 8)) {
                w.status = IBV_WC_LOC_PROT_ERR;
                fatal_pending_ = true;
            }
        } else {
            AppMemoryAccess app;
            std::memcpy(mv.host, &v, 8);
        }
        w.done = true;
        --rd_outstanding_;
        last_progress_ns_ = pass_ns_;
        retire_sends();
        return true;
    }
    return false;
}

bool Qp::handle_immediate(const wire::SegmentHeader &h, std::span<const uint8_t> payload) {
    if (rnr_dropping_) return true;
    const wire::ImmediatePayload imm = wire::decode_immediate(payload.data());
    RecvWqe r;
    if (!take_recv(r)) {
        if (reliable()) {
            queue_control(wire::ControlType::kRnrNak, executed_seq_ + 1, attr_.min_rnr_timer);
            stats_->add(stats::kSendRnrErr);
            rnr_dropping_ = true;
        } else {
            request_executed();
        }
        return true;
    }
    complete_recv(r, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, imm.write_len, htonl(imm.imm),
                  IBV_WC_WITH_IMM, h.op == wire::RdmapOp::kImmediateSe);
    request_executed();
    return true;
}

bool Qp::on_control(std::span<const uint8_t> payload) {
    wire::ControlPayload c;
    if (payload.size() != wire::kControlLen || !wire::decode_control(payload.data(), c))
        return false;
    switch (c.type) {
        case wire::ControlType::kShmOffer:
        case wire::ControlType::kShmAccept:
        case wire::ControlType::kShmDecline:
        case wire::ControlType::kShmSwitch:
            return handle_shm_control(c);
        default:
            // A failing QP answers nothing more; the RTU still establishes.
            if (qp_base.state == IBV_QPS_ERR) return true;
            if (fatal_pending_ && c.type != wire::ControlType::kRtu) return true;
            return handle_control(c);
    }
}

// Cumulative: every SEND and WRITE up to `seq` was executed. From an ACK frame, or from the
// note a same-host peer publishes instead of a frame of its own (emit_ack).
bool Qp::on_ack(uint32_t seq) {
    if (int32_t(seq - acked_seq_) <= 0) return true;
    if (int32_t(seq - (next_seq_ - 1)) > 0) return false;  // acks what we never sent
    acked_seq_ = seq;
    for (uint32_t i = 0; i < sq_tx_; ++i) {
        SendWqe &w = sq_[sq_slot(*this, i)];
        if (!w.queued || w.done) continue;
        if (wr_has_response(w.opcode)) continue;
        if (seq_le(w.last_seq, seq)) w.done = true;
    }
    last_progress_ns_ = pass_ns_;
    retire_sends();
    return true;
}

bool Qp::on_note(uint32_t note) {
    // As for an ACK frame (UC's sends complete on ACKs too): a failing QP takes nothing more.
    if (!ext_ || qp_base.state == IBV_QPS_ERR || fatal_pending_) return true;
    return on_ack(note);
}

bool Qp::handle_control(const wire::ControlPayload &c) {
    switch (c.type) {
        case wire::ControlType::kAck:
            return on_ack(c.seq);
        case wire::ControlType::kNak: {
            ibv_wc_status st = IBV_WC_REM_OP_ERR;
            if (c.arg == uint32_t(wire::NakCode::kRemoteAccess)) st = IBV_WC_REM_ACCESS_ERR;
            if (c.arg == uint32_t(wire::NakCode::kInvalidRequest)) st = IBV_WC_REM_INV_REQ_ERR;
            for (uint32_t i = 0; i < sq_tx_; ++i) {
                SendWqe &w = sq_[sq_slot(*this, i)];
                if (w.done) continue;
                if (seq_le(w.first_seq, c.seq) && seq_le(c.seq, w.last_seq)) {
                    w.done = true;
                    w.status = st;
                    break;
                }
            }
            return true;  // the TERMINATE that follows moves us to ERR
        }
        case wire::ControlType::kRnrNak: {
            uint32_t idx = sq_tx_;
            for (uint32_t i = 0; i < sq_tx_; ++i) {
                SendWqe &w = sq_[sq_slot(*this, i)];
                if (!w.done && seq_le(w.first_seq, c.seq) && seq_le(c.seq, w.last_seq)) {
                    idx = i;
                    break;
                }
            }
            if (idx == sq_tx_) return false;
            stats_->add(stats::kRcvdRnrErr);
            stats_->add(stats::kRnrRetries, sq_tx_ - idx);
            SendWqe &w = sq_[sq_slot(*this, idx)];
            if (attr_.rnr_retry != 7) {
                if (w.rnr_left == 0) {
                    w.done = true;
                    w.status = IBV_WC_RNR_RETRY_EXC_ERR;
                    fatal_pending_ = true;
                    return true;
                }
                --w.rnr_left;
            }
            // Rewind: everything from this WQE on is sent again after the RNR delay (an XRC
            // peer is told its SRQ again).
            tx_srqn_ = kNoSrqn;
            for (uint32_t i = idx; i < sq_tx_; ++i) {
                SendWqe &x = sq_[sq_slot(*this, i)];
                if (wr_has_response(x.opcode) && !x.done) --rd_outstanding_;
                x.queued = false;
                x.received = 0;
            }
            send_msn_ = w.send_msn;
            read_msn_ = w.read_msn;
            next_seq_ = w.first_seq;
            resync_seq_ = w.first_seq;
            sq_tx_ = idx;
            tx_off_ = 0;
            tx_imm_stage_ = false;
            rnr_wait_ = true;
            rnr_resume_ns_ = pass_ns_ + uint64_t(kRnrTimerUs[c.arg & 31]) * 1000;
            last_progress_ns_ = pass_ns_;
            return true;
        }
        case wire::ControlType::kResync:
            rnr_dropping_ = false;
            executed_seq_ = c.seq - 1;
            recv_active_ = false;
            return true;
        case wire::ControlType::kCredits:
            return true;
        case wire::ControlType::kRtu:
            fire_established_hook();
            return true;
        case wire::ControlType::kXrcSrq:
            return xrc_target(c.arg);
        default:
            return false;
    }
    return false;
}

// XRC receive QPs: the requests that follow are for SRQ `srqn`, whose PD checks their keys,
// whose receives they consume and whose CQ their completions go to. An SRQ that is not in
// our domain leaves no target: the next request is an invalid request.
bool Qp::xrc_target(uint32_t srqn) {
    if (qp_base.qp_type != IBV_QPT_XRC_RECV) return false;
    if (xrc_srq_ && xrc_srq_->srqn() == srqn) return true;
    xrc_release();
    if (Srq *s = xrc_srq_acquire(srqn, xrcd_)) {
        xrc_srq_ = srq_ = s;
        pd_ = Pd::from(s->pd);
        rcq_ = s->cq();
    } else {
        SR_DEBUG("qp %u: XRC SRQ %u is not in this QP's domain", qp_base.qp_num, srqn);
    }
    return true;
}

void Qp::xrc_release() {
    if (xrc_srq_) xrc_srq_->drop_user();
    xrc_srq_ = srq_ = nullptr;
    pd_ = nullptr;
    rcq_ = nullptr;
}

bool Qp::on_segment(const wire::SegmentHeader &h, std::span<const uint8_t> scratch) {
    stats_->add(stats::kRcvdPkts);
    if (wire::op_carries_data(h.op)) stats_->add(stats::kRcvdBytes, h.payload_len);
    if (foreign_.sink != ForeignStaging::Sink::kNone) flush_rx();
    if (h.op == wire::RdmapOp::kControl) return on_control(scratch);
    if (qp_base.state == IBV_QPS_ERR && h.op != wire::RdmapOp::kTerminate) return true;
    // A request before the RTU establishes the connection too (the IB CM's COMM_EST).
    if (h.op != wire::RdmapOp::kControl && h.op != wire::RdmapOp::kTerminate)
        fire_established_hook();
    switch (h.op) {
        case wire::RdmapOp::kWrite:
            if (h.last && !rnr_dropping_ && !fatal_pending_) request_executed();
            return true;
        case wire::RdmapOp::kReadResponse: {
            uint32_t slot;
            if (!read_sink_slot(h.stag, slot) || slot >= sq_.size()) return false;
            SendWqe &w = sq_[slot];
            if (w.done || w.opcode != IBV_WR_RDMA_READ) return true;
            if (fatal_pending_) return true;  // discarded by place(): the READ will be flushed
            w.received += h.payload_len;
            if (h.last) {
                if (w.received != w.total_len) return false;
                w.done = true;
                --rd_outstanding_;
                last_progress_ns_ = pass_ns_;
                retire_sends();
            }
            return true;
        }
        case wire::RdmapOp::kReadRequest:
            return fatal_pending_ || handle_read_request(scratch);
        case wire::RdmapOp::kAtomicRequest:
            return fatal_pending_ || handle_atomic_request(h, scratch);
        case wire::RdmapOp::kAtomicResponse:
            return handle_atomic_response(h, scratch);
        case wire::RdmapOp::kImmediate:
        case wire::RdmapOp::kImmediateSe:
            return fatal_pending_ || handle_immediate(h, scratch);
        case wire::RdmapOp::kTerminate: {
            const auto t = wire::decode_terminate(scratch.data());
            SR_DEBUG("qp %u: the peer terminated the connection: %s", qp_base.qp_num,
                     wire::describe_terminate(t).c_str());
            fatal_pending_ = true;  // progress() moves the QP to ERR
            return true;
        }
        default:
            break;
    }
    // SEND family.
    if (!h.last || rnr_dropping_ || fatal_pending_) return true;
    if (!recv_active_) return true;  // error already reported for this message
    recv_active_ = false;
    if (cur_recv_error_) {
        request_executed();  // UC: dropped message still consumes its slot in the stream
        return true;
    }
    unsigned flags = 0;
    uint32_t extra = 0;
    const bool se = h.op == wire::RdmapOp::kSendSe || h.op == wire::RdmapOp::kSendSeInv ||
                    h.op == wire::RdmapOp::kSendImmSe;
    if (h.op == wire::RdmapOp::kSendImm || h.op == wire::RdmapOp::kSendImmSe) {
        flags = IBV_WC_WITH_IMM;
        extra = htonl(h.ulp);
    } else if (h.op == wire::RdmapOp::kSendInv || h.op == wire::RdmapOp::kSendSeInv) {
        flags = IBV_WC_WITH_INV;
        extra = h.ulp;
        if (!mw_invalidate(h.ulp, pd_)) {
            // IBA class J: the receive completes in error and both ends go to ERR.
            SR_DEBUG("qp %u: SEND WITH INVALIDATE of 0x%x: no bound type 2 window has that key",
                     qp_base.qp_num, h.ulp);
            complete_recv(cur_recv_, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0, 0, 0, false);
            responder_fail(wire::NakCode::kInvalidRequest, wire::kTermEtypeRemoteOperation,
                           wire::kTermEcodeUnspecified);
            return true;
        }
    }
    complete_recv(cur_recv_, IBV_WC_SUCCESS, IBV_WC_RECV, uint32_t(cur_recv_len_), extra, flags,
                  se);
    request_executed();
    return true;
}

}  // namespace softrdma::verbs
