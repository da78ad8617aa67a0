// SPDX-License-Identifier: BSD-2-Clause
// IBVERBS_PRIVATE_34: the provider-driver interface. Debian's libmlx5/libefa import it and
// call verbs_register_driver_34() from their constructors; nothing else is ever reached,
// because our devices are not theirs. Each entry fails cleanly.
#include <cerrno>
#include <cstdarg>
#include <cstddef>

extern "C" {

bool verbs_allow_disassociate_destroy = false;

void verbs_register_driver_34(const void *) {}
void __verbs_log(void *, int, const char *, ...) {}
void *_verbs_init_and_alloc_context(void *, int, size_t, size_t, unsigned int) {
    errno = EOPNOTSUPP;
    return nullptr;
}
int verbs_open_device(void *, void *) { return EOPNOTSUPP; }
void verbs_uninit_context(void *) {}
void verbs_set_ops(void *, const void *) {}
void verbs_init_cq(void *, void *, void *, void *) {}
int execute_ioctl(void *, void *) { return EOPNOTSUPP; }
unsigned int __ioctl_final_num_attrs(unsigned int num, void *) { return num; }

#define SR_CMD_STUB(name) \
    int name() { return EOPNOTSUPP; }
SR_CMD_STUB(ibv_cmd_advise_mr)
SR_CMD_STUB(ibv_cmd_alloc_dm)
SR_CMD_STUB(ibv_cmd_alloc_mw)
SR_CMD_STUB(ibv_cmd_alloc_pd)
SR_CMD_STUB(ibv_cmd_attach_mcast)
SR_CMD_STUB(ibv_cmd_close_xrcd)
SR_CMD_STUB(ibv_cmd_create_ah)
SR_CMD_STUB(ibv_cmd_create_counters)
SR_CMD_STUB(ibv_cmd_create_cq)
SR_CMD_STUB(ibv_cmd_create_cq_ex)
SR_CMD_STUB(ibv_cmd_create_flow)
SR_CMD_STUB(ibv_cmd_create_flow_action_esp)
SR_CMD_STUB(ibv_cmd_create_qp)
SR_CMD_STUB(ibv_cmd_create_qp_ex)
SR_CMD_STUB(ibv_cmd_create_qp_ex2)
SR_CMD_STUB(ibv_cmd_create_rwq_ind_table)
SR_CMD_STUB(ibv_cmd_create_srq)
SR_CMD_STUB(ibv_cmd_create_srq_ex)
SR_CMD_STUB(ibv_cmd_create_wq)
SR_CMD_STUB(ibv_cmd_dealloc_mw)
SR_CMD_STUB(ibv_cmd_dealloc_pd)
SR_CMD_STUB(ibv_cmd_dereg_mr)
SR_CMD_STUB(ibv_cmd_destroy_ah)
SR_CMD_STUB(ibv_cmd_destroy_counters)
SR_CMD_STUB(ibv_cmd_destroy_cq)
SR_CMD_STUB(ibv_cmd_destroy_flow)
SR_CMD_STUB(ibv_cmd_destroy_flow_action)
SR_CMD_STUB(ibv_cmd_destroy_qp)
SR_CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
SR_CMD_STUB(ibv_cmd_destroy_srq)
SR_CMD_STUB(ibv_cmd_destroy_wq)
SR_CMD_STUB(ibv_cmd_detach_mcast)
SR_CMD_STUB(ibv_cmd_free_dm)
SR_CMD_STUB(ibv_cmd_get_context)
SR_CMD_STUB(ibv_cmd_modify_cq)
SR_CMD_STUB(ibv_cmd_modify_flow_action_esp)
SR_CMD_STUB(ibv_cmd_modify_qp)
SR_CMD_STUB(ibv_cmd_modify_qp_ex)
SR_CMD_STUB(ibv_cmd_modify_srq)
SR_CMD_STUB(ibv_cmd_modify_wq)
SR_CMD_STUB(ibv_cmd_open_qp)
SR_CMD_STUB(ibv_cmd_open_xrcd)
SR_CMD_STUB(ibv_cmd_poll_cq)
SR_CMD_STUB(ibv_cmd_post_recv)
SR_CMD_STUB(ibv_cmd_post_send)
SR_CMD_STUB(ibv_cmd_post_srq_recv)
SR_CMD_STUB(ibv_cmd_query_context)
SR_CMD_STUB(ibv_cmd_query_device_any)
SR_CMD_STUB(ibv_cmd_query_mr)
SR_CMD_STUB(ibv_cmd_query_port)
SR_CMD_STUB(ibv_cmd_query_qp)
SR_CMD_STUB(ibv_cmd_query_srq)
SR_CMD_STUB(ibv_cmd_read_counters)
SR_CMD_STUB(ibv_cmd_reg_dm_mr)
SR_CMD_STUB(ibv_cmd_reg_dmabuf_mr)
SR_CMD_STUB(ibv_cmd_reg_mr)
SR_CMD_STUB(ibv_cmd_req_notify_cq)
SR_CMD_STUB(ibv_cmd_rereg_mr)
SR_CMD_STUB(ibv_cmd_resize_cq)
#undef SR_CMD_STUB

}  // extern "C"
