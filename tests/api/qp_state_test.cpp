// SPDX-License-Identifier: BSD-2-Clause
// The QP state machine through ibv_modify_qp, with the kernel's attribute rules.
#include <cerrno>

#include "api/api_util.h"

namespace {

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

class QpState : public VerbsTest {
protected:
    void SetUp() override {
        VerbsTest::SetUp();
        cq_ = ibv_create_cq(ctx_, 32, nullptr, nullptr, 0);
        ASSERT_NE(cq_, nullptr);
        qp_ = make_qp(cq_);
        ASSERT_NE(qp_, nullptr);
    }
    void TearDown() override {
        if (qp_) {
            EXPECT_EQ(ibv_destroy_qp(qp_), 0);
        }
        if (cq_) {
            EXPECT_EQ(ibv_destroy_cq(cq_), 0);
        }
        VerbsTest::TearDown();
    }
    ibv_qp_attr rtr_attr() {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = 0x123456;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
        a.ah_attr.grh.dgid.raw[12] = 127;
        a.ah_attr.grh.dgid.raw[15] = 1;
        return a;
    }
    int to(ibv_qp_state s, int mask, ibv_qp_attr a = {}) {
        a.qp_state = s;
        if (s == IBV_QPS_INIT) a.port_num = 1;
        return ibv_modify_qp(qp_, &a, mask);
    }
    ibv_qp_state state() {
        ibv_qp_attr a;
        ibv_qp_init_attr ia;
        EXPECT_EQ(ibv_query_qp(qp_, &a, IBV_QP_STATE, &ia), 0);
        EXPECT_EQ(a.qp_state, qp_->state);
        return a.qp_state;
    }
    ibv_cq *cq_ = nullptr;
    ibv_qp *qp_ = nullptr;
};

}  // namespace

TEST_F(QpState, FullWalk) {
    EXPECT_EQ(state(), IBV_QPS_RESET);
    EXPECT_EQ(to(IBV_QPS_INIT, kInitMask), 0);
    EXPECT_EQ(state(), IBV_QPS_INIT);
    EXPECT_EQ(to(IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);  // INIT->INIT
    ibv_qp_attr r = rtr_attr();
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask), 0);
    EXPECT_EQ(state(), IBV_QPS_RTR);
    ibv_qp_attr s{};
    s.timeout = 14;
    s.retry_cnt = 7;
    s.rnr_retry = 7;
    s.max_rd_atomic = 1;
    EXPECT_EQ(to(IBV_QPS_RTS, kRtsMask, s), 0);
    EXPECT_EQ(state(), IBV_QPS_RTS);
    ibv_qp_attr q;
    ibv_qp_init_attr ia;
    ASSERT_EQ(ibv_query_qp(qp_, &q, 0, &ia), 0);
    EXPECT_EQ(q.timeout, 14);
    EXPECT_EQ(q.dest_qp_num, 0x123456u);
    EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
    EXPECT_EQ(q.max_rd_atomic, 1);
    EXPECT_EQ(to(IBV_QPS_SQD, IBV_QP_STATE), 0);
    EXPECT_EQ(state(), IBV_QPS_SQD);
    EXPECT_EQ(to(IBV_QPS_RTS, IBV_QP_STATE), 0);
    EXPECT_EQ(to(IBV_QPS_ERR, IBV_QP_STATE), 0);
    EXPECT_EQ(state(), IBV_QPS_ERR);
    EXPECT_EQ(to(IBV_QPS_RESET, IBV_QP_STATE), 0);
    EXPECT_EQ(state(), IBV_QPS_RESET);
    EXPECT_EQ(to(IBV_QPS_INIT, kInitMask), 0);  // usable again after RESET
}

TEST_F(QpState, IllegalTransitionsAndMasks) {
    ibv_qp_attr r = rtr_attr();
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask), EINVAL);  // RESET->RTR
    EXPECT_EQ(to(IBV_QPS_RTS, IBV_QP_STATE), EINVAL);       // RESET->RTS
    EXPECT_EQ(to(IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PORT), EINVAL);  // missing attrs
    EXPECT_EQ(to(IBV_QPS_INIT, kInitMask | IBV_QP_DEST_QPN), EINVAL);  // not allowed here
    EXPECT_EQ(state(), IBV_QPS_RESET);  // failed calls change nothing
    EXPECT_EQ(to(IBV_QPS_INIT, kInitMask), 0);
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
    r.ah_attr.is_global = 0;  // RoCE: no GRH, no path
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask), EINVAL);
    r = rtr_attr();
    r.ah_attr.grh.sgid_index = 200;
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask), EINVAL);
    r = rtr_attr();
    r.max_dest_rd_atomic = 200;
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask), EINVAL);
    r = rtr_attr();
    EXPECT_EQ(ibv_modify_qp(qp_, &r, kRtrMask), 0);
    ibv_qp_attr s{};
    s.retry_cnt = 8;  // 3 bits
    EXPECT_EQ(to(IBV_QPS_RTS, kRtsMask, s), EINVAL);
    s.retry_cnt = 7;
    EXPECT_EQ(to(IBV_QPS_RTS, kRtsMask, s), 0);
    EXPECT_EQ(to(IBV_QPS_INIT, kInitMask), EINVAL);  // RTS->INIT
    // An invalid port in INIT.
    EXPECT_EQ(to(IBV_QPS_RESET, IBV_QP_STATE), 0);
    ibv_qp_attr i{};
    i.qp_state = IBV_QPS_INIT;
    i.port_num = 2;
    EXPECT_EQ(ibv_modify_qp(qp_, &i, kInitMask), EINVAL);
}

TEST_F(QpState, PostingDependsOnState) {
    ibv_send_wr wr{};
    ibv_send_wr *bad = nullptr;
    wr.opcode = IBV_WR_SEND;
    EXPECT_EQ(ibv_post_send(qp_, &wr, &bad), EINVAL);  // RESET
    EXPECT_EQ(bad, &wr);
    ibv_recv_wr rwr{};
    ibv_recv_wr *rbad = nullptr;
    EXPECT_EQ(ibv_post_recv(qp_, &rwr, &rbad), EINVAL);  // RESET
    EXPECT_EQ(to(IBV_QPS_INIT, kInitMask), 0);
    EXPECT_EQ(ibv_post_recv(qp_, &rwr, &rbad), 0);  // INIT accepts receives
    EXPECT_EQ(ibv_post_send(qp_, &wr, &bad), EINVAL);
    // To ERR: the receive is flushed.
    EXPECT_EQ(to(IBV_QPS_ERR, IBV_QP_STATE), 0);
    ibv_wc wc;
    ASSERT_EQ(ibv_poll_cq(cq_, 1, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(wc.qp_num, qp_->qp_num);
}
