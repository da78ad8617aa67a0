// SPDX-License-Identifier: BSD-2-Clause
#include "preload/real_calls.h"

#include <dlfcn.h>

#include <mutex>

namespace softrdma::preload {
namespace {

RealCalls g_real{};
std::once_flag g_once;

template <class F>
void find(F &slot, const char *name) {
    slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void resolve() {
    RealCalls &r = g_real;
    find(r.socket, "socket");
    find(r.bind, "bind");
    find(r.listen, "listen");
    find(r.accept, "accept");
    find(r.accept4, "accept4");
    find(r.connect, "connect");
    find(r.read, "read");
    find(r.readv, "readv");
    find(r.write, "write");
    find(r.writev, "writev");
    find(r.recv, "recv");
    find(r.recvfrom, "recvfrom");
    find(r.recvmsg, "recvmsg");
    find(r.send, "send");
    find(r.sendto, "sendto");
    find(r.sendmsg, "sendmsg");
    find(r.poll, "poll");
    find(r.select, "select");
    find(r.close, "close");
    find(r.shutdown, "shutdown");
    find(r.getsockname, "getsockname");
    find(r.getpeername, "getpeername");
    find(r.getsockopt, "getsockopt");
    find(r.setsockopt, "setsockopt");
    find(r.fcntl, "fcntl");
    find(r.ioctl, "ioctl");
    find(r.dup, "dup");
    find(r.dup2, "dup2");
    find(r.dup3, "dup3");
    find(r.sendfile, "sendfile");
    find(r.epoll_ctl, "epoll_ctl");
    find(r.epoll_wait, "epoll_wait");
    find(r.epoll_pwait, "epoll_pwait");
}

// Resolve at load: a constructor of another library may call socket() before our first use.
[[gnu::constructor]] void resolve_at_load() {
    std::call_once(g_once, resolve);
}

}  // namespace

const RealCalls &real() {
    std::call_once(g_once, resolve);
    return g_real;
}

}  // namespace softrdma::preload
