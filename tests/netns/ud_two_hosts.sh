#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Datagrams between two "hosts" (network namespaces joined by a veth pair this test creates):
# Debian's unmodified ibv_ud_pingpong, udaddy (IPv4 and IPv6) and mckey (IPv4 and IPv6 groups,
# one receiver on each host, a sender on one of them; also a send-only sender) on our
# libraries. Multicast needs no route: the join and the sends name the veth interface.
#   ud_two_hosts.sh <libdir>
. "$(dirname "${BASH_SOURCE[0]}")/lib/two_hosts.sh"
two_hosts_up "$1" ibv_ud_pingpong udaddy mckey

# Wait (bounded) until a port is bound (UDP) or listening (TCP) inside a namespace.
wait_port() { # <ns> <tcp|udp> <port>
    local hex i
    hex=$(printf '%04X' "$3")
    for ((i = 0; i < 100; i++)); do
        ip netns exec "$1" cat "/proc/net/$2" "/proc/net/${2}6" 2>/dev/null |
            awk -v h=":$hex" -v t="$2" '$2 ~ h"$" && (t == "udp" || $4 == "0A") { f = 1 } END { exit !f }' &&
            return 0
        sleep 0.1
    done
    return 1
}

# Reaps a background PID within ~10 s (it was started under `timeout`): status in `reaped`.
reap() {
    local i
    reaped=124
    for ((i = 0; i < 200; i++)); do
        if ! kill -0 "$1" 2>/dev/null; then
            wait "$1"
            reaped=$?
            return
        fi
        sleep 0.05
    done
    kill -9 "$1" 2>/dev/null
}

# server_client <name> <tcp|udp> <port> <server cmd...> -- <client cmd...>: server in nsa,
# client in nsb once the server's port is up.
server_client() {
    local name=$1 proto=$2 port=$3; shift 3
    local srv=() cli=() sp crc src
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    in_ns "$nsa" timeout 60 "${srv[@]}" >"$work/$name.srv" 2>&1 &
    sp=$!
    pids+=("$sp")
    wait_port "$nsa" "$proto" "$port" || echo "NOTE: $name: server port $port not seen"
    in_ns "$nsb" timeout 60 "${cli[@]}" >"$work/$name.cli" 2>&1
    crc=$?
    reap "$sp"
    src=$reaped
    if [[ $crc -eq 0 && $src -eq 0 ]]; then
        echo "PASS: $name"
    else
        echo "FAIL: $name (client $crc, server $src)"
        show cli "$work/$name.cli"
        show srv "$work/$name.srv"
        fails=$((fails + 1))
    fi
}

pp_port=$((18000 + RANDOM % 1000))
server_client ud_pingpong tcp "$pp_port" ibv_ud_pingpong -g 0 -d "sr_$vetha" -p "$pp_port" -n 200 -- \
    ibv_ud_pingpong -g 0 -d "sr_$vethb" -p "$pp_port" -n 200 "$ipa"
grep -q "200 iters" "$work/ud_pingpong.cli" || { echo "FAIL: ibv_ud_pingpong did not report 200 iters"; fails=$((fails + 1)); }
server_client udaddy_ipv4 udp 7174 udaddy -b "$ipa" -C 20 -- udaddy -s "$ipa" -C 20
server_client udaddy_ipv6 udp 7174 udaddy -b "$ip6a" -c 3 -C 20 -- udaddy -s "$ip6a" -c 3 -C 20
for f in udaddy_ipv4 udaddy_ipv6; do
    grep -q "^return status 0" "$work/$f.cli" || { echo "FAIL: $f client status"; fails=$((fails + 1)); }
done

# mc_case <name> <group> <MGID> <sender host: a|b> [sender args...]: receivers on both hosts.
mc_case() {
    local name=$1 group=$2 mgid=$3 shost=$4; shift 4
    local ra rb sp s_ns s_ip rc i ok=1
    in_ns "$nsa" timeout 60 mckey -m "$group" -b "$([[ $group == *:* ]] && echo "$ip6a" || echo "$ipa")" -C 30 \
        >"$work/$name.ra" 2>&1 &
    ra=$!
    in_ns "$nsb" timeout 60 mckey -m "$group" -b "$([[ $group == *:* ]] && echo "$ip6b" || echo "$ipb")" -C 30 \
        >"$work/$name.rb" 2>&1 &
    rb=$!
    pids+=("$ra" "$rb")
    for ((i = 0; i < 100; i++)); do
        grep -q '^mckey: joined' "$work/$name.ra" 2>/dev/null && grep -q '^mckey: joined' "$work/$name.rb" 2>/dev/null && break
        sleep 0.1
    done
    if [[ $shost == a ]]; then s_ns=$nsa; else s_ns=$nsb; fi
    if [[ $group == *:* ]]; then
        [[ $shost == a ]] && s_ip=$ip6a || s_ip=$ip6b
    else
        [[ $shost == a ]] && s_ip=$ipa || s_ip=$ipb
    fi
    in_ns "$s_ns" timeout 60 mckey -m "$group" -b "$s_ip" -s -C 30 "$@" >"$work/$name.s" 2>&1
    rc=$?
    ((rc == 0)) || { echo "FAIL: $name: sender exited $rc"; show snd "$work/$name.s"; ok=0; }
    for r in a b; do
        if [[ $r == a ]]; then reap "$ra"; else reap "$rb"; fi
        rc=$reaped
        if ((rc != 0)) || ! grep -q "^mckey: joined dgid: $mgid " "$work/$name.r$r" ||
            ! grep -q '^data transfers complete' "$work/$name.r$r"; then
            echo "FAIL: $name: receiver on host $r (exit $rc)"; show rcv "$work/$name.r$r"; ok=0
        fi
    done
    if ((ok)); then echo "PASS: $name"; else fails=$((fails + 1)); fi
}

g4="239.255.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
g6=$(printf 'ff12::77:%x' $((RANDOM)))
mc_case mckey_ipv4 "$g4" "::ffff:$g4" a
mc_case mckey_ipv6 "$g6" "$g6" b
mc_case mckey_send_only "$g4" "::ffff:$g4" b -o

if ((fails)); then
    echo "ud_two_hosts: $fails failure(s)"
    exit 1
fi
echo "ud_two_hosts: all passed"
