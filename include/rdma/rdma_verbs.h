/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma - <rdma/rdma_verbs.h>
 *
 * Convenience verbs on top of an rdma_cm_id: memory registration on the id's
 * PD, posting to the id's QP (or SRQ) and waiting for completions on its CQs.
 * Source- and binary-compatible with rdma-core 44.  The helpers are inline,
 * so what they touch in struct rdma_cm_id and the verbs objects is ABI.
 */
#ifndef RDMA_VERBS_H
#define RDMA_VERBS_H

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Turn an errno-style return (0 or a positive errno) into 0 / -1+errno. */
static inline int rdma_seterrno(int ret)
{
	if (ret == 0)
		return 0;
	errno = ret;
	return -1;
}

/* Shared receive queue on the id (default PD/CQ when none is given). */
int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr);
int rdma_create_srq_ex(struct rdma_cm_id *id,
		       struct ibv_srq_init_attr_ex *attr);
void rdma_destroy_srq(struct rdma_cm_id *id);

/*
 * Registration on id->pd.  The access flags are passed to ibv_reg_mr() as
 * integer constant expressions, so that it binds to the classic ibv_reg_mr
 * entry point (and C++20 sees no mixed-enum arithmetic in its macro).
 */

/* Buffer used for sends and receives. */
static inline struct ibv_mr *
rdma_reg_msgs(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, (int)IBV_ACCESS_LOCAL_WRITE);
}

/* Buffer the peer may RDMA READ from. */
static inline struct ibv_mr *
rdma_reg_read(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length,
			  (int)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
}

/* Buffer the peer may RDMA WRITE into. */
static inline struct ibv_mr *
rdma_reg_write(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length,
			  (int)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
}

/* ibv_dereg_mr() with the result converted to 0 / -1+errno. */
static inline int rdma_dereg_mr(struct ibv_mr *mr)
{
	int err = ibv_dereg_mr(mr);

	return rdma_seterrno(err);
}

/*
 * Scatter/gather forms.  context becomes the work request id; the receive
 * goes to id->srq when the id has one, otherwise to id->qp.
 */
static inline int
rdma_post_recvv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
		int nsge)
{
	struct ibv_recv_wr rwr;
	struct ibv_recv_wr *bad_rwr;
	int err;

	rwr.wr_id = (uint64_t)(uintptr_t)context;
	rwr.next = NULL;
	rwr.sg_list = sgl;
	rwr.num_sge = nsge;

	if (id->srq != NULL)
		err = ibv_post_srq_recv(id->srq, &rwr, &bad_rwr);
	else
		err = ibv_post_recv(id->qp, &rwr, &bad_rwr);
	return rdma_seterrno(err);
}

static inline int
rdma_post_sendv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
		int nsge, int flags)
{
	struct ibv_send_wr swr;
	struct ibv_send_wr *bad_swr;

	memset(&swr, 0, sizeof(swr));
	swr.wr_id = (uint64_t)(uintptr_t)context;
	swr.sg_list = sgl;
	swr.num_sge = nsge;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = (unsigned int)flags;

	return rdma_seterrno(ibv_post_send(id->qp, &swr, &bad_swr));
}

static inline int
rdma_post_readv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
		int nsge, int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr swr;
	struct ibv_send_wr *bad_swr;

	memset(&swr, 0, sizeof(swr));
	swr.wr_id = (uint64_t)(uintptr_t)context;
	swr.sg_list = sgl;
	swr.num_sge = nsge;
	swr.opcode = IBV_WR_RDMA_READ;
	swr.send_flags = (unsigned int)flags;
	swr.wr.rdma.remote_addr = remote_addr;
	swr.wr.rdma.rkey = rkey;

	return rdma_seterrno(ibv_post_send(id->qp, &swr, &bad_swr));
}

static inline int
rdma_post_writev(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
		 int nsge, int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr swr;
	struct ibv_send_wr *bad_swr;

	memset(&swr, 0, sizeof(swr));
	swr.wr_id = (uint64_t)(uintptr_t)context;
	swr.sg_list = sgl;
	swr.num_sge = nsge;
	swr.opcode = IBV_WR_RDMA_WRITE;
	swr.send_flags = (unsigned int)flags;
	swr.wr.rdma.remote_addr = remote_addr;
	swr.wr.rdma.rkey = rkey;

	return rdma_seterrno(ibv_post_send(id->qp, &swr, &bad_swr));
}

/*
 * Single-buffer forms.  rdma_post_recv() and rdma_post_read() need the MR
 * (the receive buffer must lie inside it); send and write accept a NULL mr
 * (lkey 0), which suits IBV_SEND_INLINE.
 */
static inline int
rdma_post_recv(struct rdma_cm_id *id, void *context, void *addr,
	       size_t length, struct ibv_mr *mr)
{
	struct ibv_sge sge;

	assert((uint8_t *)addr >= (uint8_t *)mr->addr &&
	       (uint8_t *)addr + length <= (uint8_t *)mr->addr + mr->length);
	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr->lkey;
	return rdma_post_recvv(id, context, &sge, 1);
}

static inline int
rdma_post_send(struct rdma_cm_id *id, void *context, void *addr,
	       size_t length, struct ibv_mr *mr, int flags)
{
	struct ibv_sge sge;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = (mr != NULL) ? mr->lkey : 0;
	return rdma_post_sendv(id, context, &sge, 1, flags);
}

static inline int
rdma_post_read(struct rdma_cm_id *id, void *context, void *addr,
	       size_t length, struct ibv_mr *mr, int flags,
	       uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr->lkey;
	return rdma_post_readv(id, context, &sge, 1, flags, remote_addr, rkey);
}

static inline int
rdma_post_write(struct rdma_cm_id *id, void *context, void *addr,
		size_t length, struct ibv_mr *mr, int flags,
		uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = (mr != NULL) ? mr->lkey : 0;
	return rdma_post_writev(id, context, &sge, 1, flags, remote_addr, rkey);
}

/* Datagram send to (ah, remote_qpn) with the CM's Q_Key RDMA_UDP_QKEY. */
static inline int
rdma_post_ud_send(struct rdma_cm_id *id, void *context, void *addr,
		  size_t length, struct ibv_mr *mr, int flags,
		  struct ibv_ah *ah, uint32_t remote_qpn)
{
	struct ibv_sge sge;
	struct ibv_send_wr swr;
	struct ibv_send_wr *bad_swr;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = (mr != NULL) ? mr->lkey : 0;

	memset(&swr, 0, sizeof(swr));
	swr.wr_id = (uint64_t)(uintptr_t)context;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = (unsigned int)flags;
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = remote_qpn;
	swr.wr.ud.remote_qkey = RDMA_UDP_QKEY;

	return rdma_seterrno(ibv_post_send(id->qp, &swr, &bad_swr));
}

/*
 * Wait for one completion on the id's send (recv) CQ: poll; if empty, arm
 * the CQ, poll again (closing the race with the arm), then block on the
 * completion channel and repeat.  Returns the number of completions (1) or
 * -1 with errno set.  The CQ's context must be the id.
 */
static inline int
rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(id->send_cq, 1, wc);
		if (n != 0)
			break;
		n = ibv_req_notify_cq(id->send_cq, 0);
		if (n != 0)
			return rdma_seterrno(n);
		n = ibv_poll_cq(id->send_cq, 1, wc);
		if (n != 0)
			break;
		n = ibv_get_cq_event(id->send_cq_channel, &ev_cq, &ev_ctx);
		if (n != 0)
			return n;
		assert(ev_cq == id->send_cq && ev_ctx == (void *)id);
		ibv_ack_cq_events(id->send_cq, 1);
	}
	return (n < 0) ? rdma_seterrno(n) : n;
}

static inline int
rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(id->recv_cq, 1, wc);
		if (n != 0)
			break;
		n = ibv_req_notify_cq(id->recv_cq, 0);
		if (n != 0)
			return rdma_seterrno(n);
		n = ibv_poll_cq(id->recv_cq, 1, wc);
		if (n != 0)
			break;
		n = ibv_get_cq_event(id->recv_cq_channel, &ev_cq, &ev_ctx);
		if (n != 0)
			return n;
		assert(ev_cq == id->recv_cq && ev_ctx == (void *)id);
		ibv_ack_cq_events(id->recv_cq, 1);
	}
	return (n < 0) ? rdma_seterrno(n) : n;
}

#ifdef __cplusplus
}
#endif

#endif /* RDMA_VERBS_H */
