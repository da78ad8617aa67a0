// SPDX-License-Identifier: BSD-2-Clause
// A verbs context's command fd stands for its objects: a dup of it imports the context
// (ibv_import_device), and its PDs and MRs by handle; a QP made on the imported objects moves
// real data into the original region.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "process/harness.h"

using namespace sr_test;

TEST(SharedObjects, ImportedPdAndMrCarryTraffic) {
    auto importer = [](Oob &oob) {
        Endpoint ep;  // the exporter: context, PD, MR (and a QP left unused)
        PCHECK(ep.ctx->cmd_fd >= 0);
        const int fd = dup(ep.ctx->cmd_fd);
        ibv_context *ctx = ibv_import_device(fd);
        PCHECK(ctx && ctx != ep.ctx);
        PCHECK_EQ(ctx->cmd_fd, fd);
        PCHECK(ibv_import_pd(ctx, ep.pd->handle + 1000) == nullptr);
        PCHECK_EQ(errno, EINVAL);
        ibv_pd *pd = ibv_import_pd(ctx, ep.pd->handle);
        PCHECK(pd);
        ibv_mr *mr = ibv_import_mr(pd, ep.mr->handle);
        PCHECK(mr && mr->lkey == ep.mr->lkey && mr->addr == ep.mr->addr);
        ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = cq;
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        ibv_qp *qp = ibv_create_qp(pd, &qa);
        PCHECK(cq && qp);
        // Swap the endpoint's QP for the one on imported objects; it connects it.
        std::swap(ep.qp, qp);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        PCHECK(ibv_modify_qp(
                   ep.qp, &a,
                   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
        ep.exchange_and_connect(oob);
        oob.barrier();  // the peer wrote into the region through the imported QP
        for (int i = 0; i < 4096; ++i) PCHECK_EQ(ep.buf[i], uint8_t(i * 5 + 1));
        ibv_unimport_mr(mr);
        ibv_unimport_pd(pd);
        PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);
        ep.qp = qp;  // the exporter's own QP, destroyed with the endpoint
        PCHECK_EQ(ibv_destroy_cq(cq), 0);
        PCHECK_EQ(ibv_close_device(ctx), 0);
        // Any other fd is not a verbs context of this process.
        const int other = dup(0);
        errno = 0;
        PCHECK(ibv_import_device(other) == nullptr);
        PCHECK_EQ(errno, EOPNOTSUPP);
        close(other);
        return 0;
    };
    auto writer = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 4096; ++i) ep.buf[i] = uint8_t(i * 5 + 1);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 4096) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(writer, importer));
}
