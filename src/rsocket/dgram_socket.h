// SPDX-License-Identifier: BSD-2-Clause
// A SOCK_DGRAM rsocket over UD QPs.
#pragma once
#include <memory>

#include "rsocket/socket.h"

namespace softrdma::rs {

class DgramSocket : public Socket {
  public:
    static std::shared_ptr<DgramSocket> create(int) {
        errno = ENOTSUP;
        return nullptr;
    }
};

}  // namespace softrdma::rs
