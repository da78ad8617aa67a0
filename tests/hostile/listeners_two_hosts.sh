#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The listener attacks of listeners.sh across a network: Debian's rping -s -P on our libraries
# in host A (a network namespace), the attacker and the legitimate client in host B, joined by
# veth. After each attack, held open while it runs, `rping -c -V` gets in and moves checked
# data within LEGIT_LIMIT seconds, and the server's descriptors and threads come back to where
# they were. Then the QP listener: ibv_rc_pingpong's server QP in A, dialed from B.
#   usage: listeners_two_hosts.sh <libdir>
. "$(dirname "${BASH_SOURCE[0]}")/../netns/lib/two_hosts.sh"
two_hosts_up "$1" rping ibv_rc_pingpong
ATTACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/attack.py
LEGIT_LIMIT=${LEGIT_LIMIT:-1.0}
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
value() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" "$1" | tail -1; }
res() { # fds threads of a PID
    echo "$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) $(awk '/^Threads:/ { print $2 }' "/proc/$1/status")"
}
# The program's own PID (ip netns exec and env exec into it; timeout forks it).
prog_of() {
    local i c
    for ((i = 0; i < 50; i++)); do
        for c in /proc/[0-9]*/stat; do
            read -r line <"$c" 2>/dev/null || continue
            rest=(${line##*) })
            [[ ${rest[1]} == "$1" ]] && { echo "${line%% *}"; return; }
        done
        sleep 0.1
    done
}
# judge <name> <attack output>: the legitimate client got in, in time.
judge() {
    local rc secs
    rc=$(value "$2" legit_rc)
    secs=$(value "$2" legit_seconds)
    echo "   $1: $(grep -vE '^(legit\||legit_)' "$2" | tr '\n' ' ')legit client exit ${rc:-?} in ${secs:-?} s"
    if [[ $rc != 0 ]] || ! awk -v s="$secs" -v l="$LEGIT_LIMIT" 'BEGIN { exit !(s <= l) }'; then
        fail "$1: the legitimate client (exit ${rc:-none}, ${secs:-?} s; limit $LEGIT_LIMIT s)"
        show att "$2"
        return 1
    fi
}

port=$((20000 + RANDOM % 20000))
in_ns "$nsa" timeout 120 rping -s -P -a "$ipa" -p "$port" >"$work/rping.srv" 2>&1 &
spid=$!
pids+=("$spid")
wait_listen "$nsa" "$port" || { echo "FAIL: rping never listened"; cat "$work/rping.srv"; exit 1; }
rpid=$(prog_of "$(prog_of "$spid")")  # the function's subshell, then timeout, then rping
echo "-- server PID $rpid: $(cat /proc/$rpid/comm)"
in_ns "$nsb" timeout 20 rping -c -a "$ipa" -p "$port" -C 10 -V >"$work/warm.cli" 2>&1 ||
    { fail "rping client fails without an attack"; show cli "$work/warm.cli"; }
sleep 0.3
read -r bfds bthr <<<"$(res "$rpid")"
echo "-- rping -s -P in $nsa: baseline $bfds fds, $bthr threads"
for a in "junk 300" "half 300" "silent 300" "flood 1000"; do
    read -r mode count <<<"$a"
    out=$work/rping.$mode
    in_ns "$nsb" /usr/bin/python3 "$ATTACK" "$ipa" "$port" "$mode" --count "$count" -- \
        timeout 20 rping -c -a "$ipa" -p "$port" -C 10 -V >"$out" 2>&1
    judge "rping.$mode" "$out" || continue
    for ((i = 0; i < 50; i++)); do
        read -r fds thr <<<"$(res "$rpid")"
        ((fds <= bfds && thr <= bthr)) && break
        sleep 0.1
    done
    if ((fds <= bfds && thr <= bthr)); then
        echo "PASS: rping.$mode across hosts: $count connections; client in within $LEGIT_LIMIT s; server back to $fds fds, $thr threads"
    else
        fail "rping.$mode: the server holds $fds fds, $thr threads after the attack (baseline $bfds, $bthr)"
    fi
done
kill "$spid" 2>/dev/null

# The QP with the smaller (GID, QPN) dials: the server takes its IPv6 GID (fd00:...), the
# client its IPv4-mapped one (::ffff:...), so the client dials the attacked server's listener.
gidx=$(in_ns "$nsa" ibv_devinfo -v -d "sr_$vetha" | sed -n "s/.*GID\[ *\([0-9]*\)\]:[[:space:]]*$ip6a,.*/\1/p")
[[ -n $gidx ]] || { fail "no GID for $ip6a on sr_$vetha"; in_ns "$nsa" ibv_devinfo -v -d "sr_$vetha"; }
for a in "half 300" "flood 1000"; do
    read -r mode count <<<"$a"
    port=$((port + 1))
    in_ns "$nsa" timeout 60 stdbuf -oL ibv_rc_pingpong -d "sr_$vetha" -g "${gidx:-1}" -c -n 200 -p "$port" >"$work/pp.srv" 2>&1 &
    spid=$!
    pids+=("$spid")
    wait_listen "$nsa" "$port" || { fail "ibv_rc_pingpong never listened"; continue; }
    qpn=$(sed -n 's/.*local address: .*QPN \(0x[0-9a-f]*\).*/\1/p' "$work/pp.srv" | head -1)
    [[ -n $qpn ]] || { fail "no QPN from ibv_rc_pingpong"; show srv "$work/pp.srv"; continue; }
    out=$work/pp.$mode
    in_ns "$nsb" /usr/bin/python3 "$ATTACK" "$ip6a" $((qpn >> 8)) "$mode" --count "$count" -- \
        timeout 20 env SOFTRDMA_DEBUG=1 ibv_rc_pingpong -d "sr_$vethb" -g 0 -c -n 200 -p "$port" "$ipa" >"$out" 2>&1
    if judge "qp_listener.$mode" "$out"; then
        if ! grep -q "dials qpn $((qpn)) .* at port $((qpn >> 8))" "$out"; then
            fail "qp_listener.$mode: the client's QP did not dial the attacked listener"; show att "$out"
        elif wait "$spid"; then
            echo "PASS: qp_listener.$mode across hosts: $count connections at port $((qpn >> 8)); 200 checked round trips"
        else
            fail "qp_listener.$mode: server failed"; show srv "$work/pp.srv"
        fi
    fi
    kill "$spid" 2>/dev/null
done
echo "listeners_two_hosts: $fails failure(s)"
((fails == 0))
