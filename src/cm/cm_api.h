// SPDX-License-Identifier: BSD-2-Clause
// The CM operations behind librdmacm.so.1's entry points. They live in libibverbs.so.1 (with
// the verbs objects they drive) and are exported to librdmacm under SOFTRDMA_PRIVATE_1.
// Each returns what the rdma_* call of the same name returns (0, or -1 with errno).
#pragma once
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

namespace softrdma::cm {

rdma_event_channel *create_event_channel();
void destroy_event_channel(rdma_event_channel *ch);
int get_cm_event(rdma_event_channel *ch, rdma_cm_event **ev);
int ack_cm_event(rdma_cm_event *ev);
const char *event_str(rdma_cm_event_type t);

int create_id(rdma_event_channel *ch, rdma_cm_id **id, void *ctx, rdma_port_space ps);
int create_id_qpt(rdma_event_channel *ch, rdma_cm_id **id, void *ctx, rdma_port_space ps,
                  ibv_qp_type qpt);
int destroy_id(rdma_cm_id *id);
int migrate_id(rdma_cm_id *id, rdma_event_channel *ch);
int set_option(rdma_cm_id *id, int level, int optname, void *optval, size_t optlen);

int bind_addr(rdma_cm_id *id, sockaddr *addr);
int resolve_addr(rdma_cm_id *id, sockaddr *src, sockaddr *dst, int timeout_ms);
int resolve_route(rdma_cm_id *id, int timeout_ms);
uint16_t get_src_port(rdma_cm_id *id);
uint16_t get_dst_port(rdma_cm_id *id);
ibv_context **get_devices(int *num);
void free_devices(ibv_context **list);

int listen(rdma_cm_id *id, int backlog);
int connect(rdma_cm_id *id, rdma_conn_param *param);
int accept(rdma_cm_id *id, rdma_conn_param *param);
int reject(rdma_cm_id *id, const void *pd, uint8_t len, int reason);
int disconnect(rdma_cm_id *id);
int establish(rdma_cm_id *id);
int notify(rdma_cm_id *id, ibv_event_type ev);
int get_request(rdma_cm_id *listen, rdma_cm_id **id);
int set_local_ece(rdma_cm_id *id, ibv_ece *ece);
int get_remote_ece(rdma_cm_id *id, ibv_ece *ece);

int create_qp(rdma_cm_id *id, ibv_pd *pd, ibv_qp_init_attr *attr);
int create_qp_ex(rdma_cm_id *id, ibv_qp_init_attr_ex *attr);
void destroy_qp(rdma_cm_id *id);
int create_srq(rdma_cm_id *id, ibv_pd *pd, ibv_srq_init_attr *attr);
int create_srq_ex(rdma_cm_id *id, ibv_srq_init_attr_ex *attr);
void destroy_srq(rdma_cm_id *id);
int init_qp_attr(rdma_cm_id *id, ibv_qp_attr *attr, int *mask);

int join_multicast(rdma_cm_id *id, sockaddr *addr, void *ctx);
int join_multicast_ex(rdma_cm_id *id, rdma_cm_join_mc_attr_ex *attr, void *ctx);
int leave_multicast(rdma_cm_id *id, sockaddr *addr);

int getaddrinfo(const char *node, const char *service, const rdma_addrinfo *hints,
                rdma_addrinfo **res);
void freeaddrinfo(rdma_addrinfo *res);
int create_ep(rdma_cm_id **id, rdma_addrinfo *res, ibv_pd *pd, ibv_qp_init_attr *qp_init_attr);
void destroy_ep(rdma_cm_id *id);

}  // namespace softrdma::cm
