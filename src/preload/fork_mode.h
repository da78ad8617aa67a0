// SPDX-License-Identifier: BSD-2-Clause
// RDMAV_FORK_SAFE=1: rdma-core's fork support. A forked child cannot use its parent's
// rsockets (their queue pairs stay with the parent), so in this mode TCP sockets are made as
// ordinary ones and move onto rsockets at their first data call, in whichever process makes
// it: the accepting side listens on a fresh rsocket and sends its port over the TCP
// connection; the connecting side finds that offer, connects to it, and both drop the TCP
// socket. A peer that never offers (not in fork mode) leaves the connection on TCP.
#pragma once

namespace softrdma::preload {

bool fork_mode();
// fd is a TCP socket the application made (fork mode moves only those and what they accept:
// our own libraries' sockets are told apart when they are made, since a sanitizer's runtime
// may stand between accept() and its caller).
void mark_app_socket(int fd);
bool app_socket(int fd);
// fd was accepted (passive) or connected (active) by a fork-mode socket: it moves at its first
// data call.
void fork_pending(int fd, bool passive);
// fd was closed: nothing of it is pending any more.
void fork_pending_clear(int fd);
// Before a data call on fd: make a pending move now (a no-op, one load, for other fds).
void settle_fork(int fd);

}  // namespace softrdma::preload
