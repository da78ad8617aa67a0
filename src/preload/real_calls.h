// SPDX-License-Identifier: BSD-2-Clause
// The libc functions librspreload.so stands in front of, found with dlsym(RTLD_NEXT).
#pragma once
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace softrdma::preload {

struct RealCalls {
    int (*socket)(int, int, int);
    int (*bind)(int, const sockaddr *, socklen_t);
    int (*listen)(int, int);
    int (*accept)(int, sockaddr *, socklen_t *);
    int (*accept4)(int, sockaddr *, socklen_t *, int);
    int (*connect)(int, const sockaddr *, socklen_t);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*readv)(int, const iovec *, int);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*writev)(int, const iovec *, int);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, sockaddr *, socklen_t *);
    ssize_t (*recvmsg)(int, msghdr *, int);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*sendto)(int, const void *, size_t, int, const sockaddr *, socklen_t);
    ssize_t (*sendmsg)(int, const msghdr *, int);
    int (*poll)(pollfd *, nfds_t, int);
    int (*select)(int, fd_set *, fd_set *, fd_set *, timeval *);
    int (*close)(int);
    int (*shutdown)(int, int);
    int (*getsockname)(int, sockaddr *, socklen_t *);
    int (*getpeername)(int, sockaddr *, socklen_t *);
    int (*getsockopt)(int, int, int, void *, socklen_t *);
    int (*setsockopt)(int, int, int, const void *, socklen_t);
    int (*fcntl)(int, int, ...);
    int (*ioctl)(int, unsigned long, ...);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    ssize_t (*sendfile)(int, int, off_t *, size_t);
    int (*epoll_ctl)(int, int, int, epoll_event *);
    int (*epoll_wait)(int, epoll_event *, int, int);
    int (*epoll_pwait)(int, epoll_event *, int, int, const sigset_t *);
};

// Resolved once, on first use or at load, whichever comes first.
const RealCalls &real();

}  // namespace softrdma::preload
