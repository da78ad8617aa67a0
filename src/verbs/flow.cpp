// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/flow.h"

#include <mutex>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/log.h"
#include "verbs/counters.h"
#include "verbs/qp.h"
#include "verbs/qp_state_table.h"

namespace softrdma::verbs {
namespace {

constexpr const char *kVerb = "ibv_create_flow";

void copy_ip(uint8_t (&dst)[16], uint32_t be) {
    std::memcpy(dst, &be, 4);
}

// Adds one spec to the rule; an errno for a spec we cannot take.
int add_spec(const ibv_flow_spec &s, Flow &f) {
    wire::FrameMatch &m = f.match;
    const unsigned type = s.hdr.type;
    auto sized = [&](size_t want) {
        return s.hdr.size == want ? 0
                                  : refuse(EINVAL, kVerb, "spec type 0x%x has size %u, not %zu",
                                           type, s.hdr.size, want);
    };
    switch (type) {
        case IBV_FLOW_SPEC_ETH: {
            if (int e = sized(sizeof s.eth)) return e;
            const auto &v = s.eth.val, &k = s.eth.mask;
            std::memcpy(m.dst_mac, v.dst_mac, 6);
            std::memcpy(m.dst_mac_mask, k.dst_mac, 6);
            std::memcpy(m.src_mac, v.src_mac, 6);
            std::memcpy(m.src_mac_mask, k.src_mac, 6);
            m.ether_type = ntohs(v.ether_type);
            m.ether_type_mask = ntohs(k.ether_type);
            m.vlan_tci = ntohs(v.vlan_tag);
            m.vlan_tci_mask = ntohs(k.vlan_tag);
            return 0;
        }
        case IBV_FLOW_SPEC_IPV4:
        case IBV_FLOW_SPEC_IPV4_EXT: {
            const bool ext = type == IBV_FLOW_SPEC_IPV4_EXT;
            if (int e = sized(ext ? sizeof s.ipv4_ext : sizeof s.ipv4)) return e;
            m.ip_version = 4;
            const auto &v = s.ipv4_ext.val, &k = s.ipv4_ext.mask;  // same prefix as ipv4
            const auto &kb =
                ext ? k
                    : ibv_flow_ipv4_ext_filter{s.ipv4.mask.src_ip, s.ipv4.mask.dst_ip, 0, 0, 0, 0};
            copy_ip(m.src_ip, ext ? v.src_ip : s.ipv4.val.src_ip);
            copy_ip(m.dst_ip, ext ? v.dst_ip : s.ipv4.val.dst_ip);
            copy_ip(m.src_ip_mask, kb.src_ip);
            copy_ip(m.dst_ip_mask, kb.dst_ip);
            if (ext) {
                m.l4_proto = v.proto, m.l4_proto_mask = k.proto;
                m.tos = v.tos, m.tos_mask = k.tos;
                m.ttl = v.ttl, m.ttl_mask = k.ttl;
                m.ipv4_flags = v.flags, m.ipv4_flags_mask = k.flags;
            }
            return 0;
        }
        case IBV_FLOW_SPEC_IPV6: {
            if (int e = sized(sizeof s.ipv6)) return e;
            const auto &v = s.ipv6.val, &k = s.ipv6.mask;
            m.ip_version = 6;
            std::memcpy(m.src_ip, v.src_ip, 16);
            std::memcpy(m.src_ip_mask, k.src_ip, 16);
            std::memcpy(m.dst_ip, v.dst_ip, 16);
            std::memcpy(m.dst_ip_mask, k.dst_ip, 16);
            m.flow_label = ntohl(v.flow_label);
            m.flow_label_mask = ntohl(k.flow_label) & 0xfffff;
            m.l4_proto = v.next_hdr, m.l4_proto_mask = k.next_hdr;
            m.tos = v.traffic_class, m.tos_mask = k.traffic_class;
            m.ttl = v.hop_limit, m.ttl_mask = k.hop_limit;
            return 0;
        }
        case IBV_FLOW_SPEC_TCP:
        case IBV_FLOW_SPEC_UDP: {
            if (int e = sized(sizeof s.tcp_udp)) return e;
            m.want_l4 = type == IBV_FLOW_SPEC_TCP ? 6 : 17;
            m.src_port = ntohs(s.tcp_udp.val.src_port);
            m.src_port_mask = ntohs(s.tcp_udp.mask.src_port);
            m.dst_port = ntohs(s.tcp_udp.val.dst_port);
            m.dst_port_mask = ntohs(s.tcp_udp.mask.dst_port);
            return 0;
        }
        case IBV_FLOW_SPEC_ACTION_DROP:
            if (int e = sized(sizeof s.drop)) return e;
            f.drop = true;
            return 0;
        case IBV_FLOW_SPEC_ACTION_COUNT: {
            if (int e = sized(sizeof s.flow_count)) return e;
            if (!s.flow_count.counters || f.counters)
                return refuse(EINVAL, kVerb, "a count action needs one counters object");
            Counters *c = Counters::from(s.flow_count.counters);
            std::lock_guard lk(c->mu);
            if (c->points.empty())
                return refuse(EINVAL, kVerb,
                              "the counters object has nothing attached "
                              "(ibv_attach_counters_point_flow with flow NULL first)");
            f.counters = c;
            return 0;
        }
        default:
            return refuse(EOPNOTSUPP, kVerb,
                          "spec type 0x%x: softrdma steers on Ethernet, IPv4, IPv6, TCP and UDP "
                          "headers, drops and counts (no tunnels, inner headers, ESP, MPLS or "
                          "tags)",
                          type);
    }
}

}  // namespace

bool Flow::takes(const wire::EthFrame &f, bool outgoing) const {
    switch (kind) {
        case IBV_FLOW_ATTR_SNIFFER:
            return true;
        case IBV_FLOW_ATTR_ALL_DEFAULT:
            return !outgoing;
        case IBV_FLOW_ATTR_MC_DEFAULT:
            return !outgoing && (f.dst_mac[0] & 1);
        default:
            return wire::frame_matches(match, f);
    }
}

ibv_flow *create_flow(ibv_qp *q, ibv_flow_attr *a) {
    if (!q || !a) return fail<ibv_flow>(refuse(EINVAL, kVerb, "NULL QP or attributes"));
    if (a->comp_mask)
        return fail<ibv_flow>(
            refuse(EINVAL, kVerb, "comp_mask 0x%x: none is defined", a->comp_mask));
    if (a->port != 1)
        return fail<ibv_flow>(refuse(EINVAL, kVerb, "port %u: the device has one, 1", a->port));
    if (unsigned(a->type) > IBV_FLOW_ATTR_SNIFFER)
        return fail<ibv_flow>(
            refuse(EINVAL, kVerb, "type %u is not an ibv_flow_attr_type", unsigned(a->type)));
    if (a->flags & ~unsigned(IBV_FLOW_ATTR_FLAGS_DONT_TRAP))
        return fail<ibv_flow>(
            refuse(EOPNOTSUPP, kVerb, "flags 0x%x: only DONT_TRAP is supported", a->flags));
    if (q->qp_type != IBV_QPT_RAW_PACKET)
        return fail<ibv_flow>(refuse(EOPNOTSUPP, kVerb,
                                     "%s QPs take no flow rules (raw packet QPs do)",
                                     qp_type_name(q->qp_type)));
    auto flow = std::make_unique<Flow>();
    flow->comp_mask = 0;
    flow->context = q->context;
    flow->handle = 0;
    flow->qp = Qp::from(q);
    flow->kind = a->type;
    flow->priority = a->priority;
    const auto *p = reinterpret_cast<const uint8_t *>(a + 1);
    for (unsigned i = 0; i < a->num_of_specs; ++i) {
        ibv_flow_spec s{};
        std::memcpy(&s.hdr, p, sizeof s.hdr);
        if (s.hdr.size < sizeof s.hdr || s.hdr.size > sizeof s)
            return fail<ibv_flow>(refuse(EINVAL, kVerb, "spec %u has size %u", i, s.hdr.size));
        std::memcpy(&s, p, s.hdr.size);
        if (int e = add_spec(s, *flow)) return fail<ibv_flow>(e);
        p += s.hdr.size;
    }
    if (int e = flow->qp->raw_add_flow(flow.get())) return fail<ibv_flow>(e);
    if (flow->counters) flow->counters->bound.fetch_add(1);  // counting from now on
    return flow.release();
}

int destroy_flow(ibv_flow *f) {
    if (!f) return EINVAL;
    std::unique_ptr<Flow> flow(Flow::from(f));
    flow->qp->raw_remove_flow(flow.get());
    if (flow->counters) flow->counters->bound.fetch_sub(1);
    return 0;
}

}  // namespace softrdma::verbs
