#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The examples folder, run as its README says: the verbs example (two processes, one RC QP),
# the rdmacm echo (every byte checked by the client), and the fault-injection script.
#   usage: run.sh <bindir> <source dir>
set -euo pipefail
bin=${1:?bindir} src=${2:?source dir}
fail() { echo "FAIL: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
port=$((20000 + RANDOM % 20000))
# A loaded machine may take longer than any fixed sleep to start a server: wait until it listens.
wait_listen() {
    local i
    for i in $(seq 1 100); do
        ss -Hltn "sport = :$1" | grep -q . && return 0
        sleep 0.1
    done
    fail "nothing listens on port $1 after 10 s"
}
"$bin/sr_rc_demo" -s -p "$port" & pids+=($!)
wait_listen "$port"
timeout 60 "$bin/sr_rc_demo" -c 127.0.0.1 -p "$port" || fail "verbs example"
wait "${pids[0]}" || fail "verbs example server"
pids=()
port=$((port + 1))
"$bin/rdmacm_echo" -s -p "$port" & pids+=($!)
wait_listen "$port"
out=$(timeout 60 "$bin/rdmacm_echo" -c 127.0.0.1 -p "$port" -n 300) || fail "rdmacm echo"
grep -q "^client: 300 messages echoed, every byte checked$" <<<"$out" || fail "echo: $out"
wait "${pids[0]}" || fail "rdmacm echo server"
pids=()
timeout 120 bash "$src/examples/fault_injection.sh" "$bin" || fail "fault-injection example"
echo "PASS"
