// SPDX-License-Identifier: BSD-2-Clause
// What TCP says of the path to a peer: read from TCP_INFO when a retry budget runs out.
#pragma once
#include <cstdint>

namespace softrdma::transport {

struct PathHealth {
    // The peer's kernel holds everything we sent, or acknowledged something lately: the peer
    // host and the path work, whatever its process is doing.
    bool answering = false;
    uint32_t retransmits = 0;      // unanswered retransmissions (or window probes) in a row
    uint64_t next_attempt_ns = 0;  // an upper bound on the wait for TCP's next attempt's answer
};

// Asks TCP (TCP_INFO, a syscall) about the connection on `fd`; `recent_ns` is how recent an
// acknowledgement must be to count as an answer.
PathHealth tcp_path_health(int fd, uint64_t recent_ns);

}  // namespace softrdma::transport
