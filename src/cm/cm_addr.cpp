// SPDX-License-Identifier: BSD-2-Clause
// Binding and address/route resolution. RDMA_PS_TCP port P is TCP port P (as on iWARP): the
// bound socket reserves it, then listens or connects from it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cm/cm_api.h"
#include "cm/cm_id.h"
#include "cm/cm_neigh.h"
#include "transport/mcast_socket.h"
#include "common/clock.h"

namespace softrdma::cm {

bool is_wildcard(const sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
    return false;
}

namespace {

bool is_loopback(const sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return (ntohl(reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
    return false;
}

// The kernel's rdma_cm counts a loopback address as "any" (cma_any_addr): it binds to no
// device, and it shares its port with no other address.
bool is_any(const sockaddr *sa) {
    return is_wildcard(sa) || is_loopback(sa);
}

}  // namespace

uint16_t port_of(const sockaddr *sa) {
    if (sa->sa_family == AF_INET) return reinterpret_cast<const sockaddr_in *>(sa)->sin_port;
    if (sa->sa_family == AF_INET6) return reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_port;
    return 0;
}

void set_port(sockaddr *sa, uint16_t port_be) {
    if (sa->sa_family == AF_INET) reinterpret_cast<sockaddr_in *>(sa)->sin_port = port_be;
    if (sa->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6 *>(sa)->sin6_port = port_be;
}

namespace {

void fill_ib_addr(CmId &id) {
    sockaddr_to_gid(&id.route.addr.src_addr, id.route.addr.addr.ibaddr.sgid.raw);
    sockaddr_to_gid(&id.route.addr.dst_addr, id.route.addr.addr.ibaddr.dgid.raw);
    id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
}

// The RDMA port space of this process, as the kernel's rdma_cm keeps one: an id's port is
// its own even though the TCP sockets use SO_REUSEADDR (so that a new listener can take a
// port whose old listener is gone while its accepted connections live on, as on RDMA).
// Filed under port_key(port space, port).
struct PortUse {
    const CmId *id;
    uint8_t gid[16];
    bool any;  // wildcard or loopback
    int family;
    bool afonly;
};

// An id's RDMA_OPTION_ID_AFONLY, or the kernel's default: IPv4 ids keep to IPv4, IPv6 ids
// follow net.ipv6.bindv6only.
bool effective_afonly(const CmId &id, int family) {
    if (id.afonly >= 0) return id.afonly != 0;
    if (family == AF_INET) return true;
    static const bool v6only = [] {
        char c = '0';
        if (FILE *f = std::fopen("/proc/sys/net/ipv6/bindv6only", "r")) {
            c = char(std::fgetc(f));
            std::fclose(f);
        }
        return c == '1';
    }();
    return v6only;
}
std::mutex g_ports_mu;
// Keyed by port space and port: a bind looks at the ids on its own port only (a process with
// thousands of ids paid a scan of all of them per bind and per destroy).
using PortMap = std::unordered_multimap<uint32_t, PortUse>;
uint32_t port_key(int ps, uint16_t port) {
    return uint32_t(ps) << 16 | port;
}
PortMap &ports() {
    static auto *m = std::make_unique<PortMap>().release();
    return *m;
}

// The kernel's cma_check_port: 0, or the errno that refuses `addr` on `port`.
int port_conflict(const CmId &id, int ps, uint16_t port, const sockaddr *addr) {
    uint8_t gid[16];
    sockaddr_to_gid(addr, gid);
    const bool afonly = effective_afonly(id, addr->sa_family);
    const auto range = ports().equal_range(port_key(ps, port));
    for (auto it = range.first; it != range.second; ++it) {
        const PortUse &u = it->second;
        if (u.id == &id) continue;
        const CmId &other = *u.id;
        if (id.reuseaddr && other.reuseaddr && other.state != State::kListen) continue;
        if (afonly && u.afonly && u.family != addr->sa_family) continue;  // dual stack
        if (is_any(addr) || u.any) return EADDRNOTAVAIL;
        if (std::memcmp(u.gid, gid, 16) == 0) return EADDRINUSE;
    }
    return 0;
}

// Files `port` (which the kernel gave the id's socket) as the id's in its port space.
void file_port(CmId &id, int ps, uint16_t port, const sockaddr *addr) {
    PortUse use{&id, {}, is_any(addr), addr->sa_family, effective_afonly(id, addr->sa_family)};
    sockaddr_to_gid(addr, use.gid);
    id.port_key = port_key(ps, port);
    ports().emplace(id.port_key, use);
}

int id_port_space(const CmId &id) {
    return id.ps == RDMA_PS_IB ? RDMA_PS_TCP : id.ps;  // both are TCP ports here
}

// A socket of `type` bound to `addr` with the id's options (SO_REUSEADDR, IPV6_V6ONLY,
// TCP_NODELAY). A TCP port of our choosing is taken with SO_REUSEADDR (a new listener may take
// a port whose old connections live on, as on RDMA). A port the kernel picks gets it only
// after the bind: with it set, picking one costs ~0.5 ms per bind once thousands of TIME_WAIT
// sockets fill the ephemeral range (measured after a few runs of 1,000 connections), without
// it ~10 us, and the port picked has no TIME_WAIT peer to collide with later. With
// `port_at_connect`, the kernel picks none until the socket connects.
UniqueFd bound_socket(const CmId &id, const sockaddr *addr, int type, bool port_at_connect) {
    UniqueFd fd(::socket(addr->sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fd;
    int one = 1;
    const bool reuse_after = type == SOCK_STREAM && !port_of(addr);
    if ((type == SOCK_STREAM && !reuse_after) || id.reuseaddr)
        setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6) {
        int v = effective_afonly(id, addr->sa_family);
        setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof v);
    }
    if (type == SOCK_STREAM) transport::tune_stream_socket(fd.get());
    if (port_at_connect)
        setsockopt(fd.get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    if (::bind(fd.get(), addr, sockaddr_len(addr)) != 0) return UniqueFd();
    if (reuse_after) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    return fd;
}

// Reserves addr:port in the id's port space. Called with id.mu held. With `port_at_connect`
// (rdma_resolve_addr on an unbound id), a TCP id asking for no port on no address in
// particular gets no socket yet: the connect opens one and the kernel picks its port then, as
// for any client socket (open_id_socket). Picking the port at bind time cost ~8 us per
// connection here, far more once thousands of TIME_WAIT sockets fill the ephemeral range,
// where connect may reuse their ports toward other peers; the socket itself moves out of
// address resolution, which an application runs alone, into the connect, which waits for the
// peer anyway. rdma_get_src_port still answers a port before the connect (claim_port).
int do_bind(CmId &id, const sockaddr *addr, bool port_at_connect = false) {
    if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
    const int type = id.ps == RDMA_PS_UDP || id.ps == RDMA_PS_IPOIB ? SOCK_DGRAM : SOCK_STREAM;
    const int ps = id_port_space(id);
    std::lock_guard plk(g_ports_mu);
    const uint16_t want = ntohs(port_of(addr));
    if (want) {
        if (const int e = port_conflict(id, ps, want, addr)) return fail(e);
    }
    if (port_at_connect && type == SOCK_STREAM && !want && !id.reuseaddr && is_wildcard(addr)) {
        const socklen_t len = sockaddr_len(addr);
        std::memset(&id.route.addr.src_storage, 0, sizeof id.route.addr.src_storage);
        std::memcpy(&id.route.addr.src_storage, addr, len);
        sockaddr_to_gid(&id.route.addr.src_addr, id.route.addr.addr.ibaddr.sgid.raw);
        id.port_at_connect = true;
        id.set_state(State::kAddrBound);
        return 0;
    }
    UniqueFd fd = bound_socket(id, addr, type, false);
    if (!fd) return -1;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd.get(), reinterpret_cast<sockaddr *>(&ss), &len);
    const uint16_t got = ntohs(port_of(reinterpret_cast<sockaddr *>(&ss)));
    if (!want) {
        if (const int e = port_conflict(id, ps, got, addr)) return fail(e);
    }
    file_port(id, ps, got, addr);
    std::memcpy(&id.route.addr.src_storage, &ss, len);
    sockaddr_to_gid(&id.route.addr.src_addr, id.route.addr.addr.ibaddr.sgid.raw);
    if (!is_any(addr)) {
        take_device(id, context_for_addr(addr));
        if (!id.verbs) return fail(ENODEV);
    }
    id.sock = std::move(fd);
    id.set_state(State::kAddrBound);
    return 0;
}

// A UDP socket connected toward `dst` (port 9, discard, if it names none): the kernel's
// routing table picks its source, and a datagram sent on it makes the kernel resolve the next
// hop. Invalid, with errno set, if there is no route.
UniqueFd probe_toward(const sockaddr *dst) {
    UniqueFd s(::socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s) return s;
    sockaddr_storage d{};
    std::memcpy(&d, dst, sockaddr_len(dst));
    if (port_of(reinterpret_cast<sockaddr *>(&d)) == 0)
        set_port(reinterpret_cast<sockaddr *>(&d), htons(9));
    if (::connect(s.get(), reinterpret_cast<sockaddr *>(&d), sockaddr_len(dst)) != 0) {
        const int err = errno;
        s.reset();
        errno = err;
    }
    return s;
}

// An address of one of this host's interfaces.
bool own_address(const sockaddr *a) {
    uint8_t gid[16];
    sockaddr_to_gid(a, gid);
    for (verbs::Device *d : verbs::known_devices())
        if (d->has_gid(gid)) return true;
    return false;
}

// A destination on this host (loopback, or an address of one of our interfaces) has no next
// hop to resolve: no probe datagram, no netlink round trips.
bool on_this_host(const sockaddr *dst) {
    if (dst->sa_family == AF_INET) {
        const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in *>(dst)->sin_addr.s_addr);
        if ((a >> 24) == 127) return true;
    } else if (dst->sa_family == AF_INET6 &&
               IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6 *>(dst)->sin6_addr)) {
        return true;
    }
    return own_address(dst);
}

// RoCE resolution ends when the next hop answers ARP/ND: nudge the kernel into asking.
void nudge_next_hop(int probe) {
    [[maybe_unused]] ssize_t r = ::send(probe, "", 1, MSG_DONTWAIT);
}

}  // namespace

void check_resolution(CmId &id);

void release_port(CmId &id) {
    std::lock_guard lk(g_ports_mu);
    if (!id.port_key) return;  // never bound (an accepted id has no port of its own)
    auto &m = ports();
    const auto range = m.equal_range(id.port_key);
    for (auto it = range.first; it != range.second; ++it) {
        if (it->second.id == &id) {
            m.erase(it);
            break;
        }
    }
    id.port_key = 0;
}

int bind_addr(rdma_cm_id *raw, sockaddr *addr) {
    if (!raw || !addr) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("bind_addr %p", static_cast<void *>(raw));
    if (id.state != State::kIdle) return fail(EINVAL);
    return do_bind(id, addr);
}

int resolve_addr(rdma_cm_id *raw, sockaddr *src, sockaddr *dst, int timeout_ms) {
    if (!raw || !dst) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    {
        std::lock_guard lk(id.mu);
        CM_LOG("resolve_addr %p timeout %d", static_cast<void *>(raw), timeout_ms);
        if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
        if (id.state == State::kIdle) {
            sockaddr_storage any{};
            if (src) {
                std::memcpy(&any, src, sockaddr_len(src));
            } else {
                any.ss_family = dst->sa_family;
            }
            if (do_bind(id, reinterpret_cast<sockaddr *>(&any), true) != 0) return -1;
        } else if (id.state != State::kAddrBound) {
            return fail(EINVAL);
        }
        uint8_t dgid[16];
        sockaddr_to_gid(dst, dgid);
        // A multicast group from a bound address needs no route: the join and the sends
        // name the interface (Linux has no IPv6 multicast route on lo at all).
        const bool group = transport::gid_is_multicast(dgid);
        const bool need_route = !group || is_wildcard(&id.route.addr.src_addr);
        // The kernel's routing table picks the source address, as for any socket; an address
        // of this host is its own source (what the kernel would pick), without asking.
        sockaddr_storage local{};
        socklen_t len = sizeof local;
        UniqueFd probe;
        if (need_route && own_address(dst)) {
            len = sockaddr_len(dst);
            std::memcpy(&local, dst, len);
        } else if (need_route) {
            probe = probe_toward(dst);
            if (!probe) {
                const int err = errno;
                id.set_state(State::kAddrBound);
                return fail(err == EINVAL ? ENETUNREACH : err);
            }
            getsockname(probe.get(), reinterpret_cast<sockaddr *>(&local), &len);
        }
        id.set_state(State::kAddrQuery);
        const uint16_t bound_port = port_of(&id.route.addr.src_addr);
        if (is_wildcard(&id.route.addr.src_addr)) {
            std::memcpy(&id.route.addr.src_storage, &local, len);
            set_port(&id.route.addr.src_addr, bound_port);
        }
        std::memset(&id.route.addr.dst_storage, 0, sizeof id.route.addr.dst_storage);
        std::memcpy(&id.route.addr.dst_storage, dst, sockaddr_len(dst));
        fill_ib_addr(id);
        ibv_context *ctx = context_for_addr(&id.route.addr.src_addr);
        if (!ctx) {
            id.set_state(State::kAddrBound);
            id.post_event(RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
        } else if (group || on_this_host(dst)) {
            take_device(id, ctx);  // a group or a local address has no next hop to wait for
            id.set_state(State::kAddrResolved);
            id.post_event(RDMA_CM_EVENT_ADDR_RESOLVED, 0);
        } else {
            take_device(id, ctx);
            // Then watch the neighbour table until it answers or time runs out.
            nudge_next_hop(probe.get());
            id.resolve_deadline_ns =
                now_ns() + uint64_t(timeout_ms > 0 ? timeout_ms : 2000) * 1000000ull;
            check_resolution(id);
        }
    }
    return id.sync ? id.complete_sync() : 0;
}

// Called with mu held, in ADDR_QUERY: finish resolution or look again shortly.
void check_resolution(CmId &id) {
    switch (next_hop_state(&id.route.addr.dst_addr)) {
        case NeighState::kResolved:
            id.set_state(State::kAddrResolved);
            id.post_event(RDMA_CM_EVENT_ADDR_RESOLVED, 0);
            return;
        case NeighState::kFailed:
            // A failed entry starts over when something is sent toward it; the kernel's own
            // RoCE resolution retries the same way until the caller's timeout, so a lossy link
            // costs time, not the resolution.
            if (now_ns() < id.resolve_deadline_ns) {
                if (UniqueFd probe = probe_toward(&id.route.addr.dst_addr))
                    nudge_next_hop(probe.get());
            }
            [[fallthrough]];
        case NeighState::kPending:
            if (now_ns() < id.resolve_deadline_ns) {
                transport::ProgressEngine::get().schedule(id.shared_from_this(),
                                                          now_ns() + 10'000'000);
                return;
            }
            id.set_state(State::kAddrBound);
            id.post_event(RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
            return;
    }
}

int resolve_route(rdma_cm_id *raw, int timeout_ms) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    {
        std::lock_guard lk(id.mu);
        CM_LOG("resolve_route %p timeout %d", static_cast<void *>(raw), timeout_ms);
        if (id.state != State::kAddrResolved) return fail(EINVAL);
        id.set_state(State::kRouteQuery);
        // RoCE: the route is the address pair; one path record describes it.
        id.path = std::make_unique<ibv_sa_path_rec>();
        std::memset(id.path.get(), 0, sizeof *id.path);
        id.path->sgid = id.route.addr.addr.ibaddr.sgid;
        id.path->dgid = id.route.addr.addr.ibaddr.dgid;
        id.path->pkey = htobe16(0xffff);
        id.path->mtu = IBV_MTU_4096;
        id.path->mtu_selector = 2;
        id.path->rate = IBV_RATE_100_GBPS;
        id.path->hop_limit = 64;
        id.path->traffic_class = id.tos;
        id.path->reversible = 1;
        id.path->numb_path = 1;
        id.route.path_rec = id.path.get();
        id.route.num_paths = 1;
        id.set_state(State::kRouteResolved);
        id.post_event(RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    }
    return id.sync ? id.complete_sync() : 0;
}

int open_id_socket(CmId &id, bool port_now) {
    const sockaddr *src = &id.route.addr.src_addr;
    const bool have_port = port_of(src) != 0;
    UniqueFd fd = bound_socket(id, src, SOCK_STREAM, !have_port && !port_now);
    if (!fd) return -1;
    id.sock = std::move(fd);
    id.port_at_connect = !have_port;
    return 0;
}

// The port an id left to its connect (do_bind), once the socket has one: asked for before the
// connect, the id takes one now, as the kernel's rdma_cm would have at resolve time.
void claim_port(CmId &id, bool bind_now) {
    if (!id.port_at_connect) return;
    if (!id.sock && (!bind_now || open_id_socket(id, true) != 0)) return;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(id.sock.get(), reinterpret_cast<sockaddr *>(&ss), &len);
    const uint16_t port = port_of(reinterpret_cast<sockaddr *>(&ss));
    if (!port) return;
    id.port_at_connect = false;
    id.port_by_connect = !bind_now;
    set_port(&id.route.addr.src_addr, port);
    std::lock_guard plk(g_ports_mu);
    file_port(id, id_port_space(id), ntohs(port), &id.route.addr.src_addr);
}

uint16_t get_src_port(rdma_cm_id *raw) {
    if (!raw) return 0;
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    claim_port(id, true);
    return port_of(&raw->route.addr.src_addr);
}
uint16_t get_dst_port(rdma_cm_id *raw) {
    return raw ? port_of(&raw->route.addr.dst_addr) : 0;
}

ibv_context **get_devices(int *num) {
    const auto ctxs = all_contexts();
    CM_LOG("get_devices: %zu", ctxs.size());
    auto **list = static_cast<ibv_context **>(calloc(ctxs.size() + 1, sizeof(ibv_context *)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    for (size_t i = 0; i < ctxs.size(); ++i) list[i] = ctxs[i];
    if (num) *num = int(ctxs.size());
    return list;
}

void free_devices(ibv_context **list) {
    free(list);
}

}  // namespace softrdma::cm
