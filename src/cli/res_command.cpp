// SPDX-License-Identifier: BSD-2-Clause
// `softrdma res [--json] [PID]`: the open resources of every process using softrdma on this
// host (or one), as `rdma res` lists a kernel device's: contexts, PDs, CQs and SRQs by count,
// QPs with state, peer and queue depths, MRs with sizes and keys, CM ids with state and
// addresses.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/stats_reader.h"
#include "cm/cm_id.h"

namespace softrdma::cli {
namespace {

// The peer's GID, "-" while the QP has none.
std::string peer_gid_text(const stats::QpSlot &q) {
    const uint64_t w[2] = {q.peer_gid[0].load(), q.peer_gid[1].load()};
    if (!w[0] && !w[1]) return "-";
    uint8_t raw[16];
    std::memcpy(raw, w, sizeof raw);
    return gid_text(raw);
}

std::string addr_text(const std::atomic<uint64_t> (&a)[4]) {
    uint64_t w[4];
    for (int i = 0; i < 4; ++i) w[i] = a[i].load();
    sockaddr_storage ss{};
    std::memcpy(&ss, w, sizeof w);
    char buf[INET6_ADDRSTRLEN] = "?";
    if (ss.ss_family == AF_INET) {
        const auto *s4 = reinterpret_cast<const sockaddr_in *>(&ss);
        if (!s4->sin_addr.s_addr && !s4->sin_port) return "-";
        inet_ntop(AF_INET, &s4->sin_addr, buf, sizeof buf);
        return std::string(buf) + ":" + std::to_string(ntohs(s4->sin_port));
    }
    if (ss.ss_family == AF_INET6) {
        const auto *s6 = reinterpret_cast<const sockaddr_in6 *>(&ss);
        inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof buf);
        return "[" + std::string(buf) + "]:" + std::to_string(ntohs(s6->sin6_port));
    }
    return "-";
}

// The id's state in words (a value this tool does not know: "?").
std::string state_text(uint8_t v) {
    if (v > uint8_t(cm::State::kDestroying)) return "?";
    std::string out(cm::state_name(cm::State(v)));
    for (char &c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

const char *ps_name(unsigned ps) {
    switch (ps) {
        case 6:
            return "TCP";
        case 17:
            return "UDP";
        case 2:
            return "IPOIB";
        case 63:
            return "IB";
        default:
            return "?";
    }
}

std::string access_text(int a) {
    std::string s;
    auto add = [&](int bit, const char *n) {
        if (a & bit) s += s.empty() ? n : std::string("|") + n;
    };
    add(1, "LOCAL_WRITE");
    add(2, "REMOTE_WRITE");
    add(4, "REMOTE_READ");
    add(8, "REMOTE_ATOMIC");
    add(16, "MW_BIND");
    add(32, "ZERO_BASED");
    add(64, "ON_DEMAND");
    return s.empty() ? "LOCAL_READ" : s;
}

void text(const StatsView &v) {
    const stats::Header &h = v.header();
    std::printf("pid %d %s: contexts %u pds %u cqs %u srqs %u\n", int(h.pid), h.program,
                h.contexts.load(), h.pds.load(), h.cqs.load(), h.srqs.load());
    for (uint32_t i = 0; i < stats::kQpSlots; ++i) {
        const stats::QpSlot &q = v.qp(i);
        if (!q.live.load(std::memory_order_acquire)) continue;
        const uint32_t peer_qpn = q.peer_qpn.load();
        std::printf("  qp %u %s %s peer %s qpn %s sq %u rq %u sge %u inline %u path %s\n",
                    q.qpn.load(), qp_type_name(q.type.load()), qp_state_name(q.state.load()),
                    peer_gid_text(q).c_str(), peer_qpn ? std::to_string(peer_qpn).c_str() : "-",
                    q.sq_depth.load(), q.rq_depth.load(), q.max_sge.load(), q.max_inline.load(),
                    q.shm.load() ? "shared-memory" : "socket");
    }
    for (uint32_t i = 0; i < stats::kMrSlots; ++i) {
        const stats::MrSlot &m = v.mr(i);
        if (!m.live.load(std::memory_order_acquire)) continue;
        std::printf("  mr %u pd %u addr 0x%llx length %llu lkey 0x%x rkey 0x%x %s", m.handle.load(),
                    m.pd_handle.load(), (unsigned long long)m.addr.load(),
                    (unsigned long long)m.length.load(), m.lkey.load(), m.rkey.load(),
                    access_text(m.access.load()).c_str());
        if (m.owner_pid.load()) std::printf(" imported-from %d", m.owner_pid.load());
        std::printf("\n");
    }
    for (uint32_t i = 0; i < stats::kCmSlots; ++i) {
        const stats::CmSlot &c = v.cm(i);
        if (!c.live.load(std::memory_order_acquire)) continue;
        std::printf("  cm_id %s %s%s src %s dst %s qpn %u\n", ps_name(c.ps.load()),
                    state_text(c.state.load()).c_str(), c.established.load() ? " established" : "",
                    addr_text(c.src).c_str(), addr_text(c.dst).c_str(), c.qpn.load());
    }
    if (h.qps_unlisted.load() || h.mrs_unlisted.load() || h.cms_unlisted.load())
        std::printf("  (not listed, made after the table filled: %u QPs, %u MRs, %u CM ids)\n",
                    h.qps_unlisted.load(), h.mrs_unlisted.load(), h.cms_unlisted.load());
}

void json(const StatsView &v, bool first) {
    const stats::Header &h = v.header();
    std::printf(
        "%s\n  {\"pid\": %d, \"program\": %s, \"contexts\": %u, \"pds\": %u, \"cqs\": "
        "%u, \"srqs\": %u,\n   \"qps\": [",
        first ? "" : ",", int(h.pid), json_string(h.program).c_str(), h.contexts.load(),
        h.pds.load(), h.cqs.load(), h.srqs.load());
    const char *sep = "";
    for (uint32_t i = 0; i < stats::kQpSlots; ++i) {
        const stats::QpSlot &q = v.qp(i);
        if (!q.live.load(std::memory_order_acquire)) continue;
        std::printf(
            "%s{\"qpn\": %u, \"type\": \"%s\", \"state\": \"%s\", \"peer_gid\": \"%s\", "
            "\"peer_qpn\": %u, \"sq_depth\": %u, \"rq_depth\": %u, \"max_sge\": %u, "
            "\"max_inline\": %u, \"shared_memory\": %s}",
            sep, q.qpn.load(), qp_type_name(q.type.load()), qp_state_name(q.state.load()),
            peer_gid_text(q).c_str(), q.peer_qpn.load(), q.sq_depth.load(), q.rq_depth.load(),
            q.max_sge.load(), q.max_inline.load(), q.shm.load() ? "true" : "false");
        sep = ", ";
    }
    std::printf("],\n   \"mrs\": [");
    sep = "";
    for (uint32_t i = 0; i < stats::kMrSlots; ++i) {
        const stats::MrSlot &m = v.mr(i);
        if (!m.live.load(std::memory_order_acquire)) continue;
        std::printf(
            "%s{\"handle\": %u, \"pd\": %u, \"addr\": %llu, \"length\": %llu, \"lkey\": "
            "%u, \"rkey\": %u, \"access\": %d, \"imported_from\": %d}",
            sep, m.handle.load(), m.pd_handle.load(), (unsigned long long)m.addr.load(),
            (unsigned long long)m.length.load(), m.lkey.load(), m.rkey.load(), m.access.load(),
            m.owner_pid.load());
        sep = ", ";
    }
    std::printf("],\n   \"cm_ids\": [");
    sep = "";
    for (uint32_t i = 0; i < stats::kCmSlots; ++i) {
        const stats::CmSlot &c = v.cm(i);
        if (!c.live.load(std::memory_order_acquire)) continue;
        std::printf(
            "%s{\"ps\": \"%s\", \"state\": \"%s\", \"established\": %s, \"src\": \"%s\", "
            "\"dst\": \"%s\", \"qpn\": %u}",
            sep, ps_name(c.ps.load()), state_text(c.state.load()).c_str(),
            c.established.load() ? "true" : "false", addr_text(c.src).c_str(),
            addr_text(c.dst).c_str(), c.qpn.load());
        sep = ", ";
    }
    std::printf("]}");
}

}  // namespace

int res_command(int argc, char **argv) {
    bool as_json = false;
    pid_t only = 0;
    for (int i = 0; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json")) {
            as_json = true;
        } else if (argv[i][0] >= '1' && argv[i][0] <= '9') {
            only = pid_t(std::atoi(argv[i]));
        } else {
            std::fprintf(stderr, "usage: softrdma res [--json] [PID]\n");
            return 2;
        }
    }
    auto views = find_stats(only);
    if (only && views.empty()) {
        std::fprintf(stderr,
                     "softrdma res: process %d does not use softrdma, or is not ours to look at\n",
                     int(only));
        return 1;
    }
    if (as_json) {
        std::printf("{\"processes\": [");
        for (size_t i = 0; i < views.size(); ++i) json(*views[i], i == 0);
        std::printf("\n]}\n");
    } else {
        for (const auto &v : views) text(*v);
        if (views.empty()) std::printf("no process is using softrdma (that we may look at)\n");
    }
    return 0;
}

}  // namespace softrdma::cli
