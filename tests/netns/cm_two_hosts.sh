#!/usr/bin/env bash
# Two "hosts": network namespaces joined by a veth pair this test creates (and removes).
# Debian's unmodified rping and ucmatose run across them on our libraries.
#   cm_two_hosts.sh <libdir> [<bindir with sr_cm_event_probe>]
. "$(dirname "${BASH_SOURCE[0]}")/lib/two_hosts.sh"
probe=${2:+$2/sr_cm_event_probe}
two_hosts_up "$1" rping ucmatose

# Wait (bounded) until a TCP port listens inside a namespace.
wait_listen() { # <ns> <port>
    local hex i
    hex=$(printf '%04X' "$2")
    for ((i = 0; i < 100; i++)); do
        ip netns exec "$1" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
            awk -v h=":$hex" '$2 ~ h"$" && $4 == "0A" { f = 1 } END { exit !f }' && return 0
        sleep 0.1
    done
    return 1
}

pair() { # <name> <port> <server cmd> -- <client cmd>
    local name=$1 port=$2; shift 2
    local srv=() cli=()
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    in_ns "$nsa" timeout 60 "${srv[@]}" >"$work/$name.srv" 2>&1 &
    local sp=$!
    pids+=("$sp")
    if ! wait_listen "$nsa" "$port"; then
        echo "FAIL: $name: server never listened"; cat "$work/$name.srv"; fails=$((fails + 1)); return
    fi
    in_ns "$nsb" timeout 60 "${cli[@]}" >"$work/$name.cli" 2>&1
    local crc=$?
    local src=124 i
    for ((i = 0; i < 200; i++)); do
        if ! kill -0 "$sp" 2>/dev/null; then wait "$sp"; src=$?; break; fi
        sleep 0.05
    done
    kill -9 "$sp" 2>/dev/null
    if [[ $crc -eq 0 && $src -eq 0 ]]; then
        echo "PASS: $name"
    else
        echo "FAIL: $name (client $crc, server $src)"
        sed 's/^/  cli| /' "$work/$name.cli"
        sed 's/^/  srv| /' "$work/$name.srv"
        fails=$((fails + 1))
    fi
}

# The namespaces see only their own interfaces: our devices must follow.
devs=$(in_ns "$nsb" ibv_devices 2>&1)
if ! grep -q "sr_${vethb}" <<<"$devs"; then
    echo "FAIL: device sr_${vethb} not listed in $nsb:"; echo "$devs"; fails=$((fails + 1))
fi

pair rping 7471 rping -s -a "$ipa" -p 7471 -C 1000 -v -- rping -c -a "$ipa" -p 7471 -C 1000 -v
grep -q "rdma-ping-999:" "$work/rping.cli" || { echo "FAIL: rping did not reach ping 999"; fails=$((fails + 1)); }
pair rping_q 7472 rping -s -a "$ipa" -p 7472 -C 200 -q -- rping -c -a "$ipa" -p 7472 -C 200 -q
pair ucmatose 7473 ucmatose -p 7473 -c 10 -- ucmatose -s "$ipa" -p 7473 -c 10
grep -q "return status 0" "$work/ucmatose.cli" || { echo "FAIL: ucmatose client status"; fails=$((fails + 1)); }

# Across hosts: a port nobody listens on is REJECTED (status 8, IB's invalid service ID); a
# host that never answers (its replies are prohibited by a route) is UNREACHABLE -ETIMEDOUT.
if [[ -n $probe ]]; then
    res=$(in_ns "$nsb" "$probe" connect "$ipa" 7479)
    [[ $res == "EVENT RDMA_CM_EVENT_REJECTED 8" ]] && echo "PASS: no listener -> REJECTED 8" ||
        { echo "FAIL: no listener: $res"; fails=$((fails + 1)); }
    ip -n "$nsa" route add prohibit "$ipb/32"
    res=$(in_ns "$nsb" env SOFTRDMA_CM_TIMEOUT_MS=1500 "$probe" connect "$ipa" 7479)
    [[ $res == "EVENT RDMA_CM_EVENT_UNREACHABLE -110" ]] && echo "PASS: silent host -> UNREACHABLE -ETIMEDOUT" ||
        { echo "FAIL: silent host: $res"; fails=$((fails + 1)); }
    ip -n "$nsa" route del prohibit "$ipb/32"
fi

if ((fails)); then
    echo "cm_two_hosts: $fails failure(s)"
    exit 1
fi
echo "cm_two_hosts: all passed"
