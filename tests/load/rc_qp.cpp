// SPDX-License-Identifier: BSD-2-Clause
#include "load/rc_qp.h"

#include <unistd.h>

#include <cstring>

namespace sr_load {

ibv_context *open_loopback_context() {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    PCHECK(list && n > 0);
    ibv_device *dev = nullptr;
    for (int i = 0; i < n; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), "sr_lo") == 0) dev = list[i];
    PCHECK(dev);
    ibv_context *ctx = ibv_open_device(dev);
    PCHECK(ctx);
    ibv_free_device_list(list);  // the device outlives the list, as in rdma-core
    return ctx;
}

ibv_qp *create_rc_qp(ibv_pd *pd, ibv_cq *cq, uint32_t max_send_wr, uint32_t max_recv_wr) {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = max_send_wr;
    a.cap.max_recv_wr = max_recv_wr;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    ibv_qp *qp = ibv_create_qp(pd, &a);
    PCHECK(qp);
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    PCHECK(ibv_modify_qp(
               qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    return qp;
}

sr_test::Wire wire_of(ibv_qp *qp, uint64_t addr, uint32_t rkey) {
    sr_test::Wire w{};
    w.qpn = qp->qp_num;
    ibv_gid gid;
    PCHECK(ibv_query_gid(qp->context, 1, 0, &gid) == 0);
    std::memcpy(w.gid, gid.raw, 16);
    w.addr = addr;
    w.rkey = rkey;
    return w;
}

void connect_rc_qp(ibv_qp *qp, const sr_test::Wire &peer) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = peer.qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
    PCHECK(ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ==
           0);
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    PCHECK(ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

}  // namespace sr_load
