#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_xsrq_pingpong (XRC: per client an XRC send QP on one
# side, an XRC receive QP on the other, every receive through one XRC SRQ in a domain named
# by /tmp/xrc_domain) over 127.0.0.1 on our libibverbs.so.1: one client; a server for four
# clients (-c 4, 20 exchanges of 8 KiB) with four client processes; the same waiting on
# completion events (-e). Every process must exit 0, print its XRC address (both QPNs, its
# SRQ number) and end with "success" (the program checks every message came from the
# client it expects).
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
require_prog ibv_xsrq_pingpong

P=ibv_xsrq_pingpong
# The program creates /tmp/xrc_domain itself (both sides open it to name their domain);
# remove it afterwards only if this test made it.
made_domain_file=1
[[ -e /tmp/xrc_domain ]] && made_domain_file=0

xsrq_pair() {
    local name=$1 side f ok=1
    shift
    run_pair "$name" "$P" "$@" -p @PORT@ -- "$P" "$@" -p @PORT@ 127.0.0.1 || return 1
    for side in server client; do
        if [[ $side == server ]]; then f=$PAIR_SERVER_OUT; else f=$PAIR_CLIENT_OUT; fi
        xsrq_checks "$name" "$side" "$f" || { ok=0; break; }
    done
    ((ok)) && pass "$name"
}

xsrq_checks() { # <name> <label> <file>
    expect_grep "$1" "$3" '^success$' "$2 did not print 'success'" &&
        expect_grep "$1" "$3" '^ +local: LID [0-9a-f]+, QPN RECV [0-9a-f]{6} SEND [0-9a-f]{6}, PSN [0-9a-f]{6}, SRQN [0-9a-f]{6}, GID [0-9a-f:.]*[1-9a-f]' \
            "$2 did not print its local XRC address with a GID"
}

# xsrq_clients <name> <clients> [args...]: one server for <clients>, that many clients.
xsrq_clients() {
    local name=$1 clients=$2 before=$CONF_FAILS port t k rc
    shift 2
    local -a cpids=()
    port=$(free_port) || { fail "$name: no free port"; return 1; }
    start_bg "$name" "$port" "$P" "$@" -c "$clients" -p "$port" || return 1
    local spid=$BG_PID sout=$BG_OUT
    t=$(step_timeout) || { fail "$name: time budget exhausted"; stop_bg "$spid"; return 1; }
    for ((k = 1; k <= clients; k++)); do
        LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" "$P" "$@" -p "$port" 127.0.0.1 \
            >"$CONF_WORK/$name.client$k.out" 2>&1 </dev/null &
        cpids+=($!)
        CONF_PIDS+=($!)
    done
    for ((k = 1; k <= clients; k++)); do
        wait "${cpids[k - 1]}"
        rc=$?
        forget_pid "${cpids[k - 1]}"
        if ((rc != 0)); then
            fail "$name: client $k $(describe_rc "$rc" "$t")"
            dump_file "$name client $k" "$CONF_WORK/$name.client$k.out"
        else
            xsrq_checks "$name" "client $k" "$CONF_WORK/$name.client$k.out"
        fi
    done
    wait_exit "$spid" 30
    stop_bg "$spid"
    if ((BG_RC != 0)); then
        fail "$name: server $(describe_rc "$BG_RC" "$t")"
        dump_file "$name server" "$sout"
    else
        xsrq_checks "$name" server "$sout"
        expect_count "$name" "$sout" '^ +remote: LID' "$clients" "the server did not meet $clients clients"
    fi
    ((CONF_FAILS == before)) && pass "$name: $clients clients, $*"
}

xsrq_pair xsrq.default -d sr_lo -g 0
xsrq_clients xsrq.c4 4 -d sr_lo -g 0 -n 20 -s 8192
xsrq_clients xsrq.events 4 -d sr_lo -g 0 -n 10 -e

((made_domain_file)) && rm -f /tmp/xrc_domain
conf_finish
