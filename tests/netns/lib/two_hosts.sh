# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Two "hosts" for the netns tests: network namespaces joined by a veth pair, created here
# and removed on exit (with every PID the test recorded in `pids`). Source it, then call
#     two_hosts_up <libdir> <programs the test needs...>
# which sets nsa/nsb, ipa/ipb (IPv4), ip6a/ip6b (IPv6, no DAD wait), vetha/vethb, work, and
# (with TWO_HOSTS_IFNAME set) gives both ends that one name inside their namespaces, so both
# hosts have a device of the same name (sr_<name>), as clusters usually do; and
# in_ns <ns> <cmd...> runs a command inside a namespace on our libraries.
set -u
pids=()
fails=0

two_hosts_cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    rm -rf "$work"
}

two_hosts_up() {
    libdir=$(cd "$1" && pwd -P)
    shift
    local tag="sr$$" p ns
    nsa="${tag}a" nsb="${tag}b"
    vetha="${tag}va" vethb="${tag}vb"
    ipa=10.77.$((RANDOM % 200 + 1)).1
    ipb=${ipa%.1}.2
    ip6a=$(printf "fd00:77:%x::1" $((RANDOM % 60000 + 1)))
    ip6b="${ip6a%::1}::2"
    work=$(mktemp -d)
    trap two_hosts_cleanup EXIT
    command -v ip >/dev/null || { echo "FAIL: iproute2 (ip) is required"; exit 1; }
    for p in "$@"; do
        command -v "$p" >/dev/null || { echo "FAIL: $p missing (apt-get install rdmacm-utils)"; exit 1; }
    done
    if ! ip netns add "$nsa" || ! ip netns add "$nsb"; then
        echo "FAIL: cannot create network namespaces (needs CAP_NET_ADMIN)"
        exit 1
    fi
    ip link add "$vetha" type veth peer name "$vethb" || { echo "FAIL: veth"; exit 1; }
    ip link set "$vetha" netns "$nsa"
    ip link set "$vethb" netns "$nsb"
    if [[ -n ${TWO_HOSTS_IFNAME:-} ]]; then
        ip -n "$nsa" link set "$vetha" name "$TWO_HOSTS_IFNAME" && vetha=$TWO_HOSTS_IFNAME
        ip -n "$nsb" link set "$vethb" name "$TWO_HOSTS_IFNAME" && vethb=$TWO_HOSTS_IFNAME
    fi
    ip -n "$nsa" addr add "$ipa/24" dev "$vetha"
    ip -n "$nsb" addr add "$ipb/24" dev "$vethb"
    ip -n "$nsa" addr add "$ip6a/64" dev "$vetha" nodad
    ip -n "$nsb" addr add "$ip6b/64" dev "$vethb" nodad
    for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
    ip -n "$nsa" link set "$vetha" up
    ip -n "$nsb" link set "$vethb" up
}

# SR_NETNS_PRELOAD (the sanitizer run sets it to the ASan runtime) is preloaded into what runs
# there: Debian's programs are not instrumented, our libraries under them are.
in_ns() {
    local ns=$1
    shift
    ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" ${SR_NETNS_PRELOAD:+LD_PRELOAD="$SR_NETNS_PRELOAD"} "$@"
}

# Prints the output of a failed step, indented.
show() { sed "s/^/  $1| /" "$2"; }

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

# A server in host A and a client in host B, both bounded; both must exit 0 (outputs shown
# otherwise). Its output files are $work/<name>.srv and .cli.
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
