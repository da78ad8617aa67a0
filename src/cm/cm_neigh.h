// SPDX-License-Identifier: BSD-2-Clause
// Neighbor (ARP/ND) state of the next hop toward a destination, as RoCE address resolution
// waits for it. Queries rtnetlink; no privileges needed.
#pragma once
#include <sys/socket.h>

namespace softrdma::cm {

enum class NeighState { kResolved, kPending, kFailed };

// Local and loopback destinations, and next hops that need no ARP, count as resolved.
NeighState next_hop_state(const sockaddr *dst);

}  // namespace softrdma::cm
