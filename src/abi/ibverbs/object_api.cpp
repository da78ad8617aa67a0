// SPDX-License-Identifier: BSD-2-Clause
// Exported PD, MR, CQ, completion channel, QP, SRQ and AH entry points.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "verbs/dm.h"
#include "verbs/verbs_ops.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace softrdma::verbs;
using softrdma::refuse;

extern "C" {

ibv_pd *ibv_alloc_pd(ibv_context *ctx) {
    return alloc_pd(ctx);
}
int ibv_dealloc_pd(ibv_pd *pd) {
    return dealloc_pd(pd);
}

ibv_mr *ibv_reg_mr(ibv_pd *pd, void *addr, size_t length, int access) {
    return reg_mr(pd, addr, length, uint64_t(uintptr_t(addr)), unsigned(access));
}
ibv_mr *ibv_reg_mr_iova(ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access) {
    return reg_mr(pd, addr, length, iova, unsigned(access));
}
ibv_mr *ibv_reg_mr_iova2(ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                         unsigned int access) {
    return reg_mr(pd, addr, length, iova, access);
}
ibv_mr *ibv_reg_dmabuf_mr(ibv_pd *, uint64_t, size_t, uint64_t, int, int) {
    errno =
        refuse(EOPNOTSUPP, "ibv_reg_dmabuf_mr", "device memory (dma-buf) needs a kernel driver");
    return nullptr;
}
int ibv_rereg_mr(ibv_mr *mr, int flags, ibv_pd *pd, void *addr, size_t length, int access) {
    const int e = rereg_mr(mr, flags, pd, addr, length, access);
    if (e) {
        errno = e;
        return IBV_REREG_MR_ERR_INPUT;
    }
    return 0;
}
int ibv_dereg_mr(ibv_mr *mr) {
    return dereg_mr(mr);
}

// Objects shared through a context's command fd (see verbs/shared_objects.h).
ibv_pd *ibv_import_pd(ibv_context *ctx, uint32_t handle) {
    return import_pd(ctx, handle);
}
void ibv_unimport_pd(ibv_pd *pd) {
    unimport_pd(pd);
}
ibv_mr *ibv_import_mr(ibv_pd *pd, uint32_t handle) {
    return import_mr(pd, handle);
}
void ibv_unimport_mr(ibv_mr *mr) {
    unimport_mr(mr);
}
ibv_dm *ibv_import_dm(ibv_context *ctx, uint32_t handle) {
    return import_dm(ctx, handle);
}
void ibv_unimport_dm(ibv_dm *) {}

ibv_comp_channel *ibv_create_comp_channel(ibv_context *ctx) {
    return create_comp_channel(ctx);
}
int ibv_destroy_comp_channel(ibv_comp_channel *ch) {
    return destroy_comp_channel(ch);
}

ibv_cq *ibv_create_cq(ibv_context *ctx, int cqe, void *cq_context, ibv_comp_channel *channel,
                      int comp_vector) {
    if (cqe < 1 || comp_vector < 0) {
        errno = refuse(EINVAL, "ibv_create_cq", "cqe %d (at least 1), comp_vector %d", cqe,
                       comp_vector);
        return nullptr;
    }
    ibv_cq_init_attr_ex a{};
    a.cqe = uint32_t(cqe);
    a.cq_context = cq_context;
    a.channel = channel;
    a.comp_vector = uint32_t(comp_vector);
    ibv_cq_ex *cq = create_cq_ex(ctx, &a);
    return cq ? ibv_cq_ex_to_cq(cq) : nullptr;
}
int ibv_resize_cq(ibv_cq *cq, int cqe) {
    return resize_cq(cq, cqe);
}
int ibv_destroy_cq(ibv_cq *cq) {
    return destroy_cq(cq);
}
int ibv_get_cq_event(ibv_comp_channel *ch, ibv_cq **cq, void **cq_context) {
    return get_cq_event(ch, cq, cq_context);
}
void ibv_ack_cq_events(ibv_cq *cq, unsigned int nevents) {
    ack_cq_events(cq, nevents);
}

ibv_qp *ibv_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) {
    if (!pd || !attr) {
        errno = refuse(EINVAL, "ibv_create_qp", "NULL pd or attr");
        return nullptr;
    }
    ibv_qp_init_attr_ex a{};
    std::memcpy(&a, attr, sizeof *attr);
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd = pd;
    ibv_qp *qp = create_qp_ex(pd->context, &a);
    if (qp) attr->cap = a.cap;  // granted capabilities go back to the caller
    return qp;
}
int ibv_modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask) {
    return modify_qp(qp, attr, mask);
}
int ibv_query_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask, ibv_qp_init_attr *init) {
    return query_qp(qp, attr, mask, init);
}
int ibv_destroy_qp(ibv_qp *qp) {
    return destroy_qp(qp);
}
ibv_qp_ex *ibv_qp_to_qp_ex(ibv_qp *qp) {
    // Every QP is allocated as an ibv_qp_ex, but only those created with send-ops flags
    // have the builder installed, like rdma-core.
    auto *qpx = reinterpret_cast<ibv_qp_ex *>(qp);
    if (!qpx || !(qpx->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) return nullptr;
    return qpx;
}
int ibv_query_qp_data_in_order(ibv_qp *qp, enum ibv_wr_opcode, uint32_t) {
    // One TCP stream per QP: data is always placed in order.
    return qp ? 1 : 0;
}
int ibv_query_ece(ibv_qp *, ibv_ece *) {
    return refuse(EOPNOTSUPP, "ibv_query_ece", "no enhanced connection establishment options");
}
int ibv_set_ece(ibv_qp *, ibv_ece *) {
    return refuse(EOPNOTSUPP, "ibv_set_ece", "no enhanced connection establishment options");
}

ibv_srq *ibv_create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) {
    if (!pd || !attr) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_srq_init_attr_ex a{};
    a.srq_context = attr->srq_context;
    a.attr = attr->attr;
    a.comp_mask = IBV_SRQ_INIT_ATTR_PD;
    a.pd = pd;
    return create_srq_ex(pd->context, &a);
}
int ibv_modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask) {
    return modify_srq(srq, attr, mask);
}
int ibv_query_srq(ibv_srq *srq, ibv_srq_attr *attr) {
    return query_srq(srq, attr);
}
int ibv_destroy_srq(ibv_srq *srq) {
    return destroy_srq(srq);
}

ibv_ah *ibv_create_ah(ibv_pd *pd, ibv_ah_attr *attr) {
    return create_ah(pd, attr);
}
int ibv_destroy_ah(ibv_ah *ah) {
    return destroy_ah(ah);
}

int ibv_init_ah_from_wc(ibv_context *ctx, uint8_t port, ibv_wc *wc, ibv_grh *grh, ibv_ah_attr *ah) {
    if (!ctx || !wc || !grh || !ah) return EINVAL;
    std::memset(ah, 0, sizeof *ah);
    ah->port_num = port;
    ah->sl = wc->sl;
    ah->is_global = 1;
    // Reply to the sender: its source GID is our destination.
    ah->grh.dgid = grh->sgid;
    ah->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
    ah->grh.traffic_class = uint8_t(be32toh(grh->version_tclass_flow) >> 20);
    ah->grh.hop_limit = 0xff;
    ah->grh.sgid_index = 0;
    return 0;
}
ibv_ah *ibv_create_ah_from_wc(ibv_pd *pd, ibv_wc *wc, ibv_grh *grh, uint8_t port) {
    ibv_ah_attr a;
    if (!pd) {
        errno = EINVAL;
        return nullptr;
    }
    if (int e = ibv_init_ah_from_wc(pd->context, port, wc, grh, &a)) {
        errno = e;
        return nullptr;
    }
    return create_ah(pd, &a);
}

int ibv_attach_mcast(ibv_qp *qp, const union ibv_gid *gid, uint16_t) {
    return attach_mcast(qp, gid);
}
int ibv_detach_mcast(ibv_qp *qp, const union ibv_gid *gid, uint16_t) {
    return detach_mcast(qp, gid);
}

int ibv_resolve_eth_l2_from_gid(ibv_context *, ibv_ah_attr *, uint8_t eth_mac[6], uint16_t *vid) {
    // No Ethernet header of ours ever reaches a wire; report a locally administered MAC.
    static const uint8_t kMac[6] = {0x02, 0, 0, 0, 0, 1};
    std::memcpy(eth_mac, kMac, 6);
    if (vid) *vid = 0xffff;
    return 0;
}

}  // extern "C"
