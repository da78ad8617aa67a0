// SPDX-License-Identifier: BSD-2-Clause
// Raw packet QPs between two processes on sr_lo: whole Ethernet frames, chosen by flow rules,
// checksums filled in on request, spread over WQs by RSS; and the errors the kernel gives
// (EPERM without CAP_NET_RAW, EBUSY for a QP with rules, EOPNOTSUPP for specs we do not steer on).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr size_t kBuf = 1 << 18;   // 128 receive slots
constexpr uint32_t kSlot = 2048;   // receive buffer per frame
constexpr uint16_t kPort = 4791;   // the UDP port the rules choose
constexpr size_t kFrameLen = 200;  // Ethernet + IPv4 + UDP + payload

// A MAC no other test run on this host uses: locally administered, from the test's PID.
struct Mac {
    uint8_t b[6];
};
Mac test_mac(pid_t pid, uint8_t tail) {
    return {{0x02, 0x5e, uint8_t(pid >> 16), uint8_t(pid >> 8), uint8_t(pid), tail}};
}

// The IPv4 Internet checksum of `n` bytes folded, for checking what IBV_SEND_IP_CSUM wrote.
uint16_t sum16(const uint8_t *p, size_t n, uint32_t s = 0) {
    for (size_t i = 0; i + 1 < n; i += 2) s += uint32_t(p[i]) << 8 | p[i + 1];
    if (n & 1) s += uint32_t(p[n - 1]) << 8;
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}

// Ethernet | IPv4 | UDP | payload, checksums left 0; the payload bytes come from `seed`.
void build_frame(uint8_t *f, const Mac &dst, uint32_t src_ip, uint16_t dport, uint8_t seed) {
    std::memset(f, 0, kFrameLen);
    std::memcpy(f, dst.b, 6);
    const uint8_t src_mac[6] = {0x02, 0x5e, 0, 0, 0, 0xee};
    std::memcpy(f + 6, src_mac, 6);
    f[12] = 0x08;
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    const uint16_t tot = uint16_t(kFrameLen - 14);
    ip[2] = uint8_t(tot >> 8), ip[3] = uint8_t(tot);
    ip[8] = 64;
    ip[9] = 17;
    const uint32_t s = htonl(src_ip), d = htonl(0xc0a80002);
    std::memcpy(ip + 12, &s, 4);
    std::memcpy(ip + 16, &d, 4);
    uint8_t *udp = ip + 20;
    udp[0] = 0x30, udp[1] = 0x39;
    udp[2] = uint8_t(dport >> 8), udp[3] = uint8_t(dport);
    const uint16_t ulen = uint16_t(tot - 20);
    udp[4] = uint8_t(ulen >> 8), udp[5] = uint8_t(ulen);
    for (size_t i = 42; i < kFrameLen; ++i) f[i] = uint8_t(seed + i * 13);
}

// One process's raw packet QP on sr_lo.
struct RawEnd {
    explicit RawEnd(bool make_qp = true) {
        int n = 0;
        list = ibv_get_device_list(&n);
        PCHECK(list);
        for (int i = 0; i < n; ++i)
            if (std::strcmp(ibv_get_device_name(list[i]), "sr_lo") == 0)
                ctx = ibv_open_device(list[i]);
        PCHECK(ctx);
        pd = ibv_alloc_pd(ctx);
        cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
        PCHECK(pd && cq);
        PCHECK(posix_memalign(reinterpret_cast<void **>(&buf), 4096, kBuf) == 0);
        std::memset(buf, 0, kBuf);
        mr = ibv_reg_mr(pd, buf, kBuf, IBV_ACCESS_LOCAL_WRITE);
        PCHECK(mr);
        if (!make_qp) return;
        qp = create_qp(pd, cq);
        PCHECK(qp);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        PCHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
        a.qp_state = IBV_QPS_RTR;
        PCHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
        a.qp_state = IBV_QPS_RTS;
        PCHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    }
    static ibv_qp *create_qp(ibv_pd *pd, ibv_cq *cq) {
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = cq;
        ia.qp_type = IBV_QPT_RAW_PACKET;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        return ibv_create_qp(pd, &ia);
    }
    void post_recv(ibv_wq *wq, uint64_t slot) {
        ibv_sge s{uint64_t(uintptr_t(buf + slot * kSlot)), kSlot, mr->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = slot;
        wr.sg_list = &s;
        wr.num_sge = 1;
        ibv_recv_wr *bad = nullptr;
        PCHECK_EQ(wq ? ibv_post_wq_recv(wq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad), 0);
    }
    void send(size_t off, size_t len, unsigned flags, uint64_t wr_id) {
        ibv_sge s{uint64_t(uintptr_t(buf + off)), uint32_t(len), mr->lkey};
        ibv_send_wr wr{};
        wr.wr_id = wr_id;
        wr.opcode = IBV_WR_SEND;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED | flags;
        ibv_send_wr *bad = nullptr;
        PCHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
        const ibv_wc wc = wait(cq);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_SEND);
        PCHECK_EQ(wc.wr_id, wr_id);
    }
    static ibv_wc wait(ibv_cq *c, int ms = 10000) {
        ibv_wc wc{};
        const uint64_t end = now_ms() + uint64_t(ms);
        while (now_ms() < end)
            if (ibv_poll_cq(c, 1, &wc) == 1) return wc;
        PCHECK(!"no completion in time");
        return wc;
    }
    // A rule for frames to `dst`, and (port != 0) to that UDP port.
    ibv_flow *steer(ibv_qp *q, const Mac &dst, uint16_t port) {
        struct {
            ibv_flow_attr attr;
            ibv_flow_spec_eth eth;
            ibv_flow_spec_ipv4 ip;
            ibv_flow_spec_tcp_udp udp;
        } r{};  // every spec size is a multiple of 4: no padding between them
        r.attr.type = IBV_FLOW_ATTR_NORMAL;
        r.attr.size = sizeof r;
        r.attr.num_of_specs = port ? 3 : 1;
        r.attr.port = 1;
        r.eth.type = IBV_FLOW_SPEC_ETH;
        r.eth.size = sizeof r.eth;
        std::memcpy(r.eth.val.dst_mac, dst.b, 6);
        std::memset(r.eth.mask.dst_mac, 0xff, 6);
        r.ip.type = IBV_FLOW_SPEC_IPV4;
        r.ip.size = sizeof r.ip;
        r.udp.type = IBV_FLOW_SPEC_UDP;
        r.udp.size = sizeof r.udp;
        r.udp.val.dst_port = htons(port);
        r.udp.mask.dst_port = 0xffff;
        return ibv_create_flow(q, &r.attr);
    }
    ~RawEnd() {
        for (ibv_flow *f : flows) ibv_destroy_flow(f);
        if (qp) ibv_destroy_qp(qp);
        ibv_dereg_mr(mr);
        ibv_destroy_cq(cq);
        ibv_dealloc_pd(pd);
        ibv_close_device(ctx);
        ibv_free_device_list(list);
        std::free(buf);
    }
    ibv_device **list = nullptr;
    ibv_context *ctx = nullptr;
    ibv_pd *pd = nullptr;
    ibv_cq *cq = nullptr;
    ibv_mr *mr = nullptr;
    ibv_qp *qp = nullptr;
    uint8_t *buf = nullptr;
    std::vector<ibv_flow *> flows;
};

bool can_raw() {
    const int fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd < 0) return false;
    close(fd);
    return true;
}

// Raw packet QPs need CAP_NET_RAW, as on the kernel's devices: without it these tests cannot
// run. (Run as root, ErrorsAsTheKernelGivesThem also checks the EPERM a plain user gets.)
#define SKIP_WITHOUT_CAP_NET_RAW()                                            \
    if (!can_raw())                                                           \
    GTEST_SKIP() << "no CAP_NET_RAW here: raw packet QPs need it, as in the " \
                    "kernel"

}  // namespace

// Frames cross between two processes as they were sent; only those the receiver's rule names
// arrive (another port, another MAC: not), and IBV_SEND_IP_CSUM fills in checksums that verify
// and that the receiver's completion reports as IBV_WC_IP_CSUM_OK.
TEST(RawPacket, FlowRulesChooseFramesAndChecksumsAreFilled) {
    SKIP_WITHOUT_CAP_NET_RAW();
    const Mac mine = test_mac(getpid(), 1), other = test_mac(getpid(), 2);
    auto receiver = [&](Oob &oob) {
        RawEnd e;
        ibv_flow *f = e.steer(e.qp, mine, kPort);
        PCHECK(f);
        e.flows.push_back(f);
        for (uint64_t i = 0; i < 8; ++i) e.post_recv(nullptr, i);
        oob.barrier();  // rule and receives in place
        uint8_t want[kFrameLen];
        for (uint8_t k : {uint8_t(1), uint8_t(4)}) {
            const ibv_wc wc = RawEnd::wait(e.cq);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.opcode, IBV_WC_RECV);
            PCHECK_EQ(wc.byte_len, kFrameLen);
            const uint8_t *got = e.buf + wc.wr_id * kSlot;
            build_frame(want, mine, 0x0a000001, kPort, k);
            if (k == 1) {
                PCHECK(std::memcmp(got, want, kFrameLen) == 0);
                PCHECK(!(wc.wc_flags & IBV_WC_IP_CSUM_OK));  // sent with zero checksums
            } else {
                // Only the checksums differ from what was built, and they verify.
                PCHECK(std::memcmp(got + 42, want + 42, kFrameLen - 42) == 0);
                PCHECK_EQ(sum16(got + 14, 20), 0xffff);
                uint8_t pseudo[12] = {};
                std::memcpy(pseudo, got + 26, 8);
                pseudo[9] = 17;
                pseudo[10] = uint8_t((kFrameLen - 34) >> 8), pseudo[11] = uint8_t(kFrameLen - 34);
                PCHECK_EQ(sum16(got + 34, kFrameLen - 34, sum16(pseudo, 12)), 0xffff);
                PCHECK(wc.wc_flags & IBV_WC_IP_CSUM_OK);
            }
        }
        ibv_wc wc;
        const uint64_t end = now_ms() + 300;  // nothing else may come
        while (now_ms() < end) PCHECK_EQ(ibv_poll_cq(e.cq, 1, &wc), 0);
        oob.barrier();
        return 0;
    };
    auto sender = [&](Oob &oob) {
        RawEnd e;
        build_frame(e.buf, mine, 0x0a000001, kPort, 1);             // taken
        build_frame(e.buf + 1024, mine, 0x0a000001, kPort + 1, 2);  // another port
        build_frame(e.buf + 2048, other, 0x0a000001, kPort, 3);     // another MAC
        build_frame(e.buf + 3072, mine, 0x0a000001, kPort, 4);      // taken, checksummed
        oob.barrier();
        for (uint64_t i = 0; i < 4; ++i)
            e.send(i * 1024, kFrameLen, i == 3 ? IBV_SEND_IP_CSUM : 0, i);
        build_frame(e.buf + 4096, mine, 0x0a000001, kPort, 4);
        PCHECK(std::memcmp(e.buf + 3072, e.buf + 4096, kFrameLen) == 0);  // ours untouched
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(receiver, sender));
}

// An RSS QP over four WQs (two CQs): frames from 16 source addresses are all received, once,
// intact, on more than one WQ, and the same address always lands on the same WQ.
TEST(RawPacket, RssSpreadsFramesOverWqs) {
    SKIP_WITHOUT_CAP_NET_RAW();
    const Mac mine = test_mac(getpid(), 3);
    constexpr int kFlows = 16, kRounds = 2;
    auto receiver = [&](Oob &oob) {
        RawEnd e(false);
        ibv_cq *cqs[2] = {e.cq, ibv_create_cq(e.ctx, 256, nullptr, nullptr, 0)};
        PCHECK(cqs[1]);
        ibv_wq *wqs[4];
        for (int i = 0; i < 4; ++i) {
            ibv_wq_init_attr wa{};
            wa.wq_type = IBV_WQT_RQ;
            wa.max_wr = 64;
            wa.max_sge = 1;
            wa.pd = e.pd;
            wa.cq = cqs[i % 2];
            wqs[i] = ibv_create_wq(e.ctx, &wa);
            PCHECK(wqs[i]);
            ibv_wq_attr m{};
            m.attr_mask = IBV_WQ_ATTR_STATE;
            m.wq_state = IBV_WQS_RDY;
            PCHECK_EQ(ibv_modify_wq(wqs[i], &m), 0);
            for (int k = 0; k < kFlows * kRounds; ++k)
                e.post_recv(wqs[i], uint64_t(i * 32 + k % 32));
        }
        ibv_rwq_ind_table_init_attr ta{};
        ta.log_ind_tbl_size = 2;
        ta.ind_tbl = wqs;
        ibv_rwq_ind_table *table = ibv_create_rwq_ind_table(e.ctx, &ta);
        PCHECK(table);
        uint8_t key[40];
        for (int i = 0; i < 40; ++i) key[i] = uint8_t(0x6d + i * 29);
        ibv_qp_init_attr_ex qa{};
        qa.qp_type = IBV_QPT_RAW_PACKET;
        qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
        qa.pd = e.pd;
        qa.rwq_ind_tbl = table;
        qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
        qa.rx_hash_conf.rx_hash_key_len = sizeof key;
        qa.rx_hash_conf.rx_hash_key = key;
        qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
        ibv_qp *rss = ibv_create_qp_ex(e.ctx, &qa);
        PCHECK(rss);
        ibv_flow *f = e.steer(rss, mine, 0);
        PCHECK(f);
        // The table and WQs are held while the QP uses them.
        PCHECK_EQ(ibv_destroy_rwq_ind_table(table), EBUSY);
        PCHECK_EQ(ibv_destroy_wq(wqs[0]), EBUSY);
        oob.barrier();
        std::map<uint32_t, std::set<uint32_t>> wq_of_src;  // source address -> WQs seen
        std::set<uint32_t> used;
        uint8_t want[kFrameLen];
        for (int n = 0; n < kFlows * kRounds; ++n) {
            ibv_wc wc{};
            const uint64_t end = now_ms() + 10000;
            while (ibv_poll_cq(cqs[0], 1, &wc) != 1 && ibv_poll_cq(cqs[1], 1, &wc) != 1)
                PCHECK(now_ms() < end);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.byte_len, kFrameLen);
            int w = -1;
            for (int i = 0; i < 4; ++i)
                if (wqs[i]->wq_num == wc.qp_num) w = i;
            PCHECK(w >= 0 && wc.wr_id / 32 == uint64_t(w));  // from that WQ's own receives
            const uint8_t *got = e.buf + wc.wr_id * kSlot;
            uint32_t src;
            std::memcpy(&src, got + 26, 4);
            src = ntohl(src);
            build_frame(want, mine, src, kPort, uint8_t(src));
            PCHECK(std::memcmp(got, want, kFrameLen) == 0);
            wq_of_src[src].insert(wc.qp_num);
            used.insert(wc.qp_num);
        }
        PCHECK_EQ(wq_of_src.size(), size_t(kFlows));
        for (auto &[src, ws] : wq_of_src) PCHECK_EQ(ws.size(), size_t(1));
        PCHECK(used.size() > 1);
        PCHECK_EQ(ibv_destroy_flow(f), 0);
        PCHECK_EQ(ibv_destroy_qp(rss), 0);
        PCHECK_EQ(ibv_destroy_rwq_ind_table(table), 0);
        for (ibv_wq *wq : wqs) PCHECK_EQ(ibv_destroy_wq(wq), 0);
        PCHECK_EQ(ibv_destroy_cq(cqs[1]), 0);
        oob.barrier();
        return 0;
    };
    auto sender = [&](Oob &oob) {
        RawEnd e;
        for (int i = 0; i < kFlows; ++i)
            build_frame(e.buf + size_t(i) * 256, mine, 0x0a000100u + uint32_t(i) * 37, kPort,
                        uint8_t(0x0a000100u + uint32_t(i) * 37));
        oob.barrier();
        for (int r = 0; r < kRounds; ++r)
            for (int i = 0; i < kFlows; ++i) e.send(size_t(i) * 256, kFrameLen, 0, uint64_t(i));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(receiver, sender));
}

// The errors rdma-core's kernel path gives: EPERM for a raw QP without CAP_NET_RAW; EBUSY
// for destroying a QP rules still steer to; EOPNOTSUPP for a rule on a non-raw QP or a spec
// type we do not steer on; EINVAL for a spec whose size is not its type's.
TEST(RawPacket, ErrorsAsTheKernelGivesThem) {
    SKIP_WITHOUT_CAP_NET_RAW();
    const Mac mine = test_mac(getpid(), 4);
    auto checks = [&](Oob &oob) {
        {
            RawEnd e;
            ibv_flow *f = e.steer(e.qp, mine, kPort);
            PCHECK(f);
            PCHECK_EQ(ibv_destroy_qp(e.qp), EBUSY);
            PCHECK_EQ(ibv_destroy_flow(f), 0);
            struct {
                ibv_flow_attr attr;
                ibv_flow_spec_tunnel vxlan;
            } r{};  // every spec size is a multiple of 4: no padding between them
            r.attr.size = sizeof r;
            r.attr.num_of_specs = 1;
            r.attr.port = 1;
            r.vxlan.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
            r.vxlan.size = sizeof r.vxlan;
            errno = 0;
            PCHECK(!ibv_create_flow(e.qp, &r.attr) && errno == EOPNOTSUPP);
            r.vxlan.type = IBV_FLOW_SPEC_ETH;  // an Ethernet spec of the tunnel's size
            errno = 0;
            PCHECK(!ibv_create_flow(e.qp, &r.attr) && errno == EINVAL);
            ibv_qp_init_attr ia{};
            ia.send_cq = ia.recv_cq = e.cq;
            ia.qp_type = IBV_QPT_UD;
            ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
            ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
            ibv_qp *ud = ibv_create_qp(e.pd, &ia);
            PCHECK(ud);
            errno = 0;
            PCHECK(!e.steer(ud, mine, 0) && errno == EOPNOTSUPP);
            PCHECK_EQ(ibv_destroy_qp(ud), 0);
        }
        if (geteuid() == 0) {
            // Without CAP_NET_RAW (a plain user): as the kernel, EPERM.
            PCHECK_EQ(setresgid(65534, 65534, 65534), 0);
            PCHECK_EQ(setresuid(65534, 65534, 65534), 0);
            RawEnd e(false);
            errno = 0;
            PCHECK(!RawEnd::create_qp(e.pd, e.cq) && errno == EPERM);
        }
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(checks, idle_peer));
}

namespace {

// A flow rule as bytes: the attribute, then each spec end to end (a count spec holds a
// pointer, so a C struct would pad before it; the verb reads specs by their sizes).
struct RuleBytes {
    std::vector<uint8_t> b;
    RuleBytes(uint8_t nspecs) {
        ibv_flow_attr a{};
        a.type = IBV_FLOW_ATTR_NORMAL;
        a.num_of_specs = nspecs;
        a.port = 1;
        add(a);
    }
    template <typename T>
    void add(const T &spec) {
        const auto *p = reinterpret_cast<const uint8_t *>(&spec);
        b.insert(b.end(), p, p + sizeof spec);
    }
    ibv_flow *create(ibv_qp *q) {
        auto *a = reinterpret_cast<ibv_flow_attr *>(b.data());
        a->size = uint16_t(b.size());
        return ibv_create_flow(q, a);
    }
};

RuleBytes udp_rule(const Mac &dst, uint16_t port, ibv_counters *count, bool drop) {
    RuleBytes r(uint8_t(3 + (count ? 1 : 0) + (drop ? 1 : 0)));
    ibv_flow_spec_eth eth{};
    eth.type = IBV_FLOW_SPEC_ETH;
    eth.size = sizeof eth;
    std::memcpy(eth.val.dst_mac, dst.b, 6);
    std::memset(eth.mask.dst_mac, 0xff, 6);
    r.add(eth);
    ibv_flow_spec_ipv4 ip{};
    ip.type = IBV_FLOW_SPEC_IPV4;
    ip.size = sizeof ip;
    r.add(ip);
    ibv_flow_spec_tcp_udp udp{};
    udp.type = IBV_FLOW_SPEC_UDP;
    udp.size = sizeof udp;
    udp.val.dst_port = htons(port);
    udp.mask.dst_port = 0xffff;
    r.add(udp);
    if (drop) {
        ibv_flow_spec_action_drop d{};
        d.type = IBV_FLOW_SPEC_ACTION_DROP;
        d.size = sizeof d;
        r.add(d);
    }
    if (count) {
        ibv_flow_spec_counter_action c{};
        c.type = IBV_FLOW_SPEC_ACTION_COUNT;
        c.size = sizeof c;
        c.counters = count;
        r.add(c);
    }
    return r;
}

}  // namespace

// Counters objects, as mlx5 has them: packets and bytes of the frames two rules match (one
// delivering, one dropping) add up in one object; a frame no rule names is not counted; and
// the errors for attaching late, destroying while counting and counting with nothing attached.
TEST(RawPacket, FlowCountersCountMatchedFrames) {
    SKIP_WITHOUT_CAP_NET_RAW();
    const Mac mine = test_mac(getpid(), 5);
    auto receiver = [&](Oob &oob) {
        RawEnd e;
        ibv_counters_init_attr ia{};
        ibv_counters *c = ibv_create_counters(e.ctx, &ia);
        PCHECK(c);
        ibv_counter_attach_attr at{};
        // Nothing attached yet: a count action has nothing to count into.
        ibv_counters *empty = ibv_create_counters(e.ctx, &ia);
        PCHECK(!udp_rule(mine, kPort, empty, false).create(e.qp) && errno == EINVAL);
        PCHECK_EQ(ibv_destroy_counters(empty), 0);
        at.counter_desc = IBV_COUNTER_PACKETS;
        at.index = 0;
        PCHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), 0);
        PCHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), EINVAL);  // index taken
        at.counter_desc = IBV_COUNTER_BYTES;
        at.index = 2;
        PCHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), 0);
        ibv_flow *take = udp_rule(mine, kPort, c, false).create(e.qp);
        ibv_flow *drop = udp_rule(mine, kPort + 1, c, true).create(e.qp);
        PCHECK(take && drop);
        e.flows = {take, drop};
        at.index = 3;
        PCHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), EBUSY);  // bound now
        PCHECK_EQ(ibv_attach_counters_point_flow(c, &at, take), EOPNOTSUPP);
        PCHECK_EQ(ibv_destroy_counters(c), EBUSY);
        uint64_t v[4] = {9, 9, 9, 9};
        PCHECK_EQ(ibv_read_counters(c, v, 4, 0x80), EINVAL);
        for (uint64_t i = 0; i < 8; ++i) e.post_recv(nullptr, i);
        oob.barrier();
        for (int i = 0; i < 3; ++i) PCHECK_EQ(RawEnd::wait(e.cq).status, IBV_WC_SUCCESS);
        // The dropped frames are counted as they pass; wait for the last of them (bounded).
        const uint64_t end = now_ms() + 5000;
        do {
            ibv_wc wc;
            PCHECK_EQ(ibv_poll_cq(e.cq, 1, &wc), 0);  // drives the QP; nothing else arrives
            PCHECK_EQ(ibv_read_counters(c, v, 4, IBV_READ_COUNTERS_ATTR_PREFER_CACHED), 0);
        } while (v[0] < 5 && now_ms() < end);
        oob.barrier();  // the sender is done, and the unnamed frame was sent before
        PCHECK_EQ(ibv_read_counters(c, v, 4, 0), 0);
        PCHECK_EQ(v[0], 5u);              // 3 taken + 2 dropped; the third port: not counted
        PCHECK_EQ(v[1], 0u);              // nothing attached at index 1
        PCHECK_EQ(v[2], 5u * kFrameLen);  // bytes of the same frames
        PCHECK_EQ(v[3], 0u);
        for (ibv_flow *f : e.flows) PCHECK_EQ(ibv_destroy_flow(f), 0);
        e.flows.clear();
        PCHECK_EQ(ibv_destroy_counters(c), 0);
        return 0;
    };
    auto sender = [&](Oob &oob) {
        RawEnd e;
        const uint16_t ports[] = {
            kPort, uint16_t(kPort + 2), kPort, uint16_t(kPort + 1), uint16_t(kPort + 1), kPort};
        for (size_t i = 0; i < 6; ++i) build_frame(e.buf + i * 1024, mine, 0x0a000001, ports[i], 7);
        oob.barrier();
        for (uint64_t i = 0; i < 6; ++i) e.send(i * 1024, kFrameLen, 0, i);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(receiver, sender));
}
