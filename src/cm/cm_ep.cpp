// SPDX-License-Identifier: BSD-2-Clause
// rdma_getaddrinfo and the synchronous endpoint calls built on it.
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cm/cm_api.h"
#include "cm/cm_id.h"

namespace softrdma::cm {
namespace {

template <typename T>
T *copy_bytes(const void *src, size_t len) {
    void *p = std::malloc(len);
    if (p) std::memcpy(p, src, len);
    return static_cast<T *>(p);
}

char *dup_str(const char *s) {
    return s ? strdup(s) : nullptr;
}

}  // namespace

void freeaddrinfo(rdma_addrinfo *res) {
    while (res) {
        rdma_addrinfo *next = res->ai_next;
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_route);
        std::free(res->ai_connect);
        std::free(res);
        res = next;
    }
}

namespace {

// rdma-core returns getaddrinfo's own (negative) EAI code and leaves errno as it was, so
// programs that perror() it printed "Success". The code stays (programs compare it); errno
// now says what went wrong too.
int eai_failure(int eai, const char *node, const char *service) {
    CM_LOG("getaddrinfo %s %s: %s", node ? node : "-", service ? service : "-", gai_strerror(eai));
    switch (eai) {
        case EAI_SYSTEM:
            break;  // errno is already the cause
        case EAI_MEMORY:
            errno = ENOMEM;
            break;
        case EAI_AGAIN:
            errno = EAGAIN;
            break;
        case EAI_FAMILY:
            errno = EAFNOSUPPORT;
            break;
        case EAI_BADFLAGS:
        case EAI_SOCKTYPE:
        case EAI_SERVICE:
            errno = EINVAL;
            break;
        default:
            errno = EADDRNOTAVAIL;
            break;  // no such host or address
    }
    return eai;
}

// The resolved addresses of `node`/`service`, one entry per address.
int resolve(const char *node, const char *service, const rdma_addrinfo *hints, int flags,
            rdma_addrinfo *&head) {
    addrinfo h{};
    int ps = RDMA_PS_TCP;
    int qpt = IBV_QPT_RC;
    if (hints) {
        h.ai_family = hints->ai_family;
        if (hints->ai_port_space) ps = hints->ai_port_space;
        if (hints->ai_qp_type) qpt = hints->ai_qp_type;
        if (hints->ai_family == AF_IB) return eai_failure(EAI_FAMILY, node, service);
    }
    if (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB || qpt == IBV_QPT_UD) {
        ps = ps == RDMA_PS_TCP ? RDMA_PS_UDP : ps;
        qpt = IBV_QPT_UD;
        h.ai_socktype = SOCK_DGRAM;
    } else {
        h.ai_socktype = SOCK_STREAM;
    }
    if (flags & RAI_PASSIVE) h.ai_flags |= AI_PASSIVE;
    if (flags & RAI_NUMERICHOST) h.ai_flags |= AI_NUMERICHOST;
    addrinfo *gai = nullptr;
    if (const int ret = ::getaddrinfo(node, service, &h, &gai))
        return eai_failure(ret, node, service);
    rdma_addrinfo **tail = &head;
    for (addrinfo *a = gai; a; a = a->ai_next) {
        auto *r = static_cast<rdma_addrinfo *>(std::calloc(1, sizeof(rdma_addrinfo)));
        if (!r) break;
        r->ai_flags = flags;
        r->ai_family = a->ai_family;
        r->ai_qp_type = qpt;
        r->ai_port_space = ps;
        if (flags & RAI_PASSIVE) {
            r->ai_src_len = a->ai_addrlen;
            r->ai_src_addr = copy_bytes<sockaddr>(a->ai_addr, a->ai_addrlen);
            r->ai_src_canonname = dup_str(a->ai_canonname);
        } else {
            r->ai_dst_len = a->ai_addrlen;
            r->ai_dst_addr = copy_bytes<sockaddr>(a->ai_addr, a->ai_addrlen);
            r->ai_dst_canonname = dup_str(a->ai_canonname);
        }
        *tail = r;
        tail = &r->ai_next;
    }
    ::freeaddrinfo(gai);
    return head ? 0 : eai_failure(EAI_MEMORY, node, service);
}

}  // namespace

int getaddrinfo(const char *node, const char *service, const rdma_addrinfo *hints,
                rdma_addrinfo **res) {
    CM_LOG("getaddrinfo node %s service %s", node ? node : "-", service ? service : "-");
    if (!res || (!node && !service && !hints)) return fail(EINVAL);
    rdma_addrinfo *head = nullptr;
    if (node || service) {
        if (const int ret = resolve(node, service, hints, hints ? hints->ai_flags : 0, head))
            return ret;
    } else {
        // Nothing to resolve: the answer is the hints' own addresses (libfabric's passive
        // endpoints ask this way, with only ai_src_addr set).
        head = static_cast<rdma_addrinfo *>(std::calloc(1, sizeof(rdma_addrinfo)));
        if (!head) return fail(ENOMEM);
        head->ai_flags = hints->ai_flags;
        head->ai_family = hints->ai_family;
        head->ai_qp_type = hints->ai_qp_type;
        head->ai_port_space = hints->ai_port_space;
        if (hints->ai_dst_len && hints->ai_dst_addr) {
            head->ai_dst_len = hints->ai_dst_len;
            head->ai_dst_addr = copy_bytes<sockaddr>(hints->ai_dst_addr, hints->ai_dst_len);
        }
    }
    // A source address in the hints goes to every answer that has none of its own.
    if (hints && hints->ai_src_len && hints->ai_src_addr) {
        for (rdma_addrinfo *r = head; r; r = r->ai_next) {
            if (r->ai_src_len) continue;
            r->ai_src_len = hints->ai_src_len;
            r->ai_src_addr = copy_bytes<sockaddr>(hints->ai_src_addr, hints->ai_src_len);
        }
    }
    *res = head;
    return 0;
}

int create_ep(rdma_cm_id **out, rdma_addrinfo *res, ibv_pd *pd, ibv_qp_init_attr *qp_attr) {
    if (!out || !res) return fail(EINVAL);
    CM_LOG("create_ep%s", (res->ai_flags & RAI_PASSIVE) ? " (passive)" : "");
    rdma_cm_id *raw = nullptr;
    const ibv_qp_type qpt = ibv_qp_type(res->ai_qp_type ? res->ai_qp_type : IBV_QPT_RC);
    if (create_id_qpt(nullptr, &raw, nullptr, rdma_port_space(res->ai_port_space), qpt) != 0)
        return -1;
    auto cleanup = [&] {
        const int e = errno;
        destroy_id(raw);
        errno = e;
        return -1;
    };
    CmId &id = *CmId::from(raw);
    if (res->ai_flags & RAI_PASSIVE) {
        if (!res->ai_src_addr || bind_addr(raw, res->ai_src_addr) != 0) return cleanup();
        if (qp_attr) {
            std::lock_guard lk(id.mu);
            id.has_ep_qp_attr = true;
            id.ep_qp_attr = *qp_attr;
            id.pd = pd;
        }
        *out = raw;
        return 0;
    }
    if (resolve_addr(raw, res->ai_src_addr, res->ai_dst_addr, 2000) != 0) return cleanup();
    if (resolve_route(raw, 2000) != 0) return cleanup();
    if (qp_attr && create_qp(raw, pd, qp_attr) != 0) return cleanup();
    *out = raw;
    return 0;
}

void destroy_ep(rdma_cm_id *raw) {
    if (!raw) return;
    CM_LOG("destroy_ep %p", static_cast<void *>(raw));
    destroy_qp(raw);
    destroy_srq(raw);
    destroy_id(raw);
}

}  // namespace softrdma::cm
