// SPDX-License-Identifier: BSD-2-Clause
// The verbs operations behind both the exported C symbols and the context's op slots.
// Functions that create objects return NULL with errno set; the others return an errno
// value (0 on success), as rdma-core's do.
#pragma once
#include <infiniband/verbs.h>

namespace softrdma::verbs {

ibv_context *open_device(ibv_device *dev);
int close_device(ibv_context *ctx);
int query_device(ibv_context *ctx, ibv_device_attr *attr);
int query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *in, ibv_device_attr_ex *attr,
                    size_t attr_size);
int query_rt_values(ibv_context *ctx, ibv_values_ex *values);
int query_port(ibv_context *ctx, uint8_t port, ibv_port_attr *attr, size_t attr_size);
int query_gid_entry(ibv_context *ctx, uint32_t port, uint32_t index, ibv_gid_entry *entry);

ibv_pd *alloc_pd(ibv_context *ctx);
ibv_context *import_device(int cmd_fd);
void unimport_pd(ibv_pd *pd);
void unimport_mr(ibv_mr *mr);
ibv_pd *import_pd(ibv_context *ctx, uint32_t handle);
ibv_mr *import_mr(ibv_pd *pd, uint32_t handle);
int dealloc_pd(ibv_pd *pd);
ibv_mr *reg_mr(ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access);
// The registration itself, arguments already checked (reg_mr, reg_dm_mr).
ibv_mr *register_mr(ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access);
int rereg_mr(ibv_mr *mr, int flags, ibv_pd *pd, void *addr, size_t length, int access);
int dereg_mr(ibv_mr *mr);
ibv_mw *alloc_mw(ibv_pd *pd, ibv_mw_type type);
int dealloc_mw(ibv_mw *mw);
int bind_mw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *bind);

ibv_comp_channel *create_comp_channel(ibv_context *ctx);
int destroy_comp_channel(ibv_comp_channel *ch);
ibv_cq_ex *create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *attr);
int resize_cq(ibv_cq *cq, int cqe);
int destroy_cq(ibv_cq *cq);
int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq, void **cq_context);
void ack_cq_events(ibv_cq *cq, unsigned n);

ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr);
int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask);
int attach_mcast(ibv_qp *qp, const ibv_gid *gid);
int detach_mcast(ibv_qp *qp, const ibv_gid *gid);
int query_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask, ibv_qp_init_attr *init);
int destroy_qp(ibv_qp *qp);

ibv_srq *create_srq_ex(ibv_context *ctx, ibv_srq_init_attr_ex *attr);
int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask);
int query_srq(ibv_srq *srq, ibv_srq_attr *attr);
int destroy_srq(ibv_srq *srq);
int get_srq_num(ibv_srq *srq, uint32_t *num);
ibv_qp *open_qp(ibv_context *ctx, ibv_qp_open_attr *attr);

ibv_ah *create_ah(ibv_pd *pd, ibv_ah_attr *attr);
int destroy_ah(ibv_ah *ah);

}  // namespace softrdma::verbs
