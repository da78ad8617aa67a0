// SPDX-License-Identifier: BSD-2-Clause
#include "rsocket/socket_table.h"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace softrdma::rs {
namespace {

struct Table {
    std::shared_mutex mu;
    std::unordered_map<int, std::shared_ptr<Socket>> by_fd;
};

// Never destroyed: a socket may still be closed from another library's exit handler.
Table &table() {
    static auto *t = std::make_unique<Table>().release();
    return *t;
}

}  // namespace

void register_socket(std::shared_ptr<Socket> s) {
    auto &t = table();
    std::unique_lock lk(t.mu);
    const int fd = s->fd();
    t.by_fd[fd] = std::move(s);
}

std::shared_ptr<Socket> find_socket(int fd) {
    auto &t = table();
    std::shared_lock lk(t.mu);
    auto it = t.by_fd.find(fd);
    return it == t.by_fd.end() ? nullptr : it->second;
}

std::shared_ptr<Socket> unregister_socket(int fd) {
    auto &t = table();
    std::unique_lock lk(t.mu);
    auto it = t.by_fd.find(fd);
    if (it == t.by_fd.end()) return nullptr;
    auto s = std::move(it->second);
    t.by_fd.erase(it);
    return s;
}

}  // namespace softrdma::rs
