#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Two "hosts": network namespaces joined by a veth pair this test creates (and removes).
# Debian's unmodified rping and ucmatose run across them on our libraries, and the connections
# stay on TCP (the same-host path is for one network namespace).
#   cm_two_hosts.sh <libdir> [<bindir with sr_cm_event_probe>]
. "$(dirname "${BASH_SOURCE[0]}")/lib/two_hosts.sh"
probe=${2:+$2/sr_cm_event_probe}
two_hosts_up "$1" rping ucmatose

# The namespaces see only their own interfaces: our devices must follow.
devs=$(in_ns "$nsb" ibv_devices 2>&1)
if ! grep -q "sr_${vethb}" <<<"$devs"; then
    echo "FAIL: device sr_${vethb} not listed in $nsb:"; echo "$devs"; fails=$((fails + 1))
fi

pair rping 7471 rping -s -a "$ipa" -p 7471 -C 1000 -v -- rping -c -a "$ipa" -p 7471 -C 1000 -v
grep -q "rdma-ping-999:" "$work/rping.cli" || { echo "FAIL: rping did not reach ping 999"; fails=$((fails + 1)); }
pair rping_q 7472 rping -s -a "$ipa" -p 7472 -C 200 -q -- rping -c -a "$ipa" -p 7472 -C 200 -q
# Two network namespaces of one host: not the same host for the same-host path (docs/wire.md
# §6.10). Both ends say why they stay on TCP, neither maps a segment, and the pings are verified.
pair rping_tcp 7474 env SOFTRDMA_DEBUG=1 rping -s -a "$ipa" -p 7474 -C 200 -V -- \
    env SOFTRDMA_DEBUG=1 rping -c -a "$ipa" -p 7474 -C 200 -V
why="stays on TCP: the peer is on another host or network namespace"
if grep -q "$why" "$work/rping_tcp.srv" && grep -q "$why" "$work/rping_tcp.cli" &&
    ! grep -q "shared memory with qpn" "$work/rping_tcp.srv" "$work/rping_tcp.cli"; then
    echo "PASS: across namespaces both ends stay on TCP and say why"
else
    echo "FAIL: across namespaces: no 'stays on TCP' line on both ends, or a shared-memory line"
    show cli "$work/rping_tcp.cli"; show srv "$work/rping_tcp.srv"; fails=$((fails + 1))
fi
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
