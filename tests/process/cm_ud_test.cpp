// SPDX-License-Identifier: BSD-2-Clause
// RDMA_PS_UDP ids between two processes: SIDR-style resolution (accept with private data and
// param.ud, reject, timeout), and a datagram sent with what ESTABLISHED reported.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

ibv_qp_init_attr ud_attr() {
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_UD;
    a.cap.max_send_wr = a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return a;
}

}  // namespace

// Accept: the requester's 180 bytes arrive with CONNECT_REQUEST; ESTABLISHED carries the
// acceptor's QPN, RDMA_UDP_QKEY, an address handle and the 136-byte reply. A SEND through
// that address handle lands in the acceptor's QP (created by rdma_create_qp, already in RTS).
TEST(CmUd, SidrAcceptThenDatagram) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob, RDMA_PS_UDP);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *id = ev->id;
        PCHECK(ev->listen_id == l);
        PCHECK_EQ(ev->param.ud.private_data_len, 180);
        const auto *pd = static_cast<const uint8_t *>(ev->param.ud.private_data);
        for (int i = 0; i < 100; ++i) PCHECK_EQ(pd[i], uint8_t(i));
        for (int i = 100; i < 180; ++i) PCHECK_EQ(pd[i], 0);
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = ud_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        ibv_qp_attr at{};
        ibv_qp_init_attr ia{};
        PCHECK(ibv_query_qp(id->qp, &at, IBV_QP_STATE | IBV_QP_QKEY, &ia) == 0);
        PCHECK_EQ(at.qp_state, IBV_QPS_RTS);
        PCHECK_EQ(at.qkey, uint32_t(RDMA_UDP_QKEY));
        static char buf[256];
        ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof buf);
        PCHECK(mr);
        PCHECK(rdma_post_recv(id, nullptr, buf, sizeof buf, mr) == 0);
        char reply[136];
        for (int i = 0; i < 136; ++i) reply[i] = char(200 - i);
        rdma_conn_param p{};
        p.private_data = reply;
        p.private_data_len = sizeof reply;
        PCHECK(rdma_accept(id, &p) == 0);
        ibv_wc wc;
        PCHECK(rdma_get_recv_comp(id, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 40u + 11u);
        PCHECK(std::memcmp(buf + 40, "hello, sidr", 11) == 0);
        oob.barrier();
        rdma_dereg_mr(mr);
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, port, RDMA_PS_UDP);
        ibv_qp_init_attr qa = ud_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        uint8_t req[100];
        for (int i = 0; i < 100; ++i) req[i] = uint8_t(i);
        rdma_conn_param p{};
        p.private_data = req;
        p.private_data_len = sizeof req;
        PCHECK(rdma_connect(id, &p) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
        PCHECK_EQ(ev->param.ud.private_data_len, 136);
        const auto *rp = static_cast<const uint8_t *>(ev->param.ud.private_data);
        for (int i = 0; i < 136; ++i) PCHECK_EQ(rp[i], uint8_t(200 - i));
        PCHECK_EQ(ev->param.ud.qkey, uint32_t(RDMA_UDP_QKEY));
        PCHECK(ev->param.ud.qp_num != 0);
        PCHECK(ev->param.ud.ah_attr.is_global);
        ibv_ah *ah = ibv_create_ah(id->pd, &ev->param.ud.ah_attr);
        PCHECK(ah);
        const uint32_t qpn = ev->param.ud.qp_num;
        rdma_ack_cm_event(ev);
        static char msg[16] = "hello, sidr";
        ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof msg);
        PCHECK(rdma_post_ud_send(id, nullptr, msg, 11, mr, IBV_SEND_SIGNALED, ah, qpn) == 0);
        ibv_wc wc;
        PCHECK(rdma_get_send_comp(id, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        oob.barrier();
        ibv_destroy_ah(ah);
        rdma_dereg_mr(mr);
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// Reject: the requester gets UNREACHABLE with the SIDR status (2, "rejected") and the
// rejecter's private data; more than 136 bytes is refused.
TEST(CmUd, SidrRejectIsUnreachable) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob, RDMA_PS_UDP);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *id = ev->id;
        rdma_ack_cm_event(ev);
        char big[137] = {};
        PCHECK(rdma_reject(id, big, 137) == -1);
        PCHECK_EQ(errno, EINVAL);
        PCHECK(rdma_accept(id, nullptr) == -1);  // no QP and no qp_num to answer with
        PCHECK_EQ(errno, EINVAL);
        PCHECK(rdma_reject(id, "nope", 4) == 0);
        PCHECK(rdma_reject(id, nullptr, 0) == -1);  // answered already
        PCHECK_EQ(errno, EINVAL);
        oob.barrier();
        PCHECK(rdma_destroy_id(id) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, port, RDMA_PS_UDP);
        uint8_t big[181] = {};
        rdma_conn_param p{};
        p.private_data = big;
        p.private_data_len = sizeof big;
        PCHECK(rdma_connect(id, &p) == -1);  // over 180 bytes
        PCHECK_EQ(errno, EINVAL);
        PCHECK(rdma_connect(id, nullptr) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_UNREACHABLE);
        PCHECK_EQ(ev->status, 2);
        PCHECK(std::memcmp(ev->param.ud.private_data, "nope", 4) == 0);
        rdma_ack_cm_event(ev);
        oob.barrier();
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// Nobody answers (a bound UDP port that never replies): UNREACHABLE with -ETIMEDOUT once the
// CM timeout (here 600 ms) has passed, after retransmissions.
TEST(CmUd, SidrTimeoutIsUnreachable) {
    auto silent = [](Oob &oob) {
        const int s = socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in a = loopback(0);
        PCHECK(bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
        oob.put<uint16_t>(ntohs(a.sin_port));
        oob.barrier();
        char buf[512];
        int got = 0;
        while (recv(s, buf, sizeof buf, MSG_DONTWAIT) > 0) ++got;
        PCHECK(got >= 2);  // the request was retransmitted
        close(s);
        return 0;
    };
    auto client = [](Oob &oob) {
        setenv("SOFTRDMA_CM_TIMEOUT_MS", "600", 1);
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, port, RDMA_PS_UDP);
        const uint64_t t0 = now_ms();
        PCHECK(rdma_connect(id, nullptr) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_UNREACHABLE, 5000);
        PCHECK_EQ(ev->status, -ETIMEDOUT);
        const uint64_t took = now_ms() - t0;
        PCHECK(took >= 550 && took < 3000);
        rdma_ack_cm_event(ev);
        oob.barrier();
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(silent, client));
}

// A retransmitted SIDR request (same sender, same request id) is answered again with the same
// reply and never becomes a second id; malformed datagrams on the listener's port are ignored.
// The requester here is a plain UDP socket speaking the bytes of docs/wire.md §8.2.
TEST(CmUd, RetransmittedRequestAnsweredAgainNotDuplicated) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob, RDMA_PS_UDP);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *id = ev->id;
        PCHECK_EQ(ev->param.ud.private_data_len, 180);
        PCHECK_EQ(static_cast<const uint8_t *>(ev->param.ud.private_data)[0], 0xab);
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = ud_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        PCHECK(rdma_accept(id, nullptr) == 0);
        oob.barrier();  // the client sent the duplicate and the junk, and got its answers
        pollfd p{ch->fd, POLLIN, 0};
        PCHECK_EQ(poll(&p, 1, 300), 0);  // no second CONNECT_REQUEST, nothing else
        oob.barrier();
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        const int s = socket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(s >= 0);
        timeval tv{5, 0};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_in to = loopback(port);
        // Request: magic 'S', version 1, type 1, status 0, request id, QPN 0, Q_Key 0,
        // private data length 1, reserved, then one byte of private data.
        const uint8_t req[21] = {0x53, 1, 1, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0,   0,
                                 0,    0, 0, 0, 0,    1,    0,    0,    0, 0xab};
        uint8_t rep[2][512];
        ssize_t n[2];
        for (int k = 0; k < 2; ++k) {
            PCHECK(sendto(s, req, sizeof req, 0, reinterpret_cast<sockaddr *>(&to), sizeof to) ==
                   ssize_t(sizeof req));
            n[k] = recv(s, rep[k], sizeof rep[k], 0);
            PCHECK(n[k] >= 20);
        }
        PCHECK_EQ(n[0], n[1]);
        PCHECK(std::memcmp(rep[0], rep[1], size_t(n[0])) == 0);  // the same answer again
        PCHECK_EQ(rep[0][0], 0x53);
        PCHECK_EQ(rep[0][2], 2);                           // reply
        PCHECK_EQ(rep[0][3], 0);                           // accepted
        PCHECK(std::memcmp(rep[0] + 4, req + 4, 4) == 0);  // our request id
        const uint32_t qkey = uint32_t(rep[0][12]) << 24 | uint32_t(rep[0][13]) << 16 |
                              uint32_t(rep[0][14]) << 8 | rep[0][15];
        PCHECK_EQ(qkey, uint32_t(RDMA_UDP_QKEY));
        const uint8_t junk[][8] = {{0x53, 1, 1}, {0x53, 1, 9, 0, 1, 2, 3, 4}, {0, 0, 0, 0, 0}};
        for (const auto &j : junk)
            PCHECK(sendto(s, j, sizeof j, 0, reinterpret_cast<sockaddr *>(&to), sizeof to) > 0);
        oob.barrier();
        oob.barrier();
        close(s);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}
