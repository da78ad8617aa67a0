// SPDX-License-Identifier: BSD-2-Clause
// QPs and SRQs made through the CM, and the QP attributes it computes for applications
// that drive their own QP.
#include <cerrno>
#include <cstring>

#include "cm/cm_api.h"
#include "cm/cm_id.h"
#include "verbs/cm_token.h"
#include "verbs/qp.h"
#include "verbs/qp_state_table.h"
#include "verbs/verbs_ops.h"

namespace softrdma::cm {

std::function<void()> disconnect_hook(CmId &id);

namespace {

constexpr unsigned kCmQpAccess =
    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// rdma_create_qp with no CQs: one completion channel and CQ per direction, with the id as
// the CQ context (the rdma_get_*_comp inlines check it).
int make_cqs(CmId &id, ibv_qp_init_attr_ex &a) {
    if (!a.send_cq) {
        id.send_cq_channel = verbs::create_comp_channel(id.verbs);
        if (!id.send_cq_channel) return -1;
        ibv_cq_init_attr_ex c{};
        c.cqe = std::max(a.cap.max_send_wr, 1u);
        c.cq_context = static_cast<rdma_cm_id *>(&id);  // rdma_get_*_comp check it
        c.channel = id.send_cq_channel;
        ibv_cq_ex *cq = verbs::create_cq_ex(id.verbs, &c);
        if (!cq) return -1;
        id.send_cq = ibv_cq_ex_to_cq(cq);
        a.send_cq = id.send_cq;
        id.own_cqs = true;
    }
    if (!a.recv_cq) {
        id.recv_cq_channel = verbs::create_comp_channel(id.verbs);
        if (!id.recv_cq_channel) return -1;
        ibv_cq_init_attr_ex c{};
        c.cqe = std::max(a.cap.max_recv_wr, 1u);
        c.cq_context = static_cast<rdma_cm_id *>(&id);  // rdma_get_*_comp check it
        c.channel = id.recv_cq_channel;
        ibv_cq_ex *cq = verbs::create_cq_ex(id.verbs, &c);
        if (!cq) return -1;
        id.recv_cq = ibv_cq_ex_to_cq(cq);
        a.recv_cq = id.recv_cq;
        id.own_cqs = true;
    }
    return 0;
}

void free_cqs(CmId &id) {
    if (!id.own_cqs) return;
    if (id.send_cq) verbs::destroy_cq(id.send_cq);
    if (id.recv_cq && id.recv_cq != id.send_cq) verbs::destroy_cq(id.recv_cq);
    if (id.send_cq_channel) verbs::destroy_comp_channel(id.send_cq_channel);
    if (id.recv_cq_channel && id.recv_cq_channel != id.send_cq_channel)
        verbs::destroy_comp_channel(id.recv_cq_channel);
    id.send_cq = id.recv_cq = nullptr;
    id.send_cq_channel = id.recv_cq_channel = nullptr;
    id.own_cqs = false;
}

}  // namespace

int create_qp_ex(rdma_cm_id *raw, ibv_qp_init_attr_ex *attr) {
    if (!raw || !attr) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("create_qp %p", static_cast<void *>(raw));
    if (!id.verbs || id.qp) return fail(EINVAL);
    ibv_qp_init_attr_ex a = *attr;
    if (!a.qp_type) a.qp_type = id.qp_type;  // rdma_create_ep users leave it to the id
    if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd) {
        a.pd = id.pd ? id.pd : default_pd(id.verbs);
        a.comp_mask |= IBV_QP_INIT_ATTR_PD;
    }
    if (!a.pd || a.pd->context != id.verbs) return fail(EINVAL);
    if (!a.srq && id.srq) a.srq = id.srq;
    if (make_cqs(id, a) != 0) {
        const int e = errno;
        free_cqs(id);
        return fail(e);
    }
    ibv_qp *qp = verbs::create_qp_ex(id.verbs, &a);
    if (!qp) {
        const int e = errno;
        free_cqs(id);
        return fail(e);
    }
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = kCmQpAccess;
    int e = 0;
    if (a.qp_type == IBV_QPT_UD) {
        // Datagram QPs need no peer: ready to send at once, with the CM's well-known Q_Key.
        at.qkey = RDMA_UDP_QKEY;
        e = verbs::modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
        at.qp_state = IBV_QPS_RTR;
        if (!e) e = verbs::modify_qp(qp, &at, IBV_QP_STATE);
        at.qp_state = IBV_QPS_RTS;
        at.sq_psn = 0;
        if (!e) e = verbs::modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN);
    } else {
        verbs::Qp::from(qp)->set_cm_managed(disconnect_hook(id));
        e = verbs::modify_qp(qp, &at,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    }
    if (e) {
        verbs::destroy_qp(qp);
        free_cqs(id);
        return fail(e);
    }
    attr->cap = a.cap;
    attr->send_cq = a.send_cq;
    attr->recv_cq = a.recv_cq;
    id.qp = qp;
    id.pd = a.pd;
    id.stats->qpn.store(qp->qp_num, std::memory_order_relaxed);
    return 0;
}

int create_qp(rdma_cm_id *raw, ibv_pd *pd, ibv_qp_init_attr *attr) {
    if (!raw || !attr) return fail(EINVAL);
    ibv_qp_init_attr_ex a{};
    std::memcpy(&a, attr, sizeof *attr);
    if (pd) {
        a.comp_mask = IBV_QP_INIT_ATTR_PD;
        a.pd = pd;
    }
    if (create_qp_ex(raw, &a) != 0) return -1;
    attr->cap = a.cap;
    attr->send_cq = a.send_cq;
    attr->recv_cq = a.recv_cq;
    return 0;
}

void destroy_qp(rdma_cm_id *raw) {
    if (!raw) return;
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("destroy_qp %p", static_cast<void *>(raw));
    if (id.qp) verbs::destroy_qp(id.qp);
    id.stats->qpn.store(0, std::memory_order_relaxed);
    id.qp = nullptr;
    free_cqs(id);
}

int create_srq_ex(rdma_cm_id *raw, ibv_srq_init_attr_ex *attr) {
    if (!raw || !attr) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("create_srq %p", static_cast<void *>(raw));
    if (!id.verbs || id.srq) return fail(EINVAL);
    ibv_srq_init_attr_ex a = *attr;
    if (!(a.comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a.pd) {
        a.pd = id.pd ? id.pd : default_pd(id.verbs);
        a.comp_mask |= IBV_SRQ_INIT_ATTR_PD;
    }
    if ((a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a.srq_type != IBV_SRQT_BASIC) return fail(ENOSYS);
    ibv_srq *srq = verbs::create_srq_ex(id.verbs, &a);
    if (!srq) return -1;
    id.srq = srq;
    id.pd = a.pd;
    return 0;
}

int create_srq(rdma_cm_id *raw, ibv_pd *pd, ibv_srq_init_attr *attr) {
    if (!attr) return fail(EINVAL);
    ibv_srq_init_attr_ex a{};
    a.srq_context = attr->srq_context;
    a.attr = attr->attr;
    if (pd) {
        a.comp_mask = IBV_SRQ_INIT_ATTR_PD;
        a.pd = pd;
    }
    if (create_srq_ex(raw, &a) != 0) return -1;
    attr->attr = a.attr;
    return 0;
}

void destroy_srq(rdma_cm_id *raw) {
    if (!raw) return;
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("destroy_srq %p", static_cast<void *>(raw));
    if (id.srq) verbs::destroy_srq(id.srq);
    id.srq = nullptr;
}

int init_qp_attr(rdma_cm_id *raw, ibv_qp_attr *attr, int *mask) {
    if (!raw || !attr || !mask) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG(
        "init_qp_attr %p for %s", static_cast<void *>(raw),
        attr->qp_state <= IBV_QPS_ERR ? verbs::qp_state_name(attr->qp_state) : "an unknown state");
    switch (attr->qp_state) {
        case IBV_QPS_INIT:
            attr->pkey_index = 0;
            attr->port_num = 1;
            attr->qp_access_flags = kCmQpAccess;
            *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
            return 0;
        case IBV_QPS_RTR: {
            if (id.state != State::kConnect) return fail(EINVAL);
            if (!id.token) id.token = verbs::cm_token_alloc();
            if (!id.token) return fail(ENOMEM);
            attr->path_mtu = IBV_MTU_4096;
            attr->dest_qp_num = id.token;
            attr->rq_psn = 0;
            attr->max_dest_rd_atomic = std::min<uint8_t>(id.conn.responder_resources, 16);
            attr->min_rnr_timer = 12;
            attr->ah_attr = {};
            attr->ah_attr.is_global = 1;
            attr->ah_attr.port_num = 1;
            attr->ah_attr.grh.hop_limit = 64;
            attr->ah_attr.grh.dgid = id.route.addr.addr.ibaddr.dgid;
            *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
            return 0;
        }
        case IBV_QPS_RTS:
            if (id.state != State::kConnect) return fail(EINVAL);
            attr->timeout = id.qp_timeout();
            attr->retry_cnt = std::min<uint8_t>(id.conn.retry_count, 7);
            attr->rnr_retry = std::min<uint8_t>(id.conn.rnr_retry_count, 7);
            attr->sq_psn = 0;
            attr->max_rd_atomic = std::min<uint8_t>(id.conn.initiator_depth, 16);
            *mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
            return 0;
        default:
            return fail(EINVAL);
    }
}

}  // namespace softrdma::cm
