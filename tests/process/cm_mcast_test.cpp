// SPDX-License-Identifier: BSD-2-Clause
// Multicast through the CM between processes: rdma_join_multicast(_ex) as full and send-only
// member, MULTICAST_JOIN's param.ud, datagrams to the group with rdma_post_ud_send, nothing
// after rdma_leave_multicast, and the errors the kernel and rdma-core return.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <unistd.h>

#include <cstring>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr size_t kGrh = 40;
constexpr size_t kSlot = 512;

sockaddr_in group_addr() {  // one group per test run
    sockaddr_in g{};
    g.sin_family = AF_INET;
    g.sin_addr.s_addr = htonl(0xefff0000u | (uint32_t(getppid()) & 0xffff));  // 239.255.x.y
    return g;
}

// A PS_UDP id resolved from 127.0.0.1 to the group, with a UD QP from rdma_create_qp.
rdma_cm_id *group_id(rdma_event_channel *ch, sockaddr_in &g) {
    rdma_cm_id *id = nullptr;
    PCHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_UDP) == 0);
    sockaddr_in src = loopback(0);
    PCHECK(rdma_resolve_addr(id, reinterpret_cast<sockaddr *>(&src),
                             reinterpret_cast<sockaddr *>(&g), 2000) == 0);
    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_UD;
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    PCHECK(rdma_create_qp(id, nullptr, &a) == 0);
    return id;
}

// Joins and checks MULTICAST_JOIN: the join's context, QPN 0xFFFFFF, RDMA_UDP_QKEY and the
// MGID ::ffff:a.b.c.d. Returns the address handle attributes to send with.
ibv_ah_attr join(rdma_event_channel *ch, rdma_cm_id *id, sockaddr_in &g, bool send_only,
                 void *ctx) {
    rdma_cm_join_mc_attr_ex x{};
    x.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
    x.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER : RDMA_MC_JOIN_FLAG_FULLMEMBER;
    x.addr = reinterpret_cast<sockaddr *>(&g);
    PCHECK(rdma_join_multicast_ex(id, &x, ctx) == 0);
    rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
    PCHECK(ev->id == id);
    PCHECK(ev->param.ud.private_data == ctx);
    PCHECK_EQ(ev->param.ud.qp_num, 0xffffffu);
    PCHECK_EQ(ev->param.ud.qkey, uint32_t(RDMA_UDP_QKEY));
    const ibv_ah_attr ah = ev->param.ud.ah_attr;
    PCHECK_EQ(ah.is_global, 1);
    uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memcpy(mgid + 12, &g.sin_addr, 4);
    PCHECK(std::memcmp(ah.grh.dgid.raw, mgid, 16) == 0);
    rdma_ack_cm_event(ev);
    return ah;
}

bool poll_one(ibv_cq *cq, ibv_wc &wc, int timeout_ms) {
    const uint64_t end = now_ms() + uint64_t(timeout_ms);
    while (now_ms() < end) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        PCHECK(n >= 0);
        if (n == 1) return true;
        usleep(200);
    }
    return false;
}

}  // namespace

// A full member receives the group's datagrams; a send-only member (same process) and, after
// rdma_leave_multicast, the former member receive nothing.
TEST(CmMcast, JoinSendOnlyAndLeave) {
    auto sender = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        sockaddr_in g = group_addr();
        rdma_cm_id *id = group_id(ch, g);
        ibv_ah_attr aa = join(ch, id, g, true, &oob);
        ibv_ah *ah = ibv_create_ah(id->pd, &aa);
        PCHECK(ah);
        static char msg[64];
        ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof msg);
        PCHECK(mr);
        ibv_wc wc;
        for (int round = 0; round < 2; ++round) {
            oob.barrier();  // receivers ready (round 1: after the leave)
            for (int i = 0; i < 3; ++i) {
                std::snprintf(msg, sizeof msg, "round %d datagram %d", round, i);
                PCHECK(rdma_post_ud_send(id, nullptr, msg, sizeof msg, mr, IBV_SEND_SIGNALED, ah,
                                         0xffffff) == 0);
                PCHECK(poll_one(id->send_cq, wc, 5000));
                PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            }
            oob.barrier();
        }
        PCHECK(rdma_leave_multicast(id, reinterpret_cast<sockaddr *>(&g)) == 0);
        ibv_destroy_ah(ah);
        rdma_dereg_mr(mr);
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto receivers = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        sockaddr_in g = group_addr();
        rdma_cm_id *member = group_id(ch, g), *sender_only = group_id(ch, g);
        static uint8_t buf[2][8 * kSlot];
        ibv_mr *mr[2] = {rdma_reg_msgs(member, buf[0], sizeof buf[0]),
                         rdma_reg_msgs(sender_only, buf[1], sizeof buf[1])};
        rdma_cm_id *ids[2] = {member, sender_only};
        for (int k = 0; k < 2; ++k)
            for (int i = 0; i < 8; ++i)
                PCHECK(rdma_post_recv(ids[k], reinterpret_cast<void *>(uintptr_t(i)),
                                      buf[k] + i * kSlot, kSlot, mr[k]) == 0);
        int tag = 0;
        join(ch, member, g, false, &tag);
        join(ch, sender_only, g, true, nullptr);
        oob.barrier();
        ibv_wc wc;
        for (int i = 0; i < 3; ++i) {
            PCHECK(poll_one(member->recv_cq, wc, 5000));
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.byte_len, kGrh + 64);
            PCHECK(wc.wc_flags & IBV_WC_GRH);
            char want[64];
            std::snprintf(want, sizeof want, "round 0 datagram %d", i);
            PCHECK(std::strcmp(reinterpret_cast<char *>(buf[0] + wc.wr_id * kSlot + kGrh), want) ==
                   0);
        }
        PCHECK(!poll_one(sender_only->recv_cq, wc, 300));  // send-only: never attached
        oob.barrier();
        PCHECK(rdma_leave_multicast(member, reinterpret_cast<sockaddr *>(&g)) == 0);
        PCHECK(rdma_leave_multicast(member, reinterpret_cast<sockaddr *>(&g)) == -1);
        PCHECK_EQ(errno, EADDRNOTAVAIL);
        oob.barrier();
        oob.barrier();
        PCHECK(!poll_one(member->recv_cq, wc, 300));  // left: nothing more arrives
        for (int k = 0; k < 2; ++k) {
            rdma_dereg_mr(mr[k]);
            rdma_destroy_qp(ids[k]);
        }
        PCHECK(rdma_destroy_id(member) == 0);
        PCHECK(rdma_destroy_id(sender_only) == 0);  // still joined (send-only): leaves it
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receivers));
}

// Joining needs a datagram id with an address, a multicast group and valid flags.
TEST(CmMcast, JoinErrors) {
    auto one = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        sockaddr_in g = group_addr();
        rdma_cm_id *unbound = nullptr, *tcp = nullptr;
        PCHECK(rdma_create_id(ch, &unbound, nullptr, RDMA_PS_UDP) == 0);
        PCHECK(rdma_create_id(ch, &tcp, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in lo = loopback(0);
        PCHECK(rdma_bind_addr(tcp, reinterpret_cast<sockaddr *>(&lo)) == 0);
        auto *ga = reinterpret_cast<sockaddr *>(&g);
        PCHECK(rdma_join_multicast(unbound, ga, nullptr) == -1 && errno == EINVAL);
        PCHECK(rdma_join_multicast(tcp, ga, nullptr) == -1 && errno == EINVAL);
        rdma_cm_id *id = group_id(ch, g);
        sockaddr_in uni = loopback(0);
        PCHECK(rdma_join_multicast(id, reinterpret_cast<sockaddr *>(&uni), nullptr) == -1 &&
               errno == EINVAL);
        rdma_cm_join_mc_attr_ex x{};
        x.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;  // no join flags
        x.addr = ga;
        PCHECK(rdma_join_multicast_ex(id, &x, nullptr) == -1 && errno == EINVAL);
        x.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
        x.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
        PCHECK(rdma_join_multicast_ex(id, &x, nullptr) == -1 && errno == EINVAL);
        PCHECK(rdma_leave_multicast(id, ga) == -1 && errno == EADDRNOTAVAIL);
        rdma_destroy_qp(id);
        for (rdma_cm_id *i : {unbound, tcp, id}) PCHECK(rdma_destroy_id(i) == 0);
        rdma_destroy_event_channel(ch);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(one, idle_peer));
}
