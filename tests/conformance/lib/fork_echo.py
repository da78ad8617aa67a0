# SPDX-License-Identifier: BSD-2-Clause
"""A forking TCP echo server and its client, for the fork-mode preload test (rspreload.sh).

  fork_echo.py server PORT CONNECTIONS   serve CONNECTIONS clients, each in a forked child
  fork_echo.py client PORT BYTES         send BYTES random bytes, check the echo, print "match"
"""
import hashlib
import os
import socket
import socketserver
import sys


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        total = 0
        while True:
            d = self.request.recv(65536)
            if not d:
                break
            total += len(d)
            self.request.sendall(d)
        sys.stderr.write(f"child {os.getpid()} echoed {total}\n")


class Server(socketserver.ForkingTCPServer):
    allow_reuse_address = True


def client(port, n):
    data = os.urandom(n)
    s = socket.create_connection(("127.0.0.1", port))
    got = bytearray()
    for i in range(0, n, 100000):
        s.sendall(data[i:i + 100000])
        while len(got) < min(n, i + 100000):
            d = s.recv(65536)
            if not d:
                break
            got += d
    s.shutdown(socket.SHUT_WR)
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    ok = hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    print("match" if ok else "MISMATCH", len(got))
    return 0 if ok else 1


def main():
    mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if mode == "client":
        return client(port, n)
    with Server(("127.0.0.1", port), Echo) as srv:
        for _ in range(n):
            srv.handle_request()
        # Reap the children before leaving, so their lines are in the output.
        while True:
            try:
                os.wait()
            except ChildProcessError:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
