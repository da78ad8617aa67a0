// SPDX-License-Identifier: BSD-2-Clause
// The Ethernet port behind a raw packet QP: a packet socket (AF_PACKET) bound to the device's
// network interface. Frames a raw QP sends go out on that interface as they are; every frame
// the interface sees comes in, for the QP's flow rules to choose from. Like the kernel's raw
// packet QPs, it needs CAP_NET_RAW.
#pragma once
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "common/unique_fd.h"

namespace softrdma::transport {

// A non-blocking packet socket on interface `ifindex`, receiving every protocol. On a
// loopback interface, where each frame is seen twice (sent, then received), it takes only the
// received copy. An empty fd and errno (EPERM without CAP_NET_RAW) on failure.
UniqueFd open_packet_socket(int ifindex, bool loopback);

// Sends one whole frame (Ethernet header first); false with errno set if the kernel refused.
bool send_frame(int fd, int ifindex, const iovec *iov, int iovcnt);

// Takes one frame into `buf`, starting at buf + `start` (0 or 4: room is kept to put back an
// 802.1Q tag the kernel took out, without moving the frame). Returns its length, or -1 when
// none is waiting (or on error, errno set). `outgoing` says it was sent from this host.
long recv_frame(int fd, uint8_t *buf, size_t cap, size_t &start, bool &outgoing);

// The interface's MTU, 1500 if it cannot be read.
uint32_t interface_mtu(int ifindex);

}  // namespace softrdma::transport
