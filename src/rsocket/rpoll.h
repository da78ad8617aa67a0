// SPDX-License-Identifier: BSD-2-Clause
// rpoll/rselect: readiness over rsockets and ordinary descriptors in one call.
#pragma once
#include <poll.h>
#include <sys/select.h>

namespace softrdma::rs {

int poll_fds(pollfd *fds, nfds_t nfds, int timeout_ms);
int select_fds(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, timeval *timeout);

}  // namespace softrdma::rs
