#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rsockets between two "hosts" (network namespaces joined by a veth pair this test creates):
# Debian's rstream and rcopy on our librdmacm, and iperf3 and netcat through librspreload.so.
#   rsocket_two_hosts.sh <libdir>
. "$(dirname "${BASH_SOURCE[0]}")/lib/two_hosts.sh"
two_hosts_up "$1" rstream rcopy iperf3 nc sha256sum
# After the sanitizer runtime when the ASan run preloads it (it must come first).
pre="LD_PRELOAD=${SR_NETNS_PRELOAD:+$SR_NETNS_PRELOAD:}$libdir/rsocket/librspreload.so"

pair rstream 7471 rstream -b "$ipa" -p 7471 -T b -- rstream -s "$ipa" -p 7471 -T b
grep -qE '^1m_bw ' "$work/rstream.cli" || { echo "FAIL: rstream printed no 1m_bw row"; fails=$((fails + 1)); }
pair rstream_nb 7472 rstream -b "$ipa" -p 7472 -- rstream -s "$ipa" -p 7472
pair rstream_v6 7473 rstream -b "$ip6a" -p 7473 -T b -- rstream -s "$ip6a" -p 7473 -T b

# rcopy: 16 MiB across, the copy checked.
head -c $((16 << 20)) /dev/urandom >"$work/rcopy.src"
in_ns "$nsa" timeout 60 rcopy -p 7474 >"$work/rcopy.srv" 2>&1 &
pids+=($!)
if wait_listen "$nsa" 7474 &&
    in_ns "$nsb" timeout 60 rcopy "$work/rcopy.src" "$ipa:$work/rcopy.dst" -p 7474 >"$work/rcopy.cli" 2>&1 &&
    [[ $(sha256sum <"$work/rcopy.src") == "$(sha256sum <"$work/rcopy.dst")" ]]; then
    echo "PASS: rcopy: 16 MiB across hosts, SHA-256 equal"
else
    echo "FAIL: rcopy"; show cli "$work/rcopy.cli"; show srv "$work/rcopy.srv"; fails=$((fails + 1))
fi

# iperf3 through the preload: the server listens on [::] (dual stack), the client dials IPv4.
pair iperf3 5201 env "$pre" SOFTRDMA_DEBUG=1 iperf3 -s -1 -p 5201 -- env "$pre" iperf3 -c "$ipa" -p 5201 -t 2
if grep -qE '^softrdma: qp [0-9]+: connected' "$work/iperf3.srv" && grep -q receiver "$work/iperf3.cli"; then
    echo "PASS: iperf3 over QPs: $(grep receiver "$work/iperf3.cli" | tr -s ' ')"
else
    echo "FAIL: iperf3 did not run over QPs"; show cli "$work/iperf3.cli"; show srv "$work/iperf3.srv"; fails=$((fails + 1))
fi

# netcat carrying a checksummed file.
head -c $((16 << 20)) /dev/urandom >"$work/nc.src"
in_ns "$nsa" timeout 60 env "$pre" nc -l -p 5202 >"$work/nc.dst" 2>"$work/nc.srv" &
ncp=$!
pids+=("$ncp")
if wait_listen "$nsa" 5202 &&
    in_ns "$nsb" timeout 60 env "$pre" nc -N "$ipa" 5202 <"$work/nc.src" >/dev/null 2>"$work/nc.cli"; then
    for ((i = 0; i < 100; i++)); do kill -0 "$ncp" 2>/dev/null || break; sleep 0.1; done
fi
if [[ $(sha256sum <"$work/nc.src") == "$(sha256sum <"$work/nc.dst")" ]]; then
    echo "PASS: netcat: 16 MiB across hosts through the preload, SHA-256 equal"
else
    echo "FAIL: netcat"; show cli "$work/nc.cli"; show srv "$work/nc.srv"; fails=$((fails + 1))
fi

if ((fails)); then
    echo "rsocket_two_hosts: $fails failure(s)"
    exit 1
fi
echo "rsocket_two_hosts: all passed"
