// SPDX-License-Identifier: BSD-2-Clause
// Transmission: control messages, responses owed to the peer, then the send queue.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/tsan_annotations.h"
#include "verbs/context.h"
#include "verbs/mw.h"
#include "verbs/qp.h"
#include "verbs/qp_state_table.h"

namespace softrdma::verbs {
namespace {

constexpr uint32_t kReadSinkBase = 0xff000000u;  // sink STags name our SQ slots, not MRs

}  // namespace

uint32_t read_sink_stag(uint32_t slot) {
    return kReadSinkBase | slot;
}
bool read_sink_slot(uint32_t stag, uint32_t &slot) {
    if ((stag & 0xff000000u) != kReadSinkBase) return false;
    slot = stag & 0x00ffffffu;
    return true;
}

void Qp::queue_control(wire::ControlType t, uint32_t seq, uint32_t arg) {
    ctrl_.push_back({t, seq, arg});
}

void Qp::queue_terminate(uint8_t etype, uint8_t ecode) {
    term_pending_ = true;
    term_etype_ = etype;
    term_ecode_ = ecode;
}

bool Qp::emit_ack(transport::TxBatch &b, bool piggyback) {
    if (!ext_ || executed_seq_ == acked_sent_) return false;
    // While the application spins on its CQ it is likely to send soon: let the ACK ride on
    // that data instead of costing a syscall of its own, but never hold it long.
    if (!piggyback && poller_active(pass_ns_) && pass_ns_ < ack_due_ns_) {
        // If the poller stops polling, the engine sends it (at most one timer per window).
        arm_timer_at(ack_due_ns_ + kPollerWindowNs);
        return false;
    }
    if (piggyback && stream_->shm_notes()) {
        // Riding on frames into the ring: a word beside the ring's head, which the peer
        // loads anyway, costs neither side a frame (docs/wire.md §6.10, "Notes").
        stream_->shm_note(executed_seq_);
        acked_sent_ = executed_seq_;
        ack_due_ns_ = 0;
        return false;
    }
    wire::SegmentHeader h;
    h.op = wire::RdmapOp::kControl;
    h.qn = wire::kQnControl;
    h.payload_len = wire::kControlLen;
    uint8_t buf[wire::kControlLen];
    wire::encode_control({wire::ControlType::kAck, executed_seq_, 0}, buf);
    if (!b.add(h, {}, {buf, wire::kControlLen})) return false;
    acked_sent_ = executed_seq_;
    ack_due_ns_ = 0;
    return true;
}

bool Qp::emit_control(transport::TxBatch &b) {
    bool any = false;
    uint8_t buf[wire::kControlLen];
    auto add = [&](wire::ControlType t, uint32_t seq, uint32_t arg) {
        wire::SegmentHeader h;
        h.op = wire::RdmapOp::kControl;
        h.qn = wire::kQnControl;
        h.payload_len = wire::kControlLen;
        wire::encode_control({t, seq, arg}, buf);
        return b.add(h, {}, {buf, wire::kControlLen});
    };
    // NAKs name a sequence number: everything before it must be acknowledged first.
    if (!ctrl_.empty() && emit_ack(b, true)) any = true;
    size_t n = 0;
    for (; n < ctrl_.size(); ++n) {
        if (!ext_) continue;  // plain RDMAP peers get only the TERMINATE
        if (!add(ctrl_[n].type, ctrl_[n].seq, ctrl_[n].arg)) break;
        any = true;
    }
    ctrl_.erase(ctrl_.begin(), ctrl_.begin() + long(n));
    if (send_resync_ && ext_) {
        if (!add(wire::ControlType::kResync, resync_seq_, 0)) return any;
        send_resync_ = false;
        any = true;
    }
    if (term_pending_ && ctrl_.empty()) {
        wire::SegmentHeader h;
        h.op = wire::RdmapOp::kTerminate;
        h.qn = wire::kQnTerminate;
        h.payload_len = wire::kTerminateLen;
        uint8_t t[wire::kTerminateLen];
        wire::encode_terminate({wire::TermLayer::kRdmap, term_etype_, term_ecode_}, t);
        if (b.add(h, {}, {t, wire::kTerminateLen})) {
            term_pending_ = false;
            any = true;
        }
    }
    return any;
}

bool Qp::emit_responses(transport::TxBatch &b) {
    bool any = false;
    while (resp_count_) {
        ResponseJob &j = responses_[resp_head_];
        wire::SegmentHeader h;
        if (j.kind == ResponseJob::Kind::kAtomicResponse) {
            h.op = wire::RdmapOp::kAtomicResponse;
            h.qn = wire::kQnAtomicResponse;
            h.msn = j.msn;
            h.payload_len = wire::kAtomicResponseLen;
            uint8_t v[8];
            for (int i = 0; i < 8; ++i) v[i] = uint8_t(j.atomic_value >> (56 - 8 * i));
            if (!b.add(h, {}, {v, 8})) return any;
        } else {
            const uint32_t len =
                std::min<uint32_t>(j.length - j.sent, uint32_t(wire::kMaxSegmentPayload));
            h.op = wire::RdmapOp::kReadResponse;
            h.stag = j.sink_stag;
            h.to = j.sink_to + j.sent;
            h.last = j.sent + len == j.length;
            h.payload_len = uint16_t(len);
            iovec v{j.src + j.sent, len};
            const size_t staged = foreign_.tx_used;
            if (len && j.foreign) {
                const int r = localize_tx(&v, 1, &j.foreign);
                if (r == 0) {
                    b.stop_full();
                    return any;
                }
                if (r < 0) {  // the region went away under the READ
                    responder_fail(wire::NakCode::kRemoteAccess, wire::kTermEtypeRemoteProtection,
                                   wire::kTermEcodeInvalidStag);
                    return true;
                }
            }
            if (!b.add(h, {&v, len ? 1u : 0u})) {
                foreign_.tx_used = staged;
                return any;
            }
            j.sent += len;
            if (!h.last) {
                any = true;
                continue;
            }
        }
        any = true;
        resp_head_ = (resp_head_ + 1) % uint32_t(responses_.size());
        --resp_count_;
    }
    return any;
}

// Builds iovecs for [off, off+len) of a scatter/gather list, checking every lkey.
bool Qp::sge_iov(const Sge *sges, uint32_t n, uint64_t off, uint64_t len, iovec *out, int &cnt,
                 int max, int access) {
    cnt = 0;
    foreign_.any = false;
    for (uint32_t i = 0; i < n && len; ++i) {
        if (off >= sges[i].length) {
            off -= sges[i].length;
            continue;
        }
        const uint64_t k = std::min<uint64_t>(len, sges[i].length - off);
        MemView v;
        if (keys_.local(sges[i].lkey, pd_, sges[i].addr + off, k, access, v) != KeyCheck::kOk)
            return false;
        if (cnt == max || cnt == kMaxForeignIov) return false;
        if (v.foreign && !foreign_.any) {
            foreign_.any = true;
            auto &r = foreign_.get().region;
            std::fill(r.begin(), r.begin() + cnt, ForeignRegion{});
        }
        if (foreign_.any) foreign_.bufs->region[size_t(cnt)] = v.foreign;
        out[cnt++] = {v.host, k};
        len -= k;
        off = 0;
    }
    return len == 0;
}

// The WQE completes with a local protection error, and that moves the QP to ERR. Always true
// (the WQE was dealt with).
bool Qp::local_protection_error(SendWqe &w) {
    w.done = true;
    w.status = IBV_WC_LOC_PROT_ERR;
    w.queued = true;
    fatal_pending_ = true;
    return true;
}

bool Qp::emit_wqe(transport::TxBatch &b, SendWqe &w, uint32_t slot) {
    const Sge *sg = &sq_sges_[size_t(slot) * max_send_sge_];
    if (tx_off_ == 0 && !tx_imm_stage_) {
        // First look at this WQE: snapshot counters for a replay, and check the local keys
        // of the whole list once so no partial message goes out.
        w.send_msn = send_msn_;
        w.read_msn = read_msn_;
        w.first_seq = next_seq_;
        // A message that leaves in one segment is checked whole by sge_iov below, before
        // any of it is added: checking it here too would take the key table's lock twice.
        // (Requests with a response take no sge_iov: their list is checked here.)
        const bool one_segment =
            w.total_len <= wire::kMaxSegmentPayload && !wr_has_response(w.opcode);
        if (!w.is_inline && w.total_len && !one_segment) {
            // Responses land in local memory, but an ATOMIC WRITE only reads its 8 bytes.
            const int access = wr_has_response(w.opcode) && w.opcode != IBV_WR_ATOMIC_WRITE
                                   ? IBV_ACCESS_LOCAL_WRITE
                                   : 0;
            for (uint32_t i = 0; i < w.num_sge; ++i) {
                MemView v;
                if (sg[i].length && keys_.local(sg[i].lkey, pd_, sg[i].addr, sg[i].length, access,
                                                v) != KeyCheck::kOk) {
                    return local_protection_error(w);
                }
            }
        }
    }
    // XRC: the peer learns which of its SRQs the requests are for before the first one that
    // names another (IB carries it in every packet's XRCETH).
    if (qp_base.qp_type == IBV_QPT_XRC_SEND && tx_off_ == 0 && !tx_imm_stage_ &&
        w.opcode != IBV_WR_BIND_MW && w.opcode != IBV_WR_LOCAL_INV && w.xrc_srqn != tx_srqn_) {
        wire::SegmentHeader h;
        h.op = wire::RdmapOp::kControl;
        h.qn = wire::kQnControl;
        h.payload_len = wire::kControlLen;
        uint8_t c[wire::kControlLen];
        wire::encode_control({wire::ControlType::kXrcSrq, 0, w.xrc_srqn}, c);
        if (!ext_ || !b.add(h, {}, {c, sizeof c})) return false;
        tx_srqn_ = w.xrc_srqn;
    }
    const bool se = w.flags & IBV_SEND_SOLICITED;
    iovec iov[kMaxSge + 1];
    switch (w.opcode) {
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_SEND_WITH_INV:
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM: {
            const bool write =
                w.opcode == IBV_WR_RDMA_WRITE || w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
            while (!tx_imm_stage_) {
                const uint64_t len =
                    std::min<uint64_t>(w.total_len - tx_off_, wire::kMaxSegmentPayload);
                const bool last = tx_off_ + len == w.total_len;
                wire::SegmentHeader h;
                h.last = last;
                h.payload_len = uint16_t(len);
                if (write) {
                    h.op = wire::RdmapOp::kWrite;
                    h.stag = w.rkey;
                    h.to = w.remote_addr + tx_off_;
                } else {
                    if (w.opcode == IBV_WR_SEND_WITH_IMM) {
                        if (!ext_) return false;
                        h.op = se ? wire::RdmapOp::kSendImmSe : wire::RdmapOp::kSendImm;
                        h.ulp = ntohl(w.imm_or_inv);
                    } else if (w.opcode == IBV_WR_SEND_WITH_INV) {
                        h.op = se ? wire::RdmapOp::kSendSeInv : wire::RdmapOp::kSendInv;
                        h.ulp = w.imm_or_inv;
                    } else {
                        h.op = se ? wire::RdmapOp::kSendSe : wire::RdmapOp::kSend;
                    }
                    h.qn = wire::kQnSend;
                    h.msn = send_msn_;
                    h.mo = uint32_t(tx_off_);
                }
                int cnt = 0;
                if (len) {
                    if (w.is_inline) {
                        iov[0] = {&sq_inline_[size_t(slot) * max_inline_ + tx_off_], len};
                        cnt = 1;
                    } else if (!sge_iov(sg, w.num_sge, tx_off_, len, iov, cnt, kMaxSge + 1, 0)) {
                        return local_protection_error(w);
                    }
                }
                const size_t staged = foreign_.tx_used;
                if (cnt && !w.is_inline && foreign_.any) {
                    const int r = localize_tx(iov, cnt, foreign_.bufs->region.data());
                    if (r == 0) {  // the batch goes first
                        b.stop_full();
                        return false;
                    }
                    if (r < 0) {
                        return local_protection_error(w);
                    }
                }
                if (!b.add(h, {iov, size_t(cnt)})) {
                    foreign_.tx_used = staged;
                    return false;
                }
                tx_off_ += len;
                if (last) {
                    if (!write) ++send_msn_;
                    w.last_seq = next_seq_++;
                    if (w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
                        tx_imm_stage_ = true;
                    else
                        break;
                }
            }
            if (tx_imm_stage_) {
                if (!ext_) return false;
                wire::SegmentHeader h;
                h.op = se ? wire::RdmapOp::kImmediateSe : wire::RdmapOp::kImmediate;
                h.qn = wire::kQnSend;
                h.msn = send_msn_;
                h.payload_len = wire::kImmediateLen;
                uint8_t p[wire::kImmediateLen];
                wire::encode_immediate({ntohl(w.imm_or_inv), uint32_t(w.total_len)}, p);
                if (!b.add(h, {}, {p, sizeof p})) return false;
                ++send_msn_;
                w.last_seq = next_seq_++;
                tx_imm_stage_ = false;
            }
            break;
        }
        case IBV_WR_RDMA_READ: {
            wire::SegmentHeader h;
            h.op = wire::RdmapOp::kReadRequest;
            h.qn = wire::kQnReadRequest;
            h.msn = read_msn_;
            h.payload_len = wire::kReadRequestLen;
            uint8_t p[wire::kReadRequestLen];
            wire::encode_read_request(
                {read_sink_stag(slot), 0, uint32_t(w.total_len), w.rkey, w.remote_addr}, p);
            if (!b.add(h, {}, {p, sizeof p})) return false;
            w.resp_msn = read_msn_++;
            w.last_seq = next_seq_++;
            ++rd_outstanding_;
            break;
        }
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
        case IBV_WR_ATOMIC_WRITE: {
            if (!ext_) return false;
            wire::SegmentHeader h;
            h.op = wire::RdmapOp::kAtomicRequest;
            h.qn = wire::kQnAtomicRequest;
            h.msn = atomic_msn_;
            h.payload_len = wire::kAtomicRequestLen;
            uint8_t p[wire::kAtomicRequestLen];
            const bool cas = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
            wire::AtomicRequest r{cas ? wire::AtomicOp::kCompareSwap : wire::AtomicOp::kFetchAdd,
                                  w.rkey, w.remote_addr, cas ? w.swap : w.compare_add,
                                  cas ? w.compare_add : 0};
            if (w.opcode == IBV_WR_ATOMIC_WRITE) {
                r.op = wire::AtomicOp::kWrite;
                if (!w.is_inline) {  // the 8 bytes are read now, after the key check above
                    MemView v;
                    if (keys_.local(sg[0].lkey, pd_, sg[0].addr, 8, 0, v) != KeyCheck::kOk) {
                        return local_protection_error(w);
                    }
                    if (v.foreign) {
                        if (!foreign_read(v.foreign, uint64_t(uintptr_t(v.host)), &w.compare_add,
                                          8)) {
                            return local_protection_error(w);
                        }
                    } else {
                        AppMemoryAccess app;
                        std::memcpy(&w.compare_add, v.host, 8);
                    }
                }
                r.add_or_swap = w.compare_add;
            }
            wire::encode_atomic_request(r, p);
            if (!b.add(h, {}, {p, sizeof p})) return false;
            w.resp_msn = atomic_msn_++;
            w.last_seq = next_seq_++;
            ++rd_outstanding_;
            break;
        }
        case IBV_WR_BIND_MW:
        case IBV_WR_LOCAL_INV:
            run_local_op(w);
            break;
        default:
            w.done = true;
            w.status = IBV_WC_LOC_QP_OP_ERR;
            break;
    }
    w.queued = true;
    tx_off_ = 0;
    return true;
}

// Binds and local invalidations run when the send queue reaches them, in order; a failure
// completes with the status hardware gives and moves the QP to ERR.
void Qp::run_local_op(SendWqe &w) {
    if (w.done) return;  // replayed after an RNR rewind: it ran already
    w.done = true;
    if (w.opcode == IBV_WR_BIND_MW) {
        const MwBind b{w.bind_mw, w.rkey, w.bind_mr_lkey, w.remote_addr, w.bind_len, w.bind_access};
        if (!mw_bind(b, pd_, qp_base.qp_num)) w.status = IBV_WC_MW_BIND_ERR;
    } else if (!mw_invalidate(w.imm_or_inv, pd_)) {
        SR_DEBUG("qp %u: LOCAL_INV of 0x%x: no bound type 2 window has that key", qp_base.qp_num,
                 w.imm_or_inv);
        w.status = IBV_WC_LOC_QP_OP_ERR;
    }
    if (w.status != IBV_WC_SUCCESS) fatal_pending_ = true;
}

bool Qp::emit_requests(transport::TxBatch &b) {
    if (rnr_wait_ || fatal_pending_) return false;
    const ibv_qp_state st = qp_base.state;
    if (st != IBV_QPS_RTS && st != IBV_QPS_SQD) return false;
    const uint32_t ord =
        std::min(std::max<uint32_t>(attr_.max_rd_atomic, 1), std::max<uint32_t>(peer_ird_, 1));
    bool any = false;
    while (sq_tx_ < sq_count_) {
        // SQD: finish the message in flight, start nothing new.
        if (st == IBV_QPS_SQD && tx_off_ == 0 && !tx_imm_stage_) break;
        const uint32_t slot = sq_slot(*this, sq_tx_);
        SendWqe &w = sq_[slot];
        if (tx_off_ == 0 && !tx_imm_stage_ && wr_has_response(w.opcode) && rd_outstanding_ >= ord)
            break;  // IB requester: wait for a response before the next READ/atomic
        if ((w.flags & IBV_SEND_FENCE) && tx_off_ == 0 && rd_outstanding_) break;
        if (!emit_wqe(b, w, slot)) break;
        any = true;
        ++sq_tx_;
        if (fatal_pending_) break;
    }
    // A local operation at the head completes now: nothing from the peer will retire it.
    if (any) retire_sends();
    return any;
}

bool Qp::fill_tx(transport::TxBatch &b) {
    foreign_.tx_used = 0;  // a new batch: the last one's copies have gone out
    const int segments = b.segments();
    const uint64_t data = b.data_bytes();
    bool any = emit_control(b);
    if (!fatal_pending_) {
        any |= emit_responses(b);
        any |= emit_requests(b);
    }
    any |= emit_ack(b, any);
    stats_->add(stats::kSentPkts, uint64_t(b.segments() - segments));
    stats_->add(stats::kSentBytes, b.data_bytes() - data);
    return any;
}

}  // namespace softrdma::verbs
