#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Hostile peers against a TCP listener (a CM listener or a QP listener), then a legitimate
client while the attack's connections are still held, timed.

    attack.py HOST PORT MODE [--count N] [--seconds S] [--] [LEGIT CMD ...]

Modes:
  junk      N connections one after another: 1-600 random bytes each (every third first gets
            an MPA request header announcing a large private-data length, then 64 random
            bytes), then closed. A connect that does not complete in 3 s is counted.
  huge      N connections held open, each sending a well-formed MPA request header that
            announces more private data than MPA allows, or the most it allows, and a part of it.
  half      N connections held open, each sending the first 10 bytes of an MPA request.
  silent    N connections held open, sending nothing.
  flood     N connections opened at once (non-blocking), held open, sending nothing.
  slowloris N connections that trickle a valid MPA request, one byte per second each, for S
            seconds; reports when the server closed each one.
  udp       UDP junk at PORT while the legitimate command runs, up to N datagrams a second:
            random bytes, and UD headers naming QPN --qpn Q: SENDs with a wrong Q_Key, from
            a random source QPN or, to churn the receiver's table of senders, from 100
            sockets each naming its own port's QPN; and flow-control grants, forged ones
            and restarts.
After the attack (held connections still open) the legitimate command runs; its exit status,
elapsed time and output are reported. Then the held connections are closed.
Prints key=value lines; exits 0 whatever the outcome (the caller judges)."""
import os, random, selectors, socket, subprocess, sys, threading, time

MPA_REQ_KEY = b"MPA ID Req Frame"


def mpa_header(pd_len):
    # key, flags (none), revision 1, private data length (big-endian)
    return MPA_REQ_KEY + bytes([0x00, 0x01]) + pd_len.to_bytes(2, "big")


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def connect(host, port, timeout=3.0):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
    except OSError:
        s.close()
        return None
    s.settimeout(None)  # blocking again: MSG_DONTWAIT peeks must not wait for the timeout
    return s


def junk(host, port, n, rng):
    timeouts = refused = 0
    for i in range(n):
        s = connect(host, port)
        if s is None:
            timeouts += 1
            continue
        try:
            if i % 3 == 2:
                s.sendall(mpa_header(rng.choice([0xFFFF, 0x8000, 4096, 600])) + rng.randbytes(64))
            s.sendall(rng.randbytes(rng.randint(1, 600)))
        except OSError:
            refused += 1
        s.close()
    print(f"junk_connections={n} connect_timeouts={timeouts} send_errors={refused}")


def held(host, port, n, rng, mode):
    socks = []
    for i in range(n):
        s = connect(host, port)
        if s is None:
            break
        try:
            if mode == "huge":
                pd = [0xFFFF, 0x1000, 513 + 20, 512][i % 4]
                s.sendall(mpa_header(pd) + rng.randbytes(min(pd, 40)))
            elif mode == "half":
                s.sendall(mpa_header(0)[:10])
        except OSError:
            pass
        socks.append(s)
    print(f"held_connections={len(socks)} of={n}")
    return socks


def flood(host, port, n):
    socks = []
    for _ in range(n):
        s = socket.socket(family(host), socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        socks.append(s)
    # Give the handshakes a moment to complete (bounded).
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
    connected, deadline = 0, time.monotonic() + 5
    pending = len(socks)
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            sel.unregister(key.fileobj)
            pending -= 1
            if key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected += 1
    print(f"flood_connections={len(socks)} connected={connected}")
    return socks


def closed_by_peer(s):
    s.setblocking(True)
    try:
        return s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def slowloris(host, port, n, seconds):
    req = mpa_header(512) + bytes(512)
    socks = [s for s in (connect(host, port) for _ in range(n)) if s is not None]
    start = time.monotonic()
    closed_at = {}
    sent = 0
    while time.monotonic() - start < seconds and len(closed_at) < len(socks):
        for i, s in enumerate(socks):
            if i in closed_at:
                continue
            if closed_by_peer(s):
                closed_at[i] = time.monotonic() - start
                continue
            try:
                s.send(req[sent:sent + 1])
            except OSError:
                closed_at[i] = time.monotonic() - start
        sent += 1
        time.sleep(1.0)
    last = max(closed_at.values()) if closed_at else -1
    print(f"slowloris_connections={len(socks)} closed_by_server={len(closed_at)} "
          f"last_closed_after={last:.1f} bytes_each={sent}")
    return [s for i, s in enumerate(socks) if i not in closed_at]


class UdpJunk(threading.Thread):
    CHURN_SOCKETS = 100  # more senders than a UD QP's flow-control table holds (64)

    def __init__(self, host, port, rate, qpn, rng):
        super().__init__(daemon=True)
        self.addr, self.rate, self.qpn, self.rng = (host, port), rate, qpn, rng
        self.stop, self.sent = False, 0
        self.sock = socket.socket(family(host), socket.SOCK_DGRAM)
        self.churn = []
        for _ in range(self.CHURN_SOCKETS if qpn is not None else 0):
            c = socket.socket(family(host), socket.SOCK_DGRAM)
            c.bind((host, 0))
            self.churn.append((c, c.getsockname()[1] << 8 | 0xFF))  # a UD QPN names its port

    def datagram(self, i):
        """(socket, bytes) of datagram i."""
        rng = self.rng
        if i % 3 == 0 or self.qpn is None:
            return self.sock, rng.randbytes(rng.randint(1, 1400))
        sock, src = self.sock, rng.randint(0, 0xFFFFFF)
        if i % 2:
            sock, src = self.churn[(i // 2) % len(self.churn)]
        # magic, version, flags, reserved, destination QPN, source QPN, Q_Key, immediate
        flags = 0x04 if i % 3 == 1 else 0x00  # a grant (a restart from a churn socket)
        if flags and sock is not self.sock:
            flags |= 0x08
        hdr = bytes([0x55, 0x01, flags, 0]) + self.qpn.to_bytes(4, "big") + \
            src.to_bytes(4, "big") + rng.randbytes(8)
        return sock, hdr + (b"" if flags else rng.randbytes(rng.randint(0, 1000)))

    def run(self):
        start, i = time.monotonic(), 0
        while not self.stop:
            # bounded rate: at most `rate` datagrams a second, in bursts of 100
            for _ in range(100):
                try:
                    sock, data = self.datagram(i)
                    sock.sendto(data, self.addr)
                    self.sent += 1
                except OSError:
                    pass
                i += 1
            ahead = i / self.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)


def main():
    args = sys.argv[1:]
    legit = []
    if "--" in args:
        i = args.index("--")
        args, legit = args[:i], args[i + 1:]
    host, port, mode = args[0], int(args[1]), args[2]
    n, seconds, qpn = 100, 20.0, None
    rest = args[3:]
    while rest:
        if rest[0] == "--count":
            n = int(rest[1])
        elif rest[0] == "--seconds":
            seconds = float(rest[1])
        elif rest[0] == "--qpn":
            qpn = int(rest[1], 0)
        else:
            sys.exit(f"unknown option {rest[0]}")
        rest = rest[2:]
    rng = random.Random(int(os.environ.get("SR_ATTACK_SEED", "1")))
    flood_thread = None
    t0 = time.monotonic()
    socks = []
    if mode == "junk":
        junk(host, port, n, rng)
    elif mode in ("huge", "half", "silent"):
        socks = held(host, port, n, rng, mode)
    elif mode == "flood":
        socks = flood(host, port, n)
    elif mode == "slowloris":
        socks = slowloris(host, port, n, seconds)
    elif mode == "udp":
        flood_thread = UdpJunk(host, port, n, qpn, rng)
        flood_thread.start()
        time.sleep(0.5)
    else:
        sys.exit(f"unknown mode {mode}")
    print(f"attack_seconds={time.monotonic() - t0:.2f}")
    if legit:
        t1 = time.monotonic()
        try:
            p = subprocess.run(legit, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            rc, out = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, out = 124, (e.stdout or b"").decode(errors="replace")
        print(f"legit_rc={rc} legit_seconds={time.monotonic() - t1:.3f}")
        sys.stdout.write("".join("legit| " + l + "\n" for l in out.splitlines()[-30:]))
    if flood_thread:
        flood_thread.stop = True
        flood_thread.join()
        print(f"udp_datagrams={flood_thread.sent}")
    still = sum(1 for s in socks if not closed_by_peer(s))
    print(f"held_open_at_end={still}")
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
