// SPDX-License-Identifier: BSD-2-Clause
// A connected loopback TCP pair, both ends in this process: what a same-host link checks its
// segment against (the connection's two endpoints).
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/unique_fd.h"

namespace softrdma {

struct TcpPair {
    explicit TcpPair(bool nonblocking = false) {
        UniqueFd l(socket(AF_INET, SOCK_STREAM, 0));
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        EXPECT_EQ(bind(l.get(), reinterpret_cast<sockaddr *>(&a), len), 0);
        EXPECT_EQ(listen(l.get(), 4), 0);
        EXPECT_EQ(getsockname(l.get(), reinterpret_cast<sockaddr *>(&a), &len), 0);
        client.reset(socket(AF_INET, SOCK_STREAM, 0));
        EXPECT_EQ(connect(client.get(), reinterpret_cast<sockaddr *>(&a), len), 0);
        server.reset(accept(l.get(), nullptr, nullptr));
        if (nonblocking) {
            for (int fd : {client.get(), server.get()})
                EXPECT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
        }
    }
    UniqueFd client, server;
};

}  // namespace softrdma
