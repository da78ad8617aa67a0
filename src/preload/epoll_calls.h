// SPDX-License-Identifier: BSD-2-Clause
// The rsockets that epoll instances watch, kept beside the kernel's epoll (epoll_calls.cpp).
#pragma once

namespace softrdma::preload {

// fd (an rsocket placeholder) was closed: no epoll instance watches it any more.
void forget_epoll_member(int fd);
// epfd was closed: forget what it watched. False if it watched no rsocket.
bool forget_epoll_set(int epfd);
// Whether any epoll instance watches an rsocket (a close of any descriptor checks it).
bool any_epoll_sets();

}  // namespace softrdma::preload
