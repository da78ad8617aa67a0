#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Hostile peers against real servers on our libraries, launched as the README tells a user:
# Debian's rping -s -P, cmtime, ucmatose, rdma_server and rstream (CM listeners, the last an
# rsocket's), iperf3 -s on rsockets through librspreload.so, and ibv_rc_pingpong's QP listener
# (raw verbs), on 127.0.0.1. Each attack
# (tests/hostile/attack.py) keeps its connections open while a legitimate client runs; the
# client must succeed, moving checked data, within LEGIT_LIMIT seconds. On the persistent
# servers the server's descriptors and threads must come back to where they were once the attack
# is gone, and its memory within RSS_SLACK_KB. Slow peers must be cut off at the MPA request
# timeout (10 s, siw's).
#   usage: listeners.sh <libdir> <bindir>
: "${CONF_BUDGET:=280}"
. "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog rping rdmacm-utils
require_pkg_prog cmtime rdmacm-utils
require_pkg_prog ucmatose rdmacm-utils
require_pkg_prog rdma_server rdmacm-utils
require_pkg_prog ibv_rc_pingpong ibverbs-utils
require_pkg_prog ibv_ud_pingpong ibverbs-utils
require_pkg_prog udaddy rdmacm-utils
require_pkg_prog iperf3 iperf3
[[ -x /usr/bin/python3 ]] || die "no /usr/bin/python3"
ATTACK=$(dirname "${BASH_SOURCE[0]}")/attack.py
LEGIT_LIMIT=${LEGIT_LIMIT:-1.0}
MPA_TIMEOUT_S=10
RSS_SLACK_KB=16384
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
ADDR=127.0.0.1
export LD_LIBRARY_PATH=$LIBDIR

# The program itself under its timeout wrapper.
prog_pid() { child_pids "$1" | head -1; }
# fds threads rss_kB of a PID
resources() {
    local fds threads rss
    fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    threads=$(awk '/^Threads:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
    echo "$fds ${threads:-0} ${rss:-0}"
}
value() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" "$1" | tail -1; }

# attack <name> <port> <mode> <count> <legit cmd...>: runs one attack and judges the legitimate
# client; sets ATTACK_OUT. Returns 0 when the client got in in time.
attack() {
    local name=$1 port=$2 mode=$3 count=$4 secs rc
    shift 4
    ATTACK_OUT=$CONF_WORK/$name.attack
    local extra=()
    [[ $mode == slowloris ]] && extra=(--seconds $((MPA_TIMEOUT_S + 4)))
    if [[ ${1-} == --qpn ]]; then extra+=(--qpn "$2"); shift 3; fi  # --qpn Q -- <legit cmd>
    /usr/bin/python3 "$ATTACK" "$ADDR" "$port" "$mode" --count "$count" "${extra[@]}" -- \
        timeout 20 "$@" >"$ATTACK_OUT" 2>&1
    rc=$(value "$ATTACK_OUT" legit_rc)
    secs=$(value "$ATTACK_OUT" legit_seconds)
    log "   $name: $(grep -vE '^(legit\||legit_)' "$ATTACK_OUT" | tr '\n' ' ')legit client exit ${rc:-?} in ${secs:-?} s"
    if [[ $rc != 0 ]]; then
        fail "$name: the legitimate client failed after the attack (exit ${rc:-none})"
        dump_file "$name attack" "$ATTACK_OUT"
        return 1
    fi
    if ! awk -v s="$secs" -v l="$LEGIT_LIMIT" 'BEGIN { exit !(s <= l) }'; then
        fail "$name: the legitimate client needed $secs s (limit $LEGIT_LIMIT s)"
        return 1
    fi
    if [[ $mode == junk && $(value "$ATTACK_OUT" connect_timeouts) != 0 ]]; then
        fail "$name: attack connections timed out: the listener stopped accepting"
        return 1
    fi
    if [[ $mode == slowloris ]]; then
        local closed last
        closed=$(value "$ATTACK_OUT" closed_by_server)
        last=$(value "$ATTACK_OUT" last_closed_after)
        if [[ $closed != "$count" ]] ||
            ! awk -v s="$last" -v l="$MPA_TIMEOUT_S" 'BEGIN { exit !(s <= l + 2) }'; then
            fail "$name: $closed of $count trickling peers cut off, the last after $last s (bound ${MPA_TIMEOUT_S} s)"
            return 1
        fi
    fi
    return 0
}

# back_to <pid> <fds threads rss>: the server's resources return (bounded wait) to the baseline.
back_to() {
    local pid=$1 base_fds=$2 base_thr=$3 base_rss=$4 i now
    for ((i = 0; i < 50; i++)); do
        read -r -a now <<<"$(resources "$pid")"
        ((now[0] <= base_fds && now[1] <= base_thr && now[2] <= base_rss + RSS_SLACK_KB)) && break
        sleep 0.1
    done
    RES_NOW="${now[0]} fds, ${now[1]} threads, ${now[2]} kB"
    ((now[0] <= base_fds && now[1] <= base_thr && now[2] <= base_rss + RSS_SLACK_KB))
}

# server_qpn <output>: the QPN a pingpong server printed as its local address (bounded wait).
server_qpn() {
    local i q
    for ((i = 0; i < 50; i++)); do
        q=$(sed -n 's/.*local address: .*QPN \(0x[0-9a-f]*\).*/\1/p' "$1" | head -1)
        [[ -n $q ]] && break
        sleep 0.1
    done
    echo "$q"
}

ATTACKS=("junk 300" "huge 300" "half 300" "silent 300" "flood 1000" "slowloris 20")

# 1. Persistent CM servers: rping -s -P and cmtime, every attack, resources checked.
persistent() { # <name> <port> <server cmd> -- <legit client cmd>
    local name=$1 port=$2 srv=() cli=() spid pid base a
    shift 2
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    start_bg "$name" "$port" "${srv[@]}" || return
    spid=$BG_PID
    pid=$(prog_pid "$spid")
    # Legitimate clients first (WARM_RUNS, default 1): what they set up for good (device
    # context, PD, the last 16 destroyed CM event channels kept for late readers) is the
    # baseline.
    local w
    for ((w = 0; w < ${WARM_RUNS:-1}; w++)); do
        if ! timeout 20 "${cli[@]}" >"$CONF_WORK/$name.warm" 2>&1; then
            fail "$name: the legitimate client fails even without an attack"
            dump_file "$name client" "$CONF_WORK/$name.warm"
            stop_bg "$spid"
            return
        fi
    done
    sleep 0.3
    read -r -a base <<<"$(resources "$pid")"
    log "-- $name: baseline ${base[0]} fds, ${base[1]} threads, ${base[2]} kB"
    for a in "${ATTACKS[@]}"; do
        read -r mode count <<<"$a"
        if attack "$name.$mode" "$port" "$mode" "$count" "${cli[@]}"; then
            if back_to "$pid" "${base[@]}"; then
                pass "$name.$mode: $count connections; client in within ${LEGIT_LIMIT} s; server back to $RES_NOW"
            else
                fail "$name.$mode: the server holds $RES_NOW after the attack (baseline ${base[0]} fds, ${base[1]} threads, ${base[2]} kB)"
            fi
        fi
        if ! is_alive "$spid"; then
            fail "$name: the server died"; dump_file "$name server" "$BG_OUT"; break
        fi
    done
    stop_bg "$spid"
}

p=$(free_port)
persistent rping "$p" rping -s -P -a $ADDR -p "$p" -- rping -c -a $ADDR -p "$p" -C 10 -V
p=$(free_port)
persistent cmtime "$p" cmtime -p "$p" -- cmtime -s $ADDR -p "$p" -c 20
# An unmodified socket server on rsockets, preloaded as the README tells a user: iperf3 -s
# (its listener is our CM listener in its process). Each client session opens three rsockets,
# so six sessions fill the retired-channel list before the baseline is taken.
RSP=(env "LD_PRELOAD=$LIBDIR/rsocket/librspreload.so")
p=$(free_port)
WARM_RUNS=6 persistent iperf3.rspreload "$p" "${RSP[@]}" iperf3 -s -p "$p" -- \
    "${RSP[@]}" iperf3 -c $ADDR -p "$p" -n 4M

# 2. One-shot CM servers: the legitimate client is their one connection.
oneshot() { # <name> <mode> <count> <port> <server cmd> -- <client cmd>
    local name=$1 mode=$2 count=$3 port=$4 srv=() cli=() spid
    shift 4
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    start_bg "$name" "$port" "${srv[@]}" || return
    spid=$BG_PID
    if attack "$name" "$port" "$mode" "$count" "${cli[@]}"; then
        if wait_exit "$spid" 10; then
            wait "$spid"
            local rc=$?
            forget_pid "$spid"
            if ((rc == 0)); then
                pass "$name: $count connections; client in within ${LEGIT_LIMIT} s; server exit 0"
            else
                fail "$name: server exit $rc"; dump_file "$name server" "$BG_OUT"
            fi
            return
        fi
        fail "$name: the server did not finish after its client"
    fi
    dump_file "$name server" "$BG_OUT"
    stop_bg "$spid"
}

for a in "junk 300" "half 300" "flood 1000"; do
    read -r mode count <<<"$a"
    p=$(free_port)
    oneshot "ucmatose.$mode" "$mode" "$count" "$p" ucmatose -p "$p" -c 1 -C 100 -- \
        ucmatose -s $ADDR -p "$p" -c 1 -C 100
    p=$(free_port)
    oneshot "rdma_server.$mode" "$mode" "$count" "$p" rdma_server -p "$p" -- \
        rdma_client -s $ADDR -p "$p"
    # An rsocket listener: rstream's server, one blocking transfer run.
    p=$(free_port)
    oneshot "rstream.$mode" "$mode" "$count" "$p" rstream -b $ADDR -p "$p" -S 1000 -C 100 -I 1 -T b -- \
        rstream -s $ADDR -p "$p" -S 1000 -C 100 -I 1 -T b
done

# 3. The raw-verbs QP listener: ibv_rc_pingpong's server QP, dialed by a client whose GID
# (::1) is smaller than the server's (::ffff:127.0.0.1), so the client's QP dials the server's
# QP listener (port = QPN >> 8) through the attack.
for a in "junk 300" "half 300" "silent 300" "flood 1000"; do
    read -r mode count <<<"$a"
    name=qp_listener.$mode
    p=$(free_port)
    start_bg "$name" "$p" ibv_rc_pingpong -d sr_lo -g 0 -c -n 200 -p "$p" || continue
    spid=$BG_PID
    qpn=$(server_qpn "$BG_OUT")
    if [[ -z $qpn ]]; then
        fail "$name: the server printed no QPN"; dump_file "$name server" "$BG_OUT"; stop_bg "$spid"; continue
    fi
    qport=$((qpn >> 8))
    if attack "$name" "$qport" "$mode" "$count" env SOFTRDMA_DEBUG=1 \
        ibv_rc_pingpong -d sr_lo -g 1 -c -n 200 -p "$p" $ADDR; then
        if ! grep -q "dials qpn $((qpn)) .* at port $qport" "$ATTACK_OUT"; then
            fail "$name: the client's QP did not dial the attacked listener"
            dump_file "$name attack" "$ATTACK_OUT"
        elif wait_exit "$spid" 10 && wait "$spid"; then
            forget_pid "$spid"
            pass "$name: $count connections at QP listener port $qport; 200 checked round trips within ${LEGIT_LIMIT} s"
            continue
        fi
        fail "$name: the server failed"
    fi
    dump_file "$name server" "$BG_OUT"
    stop_bg "$spid"
done

# 4. UDP: junk datagrams (random bytes, UD headers with a wrong Q_Key, forged flow-control
# grants, and senders from 100 sockets that churn the QP's 64-entry table of senders) at up to
# 50,000 a second into a UD QP's port while ibv_ud_pingpong's 2,000 checked round trips run (one
# lost datagram would hang it; a client left without grants would wait 1 s for the flow-control
# watchdog, which its debug output tells), and into the SIDR port of udaddy's RDMA_PS_UDP
# listener (7174: udaddy has no port option) while udaddy resolves and exchanges.
name=ud_qp.udp
p=$(free_port)
if start_bg "$name" "$p" ibv_ud_pingpong -d sr_lo -g 0 -c -n 2000 -p "$p"; then
    spid=$BG_PID
    qpn=$(server_qpn "$BG_OUT")
    if [[ -n $qpn ]] && attack "$name" $((qpn >> 8)) udp 50000 --qpn "$qpn" -- \
        env SOFTRDMA_DEBUG=1 ibv_ud_pingpong -d sr_lo -g 0 -c -n 2000 -p "$p" $ADDR &&
        wait_exit "$spid" 10 && wait "$spid"; then
        forget_pid "$spid"
        if grep -q "granted nothing for 1 s" "$ATTACK_OUT"; then
            fail "$name: the client's sends waited for the flow-control watchdog"
            dump_file "$name attack" "$ATTACK_OUT"
        else
            pass "$name: $(value "$ATTACK_OUT" udp_datagrams) junk datagrams at UD QP port $((qpn >> 8)); 2000 checked round trips in $(value "$ATTACK_OUT" legit_seconds) s"
        fi
    else
        fail "$name: the UD ping-pong did not survive the junk"
        dump_file "$name server" "$BG_OUT"
        stop_bg "$spid"
    fi
fi
name=sidr.udp
udp_listening() { awk 'FNR > 1 && substr($2, length($2) - 4) == ":1C06" { f = 1 } END { exit !f }' /proc/net/udp /proc/net/udp6; }
if udp_listening; then
    fail "$name: UDP port 7174 is taken before udaddy starts"
else
    BG_OUT=$CONF_WORK/$name.server.out
    timeout -k 5 60 "${LINEBUF[@]}" udaddy -C 50 >"$BG_OUT" 2>&1 </dev/null &
    spid=$!
    CONF_PIDS+=("$spid")
    for ((i = 0; i < 100; i++)); do udp_listening && break; sleep 0.1; done
    if attack "$name" 7174 udp 50000 udaddy -s $ADDR -C 50 && wait_exit "$spid" 10 && wait "$spid"; then
        forget_pid "$spid"
        pass "$name: $(value "$ATTACK_OUT" udp_datagrams) junk datagrams at the SIDR port; udaddy resolved and exchanged 50 messages each way"
    else
        fail "$name: udaddy did not survive the junk"
        dump_file "$name server" "$BG_OUT"
        stop_bg "$spid"
    fi
fi
conf_finish
