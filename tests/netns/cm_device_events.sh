#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# ADDR_CHANGE when an id's address is removed, DEVICE_REMOVAL when its interface goes away,
# in a network namespace this test creates (and removes).
#   cm_device_events.sh <libdir> <bindir>
set -u
libdir=$(cd "$1" && pwd -P)
probe="$2/sr_cm_event_probe"
ns="sr$$ev"
ip=10.78.$((RANDOM % 200 + 1)).1
out=$(mktemp)
pid=""
cleanup() {
    [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -f "$out"
}
trap cleanup EXIT
[[ -x $probe ]] || { echo "FAIL: $probe not built"; exit 1; }
ip netns add "$ns" || { echo "FAIL: cannot create a network namespace (needs CAP_NET_ADMIN)"; exit 1; }
ip -n "$ns" link add "${ns}x" type veth peer name "${ns}y" || { echo "FAIL: veth"; exit 1; }
ip -n "$ns" addr add "$ip/24" dev "${ns}x"
ip -n "$ns" link set lo up
ip -n "$ns" link set "${ns}x" up
ip -n "$ns" link set "${ns}y" up
fails=0

wait_for() { # <pattern>: bounded wait for a line in the probe's output
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q "$1" "$out" && return 0
        sleep 0.1
    done
    return 1
}

# Address resolution waits for the neighbour: an address on the link that nobody owns ends
# in ADDR_ERROR -ETIMEDOUT (-110) at the given timeout; our own address resolves at once.
res=$(ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" "$probe" resolve "${ip%.1}.99" 400)
echo "unanswered: $res"
if [[ $res =~ ^EVENT\ RDMA_CM_EVENT_ADDR_ERROR\ -110\ after\ ([0-9]+)\ ms ]] &&
   ((BASH_REMATCH[1] >= 350 && BASH_REMATCH[1] < 2000)); then
    echo "PASS: ADDR_ERROR -ETIMEDOUT within the timeout"
else
    echo "FAIL: unanswered neighbour"; fails=$((fails + 1))
fi
# No route at all (the namespace has no default route): the call itself fails, ENETUNREACH.
res=$(ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" "$probe" resolve 198.51.100.7 400)
echo "no route: $res"
[[ $res == "CALL_ERROR 101" ]] && echo "PASS: no route -> ENETUNREACH" ||
    { echo "FAIL: no route"; fails=$((fails + 1)); }
res=$(ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" "$probe" resolve "$ip" 400)
echo "local: $res"
[[ $res == "EVENT RDMA_CM_EVENT_ADDR_RESOLVED 0"* ]] && echo "PASS: local address resolves" ||
    { echo "FAIL: local address"; fails=$((fails + 1)); }

ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" "$probe" "$ip" 7600 >"$out" 2>&1 &
pid=$!
if ! wait_for "^READY sr_${ns}x"; then
    echo "FAIL: probe did not bind to $ip on sr_${ns}x"; cat "$out"; exit 1
fi
ip -n "$ns" addr del "$ip/24" dev "${ns}x"
if wait_for "^EVENT RDMA_CM_EVENT_ADDR_CHANGE 0"; then echo "PASS: ADDR_CHANGE"; else
    echo "FAIL: no ADDR_CHANGE after the address was removed"; fails=$((fails + 1)); fi
ip -n "$ns" link del "${ns}x"
if wait_for "^EVENT RDMA_CM_EVENT_DEVICE_REMOVAL 0"; then echo "PASS: DEVICE_REMOVAL"; else
    echo "FAIL: no DEVICE_REMOVAL after the interface was deleted"; fails=$((fails + 1)); fi
for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid"
rc=$?
pid=""
[[ $rc -eq 0 ]] || { echo "FAIL: probe exited $rc"; fails=$((fails + 1)); }
cat "$out"
exit $((fails > 0))
