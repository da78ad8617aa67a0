// SPDX-License-Identifier: BSD-2-Clause
// librspreload.so: an unmodified program's TCP sockets on rsockets. Each libc socket call
// looks its descriptor up; a placeholder for an rsocket goes to the r* call, anything else to
// libc. Sockets rsockets cannot serve (not TCP, no device, a peer without rsockets behind a
// refused connect) stay or become ordinary ones.
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "preload/epoll_calls.h"
#include "preload/fd_table.h"
#include "preload/fork_mode.h"
#include "preload/real_calls.h"

using softrdma::preload::real;
using softrdma::preload::rsocket_of;

namespace {

// Sockets our own libraries open (the CM's and the transport's TCP and UDP sockets) stay
// ordinary: softrdma's code calls socket() through this library like any other.
bool from_softrdma(const void *caller) {
    static const void *const verbs_base = [] {
        Dl_info i{};
        return dladdr(reinterpret_cast<void *>(&ibv_get_device_list), &i) ? i.dli_fbase : nullptr;
    }();
    static const void *const cm_base = [] {
        Dl_info i{};
        return dladdr(reinterpret_cast<void *>(&rsocket), &i) ? i.dli_fbase : nullptr;
    }();
    Dl_info i{};
    if (!dladdr(caller, &i)) return false;
    return i.dli_fbase == verbs_base || i.dli_fbase == cm_base;
}

bool is_tcp(int domain, int type, int protocol) {
    const int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    return (domain == AF_INET || domain == AF_INET6) && kind == SOCK_STREAM &&
           (protocol == 0 || protocol == IPPROTO_TCP);
}

// RS_SQ_SIZE, RS_RQ_SIZE, RS_INLINE: queue sizes for every rsocket this process makes.
void apply_env_options(int rs) {
    static const struct {
        const char *env;
        int opt;
    } kOpts[] = {
        {"RS_SQ_SIZE", RDMA_SQSIZE}, {"RS_RQ_SIZE", RDMA_RQSIZE}, {"RS_INLINE", RDMA_INLINE}};
    for (const auto &o : kOpts) {
        const char *v = std::getenv(o.env);
        if (!v || !*v) continue;
        const uint32_t n = uint32_t(std::strtoul(v, nullptr, 0));
        if (n) rsetsockopt(rs, SOL_RDMA, o.opt, &n, sizeof n);
    }
}

// The rsocket behind fd for a data call; in fork mode, a connection waiting to move moves now.
int rs_for_data(int fd) {
    if (softrdma::preload::fork_mode()) softrdma::preload::settle_fork(fd);
    return rsocket_of(fd);
}

// Drop fd's rsocket, closing it with its last placeholder.
void release(int fd) {
    const int last = softrdma::preload::unmap_fd(fd);
    if (last >= 0) rclose(last);
}

// A connect rsockets could not make (no rsocket listens there, no route over our devices):
// the socket becomes an ordinary TCP socket under the same descriptor and connects again.
int connect_over_tcp(int fd, int rs, const sockaddr *addr, socklen_t len) {
    const int fl = rfcntl(rs, F_GETFL);
    int nodelay = 0;
    socklen_t nl = sizeof nodelay;
    rgetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &nodelay, &nl);
    const int t = real().socket(addr->sa_family,
                                SOCK_STREAM | (fl > 0 && (fl & O_NONBLOCK) ? SOCK_NONBLOCK : 0), 0);
    if (t < 0) return -1;
    if (nodelay) real().setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
    const int fdfl = real().fcntl(fd, F_GETFD);
    if (real().dup3(t, fd, fdfl > 0 && (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
        const int e = errno;
        real().close(t);
        errno = e;
        return -1;
    }
    real().close(t);
    release(fd);
    return real().connect(fd, addr, len);
}

int accept_common(int fd, sockaddr *addr, socklen_t *len, int flags) {
    const int rs = rsocket_of(fd);
    if (rs < 0) {
        const int c = flags ? real().accept4(fd, addr, len, flags) : real().accept(fd, addr, len);
        if (c >= 0 && softrdma::preload::fork_mode() && softrdma::preload::app_socket(fd)) {
            softrdma::preload::mark_app_socket(c);
            softrdma::preload::fork_pending(c, true);
        }
        return c;
    }
    const int ph = softrdma::preload::make_placeholder(flags & SOCK_CLOEXEC);
    if (ph < 0) return -1;
    const int c = raccept(rs, addr, len);
    if (c < 0) {
        const int e = errno;
        real().close(ph);
        errno = e;
        return -1;
    }
    if (flags & SOCK_NONBLOCK) rfcntl(c, F_SETFL, O_NONBLOCK);
    softrdma::preload::map_fd(ph, c);
    return ph;
}

bool takes_no_arg(int cmd) {
    switch (cmd) {
        case F_GETFD:
        case F_GETFL:
        case F_GETOWN:
        case F_GETSIG:
        case F_GETLEASE:
        case F_GETPIPE_SZ:
        case F_GET_SEALS:
            return true;
        default:
            return false;
    }
}

bool takes_int(int cmd) {
    switch (cmd) {
        case F_DUPFD:
        case F_DUPFD_CLOEXEC:
        case F_SETFD:
        case F_SETFL:
        case F_SETOWN:
        case F_SETSIG:
        case F_SETLEASE:
        case F_NOTIFY:
        case F_SETPIPE_SZ:
        case F_ADD_SEALS:
            return true;
        default:
            return false;
    }
}

int fcntl_common(int fd, int cmd, va_list ap) {
    const int rs = rsocket_of(fd);
    if (takes_no_arg(cmd)) {
        if (rs >= 0 && cmd == F_GETFL) return rfcntl(rs, F_GETFL);
        return real().fcntl(fd, cmd);
    }
    if (takes_int(cmd)) {
        const long arg = va_arg(ap, long);
        if (rs >= 0 && cmd == F_SETFL) return rfcntl(rs, F_SETFL, int(arg));
        const int r = real().fcntl(fd, cmd, arg);
        if (r >= 0 && rs >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
            softrdma::preload::alias_fd(r, rs);
        return r;
    }
    return real().fcntl(fd, cmd, va_arg(ap, void *));
}

}  // namespace

extern "C" {

int socket(int domain, int type, int protocol) {
    if (!is_tcp(domain, type, protocol) || from_softrdma(__builtin_return_address(0)))
        return real().socket(domain, type, protocol);
    // In fork mode TCP sockets start as the kernel's and move at their first data call.
    if (softrdma::preload::fork_mode()) {
        const int fd = real().socket(domain, type, protocol);
        softrdma::preload::mark_app_socket(fd);
        return fd;
    }
    const int ph = softrdma::preload::make_placeholder(type & SOCK_CLOEXEC);
    if (ph < 0) return real().socket(domain, type, protocol);
    const int rs = rsocket(domain, type, protocol);
    if (rs < 0) {
        real().close(ph);
        return real().socket(domain, type, protocol);
    }
    apply_env_options(rs);
    softrdma::preload::map_fd(ph, rs);
    return ph;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rbind(rs, addr, len) : real().bind(fd, addr, len);
}

int listen(int fd, int backlog) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rlisten(rs, backlog) : real().listen(fd, backlog);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept_common(fd, addr, len, 0);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return accept_common(fd, addr, len, flags);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    const int rs = rsocket_of(fd);
    if (rs < 0) {
        const int r = real().connect(fd, addr, len);
        if ((r == 0 || errno == EINPROGRESS) && softrdma::preload::fork_mode() &&
            softrdma::preload::app_socket(fd)) {
            const int e = errno;
            softrdma::preload::fork_pending(fd, false);
            errno = e;
        }
        return r;
    }
    if (rconnect(rs, addr, len) == 0) return 0;
    switch (errno) {
        case ECONNREFUSED:
        case ENETUNREACH:
        case EHOSTUNREACH:
        case ETIMEDOUT:
        case ENODEV:
        case EADDRNOTAVAIL:
        case EAFNOSUPPORT:
            return connect_over_tcp(fd, rs, addr, len);
        default:
            return -1;  // EINPROGRESS among them: the connect goes on
    }
}

ssize_t read(int fd, void *buf, size_t n) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rread(rs, buf, n) : real().read(fd, buf, n);
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rreadv(rs, iov, iovcnt) : real().readv(fd, iov, iovcnt);
}

ssize_t write(int fd, const void *buf, size_t n) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rwrite(rs, buf, n) : real().write(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rwritev(rs, iov, iovcnt) : real().writev(fd, iov, iovcnt);
}

ssize_t recv(int fd, void *buf, size_t n, int flags) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rrecv(rs, buf, n, flags) : real().recv(fd, buf, n, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *src, socklen_t *len) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rrecvfrom(rs, buf, n, flags, src, len)
                   : real().recvfrom(fd, buf, n, flags, src, len);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rrecvmsg(rs, msg, flags) : real().recvmsg(fd, msg, flags);
}

ssize_t send(int fd, const void *buf, size_t n, int flags) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rsend(rs, buf, n, flags) : real().send(fd, buf, n, flags);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *dst,
               socklen_t len) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rsendto(rs, buf, n, flags, dst, len)
                   : real().sendto(fd, buf, n, flags, dst, len);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    const int rs = rs_for_data(fd);
    return rs >= 0 ? rsendmsg(rs, msg, flags) : real().sendmsg(fd, msg, flags);
}

int close(int fd) {
    if (softrdma::preload::fork_mode()) softrdma::preload::fork_pending_clear(fd);
    if (rsocket_of(fd) < 0) {
        if (softrdma::preload::any_epoll_sets()) softrdma::preload::forget_epoll_set(fd);
        return real().close(fd);
    }
    if (softrdma::preload::any_epoll_sets()) softrdma::preload::forget_epoll_member(fd);
    const int last = softrdma::preload::unmap_fd(fd);
    real().close(fd);
    if (last >= 0) rclose(last);
    return 0;
}

int shutdown(int fd, int how) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rshutdown(rs, how) : real().shutdown(fd, how);
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rgetsockname(rs, addr, len) : real().getsockname(fd, addr, len);
}

int getpeername(int fd, struct sockaddr *addr, socklen_t *len) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rgetpeername(rs, addr, len) : real().getpeername(fd, addr, len);
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rgetsockopt(rs, level, name, val, len)
                   : real().getsockopt(fd, level, name, val, len);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
    const int rs = rsocket_of(fd);
    return rs >= 0 ? rsetsockopt(rs, level, name, val, len)
                   : real().setsockopt(fd, level, name, val, len);
}

int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    const int r = fcntl_common(fd, cmd, ap);
    va_end(ap);
    return r;
}

int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    const int r = fcntl_common(fd, cmd, ap);
    va_end(ap);
    return r;
}

int ioctl(int fd, unsigned long req, ...) {
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    const int rs = rsocket_of(fd);
    if (rs >= 0 && req == FIONBIO && arg) {
        const int fl = rfcntl(rs, F_GETFL);
        if (fl < 0) return -1;
        const int on = *static_cast<int *>(arg);
        return rfcntl(rs, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
    }
    return real().ioctl(fd, req, arg);
}

int dup(int fd) {
    const int r = real().dup(fd);
    const int rs = rsocket_of(fd);
    if (r >= 0 && rs >= 0) softrdma::preload::alias_fd(r, rs);
    return r;
}

int dup2(int oldfd, int newfd) {
    if (oldfd == newfd) return real().dup2(oldfd, newfd);
    const int rs = rsocket_of(oldfd);
    const int r = real().dup2(oldfd, newfd);
    if (r < 0) return r;
    release(newfd);  // its old placeholder is gone: so is its reference
    if (rs >= 0) softrdma::preload::alias_fd(newfd, rs);
    return r;
}

int dup3(int oldfd, int newfd, int flags) {
    const int rs = rsocket_of(oldfd);
    const int r = real().dup3(oldfd, newfd, flags);
    if (r < 0) return r;
    release(newfd);
    if (rs >= 0) softrdma::preload::alias_fd(newfd, rs);
    return r;
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
    const int rs = rs_for_data(out_fd);
    if (rs < 0) return real().sendfile(out_fd, in_fd, offset, count);
    static thread_local char buf[64 << 10];
    size_t done = 0;
    while (done < count) {
        const size_t want = std::min(sizeof buf, count - done);
        const ssize_t n =
            offset ? pread(in_fd, buf, want, *offset + off_t(done)) : real().read(in_fd, buf, want);
        if (n <= 0) {
            if (n < 0 && done == 0) return -1;
            break;
        }
        ssize_t put = 0;
        while (put < n) {
            const ssize_t w = rsend(rs, buf + put, size_t(n - put), 0);
            if (w < 0) {
                if (done + size_t(put) == 0) return -1;
                if (offset) *offset += off_t(done + size_t(put));
                return ssize_t(done + size_t(put));
            }
            put += w;
        }
        done += size_t(n);
    }
    if (offset) *offset += off_t(done);
    return ssize_t(done);
}

ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count) {
    return sendfile(out_fd, in_fd, offset, count);
}

}  // extern "C"
