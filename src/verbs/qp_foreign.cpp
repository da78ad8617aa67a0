// SPDX-License-Identifier: BSD-2-Clause
// A QP's traffic in regions imported from another process (ibv_import_mr of a context whose
// command fd came from there). Their bytes cannot be pointed at: outgoing pieces are copied
// into a buffer that lives as long as the batch, incoming payload lands in a buffer first and
// is written to its owner when the segment is whole. Both copies are process_vm_* calls,
// checked against the region's publication, so a region its owner withdrew is never touched.
#include <cstring>

#include "common/log.h"
#include "common/tsan_annotations.h"
#include "verbs/qp.h"

namespace softrdma::verbs {

int Qp::localize_tx(iovec *iov, int cnt, const ForeignRegion *regions) {
    constexpr size_t kTxBytes = size_t(transport::TxBatch::kMaxSegments) * wire::kMaxSegmentPayload;
    ForeignStaging::Buffers &b = foreign_.get();
    if (!b.tx) b.tx = std::make_unique_for_overwrite<uint8_t[]>(kTxBytes);
    if (!foreign_.used) {
        foreign_.used = true;
        // The copies are reused with the next batch: they must never go by reference.
        if (stream_) stream_->shm_allow_refs(false);
    }
    size_t need = 0;
    for (int i = 0; i < cnt; ++i)
        if (regions[i]) need += iov[i].iov_len;
    if (foreign_.tx_used + need > kTxBytes) return 0;
    for (int i = 0; i < cnt; ++i) {
        if (!regions[i]) continue;
        uint8_t *dst = b.tx.get() + foreign_.tx_used;
        if (!foreign_read(regions[i], uint64_t(uintptr_t(iov[i].iov_base)), dst, iov[i].iov_len))
            return -1;
        iov[i].iov_base = dst;
        foreign_.tx_used += iov[i].iov_len;
    }
    return 1;
}

void Qp::stage_rx(transport::Placement &p, ForeignStaging::Sink sink, uint32_t read_slot) {
    ForeignStaging::Buffers &b = foreign_.get();
    if (!b.rx) b.rx = std::make_unique_for_overwrite<uint8_t[]>(wire::kMaxSegmentPayload);
    size_t total = 0;
    for (int i = 0; i < p.iovcnt; ++i) {
        b.iov[size_t(i)] = p.iov[size_t(i)];
        b.rx_region[size_t(i)] = b.region[size_t(i)];
        total += p.iov[size_t(i)].iov_len;
    }
    foreign_.cnt = p.iovcnt;
    foreign_.sink = sink;
    foreign_.read_slot = read_slot;
    p.iov[0] = {b.rx.get(), total};
    p.iovcnt = 1;
}

void Qp::flush_rx() {
    const ForeignStaging::Sink sink = foreign_.sink;
    foreign_.sink = ForeignStaging::Sink::kNone;
    ForeignStaging::Buffers &b = *foreign_.bufs;
    const uint8_t *src = b.rx.get();
    bool ok = true;
    for (int i = 0; i < foreign_.cnt && ok; ++i) {
        const iovec &v = b.iov[size_t(i)];
        const ForeignRegion &f = b.rx_region[size_t(i)];
        if (f) {
            ok = foreign_write(f, uint64_t(uintptr_t(v.iov_base)), src, v.iov_len);
        } else {
            AppMemoryAccess app;
            std::memcpy(v.iov_base, src, v.iov_len);
        }
        src += v.iov_len;
    }
    if (ok) return;
    // The region went away under the transfer: the errors a region that failed its key
    // check at placement gets.
    switch (sink) {
        case ForeignStaging::Sink::kWrite:
            responder_fail(wire::NakCode::kRemoteAccess, wire::kTermEtypeRemoteProtection,
                           wire::kTermEcodeInvalidStag);
            break;
        case ForeignStaging::Sink::kRecv:
            complete_recv(cur_recv_, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, false);
            cur_recv_error_ = true;
            if (reliable()) {
                recv_active_ = false;
                responder_fail(wire::NakCode::kRemoteOperation, wire::kTermEtypeRemoteOperation,
                               wire::kTermEcodeUnspecified);
            }
            break;
        case ForeignStaging::Sink::kReadResponse: {
            SendWqe &w = sq_[foreign_.read_slot];
            if (!w.done) {
                w.done = true;
                w.status = IBV_WC_LOC_PROT_ERR;
                --rd_outstanding_;
                fatal_pending_ = true;
                retire_sends();
            }
            break;
        }
        case ForeignStaging::Sink::kNone:
            break;
    }
}

bool Qp::foreign_atomic(const MemView &v, const wire::AtomicRequest &r, uint64_t &orig) {
    AtomicsGuard lock(v.foreign.table);
    const uint64_t addr = uint64_t(uintptr_t(v.host));
    uint64_t cur;
    if (!foreign_read(v.foreign, addr, &cur, 8)) return false;
    uint64_t next = cur;
    if (r.op == wire::AtomicOp::kFetchAdd) {
        next = cur + r.add_or_swap;
        orig = cur;
    } else if (r.op == wire::AtomicOp::kWrite) {
        next = r.add_or_swap;
        orig = 0;
    } else {
        orig = cur;
        if (cur == r.compare) next = r.add_or_swap;
    }
    return next == cur || foreign_write(v.foreign, addr, &next, 8);
}

}  // namespace softrdma::verbs
