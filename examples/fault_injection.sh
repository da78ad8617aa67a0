#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# SOFTRDMA_FAULTS on the echo example (README: fault injection), twice:
#  1. the server answers 30% of the SENDs it gets with an RNR NAK, as if no receive were posted:
#     the client's RNR retries absorb them, every message still comes back, and the server's
#     `softrdma stat` counters show the NAKs it sent;
#  2. the client's QP fails after its 10th completed send: the program sees the error
#     completion, says so in words and exits 2, as it would on hardware that failed.
#   usage: fault_injection.sh <dir with rdmacm_echo> [<dir with the softrdma tool>]
set -euo pipefail
bin=${1:?dir with rdmacm_echo} tool=${2:-$1}
port=$((20000 + RANDOM % 20000))
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

echo "== 1: a server that answers 30% of SENDs with RNR NAKs"
SOFTRDMA_FAULTS=seed=7,rnr=0.3 "$bin/rdmacm_echo" -s -p "$port" &
server=$!; pids+=("$server")
sleep 0.3
"$bin/rdmacm_echo" -c 127.0.0.1 -p "$port" -n 1000 -r 7 &
client=$!; pids+=("$client")
# While they run, the server's counters (its QP's send_rnr_err).
nak=0
for _ in $(seq 1 100); do
    n=$("$tool/softrdma" stat --json "$server" 2>/dev/null |
        sed -n 's/.*"send_rnr_err": \([0-9]*\).*/\1/p' | head -1 || true)
    [ -n "$n" ] && nak=$n
    kill -0 "$client" 2>/dev/null || break
    sleep 0.05
done
wait "$client"
wait "$server"
pids=()
echo "server sent $nak RNR NAKs (last reading before it ended); every message came back"
[ "$nak" -gt 0 ]

echo "== 2: a client whose QP fails after its 10th send"
port=$((port + 1))
"$bin/rdmacm_echo" -s -p "$port" &
server=$!; pids+=("$server")
sleep 0.3
set +e
SOFTRDMA_FAULTS=qp_error_after=10 "$bin/rdmacm_echo" -c 127.0.0.1 -p "$port" -n 100 2>"${TMPDIR:-/tmp}/fault.$$"
status=$?
set -e
cat "${TMPDIR:-/tmp}/fault.$$"
grep -q "^error: .* of message 1[01]$" "${TMPDIR:-/tmp}/fault.$$"
rm -f "${TMPDIR:-/tmp}/fault.$$"
wait "$server" || true
pids=()
[ "$status" = 2 ]
echo "the client saw its QP fail and exited 2"
