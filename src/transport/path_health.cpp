// SPDX-License-Identifier: BSD-2-Clause
#include "transport/path_health.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/log.h"

namespace softrdma::transport {
namespace {
const char *tcp_state_name(unsigned s) {
    static const char *const names[] = {"?",          "established", "SYN sent",  "SYN received",
                                        "FIN wait 1", "FIN wait 2",  "time wait", "closed",
                                        "close wait", "last ACK",    "listen",    "closing"};
    return s < sizeof names / sizeof names[0] ? names[s] : "?";
}
}  // namespace

PathHealth tcp_path_health(int fd, uint64_t recent_ns) {
    PathHealth h;
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return h;
    // Connected, every byte we sent is acknowledged and no window probe is pending; or the
    // peer's kernel acknowledged something lately (a lossy path that still delivers).
    const bool caught_up = ti.tcpi_state == TCP_ESTABLISHED && ti.tcpi_unacked == 0 &&
                           ti.tcpi_probes == 0 && ti.tcpi_backoff == 0 && ti.tcpi_retransmits == 0;
    h.answering = caught_up || uint64_t(ti.tcpi_last_ack_recv) * 1'000'000ull < recent_ns;
    h.retransmits = std::max<uint32_t>(ti.tcpi_retransmits, ti.tcpi_probes);
    h.next_attempt_ns = (uint64_t(ti.tcpi_rto) + 2ull * ti.tcpi_rtt) * 1000ull;
    SR_DEBUG(
        "fd %d: TCP %s, %u segments unacknowledged, retransmits %u backoff %u probes %u, "
        "rto %u us rtt %u us, last ack %u ms ago, %u retransmitted in all: the peer is %s",
        fd, tcp_state_name(ti.tcpi_state), ti.tcpi_unacked, ti.tcpi_retransmits, ti.tcpi_backoff,
        ti.tcpi_probes, ti.tcpi_rto, ti.tcpi_rtt, ti.tcpi_last_ack_recv, ti.tcpi_total_retrans,
        h.answering ? "answering" : "silent");
    return h;
}

}  // namespace softrdma::transport
