// SPDX-License-Identifier: BSD-2-Clause
// Raw packet QPs: whole Ethernet frames, sent on and received from the device's network
// interface through a packet socket (transport/packet_socket.h). Which frames a QP receives
// is up to its flow rules (verbs/flow.h); a QP created over an RSS indirection table
// (verbs/wq.h) spreads them over the table's receive WQs by Toeplitz hash. Unreliable, as
// Ethernet is: a frame with no rule, no receive posted or no room is dropped and counted.
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/tsan_annotations.h"
#include "transport/packet_socket.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/device.h"
#include "verbs/counters.h"
#include "verbs/flow.h"
#include "verbs/pd.h"
#include "verbs/qp.h"
#include "verbs/qp_state_table.h"
#include "verbs/srq.h"
#include "verbs/wq.h"
#include "wire/eth_frame.h"

namespace softrdma::verbs {
namespace {

constexpr uint64_t kHashFields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                 IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                 IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
                                 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;

// The RSS hash input, in Microsoft's order: source address, destination address, source
// port, destination port; each only if the frame has it and the QP's fields name it.
size_t rss_input(const wire::EthFrame &f, uint64_t fields, uint8_t *out) {
    size_t n = 0;
    const size_t alen = f.ip_version == 4 ? 4 : 16;
    const uint64_t src = f.ip_version == 4 ? IBV_RX_HASH_SRC_IPV4 : IBV_RX_HASH_SRC_IPV6;
    const uint64_t dst = f.ip_version == 4 ? IBV_RX_HASH_DST_IPV4 : IBV_RX_HASH_DST_IPV6;
    if (!f.ip_version) return 0;
    if (fields & src) std::memcpy(out + n, f.src_ip, alen), n += alen;
    if (fields & dst) std::memcpy(out + n, f.dst_ip, alen), n += alen;
    if (!f.has_ports) return n;
    const bool tcp = f.l4_proto == 6;
    const uint64_t sp = tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
    const uint64_t dp = tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
    if (fields & sp) out[n++] = uint8_t(f.src_port >> 8), out[n++] = uint8_t(f.src_port);
    if (fields & dp) out[n++] = uint8_t(f.dst_port >> 8), out[n++] = uint8_t(f.dst_port);
    return n;
}

}  // namespace

int Qp::raw_check_rss(const ibv_qp_init_attr_ex &a) {
    static constexpr const char *kVerb = "ibv_create_qp_ex";
    const ibv_rx_hash_conf &h = a.rx_hash_conf;
    if (!(a.comp_mask & IBV_QP_INIT_ATTR_RX_HASH) || !a.rwq_ind_tbl)
        return refuse(EINVAL, kVerb, "an RSS QP needs both an indirection table and rx_hash_conf");
    if (h.rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ)
        return refuse(EOPNOTSUPP, kVerb, "rx_hash_function %u: only Toeplitz",
                      unsigned(h.rx_hash_function));
    if (h.rx_hash_fields_mask & ~kHashFields)
        return refuse(EOPNOTSUPP, kVerb,
                      "rx_hash_fields_mask 0x%llx: IP addresses and TCP/UDP "
                      "ports of the outer headers only",
                      (unsigned long long)h.rx_hash_fields_mask);
    if (h.rx_hash_key_len > kMaxRssKey || (h.rx_hash_key_len && !h.rx_hash_key))
        return refuse(EINVAL, kVerb, "rx_hash_key_len %u (at most %zu) or a NULL key",
                      unsigned(h.rx_hash_key_len), kMaxRssKey);
    return 0;
}

int Qp::raw_open(const ibv_qp_init_attr_ex &a) {
    Device *dev = ctx_->dev();
    UniqueFd fd = transport::open_packet_socket(dev->ifindex(), dev->loopback());
    if (!fd)
        return refuse(errno == EACCES ? EPERM : errno, "ibv_create_qp",
                      "raw packet QP on %s: cannot open a packet socket (%s); like the kernel's "
                      "raw packet QPs, it needs CAP_NET_RAW",
                      dev->ifname().c_str(), std::strerror(errno));
    raw_mtu_ = transport::interface_mtu(dev->ifindex());
    ud_fd_ = std::move(fd);
    // Room for the largest frame and a tag the kernel took out (see recv_frame).
    ud_buf_.resize(size_t(raw_mtu_) + wire::kEthHeaderLen + 2 * wire::kVlanTagLen);
    if (a.comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) {
        rss_fields_ = a.rx_hash_conf.rx_hash_fields_mask;
        rss_key_.assign(a.rx_hash_conf.rx_hash_key,
                        a.rx_hash_conf.rx_hash_key + a.rx_hash_conf.rx_hash_key_len);
    } else {
        raw_tx_.resize(ud_buf_.size());
    }
    return 0;
}

// Once the QP can no longer fail to be created: it holds the table, and polling any of the
// table's CQs drives it.
void Qp::raw_attach(ibv_rwq_ind_table *table) {
    rss_table_ = RwqIndTable::from(table);
    rss_table_->users.fetch_add(1);
    for (Wq *wq : rss_table_->wqs) wq->completion_queue()->attach(this);
}

void Qp::raw_close() {
    if (!rss_table_) return;
    for (Wq *wq : rss_table_->wqs) wq->completion_queue()->detach(this);
    rss_table_->users.fetch_sub(1);
}

int Qp::raw_add_flow(Flow *f) {
    Lock lk(mu_);
    if (destroyed_) return refuse(EINVAL, "ibv_create_flow", "the QP is being destroyed");
    flows_.push_back(f);
    // Lower priority values win, as on a NIC; ties keep the order of creation.
    std::stable_sort(flows_.begin(), flows_.end(),
                     [](const Flow *x, const Flow *y) { return x->priority < y->priority; });
    return 0;
}

void Qp::raw_remove_flow(Flow *f) {
    Lock lk(mu_);
    flows_.erase(std::remove(flows_.begin(), flows_.end(), f), flows_.end());
}

bool Qp::raw_has_flows() {
    Lock lk(mu_);
    return !flows_.empty();
}

int Qp::raw_post_one(const ibv_send_wr &wr) {
    static constexpr const char *kVerb = "ibv_post_send";
    const auto id = (unsigned long long)wr.wr_id;
    if (rss_table_) return refuse(EINVAL, kVerb, "an RSS QP only receives");
    if (wr.opcode != IBV_WR_SEND)
        return refuse(EINVAL, kVerb, "wr_id %llu: a raw packet QP sends frames (SEND), not %s", id,
                      wr_opcode_name(wr.opcode));
    if (wr.num_sge < 0 || uint32_t(wr.num_sge) > max_send_sge_ || (wr.num_sge && !wr.sg_list))
        return refuse(EINVAL, kVerb,
                      "wr_id %llu: num_sge %d (the QP was created for %u) or a "
                      "NULL sg_list",
                      id, wr.num_sge, max_send_sge_);
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if ((wr.send_flags & IBV_SEND_INLINE) && total > max_inline_)
        return refuse(EINVAL, kVerb, "wr_id %llu: %llu inline bytes, the QP allows %u", id,
                      (unsigned long long)total, max_inline_);
    SendWqe w;
    w.wr_id = wr.wr_id;
    w.opcode = IBV_WR_SEND;
    w.flags = wr.send_flags;
    ibv_wc_status st = IBV_WC_SUCCESS;
    // An Ethernet header, at most one tag, and the interface's MTU behind them.
    if (total < wire::kEthHeaderLen || total > ud_buf_.size()) st = IBV_WC_LOC_LEN_ERR;
    iovec iov[kMaxSge];
    int cnt = 0;
    for (int i = 0; i < wr.num_sge && st == IBV_WC_SUCCESS; ++i) {
        const ibv_sge &s = wr.sg_list[i];
        if (!s.length) continue;
        MemView v{reinterpret_cast<uint8_t *>(uintptr_t(s.addr))};
        if (!(wr.send_flags & IBV_SEND_INLINE) &&
            (mr_check(s.lkey, pd_, s.addr, s.length, 0, v) != KeyCheck::kOk || v.foreign))
            st = IBV_WC_LOC_PROT_ERR;
        iov[cnt++] = {v.host, s.length};
    }
    if (st == IBV_WC_SUCCESS) {
        AppMemoryAccess app;
        if (wr.send_flags & IBV_SEND_IP_CSUM) {
            // The device fills the checksums in: on a copy, the application's buffer stays.
            size_t off = 0;
            for (int i = 0; i < cnt; ++i) {
                std::memcpy(raw_tx_.data() + off, iov[i].iov_base, iov[i].iov_len);
                off += iov[i].iov_len;
            }
            wire::fill_checksums({raw_tx_.data(), off});
            iov[0] = {raw_tx_.data(), off};
            cnt = 1;
        }
        if (!transport::send_frame(ud_fd_.get(), ctx_->dev()->ifindex(), iov, cnt)) {
            // Ethernet is unreliable: a frame the kernel cannot take now is lost.
            if (errno == EMSGSIZE)
                st = IBV_WC_LOC_LEN_ERR;
            else
                stats_->add(stats::kUdDropSendFailed);
        } else {
            size_t len = 0;
            for (int i = 0; i < cnt; ++i) len += iov[i].iov_len;
            stats_->add(stats::kSentPkts);
            stats_->add(stats::kSentBytes, len);
        }
    }
    complete_send(w, st);
    return 0;
}

void Qp::raw_progress(Lock &) {
    if (!ud_fd_) return;
    const bool loopback = ctx_->dev()->loopback();
    for (int n = 0; n < 256; ++n) {
        size_t start = 0;
        bool outgoing = false;
        const long len =
            transport::recv_frame(ud_fd_.get(), ud_buf_.data(), ud_buf_.size(), start, outgoing);
        if (len < 0) return;
        if (loopback && outgoing) continue;  // a loopback frame also arrives as received
        const std::span<const uint8_t> frame(ud_buf_.data() + start, size_t(len));
        wire::EthFrame f;
        if (!wire::parse_eth_frame(frame, f)) continue;
        const Flow *rule = nullptr;
        for (const Flow *fl : flows_)
            if (fl->takes(f, outgoing)) {
                rule = fl;
                break;
            }
        if (!rule) continue;  // not this QP's: the kernel has it too
        if (rule->counters) rule->counters->count(frame.size());
        if (rule->drop) {
            stats_->add(stats::kRawDropRule);
            continue;
        }
        raw_deliver(frame, f);
    }
}

void Qp::raw_deliver(std::span<const uint8_t> frame, const wire::EthFrame &f) {
    // An RSS QP is ready when created, as on mlx5: its WQs' states decide (Wq::take).
    const ibv_qp_state st = qp_base.state;
    if (!rss_table_ && st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQD) {
        stats_->add(stats::kUdDropNotReady);
        return;
    }
    RecvWqe r;
    Cq *cq = rcq_;
    const Pd *pd = Pd::from(qp_base.pd);
    uint32_t qpn = qp_base.qp_num;
    if (rss_table_) {
        uint8_t in[36];
        const size_t n = rss_input(f, rss_fields_, in);
        const uint32_t hash = n ? wire::toeplitz_hash(rss_key_, {in, n}) : 0;
        Wq *wq = rss_table_->wqs[hash & (rss_table_->wqs.size() - 1)];
        if (!wq->take(r, cur_recv_sges_)) {
            stats_->add(stats::kUdDropNoRecv);
            return;
        }
        cq = wq->completion_queue();
        pd = Pd::from(wq->pd);
        qpn = wq->wq_num;
    } else if (!take_recv(r)) {
        stats_->add(stats::kUdDropNoRecv);
        return;
    }
    ibv_wc wc{};
    wc.wr_id = r.wr_id;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = qpn;
    wc.status = IBV_WC_SUCCESS;
    if (frame.size() > r.total_len) wc.status = IBV_WC_LOC_LEN_ERR;
    // Scatter the frame, checking each buffer's key first: nothing lands unless all may.
    iovec iov[kMaxSge];
    int cnt = 0;
    uint64_t left = frame.size();
    for (uint32_t i = 0; i < r.num_sge && left && wc.status == IBV_WC_SUCCESS; ++i) {
        const Sge &s = cur_recv_sges_[i];
        const uint64_t k = std::min<uint64_t>(left, s.length);
        MemView v;
        if (k && (mr_check(s.lkey, pd, s.addr, k, IBV_ACCESS_LOCAL_WRITE, v) != KeyCheck::kOk ||
                  v.foreign))
            wc.status = IBV_WC_LOC_PROT_ERR;
        else if (k)
            iov[cnt++] = {v.host, size_t(k)};
        left -= k;
    }
    if (wc.status == IBV_WC_SUCCESS) {
        AppMemoryAccess app;
        size_t off = 0;
        for (int i = 0; i < cnt; ++i) {
            std::memcpy(iov[i].iov_base, frame.data() + off, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        wc.byte_len = uint32_t(frame.size());
        if (wire::checksums_ok(frame)) wc.wc_flags |= IBV_WC_IP_CSUM_OK;
        stats_->add(stats::kRcvdPkts);
        stats_->add(stats::kRcvdBytes, frame.size());
    }
    if (!cq->push(wc, false)) report_async(IBV_EVENT_CQ_ERR, cq);
}

}  // namespace softrdma::verbs
