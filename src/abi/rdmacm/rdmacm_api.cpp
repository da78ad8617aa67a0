// SPDX-License-Identifier: BSD-2-Clause
// librdmacm.so.1: the exported rdma_* entry points. The CM itself lives in libibverbs.so.1
// (next to the verbs objects it drives); these forward to it.
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "cm/cm_api.h"

namespace cm = softrdma::cm;

extern "C" {

rdma_event_channel *rdma_create_event_channel(void) { return cm::create_event_channel(); }
void rdma_destroy_event_channel(rdma_event_channel *ch) { cm::destroy_event_channel(ch); }
int rdma_get_cm_event(rdma_event_channel *ch, rdma_cm_event **ev) { return cm::get_cm_event(ch, ev); }
int rdma_ack_cm_event(rdma_cm_event *ev) { return cm::ack_cm_event(ev); }
const char *rdma_event_str(enum rdma_cm_event_type t) { return cm::event_str(t); }

int rdma_create_id(rdma_event_channel *ch, rdma_cm_id **id, void *ctx, enum rdma_port_space ps) {
    return cm::create_id(ch, id, ctx, ps);
}
int rdma_destroy_id(rdma_cm_id *id) { return cm::destroy_id(id); }
int rdma_migrate_id(rdma_cm_id *id, rdma_event_channel *ch) { return cm::migrate_id(id, ch); }
int rdma_set_option(rdma_cm_id *id, int level, int optname, void *optval, size_t optlen) {
    return cm::set_option(id, level, optname, optval, optlen);
}

int rdma_bind_addr(rdma_cm_id *id, struct sockaddr *addr) { return cm::bind_addr(id, addr); }
int rdma_resolve_addr(rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms) {
    return cm::resolve_addr(id, src, dst, timeout_ms);
}
int rdma_resolve_route(rdma_cm_id *id, int timeout_ms) { return cm::resolve_route(id, timeout_ms); }
__be16 rdma_get_src_port(rdma_cm_id *id) { return cm::get_src_port(id); }
__be16 rdma_get_dst_port(rdma_cm_id *id) { return cm::get_dst_port(id); }
struct ibv_context **rdma_get_devices(int *num) { return cm::get_devices(num); }
void rdma_free_devices(struct ibv_context **list) { cm::free_devices(list); }

int rdma_listen(rdma_cm_id *id, int backlog) { return cm::listen(id, backlog); }
int rdma_connect(rdma_cm_id *id, struct rdma_conn_param *p) { return cm::connect(id, p); }
int rdma_accept(rdma_cm_id *id, struct rdma_conn_param *p) { return cm::accept(id, p); }
int rdma_reject(rdma_cm_id *id, const void *pd, uint8_t len) {
    return cm::reject(id, pd, len, 0);
}
int rdma_reject_ece(rdma_cm_id *id, const void *pd, uint8_t len) {
    return cm::reject(id, pd, len, 35);
}
int rdma_disconnect(rdma_cm_id *id) { return cm::disconnect(id); }
int rdma_establish(rdma_cm_id *id) { return cm::establish(id); }
int rdma_notify(rdma_cm_id *id, enum ibv_event_type ev) { return cm::notify(id, ev); }
int rdma_get_request(rdma_cm_id *listen, rdma_cm_id **id) { return cm::get_request(listen, id); }
int rdma_set_local_ece(rdma_cm_id *id, struct ibv_ece *ece) { return cm::set_local_ece(id, ece); }
int rdma_get_remote_ece(rdma_cm_id *id, struct ibv_ece *ece) { return cm::get_remote_ece(id, ece); }

int rdma_create_qp(rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
    return cm::create_qp(id, pd, attr);
}
int rdma_create_qp_ex(rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr) {
    return cm::create_qp_ex(id, attr);
}
void rdma_destroy_qp(rdma_cm_id *id) { cm::destroy_qp(id); }
int rdma_create_srq(rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr) {
    return cm::create_srq(id, pd, attr);
}
int rdma_create_srq_ex(rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr) {
    return cm::create_srq_ex(id, attr);
}
void rdma_destroy_srq(rdma_cm_id *id) { cm::destroy_srq(id); }
int rdma_init_qp_attr(rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask) {
    return cm::init_qp_attr(id, attr, mask);
}

int rdma_join_multicast(rdma_cm_id *id, struct sockaddr *addr, void *ctx) {
    return cm::join_multicast(id, addr, ctx);
}
int rdma_join_multicast_ex(rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr, void *ctx) {
    return cm::join_multicast_ex(id, attr, ctx);
}
int rdma_leave_multicast(rdma_cm_id *id, struct sockaddr *addr) {
    return cm::leave_multicast(id, addr);
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
                     struct rdma_addrinfo **res) {
    return cm::getaddrinfo(node, service, hints, res);
}
void rdma_freeaddrinfo(struct rdma_addrinfo *res) { cm::freeaddrinfo(res); }
int rdma_create_ep(rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
                   struct ibv_qp_init_attr *qp_init_attr) {
    return cm::create_ep(id, res, pd, qp_init_attr);
}
void rdma_destroy_ep(rdma_cm_id *id) { cm::destroy_ep(id); }

}  // extern "C"
