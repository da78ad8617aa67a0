// SPDX-License-Identifier: BSD-2-Clause
// Shared fixture for single-process API tests: an opened sr_lo context with a PD.
#pragma once
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <string>

class VerbsTest : public ::testing::Test {
protected:
    void SetUp() override {
        int n = 0;
        list_ = ibv_get_device_list(&n);
        ASSERT_NE(list_, nullptr);
        for (int i = 0; i < n; ++i)
            if (std::string(ibv_get_device_name(list_[i])) == "sr_lo")
                ctx_ = ibv_open_device(list_[i]);
        ASSERT_NE(ctx_, nullptr);
        pd_ = ibv_alloc_pd(ctx_);
        ASSERT_NE(pd_, nullptr);
    }
    void TearDown() override {
        if (pd_) {
            EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
        }
        if (ctx_) ibv_close_device(ctx_);
        if (list_) ibv_free_device_list(list_);
    }
    ibv_qp *make_qp(ibv_cq *cq, ibv_qp_type t = IBV_QPT_RC, ibv_srq *srq = nullptr) {
        ibv_qp_init_attr a{};
        a.send_cq = cq;
        a.recv_cq = cq;
        a.srq = srq;
        a.qp_type = t;
        a.cap.max_send_wr = 16;
        a.cap.max_recv_wr = 16;
        a.cap.max_send_sge = 2;
        a.cap.max_recv_sge = 2;
        return ibv_create_qp(pd_, &a);
    }
    ibv_device **list_ = nullptr;
    ibv_context *ctx_ = nullptr;
    ibv_pd *pd_ = nullptr;
};
