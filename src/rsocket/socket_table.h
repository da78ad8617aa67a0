// SPDX-License-Identifier: BSD-2-Clause
// The process's rsockets, by descriptor. A call holds its socket by shared_ptr, so rclose in
// another thread never frees a socket under a running call.
#pragma once
#include <memory>

#include "rsocket/socket.h"

namespace softrdma::rs {

void register_socket(std::shared_ptr<Socket> s);
std::shared_ptr<Socket> find_socket(int fd);
std::shared_ptr<Socket> unregister_socket(int fd);

}  // namespace softrdma::rs
