// SPDX-License-Identifier: BSD-2-Clause
// Multicast between processes with the verbs API: ibv_attach_mcast / ibv_detach_mcast,
// datagrams to QPN 0xFFFFFF reaching every attached QP with the MGID in the GRH, nothing
// after a detach, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, and the errors the kernel returns.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr size_t kGrh = 40;
constexpr uint32_t kMcastQpn = 0xffffff;

EpOptions mc_opts(uint32_t create_flags = 0) {
    EpOptions o;
    o.type = IBV_QPT_UD;
    o.buf_size = 1 << 16;
    o.mr_access = IBV_ACCESS_LOCAL_WRITE;
    o.create_flags = create_flags;
    return o;
}

// A group of our own per test run (IPv4-mapped 239.255.x.y): parallel runs never mix.
ibv_gid test_group(unsigned salt) {
    ibv_gid g{};
    g.raw[10] = g.raw[11] = 0xff;
    g.raw[12] = 239;
    g.raw[13] = 255;
    g.raw[14] = uint8_t(getppid() >> 3);
    g.raw[15] = uint8_t(salt * 16 + (getppid() & 15));
    return g;
}

ibv_gid ipv6_group(unsigned salt) {
    ibv_gid g{};
    g.raw[0] = 0xff;
    g.raw[1] = 0x12;
    g.raw[12] = uint8_t(getppid() >> 8);
    g.raw[13] = uint8_t(getppid());
    g.raw[15] = uint8_t(salt);
    return g;
}

ibv_ah *group_ah(Endpoint &e, const ibv_gid &g) {
    ibv_ah_attr a{};
    a.is_global = 1;
    a.port_num = 1;
    a.grh.hop_limit = 1;
    a.grh.dgid = g;
    ibv_ah *ah = ibv_create_ah(e.pd, &a);
    PCHECK(ah);
    return ah;
}

void send_to(Endpoint &e, ibv_ah *ah, uint64_t wr_id, uint8_t tag, uint32_t len, uint32_t qkey) {
    std::memset(e.buf, tag, len);
    ibv_sge sge{uint64_t(uintptr_t(e.buf)), len, e.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(tag);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = kMcastQpn;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr *bad = nullptr;
    PCHECK_EQ(ibv_post_send(e.qp, &wr, &bad), 0);
    const ibv_wc wc = e.wait_wc();
    PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
    PCHECK_EQ(wc.wr_id, wr_id);
}

// Posts `n` receives of 4 KiB + GRH at slots 1..n of the buffer.
void post_recvs(Endpoint &e, int n) {
    for (int i = 1; i <= n; ++i) e.post_recv(uint64_t(i), size_t(i) * 8192, 8192);
}

// One datagram of `len` bytes tagged `tag` from `src` (qpn, gid) sent to group `g`.
void expect_group_datagram(Endpoint &e, const ibv_gid &g, const Wire &src, uint8_t tag,
                           uint32_t len) {
    const ibv_wc wc = e.wait_wc();
    PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
    PCHECK_EQ(wc.opcode, IBV_WC_RECV);
    PCHECK_EQ(wc.byte_len, kGrh + len);
    PCHECK_EQ(wc.src_qp, src.qpn);
    PCHECK(wc.wc_flags & IBV_WC_GRH);
    PCHECK(wc.wc_flags & IBV_WC_WITH_IMM);
    PCHECK_EQ(ntohl(wc.imm_data), tag);
    const uint8_t *slot = e.buf + wc.wr_id * 8192;
    PCHECK(std::memcmp(slot + 8, src.gid, 16) == 0);  // GRH source: the sender
    PCHECK(std::memcmp(slot + 24, g.raw, 16) == 0);   // GRH destination: the MGID
    for (uint32_t i = 0; i < len; ++i) PCHECK_EQ(slot[kGrh + i], tag);
}

}  // namespace

// Two QPs of one process attach to a group; a sender in another process reaches both. After
// one detaches it gets nothing more while the other still receives; a second detach fails.
TEST(Mcast, AttachedQpsReceiveAndDetachStopsDelivery) {
    for (const bool v6 : {false, true}) {
        const ibv_gid g = v6 ? ipv6_group(1) : test_group(1);
        auto sender = [&](Oob &oob) {
            Endpoint e(mc_opts());
            e.connect(Wire{});
            oob.put(e.local());
            ibv_ah *ah = group_ah(e, g);
            oob.barrier();  // both receivers attached, receives posted
            for (uint8_t t = 1; t <= 3; ++t) send_to(e, ah, t, t, 100u * t, e.opt.qkey);
            oob.barrier();  // receiver 2 detached
            send_to(e, ah, 4, 4, 64, e.opt.qkey);
            oob.barrier();
            ibv_destroy_ah(ah);
            return 0;
        };
        auto receivers = [&](Oob &oob) {
            Endpoint r1(mc_opts()), r2(mc_opts()), bystander(mc_opts());
            for (Endpoint *e : {&r1, &r2, &bystander}) {
                e->connect(Wire{});
                post_recvs(*e, 6);
            }
            const Wire src = oob.get<Wire>();
            PCHECK_EQ(ibv_attach_mcast(r1.qp, &g, 0), 0);
            PCHECK_EQ(ibv_attach_mcast(r2.qp, &g, 0), 0);
            PCHECK_EQ(ibv_attach_mcast(r2.qp, &g, 0), 0);  // again: still one membership
            oob.barrier();
            for (uint8_t t = 1; t <= 3; ++t) {
                expect_group_datagram(r1, g, src, t, 100u * t);
                expect_group_datagram(r2, g, src, t, 100u * t);
            }
            PCHECK(bystander.quiet_for(100));  // never attached
            PCHECK_EQ(ibv_detach_mcast(r2.qp, &g, 0), 0);
            PCHECK_EQ(ibv_detach_mcast(r2.qp, &g, 0), EINVAL);
            oob.barrier();
            expect_group_datagram(r1, g, src, 4, 64);
            PCHECK(r2.quiet_for(300));  // detached: nothing arrives
            PCHECK(bystander.quiet_for(10));
            oob.barrier();
            return 0;
        };
        SCOPED_TRACE(v6 ? "IPv6 group" : "IPv4 group");
        EXPECT_PAIR_OK(run_pair(sender, receivers));
    }
}

// A member whose Q_Key differs drops the group's datagrams, as hardware does.
TEST(Mcast, QkeyMismatchDrops) {
    const ibv_gid g = test_group(2);
    auto sender = [&](Oob &oob) {
        Endpoint e(mc_opts());
        e.connect(Wire{});
        oob.put(e.local());
        ibv_ah *ah = group_ah(e, g);
        oob.barrier();
        send_to(e, ah, 1, 7, 32, e.opt.qkey);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receivers = [&](Oob &oob) {
        EpOptions other = mc_opts();
        other.qkey = 0x22222222;
        Endpoint good(mc_opts()), bad(other);
        for (Endpoint *e : {&good, &bad}) {
            e->connect(Wire{});
            post_recvs(*e, 2);
            PCHECK_EQ(ibv_attach_mcast(e->qp, &g, 0), 0);
        }
        const Wire src = oob.get<Wire>();
        oob.barrier();
        expect_group_datagram(good, g, src, 7, 32);
        PCHECK(bad.quiet_for(300));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receivers));
}

// An attached QP hears its own multicast (hardware loops it back) unless it was created with
// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB; other members hear it either way.
TEST(Mcast, BlockSelfLoopback) {
    const ibv_gid g = test_group(3);
    auto one = [&](Oob &oob) {
        Endpoint blocked(mc_opts(IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)), open(mc_opts());
        for (Endpoint *e : {&blocked, &open}) {
            e->connect(Wire{});
            PCHECK_EQ(ibv_attach_mcast(e->qp, &g, 0), 0);
        }
        ibv_ah *ah_b = group_ah(blocked, g), *ah_o = group_ah(open, g);
        // Receives go in after the sends' own completions are consumed, so wait_wc below
        // sees only receive completions.
        post_recvs(blocked, 4);
        post_recvs(open, 4);
        send_to(blocked, ah_b, 100, 1, 50, blocked.opt.qkey);
        expect_group_datagram(open, g, blocked.local(), 1, 50);
        PCHECK(blocked.quiet_for(300));  // its own datagram never comes back
        send_to(open, ah_o, 101, 2, 60, open.opt.qkey);
        expect_group_datagram(open, g, open.local(), 2, 60);  // looped back to itself
        expect_group_datagram(blocked, g, open.local(), 2, 60);
        ibv_destroy_ah(ah_b);
        ibv_destroy_ah(ah_o);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(one, idle_peer));
}

// The kernel's answers: multicast needs a UD QP and a multicast GID.
TEST(Mcast, AttachErrors) {
    auto one = [](Oob &oob) {
        Endpoint ud(mc_opts());
        EpOptions rc_o;
        Endpoint rc(rc_o);
        ibv_gid unicast{};
        PCHECK_EQ(ibv_query_gid(ud.ctx, 1, 0, &unicast), 0);
        const ibv_gid g = test_group(4);
        PCHECK_EQ(ibv_attach_mcast(rc.qp, &g, 0), EINVAL);
        PCHECK_EQ(ibv_attach_mcast(ud.qp, &unicast, 0), EINVAL);
        PCHECK_EQ(ibv_detach_mcast(ud.qp, &g, 0), EINVAL);  // never attached
        PCHECK_EQ(ibv_attach_mcast(ud.qp, &g, 0), 0);
        PCHECK_EQ(ibv_detach_mcast(ud.qp, &g, 0), 0);
        // The kernel's per-socket membership limit is the QP's: one group more is ENOMEM.
        FILE *f = std::fopen("/proc/sys/net/ipv4/igmp_max_memberships", "r");
        PCHECK(f);
        int limit = 0;
        PCHECK_EQ(std::fscanf(f, "%d", &limit), 1);
        std::fclose(f);
        PCHECK(limit > 0 && limit < 200);
        for (int i = 0; i <= limit; ++i) {
            ibv_gid m = test_group(4);
            m.raw[13] = 254;  // 239.254.x.y: apart from the other tests' groups
            m.raw[14] = uint8_t(i);
            PCHECK_EQ(ibv_attach_mcast(ud.qp, &m, 0), i < limit ? 0 : ENOMEM);
        }
        ibv_device_attr da{};
        PCHECK_EQ(ibv_query_device(ud.ctx, &da), 0);
        PCHECK(da.max_mcast_grp > 0 && da.max_mcast_qp_attach > 0);
        PCHECK(da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(one, idle_peer));
}

// Hostile datagrams sent straight to a group's IP address and port (docs/wire.md §9): random
// bytes, a plausible header with garbage after it, a header for another QPN, the wrong Q_Key,
// and a forged flow-control grant (grants are never valid on a group). An attached QP takes
// none of them; the group's next real datagram lands in the first receive.
TEST(Mcast, HostileDatagramsToTheGroupAreDropped) {
    const ibv_gid g = test_group(4);
    auto sender = [&](Oob &oob) {
        Endpoint e(mc_opts());
        e.connect(Wire{});
        oob.put(e.local());
        ibv_ah *ah = group_ah(e, g);
        oob.barrier();  // receiver attached
        const int s = socket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(s >= 0);
        sockaddr_in self{};
        self.sin_family = AF_INET;
        PCHECK_EQ(bind(s, reinterpret_cast<const sockaddr *>(&self), sizeof self), 0);
        socklen_t sl = sizeof self;
        PCHECK_EQ(getsockname(s, reinterpret_cast<sockaddr *>(&self), &sl), 0);
        const uint32_t own_qpn = uint32_t(ntohs(self.sin_port)) << 8 | 0xff;  // this port's QPN
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(4792);  // the group port (SOFTRDMA_MCAST_PORT's default)
        std::memcpy(&to.sin_addr, g.raw + 12, 4);
        const int loop = 1;
        setsockopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
        in_addr lo{};
        lo.s_addr = htonl(INADDR_LOOPBACK);
        PCHECK(setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo) == 0);
        uint8_t d[64];
        for (int k = 0; k < 40; ++k) {
            for (auto &b : d) b = uint8_t(rand());
            size_t n = size_t(k % 8) * 8 + 3;
            if (k % 5 == 1) d[0] = 0x55, d[1] = 1, d[2] = 0, d[3] = 0;  // plausible, then junk
            if (k % 5 == 2) {  // a well-formed header for another QPN
                const uint8_t h[20] = {0x55, 1, 0, 0, 0,    0x12, 0x34, 0x56,
                                       0,    0, 0, 1, 0x11, 0x11, 0x11, 0x11};
                std::memcpy(d, h, sizeof h);
                n = 40;
            }
            if (k % 5 == 3) {  // to the group's QPN with the wrong Q_Key
                const uint8_t h[20] = {0x55, 1, 0, 0, 0,    0xff, 0xff, 0xff,
                                       0,    0, 0, 1, 0x22, 0x22, 0x22, 0x22};
                std::memcpy(d, h, sizeof h);
                n = 40;
            }
            if (k % 5 == 4) {
                // A flow-control grant to the group, well formed in every other way (this
                // port's own QPN, the group's Q_Key): grants are never multicast, so it is
                // dropped, where a datagram like it would take a receive.
                uint8_t h[20] = {0x55, 1, 4, 0, 0, 0xff, 0xff, 0xff};
                for (int i = 0; i < 4; ++i) {
                    h[8 + i] = uint8_t(own_qpn >> (24 - 8 * i));
                    h[12 + i] = uint8_t(e.opt.qkey >> (24 - 8 * i));
                }
                std::memcpy(d, h, sizeof h);
                n = 20;
            }
            PCHECK(sendto(s, d, n, 0, reinterpret_cast<sockaddr *>(&to), sizeof to) > 0);
        }
        close(s);
        oob.barrier();  // all of it is on its way
        oob.barrier();  // the receiver saw none of it
        send_to(e, ah, 1, 9, 48, e.opt.qkey);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [&](Oob &oob) {
        Endpoint r(mc_opts());
        r.connect(Wire{});
        post_recvs(r, 4);
        const Wire src = oob.get<Wire>();
        PCHECK_EQ(ibv_attach_mcast(r.qp, &g, 0), 0);
        oob.barrier();
        oob.barrier();
        PCHECK(r.quiet_for(300));
        oob.barrier();
        const ibv_wc wc = r.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, 1u);  // the first receive: no junk consumed one
        PCHECK_EQ(wc.byte_len, kGrh + 48);
        PCHECK_EQ(wc.src_qp, src.qpn);
        for (uint32_t i = 0; i < 48; ++i) PCHECK_EQ(r.buf[8192 + kGrh + i], 9);
        PCHECK_EQ(r.qp_state(), IBV_QPS_RTS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}
