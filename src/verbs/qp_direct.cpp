// SPDX-License-Identifier: BSD-2-Clause
// Shared regions (SOFTRDMA_SHM_MR=1, verbs/region_file.h): on a same-host connection, an RDMA
// WRITE or READ whose target lies in a region the peer moved into its region file is done at
// post time by one memcpy between the two regions, as a NIC's DMA would, and completes at
// once. Only when nothing is outstanding on the send queue: every earlier request has then
// been executed by the responder, so the ordering rules hold. Anything the direct path cannot
// judge as the responder would (a window's key, a range outside the file's pages, a check
// that fails) takes the rings, where the responder gives the usual answer and errors.
#include <sched.h>

#include <cerrno>

#include "common/enum_value.h"
#include "common/log.h"
#include "transport/shm_link.h"
#include "verbs/peer_regions.h"
#include "verbs/qp.h"
#include "verbs/region_file.h"

namespace softrdma::verbs {

namespace {
constexpr uint64_t kTaking = uint64_t(1) << 31;  // the responder word: the QP takes requests
}

void Qp::publish_responder() {
    transport::ShmLink *l = stream_ ? stream_->shm() : nullptr;
    if (!l || !shm_regions_enabled()) return;
    if (const int fd = region_file_fd(region_file()); fd >= 0)
        l->publish(transport::ShmLink::kRegionFd, uint64_t(fd) + 1);
    const ibv_qp_state st = qp_base.state;
    const bool taking = !destroyed_ && (st == IBV_QPS_RTR || st == IBV_QPS_RTS ||
                                        st == IBV_QPS_SQD || st == IBV_QPS_SQE);
    l->publish(transport::ShmLink::kResponderPd, uint64_t(uintptr_t(pd_)));
    l->publish(transport::ShmLink::kResponderAccess,
               taking ? kTaking | uint64_t(uint32_t(access_) & 0xffff) : 0);
}

// The move to the rings takes a few engine round trips after the connection is made, and a
// pipeline of WRITEs or READs that starts before it stays on the rings (a request goes
// straight only when nothing is outstanding). So the first one waits for the move, once per
// QP and at most 2 ms, when both ends said they could make it and they share a host.
void Qp::await_shm_switch(Lock &lk) {
    shm_switch_awaited_ = true;
    if (!shm_ok_ || (stream_->shm_tx() && stream_->shm_rx()) ||
        !transport::shm_same_host(stream_->fd()))
        return;
    const uint64_t until = now_ns() + 2'000'000;
    while (stream_ && !(stream_->shm_tx() && stream_->shm_rx()) && now_ns() < until &&
           qp_base.state == IBV_QPS_RTS) {
        progress(lk, true, 0);
        lk.unlock();  // let the engine and pollers in between looks
        sched_yield();
        lk.lock();
    }
}

bool Qp::try_direct(const ibv_send_wr &wr, Lock &lk) {
    const long long op = enum_value(wr.opcode);  // the caller's, maybe no enumerator at all
    const bool write = op == IBV_WR_RDMA_WRITE;
    if (!write && op != IBV_WR_RDMA_READ) return false;
    auto ready = [&] { return stream_ && sq_count_ == 0 && qp_base.state == IBV_QPS_RTS; };
    if (!shm_regions_enabled() || !ready()) return false;
    if (qp_base.qp_type != IBV_QPT_RC && !(write && qp_base.qp_type == IBV_QPT_UC)) return false;
    if (!shm_switch_awaited_) {
        await_shm_switch(lk);
        if (!ready()) return false;  // the lock was let go meanwhile
    }
    if (!stream_->shm_tx() || !stream_->shm_rx() || rnr_wait_ || fatal_pending_ || term_pending_ ||
        fault_plan().active)
        return false;
    // A request post_one_send would refuse is left to it, to refuse it once and say why.
    if (wr.num_sge < 1 || wr.num_sge > kMaxDirectSge || uint32_t(wr.num_sge) > max_send_sge_ ||
        (!write && (wr.send_flags & IBV_SEND_INLINE)))
        return false;
    transport::ShmLink *l = stream_->shm();
    const uint64_t acc = l->peer_word(transport::ShmLink::kResponderAccess);
    if (!(acc & kTaking)) return false;
    if (!peer_regions_) {
        const uint64_t fdw = l->peer_word(transport::ShmLink::kRegionFd);
        if (peer_regions_failed_ || !fdw || !l->peer_pid()) return false;
        peer_regions_ = PeerRegions::open(pid_t(l->peer_pid()), int(fdw - 1));
        if (!peer_regions_) {
            peer_regions_failed_ = true;
            SR_DEBUG(
                "qp %u: the peer's shared regions cannot be opened: WRITE/READ go through "
                "the rings",
                qp_base.qp_num);
            return false;
        }
        SR_DEBUG("qp %u: WRITE and READ go straight into pid %u's shared regions", qp_base.qp_num,
                 l->peer_pid());
    }
    // Our side, checked as post_one_send and the transmit path check it.
    iovec v[kMaxDirectSge];
    uint64_t total = 0;
    const bool inline_data = write && (wr.send_flags & IBV_SEND_INLINE);
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge &sg = wr.sg_list[i];
        total += sg.length;
        if (inline_data) {
            v[i] = {reinterpret_cast<void *>(uintptr_t(sg.addr)), sg.length};
            continue;
        }
        MemView mv;
        if (sg.length && (mr_check(sg.lkey, pd_, sg.addr, sg.length,
                                   write ? 0 : IBV_ACCESS_LOCAL_WRITE, mv) != KeyCheck::kOk ||
                          mv.foreign))
            return false;  // the usual path reports the local error
        v[i] = {sg.length ? mv.host : nullptr, sg.length};
    }
    if (total == 0 || total > (uint64_t(1) << 31) || (inline_data && total > max_inline_))
        return false;
    const PeerRegions::Responder r{l->peer_word(transport::ShmLink::kResponderPd),
                                   int(acc & 0xffff)};
    const uint64_t raddr = wr.wr.rdma.remote_addr;
    const uint32_t rkey = wr.wr.rdma.rkey;
    const bool done = write ? peer_regions_->write(r, rkey, raddr, v, wr.num_sge, total)
                            : peer_regions_->read(r, rkey, raddr, v, wr.num_sge, total);
    if (!done) return false;
    stats_->add(stats::kShmDirect);
    stats_->add(write ? stats::kSentBytes : stats::kRcvdBytes, total);
    SendWqe w{};
    w.wr_id = wr.wr_id;
    w.opcode = wr.opcode;
    w.flags = wr.send_flags;
    w.total_len = total;
    complete_send(w, IBV_WC_SUCCESS);
    return true;
}

}  // namespace softrdma::verbs
