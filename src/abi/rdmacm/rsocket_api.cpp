// SPDX-License-Identifier: BSD-2-Clause
// rsockets (socket calls over RDMA) are a later stage. The symbols exist so that Debian's
// rstream/riostream/rcopy/udpong load; every call fails cleanly with ENOSYS until then.
#include <rdma/rsocket.h>

#include <cerrno>

namespace {
int enosys() {
    errno = ENOSYS;
    return -1;
}
}  // namespace

extern "C" {

int rsocket(int, int, int) { return enosys(); }
int rbind(int, const struct sockaddr *, socklen_t) { return enosys(); }
int rlisten(int, int) { return enosys(); }
int raccept(int, struct sockaddr *, socklen_t *) { return enosys(); }
int rconnect(int, const struct sockaddr *, socklen_t) { return enosys(); }
int rshutdown(int, int) { return enosys(); }
int rclose(int) { return enosys(); }
ssize_t rrecv(int, void *, size_t, int) { return enosys(); }
ssize_t rrecvfrom(int, void *, size_t, int, struct sockaddr *, socklen_t *) { return enosys(); }
ssize_t rrecvmsg(int, struct msghdr *, int) { return enosys(); }
ssize_t rsend(int, const void *, size_t, int) { return enosys(); }
ssize_t rsendto(int, const void *, size_t, int, const struct sockaddr *, socklen_t) {
    return enosys();
}
ssize_t rsendmsg(int, const struct msghdr *, int) { return enosys(); }
ssize_t rread(int, void *, size_t) { return enosys(); }
ssize_t rreadv(int, const struct iovec *, int) { return enosys(); }
ssize_t rwrite(int, const void *, size_t) { return enosys(); }
ssize_t rwritev(int, const struct iovec *, int) { return enosys(); }
int rpoll(struct pollfd *, nfds_t, int) { return enosys(); }
int rselect(int, fd_set *, fd_set *, fd_set *, struct timeval *) { return enosys(); }
int rgetpeername(int, struct sockaddr *, socklen_t *) { return enosys(); }
int rgetsockname(int, struct sockaddr *, socklen_t *) { return enosys(); }
int rsetsockopt(int, int, int, const void *, socklen_t) { return enosys(); }
int rgetsockopt(int, int, int, void *, socklen_t *) { return enosys(); }
int rfcntl(int, int, ...) { return enosys(); }
off_t riomap(int, void *, size_t, int, int, off_t) {
    errno = ENOSYS;
    return -1;
}
int riounmap(int, void *, size_t) { return enosys(); }
size_t riowrite(int, const void *, size_t, off_t, int) {
    errno = ENOSYS;
    return 0;
}

}  // extern "C"
