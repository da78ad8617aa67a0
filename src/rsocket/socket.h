// SPDX-License-Identifier: BSD-2-Clause
// One rsocket, as the rsocket calls see it. Stream sockets (RC) and datagram sockets (UD) derive
// from it; a call a kind does not support fails as the socket API fails it.
#pragma once
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace softrdma::rs {

// errno = e, return -1: the socket API's way of failing.
inline int fail(int e) {
    errno = e;
    return -1;
}

class Socket {
  public:
    virtual ~Socket() = default;
    Socket(const Socket &) = delete;
    Socket &operator=(const Socket &) = delete;

    // The descriptor the application holds: a kernel fd owned by this socket, so it never
    // collides with the application's own descriptors.
    int fd() const { return fd_; }

    virtual int bind(const sockaddr *addr, socklen_t len) = 0;
    virtual int listen(int) { return fail(EOPNOTSUPP); }
    virtual int accept(sockaddr *, socklen_t *) { return fail(EOPNOTSUPP); }
    virtual int connect(const sockaddr *addr, socklen_t len) = 0;
    virtual int shutdown(int how) = 0;
    virtual ssize_t recvmsg(const iovec *iov, int iovcnt, int flags, sockaddr *from,
                            socklen_t *fromlen) = 0;
    virtual ssize_t sendmsg(const iovec *iov, int iovcnt, int flags, const sockaddr *to,
                            socklen_t tolen) = 0;
    virtual int getpeername(sockaddr *addr, socklen_t *len) = 0;
    virtual int getsockname(sockaddr *addr, socklen_t *len) = 0;
    virtual int setsockopt(int level, int name, const void *val, socklen_t len) = 0;
    virtual int getsockopt(int level, int name, void *val, socklen_t *len) = 0;
    virtual int fcntl_getfl() = 0;
    virtual int fcntl_setfl(int flags) = 0;
    virtual off_t iomap(void *, size_t, int, int, off_t) { return fail(EOPNOTSUPP); }
    virtual int iounmap(void *, size_t) { return fail(EOPNOTSUPP); }
    virtual ssize_t iowrite(const void *, size_t, off_t, int) { return fail(EOPNOTSUPP); }

    // rpoll's three steps: what is ready now (doing any progress that costs no wait), then
    // arming the notifications and naming the kernel fds that will fire, then taking the
    // notifications that fired so the next arm starts clean.
    virtual short ready(short events) = 0;
    virtual void arm(short events, std::vector<pollfd> &out) = 0;
    virtual void disarm() = 0;

  protected:
    Socket() = default;
    int fd_ = -1;
};

}  // namespace softrdma::rs
