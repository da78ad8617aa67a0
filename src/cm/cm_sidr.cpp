// SPDX-License-Identifier: BSD-2-Clause
// RDMA_PS_UDP ids: SIDR-style resolution over UDP (docs/wire.md §8.2). The active id sends a
// request from its bound UDP socket to the listener's port and retransmits it until a reply or
// the CM timeout; the listener turns each new request into a child id (CONNECT_REQUEST), and
// rdma_accept/rdma_reject on the child answer from the listener's port.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cm/cm_id.h"
#include "common/clock.h"
#include "verbs/context.h"
#include "wire/sidr.h"

namespace softrdma::cm {

void register_child(const std::shared_ptr<CmId> &id);

namespace {

constexpr uint64_t kRetransmitNs = 250'000'000;
constexpr size_t kMaxSeen = 256;

bool same_peer(const sockaddr_storage &a, const sockaddr_storage &b) {
    return std::memcmp(&a, &b, sockaddr_len(reinterpret_cast<const sockaddr *>(&a))) == 0;
}

bool watch(CmId &id) {
    if (id.sidr_watched) return true;
    if (!transport::ProgressEngine::get().watch(id.sock.get(), id.shared_from_this(), EPOLLIN))
        return false;
    id.sidr_watched = true;
    return true;
}

void send_to(int fd, const std::vector<uint8_t> &msg, const sockaddr *to) {
    // A lost datagram is retransmitted by the requester; nothing to do on failure.
    (void)::sendto(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL, to, sockaddr_len(to));
}

// The next retransmission of the request, or the deadline if that comes first.
void schedule_retransmit(CmId &id, uint64_t now) {
    transport::ProgressEngine::get().schedule(id.shared_from_this(),
                                              std::min(now + kRetransmitNs, id.sidr_deadline_ns));
}

void on_request(CmId &l, const wire::SidrMsg &m, const sockaddr_storage &from,
                const sockaddr_storage &local) {
    for (auto &s : l.sidr_seen) {
        if (s.req_id != m.req_id || !same_peer(s.from, from)) continue;
        // A retransmission: answer again if the application already did.
        if (auto c = s.child.lock()) {
            std::lock_guard ck(c->mu);
            if (!c->sidr_reply.empty())
                send_to(c->sidr_reply_fd.get(), c->sidr_reply,
                        reinterpret_cast<const sockaddr *>(&from));
        }
        return;
    }
    if (l.sidr_seen.size() >= kMaxSeen)
        std::erase_if(l.sidr_seen, [](const CmId::SidrSeen &s) { return s.child.expired(); });
    if (l.sidr_seen.size() >= kMaxSeen) return;  // flooded: the requester will retry

    // Events go to the listener's channel (the id gets none of its own).
    std::shared_ptr<CmId> child = std::make_unique<CmId>(l.chan, l.context, l.ps, l.qp_type);
    child->passive = true;
    child->parent = std::static_pointer_cast<CmId>(l.shared_from_this());
    child->tos = l.tos;
    ++l.pending_requests;
    register_child(child);
    {
        std::lock_guard ck(child->mu);
        std::memcpy(&child->route.addr.src_storage, &local, sizeof local);
        std::memcpy(&child->route.addr.dst_storage, &from, sizeof from);
        sockaddr_to_gid(&child->route.addr.src_addr, child->route.addr.addr.ibaddr.sgid.raw);
        sockaddr_to_gid(&child->route.addr.dst_addr, child->route.addr.addr.ibaddr.dgid.raw);
        child->route.addr.addr.ibaddr.pkey = htobe16(0xffff);
        take_device(*child, context_for_addr(&child->route.addr.src_addr));
        child->sidr_req_id = m.req_id;
        child->sidr_reply_fd.reset(::fcntl(l.sock.get(), F_DUPFD_CLOEXEC, 0));
        child->set_state(State::kConnect);
    }
    l.sidr_seen.push_back({from, m.req_id, child});
    rdma_ud_param ud{};
    l.post_event(RDMA_CM_EVENT_CONNECT_REQUEST, 0, m.private_data.data(), m.private_data.size(),
                 kUdConnectPrivateData, child, &ud);
}

void on_reply(CmId &id, const wire::SidrMsg &m) {
    if (id.passive || id.state != State::kConnect || id.sidr_request.empty() ||
        m.req_id != id.sidr_req_id)
        return;               // late or foreign
    id.sidr_request.clear();  // no more retransmissions
    rdma_ud_param ud{};
    if (m.status != wire::kSidrSuccess) {
        id.post_event(RDMA_CM_EVENT_UNREACHABLE, m.status, m.private_data.data(),
                      m.private_data.size(), kUdAcceptPrivateData, nullptr, &ud);
        return;
    }
    ud.ah_attr.is_global = 1;
    ud.ah_attr.port_num = 1;
    ud.ah_attr.grh.dgid = id.route.addr.addr.ibaddr.dgid;
    ud.ah_attr.grh.hop_limit = 64;
    ud.ah_attr.grh.traffic_class = id.tos;
    ud.qp_num = m.qpn;
    ud.qkey = m.qkey;
    id.established = true;
    id.post_event(RDMA_CM_EVENT_ESTABLISHED, 0, m.private_data.data(), m.private_data.size(),
                  kUdAcceptPrivateData, nullptr, &ud);
}

}  // namespace

int sidr_listen(CmId &id) {
    if (!id.sock) return fail(EINVAL);
    int one = 1;  // the address each request was sent to becomes the child's source
    if (id.route.addr.src_addr.sa_family == AF_INET6)
        setsockopt(id.sock.get(), IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    else
        setsockopt(id.sock.get(), IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    return watch(id) ? 0 : -1;
}

int sidr_connect(CmId &id, const rdma_conn_param *param) {
    if (!id.sock) return fail(EINVAL);
    if (param && (param->private_data_len > kUdConnectPrivateData ||
                  (param->private_data_len && !param->private_data)))
        return fail(EINVAL);
    id.sidr_req_id = uint32_t(now_ns() ^ (uintptr_t(&id) >> 4)) | 1;
    wire::SidrMsg m;
    m.type = wire::SidrType::kRequest;
    m.req_id = id.sidr_req_id;
    m.qpn = id.qp ? id.qp->qp_num : 0;
    if (param && param->private_data_len)
        m.private_data = {static_cast<const uint8_t *>(param->private_data),
                          param->private_data_len};
    id.sidr_request = wire::encode_sidr(m);
    if (!watch(id)) return -1;
    if (::sendto(id.sock.get(), id.sidr_request.data(), id.sidr_request.size(),
                 MSG_DONTWAIT | MSG_NOSIGNAL, &id.route.addr.dst_addr,
                 sockaddr_len(&id.route.addr.dst_addr)) < 0 &&
        errno != EAGAIN)
        return -1;
    const uint64_t now = now_ns();
    id.sidr_deadline_ns = now + cm_timeout_ns();
    schedule_retransmit(id, now);
    return 0;
}

void sidr_on_timer(CmId &id) {
    if (id.passive || id.sidr_request.empty()) return;
    const uint64_t now = now_ns();
    if (now >= id.sidr_deadline_ns) {
        id.sidr_request.clear();
        rdma_ud_param ud{};
        id.post_event(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, nullptr, 0, 0, nullptr, &ud);
        return;
    }
    send_to(id.sock.get(), id.sidr_request, &id.route.addr.dst_addr);
    schedule_retransmit(id, now);
}

int sidr_answer(CmId &id, const rdma_conn_param *param, const void *pd, uint8_t len, bool reject) {
    if (!id.passive || id.state != State::kConnect || !id.sidr_reply.empty() || !id.sidr_reply_fd)
        return fail(EINVAL);
    wire::SidrMsg m;
    m.type = wire::SidrType::kReply;
    m.req_id = id.sidr_req_id;
    if (reject) {
        if (len > wire::kSidrRepPrivateData || (len && !pd)) return fail(EINVAL);
        m.status = wire::kSidrReject;
        m.private_data = {static_cast<const uint8_t *>(pd), len};
    } else {
        if (param && (param->private_data_len > kUdAcceptPrivateData ||
                      (param->private_data_len && !param->private_data)))
            return fail(EINVAL);
        m.qpn = id.qp ? id.qp->qp_num : (param ? param->qp_num & 0xffffff : 0);
        if (!m.qpn) return fail(EINVAL);  // nothing to answer with
        m.qkey = RDMA_UDP_QKEY;
        if (param && param->private_data_len)
            m.private_data = {static_cast<const uint8_t *>(param->private_data),
                              param->private_data_len};
    }
    id.sidr_reply = wire::encode_sidr(m);
    send_to(id.sidr_reply_fd.get(), id.sidr_reply, &id.route.addr.dst_addr);
    return 0;
}

void CmId::on_io(uint32_t) {
    auto self = shared_from_this();
    std::lock_guard lk(mu);
    if (!sock || !sidr_watched) return;
    for (int n = 0; n < 64; ++n) {
        uint8_t buf[wire::kSidrHeaderLen + wire::kSidrReqPrivateData];
        sockaddr_storage from{};
        iovec iov{buf, sizeof buf};
        alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(in6_pktinfo))];
        msghdr mh{};
        mh.msg_name = &from;
        mh.msg_namelen = sizeof from;
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl;
        mh.msg_controllen = sizeof ctl;
        const ssize_t got = ::recvmsg(sock.get(), &mh, MSG_DONTWAIT);
        if (got < 0) return;
        wire::SidrMsg m;
        if (!wire::decode_sidr(std::span<const uint8_t>(buf, size_t(got)), m)) continue;
        if (m.type == wire::SidrType::kReply) {
            on_reply(*this, m);
            continue;
        }
        if (state != State::kListen) continue;
        // The child's source address: where the request was sent (the listener may be bound
        // to a wildcard address).
        sockaddr_storage local{};
        std::memcpy(&local, &route.addr.src_storage, sizeof local);
        for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
                in_pktinfo pi;
                std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
                reinterpret_cast<sockaddr_in &>(local).sin_addr = pi.ipi_addr;
            } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
                in6_pktinfo pi;
                std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
                reinterpret_cast<sockaddr_in6 &>(local).sin6_addr = pi.ipi6_addr;
            }
        }
        on_request(*this, m, from, local);
    }
}

}  // namespace softrdma::cm
