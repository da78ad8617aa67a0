// SPDX-License-Identifier: BSD-2-Clause
// `softrdma stat` and `softrdma res` read what two real processes publish: the byte counters
// equal what was sent and received, the QP, its MR and their attributes are listed, and a
// process that does not use softrdma is said to be one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr uint64_t kSent = 10 * 10000 + 5 * 70000;  // SEND and WRITE payload bytes

}  // namespace

TEST(Stats, CountersAndResourcesOfTwoProcesses) {
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 10; ++i) {
            PCHECK(ep.post(IBV_WR_SEND, 1, 0, 10000) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        }
        for (int i = 0; i < 5; ++i) {  // 70000 bytes: two segments each
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 0, 70000, 100000) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        }
        oob.barrier();  // the receiver has all of it
        int st = 0;
        const std::string me = std::to_string(getpid());
        const std::string s = run_cli("stat --json " + me, st);
        PCHECK_EQ(st, 0);
        PCHECK_EQ(qp_value(s, ep.qp->qp_num, "sent_bytes"), kSent);
        PCHECK(qp_value(s, ep.qp->qp_num, "sent_pkts") >= 20);
        PCHECK_EQ(qp_value(s, ep.qp->qp_num, "rcvd_bytes"), 0u);
        const std::string r = run_cli("res --json " + me, st);
        PCHECK_EQ(st, 0);
        PCHECK(r.find("\"qpn\": " + std::to_string(ep.qp->qp_num) + ", \"type\": \"RC\", " +
                      "\"state\": \"RTS\"") != std::string::npos);
        PCHECK(r.find("\"length\": " + std::to_string(1 << 20) +
                      ", \"lkey\": " + std::to_string(ep.mr->lkey)) != std::string::npos);
        const std::string text = run_cli("res " + me, st);
        PCHECK(text.find("qp " + std::to_string(ep.qp->qp_num) + " RC RTS") != std::string::npos);
        // Gone from the listing once destroyed.
        const uint32_t qpn = ep.qp->qp_num;
        PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);
        ep.qp = nullptr;
        const std::string after = run_cli("res --json " + me, st);
        PCHECK(after.find("\"qpn\": " + std::to_string(qpn) + ",") == std::string::npos);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint ep;
        for (int i = 0; i < 10; ++i) ep.post_recv(uint64_t(i), size_t(i) * 10000, 10000);
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 10; ++i) PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        // The WRITEs complete only at the sender: wait until all of them landed.
        const uint64_t until = now_ms() + 10000;
        int st = 0;
        const std::string me = std::to_string(getpid());
        uint64_t got = 0;
        while (now_ms() < until) {
            got = qp_value(run_cli("stat --json " + me, st), ep.qp->qp_num, "rcvd_bytes");
            if (got >= kSent) break;
            usleep(20000);
        }
        PCHECK_EQ(got, kSent);
        oob.barrier();
        oob.barrier();
        // A process that does not use softrdma: said so, exit 1.
        run_cli("stat " + std::to_string(getppid()), st);
        PCHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}
