// SPDX-License-Identifier: BSD-2-Clause
// Multicast through the CM: rdma_join_multicast(_ex) and rdma_leave_multicast. A group is
// named by an IP multicast address (or, through AF_IB, by its MGID); RoCE v2 maps IPv4
// a.b.c.d to the MGID ::ffff:a.b.c.d. The join is local (the kernel's IGMP/MLD report
// goes out when the QP's socket joins), so MULTICAST_JOIN follows at once.
#include <infiniband/ib.h>

#include <cerrno>
#include <cstring>

#include "cm/cm_api.h"
#include "cm/cm_id.h"
#include "transport/mcast_socket.h"
#include "verbs/device.h"
#include "verbs/verbs_ops.h"

namespace softrdma::cm {
namespace {

socklen_t group_addr_len(const sockaddr *a) {
    switch (a->sa_family) {
        case AF_INET:
            return sizeof(sockaddr_in);
        case AF_INET6:
            return sizeof(sockaddr_in6);
        case AF_IB:
            return sizeof(sockaddr_ib);
        default:
            return 0;
    }
}

void group_mgid(const sockaddr *a, uint8_t mgid[16]) {
    if (a->sa_family == AF_IB)
        std::memcpy(mgid, &reinterpret_cast<const sockaddr_ib *>(a)->sib_addr, 16);
    else
        sockaddr_to_gid(a, mgid);
}

uint8_t sgid_index_of(const CmId &id) {
    const auto gids = verbs::Device::from(id.verbs->device)->gids();
    for (size_t i = 0; i < gids.size(); ++i)
        if (std::memcmp(gids[i].raw, id.route.addr.addr.ibaddr.sgid.raw, 16) == 0)
            return uint8_t(i);
    return 0;
}

int join(rdma_cm_id *raw, const sockaddr *addr, uint32_t flags, void *ctx) {
    if (!raw || !addr) return fail(EINVAL);
    const socklen_t len = group_addr_len(addr);
    if (!len) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("join_multicast %p flags %u", static_cast<void *>(raw), flags);
    // Only datagram ids with a device, bound or resolved (the kernel's checks).
    if (id.qp_type != IBV_QPT_UD || !id.verbs ||
        (id.state != State::kAddrBound && id.state != State::kAddrResolved))
        return fail(EINVAL);
    CmId::McastJoin j{};
    std::memcpy(&j.addr, addr, len);
    j.addr_len = len;
    j.context = ctx;
    j.send_only = flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
    group_mgid(addr, j.mgid.raw);
    if (!transport::gid_is_multicast(j.mgid.raw)) return fail(EINVAL);

    rdma_ud_param ud{};
    ud.private_data = ctx;  // rdma-core hands the join's context back here
    ud.ah_attr.is_global = 1;
    ud.ah_attr.port_num = id.port_num ? id.port_num : 1;
    ud.ah_attr.grh.dgid = j.mgid;
    ud.ah_attr.grh.sgid_index = sgid_index_of(id);
    ud.ah_attr.grh.hop_limit = 1;  // as the kernel's RoCE join: the group is link-local
    ud.ah_attr.grh.traffic_class = id.tos;
    ud.qp_num = 0xffffff;
    ud.qkey = RDMA_UDP_QKEY;
    // A send-only full member never receives: its QP is not attached (rdma-core's rule).
    int err = 0;
    if (!j.send_only && id.qp) err = verbs::attach_mcast(id.qp, &ud.ah_attr.grh.dgid);
    id.mcast.push_back(j);
    if (err)
        id.post_event(RDMA_CM_EVENT_MULTICAST_ERROR, -err, nullptr, 0, 0, nullptr, &ud);
    else
        id.post_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0, nullptr, 0, 0, nullptr, &ud);
    return 0;
}

}  // namespace

int join_multicast(rdma_cm_id *id, sockaddr *addr, void *ctx) {
    return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, ctx);
}

int join_multicast_ex(rdma_cm_id *id, rdma_cm_join_mc_attr_ex *attr, void *ctx) {
    if (!attr) return fail(EINVAL);
    if (attr->comp_mask & ~uint32_t(RDMA_CM_JOIN_MC_ATTR_RESERVED - 1)) return fail(EINVAL);
    if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS)) return fail(EINVAL);
    if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
        attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
        return fail(EINVAL);
    return join(id, attr->addr, attr->join_flags, ctx);
}

int leave_multicast(rdma_cm_id *raw, sockaddr *addr) {
    if (!raw || !addr) return fail(EINVAL);
    const socklen_t len = group_addr_len(addr);
    if (!len) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("leave_multicast %p", static_cast<void *>(raw));
    for (auto it = id.mcast.begin(); it != id.mcast.end(); ++it) {
        if (it->addr_len != len || std::memcmp(&it->addr, addr, len) != 0) continue;
        if (!it->send_only && id.qp) verbs::detach_mcast(id.qp, &it->mgid);
        id.mcast.erase(it);
        return 0;
    }
    return fail(EADDRNOTAVAIL);
}

// rdma_destroy_id leaves every group the id still belongs to (mu held).
void leave_all_multicast(CmId &id) {
    for (const CmId::McastJoin &j : id.mcast)
        if (!j.send_only && id.qp) verbs::detach_mcast(id.qp, &j.mgid);
    id.mcast.clear();
}

}  // namespace softrdma::cm
