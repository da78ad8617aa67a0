// SPDX-License-Identifier: BSD-2-Clause
// Many ids on one channel and many channels in parallel (seed manual §15), and the listen
// backlog.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr int kThreads = 4, kPerThread = 3;

}  // namespace

TEST(CmConcurrency, ThreadsWithOwnChannelsAgainstOneListener) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l;
        PCHECK(rdma_create_id(ch, &l, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        PCHECK(rdma_bind_addr(l, reinterpret_cast<sockaddr *>(&a)) == 0);
        PCHECK(rdma_listen(l, 16) == 0);
        oob.put<uint16_t>(ntohs(rdma_get_src_port(l)));
        // One channel, every id: requests, establishment and disconnects interleave.
        int established = 0, disconnected = 0;
        std::vector<char *> bufs;
        while (disconnected < kThreads * kPerThread) {
            rdma_cm_event *ev = next_event(ch);
            rdma_cm_id *id = ev->id;
            const rdma_cm_event_type t = ev->event;
            rdma_ack_cm_event(ev);
            if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
                ibv_qp_init_attr qa{};
                qa.qp_type = IBV_QPT_RC;
                qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
                qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
                PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
                char *buf = static_cast<char *>(calloc(1, 32));
                bufs.push_back(buf);
                ibv_mr *mr = rdma_reg_msgs(id, buf, 32);
                id->context = mr;
                PCHECK(rdma_post_recv(id, buf, buf, 32, mr) == 0);
                PCHECK(rdma_accept(id, nullptr) == 0);
            } else if (t == RDMA_CM_EVENT_ESTABLISHED) {
                ++established;
            } else if (t == RDMA_CM_EVENT_DISCONNECTED) {
                ++disconnected;
                ibv_wc wc;
                PCHECK(rdma_get_recv_comp(id, &wc) == 1);
                PCHECK(std::strncmp(reinterpret_cast<char *>(wc.wr_id), "thread ", 7) == 0);
                rdma_dereg_mr(static_cast<ibv_mr *>(id->context));
                rdma_destroy_qp(id);
                PCHECK(rdma_destroy_id(id) == 0);
            } else {
                std::fprintf(stderr, "unexpected %s\n", rdma_event_str(t));
                return 5;
            }
        }
        PCHECK_EQ(established, kThreads * kPerThread);
        for (char *b : bufs) free(b);
        PCHECK(rdma_destroy_id(l) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        std::atomic<int> ok{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < kThreads; ++t)
            ts.emplace_back([&, t] {
                rdma_event_channel *ch = rdma_create_event_channel();
                for (int k = 0; k < kPerThread; ++k) {
                    rdma_cm_id *id = resolved_id(ch, port);
                    ibv_qp_init_attr qa{};
                    qa.qp_type = IBV_QPT_RC;
                    qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
                    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
                    PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
                    PCHECK(rdma_connect(id, nullptr) == 0);
                    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED, 15000));
                    char msg[32];
                    std::snprintf(msg, sizeof msg, "thread %d conn %d", t, k);
                    ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof msg);
                    PCHECK(rdma_post_send(id, nullptr, msg, sizeof msg, mr, IBV_SEND_SIGNALED) ==
                           0);
                    ibv_wc wc;
                    PCHECK(rdma_get_send_comp(id, &wc) == 1);
                    PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
                    PCHECK(rdma_disconnect(id) == 0);
                    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED, 15000));
                    rdma_dereg_mr(mr);
                    rdma_destroy_qp(id);
                    PCHECK(rdma_destroy_id(id) == 0);
                    ++ok;
                }
                rdma_destroy_event_channel(ch);
            });
        for (auto &t : ts) t.join();
        PCHECK_EQ(ok.load(), kThreads * kPerThread);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// With backlog 1, a second request is not delivered while the first is unanswered.
TEST(CmConcurrency, BacklogHoldsRequests) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l;
        PCHECK(rdma_create_id(ch, &l, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        PCHECK(rdma_bind_addr(l, reinterpret_cast<sockaddr *>(&a)) == 0);
        PCHECK(rdma_listen(l, 1) == 0);
        oob.put<uint16_t>(ntohs(rdma_get_src_port(l)));
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 15000);
        rdma_cm_id *first = ev->id;
        rdma_ack_cm_event(ev);
        oob.barrier();  // the client has sent its second request
        pollfd p{ch->fd, POLLIN, 0};
        PCHECK_EQ(poll(&p, 1, 300), 0);  // held back by the backlog
        PCHECK(rdma_reject(first, nullptr, 0) == 0);
        ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 15000);  // now it comes
        rdma_cm_id *second = ev->id;
        rdma_ack_cm_event(ev);
        PCHECK(rdma_reject(second, nullptr, 0) == 0);
        oob.barrier();
        PCHECK(rdma_destroy_id(first) == 0);
        PCHECK(rdma_destroy_id(second) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *ids[2];
        for (auto &id : ids) {
            id = resolved_id(ch, port);
            rdma_conn_param p = qp_less_param();
            PCHECK(rdma_connect(id, &p) == 0);
        }
        oob.barrier();
        for (int i = 0; i < 2; ++i) {
            rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_REJECTED, 15000);
            PCHECK_EQ(ev->status, 28);
            rdma_ack_cm_event(ev);
        }
        oob.barrier();
        for (auto *id : ids) PCHECK(rdma_destroy_id(id) == 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}
