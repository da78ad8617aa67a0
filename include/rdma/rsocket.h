/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma - <rdma/rsocket.h>
 *
 * rsockets: BSD-socket-like calls carried over RDMA (SOCK_STREAM over RC,
 * SOCK_DGRAM over UD), implemented inside librdmacm.so.1.  Source- and
 * binary-compatible with rdma-core 44.
 */
#ifndef RSOCKET_H
#define RSOCKET_H

#include <errno.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/select.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Socket life cycle; the returned descriptors are rsocket descriptors. */
int rsocket(int domain, int type, int protocol);
int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rlisten(int socket, int backlog);
int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen);
int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rshutdown(int socket, int how);
int rclose(int socket);

/* Data transfer. */
ssize_t rrecv(int socket, void *buf, size_t len, int flags);
ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen);
ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags);
ssize_t rsend(int socket, const void *buf, size_t len, int flags);
ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen);
ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags);
ssize_t rread(int socket, void *buf, size_t count);
ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt);
ssize_t rwrite(int socket, const void *buf, size_t count);
ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt);

/* Readiness over rsockets (and ordinary descriptors). */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout);
int rselect(int nfds, fd_set *readfds, fd_set *writefds,
	    fd_set *exceptfds, struct timeval *timeout);

/* Addresses. */
int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen);
int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen);

/* Option level for the rsocket-specific options below. */
#define SOL_RDMA 0x10000

/* Option names at level SOL_RDMA. */
enum {
	RDMA_SQSIZE    = 0,
	RDMA_RQSIZE    = 1,
	RDMA_INLINE    = 2,
	RDMA_IOMAPSIZE = 3,
	RDMA_ROUTE     = 4
};

int rsetsockopt(int socket, int level, int optname,
		const void *optval, socklen_t optlen);
int rgetsockopt(int socket, int level, int optname,
		void *optval, socklen_t *optlen);
int rfcntl(int socket, int cmd, ... /* arg */);

/* Direct placement: expose a buffer to the peer, and write into the peer's. */
off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset);
int riounmap(int socket, void *buf, size_t len);
size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags);

#ifdef __cplusplus
}
#endif

#endif /* RSOCKET_H */
