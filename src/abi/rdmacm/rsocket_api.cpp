// SPDX-License-Identifier: BSD-2-Clause
// The rsocket calls of librdmacm.so.1: find the socket, call it, never throw across the ABI.
#include <fcntl.h>
#include <rdma/rsocket.h>

#include <cerrno>
#include <cstdarg>
#include <new>

#include "rsocket/dgram_socket.h"
#include "rsocket/rpoll.h"
#include "rsocket/socket_table.h"
#include "rsocket/stream_socket.h"

namespace rs = softrdma::rs;

namespace {

// Run f on the socket behind fd; EBADF when fd is no rsocket, ENOMEM when f throws.
template <class F>
auto with_socket(int fd, F &&f) -> decltype(f(std::declval<rs::Socket &>())) {
    auto s = rs::find_socket(fd);
    if (!s) {
        errno = EBADF;
        return -1;
    }
    try {
        return f(*s);
    } catch (const std::bad_alloc &) {
        errno = ENOMEM;
        return -1;
    } catch (...) {
        errno = EIO;
        return -1;
    }
}

}  // namespace

extern "C" {

int rsocket(int domain, int type, int protocol) {
    const int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (domain != AF_INET && domain != AF_INET6) return rs::fail(ENOTSUP);
    try {
        std::shared_ptr<rs::Socket> s;
        if (kind == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP))
            s = rs::StreamSocket::create(domain);
        else if (kind == SOCK_DGRAM && (protocol == 0 || protocol == IPPROTO_UDP))
            s = rs::DgramSocket::create(domain);
        else
            return rs::fail(ENOTSUP);
        if (!s) return -1;
        if (type & SOCK_NONBLOCK) s->fcntl_setfl(O_NONBLOCK);
        const int fd = s->fd();
        rs::register_socket(std::move(s));
        return fd;
    } catch (const std::bad_alloc &) {
        return rs::fail(ENOMEM);
    }
}

int rbind(int fd, const struct sockaddr *addr, socklen_t len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.bind(addr, len); });
}
int rlisten(int fd, int backlog) {
    return with_socket(fd, [&](rs::Socket &s) { return s.listen(backlog); });
}
int raccept(int fd, struct sockaddr *addr, socklen_t *len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.accept(addr, len); });
}
int rconnect(int fd, const struct sockaddr *addr, socklen_t len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.connect(addr, len); });
}
int rshutdown(int fd, int how) {
    return with_socket(fd, [&](rs::Socket &s) { return s.shutdown(how); });
}

int rclose(int fd) {
    auto s = rs::unregister_socket(fd);
    if (!s) return rs::fail(EBADF);
    if (auto *st = dynamic_cast<rs::StreamSocket *>(s.get())) st->close_gracefully();
    return 0;  // the last reference, perhaps a call still running elsewhere, frees it
}

ssize_t rrecv(int fd, void *buf, size_t len, int flags) {
    iovec v{buf, len};
    return with_socket(fd,
                       [&](rs::Socket &s) { return s.recvmsg(&v, 1, flags, nullptr, nullptr); });
}
ssize_t rrecvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
                  socklen_t *srclen) {
    iovec v{buf, len};
    return with_socket(fd, [&](rs::Socket &s) { return s.recvmsg(&v, 1, flags, src, srclen); });
}
ssize_t rrecvmsg(int fd, struct msghdr *msg, int flags) {
    if (!msg) return rs::fail(EFAULT);
    return with_socket(fd, [&](rs::Socket &s) {
        msg->msg_controllen = 0;
        msg->msg_flags = 0;
        return s.recvmsg(msg->msg_iov, int(msg->msg_iovlen), flags,
                         static_cast<sockaddr *>(msg->msg_name),
                         msg->msg_name ? &msg->msg_namelen : nullptr);
    });
}
ssize_t rsend(int fd, const void *buf, size_t len, int flags) {
    iovec v{const_cast<void *>(buf), len};
    return with_socket(fd, [&](rs::Socket &s) { return s.sendmsg(&v, 1, flags, nullptr, 0); });
}
ssize_t rsendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *dst,
                socklen_t dstlen) {
    iovec v{const_cast<void *>(buf), len};
    return with_socket(fd, [&](rs::Socket &s) { return s.sendmsg(&v, 1, flags, dst, dstlen); });
}
ssize_t rsendmsg(int fd, const struct msghdr *msg, int flags) {
    if (!msg) return rs::fail(EFAULT);
    return with_socket(fd, [&](rs::Socket &s) {
        return s.sendmsg(msg->msg_iov, int(msg->msg_iovlen), flags,
                         static_cast<const sockaddr *>(msg->msg_name), msg->msg_namelen);
    });
}
ssize_t rread(int fd, void *buf, size_t count) {
    return rrecv(fd, buf, count, 0);
}
ssize_t rreadv(int fd, const struct iovec *iov, int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX) return rs::fail(EINVAL);
    return with_socket(fd,
                       [&](rs::Socket &s) { return s.recvmsg(iov, iovcnt, 0, nullptr, nullptr); });
}
ssize_t rwrite(int fd, const void *buf, size_t count) {
    return rsend(fd, buf, count, 0);
}
ssize_t rwritev(int fd, const struct iovec *iov, int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX) return rs::fail(EINVAL);
    return with_socket(fd, [&](rs::Socket &s) { return s.sendmsg(iov, iovcnt, 0, nullptr, 0); });
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout) {
    try {
        return rs::poll_fds(fds, nfds, timeout);
    } catch (const std::bad_alloc &) {
        return rs::fail(ENOMEM);
    }
}
int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
            struct timeval *timeout) {
    try {
        return rs::select_fds(nfds, readfds, writefds, exceptfds, timeout);
    } catch (const std::bad_alloc &) {
        return rs::fail(ENOMEM);
    }
}

int rgetpeername(int fd, struct sockaddr *addr, socklen_t *len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.getpeername(addr, len); });
}
int rgetsockname(int fd, struct sockaddr *addr, socklen_t *len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.getsockname(addr, len); });
}
int rsetsockopt(int fd, int level, int name, const void *val, socklen_t len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.setsockopt(level, name, val, len); });
}
int rgetsockopt(int fd, int level, int name, void *val, socklen_t *len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.getsockopt(level, name, val, len); });
}

int rfcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    const int arg = (cmd == F_SETFL || cmd == F_SETFD) ? va_arg(ap, int) : 0;
    va_end(ap);
    return with_socket(fd, [&](rs::Socket &s) -> int {
        switch (cmd) {
            case F_GETFL:
                return s.fcntl_getfl();
            case F_SETFL:
                return s.fcntl_setfl(arg);
            case F_GETFD:
            case F_SETFD:
                // The rsocket's descriptor is a real one: close-on-exec is the kernel's flag.
                return cmd == F_GETFD ? ::fcntl(fd, F_GETFD) : ::fcntl(fd, F_SETFD, arg);
            default:
                return rs::fail(ENOTSUP);
        }
    });
}

off_t riomap(int fd, void *buf, size_t len, int prot, int flags, off_t offset) {
    return with_socket(fd, [&](rs::Socket &s) { return s.iomap(buf, len, prot, flags, offset); });
}
int riounmap(int fd, void *buf, size_t len) {
    return with_socket(fd, [&](rs::Socket &s) { return s.iounmap(buf, len); });
}
size_t riowrite(int fd, const void *buf, size_t count, off_t offset, int flags) {
    const ssize_t r =
        with_socket(fd, [&](rs::Socket &s) { return s.iowrite(buf, count, offset, flags); });
    return r < 0 ? size_t(-1) : size_t(r);
}

}  // extern "C"
