// SPDX-License-Identifier: BSD-2-Clause
// SO_KEEPALIVE for stream rsockets: one thread per process, started by the first socket that
// asks, sends each idle keepalive socket a control message every TCP_KEEPIDLE seconds. A peer
// that is gone (its host down, no reset ever coming) then fails that message's delivery, and
// the socket reports ETIMEDOUT, as a TCP keepalive does.
#pragma once
#include <memory>

namespace softrdma::rs {

class StreamSocket;

void watch_keepalive(const std::shared_ptr<StreamSocket> &s);

}  // namespace softrdma::rs
