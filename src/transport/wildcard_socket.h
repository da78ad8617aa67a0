// SPDX-License-Identifier: BSD-2-Clause
// Sockets the library opens for itself (QP listeners, UD QPs), bound to the wildcard address.
//
// Their ports are taken above the kernel's ephemeral range (net.ipv4.ip_local_port_range) when
// it leaves room: applications commonly ask the kernel for a free port (bind to port 0, read it,
// close) and bind it again a moment later, and a QP created in between must not take it from them.
#pragma once
#include <cstdint>

#include "common/unique_fd.h"

namespace softrdma::transport {

// A non-blocking socket of `type` bound to the wildcard address, on a private port when one is
// free, else on one the kernel picks: dual-stack IPv6 where the host has it (so IPv4-mapped and
// IPv6 GIDs both reach it), IPv4 otherwise. Sets `port`; an empty fd (errno set) on failure.
UniqueFd bind_wildcard(int type, uint16_t &port);

}  // namespace softrdma::transport
