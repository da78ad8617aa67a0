/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma ABI layout probe.
 *
 * Prints the size and alignment of the public RDMA structures, the offset and
 * size of their members and the values of the public constants, in a stable
 * text format.  check_layout.sh builds this file once against softrdma's
 * headers and once against the distribution's rdma-core headers and diffs
 * the two outputs.
 *
 * Part 1 reproduces reference/layout.txt (rdma-core 44, x86_64) line for
 * line.  Part 2 ("## extra") is a wider net: every struct/union (all
 * members, nested ones included) and every enumerator and integer macro that
 * rdma-core 44's verbs.h, sa.h, ib.h, rdma_cma.h and rsocket.h define.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

static int line_open; /* something already printed on the current K line */

static void head(const char *name, size_t size, size_t align)
{
	printf("\n### %s  sizeof=%zu  alignof=%zu\n", name, size, align);
}

static void field(const char *name, size_t off, size_t size)
{
	printf("  %-34s off=%4zu size=%3zu\n", name, off, size);
}

static void field_rel(const char *name, size_t off, size_t size, long rel)
{
	printf("  %-34s off=%4zu size=%3zu  rel_to_ibv_context=%5ld\n",
	       name, off, size, rel);
}

static void kv(const char *name, unsigned long long v, int hex)
{
	printf(hex ? "%s%s=0x%llx" : "%s%s=%llu", line_open ? " " : "", name, v);
	line_open = 1;
}

static void endline(void)
{
	printf("\n");
	line_open = 0;
}

/*
 * S(type, members...): header line, then one line per member.  Inside S,
 * the type is available as T_ for the member macros:
 *   F(m)   offset and size of member m (nested designators allowed: a.b.c)
 *   FR(m)  same, plus the offset relative to verbs_context.context
 * SZ(type) prints only the header line.
 */
#define S(T, ...) do { typedef T T_; head(#T, sizeof(T_), _Alignof(T_)); \
			__VA_ARGS__ } while (0)
#define SZ(T) head(#T, sizeof(T), _Alignof(T))
#define MSIZE(m) sizeof(((T_ *)0)->m)
#define F(m) field(#m, offsetof(T_, m), MSIZE(m));
#define FR(m) field_rel(#m, offsetof(T_, m), MSIZE(m), \
			(long)offsetof(T_, m) - (long)offsetof(T_, context));

/*
 * Constants: KD decimal, KX hex, on the current line; KL with own label.
 * Each stringizes its own argument, so macro names print unexpanded.
 */
#define KD(n) kv(#n, (unsigned long long)(n), 0)
#define KX(n) kv(#n, (unsigned long long)(n), 1)
#define KL(label, n) kv(label, (unsigned long long)(n), 0)
/* Part 2: one constant per line. */
#define K(n) do { kv(#n, (unsigned long long)(n), 1); endline(); } while (0)
#define ES(E) printf("sizeof(%s)=%zu\n", #E, sizeof(E))

#define CTX_OP(op) (offsetof(struct ibv_context, ops) + \
		    offsetof(struct ibv_context_ops, op))
#define VCTX_MIN_SZ(op) (sizeof(struct verbs_context) - \
			 offsetof(struct verbs_context, op))

static void part1(void)
{
	printf("# rdma-core 44 struct layout on x86_64 (LP64)\n");
	printf("pthread_mutex_t=%zu pthread_cond_t=%zu sockaddr_storage=%zu "
	       "sockaddr_in6=%zu union ibv_gid=%zu\n",
	       sizeof(pthread_mutex_t), sizeof(pthread_cond_t),
	       sizeof(struct sockaddr_storage), sizeof(struct sockaddr_in6),
	       sizeof(union ibv_gid));
	printf("__VERBS_ABI_IS_EXTENDED=0x%llx\n",
	       (unsigned long long)(uintptr_t)__VERBS_ABI_IS_EXTENDED);

	S(struct ibv_device, F(_ops) F(node_type) F(transport_type) F(name)
	  F(dev_name) F(dev_path) F(ibdev_path));
	S(struct ibv_context_ops, F(_compat_query_device) F(_compat_query_port)
	  F(_compat_alloc_pd) F(_compat_dealloc_pd) F(_compat_reg_mr)
	  F(_compat_rereg_mr) F(_compat_dereg_mr) F(alloc_mw) F(bind_mw)
	  F(dealloc_mw) F(_compat_create_cq) F(poll_cq) F(req_notify_cq)
	  F(_compat_cq_event) F(_compat_resize_cq) F(_compat_destroy_cq)
	  F(_compat_create_srq) F(_compat_modify_srq) F(_compat_query_srq)
	  F(_compat_destroy_srq) F(post_srq_recv) F(_compat_create_qp)
	  F(_compat_query_qp) F(_compat_modify_qp) F(_compat_destroy_qp) F(post_send)
	  F(post_recv) F(_compat_create_ah) F(_compat_destroy_ah)
	  F(_compat_attach_mcast) F(_compat_detach_mcast) F(_compat_async_event));
	S(struct ibv_context, F(device) F(ops) F(cmd_fd) F(async_fd)
	  F(num_comp_vectors) F(mutex) F(abi_compat));
	printf("  (absolute offsets of hot ops slots inside ibv_context:"
	       " poll_cq=%zu req_notify_cq=%zu post_srq_recv=%zu post_send=%zu"
	       " post_recv=%zu alloc_mw=%zu bind_mw=%zu dealloc_mw=%zu)\n",
	       CTX_OP(poll_cq), CTX_OP(req_notify_cq), CTX_OP(post_srq_recv),
	       CTX_OP(post_send), CTX_OP(post_recv), CTX_OP(alloc_mw),
	       CTX_OP(bind_mw), CTX_OP(dealloc_mw));
	S(struct verbs_context, FR(query_port) FR(advise_mr) FR(alloc_null_mr)
	  FR(read_counters) FR(attach_counters_point_flow) FR(create_counters)
	  FR(destroy_counters) FR(reg_dm_mr) FR(alloc_dm) FR(free_dm)
	  FR(modify_flow_action_esp) FR(destroy_flow_action)
	  FR(create_flow_action_esp) FR(modify_qp_rate_limit) FR(alloc_parent_domain)
	  FR(dealloc_td) FR(alloc_td) FR(modify_cq) FR(post_srq_ops)
	  FR(destroy_rwq_ind_table) FR(create_rwq_ind_table) FR(destroy_wq)
	  FR(modify_wq) FR(create_wq) FR(query_rt_values) FR(create_cq_ex) FR(priv)
	  FR(query_device_ex) FR(ibv_destroy_flow) FR(ABI_placeholder2)
	  FR(ibv_create_flow) FR(ABI_placeholder1) FR(open_qp) FR(create_qp_ex)
	  FR(get_srq_num) FR(create_srq_ex) FR(open_xrcd) FR(close_xrcd)
	  FR(_ABI_placeholder3) FR(sz) FR(context));
	printf("  verbs_get_ctx_op(ctx, op) is non-NULL only if ctx->abi_compat =="
	       " UINTPTR_MAX and sz >= sizeof(verbs_context) - offsetof(op) and"
	       " slot != NULL\n");
	printf("  minimum sz for query_port slot: %zu ; for create_qp_ex: %zu ;"
	       " for create_cq_ex: %zu ; for query_device_ex: %zu\n",
	       VCTX_MIN_SZ(query_port), VCTX_MIN_SZ(create_qp_ex),
	       VCTX_MIN_SZ(create_cq_ex), VCTX_MIN_SZ(query_device_ex));
	S(struct ibv_comp_channel, F(context) F(fd) F(refcnt));
	S(struct ibv_pd, F(context) F(handle));
	S(struct ibv_mr, F(context) F(pd) F(addr) F(length) F(handle) F(lkey) F(rkey));
	S(struct ibv_mw, F(context) F(pd) F(rkey) F(handle) F(type));
	S(struct ibv_ah, F(context) F(pd) F(handle));
	S(struct ibv_xrcd, F(context));
	S(struct ibv_dm, F(context) F(memcpy_to_dm) F(memcpy_from_dm) F(comp_mask)
	  F(handle));
	S(struct ibv_cq, F(context) F(channel) F(cq_context) F(handle) F(cqe)
	  F(mutex) F(cond) F(comp_events_completed) F(async_events_completed));
	S(struct ibv_cq_ex, F(context) F(comp_mask) F(status) F(wr_id) F(start_poll)
	  F(next_poll) F(end_poll) F(read_opcode) F(read_vendor_err) F(read_byte_len)
	  F(read_imm_data) F(read_qp_num) F(read_src_qp) F(read_wc_flags)
	  F(read_slid) F(read_sl) F(read_dlid_path_bits) F(read_completion_ts)
	  F(read_cvlan) F(read_flow_tag) F(read_tm_info)
	  F(read_completion_wallclock_ns));
	S(struct ibv_srq, F(context) F(srq_context) F(pd) F(handle) F(mutex) F(cond)
	  F(events_completed));
	S(struct ibv_wq, F(context) F(wq_num) F(post_recv) F(events_completed)
	  F(comp_mask));
	S(struct ibv_qp, F(context) F(qp_context) F(pd) F(send_cq) F(recv_cq) F(srq)
	  F(handle) F(qp_num) F(state) F(qp_type) F(mutex) F(cond)
	  F(events_completed));
	S(struct ibv_qp_ex, F(qp_base) F(comp_mask) F(wr_id) F(wr_flags)
	  F(wr_atomic_cmp_swp) F(wr_atomic_fetch_add) F(wr_bind_mw) F(wr_local_inv)
	  F(wr_rdma_read) F(wr_rdma_write) F(wr_rdma_write_imm) F(wr_send)
	  F(wr_send_imm) F(wr_send_inv) F(wr_send_tso) F(wr_set_ud_addr)
	  F(wr_set_xrc_srqn) F(wr_set_inline_data) F(wr_set_inline_data_list)
	  F(wr_set_sge) F(wr_set_sge_list) F(wr_start) F(wr_complete) F(wr_abort)
	  F(wr_atomic_write));
	S(struct ibv_sge, F(addr) F(length) F(lkey));
	S(struct ibv_send_wr, F(wr_id) F(next) F(sg_list) F(num_sge) F(opcode)
	  F(send_flags) F(imm_data) F(wr.rdma.remote_addr) F(wr.rdma.rkey)
	  F(wr.atomic.remote_addr) F(wr.atomic.compare_add) F(wr.atomic.swap)
	  F(wr.atomic.rkey) F(wr.ud.ah) F(wr.ud.remote_qpn) F(wr.ud.remote_qkey)
	  F(qp_type.xrc.remote_srqn) F(bind_mw.mw) F(tso.hdr));
	S(struct ibv_recv_wr, F(wr_id) F(next) F(sg_list) F(num_sge));
	S(struct ibv_wc, F(wr_id) F(status) F(opcode) F(vendor_err) F(byte_len)
	  F(imm_data) F(qp_num) F(src_qp) F(wc_flags) F(pkey_index) F(slid) F(sl)
	  F(dlid_path_bits));
	S(struct ibv_grh, F(version_tclass_flow) F(paylen) F(next_hdr) F(hop_limit)
	  F(sgid) F(dgid));
	S(struct ibv_device_attr, F(fw_ver) F(node_guid) F(sys_image_guid)
	  F(max_mr_size) F(page_size_cap) F(vendor_id) F(vendor_part_id) F(hw_ver)
	  F(max_qp) F(max_qp_wr) F(device_cap_flags) F(max_sge) F(max_sge_rd)
	  F(max_cq) F(max_cqe) F(max_mr) F(max_pd) F(max_qp_rd_atom)
	  F(max_qp_init_rd_atom) F(atomic_cap) F(max_mcast_grp) F(max_ah) F(max_srq)
	  F(max_srq_wr) F(max_srq_sge) F(max_pkeys) F(local_ca_ack_delay)
	  F(phys_port_cnt));
	S(struct ibv_device_attr_ex, F(orig_attr) F(comp_mask) F(odp_caps)
	  F(completion_timestamp_mask) F(hca_core_clock) F(device_cap_flags_ex)
	  F(tso_caps) F(rss_caps) F(max_wq_type_rq) F(packet_pacing_caps)
	  F(raw_packet_caps) F(tm_caps) F(cq_mod_caps) F(max_dm_size)
	  F(pci_atomic_caps) F(xrc_odp_caps) F(phys_port_cnt_ex));
	S(struct ibv_port_attr, F(state) F(max_mtu) F(active_mtu) F(gid_tbl_len)
	  F(port_cap_flags) F(max_msg_sz) F(bad_pkey_cntr) F(qkey_viol_cntr)
	  F(pkey_tbl_len) F(lid) F(sm_lid) F(lmc) F(max_vl_num) F(sm_sl)
	  F(subnet_timeout) F(init_type_reply) F(active_width) F(active_speed)
	  F(phys_state) F(link_layer) F(flags) F(port_cap_flags2));
	S(struct ibv_gid_entry, F(gid) F(gid_index) F(port_num) F(gid_type)
	  F(ndev_ifindex));
	S(struct ibv_global_route, F(dgid) F(flow_label) F(sgid_index) F(hop_limit)
	  F(traffic_class));
	S(struct ibv_ah_attr, F(grh) F(dlid) F(sl) F(src_path_bits) F(static_rate)
	  F(is_global) F(port_num));
	S(struct ibv_qp_cap, F(max_send_wr) F(max_recv_wr) F(max_send_sge)
	  F(max_recv_sge) F(max_inline_data));
	S(struct ibv_qp_init_attr, F(qp_context) F(send_cq) F(recv_cq) F(srq) F(cap)
	  F(qp_type) F(sq_sig_all));
	S(struct ibv_qp_init_attr_ex, F(cap) F(qp_type) F(sq_sig_all) F(comp_mask)
	  F(pd) F(xrcd) F(create_flags) F(max_tso_header) F(rwq_ind_tbl)
	  F(rx_hash_conf) F(source_qpn) F(send_ops_flags));
	S(struct ibv_qp_attr, F(qp_state) F(cur_qp_state) F(path_mtu)
	  F(path_mig_state) F(qkey) F(rq_psn) F(sq_psn) F(dest_qp_num)
	  F(qp_access_flags) F(cap) F(ah_attr) F(alt_ah_attr) F(pkey_index)
	  F(alt_pkey_index) F(en_sqd_async_notify) F(sq_draining) F(max_rd_atomic)
	  F(max_dest_rd_atomic) F(min_rnr_timer) F(port_num) F(timeout) F(retry_cnt)
	  F(rnr_retry) F(alt_port_num) F(alt_timeout) F(rate_limit));
	S(struct ibv_srq_attr, F(max_wr) F(max_sge) F(srq_limit));
	S(struct ibv_srq_init_attr, F(srq_context) F(attr));
	S(struct ibv_srq_init_attr_ex, F(comp_mask) F(srq_type) F(pd) F(xrcd) F(cq)
	  F(tm_cap));
	S(struct ibv_cq_init_attr_ex, F(cqe) F(cq_context) F(channel) F(comp_vector)
	  F(wc_flags) F(comp_mask) F(flags) F(parent_domain));
	S(struct ibv_async_event, F(element) F(event_type));
	S(struct ibv_ece, F(vendor_id) F(options) F(comp_mask));
	S(struct ibv_sa_path_rec, F(dgid) F(sgid) F(dlid) F(slid) F(raw_traffic)
	  F(flow_label) F(hop_limit) F(traffic_class) F(reversible) F(numb_path)
	  F(pkey) F(sl) F(mtu_selector) F(mtu) F(rate_selector) F(rate)
	  F(packet_life_time_selector) F(packet_life_time) F(preference));

	printf("\n## rdma_cma.h\n");
	S(struct rdma_event_channel, F(fd));
	S(struct rdma_ib_addr, F(sgid) F(dgid) F(pkey));
	S(struct rdma_addr, F(src_addr) F(src_sin) F(src_sin6) F(src_storage)
	  F(dst_addr) F(dst_sin) F(dst_sin6) F(dst_storage) F(addr) F(addr.ibaddr));
	S(struct rdma_route, F(addr) F(path_rec) F(num_paths));
	S(struct rdma_cm_id, F(verbs) F(channel) F(context) F(qp) F(route)
	  F(route.addr.src_addr) F(route.addr.dst_addr) F(route.addr.addr.ibaddr)
	  F(route.path_rec) F(route.num_paths) F(ps) F(port_num) F(event)
	  F(send_cq_channel) F(send_cq) F(recv_cq_channel) F(recv_cq) F(srq) F(pd)
	  F(qp_type));
	S(struct rdma_conn_param, F(private_data) F(private_data_len)
	  F(responder_resources) F(initiator_depth) F(flow_control) F(retry_count)
	  F(rnr_retry_count) F(srq) F(qp_num));
	S(struct rdma_ud_param, F(private_data) F(private_data_len) F(ah_attr)
	  F(qp_num) F(qkey));
	S(struct rdma_cm_event, F(id) F(listen_id) F(event) F(status) F(param)
	  F(param.conn) F(param.ud) F(param.conn.private_data)
	  F(param.conn.private_data_len) F(param.conn.qp_num) F(param.ud.ah_attr)
	  F(param.ud.qp_num) F(param.ud.qkey));
	S(struct rdma_addrinfo, F(ai_flags) F(ai_family) F(ai_qp_type)
	  F(ai_port_space) F(ai_src_len) F(ai_dst_len) F(ai_src_addr) F(ai_dst_addr)
	  F(ai_src_canonname) F(ai_dst_canonname) F(ai_route_len) F(ai_route)
	  F(ai_connect_len) F(ai_connect) F(ai_next));
	S(struct rdma_cm_join_mc_attr_ex, F(comp_mask) F(join_flags) F(addr));

	printf("\n## constants\n");
	KX(RDMA_PS_TCP); KX(RDMA_PS_UDP); KX(RDMA_PS_IB); KX(RDMA_PS_IPOIB);
	KX(RDMA_UDP_QKEY); KX(SOL_RDMA); endline();
	KD(RDMA_SQSIZE); KD(RDMA_RQSIZE); KD(RDMA_INLINE); KD(RDMA_IOMAPSIZE);
	KD(RDMA_ROUTE); endline();
	KD(RAI_PASSIVE); KD(RAI_NUMERICHOST); KD(RAI_NOROUTE); KD(RAI_FAMILY);
	endline();
	KD(RDMA_CM_EVENT_ADDR_RESOLVED);
	KL(".. ESTABLISHED", RDMA_CM_EVENT_ESTABLISHED);
	KL("DISCONNECTED", RDMA_CM_EVENT_DISCONNECTED);
	KL("MULTICAST_JOIN", RDMA_CM_EVENT_MULTICAST_JOIN);
	KL("TIMEWAIT_EXIT", RDMA_CM_EVENT_TIMEWAIT_EXIT); endline();
	KD(IBV_TRANSPORT_IB); KD(IBV_TRANSPORT_IWARP); KD(IBV_TRANSPORT_USNIC);
	KD(IBV_TRANSPORT_UNSPECIFIED); endline();
	KD(IBV_NODE_CA); KD(IBV_NODE_RNIC); KD(IBV_NODE_UNSPECIFIED); endline();
	KD(IBV_LINK_LAYER_UNSPECIFIED); KD(IBV_LINK_LAYER_INFINIBAND);
	KD(IBV_LINK_LAYER_ETHERNET); endline();
	KD(IBV_GID_TYPE_IB); KD(IBV_GID_TYPE_ROCE_V1); KD(IBV_GID_TYPE_ROCE_V2);
	endline();
	KD(IBV_ATOMIC_NONE); KD(IBV_ATOMIC_HCA); KD(IBV_ATOMIC_GLOB); endline();
	KD(IBV_QPT_RC); KD(IBV_QPT_UC); KD(IBV_QPT_UD); KD(IBV_QPT_RAW_PACKET);
	KD(IBV_QPT_XRC_SEND); KD(IBV_QPT_XRC_RECV); KD(IBV_QPT_DRIVER);
	endline();
	KD(IBV_MTU_256); KD(IBV_MTU_1024); KD(IBV_MTU_4096); endline();
	KD(IBV_WR_RDMA_WRITE); KD(IBV_WR_RDMA_WRITE_WITH_IMM); KD(IBV_WR_SEND);
	KD(IBV_WR_SEND_WITH_IMM); KD(IBV_WR_RDMA_READ);
	KD(IBV_WR_ATOMIC_CMP_AND_SWP); KD(IBV_WR_ATOMIC_FETCH_AND_ADD);
	endline();
	KX(IBV_QP_INIT_ATTR_PD); KX(IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	KX(IBV_QP_EX_WITH_SEND); KX(IBV_QP_EX_WITH_RDMA_WRITE);
	KX(IBV_QP_EX_WITH_RDMA_READ); KX(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);
	KX(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD); endline();
}

static void part2_structs(void)
{
	printf("\n## extra: every struct and union, all members\n");
	/* <infiniband/verbs.h> */
	S(union ibv_gid, F(raw) F(global) F(global.subnet_prefix)
	  F(global.interface_id));
	S(struct ibv_gid_entry, F(gid) F(gid_index) F(port_num) F(gid_type)
	  F(ndev_ifindex));
	S(struct ibv_alloc_dm_attr, F(length) F(log_align_req) F(comp_mask));
	S(struct ibv_dm, F(context) F(memcpy_to_dm) F(memcpy_from_dm) F(comp_mask)
	  F(handle));
	S(struct ibv_device_attr, F(fw_ver) F(node_guid) F(sys_image_guid)
	  F(max_mr_size) F(page_size_cap) F(vendor_id) F(vendor_part_id) F(hw_ver)
	  F(max_qp) F(max_qp_wr) F(device_cap_flags) F(max_sge) F(max_sge_rd)
	  F(max_cq) F(max_cqe) F(max_mr) F(max_pd) F(max_qp_rd_atom)
	  F(max_ee_rd_atom) F(max_res_rd_atom) F(max_qp_init_rd_atom)
	  F(max_ee_init_rd_atom) F(atomic_cap) F(max_ee) F(max_rdd) F(max_mw)
	  F(max_raw_ipv6_qp) F(max_raw_ethy_qp) F(max_mcast_grp)
	  F(max_mcast_qp_attach) F(max_total_mcast_qp_attach) F(max_ah) F(max_fmr)
	  F(max_map_per_fmr) F(max_srq) F(max_srq_wr) F(max_srq_sge) F(max_pkeys)
	  F(local_ca_ack_delay) F(phys_port_cnt));
	S(struct ibv_query_device_ex_input, F(comp_mask));
	S(struct ibv_odp_caps, F(general_caps) F(per_transport_caps)
	  F(per_transport_caps.rc_odp_caps) F(per_transport_caps.uc_odp_caps)
	  F(per_transport_caps.ud_odp_caps));
	S(struct ibv_tso_caps, F(max_tso) F(supported_qpts));
	S(struct ibv_rss_caps, F(supported_qpts) F(max_rwq_indirection_tables)
	  F(max_rwq_indirection_table_size) F(rx_hash_fields_mask)
	  F(rx_hash_function));
	S(struct ibv_packet_pacing_caps, F(qp_rate_limit_min) F(qp_rate_limit_max)
	  F(supported_qpts));
	S(struct ibv_tm_caps, F(max_rndv_hdr_size) F(max_num_tags) F(flags)
	  F(max_ops) F(max_sge));
	S(struct ibv_cq_moderation_caps, F(max_cq_count) F(max_cq_period));
	S(struct ibv_pci_atomic_caps, F(fetch_add) F(swap) F(compare_swap));
	S(struct ibv_device_attr_ex, F(orig_attr) F(comp_mask) F(odp_caps)
	  F(completion_timestamp_mask) F(hca_core_clock) F(device_cap_flags_ex)
	  F(tso_caps) F(rss_caps) F(max_wq_type_rq) F(packet_pacing_caps)
	  F(raw_packet_caps) F(tm_caps) F(cq_mod_caps) F(max_dm_size)
	  F(pci_atomic_caps) F(xrc_odp_caps) F(phys_port_cnt_ex));
	S(struct ibv_port_attr, F(state) F(max_mtu) F(active_mtu) F(gid_tbl_len)
	  F(port_cap_flags) F(max_msg_sz) F(bad_pkey_cntr) F(qkey_viol_cntr)
	  F(pkey_tbl_len) F(lid) F(sm_lid) F(lmc) F(max_vl_num) F(sm_sl)
	  F(subnet_timeout) F(init_type_reply) F(active_width) F(active_speed)
	  F(phys_state) F(link_layer) F(flags) F(port_cap_flags2));
	S(struct ibv_async_event, F(element) F(element.cq) F(element.qp)
	  F(element.srq) F(element.wq) F(element.port_num) F(event_type));
	S(struct ibv_wc, F(wr_id) F(status) F(opcode) F(vendor_err) F(byte_len)
	  F(imm_data) F(invalidated_rkey) F(qp_num) F(src_qp) F(wc_flags)
	  F(pkey_index) F(slid) F(sl) F(dlid_path_bits));
	S(struct ibv_mw_bind_info, F(mr) F(addr) F(length) F(mw_access_flags));
	S(struct ibv_pd, F(context) F(handle));
	S(struct ibv_td_init_attr, F(comp_mask));
	S(struct ibv_td, F(context));
	S(struct ibv_xrcd_init_attr, F(comp_mask) F(fd) F(oflags));
	S(struct ibv_xrcd, F(context));
	S(struct ibv_mr, F(context) F(pd) F(addr) F(length) F(handle) F(lkey) F(rkey));
	S(struct ibv_mw, F(context) F(pd) F(rkey) F(handle) F(type));
	S(struct ibv_global_route, F(dgid) F(flow_label) F(sgid_index) F(hop_limit)
	  F(traffic_class));
	S(struct ibv_grh, F(version_tclass_flow) F(paylen) F(next_hdr) F(hop_limit)
	  F(sgid) F(dgid));
	S(struct ibv_ah_attr, F(grh) F(dlid) F(sl) F(src_path_bits) F(static_rate)
	  F(is_global) F(port_num));
	S(struct ibv_srq_attr, F(max_wr) F(max_sge) F(srq_limit));
	S(struct ibv_srq_init_attr, F(srq_context) F(attr));
	S(struct ibv_tm_cap, F(max_num_tags) F(max_ops));
	S(struct ibv_srq_init_attr_ex, F(srq_context) F(attr) F(comp_mask)
	  F(srq_type) F(pd) F(xrcd) F(cq) F(tm_cap));
	S(struct ibv_wq_init_attr, F(wq_context) F(wq_type) F(max_wr) F(max_sge)
	  F(pd) F(cq) F(comp_mask) F(create_flags));
	S(struct ibv_wq_attr, F(attr_mask) F(wq_state) F(curr_wq_state) F(flags)
	  F(flags_mask));
	S(struct ibv_rwq_ind_table, F(context) F(ind_tbl_handle) F(ind_tbl_num)
	  F(comp_mask));
	S(struct ibv_rwq_ind_table_init_attr, F(log_ind_tbl_size) F(ind_tbl)
	  F(comp_mask));
	S(struct ibv_qp_cap, F(max_send_wr) F(max_recv_wr) F(max_send_sge)
	  F(max_recv_sge) F(max_inline_data));
	S(struct ibv_qp_init_attr, F(qp_context) F(send_cq) F(recv_cq) F(srq) F(cap)
	  F(qp_type) F(sq_sig_all));
	S(struct ibv_rx_hash_conf, F(rx_hash_function) F(rx_hash_key_len)
	  F(rx_hash_key) F(rx_hash_fields_mask));
	S(struct ibv_qp_init_attr_ex, F(qp_context) F(send_cq) F(recv_cq) F(srq)
	  F(cap) F(qp_type) F(sq_sig_all) F(comp_mask) F(pd) F(xrcd) F(create_flags)
	  F(max_tso_header) F(rwq_ind_tbl) F(rx_hash_conf) F(source_qpn)
	  F(send_ops_flags));
	S(struct ibv_qp_open_attr, F(comp_mask) F(qp_num) F(xrcd) F(qp_context)
	  F(qp_type));
	S(struct ibv_qp_attr, F(qp_state) F(cur_qp_state) F(path_mtu)
	  F(path_mig_state) F(qkey) F(rq_psn) F(sq_psn) F(dest_qp_num)
	  F(qp_access_flags) F(cap) F(ah_attr) F(alt_ah_attr) F(pkey_index)
	  F(alt_pkey_index) F(en_sqd_async_notify) F(sq_draining) F(max_rd_atomic)
	  F(max_dest_rd_atomic) F(min_rnr_timer) F(port_num) F(timeout) F(retry_cnt)
	  F(rnr_retry) F(alt_port_num) F(alt_timeout) F(rate_limit));
	S(struct ibv_qp_rate_limit_attr, F(rate_limit) F(max_burst_sz)
	  F(typical_pkt_sz) F(comp_mask));
	S(struct ibv_data_buf, F(addr) F(length));
	S(struct ibv_sge, F(addr) F(length) F(lkey));
	S(struct ibv_send_wr, F(wr_id) F(next) F(sg_list) F(num_sge) F(opcode)
	  F(send_flags) F(imm_data) F(invalidate_rkey) F(wr) F(wr.rdma)
	  F(wr.rdma.remote_addr) F(wr.rdma.rkey) F(wr.atomic)
	  F(wr.atomic.remote_addr) F(wr.atomic.compare_add) F(wr.atomic.swap)
	  F(wr.atomic.rkey) F(wr.ud) F(wr.ud.ah) F(wr.ud.remote_qpn)
	  F(wr.ud.remote_qkey) F(qp_type) F(qp_type.xrc) F(qp_type.xrc.remote_srqn)
	  F(bind_mw) F(bind_mw.mw) F(bind_mw.rkey) F(bind_mw.bind_info) F(tso)
	  F(tso.hdr) F(tso.hdr_sz) F(tso.mss));
	S(struct ibv_recv_wr, F(wr_id) F(next) F(sg_list) F(num_sge));
	S(struct ibv_ops_wr, F(wr_id) F(next) F(opcode) F(flags) F(tm)
	  F(tm.unexpected_cnt) F(tm.handle) F(tm.add) F(tm.add.recv_wr_id)
	  F(tm.add.sg_list) F(tm.add.num_sge) F(tm.add.tag) F(tm.add.mask));
	S(struct ibv_mw_bind, F(wr_id) F(send_flags) F(bind_info));
	S(struct ibv_srq, F(context) F(srq_context) F(pd) F(handle) F(mutex) F(cond)
	  F(events_completed));
	S(struct ibv_wq, F(context) F(wq_context) F(pd) F(cq) F(wq_num) F(handle)
	  F(state) F(wq_type) F(post_recv) F(mutex) F(cond) F(events_completed)
	  F(comp_mask));
	S(struct ibv_qp, F(context) F(qp_context) F(pd) F(send_cq) F(recv_cq) F(srq)
	  F(handle) F(qp_num) F(state) F(qp_type) F(mutex) F(cond)
	  F(events_completed));
	S(struct ibv_qp_ex, F(qp_base) F(comp_mask) F(wr_id) F(wr_flags)
	  F(wr_atomic_cmp_swp) F(wr_atomic_fetch_add) F(wr_bind_mw) F(wr_local_inv)
	  F(wr_rdma_read) F(wr_rdma_write) F(wr_rdma_write_imm) F(wr_send)
	  F(wr_send_imm) F(wr_send_inv) F(wr_send_tso) F(wr_set_ud_addr)
	  F(wr_set_xrc_srqn) F(wr_set_inline_data) F(wr_set_inline_data_list)
	  F(wr_set_sge) F(wr_set_sge_list) F(wr_start) F(wr_complete) F(wr_abort)
	  F(wr_atomic_write));
	S(struct ibv_ece, F(vendor_id) F(options) F(comp_mask));
	S(struct ibv_comp_channel, F(context) F(fd) F(refcnt));
	S(struct ibv_cq, F(context) F(channel) F(cq_context) F(handle) F(cqe)
	  F(mutex) F(cond) F(comp_events_completed) F(async_events_completed));
	S(struct ibv_poll_cq_attr, F(comp_mask));
	S(struct ibv_wc_tm_info, F(tag) F(priv));
	S(struct ibv_cq_ex, F(context) F(channel) F(cq_context) F(handle) F(cqe)
	  F(mutex) F(cond) F(comp_events_completed) F(async_events_completed)
	  F(comp_mask) F(status) F(wr_id) F(start_poll) F(next_poll) F(end_poll)
	  F(read_opcode) F(read_vendor_err) F(read_byte_len) F(read_imm_data)
	  F(read_qp_num) F(read_src_qp) F(read_wc_flags) F(read_slid) F(read_sl)
	  F(read_dlid_path_bits) F(read_completion_ts) F(read_cvlan) F(read_flow_tag)
	  F(read_tm_info) F(read_completion_wallclock_ns));
	S(struct ibv_moderate_cq, F(cq_count) F(cq_period));
	S(struct ibv_modify_cq_attr, F(attr_mask) F(moderate));
	S(struct ibv_ah, F(context) F(pd) F(handle));
	S(struct ibv_flow_eth_filter, F(dst_mac) F(src_mac) F(ether_type) F(vlan_tag));
	S(struct ibv_flow_spec_eth, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_ipv4_filter, F(src_ip) F(dst_ip));
	S(struct ibv_flow_spec_ipv4, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_ipv4_ext_filter, F(src_ip) F(dst_ip) F(proto) F(tos) F(ttl)
	  F(flags));
	S(struct ibv_flow_spec_ipv4_ext, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_ipv6_filter, F(src_ip) F(dst_ip) F(flow_label) F(next_hdr)
	  F(traffic_class) F(hop_limit));
	S(struct ibv_flow_spec_ipv6, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_esp_filter, F(spi) F(seq));
	S(struct ibv_flow_spec_esp, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_tcp_udp_filter, F(dst_port) F(src_port));
	S(struct ibv_flow_spec_tcp_udp, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_gre_filter, F(c_ks_res0_ver) F(protocol) F(key));
	S(struct ibv_flow_spec_gre, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_mpls_filter, F(label));
	S(struct ibv_flow_spec_mpls, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_tunnel_filter, F(tunnel_id));
	S(struct ibv_flow_spec_tunnel, F(type) F(size) F(val) F(mask));
	S(struct ibv_flow_spec_action_tag, F(type) F(size) F(tag_id));
	S(struct ibv_flow_spec_action_drop, F(type) F(size));
	S(struct ibv_flow_spec_action_handle, F(type) F(size) F(action));
	S(struct ibv_flow_spec_counter_action, F(type) F(size) F(counters));
	S(struct ibv_flow_spec, F(hdr) F(hdr.type) F(hdr.size) F(eth) F(ipv4)
	  F(tcp_udp) F(ipv4_ext) F(ipv6) F(esp) F(tunnel) F(gre) F(mpls) F(flow_tag)
	  F(drop) F(handle) F(flow_count));
	S(struct ibv_flow_attr, F(comp_mask) F(type) F(size) F(priority)
	  F(num_of_specs) F(port) F(flags));
	S(struct ibv_flow, F(comp_mask) F(context) F(handle));
	S(struct ibv_flow_action, F(context));
	S(struct ibv_flow_action_esp_attr, F(esp_attr) F(keymat_proto) F(keymat_len)
	  F(keymat_ptr) F(replay_proto) F(replay_len) F(replay_ptr) F(esp_encap)
	  F(comp_mask) F(esn));
	S(struct _ibv_device_ops, F(_dummy1) F(_dummy2));
	S(struct ibv_device, F(_ops) F(node_type) F(transport_type) F(name)
	  F(dev_name) F(dev_path) F(ibdev_path));
	S(struct ibv_context_ops, F(_compat_query_device) F(_compat_query_port)
	  F(_compat_alloc_pd) F(_compat_dealloc_pd) F(_compat_reg_mr)
	  F(_compat_rereg_mr) F(_compat_dereg_mr) F(alloc_mw) F(bind_mw)
	  F(dealloc_mw) F(_compat_create_cq) F(poll_cq) F(req_notify_cq)
	  F(_compat_cq_event) F(_compat_resize_cq) F(_compat_destroy_cq)
	  F(_compat_create_srq) F(_compat_modify_srq) F(_compat_query_srq)
	  F(_compat_destroy_srq) F(post_srq_recv) F(_compat_create_qp)
	  F(_compat_query_qp) F(_compat_modify_qp) F(_compat_destroy_qp) F(post_send)
	  F(post_recv) F(_compat_create_ah) F(_compat_destroy_ah)
	  F(_compat_attach_mcast) F(_compat_detach_mcast) F(_compat_async_event));
	S(struct ibv_context, F(device) F(ops) F(cmd_fd) F(async_fd)
	  F(num_comp_vectors) F(mutex) F(abi_compat));
	S(struct ibv_cq_init_attr_ex, F(cqe) F(cq_context) F(channel) F(comp_vector)
	  F(wc_flags) F(comp_mask) F(flags) F(parent_domain));
	S(struct ibv_parent_domain_init_attr, F(pd) F(td) F(comp_mask) F(alloc)
	  F(free) F(pd_context));
	S(struct ibv_counters_init_attr, F(comp_mask));
	S(struct ibv_counters, F(context));
	S(struct ibv_counter_attach_attr, F(counter_desc) F(index) F(comp_mask));
	S(struct ibv_values_ex, F(comp_mask) F(raw_clock));
	S(struct verbs_context, F(query_port) F(advise_mr) F(alloc_null_mr)
	  F(read_counters) F(attach_counters_point_flow) F(create_counters)
	  F(destroy_counters) F(reg_dm_mr) F(alloc_dm) F(free_dm)
	  F(modify_flow_action_esp) F(destroy_flow_action) F(create_flow_action_esp)
	  F(modify_qp_rate_limit) F(alloc_parent_domain) F(dealloc_td) F(alloc_td)
	  F(modify_cq) F(post_srq_ops) F(destroy_rwq_ind_table)
	  F(create_rwq_ind_table) F(destroy_wq) F(modify_wq) F(create_wq)
	  F(query_rt_values) F(create_cq_ex) F(priv) F(query_device_ex)
	  F(ibv_destroy_flow) F(ABI_placeholder2) F(ibv_create_flow)
	  F(ABI_placeholder1) F(open_qp) F(create_qp_ex) F(get_srq_num)
	  F(create_srq_ex) F(open_xrcd) F(close_xrcd) F(_ABI_placeholder3) F(sz)
	  F(context));
	/* <infiniband/sa.h> */
	S(struct ibv_sa_path_rec, F(dgid) F(sgid) F(dlid) F(slid) F(raw_traffic)
	  F(flow_label) F(hop_limit) F(traffic_class) F(reversible) F(numb_path)
	  F(pkey) F(sl) F(mtu_selector) F(mtu) F(rate_selector) F(rate)
	  F(packet_life_time_selector) F(packet_life_time) F(preference));
	S(struct ibv_sa_mcmember_rec, F(mgid) F(port_gid) F(qkey) F(mlid)
	  F(mtu_selector) F(mtu) F(traffic_class) F(pkey) F(rate_selector) F(rate)
	  F(packet_life_time_selector) F(packet_life_time) F(sl) F(flow_label)
	  F(hop_limit) F(scope) F(join_state) F(proxy_join));
	S(struct ibv_sa_service_rec, F(id) F(gid) F(pkey) F(lease) F(key) F(name)
	  F(data8) F(data16) F(data32) F(data64));
	S(struct ibv_path_record, F(service_id) F(dgid) F(sgid) F(dlid) F(slid)
	  F(flowlabel_hoplimit) F(tclass) F(reversible_numpath) F(pkey)
	  F(qosclass_sl) F(mtu) F(rate) F(packetlifetime) F(preference) F(reserved));
	S(struct ibv_path_data, F(flags) F(reserved) F(path));
	/* <infiniband/ib.h> */
	S(struct ib_addr, F(ib_u) F(ib_u.uib_addr8) F(ib_u.uib_addr16)
	  F(ib_u.uib_addr32) F(ib_u.uib_addr64));
	S(struct sockaddr_ib, F(sib_family) F(sib_pkey) F(sib_flowinfo) F(sib_addr)
	  F(sib_sid) F(sib_sid_mask) F(sib_scope_id));
	/* <rdma/rdma_cma.h> */
	S(struct rdma_ib_addr, F(sgid) F(dgid) F(pkey));
	S(struct rdma_addr, F(src_addr) F(src_sin) F(src_sin6) F(src_storage)
	  F(dst_addr) F(dst_sin) F(dst_sin6) F(dst_storage) F(addr) F(addr.ibaddr));
	S(struct rdma_route, F(addr) F(path_rec) F(num_paths));
	S(struct rdma_event_channel, F(fd));
	S(struct rdma_cm_id, F(verbs) F(channel) F(context) F(qp) F(route) F(ps)
	  F(port_num) F(event) F(send_cq_channel) F(send_cq) F(recv_cq_channel)
	  F(recv_cq) F(srq) F(pd) F(qp_type));
	S(struct rdma_conn_param, F(private_data) F(private_data_len)
	  F(responder_resources) F(initiator_depth) F(flow_control) F(retry_count)
	  F(rnr_retry_count) F(srq) F(qp_num));
	S(struct rdma_ud_param, F(private_data) F(private_data_len) F(ah_attr)
	  F(qp_num) F(qkey));
	S(struct rdma_cm_event, F(id) F(listen_id) F(event) F(status) F(param)
	  F(param.conn) F(param.ud));
	S(struct rdma_addrinfo, F(ai_flags) F(ai_family) F(ai_qp_type)
	  F(ai_port_space) F(ai_src_len) F(ai_dst_len) F(ai_src_addr) F(ai_dst_addr)
	  F(ai_src_canonname) F(ai_dst_canonname) F(ai_route_len) F(ai_route)
	  F(ai_connect_len) F(ai_connect) F(ai_next));
	S(struct rdma_cm_join_mc_attr_ex, F(comp_mask) F(join_flags) F(addr));
	/* struct names rdma-core's verbs_api.h maps onto kernel uAPI types */
	SZ(struct ibv_flow_action_esp);
	SZ(struct ibv_flow_action_esp_keymat_aes_gcm);
	SZ(struct ibv_flow_action_esp_replay_bmp);
	SZ(struct ibv_flow_action_esp_encap);
}

static void part2_consts(void)
{
	printf("\n## extra: enum sizes, all enumerators and integer macros\n");
	/* <infiniband/verbs.h> */
	ES(enum ibv_gid_type); K(IBV_GID_TYPE_IB); K(IBV_GID_TYPE_ROCE_V1);
	  K(IBV_GID_TYPE_ROCE_V2);
	ES(enum ibv_node_type); K(IBV_NODE_UNKNOWN); K(IBV_NODE_CA);
	  K(IBV_NODE_SWITCH); K(IBV_NODE_ROUTER); K(IBV_NODE_RNIC);
	  K(IBV_NODE_USNIC); K(IBV_NODE_USNIC_UDP); K(IBV_NODE_UNSPECIFIED);
	ES(enum ibv_transport_type); K(IBV_TRANSPORT_UNKNOWN); K(IBV_TRANSPORT_IB);
	  K(IBV_TRANSPORT_IWARP); K(IBV_TRANSPORT_USNIC); K(IBV_TRANSPORT_USNIC_UDP);
	  K(IBV_TRANSPORT_UNSPECIFIED);
	ES(enum ibv_device_cap_flags); K(IBV_DEVICE_RESIZE_MAX_WR);
	  K(IBV_DEVICE_BAD_PKEY_CNTR); K(IBV_DEVICE_BAD_QKEY_CNTR);
	  K(IBV_DEVICE_RAW_MULTI); K(IBV_DEVICE_AUTO_PATH_MIG);
	  K(IBV_DEVICE_CHANGE_PHY_PORT); K(IBV_DEVICE_UD_AV_PORT_ENFORCE);
	  K(IBV_DEVICE_CURR_QP_STATE_MOD); K(IBV_DEVICE_SHUTDOWN_PORT);
	  K(IBV_DEVICE_INIT_TYPE); K(IBV_DEVICE_PORT_ACTIVE_EVENT);
	  K(IBV_DEVICE_SYS_IMAGE_GUID); K(IBV_DEVICE_RC_RNR_NAK_GEN);
	  K(IBV_DEVICE_SRQ_RESIZE); K(IBV_DEVICE_N_NOTIFY_CQ);
	  K(IBV_DEVICE_MEM_WINDOW); K(IBV_DEVICE_UD_IP_CSUM); K(IBV_DEVICE_XRC);
	  K(IBV_DEVICE_MEM_MGT_EXTENSIONS); K(IBV_DEVICE_MEM_WINDOW_TYPE_2A);
	  K(IBV_DEVICE_MEM_WINDOW_TYPE_2B); K(IBV_DEVICE_RC_IP_CSUM);
	  K(IBV_DEVICE_RAW_IP_CSUM); K(IBV_DEVICE_MANAGED_FLOW_STEERING);
	ES(enum ibv_fork_status); K(IBV_FORK_DISABLED); K(IBV_FORK_ENABLED);
	  K(IBV_FORK_UNNEEDED);
	ES(enum ibv_atomic_cap); K(IBV_ATOMIC_NONE); K(IBV_ATOMIC_HCA);
	  K(IBV_ATOMIC_GLOB);
	ES(enum ibv_dm_mask); K(IBV_DM_MASK_HANDLE);
	ES(enum ibv_odp_transport_cap_bits); K(IBV_ODP_SUPPORT_SEND);
	  K(IBV_ODP_SUPPORT_RECV); K(IBV_ODP_SUPPORT_WRITE); K(IBV_ODP_SUPPORT_READ);
	  K(IBV_ODP_SUPPORT_ATOMIC); K(IBV_ODP_SUPPORT_SRQ_RECV);
	ES(enum ibv_odp_general_caps); K(IBV_ODP_SUPPORT);
	  K(IBV_ODP_SUPPORT_IMPLICIT);
	ES(enum ibv_rx_hash_function_flags); K(IBV_RX_HASH_FUNC_TOEPLITZ);
	ES(enum ibv_rx_hash_fields); K(IBV_RX_HASH_SRC_IPV4);
	  K(IBV_RX_HASH_DST_IPV4); K(IBV_RX_HASH_SRC_IPV6); K(IBV_RX_HASH_DST_IPV6);
	  K(IBV_RX_HASH_SRC_PORT_TCP); K(IBV_RX_HASH_DST_PORT_TCP);
	  K(IBV_RX_HASH_SRC_PORT_UDP); K(IBV_RX_HASH_DST_PORT_UDP);
	  K(IBV_RX_HASH_IPSEC_SPI); K(IBV_RX_HASH_INNER);
	ES(enum ibv_raw_packet_caps); K(IBV_RAW_PACKET_CAP_CVLAN_STRIPPING);
	  K(IBV_RAW_PACKET_CAP_SCATTER_FCS); K(IBV_RAW_PACKET_CAP_IP_CSUM);
	  K(IBV_RAW_PACKET_CAP_DELAY_DROP);
	ES(enum ibv_tm_cap_flags); K(IBV_TM_CAP_RC);
	ES(enum ibv_pci_atomic_op_size); K(IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP);
	  K(IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP);
	  K(IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP);
	ES(enum ibv_mtu); K(IBV_MTU_256); K(IBV_MTU_512); K(IBV_MTU_1024);
	  K(IBV_MTU_2048); K(IBV_MTU_4096);
	ES(enum ibv_port_state); K(IBV_PORT_NOP); K(IBV_PORT_DOWN); K(IBV_PORT_INIT);
	  K(IBV_PORT_ARMED); K(IBV_PORT_ACTIVE); K(IBV_PORT_ACTIVE_DEFER);
	K(IBV_LINK_LAYER_UNSPECIFIED); K(IBV_LINK_LAYER_INFINIBAND);
	  K(IBV_LINK_LAYER_ETHERNET);
	ES(enum ibv_port_cap_flags); K(IBV_PORT_SM); K(IBV_PORT_NOTICE_SUP);
	  K(IBV_PORT_TRAP_SUP); K(IBV_PORT_OPT_IPD_SUP); K(IBV_PORT_AUTO_MIGR_SUP);
	  K(IBV_PORT_SL_MAP_SUP); K(IBV_PORT_MKEY_NVRAM); K(IBV_PORT_PKEY_NVRAM);
	  K(IBV_PORT_LED_INFO_SUP); K(IBV_PORT_SYS_IMAGE_GUID_SUP);
	  K(IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP); K(IBV_PORT_EXTENDED_SPEEDS_SUP);
	  K(IBV_PORT_CAP_MASK2_SUP); K(IBV_PORT_CM_SUP); K(IBV_PORT_SNMP_TUNNEL_SUP);
	  K(IBV_PORT_REINIT_SUP); K(IBV_PORT_DEVICE_MGMT_SUP);
	  K(IBV_PORT_VENDOR_CLASS_SUP); K(IBV_PORT_DR_NOTICE_SUP);
	  K(IBV_PORT_CAP_MASK_NOTICE_SUP); K(IBV_PORT_BOOT_MGMT_SUP);
	  K(IBV_PORT_LINK_LATENCY_SUP); K(IBV_PORT_CLIENT_REG_SUP);
	  K(IBV_PORT_IP_BASED_GIDS);
	ES(enum ibv_port_cap_flags2); K(IBV_PORT_SET_NODE_DESC_SUP);
	  K(IBV_PORT_INFO_EXT_SUP); K(IBV_PORT_VIRT_SUP);
	  K(IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP); K(IBV_PORT_LINK_WIDTH_2X_SUP);
	  K(IBV_PORT_LINK_SPEED_HDR_SUP); K(IBV_PORT_LINK_SPEED_NDR_SUP);
	ES(enum ibv_event_type); K(IBV_EVENT_CQ_ERR); K(IBV_EVENT_QP_FATAL);
	  K(IBV_EVENT_QP_REQ_ERR); K(IBV_EVENT_QP_ACCESS_ERR); K(IBV_EVENT_COMM_EST);
	  K(IBV_EVENT_SQ_DRAINED); K(IBV_EVENT_PATH_MIG); K(IBV_EVENT_PATH_MIG_ERR);
	  K(IBV_EVENT_DEVICE_FATAL); K(IBV_EVENT_PORT_ACTIVE); K(IBV_EVENT_PORT_ERR);
	  K(IBV_EVENT_LID_CHANGE); K(IBV_EVENT_PKEY_CHANGE); K(IBV_EVENT_SM_CHANGE);
	  K(IBV_EVENT_SRQ_ERR); K(IBV_EVENT_SRQ_LIMIT_REACHED);
	  K(IBV_EVENT_QP_LAST_WQE_REACHED); K(IBV_EVENT_CLIENT_REREGISTER);
	  K(IBV_EVENT_GID_CHANGE); K(IBV_EVENT_WQ_FATAL);
	ES(enum ibv_wc_status); K(IBV_WC_SUCCESS); K(IBV_WC_LOC_LEN_ERR);
	  K(IBV_WC_LOC_QP_OP_ERR); K(IBV_WC_LOC_EEC_OP_ERR); K(IBV_WC_LOC_PROT_ERR);
	  K(IBV_WC_WR_FLUSH_ERR); K(IBV_WC_MW_BIND_ERR); K(IBV_WC_BAD_RESP_ERR);
	  K(IBV_WC_LOC_ACCESS_ERR); K(IBV_WC_REM_INV_REQ_ERR);
	  K(IBV_WC_REM_ACCESS_ERR); K(IBV_WC_REM_OP_ERR); K(IBV_WC_RETRY_EXC_ERR);
	  K(IBV_WC_RNR_RETRY_EXC_ERR); K(IBV_WC_LOC_RDD_VIOL_ERR);
	  K(IBV_WC_REM_INV_RD_REQ_ERR); K(IBV_WC_REM_ABORT_ERR);
	  K(IBV_WC_INV_EECN_ERR); K(IBV_WC_INV_EEC_STATE_ERR); K(IBV_WC_FATAL_ERR);
	  K(IBV_WC_RESP_TIMEOUT_ERR); K(IBV_WC_GENERAL_ERR); K(IBV_WC_TM_ERR);
	  K(IBV_WC_TM_RNDV_INCOMPLETE);
	ES(enum ibv_wc_opcode); K(IBV_WC_SEND); K(IBV_WC_RDMA_WRITE);
	  K(IBV_WC_RDMA_READ); K(IBV_WC_COMP_SWAP); K(IBV_WC_FETCH_ADD);
	  K(IBV_WC_BIND_MW); K(IBV_WC_LOCAL_INV); K(IBV_WC_TSO);
	  K(IBV_WC_ATOMIC_WRITE); K(IBV_WC_RECV); K(IBV_WC_RECV_RDMA_WITH_IMM);
	  K(IBV_WC_TM_ADD); K(IBV_WC_TM_DEL); K(IBV_WC_TM_SYNC); K(IBV_WC_TM_RECV);
	  K(IBV_WC_TM_NO_TAG); K(IBV_WC_DRIVER1); K(IBV_WC_DRIVER2);
	  K(IBV_WC_DRIVER3);
	K(IBV_WC_IP_CSUM_OK_SHIFT);
	ES(enum ibv_create_cq_wc_flags); K(IBV_WC_EX_WITH_BYTE_LEN);
	  K(IBV_WC_EX_WITH_IMM); K(IBV_WC_EX_WITH_QP_NUM); K(IBV_WC_EX_WITH_SRC_QP);
	  K(IBV_WC_EX_WITH_SLID); K(IBV_WC_EX_WITH_SL);
	  K(IBV_WC_EX_WITH_DLID_PATH_BITS); K(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
	  K(IBV_WC_EX_WITH_CVLAN); K(IBV_WC_EX_WITH_FLOW_TAG);
	  K(IBV_WC_EX_WITH_TM_INFO);
	  K(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
	K(IBV_WC_STANDARD_FLAGS);
	K(IBV_CREATE_CQ_SUP_WC_FLAGS);
	ES(enum ibv_wc_flags); K(IBV_WC_GRH); K(IBV_WC_WITH_IMM);
	  K(IBV_WC_IP_CSUM_OK); K(IBV_WC_WITH_INV); K(IBV_WC_TM_SYNC_REQ);
	  K(IBV_WC_TM_MATCH); K(IBV_WC_TM_DATA_VALID);
	ES(enum ibv_access_flags); K(IBV_ACCESS_LOCAL_WRITE);
	  K(IBV_ACCESS_REMOTE_WRITE); K(IBV_ACCESS_REMOTE_READ);
	  K(IBV_ACCESS_REMOTE_ATOMIC); K(IBV_ACCESS_MW_BIND);
	  K(IBV_ACCESS_ZERO_BASED); K(IBV_ACCESS_ON_DEMAND); K(IBV_ACCESS_HUGETLB);
	  K(IBV_ACCESS_RELAXED_ORDERING);
	ES(enum ibv_xrcd_init_attr_mask); K(IBV_XRCD_INIT_ATTR_FD);
	  K(IBV_XRCD_INIT_ATTR_OFLAGS); K(IBV_XRCD_INIT_ATTR_RESERVED);
	ES(enum ibv_rereg_mr_flags); K(IBV_REREG_MR_CHANGE_TRANSLATION);
	  K(IBV_REREG_MR_CHANGE_PD); K(IBV_REREG_MR_CHANGE_ACCESS);
	  K(IBV_REREG_MR_FLAGS_SUPPORTED);
	ES(enum ibv_mw_type); K(IBV_MW_TYPE_1); K(IBV_MW_TYPE_2);
	ES(enum ibv_rate); K(IBV_RATE_MAX); K(IBV_RATE_2_5_GBPS); K(IBV_RATE_5_GBPS);
	  K(IBV_RATE_10_GBPS); K(IBV_RATE_20_GBPS); K(IBV_RATE_30_GBPS);
	  K(IBV_RATE_40_GBPS); K(IBV_RATE_60_GBPS); K(IBV_RATE_80_GBPS);
	  K(IBV_RATE_120_GBPS); K(IBV_RATE_14_GBPS); K(IBV_RATE_56_GBPS);
	  K(IBV_RATE_112_GBPS); K(IBV_RATE_168_GBPS); K(IBV_RATE_25_GBPS);
	  K(IBV_RATE_100_GBPS); K(IBV_RATE_200_GBPS); K(IBV_RATE_300_GBPS);
	  K(IBV_RATE_28_GBPS); K(IBV_RATE_50_GBPS); K(IBV_RATE_400_GBPS);
	  K(IBV_RATE_600_GBPS); K(IBV_RATE_800_GBPS); K(IBV_RATE_1200_GBPS);
	ES(enum ibv_srq_attr_mask); K(IBV_SRQ_MAX_WR); K(IBV_SRQ_LIMIT);
	ES(enum ibv_srq_type); K(IBV_SRQT_BASIC); K(IBV_SRQT_XRC); K(IBV_SRQT_TM);
	ES(enum ibv_srq_init_attr_mask); K(IBV_SRQ_INIT_ATTR_TYPE);
	  K(IBV_SRQ_INIT_ATTR_PD); K(IBV_SRQ_INIT_ATTR_XRCD);
	  K(IBV_SRQ_INIT_ATTR_CQ); K(IBV_SRQ_INIT_ATTR_TM);
	  K(IBV_SRQ_INIT_ATTR_RESERVED);
	ES(enum ibv_wq_type); K(IBV_WQT_RQ);
	ES(enum ibv_wq_init_attr_mask); K(IBV_WQ_INIT_ATTR_FLAGS);
	  K(IBV_WQ_INIT_ATTR_RESERVED);
	ES(enum ibv_wq_flags); K(IBV_WQ_FLAGS_CVLAN_STRIPPING);
	  K(IBV_WQ_FLAGS_SCATTER_FCS); K(IBV_WQ_FLAGS_DELAY_DROP);
	  K(IBV_WQ_FLAGS_PCI_WRITE_END_PADDING); K(IBV_WQ_FLAGS_RESERVED);
	ES(enum ibv_wq_state); K(IBV_WQS_RESET); K(IBV_WQS_RDY); K(IBV_WQS_ERR);
	  K(IBV_WQS_UNKNOWN);
	ES(enum ibv_wq_attr_mask); K(IBV_WQ_ATTR_STATE); K(IBV_WQ_ATTR_CURR_STATE);
	  K(IBV_WQ_ATTR_FLAGS); K(IBV_WQ_ATTR_RESERVED);
	ES(enum ibv_ind_table_init_attr_mask); K(IBV_CREATE_IND_TABLE_RESERVED);
	ES(enum ibv_qp_type); K(IBV_QPT_RC); K(IBV_QPT_UC); K(IBV_QPT_UD);
	  K(IBV_QPT_RAW_PACKET); K(IBV_QPT_XRC_SEND); K(IBV_QPT_XRC_RECV);
	  K(IBV_QPT_DRIVER);
	ES(enum ibv_qp_init_attr_mask); K(IBV_QP_INIT_ATTR_PD);
	  K(IBV_QP_INIT_ATTR_XRCD); K(IBV_QP_INIT_ATTR_CREATE_FLAGS);
	  K(IBV_QP_INIT_ATTR_MAX_TSO_HEADER); K(IBV_QP_INIT_ATTR_IND_TABLE);
	  K(IBV_QP_INIT_ATTR_RX_HASH); K(IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	ES(enum ibv_qp_create_flags); K(IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	  K(IBV_QP_CREATE_SCATTER_FCS); K(IBV_QP_CREATE_CVLAN_STRIPPING);
	  K(IBV_QP_CREATE_SOURCE_QPN); K(IBV_QP_CREATE_PCI_WRITE_END_PADDING);
	ES(enum ibv_qp_create_send_ops_flags); K(IBV_QP_EX_WITH_RDMA_WRITE);
	  K(IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM); K(IBV_QP_EX_WITH_SEND);
	  K(IBV_QP_EX_WITH_SEND_WITH_IMM); K(IBV_QP_EX_WITH_RDMA_READ);
	  K(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);
	  K(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD); K(IBV_QP_EX_WITH_LOCAL_INV);
	  K(IBV_QP_EX_WITH_BIND_MW); K(IBV_QP_EX_WITH_SEND_WITH_INV);
	  K(IBV_QP_EX_WITH_TSO); K(IBV_QP_EX_WITH_ATOMIC_WRITE);
	ES(enum ibv_qp_open_attr_mask); K(IBV_QP_OPEN_ATTR_NUM);
	  K(IBV_QP_OPEN_ATTR_XRCD); K(IBV_QP_OPEN_ATTR_CONTEXT);
	  K(IBV_QP_OPEN_ATTR_TYPE); K(IBV_QP_OPEN_ATTR_RESERVED);
	ES(enum ibv_qp_attr_mask); K(IBV_QP_STATE); K(IBV_QP_CUR_STATE);
	  K(IBV_QP_EN_SQD_ASYNC_NOTIFY); K(IBV_QP_ACCESS_FLAGS);
	  K(IBV_QP_PKEY_INDEX); K(IBV_QP_PORT); K(IBV_QP_QKEY); K(IBV_QP_AV);
	  K(IBV_QP_PATH_MTU); K(IBV_QP_TIMEOUT); K(IBV_QP_RETRY_CNT);
	  K(IBV_QP_RNR_RETRY); K(IBV_QP_RQ_PSN); K(IBV_QP_MAX_QP_RD_ATOMIC);
	  K(IBV_QP_ALT_PATH); K(IBV_QP_MIN_RNR_TIMER); K(IBV_QP_SQ_PSN);
	  K(IBV_QP_MAX_DEST_RD_ATOMIC); K(IBV_QP_PATH_MIG_STATE); K(IBV_QP_CAP);
	  K(IBV_QP_DEST_QPN); K(IBV_QP_RATE_LIMIT);
	ES(enum ibv_qp_state); K(IBV_QPS_RESET); K(IBV_QPS_INIT); K(IBV_QPS_RTR);
	  K(IBV_QPS_RTS); K(IBV_QPS_SQD); K(IBV_QPS_SQE); K(IBV_QPS_ERR);
	  K(IBV_QPS_UNKNOWN);
	ES(enum ibv_mig_state); K(IBV_MIG_MIGRATED); K(IBV_MIG_REARM);
	  K(IBV_MIG_ARMED);
	ES(enum ibv_wr_opcode); K(IBV_WR_RDMA_WRITE); K(IBV_WR_RDMA_WRITE_WITH_IMM);
	  K(IBV_WR_SEND); K(IBV_WR_SEND_WITH_IMM); K(IBV_WR_RDMA_READ);
	  K(IBV_WR_ATOMIC_CMP_AND_SWP); K(IBV_WR_ATOMIC_FETCH_AND_ADD);
	  K(IBV_WR_LOCAL_INV); K(IBV_WR_BIND_MW); K(IBV_WR_SEND_WITH_INV);
	  K(IBV_WR_TSO); K(IBV_WR_DRIVER1); K(IBV_WR_ATOMIC_WRITE);
	ES(enum ibv_send_flags); K(IBV_SEND_FENCE); K(IBV_SEND_SIGNALED);
	  K(IBV_SEND_SOLICITED); K(IBV_SEND_INLINE); K(IBV_SEND_IP_CSUM);
	ES(enum ibv_ops_wr_opcode); K(IBV_WR_TAG_ADD); K(IBV_WR_TAG_DEL);
	  K(IBV_WR_TAG_SYNC);
	ES(enum ibv_ops_flags); K(IBV_OPS_SIGNALED); K(IBV_OPS_TM_SYNC);
	ES(enum ibv_cq_attr_mask); K(IBV_CQ_ATTR_MODERATE); K(IBV_CQ_ATTR_RESERVED);
	ES(enum ibv_flow_flags); K(IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
	  K(IBV_FLOW_ATTR_FLAGS_EGRESS);
	ES(enum ibv_flow_attr_type); K(IBV_FLOW_ATTR_NORMAL);
	  K(IBV_FLOW_ATTR_ALL_DEFAULT); K(IBV_FLOW_ATTR_MC_DEFAULT);
	  K(IBV_FLOW_ATTR_SNIFFER);
	ES(enum ibv_flow_spec_type); K(IBV_FLOW_SPEC_ETH); K(IBV_FLOW_SPEC_IPV4);
	  K(IBV_FLOW_SPEC_IPV6); K(IBV_FLOW_SPEC_IPV4_EXT); K(IBV_FLOW_SPEC_ESP);
	  K(IBV_FLOW_SPEC_TCP); K(IBV_FLOW_SPEC_UDP); K(IBV_FLOW_SPEC_VXLAN_TUNNEL);
	  K(IBV_FLOW_SPEC_GRE); K(IBV_FLOW_SPEC_MPLS); K(IBV_FLOW_SPEC_INNER);
	  K(IBV_FLOW_SPEC_ACTION_TAG); K(IBV_FLOW_SPEC_ACTION_DROP);
	  K(IBV_FLOW_SPEC_ACTION_HANDLE); K(IBV_FLOW_SPEC_ACTION_COUNT);
	ES(enum ibv_flow_action_esp_mask); K(IBV_FLOW_ACTION_ESP_MASK_ESN);
	K(IBV_SYSFS_NAME_MAX); K(IBV_SYSFS_PATH_MAX);
	ES(enum ibv_cq_init_attr_mask); K(IBV_CQ_INIT_ATTR_MASK_FLAGS);
	  K(IBV_CQ_INIT_ATTR_MASK_PD);
	ES(enum ibv_create_cq_attr_flags); K(IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	  K(IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
	ES(enum ibv_parent_domain_init_attr_mask);
	  K(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS);
	  K(IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
	ES(enum ibv_counter_description); K(IBV_COUNTER_PACKETS);
	  K(IBV_COUNTER_BYTES);
	ES(enum ibv_read_counters_flags); K(IBV_READ_COUNTERS_ATTR_PREFER_CACHED);
	ES(enum ibv_values_mask); K(IBV_VALUES_MASK_RAW_CLOCK);
	  K(IBV_VALUES_MASK_RESERVED);
	ES(enum ibv_rereg_mr_err_code); K(IBV_REREG_MR_ERR_INPUT);
	  K(IBV_REREG_MR_ERR_DONT_FORK_NEW); K(IBV_REREG_MR_ERR_DO_FORK_OLD);
	  K(IBV_REREG_MR_ERR_CMD); K(IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW);
	K(IBV_DEVICE_RAW_SCATTER_FCS);
	K(IBV_DEVICE_PCI_WRITE_END_PADDING);
	K(ETHERNET_LL_SIZE);
	K(IB_ROCE_UDP_ENCAP_VALID_PORT_MIN);
	K(IB_ROCE_UDP_ENCAP_VALID_PORT_MAX);
	K(IB_GRH_FLOWLABEL_MASK);
	/* <infiniband/sa.h> */
	K(IBV_PATH_RECORD_REVERSIBLE);
	K(IBV_PATH_FLAG_GMP);
	K(IBV_PATH_FLAG_PRIMARY);
	K(IBV_PATH_FLAG_ALTERNATE);
	K(IBV_PATH_FLAG_OUTBOUND);
	K(IBV_PATH_FLAG_INBOUND);
	K(IBV_PATH_FLAG_INBOUND_REVERSE);
	K(IBV_PATH_FLAG_BIDIRECTIONAL);
	/* <infiniband/ib.h> */
	K(AF_IB);
	K(PF_IB);
	/* <rdma/rdma_cma.h> */
	ES(enum rdma_cm_event_type); K(RDMA_CM_EVENT_ADDR_RESOLVED);
	  K(RDMA_CM_EVENT_ADDR_ERROR); K(RDMA_CM_EVENT_ROUTE_RESOLVED);
	  K(RDMA_CM_EVENT_ROUTE_ERROR); K(RDMA_CM_EVENT_CONNECT_REQUEST);
	  K(RDMA_CM_EVENT_CONNECT_RESPONSE); K(RDMA_CM_EVENT_CONNECT_ERROR);
	  K(RDMA_CM_EVENT_UNREACHABLE); K(RDMA_CM_EVENT_REJECTED);
	  K(RDMA_CM_EVENT_ESTABLISHED); K(RDMA_CM_EVENT_DISCONNECTED);
	  K(RDMA_CM_EVENT_DEVICE_REMOVAL); K(RDMA_CM_EVENT_MULTICAST_JOIN);
	  K(RDMA_CM_EVENT_MULTICAST_ERROR); K(RDMA_CM_EVENT_ADDR_CHANGE);
	  K(RDMA_CM_EVENT_TIMEWAIT_EXIT);
	ES(enum rdma_port_space); K(RDMA_PS_IPOIB); K(RDMA_PS_TCP); K(RDMA_PS_UDP);
	  K(RDMA_PS_IB);
	K(RDMA_MAX_RESP_RES); K(RDMA_MAX_INIT_DEPTH);
	ES(enum rdma_cm_join_mc_attr_mask); K(RDMA_CM_JOIN_MC_ATTR_ADDRESS);
	  K(RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS); K(RDMA_CM_JOIN_MC_ATTR_RESERVED);
	ES(enum rdma_cm_mc_join_flags); K(RDMA_MC_JOIN_FLAG_FULLMEMBER);
	  K(RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER); K(RDMA_MC_JOIN_FLAG_RESERVED);
	K(RDMA_OPTION_ID); K(RDMA_OPTION_IB);
	K(RDMA_OPTION_ID_TOS); K(RDMA_OPTION_ID_REUSEADDR); K(RDMA_OPTION_ID_AFONLY);
	  K(RDMA_OPTION_ID_ACK_TIMEOUT);
	K(RDMA_OPTION_IB_PATH);
	K(RDMA_IB_IP_PS_MASK);
	K(RDMA_IB_IP_PORT_MASK);
	K(RDMA_IB_IP_PS_TCP);
	K(RDMA_IB_IP_PS_UDP);
	K(RDMA_IB_PS_IB);
	K(RDMA_UDP_QKEY);
	K(RAI_PASSIVE);
	K(RAI_NUMERICHOST);
	K(RAI_NOROUTE);
	K(RAI_FAMILY);
	/* <rdma/rsocket.h> */
	K(RDMA_SQSIZE); K(RDMA_RQSIZE); K(RDMA_INLINE); K(RDMA_IOMAPSIZE);
	  K(RDMA_ROUTE);
	K(SOL_RDMA);
	/* IBV_ names defined through <infiniband/verbs_api.h> in rdma-core */
	K(IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM); K(IBV_FLOW_ACTION_IV_ALGO_SEQ);
	  K(IBV_FLOW_ACTION_ESP_REPLAY_NONE); K(IBV_FLOW_ACTION_ESP_REPLAY_BMP);
	  K(IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO);
	  K(IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD);
	  K(IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL);
	  K(IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT);
	  K(IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT); K(IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT);
	  K(IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW);
	  K(IBV_ADVISE_MR_ADVICE_PREFETCH); K(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	  K(IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT); K(IBV_ADVISE_MR_FLAG_FLUSH);
	  K(IBV_QPF_GRH_REQUIRED); K(IBV_ACCESS_OPTIONAL_RANGE);
	  K(IBV_ACCESS_OPTIONAL_FIRST);
}

int main(void)
{
	part1();
	part2_structs();
	part2_consts();
	return 0;
}
